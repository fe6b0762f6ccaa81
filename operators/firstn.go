package operators

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/fvsql/fvsql/types"
)

// FirstN is a stream's top-N in event time: ROW_NUMBER() OVER (PARTITION
// BY … ORDER BY t, …) <= N whose order starts with an event-time column
// t, ascending. With N = 1 it is Flink's deduplication that keeps each
// key's first row. A row's number is final once the watermark passes its
// t: no row of an earlier time can come after that (one at or behind the
// watermark is late, ErrLate). So rows wait until the watermark passes
// them; then each partition's waiting rows come out in order, numbered on
// from the rows it put out before, until it has put out N. From then on
// the partition keeps only its count, and drops every row that comes.
// Output rows: the input row and its number.
//
// State: the rows waiting (timedRows), and per partition how many rows
// it put out. Every change goes to the KV as it happens.
type FirstN struct {
	timedRows // Keys[0] is TimeCol, ascending
	N         int64

	ckey []byte
	out  Batch
}

// State keys: timedRows' and 'n' + partition key (how many rows the
// partition put out).
const firstNCount = 'n'

// Finish implements Operator: a bounded input's end passes every row.
func (f *FirstN) Finish(emit Emit) error { return f.OnWatermark(math.MaxInt64, emit) }

// count is how many rows the partition of key pk has put out.
func (f *FirstN) count(pk []byte) (int64, error) {
	f.ckey = append(append(f.ckey[:0], firstNCount), pk...)
	v, ok, err := f.kv.Get(f.ckey)
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, ErrBadState
	}
	return int64(binary.BigEndian.Uint64(v)), nil
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
		done, err := f.count(key[9:])
		if err != nil {
			return err
		}
		if done >= f.N {
			continue // the partition's rows are all out
		}
		waiting, err := f.rows(key)
		if err != nil {
			return err
		}
		// of the rows of one time, only the first N - done can ever come out
		pos := f.position(waiting, row)
		if int64(pos) >= f.N-done {
			continue
		}
		waiting = slices.Insert(waiting, pos, row[:f.Width:f.Width])
		if err := f.store(key, waiting[:min(int64(len(waiting)), f.N-done)]); err != nil {
			return err
		}
	}
	return nil
}

// OnWatermark implements Stateful: the rows at or below wm come out, in
// time order, each partition's numbered on from its count, up to N.
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
	// counts of the partitions this watermark moves, as they grow (a
	// partition may have rows waiting under several times)
	counts := map[string]int64{}
	for _, w := range ready {
		pk := w.key[9:]
		n, ok := counts[string(pk)]
		if !ok {
			if n, err = f.count(pk); err != nil {
				return err
			}
		}
		rows, err := f.decode(w.rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if n >= f.N {
				break
			}
			n++
			out := make(types.Row, 0, f.Width+1)
			f.out.Rows = append(f.out.Rows, append(append(out, r...), types.NewInt8(n)))
		}
		counts[string(pk)] = n
		if err := f.kv.Delete(w.key); err != nil {
			return err
		}
	}
	for pk, n := range counts {
		if err := f.kv.Set(append([]byte{firstNCount}, pk...), binary.BigEndian.AppendUint64(nil, uint64(n))); err != nil {
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
