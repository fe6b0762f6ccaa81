package operators

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fvsql/fvsql/types"
)

// TestSliderRandom: a slider over random frames that move forward
// (jumps, empty frames, shrinking to empty and growing, calls skipped as
// when narrow frames fold afresh instead) gives what folding the frame
// afresh gives, for each aggregate that slides, NULLs among the values.
func TestSliderRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type aggc struct {
		name string
		arg  types.Type
		gen  func() types.Value
	}
	aggs := []aggc{
		{"count", types.Int8, func() types.Value { return types.NewInt8(rng.Int64N(5)) }},
		{"sum", types.Int4, func() types.Value { return types.NewInt8(rng.Int64N(100) - 50) }},
		{"sum", types.Int8, func() types.Value { return types.NewInt8(rng.Int64N(1<<62) * 2) }},
		{"avg", types.Int8, func() types.Value { return types.NewInt8(rng.Int64N(100)) }},
		{"min", types.Int8, func() types.Value { return types.NewInt8(rng.Int64N(100)) }},
		{"max", types.Int8, func() types.Value { return types.NewInt8(rng.Int64N(100)) }},
		{"bool_and", types.Bool, func() types.Value { return types.NewBool(rng.IntN(5) != 0) }},
		{"bool_or", types.Bool, func() types.Value { return types.NewBool(rng.IntN(5) == 0) }},
	}
	for c := 0; c < 3000; c++ {
		a := aggs[c%len(aggs)]
		agg, err := ResolveAgg(a.name, a.arg, false)
		if err != nil {
			t.Fatal(err)
		}
		n := 200
		rows := make([]winRow, n)
		for i := range rows {
			v := a.gen()
			if rng.IntN(4) == 0 {
				v = types.NullValue
			}
			rows[i].args = []types.Row{{v}}
		}
		at := func(x int64) *winRow {
			if x < 0 || x >= int64(n) {
				return nil
			}
			return &rows[x]
		}
		sl := &slider{agg: agg, j: 0}
		var s, e int64
		for step := 0; step < 150; step++ {
			switch rng.IntN(6) {
			case 0: // jump
				s += rng.Int64N(20)
				e = max(e, s) + rng.Int64N(20)
			case 1: // shrink to empty
				s = e
			case 2: // grow only
				e += rng.Int64N(5)
			default:
				s += rng.Int64N(3)
				e += rng.Int64N(3)
				e = max(e, s)
			}
			if e > int64(n) {
				break
			}
			want := agg.New()
			for x := s; x < e; x++ {
				want.Add(rows[x].args[0][0])
			}
			useSlider := rng.IntN(3) != 0
			if !useSlider {
				continue
			}
			got, ok, err := sl.value(s, e, at)
			if err != nil || !ok {
				if a.name == "sum" && a.arg == types.Int8 {
					continue
				}
				t.Fatalf("%s: [%d,%d): ok %v err %v", a.name, s, e, ok, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want.Result()) {
				t.Fatalf("case %d %s(%s) [%d,%d): got %v want %v", c, a.name, a.arg, s, e, got, want.Result())
			}
		}
	}
}
