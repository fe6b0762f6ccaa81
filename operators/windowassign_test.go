package operators

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestWindowAssign: each row comes out once per window that holds its
// time, by the definition (start a multiple of the slide, start ≤ t <
// start + size), checked by trying every candidate start around t, for
// random sizes and slides (also not dividing the size) and times on both
// sides of the epoch; a NULL time is in no window.
func TestWindowAssign(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for c := 0; c < 2000; c++ {
		spec := plan.WindowSpec{Kind: "tumble", Size: 1 + rng.Int64N(100)}
		if rng.IntN(2) == 0 {
			spec = plan.WindowSpec{Kind: "hop", Slide: 1 + rng.Int64N(40)}
			spec.Size = spec.Slide + rng.Int64N(120)
		}
		op := &WindowAssign{Spec: spec, TimeCol: 1, TimeType: types.Timestamp}
		var in []types.Row
		for i := 0; i < 20; i++ {
			ts := types.NewTimestamp(types.Timestamp, rng.Int64N(2000)-1000)
			if rng.IntN(10) == 0 {
				ts = types.NullValue
			}
			in = append(in, types.Row{types.NewInt(types.Int8, int64(i)), ts})
		}
		var got []string
		err := op.Process(&Batch{Rows: in}, func(b *Batch) error {
			for _, r := range b.Rows {
				got = append(got, fmt.Sprintf("%d %d %d", r[0].I, r[2].I, r[3].I))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		slide := spec.Slide
		if spec.Kind == "tumble" {
			slide = spec.Size
		}
		for _, r := range in {
			if r[1].IsNull() {
				continue
			}
			ts := r[1].I
			for k := (ts-spec.Size)/slide - 2; k <= ts/slide+2; k++ {
				if s := k * slide; s <= ts && ts < s+spec.Size {
					want = append(want, fmt.Sprintf("%d %d %d", r[0].I, s, s+spec.Size))
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: got %v\nwant %v", spec, got, want)
		}
	}
}
