package types

import (
	"encoding/binary"
	"errors"
	"math"
)

// Key encoding: AppendKey writes a value so that the bytes of a tuple of
// values compare (bytewise) like the tuple itself, for every type but
// NUMERIC, whose encoding is unique but ordered only by its reduced text.
// It is the key format of operator state in Pebble and in Kafka state
// topics, and the grouping key of aggregates.
const (
	keyNull    = 0x00
	keyFalse   = 0x01
	keyTrue    = 0x02
	keyInt     = 0x03
	keyFloat   = 0x04
	keyDecimal = 0x05
	keyBytes   = 0x06
	keyIval    = 0x07
	keyArray   = 0x08 // then 0x01 and an element's key per element, then 0x00
)

// AppendKey appends v's key encoding to buf.
func AppendKey(buf []byte, v Value) []byte {
	switch v.K {
	case Null:
		return append(buf, keyNull)
	case Bool:
		if v.I != 0 {
			return append(buf, keyTrue)
		}
		return append(buf, keyFalse)
	case Int2, Int4, Int8, Oid, Regtype, Date, Timestamp, TimestampTZ:
		buf = append(buf, keyInt)
		return binary.BigEndian.AppendUint64(buf, uint64(v.I)^(1<<63))
	case Float4, Float8:
		f := v.Float()
		if f == 0 {
			f = 0 // -0 and 0 are equal: one key
		}
		bits := math.Float64bits(f)
		if math.IsNaN(f) {
			bits = math.Float64bits(math.NaN())
		}
		if bits&(1<<63) != 0 {
			bits = ^bits
		} else {
			bits |= 1 << 63
		}
		buf = append(buf, keyFloat)
		return binary.BigEndian.AppendUint64(buf, bits)
	case Numeric:
		var r = *v.N
		r.Reduce(&r)
		buf = append(buf, keyDecimal)
		return appendEscaped(buf, r.Text('f'))
	case Interval:
		// Intervals that compare equal ('1 mon', '30 days', '720:00:00', as
		// PostgreSQL counts them) get one key: only the span is encoded.
		buf = append(buf, keyIval)
		return binary.BigEndian.AppendUint64(buf, uint64(v.Interval().Duration())^(1<<63))
	default:
		if v.K.IsArray() {
			// Element keys, so that equal arrays (1.0 and 1.00, -0 and 0)
			// share a key and a prefix sorts first.
			buf = append(buf, keyArray)
			for _, e := range v.Elems() {
				buf = append(buf, 0x01)
				buf = AppendKey(buf, e)
			}
			return append(buf, 0x00)
		}
		buf = append(buf, keyBytes)
		return appendEscaped(buf, v.S)
	}
}

// AppendKeyRow appends the key encoding of each value of row.
func AppendKeyRow(buf []byte, row Row) []byte {
	for _, v := range row {
		buf = AppendKey(buf, v)
	}
	return buf
}

// appendEscaped writes s with 0x00 escaped as 0x00 0xFF and terminates it
// with 0x00 0x01, so a shorter string sorts before its extensions.
func appendEscaped(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		buf = append(buf, c)
		if c == 0 {
			buf = append(buf, 0xFF)
		}
	}
	return append(buf, 0x00, 0x01)
}

var errBadKey = errors.New("types: malformed key")

// DecodeKey reads one value of type t from the front of key and returns it
// with the rest of the key. Strings are copied.
func DecodeKey(key []byte, t Type) (Value, []byte, error) {
	if len(key) == 0 {
		return NullValue, key, errBadKey
	}
	tag := key[0]
	key = key[1:]
	switch tag {
	case keyNull:
		return NullValue, key, nil
	case keyFalse, keyTrue:
		return NewBool(tag == keyTrue), key, nil
	case keyInt:
		if len(key) < 8 {
			return NullValue, key, errBadKey
		}
		return Value{K: t, I: int64(binary.BigEndian.Uint64(key) ^ (1 << 63))}, key[8:], nil
	case keyFloat:
		if len(key) < 8 {
			return NullValue, key, errBadKey
		}
		bits := binary.BigEndian.Uint64(key)
		if bits&(1<<63) != 0 {
			bits &^= 1 << 63
		} else {
			bits = ^bits
		}
		return NewFloat(t, math.Float64frombits(bits)), key[8:], nil
	case keyArray:
		var elems []Value
		for {
			if len(key) == 0 {
				return NullValue, key, errBadKey
			}
			more := key[0]
			key = key[1:]
			if more == 0x00 {
				return NewArray(t, elems), key, nil
			}
			if more != 0x01 {
				return NullValue, key, errBadKey
			}
			var e Value
			var err error
			if e, key, err = DecodeKey(key, t.Elem()); err != nil {
				return NullValue, key, err
			}
			elems = append(elems, e)
		}
	case keyIval:
		if len(key) < 8 {
			return NullValue, key, errBadKey
		}
		total := int64(binary.BigEndian.Uint64(key) ^ (1 << 63))
		return NewInterval(IntervalValue{Micros: total}), key[8:], nil
	case keyDecimal, keyBytes:
		var out []byte
		for i := 0; i < len(key); i++ {
			if key[i] != 0 {
				out = append(out, key[i])
				continue
			}
			if i+1 >= len(key) {
				return NullValue, key, errBadKey
			}
			switch key[i+1] {
			case 0xFF:
				out = append(out, 0)
				i++
			case 0x01:
				rest := key[i+2:]
				if tag == keyDecimal {
					d, err := ParseDecimal(string(out))
					if err != nil {
						return NullValue, key, errBadKey
					}
					return NewNumeric(d), rest, nil
				}
				return Value{K: t, S: string(out)}, rest, nil
			default:
				return NullValue, key, errBadKey
			}
		}
		return NullValue, key, errBadKey
	}
	return NullValue, key, errBadKey
}
