package operators

import (
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// slider is an aggregate over a frame whose two ends only move forward
// (n PRECEDING rows, a RANGE span, the current row's peers), for a
// stream's window functions in event time: folding each row's frame
// afresh costs the frame's width per row, which a RANGE span of an hour
// makes thousands. It keeps the frame's rows [lo, hi) in two parts (the
// two-stack queue): for [lo, mid), the aggregate of each row and those
// after it up to mid (front[k] folds rows lo+k to mid-1), and [mid, hi)
// folded into back. A row comes in with one Add, and when the front runs
// out the rows left become the front with one Add and one Merge each; a
// frame's value is front's first merged with back. So each row costs a
// constant number of folds and merges however wide the frame.
//
// The result must not depend on the order in which rows fold, since the
// bounded query folds them in order: only aggregates whose Merge is exact
// slide (slides decides), and any error falls back to folding afresh,
// which reports it as the bounded query would.
type slider struct {
	agg         *AggFunc
	star        bool
	j           int // the function's index: its argument in winRow.args
	lo, mid, hi int64
	front       []Accumulator
	back        Accumulator
	broken      bool // a fold failed: start again at the next frame
}

// minSlideRows is the narrowest frame a slider computes: below it,
// folding the frame afresh costs less than the slider's merges
// (BenchmarkOverTimeRange: at 10 rows the slider takes 27% longer, at
// 100 rows 44% less time, at 1,000 rows 85% less). A variable for tests.
var minSlideRows int64 = 32

// slideAggregates turns sliders off for benchmarks that compare.
var slideAggregates = true

// slides reports whether aggregate f over frames that slide forward can
// use a slider: its result is the same however its rows are grouped, as
// long as they fold in order (counts, extremes, booleans, sums and
// averages of integers; floating sums round differently, and so do
// numeric sums of values a thousand digits apart).
func slides(f *plan.WindowFunc) bool {
	if !slideAggregates {
		return false
	}
	switch f.Name {
	case "count", "min", "max", "bool_and", "bool_or", "every":
		return true
	case "sum", "avg":
		t := f.Args[0].Type
		return t.IsInteger()
	}
	return false
}

// value is the aggregate over rows [s, e), where s and e are no smaller
// than the last call's (at reads row x); ok is false when a fold failed
// (the caller folds the frame afresh).
func (sl *slider) value(s, e int64, at func(int64) *winRow) (v types.Value, ok bool, err error) {
	if sl.broken || s < sl.lo || e < sl.hi || s >= sl.hi {
		// the first frame, or one past the last: start with it
		sl.lo, sl.mid, sl.hi, sl.front, sl.back, sl.broken = s, s, s, sl.front[:0], sl.agg.New(), false
	}
	arg := func(x int64) (types.Value, error) {
		r := at(x)
		if r == nil {
			return types.NullValue, errMissingRow
		}
		if sl.star {
			return types.NullValue, nil
		}
		return r.args[sl.j][0], nil
	}
	for ; sl.hi < e; sl.hi++ {
		v, err := arg(sl.hi)
		if err != nil {
			return v, false, err
		}
		if sl.back.Add(v) != nil {
			sl.broken = true
			return types.NullValue, false, nil
		}
	}
	for sl.lo < s {
		if sl.lo == sl.mid {
			// the front ran out: the frame's rows from s on become the
			// front (the rows before s go unread: a partition need not
			// keep them)
			sl.lo = s
			if !sl.flip(arg) {
				sl.broken = true
				return types.NullValue, false, nil
			}
			break
		}
		sl.front = sl.front[1:]
		sl.lo++
	}
	acc := sl.agg.New()
	if len(sl.front) > 0 && acc.Merge(sl.front[0]) != nil || acc.Merge(sl.back) != nil {
		sl.broken = true
		return types.NullValue, false, nil
	}
	return acc.Result(), true, nil
}

// flip makes the rows [lo, hi) the front: each with the aggregate of it
// and the rows after it.
func (sl *slider) flip(arg func(int64) (types.Value, error)) bool {
	n := int(sl.hi - sl.lo)
	front := sl.front[:0]
	if cap(front) < n {
		front = make([]Accumulator, n)
	}
	front = front[:n]
	var next Accumulator
	for k := n - 1; k >= 0; k-- {
		// row k first, then the rows after it: among values that compare
		// equal but differ (numeric 1.0 and 1.00), min and max keep the
		// first, as folding in order does
		acc := sl.agg.New()
		v, err := arg(sl.lo + int64(k))
		if err != nil || acc.Add(v) != nil {
			return false
		}
		if next != nil && acc.Merge(next) != nil {
			return false
		}
		front[k], next = acc, acc
	}
	sl.front, sl.mid, sl.back = front, sl.hi, sl.agg.New()
	return true
}
