package expr

import (
	"math"
	"math/bits"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

var (
	errDivZero = pgerror.New(pgerror.DivisionByZero, "division by zero")
	errFloatOv = pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")
)

func intOverflow(t types.Type) error {
	return pgerror.New(pgerror.NumericValueOutOfRange, "%s out of range", t)
}

// negInt negates with overflow detection (-MinInt64 does not exist).
func negInt(t types.Type, v int64) (types.Value, error) {
	if v == math.MinInt64 {
		return types.NullValue, intOverflow(t)
	}
	return checkInt(t, -v)
}

func checkInt(t types.Type, v int64) (types.Value, error) {
	lo, hi := types.IntRange(t)
	if v < lo || v > hi {
		return types.NullValue, intOverflow(t)
	}
	return types.NewInt(t, v), nil
}

func checkFloat(t types.Type, r float64, in ...float64) (types.Value, error) {
	if math.IsInf(r, 0) {
		for _, x := range in {
			if math.IsInf(x, 0) {
				return types.NewFloat(t, r), nil
			}
		}
		return types.NullValue, errFloatOv
	}
	if t == types.Float4 {
		if math.Abs(r) > math.MaxFloat32 {
			return types.NullValue, errFloatOv
		}
		r = float64(float32(r))
	}
	return types.NewFloat(t, r), nil
}

func decOp(op func(d, x, y *apd.Decimal) (apd.Condition, error)) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		d := new(apd.Decimal)
		if _, err := op(d, a.N, b.N); err != nil {
			return types.NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "numeric value out of range")
		}
		return types.NewNumeric(d), nil
	}
}

// decimalScale is the number of digits after the point.
func decimalScale(d *apd.Decimal) int32 {
	if d.Exponent < 0 {
		return -d.Exponent
	}
	return 0
}

// divDecimal divides with PostgreSQL's result scale (select_div_scale):
// at least 16 significant digits, estimated from the base-10000 weights
// and first digits of the operands, and no fewer decimals than either.
func divDecimal(a, b types.Value) (types.Value, error) {
	if b.N.IsZero() {
		return types.NullValue, errDivZero
	}
	w1, f1 := baseWeight(a.N)
	w2, f2 := baseWeight(b.N)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	scale := 16 - qweight*4
	scale = max(scale, decimalScale(a.N), decimalScale(b.N), 0)
	scale = min(scale, 1000)
	q := new(apd.Decimal)
	ctx := *types.DecimalContext
	ctx.Rounding = apd.RoundHalfUp
	if _, err := ctx.Quo(q, a.N, b.N); err != nil {
		return types.NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "numeric value out of range")
	}
	r := new(apd.Decimal)
	if _, err := ctx.Quantize(r, q, -scale); err != nil {
		return types.NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "numeric value out of range")
	}
	return types.NewNumeric(r), nil
}

// baseWeight returns a decimal's weight and leading digit in base 10000,
// PostgreSQL's numeric representation.
func baseWeight(d *apd.Decimal) (weight int32, first int64) {
	if d.IsZero() {
		return 0, 0
	}
	digits := d.Coeff.String()
	msd := int32(len(digits)) + d.Exponent - 1 // power of ten of the leading digit
	weight = msd / 4
	if msd < 0 && msd%4 != 0 {
		weight--
	}
	// the leading base-10000 digit is floor(|d| / 10^(4*weight))
	shift := d.Exponent - 4*weight
	for _, c := range digits[:max(0, int32(len(digits))+min(shift, 0))] {
		first = first*10 + int64(c-'0')
	}
	for i := int32(0); i < shift; i++ {
		first *= 10
	}
	return weight, first
}

func intAdd(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		r := a.I + b.I
		if (a.I > 0 && b.I > 0 && r < 0) || (a.I < 0 && b.I < 0 && r >= 0) {
			return types.NullValue, intOverflow(t)
		}
		if t == types.Int8 {
			return types.Value{K: t, I: r}, nil
		}
		return checkInt(t, r)
	}
}

func intSub(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		r := a.I - b.I
		if (a.I >= 0 && b.I < 0 && r < 0) || (a.I < 0 && b.I > 0 && r >= 0) {
			return types.NullValue, intOverflow(t)
		}
		if t == types.Int8 {
			return types.Value{K: t, I: r}, nil
		}
		return checkInt(t, r)
	}
}

func intMul(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		hi, lo := bits.Mul64(uint64(abs64(a.I)), uint64(abs64(b.I)))
		if hi != 0 || lo > math.MaxInt64 {
			if !(hi == 0 && lo == 1<<63 && (a.I < 0) != (b.I < 0)) {
				return types.NullValue, intOverflow(t)
			}
		}
		return checkInt(t, a.I*b.I)
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func intDiv(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		if b.I == 0 {
			return types.NullValue, errDivZero
		}
		if b.I == -1 {
			return negInt(t, a.I)
		}
		return types.NewInt(t, a.I/b.I), nil
	}
}

func intMod(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		if b.I == 0 {
			return types.NullValue, errDivZero
		}
		if b.I == -1 {
			return types.NewInt(t, 0), nil
		}
		return types.NewInt(t, a.I%b.I), nil
	}
}

func floatOp(t types.Type, op byte) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		x, y := a.Float(), b.Float()
		var r float64
		switch op {
		case '+':
			r = x + y
		case '-':
			r = x - y
		case '*':
			r = x * y
		case '/':
			if y == 0 {
				return types.NullValue, errDivZero
			}
			r = x / y
		}
		return checkFloat(t, r, x, y)
	}
}

// AddInterval adds an interval to a timestamp (microseconds since the
// Unix epoch): months on the calendar (clamping the day), then days, then
// the time part, as PostgreSQL's timestamp_pl_interval.
func AddInterval(us int64, iv types.IntervalValue) (int64, error) {
	if iv.Months != 0 {
		days := floorDiv(us, types.MicrosPerDay)
		tod := us - days*types.MicrosPerDay
		y, m, d := civil(days)
		total := y*12 + (m - 1) + int64(iv.Months)
		y, m = floorDiv(total, 12), total-floorDiv(total, 12)*12+1
		if dim := types.DaysInMonth(y, m); d > dim {
			d = dim
		}
		us = fromCivil(y, m, d)*types.MicrosPerDay + tod
	}
	us += int64(iv.Days)*types.MicrosPerDay + iv.Micros
	lo, _ := types.ParseTimestamp("0001-01-01 00:00:00", false)
	hi, _ := types.ParseTimestamp("9999-12-31 23:59:59.999999", false)
	if us < lo || us > hi {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "timestamp out of range")
	}
	return us, nil
}

// dateBin is date_bin(stride, source, origin): the start of the stride
// holding source, strides counted from origin (down, before it), as
// PostgreSQL's timestamp_bin.
func dateBin(stride types.IntervalValue, source, origin int64) (int64, error) {
	if stride.Months != 0 {
		return 0, pgerror.New(pgerror.FeatureNotSupported, "timestamps cannot be binned into intervals containing months or years")
	}
	// (a stride of more than 100,000 years would overflow the arithmetic)
	if d := int64(stride.Days); d > 1<<61/types.MicrosPerDay || stride.Micros > 1<<61 || d < -(1<<61)/types.MicrosPerDay || stride.Micros < -(1<<61) {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "interval out of range")
	}
	width := int64(stride.Days)*types.MicrosPerDay + stride.Micros
	if width <= 0 {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "stride must be greater than zero")
	}
	return AddInterval(origin, types.IntervalValue{Micros: floorDiv(source-origin, width) * width})
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func civil(days int64) (y, m, d int64) {
	t := types.TimeFromMicros(days * types.MicrosPerDay)
	return int64(t.Year()), int64(t.Month()), int64(t.Day())
}

func fromCivil(y, m, d int64) int64 {
	v, _ := types.ParseDate(pad4(y) + "-" + pad2(m) + "-" + pad2(d))
	return v
}

func pad4(v int64) string {
	s := itoa(int(v))
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

func pad2(v int64) string {
	s := itoa(int(v))
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}

func tsPlusIv(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		us, err := AddInterval(a.I, b.Interval())
		return types.NewTimestamp(t, us), err
	}
}

func tsMinusIv(t types.Type) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		us, err := AddInterval(a.I, b.Interval().Neg())
		return types.NewTimestamp(t, us), err
	}
}

func tsMinusTs(a, b types.Value) (types.Value, error) {
	d := a.I - b.I
	days := d / types.MicrosPerDay
	return types.NewInterval(types.IntervalValue{Days: int32(days), Micros: d - days*types.MicrosPerDay}), nil
}

func ivAdd(sign int32) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		x, y := a.Interval(), b.Interval()
		return types.NewInterval(types.IntervalValue{
			Months: x.Months + sign*y.Months, Days: x.Days + sign*y.Days, Micros: x.Micros + int64(sign)*y.Micros,
		}), nil
	}
}

func ivScale(iv types.IntervalValue, f float64) types.Value {
	months := float64(iv.Months) * f
	wm := math.Trunc(months)
	days := float64(iv.Days)*f + (months-wm)*30
	wd := math.Trunc(days)
	micros := float64(iv.Micros)*f + (days-wd)*float64(types.MicrosPerDay)
	return types.NewInterval(types.IntervalValue{Months: int32(wm), Days: int32(wd), Micros: int64(math.Round(micros))})
}

func init() {
	T := types.Type(0)
	_ = T
	i2, i4, i8 := types.Int2, types.Int4, types.Int8
	f4, f8, num := types.Float4, types.Float8, types.Numeric
	ts, tz, date, iv, text := types.Timestamp, types.TimestampTZ, types.Date, types.Interval, types.Text
	op2 := func(name string, a, b, ret types.Type, fn func(a, b types.Value) (types.Value, error)) *Func {
		return &Func{Name: name, Args: []types.Type{a, b}, Ret: ret, Infix: true, Eval2: fn}
	}
	op1 := func(name string, a, ret types.Type, fn func(a types.Value) (types.Value, error)) *Func {
		return &Func{Name: name, Args: []types.Type{a}, Ret: ret, Infix: true, Eval1: fn}
	}
	var fs []*Func
	for _, t := range []types.Type{i4, i8, i2} {
		fs = append(fs,
			op2("+", t, t, t, intAdd(t)), op2("-", t, t, t, intSub(t)),
			op2("*", t, t, t, intMul(t)), op2("/", t, t, t, intDiv(t)), op2("%", t, t, t, intMod(t)),
			op1("-", t, t, func(a types.Value) (types.Value, error) { return negInt(a.K, a.I) }),
			op1("+", t, t, func(a types.Value) (types.Value, error) { return a, nil }),
			// bitwise (pgjdbc's getIndexInfo: indoption & 1)
			op2("&", t, t, t, func(a, b types.Value) (types.Value, error) { return types.NewInt(a.K, a.I&b.I), nil }),
			op2("|", t, t, t, func(a, b types.Value) (types.Value, error) { return types.NewInt(a.K, a.I|b.I), nil }),
			op2("<<", t, i4, t, shiftOp(t, true)),
			op2(">>", t, i4, t, shiftOp(t, false)),
		)
	}
	for _, t := range []types.Type{f8, f4} {
		fs = append(fs,
			op2("+", t, t, t, floatOp(t, '+')), op2("-", t, t, t, floatOp(t, '-')),
			op2("*", t, t, t, floatOp(t, '*')), op2("/", t, t, t, floatOp(t, '/')),
			op1("-", t, t, func(a types.Value) (types.Value, error) { return types.NewFloat(a.K, -a.Float()), nil }),
			op1("+", t, t, func(a types.Value) (types.Value, error) { return a, nil }),
		)
	}
	ctx := *types.DecimalContext
	fs = append(fs,
		op2("+", num, num, num, decOp(ctx.Add)), op2("-", num, num, num, decOp(ctx.Sub)),
		op2("*", num, num, num, decOp(ctx.Mul)), op2("/", num, num, num, divDecimal),
		op2("%", num, num, num, func(a, b types.Value) (types.Value, error) {
			if b.N.IsZero() {
				return types.NullValue, errDivZero
			}
			return decOp(ctx.Rem)(a, b)
		}),
		op1("-", num, num, func(a types.Value) (types.Value, error) {
			d := new(apd.Decimal)
			d.Neg(a.N)
			return types.NewNumeric(d), nil
		}),
		op1("+", num, num, func(a types.Value) (types.Value, error) { return a, nil }),
		op2("^", f8, f8, f8, func(a, b types.Value) (types.Value, error) {
			return checkFloat(f8, math.Pow(a.Float(), b.Float()), a.Float(), b.Float())
		}),
		op2("+", ts, iv, ts, tsPlusIv(ts)), op2("+", tz, iv, tz, tsPlusIv(tz)),
		op2("+", iv, ts, ts, func(a, b types.Value) (types.Value, error) { return tsPlusIv(ts)(b, a) }),
		op2("-", ts, iv, ts, tsMinusIv(ts)), op2("-", tz, iv, tz, tsMinusIv(tz)),
		op2("-", ts, ts, iv, tsMinusTs), op2("-", tz, tz, iv, tsMinusTs),
		op2("+", date, iv, ts, func(a, b types.Value) (types.Value, error) {
			return tsPlusIv(ts)(types.NewTimestamp(ts, a.I*types.MicrosPerDay), b)
		}),
		op2("-", date, iv, ts, func(a, b types.Value) (types.Value, error) {
			return tsMinusIv(ts)(types.NewTimestamp(ts, a.I*types.MicrosPerDay), b)
		}),
		op2("+", date, i4, date, func(a, b types.Value) (types.Value, error) { return types.NewDate(a.I + b.I), nil }),
		op2("-", date, i4, date, func(a, b types.Value) (types.Value, error) { return types.NewDate(a.I - b.I), nil }),
		op2("-", date, date, i4, func(a, b types.Value) (types.Value, error) { return types.NewInt(i4, a.I-b.I), nil }),
		op2("+", iv, iv, iv, ivAdd(1)), op2("-", iv, iv, iv, ivAdd(-1)),
		op1("-", iv, iv, func(a types.Value) (types.Value, error) { return types.NewInterval(a.Interval().Neg()), nil }),
		op2("*", iv, f8, iv, func(a, b types.Value) (types.Value, error) { return ivScale(a.Interval(), b.Float()), nil }),
		op2("*", f8, iv, iv, func(a, b types.Value) (types.Value, error) { return ivScale(b.Interval(), a.Float()), nil }),
		op2("/", iv, f8, iv, func(a, b types.Value) (types.Value, error) {
			if b.Float() == 0 {
				return types.NullValue, errDivZero
			}
			return ivScale(a.Interval(), 1/b.Float()), nil
		}),
		op2("||", text, text, text, func(a, b types.Value) (types.Value, error) {
			if err := checkSize("||", int64(len(a.S))+int64(len(b.S))); err != nil {
				return types.NullValue, err
			}
			return types.NewText(a.S + b.S), nil
		}),
	)
	for op := range compareOps {
		fs = append(fs, &Func{Name: op, Args: []types.Type{Any, Any}, Ret: types.Bool, Infix: true})
	}
	Register(fs...)
}

// DivNumeric divides two numerics with PostgreSQL's result scale (used by
// avg over integers and numerics).
func DivNumeric(a, b types.Value) (types.Value, error) { return divDecimal(a, b) }

// shiftOp is t << n or t >> n as PostgreSQL's: int2 and int4 shift as
// 32-bit ints (int2 then truncated to 16 bits), int8 as 64-bit, the bits
// shifted out lost, a right shift copying the sign, the count taken
// modulo the width (as the C shift PostgreSQL uses does on x86).
func shiftOp(t types.Type, left bool) func(a, b types.Value) (types.Value, error) {
	return func(a, b types.Value) (types.Value, error) {
		if t == types.Int8 {
			n := uint(b.I & 63)
			if left {
				return types.NewInt(t, a.I<<n), nil
			}
			return types.NewInt(t, a.I>>n), nil
		}
		n, x := uint(b.I&31), int32(a.I)
		if left {
			x <<= n
		} else {
			x >>= n
		}
		if t == types.Int2 {
			return types.NewInt(t, int64(int16(x))), nil
		}
		return types.NewInt(t, int64(x)), nil
	}
}
