package types

import (
	"strconv"
	"strings"
)

// int2vector and oidvector are arrays (IsArray, Elem, the array
// encoding in S) printed and read as PostgreSQL's int2vectorout and
// oidvectorout do: the elements separated by single spaces, no braces,
// no NULLs. pgjdbc splits pg_proc.proargtypes on spaces.

func appendVectorText(buf []byte, v Value) []byte {
	for i, e := range v.Elems() {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, e.I, 10)
	}
	return buf
}

func parseVectorText(t Type, s string) (Value, error) {
	var elems []Value
	for _, f := range strings.Fields(s) {
		var n int64
		var err error
		if t == Int2Vector {
			n, err = strconv.ParseInt(f, 10, 16)
		} else {
			var u uint64
			u, err = strconv.ParseUint(f, 10, 32)
			n = int64(u)
		}
		if err != nil {
			return NullValue, badSyntax(t, s)
		}
		elems = append(elems, NewInt(t.Elem(), n))
	}
	return NewArray(t, elems), nil
}
