package types

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/fvsql/fvsql/pgerror"
)

// JSONCodec encodes and decodes the rows of one schema as flat JSON
// objects whose field names are the column names: the record format of
// every stream. Timestamps are written as ISO 8601 and read from ISO 8601,
// PostgreSQL's text form or epoch milliseconds; bytea travels as base64;
// jsonb columns hold any JSON value. A codec is immutable and safe for
// concurrent use.
type JSONCodec struct {
	names []string
	types []Type
	keys  []string // `"name":`, pre-encoded
	index map[string]int
	lower map[string]int
	// borrow: decoded strings point into the payload instead of copying
	// it (see Borrowing).
	borrow bool
	// need, when set, lists the columns to decode; the others are skipped
	// (left NULL), which saves parsing what a query does not read.
	need []bool
}

// Projecting returns a codec that decodes only the columns need marks
// (nil: all). Encoding is unchanged.
func (c *JSONCodec) Projecting(need []bool) *JSONCodec {
	cp := *c
	cp.need = need
	return &cp
}

// Borrowing returns a codec whose decoded strings (without escapes) point
// into the payload instead of copying it. Use it only where payloads are
// never modified after decoding, as franz-go's fetched records are not;
// a kept row then keeps its record's buffer alive.
func (c *JSONCodec) Borrowing() *JSONCodec {
	cp := *c
	cp.borrow = true
	return &cp
}

// NewJSONCodec returns a codec for columns with the given names and types.
func NewJSONCodec(names []string, types []Type) *JSONCodec {
	c := &JSONCodec{names: names, types: types, index: make(map[string]int, len(names)), lower: make(map[string]int, len(names))}
	for i, n := range names {
		c.keys = append(c.keys, string(appendJSONString(nil, n))+":")
		c.index[n] = i
		c.lower[strings.ToLower(n)] = i
	}
	return c
}

// Width is the number of columns.
func (c *JSONCodec) Width() int { return len(c.names) }

// Append appends row as a JSON object. Values beyond the codec's width
// (a read's metadata columns passing through) are not written.
func (c *JSONCodec) Append(buf []byte, row Row) []byte {
	buf = append(buf, '{')
	for i, v := range row[:len(c.keys)] {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, c.keys[i]...)
		buf = AppendJSONValue(buf, v)
	}
	return append(buf, '}')
}

// AppendJSONValue appends one value in the JSON form streams use.
func AppendJSONValue(buf []byte, v Value) []byte {
	switch v.K {
	case Null:
		return append(buf, "null"...)
	case Bool:
		if v.I != 0 {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case Int2, Int4, Int8, Oid:
		return strconv.AppendInt(buf, v.I, 10)
	case Float4, Float8:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			buf = append(buf, '"')
			buf = appendFloat(buf, f, 64)
			return append(buf, '"')
		}
		bits := 64
		if v.K == Float4 {
			bits = 32
		}
		return strconv.AppendFloat(buf, f, 'g', -1, bits)
	case Numeric:
		if v.N.Form != 0 {
			return append(buf, `"NaN"`...)
		}
		return append(buf, v.N.Text('f')...)
	case Bytea:
		buf = append(buf, '"')
		buf = base64.StdEncoding.AppendEncode(buf, []byte(v.S))
		return append(buf, '"')
	case Date:
		buf = append(buf, '"')
		buf = appendDate(buf, v.I)
		return append(buf, '"')
	case Timestamp:
		buf = append(buf, '"')
		buf = appendTimestamp(buf, v.I, 'T')
		return append(buf, '"')
	case TimestampTZ:
		buf = append(buf, '"')
		buf = appendTimestamp(buf, v.I, 'T')
		return append(buf, 'Z', '"')
	case Interval:
		buf = append(buf, '"')
		buf = appendInterval(buf, v.Interval())
		return append(buf, '"')
	case JSONB:
		return append(buf, v.S...)
	case Regtype:
		return appendJSONString(buf, v.Text())
	default:
		if v.K.IsArray() {
			buf = append(buf, '[')
			for i, e := range v.Elems() {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = AppendJSONValue(buf, e)
			}
			return append(buf, ']')
		}
		return appendJSONString(buf, v.S)
	}
}

const hexDigits = "0123456789abcdef"

func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// ErrNotObject is returned by Decode for a payload that is not a JSON object.
var ErrNotObject = errors.New("types: JSON row is not an object")

// Decode parses a JSON object into dst, which must have Width() entries.
// Fields absent from the object are NULL; unknown fields are ignored. An
// error (22P02 and friends) names the offending column; dst is then
// partially filled and must not be used.
func (c *JSONCodec) Decode(data []byte, dst Row) error {
	for i := range dst {
		dst[i] = NullValue
	}
	d := jsonDecoder{data: data, borrow: c.borrow}
	d.ws()
	if !d.eat('{') {
		return pgerror.New(pgerror.InvalidTextRepresentation, "invalid JSON row: %v", ErrNotObject)
	}
	d.ws()
	if d.eat('}') {
		return d.end()
	}
	for {
		d.ws()
		rawKey, err := d.rawStr()
		if err != nil {
			return d.fail(err)
		}
		d.ws()
		if !d.eat(':') {
			return d.fail(errors.New("expected ':'"))
		}
		d.ws()
		idx, ok := c.index[string(rawKey)]
		if !ok {
			idx, ok = c.lower[strings.ToLower(string(rawKey))]
		}
		if ok && c.need != nil && (idx >= len(c.need) || !c.need[idx]) {
			ok = false // not read by the query: skip it
		}
		if ok {
			v, err := d.value(c.types[idx])
			if err != nil {
				return pgerror.Wrap(err, pgerror.InvalidTextRepresentation, "column %q", c.names[idx])
			}
			dst[idx] = v
		} else if err := d.skip(0); err != nil {
			return d.fail(err)
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return d.end()
		}
		return d.fail(errors.New("expected ',' or '}'"))
	}
}

type jsonDecoder struct {
	data   []byte
	pos    int
	borrow bool // strings without escapes point into data
}

func (d *jsonDecoder) fail(err error) error {
	return pgerror.New(pgerror.InvalidTextRepresentation, "invalid JSON row at byte %d: %v", d.pos, err)
}

func (d *jsonDecoder) end() error {
	d.ws()
	if d.pos != len(d.data) {
		return d.fail(errors.New("data after the object"))
	}
	return nil
}

func (d *jsonDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) eat(c byte) bool {
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

func (d *jsonDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

var errUnterminated = errors.New("unterminated string")

// rawStr reads a JSON string and returns a view of its bytes when it has
// no escapes (valid until data changes), else an unescaped copy.
func (d *jsonDecoder) rawStr() ([]byte, error) {
	if d.eat('"') {
		start := d.pos
		for i := start; i < len(d.data); i++ {
			c := d.data[i]
			if c == '"' {
				d.pos = i + 1
				return d.data[start:i], nil
			}
			if c == '\\' || c < 0x20 {
				break
			}
		}
		d.pos = start - 1
	}
	s, err := d.str()
	return []byte(s), err
}

// str reads a JSON string and returns its unescaped, UTF-8 checked value.
func (d *jsonDecoder) str() (string, error) {
	if !d.eat('"') {
		return "", errors.New("expected a string")
	}
	start := d.pos
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			raw := d.data[start:i]
			d.pos = i + 1
			if !utf8.Valid(raw) {
				return "", pgerror.New(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
			}
			if d.borrow && len(raw) > 0 {
				return unsafe.String(&raw[0], len(raw)), nil
			}
			return string(raw), nil
		}
		if c == '\\' || c < 0x20 {
			return d.slowStr(start)
		}
	}
	return "", errUnterminated
}

func (d *jsonDecoder) slowStr(start int) (string, error) {
	var sb []byte
	sb = append(sb, d.data[start:d.pos]...)
	i := d.pos
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			if !utf8.Valid(sb) {
				return "", pgerror.New(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
			}
			return string(sb), nil
		case c < 0x20:
			return "", errors.New("control character in string")
		case c != '\\':
			sb = append(sb, c)
			i++
			continue
		}
		if i+1 >= len(d.data) {
			return "", errUnterminated
		}
		e := d.data[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			sb = append(sb, e)
		case 'b':
			sb = append(sb, '\b')
		case 'f':
			sb = append(sb, '\f')
		case 'n':
			sb = append(sb, '\n')
		case 'r':
			sb = append(sb, '\r')
		case 't':
			sb = append(sb, '\t')
		case 'u':
			r, n, ok := readU(d.data[i:])
			if !ok {
				return "", errors.New("bad \\u escape")
			}
			i += n
			if utf16.IsSurrogate(r) {
				r2, n2, ok2 := rune(0), 0, false
				if i+1 < len(d.data) && d.data[i] == '\\' && d.data[i+1] == 'u' {
					r2, n2, ok2 = readU(d.data[i+2:])
				}
				if ok2 {
					r = utf16.DecodeRune(r, r2)
					i += 2 + n2
				} else {
					r = utf8.RuneError
				}
			}
			if r == 0 {
				return "", pgerror.New(pgerror.CharacterNotInRepertoire, "\\u0000 cannot be converted to text")
			}
			sb = utf8.AppendRune(sb, r)
		default:
			return "", fmt.Errorf("bad escape \\%c", e)
		}
	}
	return "", errUnterminated
}

func readU(b []byte) (rune, int, bool) {
	if len(b) < 4 {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), 4, true
}

// number returns the raw text of a JSON number.
func (d *jsonDecoder) number() (string, error) {
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.pos++
			continue
		}
		break
	}
	if d.pos == start {
		return "", errors.New("expected a value")
	}
	// A view of the payload: callers parse it and must copy to keep it.
	return unsafe.String(&d.data[start], d.pos-start), nil
}

// fastInt parses a plain JSON integer in place; ok is false when the number
// has a fraction or exponent or does not fit.
func (d *jsonDecoder) fastInt() (int64, bool) {
	i := d.pos
	neg := false
	if i < len(d.data) && d.data[i] == '-' {
		neg = true
		i++
	}
	start := i
	var v uint64
	for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
		if i-start >= 18 {
			return 0, false
		}
		v = v*10 + uint64(d.data[i]-'0')
		i++
	}
	if i == start {
		return 0, false
	}
	if i < len(d.data) {
		switch d.data[i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	d.pos = i
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// literal consumes one of true, false, null.
func (d *jsonDecoder) literal(word string) bool {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

// skip consumes one JSON value of any kind.
func (d *jsonDecoder) skip(depth int) error {
	if depth > 512 {
		return errors.New("nesting too deep")
	}
	switch d.peek() {
	case '"':
		_, err := d.str()
		return err
	case '{', '[':
		open := d.data[d.pos]
		close := byte('}')
		if open == '[' {
			close = ']'
		}
		d.pos++
		d.ws()
		if d.eat(close) {
			return nil
		}
		for {
			d.ws()
			if open == '{' {
				if _, err := d.str(); err != nil {
					return err
				}
				d.ws()
				if !d.eat(':') {
					return errors.New("expected ':'")
				}
				d.ws()
			}
			if err := d.skip(depth + 1); err != nil {
				return err
			}
			d.ws()
			if d.eat(',') {
				continue
			}
			if d.eat(close) {
				return nil
			}
			return errors.New("expected ',' or a closing bracket")
		}
	case 't':
		if d.literal("true") {
			return nil
		}
	case 'f':
		if d.literal("false") {
			return nil
		}
	case 'n':
		if d.literal("null") {
			return nil
		}
	default:
		_, err := d.number()
		return err
	}
	return errors.New("invalid literal")
}

// value reads one JSON value as type t.
func (d *jsonDecoder) value(t Type) (Value, error) {
	c := d.peek()
	switch {
	case c == 'n':
		if d.literal("null") {
			return NullValue, nil
		}
	case c == '"':
		if t.IsTime() || t.IsNumeric() || t == Bool {
			// Parsed, not kept: look at the bytes in place.
			raw, err := d.rawStr()
			if err != nil {
				return NullValue, err
			}
			if len(raw) == 0 {
				return fromJSONString(t, "")
			}
			return fromJSONString(t, unsafe.String(&raw[0], len(raw)))
		}
		s, err := d.str()
		if err != nil {
			return NullValue, err
		}
		return fromJSONString(t, s)
	case c == 't' || c == 'f':
		b := c == 't'
		if (b && d.literal("true")) || (!b && d.literal("false")) {
			switch t {
			case Bool:
				return NewBool(b), nil
			case JSONB:
				return NewJSONB(strconv.FormatBool(b)), nil
			case Text, Varchar:
				return NewString(t, strconv.FormatBool(b)), nil
			}
			return NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "a boolean is not a %s", t)
		}
	case c == '[' && t.IsArray():
		return d.array(t)
	case c == '{' || c == '[':
		start := d.pos
		if err := d.skip(0); err != nil {
			return NullValue, err
		}
		raw := d.data[start:d.pos]
		switch t {
		case JSONB:
			n, err := NormalizeJSON(raw)
			if err != nil {
				return NullValue, err
			}
			return NewJSONB(n), nil
		case Text, Varchar:
			return NewString(t, string(raw)), nil
		}
		return NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "a JSON %s is not a %s", map[byte]string{'{': "object", '[': "array"}[c], t)
	default:
		if t.IsInteger() {
			if i, ok := d.fastInt(); ok {
				lo, hi := IntRange(t)
				if i < lo || i > hi {
					return NullValue, outOfRange(t, strconv.FormatInt(i, 10))
				}
				return NewInt(t, i), nil
			}
		}
		num, err := d.number()
		if err != nil {
			return NullValue, err
		}
		return fromJSONNumber(t, num)
	}
	return NullValue, errors.New("invalid literal")
}

// array reads a JSON array as an array of type t, each element as t's
// element type.
func (d *jsonDecoder) array(t Type) (Value, error) {
	d.eat('[')
	d.ws()
	var elems []Value
	if d.eat(']') {
		return NewArray(t, elems), nil
	}
	for {
		d.ws()
		if d.peek() == '[' {
			return NullValue, pgerror.New(pgerror.FeatureNotSupported, "multidimensional arrays are not supported")
		}
		e, err := d.value(t.Elem())
		if err != nil {
			return NullValue, err
		}
		elems = append(elems, e)
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat(']') {
			return NewArray(t, elems), nil
		}
		return NullValue, errors.New("expected ',' or ']'")
	}
}

func fromJSONNumber(t Type, num string) (Value, error) {
	switch t {
	case Int2, Int4, Int8, Oid:
		v, err := ParseText(t, num)
		if err == nil || pgerror.CodeOf(err) == pgerror.NumericValueOutOfRange {
			return v, err
		}
		// 1e3, 100.0: integral values written as decimals
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f != math.Trunc(f) {
			return NullValue, badSyntax(t, num)
		}
		if !FloatFitsInt(t, f) {
			return NullValue, outOfRange(t, num)
		}
		return NewInt(t, int64(f)), nil
	case Float4, Float8, Numeric:
		return ParseText(t, num)
	case Timestamp, TimestampTZ:
		ms, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return NullValue, badSyntax(t, num)
		}
		us := int64(math.Round(ms * 1000))
		if us < minTimestamp || us > maxTimestamp {
			return NullValue, pgerror.New(pgerror.DatetimeFieldOverflow, "timestamp out of range: %s", num)
		}
		return NewTimestamp(t, us), nil
	case Date:
		ms, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return NullValue, badSyntax(t, num)
		}
		return NewDate(FloorDiv(int64(ms), 86_400_000)), nil
	case Interval:
		return ParseText(t, num+" seconds")
	case Text, Varchar:
		return NewString(t, strings.Clone(num)), nil
	case JSONB:
		if _, err := ParseDecimal(num); err != nil {
			return NullValue, badSyntax(t, num)
		}
		return NewJSONB(strings.Clone(num)), nil
	}
	return NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "a number is not a %s", t)
}

func fromJSONString(t Type, s string) (Value, error) {
	switch t {
	case Bytea:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			if strings.HasPrefix(s, `\x`) {
				return ParseText(Bytea, s)
			}
			return NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "invalid base64 for bytea")
		}
		return Value{K: Bytea, S: string(b)}, nil
	case JSONB:
		return NewJSONB(string(appendJSONString(nil, s))), nil
	case Timestamp, TimestampTZ:
		if s != "" && (s[0] >= '0' && s[0] <= '9') && !strings.ContainsAny(s, "-:") {
			return fromJSONNumber(t, s)
		}
	}
	return ParseText(t, s)
}

// NormalizeJSON validates a JSON document and returns it in PostgreSQL's
// jsonb output form: object keys ordered by length then bytes, duplicate
// keys keeping the last value, ", " and ": " separators.
func NormalizeJSON(data []byte) (string, error) {
	d := jsonDecoder{data: data}
	d.ws()
	var out []byte
	out, err := d.normalize(out, 0)
	if err != nil {
		return "", err
	}
	d.ws()
	if d.pos != len(data) {
		return "", errors.New("trailing data after the JSON value")
	}
	return string(out), nil
}

func (d *jsonDecoder) normalize(out []byte, depth int) ([]byte, error) {
	if depth > 512 {
		return out, errors.New("nesting too deep")
	}
	switch d.peek() {
	case '"':
		s, err := d.str()
		if err != nil {
			return out, err
		}
		return appendJSONString(out, s), nil
	case '[':
		d.pos++
		out = append(out, '[')
		d.ws()
		if d.eat(']') {
			return append(out, ']'), nil
		}
		for n := 0; ; n++ {
			if n > 0 {
				out = append(out, ',', ' ')
			}
			d.ws()
			var err error
			if out, err = d.normalize(out, depth+1); err != nil {
				return out, err
			}
			d.ws()
			if d.eat(',') {
				continue
			}
			if d.eat(']') {
				return append(out, ']'), nil
			}
			return out, errors.New("expected ',' or ']'")
		}
	case '{':
		d.pos++
		type member struct{ k, v string }
		var ms []member
		d.ws()
		if !d.eat('}') {
			for {
				d.ws()
				k, err := d.str()
				if err != nil {
					return out, err
				}
				d.ws()
				if !d.eat(':') {
					return out, errors.New("expected ':'")
				}
				d.ws()
				v, err := d.normalize(nil, depth+1)
				if err != nil {
					return out, err
				}
				ms = append(ms, member{k, string(v)})
				d.ws()
				if d.eat(',') {
					continue
				}
				if d.eat('}') {
					break
				}
				return out, errors.New("expected ',' or '}'")
			}
		}
		sort.SliceStable(ms, func(i, j int) bool {
			if len(ms[i].k) != len(ms[j].k) {
				return len(ms[i].k) < len(ms[j].k)
			}
			return ms[i].k < ms[j].k
		})
		out = append(out, '{')
		n := 0
		for i, m := range ms {
			if i+1 < len(ms) && ms[i+1].k == m.k {
				continue // a later duplicate wins
			}
			if n > 0 {
				out = append(out, ',', ' ')
			}
			out = appendJSONString(out, m.k)
			out = append(out, ':', ' ')
			out = append(out, m.v...)
			n++
		}
		return append(out, '}'), nil
	case 't':
		if d.literal("true") {
			return append(out, "true"...), nil
		}
	case 'f':
		if d.literal("false") {
			return append(out, "false"...), nil
		}
	case 'n':
		if d.literal("null") {
			return append(out, "null"...), nil
		}
	default:
		num, err := d.number()
		if err != nil {
			return out, err
		}
		dec, err := ParseDecimal(num)
		if err != nil || dec.Form != 0 {
			return out, fmt.Errorf("invalid number %q", num)
		}
		return append(out, dec.Text('f')...), nil
	}
	return out, errors.New("invalid literal")
}
