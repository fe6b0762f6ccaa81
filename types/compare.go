package types

import (
	"math"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Compare orders two non-null values of comparable types: -1, 0 or 1.
// Numbers compare across integer, float and numeric types; strings compare
// bytewise (the C collation); a NULL sorts after every value, as
// PostgreSQL's default NULLS LAST for ascending order.
func Compare(a, b Value) int {
	if a.K == Null || b.K == Null {
		switch {
		case a.K == b.K:
			return 0
		case a.K == Null:
			return 1
		default:
			return -1
		}
	}
	if a.K == b.K {
		return compareSame(a, b)
	}
	if a.K.IsNumeric() && b.K.IsNumeric() || a.K.IsOID() && b.K.IsOID() {
		return compareNumbers(a, b)
	}
	if a.K.IsArray() && b.K.IsArray() {
		return compareArrays(a, b)
	}
	if a.K.IsString() && b.K.IsString() {
		return strings.Compare(a.S, b.S)
	}
	if a.K.IsTime() && b.K.IsTime() {
		return cmpInt(timeMicros(a), timeMicros(b))
	}
	return strings.Compare(a.Text(), b.Text())
}

func timeMicros(v Value) int64 {
	if v.K == Date {
		return v.I * MicrosPerDay
	}
	return v.I
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	// PostgreSQL orders NaN above every other float, and equal to itself.
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareSame(a, b Value) int {
	switch a.K {
	case Bool, Int2, Int4, Int8, Oid, Regtype, Date, Timestamp, TimestampTZ:
		return cmpInt(a.I, b.I)
	case Float4, Float8:
		return cmpFloat(a.Float(), b.Float())
	case Numeric:
		return cmpDecimal(a.N, b.N)
	case Interval:
		ai, bi := a.Interval(), b.Interval()
		return cmpInt(ai.Duration(), bi.Duration())
	case Record: // field by field, as PostgreSQL's record comparison
		af, bf := a.Fields(), b.Fields()
		for i := range min(len(af), len(bf)) {
			if c := Compare(af[i], bf[i]); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(af)), int64(len(bf)))
	default:
		if a.K.IsArray() {
			return compareArrays(a, b)
		}
		return strings.Compare(a.S, b.S)
	}
}

func compareNumbers(a, b Value) int {
	if (a.K.IsInteger() || a.K == Regtype) && (b.K.IsInteger() || b.K == Regtype) {
		return cmpInt(a.I, b.I)
	}
	if a.K == Numeric || b.K == Numeric {
		if a.K.IsFloat() || b.K.IsFloat() {
			return cmpFloat(AsFloat(a), AsFloat(b))
		}
		return cmpDecimal(AsDecimal(a), AsDecimal(b))
	}
	return cmpFloat(AsFloat(a), AsFloat(b))
}

// cmpDecimal compares two decimals as PostgreSQL compares numerics: NaN
// above every other number and equal to itself (apd orders it first).
func cmpDecimal(x, y *apd.Decimal) int {
	xn, yn := x.Form == apd.NaN || x.Form == apd.NaNSignaling, y.Form == apd.NaN || y.Form == apd.NaNSignaling
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return x.Cmp(y)
}

// AsFloat converts a number to float64.
func AsFloat(v Value) float64 {
	switch v.K {
	case Float4, Float8:
		return v.Float()
	case Numeric:
		f, _ := v.N.Float64()
		return f
	}
	return float64(v.I)
}

// AsDecimal converts a number to a decimal; the result must not be modified
// when v is already numeric.
func AsDecimal(v Value) *apd.Decimal {
	switch v.K {
	case Numeric:
		return v.N
	case Float4, Float8:
		d := new(apd.Decimal)
		d.SetFloat64(v.Float())
		return d
	}
	return apd.New(v.I, 0)
}

// Equal reports whether two values are equal for grouping and DISTINCT:
// NULL equals NULL here, unlike in SQL's = operator.
func Equal(a, b Value) bool {
	if a.K == Null || b.K == Null {
		return a.K == b.K
	}
	return Compare(a, b) == 0
}
