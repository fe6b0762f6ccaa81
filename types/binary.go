package types

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/pgerror"
)

// AppendBinary appends v in PostgreSQL's binary format for its type.
// Types without a binary form (HasBinary false) are appended as text.
func AppendBinary(buf []byte, v Value) []byte {
	switch v.K {
	case Null:
		return buf
	case Bool:
		return append(buf, byte(v.I))
	case Int2:
		return binary.BigEndian.AppendUint16(buf, uint16(v.I))
	case Int4, Oid, Regtype:
		return binary.BigEndian.AppendUint32(buf, uint32(v.I))
	case Int8:
		return binary.BigEndian.AppendUint64(buf, uint64(v.I))
	case Float4:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(v.Float())))
	case Float8:
		return binary.BigEndian.AppendUint64(buf, uint64(v.I))
	case Numeric:
		return appendNumericBinary(buf, v.N)
	case Date:
		return binary.BigEndian.AppendUint32(buf, uint32(int32(v.I-unixToPGEpochDays)))
	case Timestamp, TimestampTZ:
		return binary.BigEndian.AppendUint64(buf, uint64(v.I-unixToPGEpochMicros))
	case Interval:
		iv := v.Interval()
		buf = binary.BigEndian.AppendUint64(buf, uint64(iv.Micros))
		buf = binary.BigEndian.AppendUint32(buf, uint32(iv.Days))
		return binary.BigEndian.AppendUint32(buf, uint32(iv.Months))
	case JSONB:
		buf = append(buf, 1)
		return append(buf, v.S...)
	default:
		if v.K.IsArray() {
			if v.K.HasBinary() {
				return appendArrayBinary(buf, v)
			}
			return appendArrayText(buf, v)
		}
		return append(buf, v.S...)
	}
}

// ParseBinary decodes b, a value in PostgreSQL's binary format, as type t.
func ParseBinary(t Type, b []byte) (Value, error) {
	need := func(n int) error {
		if len(b) != n {
			return pgerror.New(pgerror.InvalidBinaryRepresentation, "incorrect binary data format for type %s: %d bytes", t, len(b))
		}
		return nil
	}
	switch t {
	case Bool:
		if err := need(1); err != nil {
			return NullValue, err
		}
		return NewBool(b[0] != 0), nil
	case Int2:
		if err := need(2); err != nil {
			return NullValue, err
		}
		return NewInt(t, int64(int16(binary.BigEndian.Uint16(b)))), nil
	case Int4:
		if err := need(4); err != nil {
			return NullValue, err
		}
		return NewInt(t, int64(int32(binary.BigEndian.Uint32(b)))), nil
	case Oid, Regtype:
		if err := need(4); err != nil {
			return NullValue, err
		}
		return NewInt(t, int64(binary.BigEndian.Uint32(b))), nil
	case Int8:
		if err := need(8); err != nil {
			return NullValue, err
		}
		return NewInt(t, int64(binary.BigEndian.Uint64(b))), nil
	case Float4:
		if err := need(4); err != nil {
			return NullValue, err
		}
		return NewFloat(t, float64(math.Float32frombits(binary.BigEndian.Uint32(b)))), nil
	case Float8:
		if err := need(8); err != nil {
			return NullValue, err
		}
		return Value{K: Float8, I: int64(binary.BigEndian.Uint64(b))}, nil
	case Numeric:
		d, err := parseNumericBinary(b)
		if err != nil {
			return NullValue, err
		}
		return NewNumeric(d), nil
	case Date:
		if err := need(4); err != nil {
			return NullValue, err
		}
		return NewDate(int64(int32(binary.BigEndian.Uint32(b))) + unixToPGEpochDays), nil
	case Timestamp, TimestampTZ:
		if err := need(8); err != nil {
			return NullValue, err
		}
		return NewTimestamp(t, int64(binary.BigEndian.Uint64(b))+unixToPGEpochMicros), nil
	case Interval:
		if err := need(16); err != nil {
			return NullValue, err
		}
		return NewInterval(IntervalValue{
			Micros: int64(binary.BigEndian.Uint64(b)),
			Days:   int32(binary.BigEndian.Uint32(b[8:])),
			Months: int32(binary.BigEndian.Uint32(b[12:])),
		}), nil
	case JSONB:
		if len(b) == 0 || b[0] != 1 {
			return NullValue, pgerror.New(pgerror.InvalidBinaryRepresentation, "unsupported jsonb version number")
		}
		return ParseText(JSONB, string(b[1:]))
	case Bytea:
		return Value{K: Bytea, S: string(b)}, nil
	default:
		if t.IsArray() && t.HasBinary() {
			return parseArrayBinary(t, b)
		}
		return ParseText(t, string(b))
	}
}

const (
	numericPos = 0x0000
	numericNeg = 0x4000
	numericNaN = 0xC000
)

// appendNumericBinary writes PostgreSQL's numeric wire form: ndigits,
// weight, sign, dscale, then base-10000 digits.
func appendNumericBinary(buf []byte, d *apd.Decimal) []byte {
	if d.Form == apd.NaN || d.Form == apd.NaNSignaling {
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, numericNaN)
		return binary.BigEndian.AppendUint16(buf, 0)
	}
	text := d.Text('f')
	sign := uint16(numericPos)
	if strings.HasPrefix(text, "-") {
		sign = numericNeg
		text = text[1:]
	}
	intPart, fracPart, _ := strings.Cut(text, ".")
	dscale := len(fracPart)
	intPart = strings.TrimLeft(intPart, "0")
	// Pad so both parts split into whole groups of four.
	if r := len(intPart) % 4; r != 0 {
		intPart = strings.Repeat("0", 4-r) + intPart
	}
	if r := len(fracPart) % 4; r != 0 {
		fracPart += strings.Repeat("0", 4-r)
	}
	all := intPart + fracPart
	groups := make([]uint16, 0, len(all)/4)
	for i := 0; i < len(all); i += 4 {
		g, _ := strconv.Atoi(all[i : i+4])
		groups = append(groups, uint16(g))
	}
	weight := len(intPart)/4 - 1
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	if len(groups) == 0 {
		weight = 0
		sign = numericPos
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(groups)))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	buf = binary.BigEndian.AppendUint16(buf, uint16(dscale))
	for _, g := range groups {
		buf = binary.BigEndian.AppendUint16(buf, g)
	}
	return buf
}

func parseNumericBinary(b []byte) (*apd.Decimal, error) {
	bad := pgerror.New(pgerror.InvalidBinaryRepresentation, "invalid binary numeric")
	if len(b) < 8 {
		return nil, bad
	}
	n := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if len(b) != 8+2*n {
		return nil, bad
	}
	if sign == numericNaN {
		return &apd.Decimal{Form: apd.NaN}, nil
	}
	var sb strings.Builder
	if sign == numericNeg {
		sb.WriteByte('-')
	}
	// Digits as a string of base-10000 groups, with the point after group weight.
	var digits strings.Builder
	for i := 0; i < n; i++ {
		g := binary.BigEndian.Uint16(b[8+2*i:])
		if g > 9999 {
			return nil, bad
		}
		s := strconv.Itoa(int(g))
		digits.WriteString(strings.Repeat("0", 4-len(s)))
		digits.WriteString(s)
	}
	all := digits.String()
	intGroups := weight + 1
	var intPart, fracPart string
	switch {
	case intGroups <= 0:
		intPart = "0"
		fracPart = strings.Repeat("0", -intGroups*4) + all
	case intGroups*4 >= len(all):
		intPart = all + strings.Repeat("0", intGroups*4-len(all))
	default:
		intPart = all[:intGroups*4]
		fracPart = all[intGroups*4:]
	}
	if len(fracPart) > dscale {
		fracPart = fracPart[:dscale]
	} else {
		fracPart += strings.Repeat("0", dscale-len(fracPart))
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	sb.WriteString(intPart)
	if fracPart != "" {
		sb.WriteByte('.')
		sb.WriteString(fracPart)
	}
	d, _, err := apd.NewFromString(sb.String())
	if err != nil {
		return nil, bad
	}
	return d, nil
}
