package operators

import (
	"encoding/binary"
	"math"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// varAcc is var_pop, var_samp (variance), stddev_pop and stddev_samp
// (stddev), computed as PostgreSQL computes them.
//
// Over integers and numeric it keeps the count and the exact sums of the
// values and of their squares, and its result is numeric:
// (N·Σx² − (Σx)²) / (N·(N−1)) for a sample (N·N for a population), with
// the division's scale (expr.DivNumeric's, at least 16 significant
// digits), its square root to that scale for stddev, and 0 when the
// numerator is not positive. Taking a value back out (retract, over
// signed rows) subtracts it from the sums, so the result stays exact.
//
// Over float4 and float8 it keeps the count, the sum and the sum of
// squared deviations from the mean, updated as Youngs and Cramer do
// (PostgreSQL's float8_accum), and its result is double precision. Over
// signed rows it is fed from the group's values (a counted bagAcc):
// undoing an update in floating point is not exact, and a NaN or an
// infinity would never leave.
//
// A sample's statistics are NULL over fewer than two values, a
// population's over none.
type varAcc struct {
	sample, root, float bool

	n int64
	// integer and numeric input
	sum, sq sumIntAcc // numeric: true
	scale   int32     // the largest scale of the values (signedAcc sets it over signed rows)
	// float input
	sx, sxx float64
}

func newVarAcc(name string, float bool) *varAcc {
	a := &varAcc{float: float, sum: sumIntAcc{numeric: true}, sq: sumIntAcc{numeric: true}}
	switch name {
	case "var_samp", "variance":
		a.sample = true
	case "stddev_samp", "stddev":
		a.sample, a.root = true, true
	case "stddev_pop":
		a.root = true
	}
	return a
}

// isVarAgg says whether name is one of varAcc's aggregates.
func isVarAgg(name string) bool {
	switch name {
	case "var_pop", "var_samp", "variance", "stddev_pop", "stddev_samp", "stddev":
		return true
	}
	return false
}

// square is v·v for an integer or numeric v, exactly.
func square(v types.Value) types.Value {
	if v.K != types.Numeric && v.I > -3_000_000_000 && v.I < 3_000_000_000 {
		return types.NewInt8(v.I * v.I)
	}
	d := v.N
	if v.K != types.Numeric {
		d = apd.New(v.I, 0)
	}
	r := new(apd.Decimal)
	_, _ = types.DecimalContext.Mul(r, d, d)
	return types.NewNumeric(r)
}

func (a *varAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	if a.float {
		x := types.AsFloat(v)
		a.n++
		a.sx += x
		if a.n > 1 {
			t := x*float64(a.n) - a.sx
			a.sxx += t * t / float64(a.n*(a.n-1))
		} else if math.IsInf(x, 0) || math.IsNaN(x) {
			a.sxx = math.NaN()
		}
		return nil
	}
	if v.K == types.Numeric && -v.N.Exponent > a.scale {
		a.scale = -v.N.Exponent
	}
	a.n++
	if err := a.sum.Add(v); err != nil {
		return err
	}
	return a.sq.Add(square(v))
}

// retract takes a value Add folded in back out.
func (a *varAcc) retract(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	if a.float { // over signed rows a float variance is a counted bagAcc
		return pgerror.New(pgerror.Internal, "operators: a float variance cannot take a value back out")
	}
	a.n--
	if err := a.sum.Add(negate(v)); err != nil {
		return err
	}
	return a.sq.Add(negate(square(v)))
}

func (a *varAcc) Result() types.Value {
	if a.n == 0 || a.sample && a.n == 1 {
		return types.NullValue
	}
	den := a.n
	if a.sample {
		den--
	}
	if a.float {
		r := a.sxx / float64(den)
		if a.root {
			r = math.Sqrt(r)
		}
		return types.NewFloat8(r)
	}
	ctx := *types.DecimalContext
	sum, sq := a.sum.decimal(), a.sq.decimal()
	num := new(apd.Decimal)
	_, _ = ctx.Mul(num, apd.New(a.n, 0), sq)
	s2 := new(apd.Decimal)
	_, _ = ctx.Mul(s2, sum, sum)
	_, _ = ctx.Sub(num, num, s2)
	if num.Sign() <= 0 {
		return types.NewNumeric(apd.New(0, 0))
	}
	// the exact numerator has the scale of a square of the values: no rounding
	_, _ = ctx.Quantize(num, num, -2*a.scale)
	r, err := expr.DivNumeric(types.NewNumeric(num), types.NewNumeric(apd.New(a.n*den, 0)))
	if err != nil || !a.root {
		return r
	}
	return types.NewNumeric(sqrtScale(r.N, -r.N.Exponent))
}

// sqrtScale is the square root of a positive d rounded half up to scale
// decimal places.
func sqrtScale(d *apd.Decimal, scale int32) *apd.Decimal {
	digits := int32(d.NumDigits()) + d.Exponent // digits before the point
	ctx := *types.DecimalContext
	ctx.Precision = uint32(max(digits, 1) + scale + 10)
	r := new(apd.Decimal)
	_, _ = ctx.Sqrt(r, d)
	ctx.Rounding = apd.RoundHalfUp
	_, _ = ctx.Quantize(r, r, -scale)
	return r
}

func (a *varAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	if a.float {
		buf = types.AppendValue(buf, types.NewFloat8(a.sx))
		return types.AppendValue(buf, types.NewFloat8(a.sxx))
	}
	buf = binary.AppendVarint(buf, int64(a.scale))
	return a.sq.AppendState(a.sum.AppendState(buf))
}

func (a *varAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.n, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	if a.float {
		var sx, sxx types.Value
		if sx, buf, err = types.DecodeValue(buf); err != nil {
			return buf, err
		}
		if sxx, buf, err = types.DecodeValue(buf); err != nil {
			return buf, err
		}
		a.sx, a.sxx = sx.Float(), sxx.Float()
		return buf, nil
	}
	var scale int64
	if scale, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	if scale < 0 || scale > 1000 {
		return buf, ErrBadState
	}
	a.scale = int32(scale)
	if buf, err = a.sum.LoadState(buf); err != nil {
		return buf, err
	}
	return a.sq.LoadState(buf)
}

// Merge folds in another varAcc (for floats, PostgreSQL's float8_combine).
func (a *varAcc) Merge(o Accumulator) error {
	b := o.(*varAcc)
	if b.n == 0 {
		return nil
	}
	if a.float {
		if a.n == 0 {
			a.n, a.sx, a.sxx = b.n, b.sx, b.sxx
			return nil
		}
		n1, n2 := float64(a.n), float64(b.n)
		t := a.sx/n1 - b.sx/n2
		a.sxx += b.sxx + n1*n2*t*t/(n1+n2)
		a.sx += b.sx
		a.n += b.n
		return nil
	}
	a.n += b.n
	a.scale = max(a.scale, b.scale)
	if err := a.sum.Merge(&b.sum); err != nil {
		return err
	}
	return a.sq.Merge(&b.sq)
}
