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

// timedRows is the state of a stream's top-N that waits for the
// watermark (FinalTopN, FirstN): rows under (event time, partition key),
// each key's rows in order (ties keep arrival order), so that a watermark
// finds the rows it passes, in time order, by scanning below it; and the
// watermark itself, so that a restarted operator still refuses late rows.
// Every change goes to the KV as it happens.
type timedRows struct {
	PartitionBy []expr.Eval
	TimeCol     int // input column of the event time
	Keys        []plan.SortKey
	Width       int // input row width
	TimeType    types.Type
	OnError     RowError

	kv  KV
	wm  int64 // rows at or below it have come out; MinInt64 until loaded
	key []byte
	buf []byte
}

// State keys: 'd' + big-endian time + partition key (rows), 'w' (the
// watermark). (FirstN adds 'n' keys.)
const (
	timedData = 'd'
	timedWM   = 'w'
)

// Bind implements Stateful.
func (r *timedRows) Bind(kv KV) {
	r.kv = kv
	r.wm = math.MinInt64
}

// OnCheckpoint implements Stateful: everything is written as it happens.
func (r *timedRows) OnCheckpoint() error { return nil }

func (r *timedRows) load() error {
	if r.kv == nil {
		r.Bind(NewMemKV())
	}
	if r.wm != math.MinInt64 {
		return nil
	}
	v, ok, err := r.kv.Get([]byte{timedWM})
	if err != nil || !ok {
		return err
	}
	if len(v) != 8 {
		return ErrBadState
	}
	r.wm = int64(binary.BigEndian.Uint64(v))
	return nil
}

// place returns the state key of input row i of b: 'd', its time, its
// partition key. A row whose time is NULL (null says why that is wrong),
// is at or behind the watermark (late; what names its time), or whose
// partition key fails to evaluate goes to OnError, and ok is false.
func (r *timedRows) place(b *Batch, i int, null, what string) (key []byte, ok bool, err error) {
	row := b.Rows[i]
	t := row[r.TimeCol]
	if t.IsNull() {
		return nil, false, r.OnError(b, i, pgerror.New(pgerror.NullValueNotAllowed, "%s", null))
	}
	if t.I <= r.wm {
		return nil, false, r.OnError(b, i, fmt.Errorf("%w (%s %s, watermark %s)", ErrLate, what,
			types.NewTimestamp(r.TimeType, t.I).Text(), types.NewTimestamp(r.TimeType, r.wm).Text()))
	}
	key = AppendInt64Key(append(r.key[:0], timedData), t.I)
	for _, p := range r.PartitionBy {
		v, err := p(row)
		if err != nil {
			return nil, false, r.OnError(b, i, err)
		}
		key = types.AppendKey(key, v)
	}
	r.key = key
	return key, true, nil
}

// rows decodes the rows under key.
func (r *timedRows) rows(key []byte) ([]types.Row, error) {
	v, ok, err := r.kv.Get(key)
	if err != nil || !ok {
		return nil, err
	}
	return r.decode(v)
}

func (r *timedRows) decode(v []byte) ([]types.Row, error) {
	var rows []types.Row
	for len(v) > 0 {
		var row types.Row
		var err error
		if row, v, err = types.DecodeValues(v, r.Width); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// position is where row goes among rows (in order): after those that
// sort before it or tie with it.
func (r *timedRows) position(rows []types.Row, row types.Row) int {
	pos, _ := slices.BinarySearchFunc(rows, row, func(x, y types.Row) int {
		if CompareRows(r.Keys, x, y) <= 0 {
			return -1
		}
		return 1
	})
	return pos
}

// store writes rows under key.
func (r *timedRows) store(key []byte, rows []types.Row) error {
	buf := r.buf[:0]
	for _, row := range rows {
		buf = types.AppendValues(buf, row)
	}
	r.buf = buf
	return r.kv.Set(key, buf)
}

// advance moves the watermark to wm, if that is ahead, and returns the
// end of the state keys of the rows it passes (the scan is ['d', hi)).
func (r *timedRows) advance(wm int64) (hi []byte, moved bool, err error) {
	if err := r.load(); err != nil || wm <= r.wm {
		return nil, false, err
	}
	r.wm = wm
	if wm < math.MaxInt64 {
		return AppendInt64Key([]byte{timedData}, wm+1), true, nil
	}
	return []byte{timedData + 1}, true, nil
}

// saveWatermark writes the watermark (an input's end, MaxInt64, is not
// one: nothing comes after it).
func (r *timedRows) saveWatermark() error {
	if r.wm == math.MaxInt64 {
		return nil
	}
	return r.kv.Set([]byte{timedWM}, binary.BigEndian.AppendUint64(nil, uint64(r.wm)))
}
