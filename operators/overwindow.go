package operators

import (
	"bytes"
	"sort"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// OverWindow computes the window functions of one OVER clause in a
// continuous query (plan.OpOverWindow): lag, lead, first_value, the
// rankings, aggregates over any frame, as the bounded window step does
// (WindowFuncs, whose code computes a partition's values here too).
//
// It keeps every row of each partition, in the clause's order (ties in
// arrival order), with the values it last emitted for it. A batch's rows
// go into their partitions (a row of sign -1 takes out one row of equal
// values); then each partition the batch touched is computed again, and
// the operator emits the difference as signed rows, [row, values…,
// sign]: -1 with the old values and +1 with the new for each row whose
// values changed, +1 for a new row, -1 for a row that went. A row of lag
// changes one neighbour; a running aggregate changes every row after the
// new one, which is what its answer is. Computing a partition costs its
// size, once per batch that touches it.
//
// State per partition: one entry of its rows, each with its ORDER BY and
// argument values as they were evaluated when it came (a user function
// replaced since does not reorder the rows kept) and its emitted values.
type OverWindow struct {
	Width   int // input row width, without the sign
	Sign    int // input column of each row's sign (= Width); 0: every row comes
	OnError RowError

	w       *WindowFuncs // compiled spec; computes a sorted partition
	reach   int          // see overReach
	kv      KV
	parts   map[string]*overPart
	touched []*overPart
	key     []byte
	buf     []byte
	seq     uint64 // the last row identity given out
}

type overPart struct {
	key     []byte
	rows    []winRow
	shown   []types.Row    // per row, the values it was emitted with (nil: not yet)
	left    [][2]types.Row // rows taken out since the last emission: row, shown values
	fresh   []overFresh    // rows the batch put in, in arrival order
	first   overTouch      // the batch's first row that touched p
	touched bool           // by the batch
	dirty   bool           // since the last checkpoint
	// lo and hi are the least and greatest positions the batch put a row
	// in or took one out at (lo -1: none), ops how many it did: what it
	// changed lies between lo and hi + ops.
	lo, hi, ops int
}

// note records a change of p's rows at position at.
func (p *overPart) note(at int) {
	if p.lo < 0 || at < p.lo {
		p.lo = at
	}
	p.hi = max(p.hi, at)
	p.ops++
}

// overFresh is a row the batch put in: where it came from, to blame it
// if computing its partition fails.
type overFresh struct {
	r winRow
	b *Batch
	i int
}

// first is the batch's first row that touched p, blamed when p cannot be
// computed even without the batch's new rows.
type overTouch struct {
	b *Batch
	i int
}

// NewOverWindow compiles a continuous window step over rows of width
// columns (sign: the sign's column, or 0).
func NewOverWindow(spec *plan.OverSpec, width, sign int, env *expr.Env, onErr RowError) (*OverWindow, error) {
	w, err := NewWindowFuncs(spec, env, onErr, nil)
	if err != nil {
		return nil, err
	}
	return &OverWindow{Width: width, Sign: sign, OnError: onErr, w: w, reach: overReach(spec)}, nil
}

// overReach is how far a row's values reach in its partition's order:
// they depend only on the rows at most that many positions before or
// after it (lag and lead by a constant offset, frames of ROWS with
// offsets), so a change at a position changes only the rows that near
// it, and only they need computing again. -1: a row's values depend on
// the whole partition (the rankings, ntile, cume_dist, RANGE and GROUPS
// frames, frames unbounded at either end).
func overReach(spec *plan.OverSpec) int {
	bounded := func(b plan.FrameBound) bool {
		return b.Kind == plan.BoundPreceding || b.Kind == plan.BoundCurrentRow || b.Kind == plan.BoundFollowing
	}
	fr := spec.Frame
	frame := -1
	if fr.Mode == plan.FrameRows && bounded(fr.Start) && bounded(fr.End) && max(fr.Start.Offset, fr.End.Offset) <= 1<<20 {
		frame = int(max(fr.Start.Offset, fr.End.Offset))
	}
	reach := 0
	for i := range spec.Funcs {
		f := &spec.Funcs[i]
		switch {
		case f.Name == "lag" || f.Name == "lead":
			k := int64(1)
			if len(f.Args) > 1 {
				off := f.Args[1]
				if off.Kind != expr.KConst || off.Val.IsNull() {
					return -1
				}
				k = off.Val.I
			}
			if k < 0 {
				k = -k
			}
			if k > 1<<20 {
				return -1
			}
			reach = max(reach, int(k))
		case usesFrame(f) && frame >= 0:
			reach = max(reach, frame)
		default:
			return -1
		}
	}
	return reach
}

// Bind implements Stateful.
func (o *OverWindow) Bind(kv KV) {
	o.kv = kv
	o.parts = map[string]*overPart{}
	o.touched = nil
}

// winRowOf evaluates what the window needs of an input row, and gives it
// an identity.
func (o *OverWindow) winRowOf(row types.Row) (winRow, error) {
	o.seq++
	r, err := o.w.rowOf(row, true)
	r.seq = o.seq
	return r, err
}

func (o *OverWindow) part(key []byte) (*overPart, error) {
	if p, ok := o.parts[string(key)]; ok {
		return p, nil
	}
	p := &overPart{key: bytes.Clone(key), lo: -1}
	v, ok, err := o.kv.Get(key)
	if err != nil {
		return nil, err
	}
	for ok && len(v) > 0 {
		o.seq++
		r := winRow{seq: o.seq, args: make([]types.Row, len(o.w.args))}
		if r.row, v, err = types.DecodeValues(v, o.Width); err != nil {
			return nil, err
		}
		if r.ord, v, err = types.DecodeValues(v, len(o.w.ord)); err != nil {
			return nil, err
		}
		for j, evs := range o.w.args {
			if r.args[j], v, err = types.DecodeValues(v, len(evs)); err != nil {
				return nil, err
			}
		}
		var shown types.Row
		if shown, v, err = types.DecodeValues(v, len(o.w.Spec.Funcs)); err != nil {
			return nil, err
		}
		p.rows = append(p.rows, r)
		p.shown = append(p.shown, shown)
	}
	o.parts[string(p.key)] = p
	return p, nil
}

// Process implements Operator.
func (o *OverWindow) Process(b *Batch, emit Emit) error {
	for i, row := range b.Rows {
		sign := int64(1)
		if o.Sign > 0 {
			sign = row[o.Sign].I
			row = row[:o.Width]
		}
		r, err := o.winRowOf(row)
		if err != nil {
			if err := o.OnError(b, i, err); err != nil {
				return err
			}
			continue
		}
		o.key = types.AppendKeyRow(o.key[:0], r.part)
		p, err := o.part(o.key)
		if err != nil {
			return err
		}
		if !p.touched {
			p.touched, p.dirty = true, true
			p.first = overTouch{b: b, i: i}
			o.touched = append(o.touched, p)
		}
		if sign < 0 {
			o.remove(p, row)
			continue
		}
		p.note(o.insert(p, r))
		p.fresh = append(p.fresh, overFresh{r: r, b: b, i: i})
	}
	// Every retraction goes before every insertion: a row that moved from
	// one partition to another (a view's row updated) leaves before it
	// comes back under the same key.
	out, plus := &Batch{}, &Batch{}
	for _, p := range o.touched {
		if err := o.emitPart(p, out, plus); err != nil {
			return err
		}
	}
	o.touched = o.touched[:0]
	out.Rows = append(out.Rows, plus.Rows...)
	if len(out.Rows) == 0 {
		return nil
	}
	return emit(out)
}

// insert puts r in its place in p, after its peers (ties keep arrival
// order), not yet shown, and returns the place.
func (o *OverWindow) insert(p *overPart, r winRow) int {
	at := sort.Search(len(p.rows), func(k int) bool { return CompareRows(o.w.Spec.Order, p.rows[k].ord, r.ord) > 0 })
	p.rows = append(p.rows, winRow{})
	copy(p.rows[at+1:], p.rows[at:])
	p.rows[at] = r
	p.shown = append(p.shown, nil)
	copy(p.shown[at+1:], p.shown[at:])
	p.shown[at] = nil
	return at
}

// remove takes out of p the first row of the same values as row; if it
// was shown, its retraction goes out with the partition's changes.
func (o *OverWindow) remove(p *overPart, row types.Row) {
	want := types.AppendValues(nil, row)
	for k := range p.rows {
		o.buf = types.AppendValues(o.buf[:0], p.rows[k].row)
		if !bytes.Equal(o.buf, want) {
			continue
		}
		if p.shown[k] != nil {
			p.left = append(p.left, [2]types.Row{p.rows[k].row, p.shown[k]})
		}
		p.note(k)
		for f := range p.fresh { // a row of this batch goes again
			if p.fresh[f].r.seq == p.rows[k].seq {
				p.fresh = append(p.fresh[:f], p.fresh[f+1:]...)
				break
			}
		}
		p.rows = append(p.rows[:k], p.rows[k+1:]...)
		p.shown = append(p.shown[:k], p.shown[k+1:]...)
		return
	}
}

// emitPart computes p again and adds what changed to minus (the rows
// retracted) and plus (those put in).
func (o *OverWindow) emitPart(p *overPart, minus, plus *Batch) error {
	// The rows to compare, [lo, hi), computed over [base, end): all of
	// them, or, when the values reach only so far, those near what changed
	// with their reach around them.
	lo, hi, base, end := 0, len(p.rows), 0, len(p.rows)
	if m := o.reach; m >= 0 && p.lo >= 0 {
		lo, hi = max(0, p.lo-m), min(len(p.rows), p.hi+p.ops+m+1)
		base, end = max(0, lo-m), min(len(p.rows), hi+m)
	}
	var res [][]types.Value
	if lo < hi {
		var err error
		if res, err = o.w.partition(p.rows[base:end]); err != nil {
			if res, err = o.blame(p); err != nil {
				return err
			}
			lo, hi, base = 0, len(p.rows), 0
		}
	}
	for _, l := range p.left {
		minus.Rows = append(minus.Rows, o.signed(l[0], l[1], -1))
	}
	nf := len(o.w.Spec.Funcs)
	var a []byte
	for k := lo; k < hi; k++ {
		vals := make(types.Row, nf)
		for j := range vals {
			vals[j] = res[j][k-base]
		}
		if old := p.shown[k]; old != nil {
			a = types.AppendValues(a[:0], old)
			o.buf = types.AppendValues(o.buf[:0], vals)
			if bytes.Equal(a, o.buf) {
				continue
			}
			minus.Rows = append(minus.Rows, o.signed(p.rows[k].row, old, -1))
		}
		plus.Rows = append(plus.Rows, o.signed(p.rows[k].row, vals, 1))
		p.shown[k] = vals
	}
	p.left, p.fresh, p.touched = nil, nil, false
	p.lo, p.hi, p.ops = -1, 0, 0
	return nil
}

// blame finds the rows of the batch that make computing p fail: it takes
// them out and puts them back one at a time, and a row after which the
// computation fails is a poison row (OnError) and stays out. When p
// cannot be computed even without them (a row that went changed what
// another's arguments mean, as ntile's count), its values are NULL until
// it can, and the error is reported against the batch's first row that
// touched it.
func (o *OverWindow) blame(p *overPart) ([][]types.Value, error) {
	fresh := map[uint64]bool{}
	for _, f := range p.fresh {
		fresh[f.r.seq] = true
	}
	rows, shown := p.rows[:0], p.shown[:0]
	for k, r := range p.rows {
		if !fresh[r.seq] {
			rows, shown = append(rows, r), append(shown, p.shown[k])
		}
	}
	p.rows, p.shown = rows, shown
	compute := func() ([][]types.Value, error) {
		if len(p.rows) == 0 {
			return nil, nil
		}
		return o.w.partition(p.rows)
	}
	if _, err := compute(); err != nil {
		for _, f := range p.fresh {
			o.insert(p, f.r)
		}
		if err := o.OnError(p.first.b, p.first.i, err); err != nil {
			return nil, err
		}
		res := make([][]types.Value, len(o.w.Spec.Funcs))
		for j := range res {
			res[j] = make([]types.Value, len(p.rows))
		}
		return res, nil
	}
	for _, f := range p.fresh {
		o.insert(p, f.r)
		if _, err := compute(); err != nil {
			for k := range p.rows {
				if p.rows[k].seq == f.r.seq {
					p.rows = append(p.rows[:k], p.rows[k+1:]...)
					p.shown = append(p.shown[:k], p.shown[k+1:]...)
					break
				}
			}
			if err := o.OnError(f.b, f.i, err); err != nil {
				return nil, err
			}
		}
	}
	return compute()
}

// signed is an output row: the input row, the function values, the sign.
func (o *OverWindow) signed(row, vals types.Row, sign int64) types.Row {
	out := make(types.Row, 0, o.Width+len(vals)+1)
	out = append(append(out, row...), vals...)
	return append(out, types.NewInt(types.Int8, sign))
}

// OnWatermark implements Stateful (a partition's rows never expire: a
// later row may come before any of them).
func (o *OverWindow) OnWatermark(int64, Emit) error { return nil }

// OnCheckpoint implements Stateful: each partition changed since the last
// checkpoint is written whole (deleted when empty).
func (o *OverWindow) OnCheckpoint() error {
	for _, p := range o.parts {
		if !p.dirty {
			continue
		}
		p.dirty = false
		if len(p.rows) == 0 {
			delete(o.parts, string(p.key))
			if err := o.kv.Delete(p.key); err != nil {
				return err
			}
			continue
		}
		b := o.buf[:0]
		for k, r := range p.rows {
			b = types.AppendValues(types.AppendValues(b, r.row), r.ord)
			for _, a := range r.args {
				b = types.AppendValues(b, a)
			}
			b = types.AppendValues(b, p.shown[k])
		}
		o.buf = b
		if err := o.kv.Set(p.key, b); err != nil {
			return err
		}
	}
	return nil
}

// Finish implements Operator.
func (o *OverWindow) Finish(Emit) error { return nil }
