package operators

import (
	"math"
	"slices"

	"github.com/fvsql/fvsql/types"
)

// FinalTopN is a stream's top-N: ROW_NUMBER(), RANK() or DENSE_RANK()
// OVER (PARTITION BY …, t, … ORDER BY …) <= N whose partition holds an
// event-time column t (a window's start or end: Flink's window top-N). A
// partition has all its rows once the watermark passes its t; then its
// rows numbered at most N come out, once and final, numbered as the
// view's top-N numbers them (TopN: the input row, its number, and for
// RANK and DENSE_RANK its position), and the partition's state goes. A
// row whose partition has come out already is late (ErrLate).
//
// State (timedRows): per partition, the rows numbered at most N so far
// (ties of the N-th included for RANK and DENSE_RANK), under (t,
// partition key); and the watermark, so that a restarted operator still
// refuses rows of partitions it emitted.
type FinalTopN struct {
	timedRows
	N       int64
	Ranking Ranking

	out  Batch
	keys [][]byte
}

// Finish implements Operator: a bounded input's end completes every
// partition.
func (f *FinalTopN) Finish(emit Emit) error { return f.OnWatermark(math.MaxInt64, emit) }

// Process implements Operator.
func (f *FinalTopN) Process(b *Batch, emit Emit) error {
	if err := f.load(); err != nil {
		return err
	}
	for i, row := range b.Rows {
		key, ok, err := f.place(b, i, "a stream's top-N partition time is NULL: the partition would never be complete", "partition time")
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		kept, err := f.rows(key)
		if err != nil {
			return err
		}
		kept = slices.Insert(kept, f.position(kept, row), row[:f.Width:f.Width])
		if err := f.store(key, kept[:f.cut(kept)]); err != nil {
			return err
		}
	}
	return nil
}

// numbers gives each of rows (in order) its number.
func (f *FinalTopN) numbers(rows []types.Row) []int64 {
	nums := make([]int64, len(rows))
	for i := range rows {
		switch {
		case f.Ranking == RowNumber || i == 0:
			nums[i] = int64(i) + 1
		case CompareRows(f.Keys, rows[i], rows[i-1]) == 0:
			nums[i] = nums[i-1]
		case f.Ranking == Rank:
			nums[i] = int64(i) + 1
		default:
			nums[i] = nums[i-1] + 1
		}
	}
	return nums
}

// cut is how many of rows are numbered at most N.
func (f *FinalTopN) cut(rows []types.Row) int {
	nums := f.numbers(rows)
	n := 0
	for n < len(rows) && nums[n] <= f.N {
		n++
	}
	return n
}

// OnWatermark implements Stateful: the partitions whose time is at or
// below wm come out, in time then partition key order.
func (f *FinalTopN) OnWatermark(wm int64, emit Emit) error {
	hi, moved, err := f.advance(wm)
	if err != nil || !moved {
		return err
	}
	f.out.Reset()
	f.keys = f.keys[:0]
	err = f.kv.Scan([]byte{timedData}, hi, func(key, value []byte) error {
		rows, err := f.decode(value)
		if err != nil {
			return err
		}
		for i, n := range f.numbers(rows) {
			out := make(types.Row, 0, f.Width+2)
			out = append(append(out, rows[i]...), types.NewInt8(n))
			if f.Ranking != RowNumber {
				out = append(out, types.NewInt8(int64(i)+1))
			}
			f.out.Rows = append(f.out.Rows, out)
		}
		f.keys = append(f.keys, append([]byte(nil), key...))
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range f.keys {
		if err := f.kv.Delete(k); err != nil {
			return err
		}
	}
	if err := f.saveWatermark(); err != nil {
		return err
	}
	if len(f.out.Rows) == 0 {
		return nil
	}
	return emit(&f.out)
}
