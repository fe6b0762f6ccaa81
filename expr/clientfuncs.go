package expr

import (
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Functions drivers and BI tools call while they introspect or reset a
// connection (pgjdbc, asyncpg, DBeaver, SQLAlchemy).

// searchPath is the schemas unqualified names are looked up in, in
// order: pg_catalog first (implicitly, as in PostgreSQL), then public.
// fvsql's search_path is fixed.
var searchPath = []string{"pg_catalog", "public"}

// SearchPath is the schemas unqualified names are looked up in, in
// order (pg_catalog's relations are visible, information_schema's are
// not), for the catalog's pg_table_is_visible.
func SearchPath() []string { return append([]string(nil), searchPath...) }

// errNoAdvisoryLocks refuses advisory locks: a lock held by a session
// must be released when the session ends, which functions cannot see
// here, and fvsql processes share no lock table (Kafka is their only
// coordination point), so a lock taken in one would not exclude another.
var errNoAdvisoryLocks = pgerror.New(pgerror.FeatureNotSupported, "advisory locks are not supported")

// parseIdent is parse_ident: a qualified SQL identifier split into its
// parts, unquoted ones folded to lower case (ASCII only, as PostgreSQL
// does); with strict false, what follows the identifier is ignored.
func parseIdent(s string, strict bool) ([]string, error) {
	bad := func(detail string) error {
		e := pgerror.New(pgerror.InvalidParameterValue, "string is not a valid identifier: %q", s)
		if detail != "" {
			return e.WithDetail("%s", detail)
		}
		return e
	}
	var parts []string
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') {
			i++
		}
	}
	for {
		skipSpace()
		switch {
		case i < len(s) && s[i] == '"':
			var b strings.Builder
			i++
			for {
				j := strings.IndexByte(s[i:], '"')
				if j < 0 {
					return nil, bad("String has unclosed double quotes.")
				}
				b.WriteString(s[i : i+j])
				i += j + 1
				if i < len(s) && s[i] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			if b.Len() == 0 {
				return nil, bad("Quoted identifier must not be empty.")
			}
			parts = append(parts, b.String())
		case i < len(s) && identStart(s[i]):
			j := i
			for j < len(s) && identPart(s[j]) {
				j++
			}
			parts = append(parts, asciiLower(s[i:j]))
			i = j
		default:
			if len(parts) == 0 {
				return nil, bad("")
			}
			return nil, bad(`No valid identifier after ".".`)
		}
		skipSpace()
		if i < len(s) && s[i] == '.' {
			i++
			continue
		}
		if i < len(s) && strict {
			return nil, bad("")
		}
		return parts, nil
	}
}

// ParseIdent splits a qualified identifier as parse_ident does (strict),
// for the reg* input functions of other packages.
func ParseIdent(s string) ([]string, error) { return parseIdent(s, true) }

func identStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func identPart(c byte) bool { return identStart(c) || c >= '0' && c <= '9' || c == '$' }

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

func textArrayOf(t types.Type, ss []string) types.Value {
	elems := make([]types.Value, len(ss))
	for i, s := range ss {
		elems[i] = types.NewString(t.Elem(), s)
	}
	return types.NewArray(t, elems)
}

func init() {
	text, b, i4, i8 := types.Text, types.Bool, types.Int4, types.Int8
	identFn := func(a []types.Value) (types.Value, error) {
		strict := len(a) < 2 || a[1].Bool()
		parts, err := parseIdent(a[0].S, strict)
		if err != nil {
			return types.NullValue, err
		}
		return textArrayOf(types.TextArray, parts), nil
	}
	Register(
		&Func{Name: "current_schemas", Args: tt(b), Ret: types.NameArray, Eval1: func(implicit types.Value) (types.Value, error) {
			if implicit.Bool() {
				return textArrayOf(types.NameArray, searchPath), nil
			}
			return textArrayOf(types.NameArray, searchPath[1:]), nil
		}},
		&Func{Name: "parse_ident", Args: tt(text), Ret: types.TextArray, Eval: identFn},
		&Func{Name: "parse_ident", Args: tt(text, b), Ret: types.TextArray, Eval: identFn},
		// to_regtype is regtype's input, NULL rather than an error for a
		// type that does not exist (a malformed name is still an error).
		&Func{Name: "to_regtype", Args: tt(text), Ret: types.Regtype, Eval1: func(a types.Value) (types.Value, error) {
			v, err := types.ParseText(types.Regtype, a.S)
			if pgerror.CodeOf(err) == pgerror.UndefinedObject {
				return types.NullValue, nil
			}
			return v, err
		}},
		// fvsql takes no advisory locks (errNoAdvisoryLocks), so a
		// session holds none to release: pg_advisory_unlock_all, which
		// connection pools send when a connection is returned (asyncpg),
		// has nothing to do. Its result is void in PostgreSQL; here an
		// empty text, which prints the same.
		&Func{Name: "pg_advisory_unlock_all", Ret: text, Volatile: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NewText(""), nil
		}},
	)
	refuse := func([]types.Value) (types.Value, error) { return types.NullValue, errNoAdvisoryLocks }
	for _, f := range []struct {
		name string
		ret  types.Type
	}{
		{"pg_advisory_lock", text}, {"pg_advisory_lock_shared", text},
		{"pg_advisory_xact_lock", text}, {"pg_advisory_xact_lock_shared", text},
		{"pg_try_advisory_lock", b}, {"pg_try_advisory_lock_shared", b},
		{"pg_try_advisory_xact_lock", b}, {"pg_try_advisory_xact_lock_shared", b},
		{"pg_advisory_unlock", b}, {"pg_advisory_unlock_shared", b},
	} {
		Register(&Func{Name: f.name, Args: tt(i8), Ret: f.ret, Volatile: true, Eval: refuse},
			&Func{Name: f.name, Args: tt(i4, i4), Ret: f.ret, Volatile: true, Eval: refuse})
	}
	RegisterSet(&SetFunc{Name: "pg_get_keywords", Rows: keywordRows,
		Cols: func([]types.Type) ([]string, []types.Type) {
			return []string{"word", "catcode", "barelabel", "catdesc", "baredesc"},
				[]types.Type{text, types.Char, b, text, text}
		}})
}
