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

// FinalTopN is a stream's top-N: ROW_NUMBER(), RANK() or DENSE_RANK()
// OVER (PARTITION BY …, t, … ORDER BY …) <= N whose partition holds an
// event-time column t (a window's start or end: Flink's window top-N). A
// partition has all its rows once the watermark passes its t; then its
// rows numbered at most N come out, once and final, numbered as the
// view's top-N numbers them (TopN: the input row, its number, and for
// RANK and DENSE_RANK its position), and the partition's state goes. A
// row whose partition has come out already is late (ErrLate).
//
// State: per partition, the rows numbered at most N so far (ties of the
// N-th included for RANK and DENSE_RANK; ties keep arrival order), under
// (t, partition key), so that a watermark finds the partitions it
// completes, in time order, by scanning below it; and the watermark
// itself, so that a restarted operator still refuses rows of partitions
// it emitted. Every change goes to the KV as it happens.
type FinalTopN struct {
	PartitionBy []expr.Eval
	TimeCol     int // input column of the partition's event time
	Keys        []plan.SortKey
	N           int64
	Width       int // input row width
	Ranking     Ranking
	TimeType    types.Type
	OnError     RowError

	kv   KV
	wm   int64 // partitions at or below it have come out; MinInt64 until loaded
	key  []byte
	buf  []byte
	out  Batch
	keys [][]byte
}

// State keys: 'd' + big-endian time + partition key (rows), 'w' (the
// watermark).
const (
	finalTopData = 'd'
	finalTopWM   = 'w'
)

// Bind implements Stateful.
func (f *FinalTopN) Bind(kv KV) {
	f.kv = kv
	f.wm = math.MinInt64
}

// OnCheckpoint implements Stateful: everything is written as it happens.
func (f *FinalTopN) OnCheckpoint() error { return nil }

// Finish implements Operator: a bounded input's end completes every
// partition.
func (f *FinalTopN) Finish(emit Emit) error { return f.OnWatermark(math.MaxInt64, emit) }

func (f *FinalTopN) load() error {
	if f.kv == nil {
		f.Bind(NewMemKV())
	}
	if f.wm != math.MinInt64 {
		return nil
	}
	v, ok, err := f.kv.Get([]byte{finalTopWM})
	if err != nil {
		return err
	}
	if ok {
		if len(v) != 8 {
			return ErrBadState
		}
		f.wm = int64(binary.BigEndian.Uint64(v))
	}
	return nil
}

// Process implements Operator.
func (f *FinalTopN) Process(b *Batch, emit Emit) error {
	if err := f.load(); err != nil {
		return err
	}
rows:
	for i, row := range b.Rows {
		t := row[f.TimeCol]
		if t.IsNull() {
			if err := f.OnError(b, i, pgerror.New(pgerror.NullValueNotAllowed, "a stream's top-N partition time is NULL: the partition would never be complete")); err != nil {
				return err
			}
			continue
		}
		if t.I <= f.wm {
			if err := f.OnError(b, i, fmt.Errorf("%w (partition time %s, watermark %s)", ErrLate,
				types.NewTimestamp(f.TimeType, t.I).Text(), types.NewTimestamp(f.TimeType, f.wm).Text())); err != nil {
				return err
			}
			continue
		}
		key := AppendInt64Key(append(f.key[:0], finalTopData), t.I)
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
		kept, err := f.rows(key)
		if err != nil {
			return err
		}
		// after the rows that sort before it or tie with it: ties keep arrival order
		pos, _ := slices.BinarySearchFunc(kept, row, func(r, x types.Row) int {
			if CompareRows(f.Keys, r, x) <= 0 {
				return -1
			}
			return 1
		})
		kept = slices.Insert(kept, pos, row[:f.Width:f.Width])
		kept = kept[:f.cut(kept)]
		buf := f.buf[:0]
		for _, r := range kept {
			buf = types.AppendValues(buf, r)
		}
		f.buf = buf
		if err := f.kv.Set(key, buf); err != nil {
			return err
		}
	}
	return nil
}

// rows decodes a partition's kept rows.
func (f *FinalTopN) rows(key []byte) ([]types.Row, error) {
	v, ok, err := f.kv.Get(key)
	if err != nil || !ok {
		return nil, err
	}
	return f.decode(v)
}

func (f *FinalTopN) decode(v []byte) ([]types.Row, error) {
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
	if err := f.load(); err != nil {
		return err
	}
	if wm <= f.wm {
		return nil
	}
	f.wm = wm
	var hi []byte
	if wm < math.MaxInt64 {
		hi = AppendInt64Key([]byte{finalTopData}, wm+1)
	} else {
		hi = []byte{finalTopData + 1}
	}
	f.out.Reset()
	f.keys = f.keys[:0]
	err := f.kv.Scan([]byte{finalTopData}, hi, func(key, value []byte) error {
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
	if wm < math.MaxInt64 {
		if err := f.kv.Set([]byte{finalTopWM}, binary.BigEndian.AppendUint64(nil, uint64(wm))); err != nil {
			return err
		}
	}
	if len(f.out.Rows) == 0 {
		return nil
	}
	return emit(&f.out)
}
