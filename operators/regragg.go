package operators

import (
	"encoding/binary"
	"math"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// regrAcc is the statistics of two variables, corr(y, x), covar_pop,
// covar_samp and the regr_* family, computed as PostgreSQL computes
// them: its argument is a record of y and x as double precision (the
// planner casts them), a row with either NULL is left out, and the
// accumulator keeps the count, the sums of x and y and the sums of
// squared and crossed deviations from the means, updated as Youngs and
// Cramer do (PostgreSQL's float8_regr_accum). Over signed rows it is fed
// from the group's values (a counted bagAcc): floating point cannot take
// a value back out exactly.
type regrAcc struct {
	name                  string
	n                     int64
	sx, sy, sxx, syy, sxy float64
}

// errRegrOverflow is PostgreSQL's error for finite values whose sums
// overflow double precision.
var errRegrOverflow = pgerror.New(pgerror.NumericValueOutOfRange, "value out of range: overflow")

// isRegrAgg says whether name is one of regrAcc's aggregates.
func isRegrAgg(name string) bool {
	switch name {
	case "corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
		"regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy":
		return true
	}
	return false
}

// IsTwoArgAggregate says whether the aggregate name takes two values per
// row (y, then x): its argument is a record of both.
func IsTwoArgAggregate(name string) bool { return isRegrAgg(name) }

func (a *regrAcc) Add(v types.Value) error {
	f := v.Fields()
	if len(f) != 2 || f[0].K == types.Null || f[1].K == types.Null {
		return nil
	}
	y, x := types.AsFloat(f[0]), types.AsFloat(f[1])
	sx, sy, sxy := a.sx, a.sy, a.sxy // before: an infinity from finite values is an overflow
	a.n++
	a.sx += x
	a.sy += y
	if a.n > 1 {
		n := float64(a.n)
		tx, ty := x*n-a.sx, y*n-a.sy
		scale := 1 / (n * (n - 1))
		a.sxx += tx * tx * scale
		a.syy += ty * ty * scale
		a.sxy += tx * ty * scale
		inf := math.IsInf
		if inf(a.sx, 0) || inf(a.sxx, 0) {
			if !inf(sx, 0) && !inf(x, 0) {
				return errRegrOverflow
			}
			a.sxx = math.NaN()
		}
		if inf(a.sy, 0) || inf(a.syy, 0) {
			if !inf(sy, 0) && !inf(y, 0) {
				return errRegrOverflow
			}
			a.syy = math.NaN()
		}
		if inf(a.sxy, 0) {
			if !inf(sxy, 0) && !inf(x, 0) && !inf(y, 0) {
				return errRegrOverflow
			}
			a.sxy = math.NaN()
		}
		return nil
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		a.sxx, a.sxy = math.NaN(), math.NaN()
	}
	if math.IsInf(y, 0) || math.IsNaN(y) {
		a.syy, a.sxy = math.NaN(), math.NaN()
	}
	return nil
}

func (a *regrAcc) Result() types.Value {
	if a.name == "regr_count" {
		return types.NewInt8(a.n)
	}
	n := float64(a.n)
	var r float64
	switch a.name {
	case "regr_sxx":
		r = a.sxx
	case "regr_syy":
		r = a.syy
	case "regr_sxy":
		r = a.sxy
	case "regr_avgx":
		r = a.sx / n
	case "regr_avgy":
		r = a.sy / n
	case "covar_pop":
		r = a.sxy / n
	case "covar_samp":
		if a.n < 2 {
			return types.NullValue
		}
		r = a.sxy / (n - 1)
	case "corr": // NULL for a horizontal or vertical line
		if a.sxx == 0 || a.syy == 0 {
			return types.NullValue
		}
		r = a.sxy / math.Sqrt(a.sxx*a.syy)
	case "regr_r2":
		if a.sxx == 0 {
			return types.NullValue
		}
		if a.syy == 0 {
			r = 1
		} else {
			r = a.sxy * a.sxy / (a.sxx * a.syy)
		}
	case "regr_slope":
		if a.sxx == 0 {
			return types.NullValue
		}
		r = a.sxy / a.sxx
	case "regr_intercept":
		if a.sxx == 0 {
			return types.NullValue
		}
		r = (a.sy - a.sx*a.sxy/a.sxx) / n
	}
	if a.n == 0 {
		return types.NullValue
	}
	return types.NewFloat8(r)
}

func (a *regrAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	for _, f := range [...]float64{a.sx, a.sy, a.sxx, a.syy, a.sxy} {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(f))
	}
	return buf
}

func (a *regrAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.n, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	if a.n < 0 || len(buf) < 5*8 {
		return buf, ErrBadState
	}
	for _, f := range [...]*float64{&a.sx, &a.sy, &a.sxx, &a.syy, &a.sxy} {
		*f = math.Float64frombits(binary.LittleEndian.Uint64(buf))
		buf = buf[8:]
	}
	return buf, nil
}

// Merge folds in another regrAcc, as PostgreSQL's float8_regr_combine.
func (a *regrAcc) Merge(o Accumulator) error {
	b := o.(*regrAcc)
	switch {
	case b.n == 0:
		return nil
	case a.n == 0:
		a.n, a.sx, a.sy, a.sxx, a.syy, a.sxy = b.n, b.sx, b.sy, b.sxx, b.syy, b.sxy
		return nil
	}
	n1, n2 := float64(a.n), float64(b.n)
	n := n1 + n2
	tx, ty := a.sx/n1-b.sx/n2, a.sy/n1-b.sy/n2
	a.sxx = a.sxx + b.sxx + n1*n2*tx*tx/n
	a.syy = a.syy + b.syy + n1*n2*ty*ty/n
	a.sxy = a.sxy + b.sxy + n1*n2*tx*ty/n
	a.sx += b.sx
	a.sy += b.sy
	a.n += b.n
	return nil
}
