package operators

import (
	"math"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// The ordered-set aggregates, f(fraction) WITHIN GROUP (ORDER BY x):
// percentile_cont, percentile_disc and mode. Their accumulator is the
// inner one of an orderedAcc (bounded) or a listAcc (continuous), which
// keep the group's rows and feed it the values in the ORDER BY's order;
// it keeps them and picks its result by position, as PostgreSQL's
// percentile_cont_final, percentile_disc_final and mode_final do. NULLs
// are left out.

// IsOrderedSet says whether name is an ordered-set aggregate, which is
// called with WITHIN GROUP (ORDER BY …) and only so.
func IsOrderedSet(name string) bool {
	switch name {
	case "percentile_cont", "percentile_disc", "mode":
		return true
	}
	return false
}

// resolveOrderedSet types an ordered-set aggregate: percentile_cont
// interpolates, over numbers, and is double precision; percentile_disc
// and mode give one of the values, of their type.
func resolveOrderedSet(f *AggFunc, arg types.Type) (*AggFunc, error) {
	switch {
	case f.Name == "percentile_cont" && (arg.IsInteger() || arg.IsFloat() || arg == types.Numeric || arg == types.Unknown):
		f.Ret = types.Float8
	case f.Name == "percentile_cont":
		return nil, pgerror.New(pgerror.UndefinedFunction, "function percentile_cont(double precision ORDER BY %s) does not exist", arg).
			WithHint("percentile_cont interpolates numbers; use percentile_disc for other types.")
	case arg == types.JSONB || arg.IsArray():
		return nil, pgerror.New(pgerror.UndefinedFunction, "could not identify an ordering operator for type %s", arg)
	default:
		f.Ret = arg
		if arg == types.Unknown || arg == types.Null {
			f.Ret = types.Text
		}
	}
	f.Grows = true
	name := f.Name
	f.New = func() Accumulator {
		return &orderedSetAcc{name: name, fraction: f.Fraction, fractions: f.Fractions, array: f.Array, ret: f.Ret}
	}
	return f, nil
}

// orderedSetAcc keeps the non-NULL values it is given, in order.
type orderedSetAcc struct {
	name     string
	fraction *float64 // nil: a NULL fraction, whose result is NULL
	// array: the fractions are an array (AggFunc.Fractions), and so is
	// the result, of type ret
	fractions []*float64
	array     bool
	ret       types.Type
	vals      []types.Value
}

func (a *orderedSetAcc) Add(v types.Value) error {
	if v.K != types.Null {
		a.vals = append(a.vals, v)
	}
	return nil
}

func (a *orderedSetAcc) Result() types.Value {
	n := len(a.vals)
	if a.array {
		if n == 0 || a.fractions == nil {
			return types.NullValue
		}
		out := make([]types.Value, len(a.fractions))
		for i, f := range a.fractions {
			out[i] = types.NullValue
			if f != nil {
				out[i] = a.percentile(*f)
			}
		}
		return types.NewArray(a.ret, out)
	}
	if n == 0 || a.name != "mode" && a.fraction == nil {
		return types.NullValue
	}
	if a.name != "mode" {
		return a.percentile(*a.fraction)
	}
	// mode: the value of the longest run of equal values, the first such
	best, bestN, run := 0, 0, 0
	for i := range a.vals {
		if i > 0 && types.Compare(a.vals[i-1], a.vals[i]) == 0 {
			run++
		} else {
			run = 1
		}
		if run > bestN {
			best, bestN = i-run+1, run
		}
	}
	return a.vals[best]
}

// percentile is the value at fraction f of the (non-empty) values.
func (a *orderedSetAcc) percentile(f float64) types.Value {
	n := len(a.vals)
	switch a.name {
	case "percentile_disc":
		i := int(math.Ceil(f*float64(n))) - 1
		return a.vals[max(0, min(i, n-1))]
	default: // percentile_cont
		pos := f * float64(n-1)
		lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
		x, y := types.AsFloat(a.vals[lo]), types.AsFloat(a.vals[hi])
		if lo == hi {
			return types.NewFloat8(x)
		}
		return types.NewFloat8(x + (y-x)*(pos-float64(lo)))
	}
}

func (a *orderedSetAcc) AppendState(buf []byte) []byte { return buf }
func (a *orderedSetAcc) LoadState(buf []byte) ([]byte, error) {
	return buf, errOrderedState
}
func (a *orderedSetAcc) Merge(Accumulator) error { return errOrderedState }
