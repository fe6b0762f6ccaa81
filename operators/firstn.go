package operators

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
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
// State: the rows waiting, under (t, partition key), in order (ties keep
// arrival order), so that a watermark finds them in time order by
// scanning below it; per partition, how many rows it put out; and the
// watermark itself, so that a restarted operator still refuses late
// rows. Every change goes to the KV as it happens.
type FirstN struct {
	PartitionBy []expr.Eval
	TimeCol     int // input column of the event time, Keys[0]
	Keys        []plan.SortKey
	N           int64
	Width       int // input row width
	TimeType    types.Type
	OnError     RowError

	kv   KV
	wm   int64 // rows at or below it have come out; MinInt64 until loaded
	key  []byte
	ckey []byte
	buf  []byte
	out  Batch
}

// State keys: 'd' + big-endian time + partition key (rows waiting), 'n' +
// partition key (rows put out), 'w' (the watermark).
const (
	firstNData  = 'd'
	firstNCount = 'n'
	firstNWM    = 'w'
)

// Bind implements Stateful.
func (f *FirstN) Bind(kv KV) {
	f.kv = kv
	f.wm = math.MinInt64
}

// OnCheckpoint implements Stateful: everything is written as it happens.
func (f *FirstN) OnCheckpoint() error { return nil }

// Finish implements Operator: a bounded input's end passes every row.
func (f *FirstN) Finish(emit Emit) error { return f.OnWatermark(math.MaxInt64, emit) }

func (f *FirstN) load() error {
	if f.kv == nil {
		f.Bind(NewMemKV())
	}
	if f.wm != math.MinInt64 {
		return nil
	}
	v, ok, err := f.kv.Get([]byte{firstNWM})
	if err != nil || !ok {
		return err
	}
	if len(v) != 8 {
		return ErrBadState
	}
	f.wm = int64(binary.BigEndian.Uint64(v))
	return nil
}

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
rows:
	for i, row := range b.Rows {
		t := row[f.TimeCol]
		if t.IsNull() {
			if err := f.OnError(b, i, pgerror.New(pgerror.NullValueNotAllowed, "a stream's top-N in event time got a row whose time is NULL: its number would never be final")); err != nil {
				return err
			}
			continue
		}
		if t.I <= f.wm {
			if err := f.OnError(b, i, fmt.Errorf("%w (row time %s, watermark %s)", ErrLate,
				types.NewTimestamp(f.TimeType, t.I).Text(), types.NewTimestamp(f.TimeType, f.wm).Text())); err != nil {
				return err
			}
			continue
		}
		key := AppendInt64Key(append(f.key[:0], firstNData), t.I)
		for _, p := range f.PartitionBy {
			v, err := p(row)
			if err != nil {
				if err := f.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			key = types.AppendKey(key, v)
		}
		f.key = key
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
		// after the rows that sort before it or tie with it; of the rows
		// of one time, only the first N - done can ever come out
		pos, _ := slices.BinarySearchFunc(waiting, row, func(r, x types.Row) int {
			if CompareRows(f.Keys, r, x) <= 0 {
				return -1
			}
			return 1
		})
		if int64(pos) >= f.N-done {
			continue
		}
		waiting = slices.Insert(waiting, pos, row[:f.Width:f.Width])
		waiting = waiting[:min(int64(len(waiting)), f.N-done)]
		buf := f.buf[:0]
		for _, r := range waiting {
			buf = types.AppendValues(buf, r)
		}
		f.buf = buf
		if err := f.kv.Set(key, buf); err != nil {
			return err
		}
	}
	return nil
}

// rows decodes the rows waiting under key.
func (f *FirstN) rows(key []byte) ([]types.Row, error) {
	v, ok, err := f.kv.Get(key)
	if err != nil || !ok {
		return nil, err
	}
	return f.decode(v)
}

func (f *FirstN) decode(v []byte) ([]types.Row, error) {
	var rows []types.Row
	for len(v) > 0 {
		var row types.Row
		var err error
		if row, v, err = types.DecodeValues(v, f.Width); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// OnWatermark implements Stateful: the rows at or below wm come out, in
// time order, each partition's numbered on from its count, up to N.
func (f *FirstN) OnWatermark(wm int64, emit Emit) error {
	if err := f.load(); err != nil {
		return err
	}
	if wm <= f.wm {
		return nil
	}
	f.wm = wm
	var hi []byte
	if wm < math.MaxInt64 {
		hi = AppendInt64Key([]byte{firstNData}, wm+1)
	} else {
		hi = []byte{firstNData + 1}
	}
	f.out.Reset()
	type done struct{ key, rows []byte }
	var waiting []done
	err := f.kv.Scan([]byte{firstNData}, hi, func(key, value []byte) error {
		waiting = append(waiting, done{append([]byte(nil), key...), append([]byte(nil), value...)})
		return nil
	})
	if err != nil {
		return err
	}
	// counts of the partitions this watermark moves, as they grow (a
	// partition may have rows waiting under several times)
	counts := map[string]int64{}
	for _, d := range waiting {
		pk := d.key[9:]
		n, ok := counts[string(pk)]
		if !ok {
			if n, err = f.count(pk); err != nil {
				return err
			}
		}
		rows, err := f.decode(d.rows)
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
		if err := f.kv.Delete(d.key); err != nil {
			return err
		}
	}
	for pk, n := range counts {
		if err := f.kv.Set(append([]byte{firstNCount}, pk...), binary.BigEndian.AppendUint64(nil, uint64(n))); err != nil {
			return err
		}
	}
	if wm < math.MaxInt64 {
		if err := f.kv.Set([]byte{firstNWM}, binary.BigEndian.AppendUint64(nil, uint64(wm))); err != nil {
			return err
		}
	}
	if len(f.out.Rows) == 0 {
		return nil
	}
	return emit(&f.out)
}
