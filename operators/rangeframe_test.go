package operators

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestRangeFrame: random sorted partitions of bigint values (NULLs, ties,
// values near the type's ends, where a bound overflows), random RANGE
// frames with offsets, ascending and descending, NULLS FIRST and LAST:
// each row's frame is what a linear scan finds with PostgreSQL's
// in_range rule in exact arithmetic, rather than the binary search over
// limits computed in the value's type that the operator does.
func TestRangeFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(221, 5))
	kinds := []plan.BoundKind{plan.BoundUnboundedPreceding, plan.BoundPreceding, plan.BoundCurrentRow, plan.BoundFollowing, plan.BoundUnboundedFollowing}
	for c := 0; c < 4000; c++ {
		key := plan.SortKey{Desc: rng.IntN(2) == 0}
		key.NullsFirst = key.Desc
		if rng.IntN(3) == 0 {
			key.NullsFirst = !key.NullsFirst
		}
		bound := func(k plan.BoundKind) plan.FrameBound {
			b := plan.FrameBound{Kind: k}
			if k == plan.BoundPreceding || k == plan.BoundFollowing {
				off := rng.Int64N(6)
				if rng.IntN(8) == 0 {
					off = math.MaxInt64 - rng.Int64N(3)
				}
				b.Value = expr.Const(types.NewInt8(off))
			}
			return b
		}
		// PostgreSQL's rules on which bounds may pair
		s, e := kinds[rng.IntN(4)], kinds[1+rng.IntN(4)]
		if s == plan.BoundCurrentRow && e == plan.BoundPreceding || s == plan.BoundFollowing && (e == plan.BoundPreceding || e == plan.BoundCurrentRow) {
			continue
		}
		fr := plan.Frame{Mode: plan.FrameRange, Start: bound(s), End: bound(e)}
		if !fr.Start.RangeOffset() && !fr.End.RangeOffset() {
			continue
		}
		spec := &plan.OverSpec{OrderBy: []*expr.Expr{expr.Col(0, types.Int8, "x")}, Order: []plan.SortKey{key}, Frame: fr,
			Funcs: []plan.WindowFunc{{Name: "count", Star: true}}}
		w, err := NewWindowFuncs(spec, &expr.Env{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var rows []winRow
		for n := rng.IntN(12); n > 0; n-- {
			v := types.NewInt8(rng.Int64N(20) - 10)
			switch rng.IntN(10) {
			case 0:
				v = types.NullValue
			case 1:
				v = types.NewInt8(math.MaxInt64 - rng.Int64N(3))
			case 2:
				v = types.NewInt8(math.MinInt64 + rng.Int64N(3))
			}
			rows = append(rows, winRow{ord: types.Row{v}})
		}
		slices.SortStableFunc(rows, func(a, b winRow) int { return CompareRows(spec.Order, a.ord, b.ord) })
		p := w.peersOf(rows)
		frames := make([][2]int, len(rows))
		for i := range rows {
			s, e := frameOf(&fr, p, i, len(rows))
			frames[i] = [2]int{s, e}
		}
		if err := w.rng.bounds(len(rows), func(k int) types.Value { return rows[k].ord[0] }, p, frames); err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			want := scanFrame(rows, i, p, key, fr)
			if frames[i] != want {
				vals := make([]string, len(rows))
				for k, r := range rows {
					vals[k] = r.ord[0].Text()
				}
				t.Fatalf("case %d: order %+v, frame %s to %s, values %v: row %d's frame is %v, want %v", c, key, fr.Start, fr.End, vals, i, frames[i], want)
			}
		}
	}
}

// scanFrame is row i's frame [start, end) by a linear scan: the start is
// the first row not before the start bound, the end the first row past
// the end bound. NULLs sort at one end; a NULL current row's offset
// bounds are its peers.
func scanFrame(rows []winRow, i int, p *peers, key plan.SortKey, fr plan.Frame) [2]int {
	n := len(rows)
	cur := rows[i].ord[0]
	g := p.group[i]
	// limit is the current value moved by b's offset toward its side
	limit := func(b plan.FrameBound) *big.Int {
		off := big.NewInt(b.Value.Val.I)
		if (b.Kind == plan.BoundPreceding) != key.Desc {
			off.Neg(off)
		}
		return off.Add(off, big.NewInt(cur.I))
	}
	// cmp compares row k's value with lim in the frame's order; a NULL
	// lies before every value with NULLS FIRST, after with NULLS LAST
	cmp := func(k int, lim *big.Int) int {
		v := rows[k].ord[0]
		if v.IsNull() {
			if key.NullsFirst {
				return -1
			}
			return 1
		}
		c := big.NewInt(v.I).Cmp(lim)
		if key.Desc {
			c = -c
		}
		return c
	}
	first := func(pred func(k int) bool) int {
		for k := 0; k < n; k++ {
			if pred(k) {
				return k
			}
		}
		return n
	}
	var s, e int
	switch b := fr.Start; {
	case b.Kind == plan.BoundUnboundedPreceding:
		s = 0
	case b.Kind == plan.BoundCurrentRow || cur.IsNull():
		s = p.groupStart[g]
	default:
		lim := limit(b)
		s = first(func(k int) bool { return cmp(k, lim) >= 0 })
	}
	switch b := fr.End; {
	case b.Kind == plan.BoundUnboundedFollowing:
		e = n
	case b.Kind == plan.BoundCurrentRow || cur.IsNull():
		e = p.groupEnd[g]
	default:
		lim := limit(b)
		e = first(func(k int) bool { return cmp(k, lim) > 0 })
	}
	return [2]int{s, max(s, e)}
}
