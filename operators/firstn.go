package operators

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/fvsql/fvsql/types"
)

// FirstN is a stream's top-N in event time: ROW_NUMBER(), RANK() or
// DENSE_RANK() OVER (PARTITION BY … ORDER BY t, …) <= N whose order
// starts with an event-time column t, ascending. With ROW_NUMBER and N =
// 1 it is Flink's deduplication that keeps each key's first row. A row's
// number is final once the watermark passes its t: no row of an earlier
// time can come after that (one at or behind the watermark is late,
// ErrLate), and its ties share its t, so they are all there too. So rows
// wait until the watermark passes them; then each partition's waiting
// rows come out in order, numbered on from the rows it put out before,
// while their numbers are at most N. From then on the partition keeps
// only its counts, and drops every row that comes. Output rows: the input
// row, its number, and its position (as FinalTopN's).
//
// State: the rows waiting (timedRows), and per partition how many rows
// and how many distinct ranks (DENSE_RANK's) it put out. Every change
// goes to the KV as it happens.
type FirstN struct {
	timedRows // Keys[0] is TimeCol, ascending
	N         int64
	Ranking   Ranking

	ckey []byte
	out  Batch
}

// State keys: timedRows' and 'n' + partition key (how many rows, then
// how many distinct ranks, the partition put out).
const firstNCount = 'n'

// firstCounts is what a partition put out: rows, and distinct ranks.
type firstCounts struct{ rows, ranks int64 }

// Finish implements Operator: a bounded input's end passes every row.
func (f *FirstN) Finish(emit Emit) error { return f.OnWatermark(math.MaxInt64, emit) }

// counts is what the partition of key pk has put out.
func (f *FirstN) counts(pk []byte) (firstCounts, error) {
	f.ckey = append(append(f.ckey[:0], firstNCount), pk...)
	v, ok, err := f.kv.Get(f.ckey)
	if err != nil || !ok {
		return firstCounts{}, err
	}
	if len(v) != 16 {
		return firstCounts{}, ErrBadState
	}
	return firstCounts{int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))}, nil
}

// full says whether a partition that put out c can put out no more: the
// next number would be above N.
func (f *FirstN) full(c firstCounts) bool {
	if f.Ranking == DenseRank {
		return c.ranks >= f.N
	}
	return c.rows >= f.N
}

// numbers gives each of rows (in order, the rows of one time) its number,
// after the partition put out c, and returns how many of them are
// numbered at most N (n) and how many distinct ranks those hold.
func (f *FirstN) numbers(rows []types.Row, c firstCounts) (nums []int64, n int, ranks int64) {
	nums = make([]int64, len(rows))
	for i := range rows {
		tie := i > 0 && CompareRows(f.Keys, rows[i], rows[i-1]) == 0
		switch {
		case f.Ranking == RowNumber:
			nums[i] = c.rows + int64(i) + 1
		case tie:
			nums[i] = nums[i-1]
		case f.Ranking == Rank:
			nums[i] = c.rows + int64(i) + 1
		default:
			nums[i] = c.ranks + ranks + 1
		}
		if nums[i] > f.N {
			return nums, i, ranks
		}
		if !tie {
			ranks++
		}
	}
	return nums, len(rows), ranks
}

// Process implements Operator.
func (f *FirstN) Process(b *Batch, emit Emit) error {
	if err := f.load(); err != nil {
		return err
	}
	for i, row := range b.Rows {
		key, ok, err := f.place(b, i, "a stream's top-N in event time got a row whose time is NULL: its number would never be final", "row time")
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		c, err := f.counts(key[9:])
		if err != nil {
			return err
		}
		if f.full(c) {
			continue // the partition's rows are all out
		}
		waiting, err := f.rows(key)
		if err != nil {
			return err
		}
		// of the rows of one time, only those numbered at most N can
		// ever come out
		waiting = slices.Insert(waiting, f.position(waiting, row), row[:f.Width:f.Width])
		_, n, _ := f.numbers(waiting, c)
		if err := f.store(key, waiting[:n]); err != nil {
			return err
		}
	}
	return nil
}

// OnWatermark implements Stateful: the rows at or below wm come out, in
// time order, each partition's numbered on from its counts, up to N.
func (f *FirstN) OnWatermark(wm int64, emit Emit) error {
	hi, moved, err := f.advance(wm)
	if err != nil || !moved {
		return err
	}
	f.out.Reset()
	type waiting struct{ key, rows []byte }
	var ready []waiting
	err = f.kv.Scan([]byte{timedData}, hi, func(key, value []byte) error {
		ready = append(ready, waiting{append([]byte(nil), key...), append([]byte(nil), value...)})
		return nil
	})
	if err != nil {
		return err
	}
	// the counts of the partitions this watermark moves, as they grow (a
	// partition may have rows waiting under several times)
	moves := map[string]firstCounts{}
	for _, w := range ready {
		pk := w.key[9:]
		c, ok := moves[string(pk)]
		if !ok {
			if c, err = f.counts(pk); err != nil {
				return err
			}
		}
		rows, err := f.decode(w.rows)
		if err != nil {
			return err
		}
		nums, n, ranks := f.numbers(rows, c)
		for i, r := range rows[:n] {
			out := make(types.Row, 0, f.Width+2)
			out = append(append(out, r...), types.NewInt8(nums[i]), types.NewInt8(c.rows+int64(i)+1))
			f.out.Rows = append(f.out.Rows, out)
		}
		c.rows, c.ranks = c.rows+int64(n), c.ranks+ranks
		moves[string(pk)] = c
		if err := f.kv.Delete(w.key); err != nil {
			return err
		}
	}
	for pk, c := range moves {
		v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(c.rows)), uint64(c.ranks))
		if err := f.kv.Set(append([]byte{firstNCount}, pk...), v); err != nil {
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
