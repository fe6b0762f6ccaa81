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

// TestFinalTopN: random rows (time, partition key, order value with
// ties) in random batches, with watermarks between them that only pass
// times no later row has, and the operator rebuilt on its KV now and then
// (a restart): each partition comes out once, when the watermark passes
// its time, numbered as ROW_NUMBER, RANK or DENSE_RANK number the rows of
// the partition sorted by value, ties in arrival order, those numbered at
// most N; the rows behind a watermark are late.
func TestFinalTopN(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for c := 0; c < 300; c++ {
		rank := Ranking(rng.IntN(3))
		n := 1 + rng.Int64N(3)
		desc := rng.IntN(2) == 0
		keys := []plan.SortKey{{Col: 2, Desc: desc}}
		kv := NewMemKV()
		build := func() *FinalTopN {
			op := &FinalTopN{timedRows: timedRows{PartitionBy: []expr.Eval{func(r types.Row) (types.Value, error) { return r[1], nil }},
				TimeCol: 0, TimeType: types.Timestamp, Keys: keys, Width: 4, OnError: AbortOnError}, N: n, Ranking: rank}
			op.Bind(kv)
			return op
		}
		op := build()
		var got []string
		emit := func(b *Batch) error {
			for _, r := range b.Rows {
				got = append(got, fmt.Sprint(r[0].I, r[1].I, r[3].I, r[4].I))
			}
			return nil
		}
		var all []types.Row // in arrival order
		wm, seq := int64(-1), int64(0)
		for step := 0; step < 12; step++ {
			var b Batch
			for i := rng.IntN(8); i > 0; i-- {
				row := types.Row{types.NewTimestamp(types.Timestamp, wm+1+rng.Int64N(4)), types.NewInt8(rng.Int64N(2)), types.NewInt8(rng.Int64N(4)), types.NewInt8(seq)}
				seq++
				b.Rows = append(b.Rows, row)
				all = append(all, row)
			}
			if err := op.Process(&b, emit); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				op = build()
			}
			wm += rng.Int64N(3)
			if err := op.OnWatermark(wm, emit); err != nil {
				t.Fatal(err)
			}
		}
		late := 0
		op.OnError = func(_ *Batch, _ int, err error) error {
			if errors.Is(err, ErrLate) {
				late++
			}
			return nil
		}
		if err := op.Process(&Batch{Rows: []types.Row{{types.NewTimestamp(types.Timestamp, wm), types.NewInt8(0), types.NewInt8(0), types.NewInt8(-1)}}}, emit); err != nil {
			t.Fatal(err)
		}
		if late != 1 {
			t.Fatalf("a row of a partition at the watermark: %d late, want 1", late)
		}
		if err := op.Finish(emit); err != nil {
			t.Fatal(err)
		}
		// the reference: each partition's rows sorted stably, numbered (rankRows)
		parts := map[[2]int64][]types.Row{}
		for _, r := range all {
			k := [2]int64{r[0].I, r[1].I}
			parts[k] = append(parts[k], r)
		}
		var want []string
		for k, rows := range parts {
			for i, num := range rankRows(rank, keys, n, rows) {
				want = append(want, fmt.Sprint(k[0], k[1], rows[i][3].I, num))
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (ranking %d, N %d, desc %v):\ngot  %s\nwant %s", c, rank, n, desc, strings.Join(got, "; "), strings.Join(want, "; "))
		}
	}
}

// rankRows sorts rows stably by keys and numbers them as ranking does,
// the numbers at most n: the reference of the stream top-Ns' tests.
func rankRows(ranking Ranking, keys []plan.SortKey, n int64, rows []types.Row) []int64 {
	slices.SortStableFunc(rows, func(a, b types.Row) int { return CompareRows(keys, a, b) })
	var nums []int64
	num := int64(0)
	for i, r := range rows {
		switch {
		case ranking == RowNumber || i == 0:
			num = int64(i) + 1
		case CompareRows(keys, r, rows[i-1]) == 0:
		case ranking == Rank:
			num = int64(i) + 1
		default:
			num++
		}
		if num > n {
			break
		}
		nums = append(nums, num)
	}
	return nums
}
