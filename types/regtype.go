package types

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
)

// pseudoTypes are PostgreSQL's pseudo-types that catalog queries name
// through regtype ('pg_catalog.trigger'::regtype) although no fvsql value
// has them.
var pseudoTypes = map[string]uint32{
	"any": 2276, "anyelement": 2283, "anyarray": 2277, "anynonarray": 2776, "anyenum": 3500,
	"anyrange": 3831, "cstring": 2275, "internal": 2281, "trigger": 2279, "event_trigger": 3838,
	"void": 2278, "record": 2249, "language_handler": 2280, "fdw_handler": 3115,
	"index_am_handler": 325, "tsm_handler": 3310, "table_am_handler": 269,
	"regclass": 2205, "regproc": 24, "regprocedure": 2202, "regnamespace": 4089, "regrole": 4096,
	"int2vector": 22, "oidvector": 30, "bpchar": 1042,
}

// regtypeName is regtype's output: the type's name as format_type prints
// it, or the number for an OID that names no type.
func regtypeName(oid uint32) string {
	if t, ok := ByOID(oid); ok && oid != 1042 {
		return t.String()
	}
	for name, o := range pseudoTypes {
		if o == oid {
			if name == "bpchar" {
				return "character"
			}
			return name
		}
	}
	return strconv.FormatUint(uint64(oid), 10)
}

// parseRegtype is regtype's input: a type name (optionally qualified by
// pg_catalog, with modifiers and [] as types.Parse takes them) or an OID.
func parseRegtype(s string) (Value, error) {
	s = strings.TrimSpace(s)
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		o, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return NullValue, badSyntax(Regtype, s)
		}
		return NewInt(Regtype, int64(o)), nil
	}
	if t, err := Parse(s); err == nil {
		return NewInt(Regtype, int64(t.OID())), nil
	}
	name := strings.TrimPrefix(strings.ToLower(strings.Trim(s, `"`)), "pg_catalog.")
	if o, ok := pseudoTypes[strings.Trim(name, `"`)]; ok {
		return NewInt(Regtype, int64(o)), nil
	}
	return NullValue, pgerror.New(pgerror.UndefinedObject, "type %q does not exist", s)
}
