package types

import (
	"math"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Value is one SQL value. Its representation by type:
//
//	Null               K == Null, nothing else set
//	Bool               I: 0 or 1
//	Int2/Int4/Int8/Oid/Regtype  I
//	Float4/Float8      I: math.Float64bits
//	Numeric            N (never nil for a non-null numeric)
//	Text/Varchar/Name/Char/Unknown/JSONB  S (JSONB: normalized JSON text)
//	Bytea              S holds the raw bytes
//	Date               I: days since 1970-01-01
//	Timestamp(TZ)      I: microseconds since 1970-01-01 00:00:00 UTC
//	Interval           I: microseconds, X: months<<32 | uint32(days)
//	arrays (IsArray)   S: the elements in the value encoding (see
//	                   NewArray, Elems); one dimension, lower bound 1
//
// A Value is immutable once built: N is shared, never modified in place.
type Value struct {
	K Type
	I int64
	X int64
	S string
	N *apd.Decimal
}

// Row is one row of values, in schema order.
type Row []Value

// NullValue is SQL NULL.
var NullValue = Value{}

// IsNull reports whether v is SQL NULL.
func (v Value) IsNull() bool { return v.K == Null }

// NewBool returns a boolean value.
func NewBool(b bool) Value {
	if b {
		return Value{K: Bool, I: 1}
	}
	return Value{K: Bool}
}

// NewInt returns an integer value of type t (Int2, Int4, Int8 or Oid).
func NewInt(t Type, i int64) Value { return Value{K: t, I: i} }

// NewInt8 returns a bigint value.
func NewInt8(i int64) Value { return Value{K: Int8, I: i} }

// NewFloat returns a float value of type t (Float4 or Float8).
func NewFloat(t Type, f float64) Value { return Value{K: t, I: int64(math.Float64bits(f))} }

// NewFloat8 returns a double precision value.
func NewFloat8(f float64) Value { return NewFloat(Float8, f) }

// NewText returns a text value.
func NewText(s string) Value { return Value{K: Text, S: s} }

// NewString returns a value of the character type t.
func NewString(t Type, s string) Value { return Value{K: t, S: s} }

// NewBytea returns a bytea value holding a copy of b.
func NewBytea(b []byte) Value { return Value{K: Bytea, S: string(b)} }

// NewNumeric returns a numeric value; d must not be modified afterwards.
// A negative zero (-3 % 3, -(0)) becomes zero: numeric has no signed
// zero in PostgreSQL, and the two would print and group apart.
func NewNumeric(d *apd.Decimal) Value {
	if d != nil && d.Negative && d.IsZero() {
		d.Negative = false
	}
	return Value{K: Numeric, N: d}
}

// NewTimestamp returns a timestamp value of type t from Unix microseconds.
func NewTimestamp(t Type, micros int64) Value { return Value{K: t, I: micros} }

// NewDate returns a date from days since the Unix epoch.
func NewDate(days int64) Value { return Value{K: Date, I: days} }

// NewInterval returns an interval value.
func NewInterval(iv IntervalValue) Value {
	return Value{K: Interval, I: iv.Micros, X: int64(iv.Months)<<32 | int64(uint32(iv.Days))}
}

// NewJSONB returns a jsonb value from normalized JSON text.
func NewJSONB(s string) Value { return Value{K: JSONB, S: s} }

// Bool returns a boolean's value.
func (v Value) Bool() bool { return v.I != 0 }

// Int returns an integer's value.
func (v Value) Int() int64 { return v.I }

// Float returns a float's value.
func (v Value) Float() float64 { return math.Float64frombits(uint64(v.I)) }

// Micros returns a timestamp's microseconds since the Unix epoch.
func (v Value) Micros() int64 { return v.I }

// IntervalValue is a PostgreSQL interval: months, days and microseconds
// are kept apart because their lengths vary.
type IntervalValue struct {
	Months int32
	Days   int32
	Micros int64
}

// Interval returns an interval's parts.
func (v Value) Interval() IntervalValue {
	return IntervalValue{Months: int32(v.X >> 32), Days: int32(uint32(v.X)), Micros: v.I}
}

// Duration returns the interval as microseconds, counting a day as 24
// hours and a month as 30 days, as PostgreSQL does when it must.
func (iv IntervalValue) Duration() int64 {
	return iv.Micros + int64(iv.Days)*MicrosPerDay + int64(iv.Months)*30*MicrosPerDay
}

// Time constants in microseconds.
const (
	MicrosPerSecond = int64(1_000_000)
	MicrosPerMinute = 60 * MicrosPerSecond
	MicrosPerHour   = 60 * MicrosPerMinute
	MicrosPerDay    = 24 * MicrosPerHour
)

// CloneRow copies a row and the bytes of its strings, so the copy does
// not keep a decoded payload alive (rows decoded without copying point
// into their record).
func CloneRow(row Row) Row {
	out := make(Row, len(row))
	for i, v := range row {
		if v.S != "" {
			v.S = strings.Clone(v.S)
		}
		out[i] = v
	}
	return out
}
