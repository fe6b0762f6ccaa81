package types

import (
	"encoding/binary"
	"errors"
	"math"
)

// AppendValue appends a self-describing, lossless binary encoding of v
// (type tag, then the value): the format of values inside operator state.
// Unlike the key encoding it keeps a numeric's scale.
func AppendValue(buf []byte, v Value) []byte {
	buf = append(buf, byte(v.K))
	switch v.K {
	case Null:
	case Bool, Int2, Int4, Int8, Oid, Regtype, Date, Timestamp, TimestampTZ:
		buf = binary.AppendVarint(buf, v.I)
	case Float4, Float8:
		buf = binary.BigEndian.AppendUint64(buf, uint64(v.I))
	case Interval:
		buf = binary.AppendVarint(buf, v.I)
		buf = binary.AppendVarint(buf, v.X)
	case Numeric:
		s := v.N.Text('f')
		if v.N.Form != 0 {
			s = "NaN"
		}
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	default:
		buf = binary.AppendUvarint(buf, uint64(len(v.S)))
		buf = append(buf, v.S...)
	}
	return buf
}

// AppendValues appends each value of row.
func AppendValues(buf []byte, row Row) []byte {
	for _, v := range row {
		buf = AppendValue(buf, v)
	}
	return buf
}

var errBadValue = errors.New("types: malformed value encoding")

// DecodeValue reads one value written by AppendValue from the front of
// buf and returns the rest. Strings are copied.
func DecodeValue(buf []byte) (Value, []byte, error) {
	if len(buf) == 0 {
		return NullValue, buf, errBadValue
	}
	k := Type(buf[0])
	buf = buf[1:]
	if k >= numTypes {
		return NullValue, buf, errBadValue
	}
	switch k {
	case Null:
		return NullValue, buf, nil
	case Bool, Int2, Int4, Int8, Oid, Regtype, Date, Timestamp, TimestampTZ:
		i, n := binary.Varint(buf)
		if n <= 0 {
			return NullValue, buf, errBadValue
		}
		return Value{K: k, I: i}, buf[n:], nil
	case Float4, Float8:
		if len(buf) < 8 {
			return NullValue, buf, errBadValue
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(buf))
		return NewFloat(k, f), buf[8:], nil
	case Interval:
		i, n := binary.Varint(buf)
		if n <= 0 {
			return NullValue, buf, errBadValue
		}
		x, m := binary.Varint(buf[n:])
		if m <= 0 {
			return NullValue, buf, errBadValue
		}
		return Value{K: k, I: i, X: x}, buf[n+m:], nil
	}
	l, n := binary.Uvarint(buf)
	if n <= 0 || uint64(len(buf)-n) < l {
		return NullValue, buf, errBadValue
	}
	s := string(buf[n : n+int(l)])
	buf = buf[n+int(l):]
	if k == Numeric {
		d, err := ParseDecimal(s)
		if err != nil {
			return NullValue, buf, errBadValue
		}
		return NewNumeric(d), buf, nil
	}
	return Value{K: k, S: s}, buf, nil
}

// DecodeValues reads n values.
func DecodeValues(buf []byte, n int) (Row, []byte, error) {
	row := make(Row, n)
	for i := range row {
		var err error
		if row[i], buf, err = DecodeValue(buf); err != nil {
			return nil, buf, err
		}
	}
	return row, buf, nil
}
