package operators

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestFirstN: random rows (partition key, time, order value with ties)
// in random batches, some behind the watermark, with watermarks between
// them, and the operator rebuilt on its KV now and then (a restart):
// every row not late comes out once, numbered as ROW_NUMBER(), RANK()
// or DENSE_RANK() OVER (PARTITION BY p ORDER BY t, v) number the
// partition's rows that are not late, if that number is at most N. A
// partition's rows pass over several watermarks, so its numbering goes
// on from the rows it put out before.
func TestFirstN(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	keys := []plan.SortKey{{Col: 1}, {Col: 2}}
	for c := 0; c < 400; c++ {
		n := 1 + rng.Int64N(4)
		rank := Ranking(rng.IntN(3))
		kv := NewMemKV()
		late := 0
		onErr := func(_ *Batch, _ int, err error) error {
			if !errors.Is(err, ErrLate) {
				return err
			}
			late++
			return nil
		}
		build := func() *FirstN {
			op := &FirstN{timedRows: timedRows{PartitionBy: []expr.Eval{func(r types.Row) (types.Value, error) { return r[0], nil }},
				TimeCol: 1, TimeType: types.Timestamp, Keys: keys, Width: 4, OnError: onErr}, N: n, Ranking: rank}
			op.Bind(kv)
			return op
		}
		op := build()
		var got []string
		emit := func(b *Batch) error {
			for _, r := range b.Rows {
				got = append(got, fmt.Sprint(r[0].I, r[1].I, r[2].I, r[4].I))
			}
			return nil
		}
		var kept []types.Row // not late, in arrival order
		wm, seq, wantLate := int64(-1), int64(0), 0
		if err := op.OnWatermark(wm, emit); err != nil {
			t.Fatal(err)
		}
		for step := 0; step < 16; step++ {
			var b Batch
			for i := rng.IntN(10); i > 0; i-- {
				ts := wm - 2 + rng.Int64N(8) // some at or behind the watermark
				row := types.Row{types.NewInt8(rng.Int64N(3)), types.NewTimestamp(types.Timestamp, ts), types.NewInt8(rng.Int64N(3)), types.NewInt8(seq)}
				seq++
				b.Rows = append(b.Rows, row)
				if ts <= wm {
					wantLate++
				} else {
					kept = append(kept, row)
				}
			}
			if err := op.Process(&b, emit); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				op = build()
			}
			wm += rng.Int64N(4)
			if err := op.OnWatermark(wm, emit); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.Finish(emit); err != nil {
			t.Fatal(err)
		}
		if late != wantLate {
			t.Fatalf("case %d: %d rows late, want %d", c, late, wantLate)
		}
		// the reference: each partition's rows sorted by (t, v), ties in
		// arrival order (the rows tied are equal but for their seq, which
		// the comparison leaves out), numbered
		parts := map[int64][]types.Row{}
		for _, r := range kept {
			parts[r[0].I] = append(parts[r[0].I], r)
		}
		var want []string
		for p, rows := range parts {
			for i, num := range rankRows(rank, keys, n, rows) {
				want = append(want, fmt.Sprint(p, rows[i][1].I, rows[i][2].I, num))
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (ranking %d, N %d):\ngot  %s\nwant %s", c, rank, n, strings.Join(got, "; "), strings.Join(want, "; "))
		}
	}
}
