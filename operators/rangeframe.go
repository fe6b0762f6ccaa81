package operators

import (
	"math"
	"sort"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// rangeFrame finds the rows of a RANGE frame with an offset
// (`RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW`): those
// whose one ORDER BY value lies within the offset of the current row's,
// as PostgreSQL's in_range functions decide. Its bounds are the current
// value moved by the offset toward the frame's side; a NULL value's
// frame is its peers (the other NULLs), and a non-NULL value's frame
// holds no NULL that an offset bounds.
type rangeFrame struct {
	desc bool
	// start and end compute a bound's limit from the current value:
	// nil for a bound without an offset
	start, end *rangeLimit
	arg        types.Row
}

// rangeLimit is a bound's limit: the current value plus or minus the
// offset; over is where a limit past its type's range (an overflow)
// lies, beyond every value: -1 below them all (a subtraction), 1 above.
type rangeLimit struct {
	ev   expr.Eval
	over int
}

// newRangeFrame compiles the offsets of spec's frame, or returns nil when
// it is not a RANGE frame with one.
func newRangeFrame(spec *plan.OverSpec, env *expr.Env) (*rangeFrame, error) {
	fr := &spec.Frame
	if fr.Mode != plan.FrameRange || !fr.Start.RangeOffset() && !fr.End.RangeOffset() {
		return nil, nil
	}
	if len(spec.OrderBy) != 1 {
		return nil, pgerror.New(pgerror.WindowingError, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
	}
	r := &rangeFrame{desc: spec.Order[0].Desc, arg: make(types.Row, 1)}
	limit := func(b plan.FrameBound) (*rangeLimit, error) {
		if !b.RangeOffset() {
			return nil, nil
		}
		// PRECEDING reaches toward smaller values in ascending order
		op, over := "+", 1
		if (b.Kind == plan.BoundPreceding) != r.desc {
			op, over = "-", -1
		}
		x, err := expr.Call(op, expr.Col(0, spec.OrderBy[0].Type, "v"), b.Value)
		if err != nil {
			return nil, err
		}
		ev, err := expr.CompileEnv(x, env)
		return &rangeLimit{ev: ev, over: over}, err
	}
	var err error
	if r.start, err = limit(fr.Start); err != nil {
		return nil, err
	}
	if r.end, err = limit(fr.End); err != nil {
		return nil, err
	}
	return r, nil
}

// limit is bound b's limit for the current value v; inf is 0, or where
// a limit past its type's range lies (rangeLimit.over). As PostgreSQL's
// in_range functions: an integer limit past the type's range lies
// beyond every value, a float one is an infinity (still before NaN, which
// sorts after it), and so is an infinite offset from an infinity (+inf
// infinitely precedes +inf, -inf infinitely follows -inf); a time or
// interval past its range is an error (timestamp out of range).
func (r *rangeFrame) limit(b *rangeLimit, v types.Value) (lim types.Value, inf int, err error) {
	r.arg[0] = v
	lim, err = b.ev(r.arg)
	switch {
	case (v.K == types.Float4 || v.K == types.Float8) && (err != nil || math.IsNaN(lim.Float()) && !math.IsNaN(v.Float())):
		return types.NewFloat8(math.Inf(b.over)), 0, nil
	case err != nil && v.K.IsInteger():
		return types.NullValue, b.over, nil
	case err != nil:
		return types.NullValue, 0, err
	}
	return lim, 0, nil
}

// cmpTo compares value x with a limit, in the frame's order: negative
// when x comes before it.
func (r *rangeFrame) cmpTo(x, lim types.Value, inf int) int {
	c := -inf
	if inf == 0 {
		c = types.Compare(x, lim)
	}
	if r.desc {
		return -c
	}
	return c
}

// bounds sets the frames of a sorted partition's rows whose bounds have
// offsets (their ORDER BY values in ord(k)), over rows [lo, hi) of
// non-NULL values; frames holds what frameOf found for the other bounds.
func (r *rangeFrame) bounds(n int, ord func(int) types.Value, p *peers, frames [][2]int) error {
	lo, hi := 0, n
	for lo < n && ord(lo).IsNull() {
		lo++
	}
	for hi > lo && ord(hi-1).IsNull() {
		hi--
	}
	for i := 0; i < n; i++ {
		v := ord(i)
		for side, b := range [2]*rangeLimit{r.start, r.end} {
			end := side == 1
			switch {
			case b == nil:
			case v.IsNull() && end:
				frames[i][1] = p.groupEnd[p.group[i]]
			case v.IsNull():
				frames[i][0] = p.groupStart[p.group[i]]
			default:
				k, err := r.search(lo, hi, ord, b, v, end)
				if err != nil {
					return err
				}
				frames[i][side] = k
			}
		}
		frames[i][1] = max(frames[i][1], frames[i][0])
	}
	return nil
}

// search is the first row of [lo, hi) not before the bound's limit for
// the value v (a frame's start), or past it (its end).
func (r *rangeFrame) search(lo, hi int, ord func(int) types.Value, b *rangeLimit, v types.Value, end bool) (int, error) {
	lim, inf, err := r.limit(b, v)
	if err != nil {
		return 0, err
	}
	return lo + sort.Search(hi-lo, func(k int) bool {
		c := r.cmpTo(ord(lo+k), lim, inf)
		return c > 0 || c == 0 && !end
	}), nil
}
