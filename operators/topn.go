package operators

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// Ranking is the window function a TopN numbers its rows with.
type Ranking uint8

// Rankings.
const (
	RowNumber Ranking = iota // 1, 2, 3, 4: ties take arrival order
	Rank                     // 1, 2, 2, 4: ties share a rank, which then skips
	DenseRank                // 1, 2, 2, 3: ties share a rank, without gaps
)

func rankingOf(name string) (Ranking, error) {
	switch name {
	case "", "row_number":
		return RowNumber, nil
	case "rank":
		return Rank, nil
	case "dense_rank":
		return DenseRank, nil
	}
	return 0, pgerror.New(pgerror.Internal, "operators: unknown ranking %q", name)
}

// TopN keeps, per partition key, the input rows numbered at most N in the
// order of Keys (ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) <= N; N = 1
// ordered by time is dedup/latest-per-key; RANK and DENSE_RANK keep every
// row whose rank is at most N, ties included).
//
// Output is a changelog keyed by position within the partition key: for
// ROW_NUMBER the row number is the position, and a row is appended with
// it; for RANK and DENSE_RANK a row is appended with its rank and then its
// position, a separate key because tied rows share a rank. Each change is
// an upsert for every position whose row or rank changed, and for RANK and
// DENSE_RANK a delete for each position left empty when a better row
// pushed a group of ties past N (the deleted row is the one shown there
// before). Ties keep arrival order. State per partition key: its rows.
//
// With Sign set (the signed rows of a view's changes, Changelog), the
// sign follows the Width columns of each input row, and a row may also
// go: the operator forgets one row of equal values, and the rows after it
// move up. Since any shown row may go, every row is kept, not only the
// first N, and each change is the difference between the rows shown
// before and after, position by position (an upsert where the row or its
// number changed, a delete of each position left empty).
type TopN struct {
	PartitionBy []expr.Eval
	Keys        []plan.SortKey
	N           int64
	Width       int // input row width (without the sign)
	Ranking     Ranking
	OnError     RowError
	Sign        int // input column of each row's sign (= Width); 0: every row comes

	before  bool // updates follow the rows they replace (BeforeEmitter)
	kv      KV
	lists   map[string]*topList
	touched []*topList
	key     []byte
	buf     []byte
}

type topList struct {
	key     []byte
	rows    []topRow
	dropped []topRow // shown rows cut since the last emission, in order
	emitted int      // positions shown before (an insert beyond, an update within)
	lo      int      // first position changed since the last emission (-1: none)
	dirty   bool
	shown   []topRow // signed: the rows shown, by position, as last emitted
	was     []topRow // unsigned, with before: the rows shown before this batch changed them
}

type topRow struct {
	row   types.Row
	rank  int64 // its number now
	shown int64 // the number it was last emitted with; 0: not emitted yet
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
			return nil, ErrBadState
		}
		v = v[m:]
		l.emitted = int(n)
		for len(v) > 0 {
			var row types.Row
			if row, v, err = types.DecodeValues(v, t.Width); err != nil {
				return nil, err
			}
			l.rows = append(l.rows, topRow{row: row})
		}
		// A checkpoint follows an emission: every kept row is shown (of
		// a signed one's, those numbered at most N).
		t.renumber(l, 0)
		for i := range l.rows {
			l.rows[i].shown = l.rows[i].rank
		}
		if t.Sign > 0 {
			l.shown = append(l.shown[:0], l.rows[:t.visible(l)]...)
		}
	}
	t.lists[string(l.key)] = l
	return l, nil
}

// numberAt is the number a row inserted at pos would take.
func (t *TopN) numberAt(l *topList, pos int, row types.Row) int64 {
	switch {
	case t.Ranking == RowNumber:
		return int64(pos) + 1
	case pos == 0:
		return 1
	case CompareRows(t.Keys, row, l.rows[pos-1].row) == 0:
		return l.rows[pos-1].rank
	case t.Ranking == Rank:
		return int64(pos) + 1
	}
	return l.rows[pos-1].rank + 1
}

// renumber recomputes the numbers from position from on and cuts the rows
// numbered beyond N.
func (t *TopN) renumber(l *topList, from int) {
	for p := from; p < len(l.rows); p++ {
		r := &l.rows[p]
		r.rank = t.numberAt(l, p, r.row)
		if r.rank > t.N && t.Sign == 0 {
			// Cut rows sort before the earlier cut ones: prepend them.
			var cut []topRow
			for _, c := range l.rows[p:] {
				if c.shown > 0 {
					cut = append(cut, c)
				}
			}
			l.dropped = append(cut, l.dropped...)
			clear(l.rows[p:])
			l.rows = l.rows[:p]
			return
		}
	}
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
		if t.Sign > 0 {
			sign := row[t.Sign]
			if sign.IsNull() || (sign.I != 1 && sign.I != -1) {
				return pgerror.New(pgerror.Internal, "operators: top-N input sign %s", sign.Text())
			}
			row = row[:t.Width]
			if sign.I < 0 {
				t.forget(l, row)
				continue
			}
		}
		// insert after every row that sorts before or equal (ties: arrival order)
		pos := sort.Search(len(l.rows), func(j int) bool { return CompareRows(t.Keys, row, l.rows[j].row) < 0 })
		if t.Sign == 0 && t.numberAt(l, pos, row) > t.N {
			continue
		}
		if t.before && l.lo < 0 {
			l.was = append(l.was[:0], l.rows[:min(l.emitted, len(l.rows))]...)
		}
		l.rows = append(l.rows, topRow{})
		copy(l.rows[pos+1:], l.rows[pos:])
		l.rows[pos] = topRow{row: types.CloneRow(row)} // kept across batches: own its bytes
		t.renumber(l, pos)
		t.changed(l, pos)
	}
	if t.Sign > 0 {
		return t.emitSigned(emit)
	}
	return t.emitChanges(emit)
}

// changed notes that the rows of l changed from position pos on.
func (t *TopN) changed(l *topList, pos int) {
	if l.lo < 0 {
		t.touched = append(t.touched, l)
		l.lo = pos
	} else if pos < l.lo {
		l.lo = pos
	}
	l.dirty = true
}

// forget drops one row of l equal to row (a signed row going); a row it
// does not hold (set aside when it came) changes nothing.
func (t *TopN) forget(l *topList, row types.Row) {
	want := types.AppendValues(t.buf[:0], row)
	t.buf = want
	for p := sort.Search(len(l.rows), func(j int) bool { return CompareRows(t.Keys, row, l.rows[j].row) <= 0 }); p < len(l.rows); p++ {
		if CompareRows(t.Keys, row, l.rows[p].row) != 0 {
			return
		}
		if bytes.Equal(types.AppendValues(nil, l.rows[p].row), want) {
			l.rows = slices.Delete(l.rows, p, p+1)
			t.renumber(l, p)
			t.changed(l, p)
			return
		}
	}
}

// visible is how many of l's rows are shown: those numbered at most N.
func (t *TopN) visible(l *topList) int {
	return sort.Search(len(l.rows), func(p int) bool { return l.rows[p].rank > t.N })
}

// emitSigned emits a signed top-N's changes: per touched list, from its
// first changed position, an upsert where the row shown or its number
// changed and a delete of each position no longer shown.
func (t *TopN) emitSigned(emit Emit) error {
	if len(t.touched) == 0 {
		return nil
	}
	out := &Batch{}
	for _, l := range t.touched {
		vis := t.visible(l)
		for p := l.lo; p < max(vis, len(l.shown)); p++ {
			switch {
			case p >= vis:
				old := l.shown[p]
				out.Rows, out.Ops = append(out.Rows, t.output(old.row, old.rank, p)), append(out.Ops, OpDelete)
			case p >= len(l.shown):
				r := l.rows[p]
				out.Rows, out.Ops = append(out.Rows, t.output(r.row, r.rank, p)), append(out.Ops, OpInsert)
			default:
				r, old := l.rows[p], l.shown[p]
				if r.rank == old.rank && CompareRows(t.Keys, r.row, old.row) == 0 && bytes.Equal(types.AppendValues(nil, r.row), types.AppendValues(nil, old.row)) {
					continue
				}
				if t.before {
					out.Rows, out.Ops = append(out.Rows, t.output(old.row, old.rank, p)), append(out.Ops, OpUpdateBefore)
				}
				out.Rows, out.Ops = append(out.Rows, t.output(r.row, r.rank, p)), append(out.Ops, OpUpdate)
			}
		}
		l.shown = append(l.shown[:0], l.rows[:vis]...)
		l.emitted = vis
		l.lo = -1
	}
	t.touched = t.touched[:0]
	if len(out.Rows) == 0 {
		return nil
	}
	return emit(out)
}

// output is a row as the operator emits it.
func (t *TopN) output(r types.Row, number int64, pos int) types.Row {
	out := make(types.Row, 0, t.Width+2)
	out = append(append(out, r...), types.NewInt8(number))
	if t.Ranking != RowNumber {
		out = append(out, types.NewInt8(int64(pos)+1))
	}
	return out
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
			} else if t.before && p < len(l.was) {
				old := l.was[p]
				out.Rows, out.Ops = append(out.Rows, t.output(old.row, old.shown, p)), append(out.Ops, OpUpdateBefore)
			}
			r := &l.rows[p]
			r.shown = r.rank
			out.Rows = append(out.Rows, t.output(r.row, r.rank, p))
			out.Ops = append(out.Ops, op)
		}
		// Positions left empty: the last shown rows cut, in order.
		if vacated := l.emitted - len(l.rows); vacated > 0 {
			gone := l.dropped[max(0, len(l.dropped)-vacated):] // all of them: each shown row had a position
			for i, r := range gone {
				out.Rows = append(out.Rows, t.output(r.row, r.shown, l.emitted-len(gone)+i))
				out.Ops = append(out.Ops, OpDelete)
			}
		}
		l.dropped = nil
		clear(l.was)
		l.was = l.was[:0]
		l.emitted = len(l.rows)
		l.lo = -1
	}
	t.touched = t.touched[:0]
	return emit(out)
}

// EmitBefore implements BeforeEmitter.
func (t *TopN) EmitBefore() { t.before = true }

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
			b = types.AppendValues(b, r.row)
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
