package operators

import (
	"encoding/binary"
	"sort"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// TopN keeps, per partition key, the first N input rows in the order of
// Keys (ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) <= N; N = 1 ordered
// by time is dedup/latest-per-key). Output is a changelog of rows with
// their row number appended: an upsert for every position whose row
// changed. Ties keep arrival order. State per partition key: its rows.
type TopN struct {
	PartitionBy []expr.Eval
	Keys        []SortKey
	N           int64
	Width       int // input row width
	OnError     RowError

	kv      KV
	lists   map[string]*topList
	touched []*topList
	key     []byte
	buf     []byte
}

type topList struct {
	key     []byte
	rows    []types.Row
	emitted int // positions emitted before (an insert beyond, an update within)
	lo      int // first position changed since the last emission (-1: none)
	dirty   bool
}

// Bind implements Stateful.
func (t *TopN) Bind(kv KV) {
	t.kv = kv
	t.lists = map[string]*topList{}
	t.touched = nil
}

func (t *TopN) list(key []byte) (*topList, error) {
	if l, ok := t.lists[string(key)]; ok {
		return l, nil
	}
	l := &topList{key: append([]byte(nil), key...), lo: -1}
	v, ok, err := t.kv.Get(key)
	if err != nil {
		return nil, err
	}
	if ok {
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return nil, errBadState
		}
		v = v[m:]
		l.emitted = int(n)
		for len(v) > 0 {
			var row types.Row
			if row, v, err = types.DecodeValues(v, t.Width); err != nil {
				return nil, err
			}
			l.rows = append(l.rows, row)
		}
	}
	t.lists[string(l.key)] = l
	return l, nil
}

// Process implements Operator.
func (t *TopN) Process(b *Batch, emit Emit) error {
	if t.kv == nil {
		t.Bind(NewMemKV())
	}
rows:
	for i, row := range b.Rows {
		key := t.key[:0]
		for _, p := range t.PartitionBy {
			v, err := p(row)
			if err != nil {
				if err := t.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			key = types.AppendKey(key, v)
		}
		t.key = key
		l, err := t.list(key)
		if err != nil {
			return err
		}
		// insert after every row that sorts before or equal (ties: arrival order)
		pos := sort.Search(len(l.rows), func(j int) bool { return CompareRows(t.Keys, row, l.rows[j]) < 0 })
		if int64(pos) >= t.N {
			continue
		}
		l.rows = append(l.rows, nil)
		copy(l.rows[pos+1:], l.rows[pos:])
		l.rows[pos] = types.CloneRow(row) // kept across batches: own its bytes
		if int64(len(l.rows)) > t.N {
			l.rows = l.rows[:t.N]
		}
		if l.lo < 0 {
			t.touched = append(t.touched, l)
			l.lo = pos
		} else if pos < l.lo {
			l.lo = pos
		}
		l.dirty = true
	}
	return t.emitChanges(emit)
}

func (t *TopN) emitChanges(emit Emit) error {
	if len(t.touched) == 0 {
		return nil
	}
	out := &Batch{}
	for _, l := range t.touched {
		for p := l.lo; p < len(l.rows); p++ {
			op := OpUpdate
			if p >= l.emitted {
				op = OpInsert
			}
			r := make(types.Row, 0, t.Width+1)
			r = append(append(r, l.rows[p]...), types.NewInt8(int64(p+1)))
			out.Rows = append(out.Rows, r)
			out.Ops = append(out.Ops, op)
		}
		l.emitted = max(l.emitted, len(l.rows))
		l.lo = -1
	}
	t.touched = t.touched[:0]
	return emit(out)
}

// OnWatermark implements Stateful (top-N state never expires: a later
// row can always enter).
func (t *TopN) OnWatermark(int64, Emit) error { return nil }

// OnCheckpoint implements Stateful.
func (t *TopN) OnCheckpoint() error {
	for _, l := range t.lists {
		if !l.dirty {
			continue
		}
		b := binary.AppendUvarint(t.buf[:0], uint64(l.emitted))
		for _, r := range l.rows {
			b = types.AppendValues(b, r)
		}
		t.buf = b
		if err := t.kv.Set(l.key, b); err != nil {
			return err
		}
		l.dirty = false
	}
	return nil
}

// Finish implements Operator.
func (t *TopN) Finish(Emit) error { return nil }
