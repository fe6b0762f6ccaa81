package types

import (
	"math"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/pgerror"
)

// Cast converts v to type to with PostgreSQL's cast semantics: numbers
// round (half away from zero for numeric, half to even for floats) and
// fail with 22003 when out of range; strings parse with the type's text
// input; every type casts to text by its output form. The session time
// zone is UTC, so timestamp and timestamptz share their microseconds.
func Cast(v Value, to Type) (Value, error) {
	if v.K == Null || v.K == to {
		if v.K == to && to == Numeric {
			return v, nil
		}
		return v, nil
	}
	from := v.K
	switch to {
	case Text, Varchar, Name, Char, Unknown:
		if to == Unknown {
			to = Text
		}
		if from == Bytea {
			return NewString(to, v.Text()), nil
		}
		if from.IsString() || from == JSONB {
			return NewString(to, v.S), nil
		}
		return NewString(to, v.Text()), nil
	}
	if from.IsString() {
		return ParseText(to, v.S)
	}
	if from.IsArray() && to.IsArray() {
		return castArray(v, to)
	}
	if from == Regtype {
		from, v.K = Oid, Oid // the OID itself
	}
	switch to {
	case Bool:
		if from.IsInteger() {
			return NewBool(v.I != 0), nil
		}
	case Int2, Int4, Int8, Oid:
		lo, hi := IntRange(to)
		switch {
		case from.IsInteger():
			if v.I < lo || v.I > hi {
				return NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "%s out of range", to)
			}
			return NewInt(to, v.I), nil
		case from == Bool:
			return NewInt(to, v.I), nil
		case from.IsFloat():
			f := math.RoundToEven(v.Float())
			if !FloatFitsInt(to, f) {
				return NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "%s out of range", to)
			}
			return NewInt(to, int64(f)), nil
		case from == Numeric:
			var r apd.Decimal
			if v.N.Form != apd.Finite {
				return NullValue, pgerror.New(pgerror.FeatureNotSupported, "cannot convert NaN to %s", to)
			}
			if _, err := DecimalContext.RoundToIntegralValue(&r, v.N); err != nil {
				return NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "%s out of range", to)
			}
			i, err := r.Int64()
			if err != nil || i < lo || i > hi {
				return NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "%s out of range", to)
			}
			return NewInt(to, i), nil
		}
	case Float4, Float8:
		if from.IsNumeric() {
			f := AsFloat(v)
			if to == Float4 {
				if !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
					return NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
				}
				f = float64(float32(f))
			}
			return NewFloat(to, f), nil
		}
	case Numeric:
		if from.IsInteger() {
			return NewNumeric(apd.New(v.I, 0)), nil
		}
		if from.IsFloat() {
			f := v.Float()
			if math.IsInf(f, 0) {
				return NullValue, pgerror.New(pgerror.FeatureNotSupported, "cannot convert infinity to numeric")
			}
			d := new(apd.Decimal)
			if math.IsNaN(f) {
				d.Form = apd.NaN
				return NewNumeric(d), nil
			}
			// Through the shortest text form, as PostgreSQL's float8_numeric does.
			return ParseText(Numeric, string(appendFloat(nil, f, map[Type]int{Float4: 32, Float8: 64}[from])))
		}
	case Date:
		if from == Timestamp || from == TimestampTZ {
			return NewDate(FloorDiv(v.I, MicrosPerDay)), nil
		}
	case Timestamp, TimestampTZ:
		if from == Timestamp || from == TimestampTZ {
			return NewTimestamp(to, v.I), nil
		}
		if from == Date {
			return NewTimestamp(to, v.I*MicrosPerDay), nil
		}
	case JSONB:
		if from.IsNumeric() || from == Bool {
			return NewJSONB(v.Text()), nil
		}
	case Regtype:
		if from.IsInteger() {
			if v.I < 0 || v.I > math.MaxUint32 {
				return NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "OID out of range")
			}
			return NewInt(Regtype, v.I), nil
		}
	case Interval:
		// no implicit conversions into interval besides text
	}
	return NullValue, pgerror.New(pgerror.DatatypeMismatch, "cannot cast type %s to %s", from, to)
}

// FloatFitsInt reports whether an integral float converts to the integer
// type exactly in range. float64(math.MaxInt64) rounds up to 2^63, so the
// upper bound is compared exclusively against that power of two.
func FloatFitsInt(t Type, f float64) bool {
	if math.IsNaN(f) {
		return false
	}
	lo, hi := IntRange(t)
	if t == Int8 {
		return f >= -9223372036854775808.0 && f < 9223372036854775808.0
	}
	return f >= float64(lo) && f <= float64(hi)
}

// CanCast reports whether Cast from one type to another can succeed for
// some value, without evaluating anything (the planner's check).
func CanCast(from, to Type) bool {
	if from == to || from == Null || from == Unknown || to == Text || to == Varchar || to == Name || to == Char {
		return true
	}
	if from.IsString() {
		return true
	}
	if from.IsArray() || to.IsArray() {
		return from.IsArray() && to.IsArray() && CanCast(from.Elem(), to.Elem())
	}
	if from == Regtype {
		return to.IsInteger()
	}
	switch to {
	case Bool:
		return from.IsInteger()
	case Regtype:
		return from.IsInteger()
	case Int2, Int4, Int8, Oid, Float4, Float8, Numeric:
		return from.IsNumeric() || (from == Bool && to.IsInteger())
	case Date, Timestamp, TimestampTZ:
		return from.IsTime()
	case JSONB:
		return from.IsNumeric() || from == Bool
	}
	return false
}
