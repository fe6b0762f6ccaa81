package types

import (
	"encoding/binary"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
)

// Arrays are one-dimensional with lower bound 1, as most of PostgreSQL's
// are; the elements may be NULL. A value's S holds its elements in the
// value encoding (valueenc.go): a uvarint count, then AppendValue of each
// element. Multidimensional arrays and other lower bounds are refused on
// input (0A000) rather than flattened.

// NewArray returns an array of type t (an array type) holding elems, which
// must be NULL or of t's element type.
func NewArray(t Type, elems []Value) Value { return Value{K: t, S: encodeValues(elems)} }

// encodeValues is the S of an array or a record: a uvarint count, then
// AppendValue of each value.
func encodeValues(vals []Value) string {
	buf := binary.AppendUvarint(nil, uint64(len(vals)))
	for _, v := range vals {
		buf = AppendValue(buf, v)
	}
	return string(buf)
}

// decodeValues reads what encodeValues wrote (nil for ""); each value
// keeps the type it was written with.
func decodeValues(s string) []Value {
	if s == "" {
		return nil
	}
	buf := []byte(s)
	n, k := binary.Uvarint(buf)
	if k <= 0 {
		return nil
	}
	buf = buf[k:]
	out := make([]Value, 0, n)
	for i := uint64(0); i < n; i++ {
		v, rest, err := DecodeValue(buf)
		if err != nil {
			break // encodeValues writes what DecodeValue reads
		}
		out = append(out, v)
		buf = rest
	}
	return out
}

// Elems decodes the elements of an array value (nil for NULL or an empty
// array). The slice is new; the caller may keep or change it.
func (v Value) Elems() []Value {
	if !v.K.IsArray() {
		return nil
	}
	out := decodeValues(v.S)
	elem := v.K.Elem()
	for i := range out {
		if out[i].K != Null {
			out[i].K = elem
		}
	}
	return out
}

// ArrayLen is the number of elements of an array value (0 for NULL).
func (v Value) ArrayLen() int {
	if !v.K.IsArray() || v.S == "" {
		return 0
	}
	n, k := binary.Uvarint([]byte(v.S[:min(len(v.S), binary.MaxVarintLen64)]))
	if k <= 0 {
		return 0
	}
	return int(n)
}

// appendArrayText writes PostgreSQL's array_out form: {a,b,NULL,"x y"}.
func appendArrayText(buf []byte, v Value) []byte {
	buf = append(buf, '{')
	for i, e := range v.Elems() {
		if i > 0 {
			buf = append(buf, ',')
		}
		if e.K == Null {
			buf = append(buf, "NULL"...)
			continue
		}
		start := len(buf)
		buf = AppendText(buf, e)
		if !needsQuotes(buf[start:]) {
			continue
		}
		buf = quoteFrom(buf, start, '\\')
	}
	return append(buf, '}')
}

// quoteFrom puts buf[start:] in double quotes, each " and \ in it escaped
// by esc before it (array_out's \), or doubled when esc is 0
// (record_out's "").
func quoteFrom(buf []byte, start int, esc byte) []byte {
	text := string(buf[start:])
	buf = append(buf[:start], '"')
	for j := 0; j < len(text); j++ {
		if c := text[j]; c == '"' || c == '\\' {
			if esc == 0 {
				buf = append(buf, c)
			} else {
				buf = append(buf, esc)
			}
		}
		buf = append(buf, text[j])
	}
	return append(buf, '"')
}

// needsQuotes reports whether an element's text must be quoted inside an
// array literal, as array_out decides.
func needsQuotes(s []byte) bool {
	if len(s) == 0 || len(s) == 4 && strings.EqualFold(string(s), "null") {
		return true
	}
	for _, c := range s {
		switch c {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

func malformedArray(s, detail string) error {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return pgerror.New(pgerror.InvalidTextRepresentation, "malformed array literal: %q", s).WithDetail("%s", detail)
}

// parseArrayText reads array_in's input form: an optional dimension
// decoration ([1:3]=, ignored), then {elem, …} where an element is NULL,
// a "quoted" string with backslash escapes, or unquoted text (backslash
// escapes too, surrounding white space trimmed).
func parseArrayText(t Type, s string) (Value, error) {
	p := strings.TrimLeft(s, " \t\n\r\v\f")
	if strings.HasPrefix(p, "[") {
		eq := strings.IndexByte(p, '=')
		if eq < 0 {
			return NullValue, malformedArray(s, `Missing "=" after array dimensions.`)
		}
		if strings.Count(p[:eq], "[") > 1 {
			return NullValue, pgerror.New(pgerror.FeatureNotSupported, "multidimensional arrays are not supported")
		}
		p = strings.TrimLeft(p[eq+1:], " \t\n\r\v\f")
	}
	if !strings.HasPrefix(p, "{") {
		return NullValue, malformedArray(s, `Array value must start with "{" or dimension information.`)
	}
	elem := t.Elem()
	var elems []Value
	i := 1
	skipSpace := func() {
		for i < len(p) && strings.IndexByte(" \t\n\r\v\f", p[i]) >= 0 {
			i++
		}
	}
	skipSpace()
	if i < len(p) && p[i] == '}' {
		i++
	} else {
		for {
			skipSpace()
			if i >= len(p) {
				return NullValue, malformedArray(s, "Unexpected end of input.")
			}
			if p[i] == '{' {
				return NullValue, pgerror.New(pgerror.FeatureNotSupported, "multidimensional arrays are not supported")
			}
			var sb strings.Builder
			quoted, sawText := false, false
			trail := 0 // unquoted white space at the end of sb, trimmed
			if p[i] == '"' {
				quoted = true
				i++
				for {
					if i >= len(p) {
						return NullValue, malformedArray(s, "Unexpected end of input.")
					}
					c := p[i]
					i++
					if c == '"' {
						break
					}
					if c == '\\' {
						if i >= len(p) {
							return NullValue, malformedArray(s, "Unexpected end of input.")
						}
						c = p[i]
						i++
					}
					sb.WriteByte(c)
				}
				skipSpace()
			} else {
				for i < len(p) && p[i] != ',' && p[i] != '}' {
					c := p[i]
					i++
					switch {
					case c == '{' || c == '"':
						return NullValue, malformedArray(s, "Unexpected \""+string(c)+"\" character.")
					case c == '\\':
						if i >= len(p) {
							return NullValue, malformedArray(s, "Unexpected end of input.")
						}
						sb.WriteByte(p[i])
						i++
						trail = 0
					case strings.IndexByte(" \t\n\r\v\f", c) >= 0:
						if sawText {
							sb.WriteByte(c)
							trail++
						}
						continue
					default:
						sb.WriteByte(c)
						trail = 0
					}
					sawText = true
				}
			}
			if i >= len(p) {
				return NullValue, malformedArray(s, "Unexpected end of input.")
			}
			if p[i] != ',' && p[i] != '}' {
				return NullValue, malformedArray(s, "Unexpected array element.")
			}
			text := sb.String()
			text = text[:len(text)-trail]
			if !quoted && text == "" {
				return NullValue, malformedArray(s, "Unexpected \""+string(p[i])+"\" character.")
			}
			if !quoted && strings.EqualFold(text, "null") {
				elems = append(elems, NullValue)
			} else {
				e, err := ParseText(elem, text)
				if err != nil {
					return NullValue, err
				}
				elems = append(elems, e)
			}
			c := p[i]
			i++
			if c == '}' {
				break
			}
		}
	}
	if rest := strings.TrimSpace(p[i:]); rest != "" {
		return NullValue, malformedArray(s, "Junk after closing right brace.")
	}
	return NewArray(t, elems), nil
}

// appendArrayBinary writes array_send's form: ndim, has-nulls flag,
// element type OID, then per dimension its length and lower bound, then
// each element as a length (-1 for NULL) and its binary form.
func appendArrayBinary(buf []byte, v Value) []byte {
	elems := v.Elems()
	ndim, nulls := uint32(0), uint32(0)
	if len(elems) > 0 {
		ndim = 1
	}
	for _, e := range elems {
		if e.K == Null {
			nulls = 1
		}
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, nulls)
	buf = binary.BigEndian.AppendUint32(buf, v.K.Elem().OID())
	if ndim == 1 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(elems)))
		buf = binary.BigEndian.AppendUint32(buf, 1)
	}
	for _, e := range elems {
		if e.K == Null {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		buf = AppendBinary(buf, e)
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf
}

// parseArrayBinary reads array_recv's input.
func parseArrayBinary(t Type, b []byte) (Value, error) {
	bad := func(what string) error {
		return pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid binary array: %s", what)
	}
	u32 := func() (uint32, bool) {
		if len(b) < 4 {
			return 0, false
		}
		x := binary.BigEndian.Uint32(b)
		b = b[4:]
		return x, true
	}
	ndim, ok1 := u32()
	_, ok2 := u32() // has-nulls flag: the lengths say it again
	elemOID, ok3 := u32()
	if !ok1 || !ok2 || !ok3 {
		return NullValue, bad("short header")
	}
	elem := t.Elem()
	if elemOID != elem.OID() {
		return NullValue, pgerror.New(pgerror.DatatypeMismatch, "binary data has array element type %d instead of expected %d", elemOID, elem.OID())
	}
	switch {
	case ndim == 0:
		if len(b) != 0 {
			return NullValue, bad("data after an empty array")
		}
		return NewArray(t, nil), nil
	case ndim > 1:
		return NullValue, pgerror.New(pgerror.FeatureNotSupported, "multidimensional arrays are not supported")
	}
	n, ok1 := u32()
	_, ok2 = u32() // lower bound
	if !ok1 || !ok2 || int(n) < 0 || int(n) > len(b)/4 {
		return NullValue, bad("bad dimension")
	}
	elems := make([]Value, 0, n)
	for range n {
		l, ok := u32()
		if !ok {
			return NullValue, bad("short element")
		}
		if l == 0xFFFFFFFF {
			elems = append(elems, NullValue)
			continue
		}
		if int(l) > len(b) {
			return NullValue, bad("short element")
		}
		e, err := ParseBinary(elem, b[:l])
		if err != nil {
			return NullValue, err
		}
		elems = append(elems, e)
		b = b[l:]
	}
	if len(b) != 0 {
		return NullValue, bad("data after the last element")
	}
	return NewArray(t, elems), nil
}

// compareArrays orders arrays element by element (NULL elements after
// the others, equal to each other), then by length, as PostgreSQL's
// btarraycmp does for one dimension.
func compareArrays(a, b Value) int {
	ae, be := a.Elems(), b.Elems()
	for i := range min(len(ae), len(be)) {
		if c := Compare(ae[i], be[i]); c != 0 {
			return c
		}
	}
	return cmpInt(int64(len(ae)), int64(len(be)))
}

// castArray casts each element of an array to the element type of to.
func castArray(v Value, to Type) (Value, error) {
	elems := v.Elems()
	for i, e := range elems {
		c, err := Cast(e, to.Elem())
		if err != nil {
			return NullValue, err
		}
		elems[i] = c
	}
	return NewArray(to, elems), nil
}
