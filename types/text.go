package types

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/pgerror"
)

// AppendText appends v in PostgreSQL's text output format (the format
// psql shows and text-format result columns carry). NULL appends nothing;
// callers encode NULL out of band.
func AppendText(buf []byte, v Value) []byte {
	switch v.K {
	case Null:
		return buf
	case Bool:
		if v.I != 0 {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case Int2, Int4, Int8, Oid:
		return strconv.AppendInt(buf, v.I, 10)
	case Float4:
		return appendFloat(buf, v.Float(), 32)
	case Float8:
		return appendFloat(buf, v.Float(), 64)
	case Numeric:
		return append(buf, v.N.Text('f')...)
	case Bytea:
		buf = append(buf, '\\', 'x')
		return hex.AppendEncode(buf, []byte(v.S))
	case Date:
		return appendDate(buf, v.I)
	case Timestamp:
		return appendTimestamp(buf, v.I, ' ')
	case TimestampTZ:
		buf = appendTimestamp(buf, v.I, ' ')
		return append(buf, '+', '0', '0')
	case Interval:
		return appendInterval(buf, v.Interval())
	case Regtype:
		return append(buf, regtypeName(uint32(v.I))...)
	case Record:
		return appendRecordText(buf, v)
	case Int2Vector, OidVector:
		return appendVectorText(buf, v)
	default:
		if v.K.IsArray() {
			return appendArrayText(buf, v)
		}
		return append(buf, v.S...)
	}
}

// Text returns v in PostgreSQL's text output format ("" for NULL).
func (v Value) Text() string { return string(AppendText(nil, v)) }

// String is v's text form, or NULL.
func (v Value) String() string {
	if v.K == Null {
		return "NULL"
	}
	return v.Text()
}

// appendFloat appends f as PostgreSQL's float4out/float8out do with
// extra_float_digits > 0: the shortest digits that round-trip, in fixed
// notation when the decimal exponent is in [-4, 15) for float8 or [-4, 6)
// for float4, else as d.ddde±XX. (strconv's 'g' switches to exponents at
// 6 digits for both.)
func appendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits) // [-]d[.ddd]e±XX
	i := len(e) - 1
	for e[i] != 'e' {
		i--
	}
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	maxExp := 15
	if bits == 32 {
		maxExp = 6
	}
	if exp < -4 || exp >= maxExp {
		return append(buf, e...)
	}
	mant := e[:i]
	if mant[0] == '-' {
		buf = append(buf, '-')
		mant = mant[1:]
	}
	// The significant digits, without the point.
	var digits [24]byte
	nd := 0
	for _, c := range mant {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	switch {
	case exp < 0:
		buf = append(buf, '0', '.')
		for j := exp + 1; j < 0; j++ {
			buf = append(buf, '0')
		}
		buf = append(buf, digits[:nd]...)
	case exp+1 >= nd:
		buf = append(buf, digits[:nd]...)
		for j := nd; j < exp+1; j++ {
			buf = append(buf, '0')
		}
	default:
		buf = append(buf, digits[:exp+1]...)
		buf = append(buf, '.')
		buf = append(buf, digits[exp+1:nd]...)
	}
	return buf
}

// ParseText parses s, a value in PostgreSQL's text input format, as type t.
// Errors carry 22P02 (bad syntax), 22003 (out of range) or 22007/22008.
func ParseText(t Type, s string) (Value, error) {
	switch t {
	case Null, Unknown, Text, Name, Char:
		if t == Null || t == Unknown {
			t = Text
		}
		if !utf8.ValidString(s) {
			return NullValue, pgerror.New(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
		}
		return Value{K: t, S: s}, nil
	case Varchar:
		if !utf8.ValidString(s) {
			return NullValue, pgerror.New(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"")
		}
		return Value{K: Varchar, S: s}, nil
	case Bool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "yes", "y", "on", "1":
			return NewBool(true), nil
		case "f", "false", "no", "n", "off", "0":
			return NewBool(false), nil
		}
		return NullValue, badSyntax(t, s)
	case Int2, Int4, Int8, Oid:
		return parseInt(t, strings.TrimSpace(s))
	case Float4, Float8:
		f, err := parseFloat(strings.TrimSpace(s))
		if err != nil {
			return NullValue, badSyntax(t, s)
		}
		if t == Float4 && !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
			return NullValue, outOfRange(t, s)
		}
		if t == Float4 {
			f = float64(float32(f))
		}
		return NewFloat(t, f), nil
	case Numeric:
		d, err := ParseDecimal(strings.TrimSpace(s))
		if err != nil {
			return NullValue, badSyntax(t, s)
		}
		return NewNumeric(d), nil
	case Bytea:
		b, err := parseBytea(s)
		if err != nil {
			return NullValue, err
		}
		return Value{K: Bytea, S: b}, nil
	case Date:
		d, err := ParseDate(s)
		if err != nil {
			return NullValue, err
		}
		return NewDate(d), nil
	case Timestamp, TimestampTZ:
		us, err := ParseTimestamp(s, t == TimestampTZ)
		if err != nil {
			return NullValue, err
		}
		return NewTimestamp(t, us), nil
	case Interval:
		iv, err := ParseInterval(s, "")
		if err != nil {
			return NullValue, err
		}
		return NewInterval(iv), nil
	case JSONB:
		n, err := NormalizeJSON([]byte(s))
		if err != nil {
			return NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type json: %v", err)
		}
		return NewJSONB(n), nil
	case Regtype:
		return parseRegtype(s)
	case Int2Vector, OidVector:
		return parseVectorText(t, s)
	}
	if t.IsArray() {
		return parseArrayText(t, s)
	}
	return NullValue, pgerror.New(pgerror.FeatureNotSupported, "input of type %s is not supported", t)
}

func badSyntax(t Type, s string) error {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type %s: %q", t, s)
}

func outOfRange(t Type, s string) error {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return pgerror.New(pgerror.NumericValueOutOfRange, "value %q is out of range for type %s", s, t)
}

// IntRange returns the bounds of an integer type.
func IntRange(t Type) (lo, hi int64) {
	switch t {
	case Int2:
		return math.MinInt16, math.MaxInt16
	case Int4:
		return math.MinInt32, math.MaxInt32
	case Oid:
		return 0, math.MaxUint32
	}
	return math.MinInt64, math.MaxInt64
}

func parseInt(t Type, s string) (Value, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return NullValue, outOfRange(t, s)
		}
		return NullValue, badSyntax(t, s)
	}
	lo, hi := IntRange(t)
	if i < lo || i > hi {
		return NullValue, outOfRange(t, s)
	}
	return NewInt(t, i), nil
}

func parseFloat(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), nil
	case "infinity", "inf", "+infinity", "+inf":
		return math.Inf(1), nil
	case "-infinity", "-inf":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil // ±Inf or 0, as PostgreSQL's float8in rejects; accept the IEEE result
		}
		return 0, err
	}
	return f, nil
}

// DecimalContext is the arithmetic context for NUMERIC: PostgreSQL allows
// up to 131072 digits before the point; 1000 significant digits is ample.
var DecimalContext = apd.BaseContext.WithPrecision(1000)

// ParseDecimal parses a decimal number (no exponent limits beyond the context's).
func ParseDecimal(s string) (*apd.Decimal, error) {
	if strings.EqualFold(s, "nan") {
		return &apd.Decimal{Form: apd.NaN}, nil
	}
	d, _, err := apd.NewFromString(s)
	if err != nil {
		return nil, err
	}
	if d.Form == apd.Infinite {
		return nil, strconv.ErrSyntax
	}
	return d, nil
}

// parseBytea parses bytea input as PostgreSQL's byteain does: "\x" and
// hex digit pairs (DecodeByteaHex), or else the escape format
// (DecodeByteaEscape).
func parseBytea(s string) (string, error) {
	if strings.HasPrefix(s, `\x`) || strings.HasPrefix(s, `\X`) {
		return DecodeByteaHex(s[2:])
	}
	return DecodeByteaEscape(s)
}

// DecodeByteaHex decodes hex digit pairs, whitespace allowed between
// pairs (bytea's hex input after "\x", and decode(…, 'hex')).
func DecodeByteaHex(s string) (string, error) {
	out := make([]byte, 0, len(s)/2)
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		hi, ok1 := unhex(c)
		if i+1 >= len(s) {
			return "", pgerror.New(pgerror.InvalidParameterValue, "invalid hexadecimal data: odd number of digits")
		}
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			bad := s[i : i+1]
			if ok1 {
				bad = s[i+1 : i+2]
			}
			return "", pgerror.New(pgerror.InvalidParameterValue, "invalid hexadecimal digit: %q", bad)
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	return string(out), nil
}

// DecodeByteaEscape decodes bytea's escape format (and decode(…,
// 'escape')): "\\" is a backslash, "\ooo" an octal byte, any other
// backslash an error.
func DecodeByteaEscape(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1], '3') && isOctal(s[i+2], '7') && isOctal(s[i+3], '7'):
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return "", pgerror.New(pgerror.InvalidTextRepresentation, "invalid input syntax for type bytea")
		}
	}
	return string(out), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isOctal(c, max byte) bool { return c >= '0' && c <= max }
