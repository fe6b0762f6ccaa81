package expr

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// reservedWords are PostgreSQL's keywords that quote_ident quotes (the
// reserved ones and those that can be a function or type name only).
var reservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric authorization binary
		both case cast check collate collation column concurrently constraint create cross current_catalog
		current_date current_role current_schema current_time current_timestamp current_user default
		deferrable desc distinct do else end except false fetch for foreign freeze from full grant group
		having ilike in initially inner intersect into is isnull join lateral leading left like limit
		localtime localtimestamp natural not notnull null offset on only or order outer overlaps placing
		primary references returning right select session_user similar some symmetric system_user table
		tablesample then to trailing true union unique user using variadic verbose when where window with
		between bigint bit boolean char character coalesce dec decimal exists extract float greatest
		grouping inout int integer interval least national nchar none normalize nullif numeric out overlay
		position precision real row setof smallint substring time timestamp treat trim values varchar
		xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi xmlroot
		xmlserialize xmltable`) {
		m[w] = true
	}
	return m
}()

// quoteIdent is quote_ident: the identifier as is when it needs no
// quotes, else in double quotes with inner ones doubled.
func quoteIdent(s string) (string, error) {
	plain := s != "" && !reservedWords[s]
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '$')) {
			plain = false
			break
		}
	}
	if plain {
		return s, nil
	}
	if err := checkSize("quote_ident", int64(len(s)+strings.Count(s, `"`)+2)); err != nil {
		return "", err
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`, nil
}

// quoteLiteral is quote_literal: a string constant, E'…' when the text
// holds a backslash.
func quoteLiteral(s string) (string, error) {
	quotes, backslashes := strings.Count(s, "'"), strings.Count(s, `\`)
	size := len(s) + quotes + 2
	if backslashes > 0 {
		size += backslashes + 1
	}
	if err := checkSize("quote_literal", int64(size)); err != nil {
		return "", err
	}
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if backslashes > 0 {
		return "E" + strings.ReplaceAll(q, `\`, `\\`), nil
	}
	return q, nil
}

// quoted returns a quoting function's result as a value.
func quoted(s string, err error) (types.Value, error) {
	if err != nil {
		return types.NullValue, err
	}
	return types.NewText(s), nil
}

func init() {
	text := types.Text
	Register(
		&Func{Name: "quote_ident", Args: tt(text), Ret: text, Eval1: func(a types.Value) (types.Value, error) {
			return quoted(quoteIdent(a.S))
		}},
		&Func{Name: "quote_literal", Args: tt(text), Ret: text, Eval1: func(a types.Value) (types.Value, error) {
			return quoted(quoteLiteral(a.S))
		}},
		&Func{Name: "quote_literal", Args: tt(AnyElement), Ret: text, Eval1: func(a types.Value) (types.Value, error) {
			return quoted(quoteLiteral(a.Text()))
		}},
		&Func{Name: "quote_nullable", Args: tt(text), Ret: text, NonStrict: true, Eval1: func(a types.Value) (types.Value, error) {
			if a.K == types.Null {
				return types.NewText("NULL"), nil
			}
			return quoted(quoteLiteral(a.S))
		}},
		&Func{Name: "quote_nullable", Args: tt(AnyElement), Ret: text, NonStrict: true, Eval1: func(a types.Value) (types.Value, error) {
			if a.K == types.Null {
				return types.NewText("NULL"), nil
			}
			return quoted(quoteLiteral(a.Text()))
		}},
		&Func{Name: "pg_size_pretty", Args: tt(types.Int8), Ret: text, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewText(sizePretty(a.I)), nil
		}},
	)
}

// sizePretty is pg_size_pretty: bytes below 10 kB, else the largest of
// kB, MB, GB, TB, PB that keeps the value under 20480, rounded half away
// from zero, as PostgreSQL computes it (shifts keep one extra bit).
func sizePretty(n int64) string {
	const limit, limit2 = 10 * 1024, 20*1024 - 1
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	if abs(n) < limit {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	units := []string{"kB", "MB", "GB", "TB", "PB"}
	s := n >> 9
	for i, u := range units {
		if abs(s) < limit2 || i == len(units)-1 {
			half := (s + 1) / 2
			if s < 0 {
				half = (s - 1) / 2
			}
			return strconv.FormatInt(half, 10) + " " + u
		}
		s >>= 10
	}
	return ""
}

// format is PostgreSQL's format(fmt, args…) for %s (text, NULL as
// empty), %I (quote_ident), %L (quote_literal, NULL as NULL) and %%, with
// optional argument positions (%2$s); widths are not supported.
func format(a []types.Value) (types.Value, error) {
	if a[0].K == types.Null {
		return types.NullValue, nil
	}
	f, args := a[0].S, a[1:]
	sb := limitedBuilder{what: "format"}
	next := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			if err := sb.addByte(f[i]); err != nil {
				return types.NullValue, err
			}
			continue
		}
		i++
		if i >= len(f) {
			return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "unterminated format() type specifier")
		}
		if f[i] == '%' {
			if err := sb.addByte('%'); err != nil {
				return types.NullValue, err
			}
			continue
		}
		arg := next
		if j := strings.IndexByte(f[i:], '$'); j > 0 {
			if n, err := strconv.Atoi(f[i : i+j]); err == nil {
				arg, i = n-1, i+j+1
			}
		}
		if i >= len(f) {
			return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "unterminated format() type specifier")
		}
		if arg < 0 || arg >= len(args) {
			return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "too few arguments for format()")
		}
		v := args[arg]
		next = arg + 1
		var piece string
		var err error
		switch f[i] {
		case 's':
			if v.K != types.Null {
				piece = v.Text()
			}
		case 'I':
			if v.K == types.Null {
				return types.NullValue, pgerror.New(pgerror.NullValueNotAllowed, "null values cannot be formatted as an SQL identifier")
			}
			piece, err = quoteIdent(v.Text())
		case 'L':
			piece = "NULL"
			if v.K != types.Null {
				piece, err = quoteLiteral(v.Text())
			}
		default:
			return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "unrecognized format() type specifier %q", string(f[i]))
		}
		if err == nil {
			err = sb.add(piece)
		}
		if err != nil {
			return types.NullValue, err
		}
	}
	return types.NewText(sb.String()), nil
}

func init() {
	Register(&Func{Name: "format", Args: tt(types.Text, Any), Variadic: true, Ret: types.Text, NonStrict: true, Eval: format},
		&Func{Name: "format", Args: tt(types.Text), Ret: types.Text, Eval: format})
}
