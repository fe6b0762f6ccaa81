package operators

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// OverTime is a stream's window functions in event time
// (plan.OpOverTime): the functions of one OVER clause whose ORDER BY
// starts with an event time t, ascending, over frames that end at the
// current row or before it (Flink's OVER aggregation). A row's values
// are final once the watermark passes its t: no row of an earlier time
// can come after that (one at or behind the watermark is late, ErrLate),
// and its peers share its t, so they are all there too. So rows wait
// until the watermark passes them; then each partition's waiting rows of
// one time come out in order (ties in arrival order), with the values
// their frames give, and each goes out once.
//
// A partition keeps what later rows can still read, which CheckOverTime
// bounds when the query is created: its counts of rows and peer groups
// (the rankings), the last keep rows (a frame's n PRECEDING, lag's
// offset), its first head rows (first_value and nth_value over frames
// from its start), and for frames from its start the accumulators of its
// aggregates, which fold each row once. The waiting rows go to the KV as
// they come; the partitions the watermark moves, at each checkpoint.
//
// Output rows: the input row, then each function's value.
type OverTime struct {
	timedRows // Keys unused: rows of one time wait in arrival order

	w       *WindowFuncs
	keep    int  // preceding rows a partition keeps
	head    int  // first rows a partition keeps
	running bool // aggregates fold from the partition's start: keep their accumulators
	framed  bool // a function reads its frame's rows (usesFrame)

	// parts are the partitions the watermark moved since the last
	// checkpoint, which writes them: a partition's rows of many times
	// come out between two checkpoints, read and written once
	parts map[string]*overTimePart
	// wait holds the rows placed since the last checkpoint under their
	// state keys (pending lists the keys, sorted when unsorted is
	// false), which the checkpoint writes: most rows come out before it
	// and never touch the KV
	wait     map[string][]winRow
	pending  []string
	unsorted bool
	pkey     []byte
	out      Batch
}

// Bind implements Stateful: the partitions held since the last
// checkpoint belong to an epoch that may have been aborted.
func (o *OverTime) Bind(kv KV) {
	o.timedRows.Bind(kv)
	o.parts, o.wait, o.pending, o.unsorted = nil, nil, nil, false
}

// OnCheckpoint implements Stateful: it writes the partitions the
// watermark moved, and the rows that came since the last checkpoint and
// wait still (after any of their key's that waited then).
func (o *OverTime) OnCheckpoint() error {
	for pk, p := range o.parts {
		if err := o.storePart([]byte(pk), p); err != nil {
			return err
		}
	}
	for _, k := range o.pending {
		v, _, err := o.kv.Get([]byte(k))
		if err != nil {
			return err
		}
		buf := append(o.buf[:0], v...)
		for _, r := range o.wait[k] {
			buf = o.appendWinRow(buf, r)
		}
		o.buf = buf
		if err := o.kv.Set([]byte(k), buf); err != nil {
			return err
		}
	}
	o.parts, o.wait, o.pending, o.unsorted = nil, nil, nil, false
	return nil
}

// State keys: timedRows' (each entry the rows of one time and partition
// key, as encoded by appendWinRow) and 'p' + partition key (an
// overTimePart).
const overTimePartKey = 'p'

// overTimePart is what a partition keeps between the times it puts out.
type overTimePart struct {
	rows, groups int64 // rows and peer groups it put out
	folded       int64 // rows its accumulators hold (from its start)
	accs         []Accumulator
	head, last   []winRow // its first rows, its last rows
	// slides are the sliding aggregates of frames that do not start at
	// the partition's start, per function (nil: folded afresh per row);
	// made when the partition is read, never stored
	slides []*slider
	// cut is the time of the newest row a RANGE frame still reached when
	// the partition let it go, past maxOverRange (NULL: none): a frame
	// that reaches it cannot be computed
	cut types.Value
}

// maxOverKeep bounds the rows a partition keeps for a stream's window
// functions (each of its times reads and writes them all).
const maxOverKeep = 10000

// maxOverRange bounds the rows a partition keeps for a RANGE frame with
// an offset (`RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT
// ROW`), whose count is the data's: a row whose frame would reach
// further is a poison row (54000). A variable for tests.
var maxOverRange = 50000

// overTimeShape is what CheckOverTime found: how many rows a partition
// keeps, and whether its aggregates fold from its start.
type overTimeShape struct {
	keep, head int
	running    bool
	rng        bool // a RANGE frame with an offset: keep its rows by time
}

// CheckOverTime says whether a stream's window functions of spec can
// run in event time (OverTime), with env for their constant arguments:
// the first ORDER BY term ascending, NULLS LAST (the planner checks that
// it is the event time), frames that end at the current row or before it
// and start at the partition's start, n rows before or the current row,
// and functions whose values those rows decide. Everything else would
// need rows after the current one, or the whole partition, which a
// stream never has; it is refused with 0A000.
func CheckOverTime(spec *plan.OverSpec, env *expr.Env) error {
	_, err := overTimeShapeOf(spec, env)
	return err
}

// overTimeShapeOf is CheckOverTime, with what a partition keeps.
func overTimeShapeOf(spec *plan.OverSpec, env *expr.Env) (overTimeShape, error) {
	var sh overTimeShape
	hint := "Use CREATE MATERIALIZED VIEW, whose rows may change, or EMIT CHANGES."
	refuse := func(format string, args ...any) (overTimeShape, error) {
		return sh, pgerror.NotSupported(format, args...).WithHint("%s", hint)
	}
	if len(spec.Order) == 0 || spec.Order[0].Desc || spec.Order[0].NullsFirst {
		hint = "Order by the event time first, ascending (NULLS LAST): a row's values are final once the watermark passes its time. Or use CREATE MATERIALIZED VIEW."
		return refuse("window functions into a stream without its event time first in ORDER BY, ascending")
	}
	fr := spec.Frame
	// preceding takes a bound n rows before the current one: the
	// partition keeps n rows
	preceding := func(b plan.FrameBound) error {
		if b.RangeOffset() {
			sh.rng = true
			return nil
		}
		if fr.Mode != plan.FrameRows {
			return pgerror.NotSupported("a %s frame with an offset into a stream", fr.Mode).WithHint("%s", hint)
		}
		if b.Offset > maxOverKeep {
			return pgerror.NotSupported("a frame reaching more than %d rows before the current row into a stream", maxOverKeep).WithHint("%s", hint)
		}
		sh.keep = max(sh.keep, int(b.Offset))
		return nil
	}
	switch fr.End.Kind {
	case plan.BoundCurrentRow:
	case plan.BoundPreceding:
		if err := preceding(fr.End); err != nil {
			return sh, err
		}
	default:
		hint = "End the frame at the current row (ROWS BETWEEN n PRECEDING AND CURRENT ROW), or use CREATE MATERIALIZED VIEW."
		return refuse("a frame that ends after the current row into a stream (its values would wait for rows to come)")
	}
	switch fr.Start.Kind {
	case plan.BoundUnboundedPreceding:
		sh.running = true
	case plan.BoundCurrentRow:
	case plan.BoundPreceding:
		if err := preceding(fr.Start); err != nil {
			return sh, err
		}
	default:
		return refuse("a frame that starts after the current row into a stream")
	}
	if sh.running && fr.End.RangeOffset() {
		for i := range spec.Funcs {
			if IsAggregate(spec.Funcs[i].Name) {
				hint = "End the frame at the current row, or start it at an offset (RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND INTERVAL '1' MINUTE PRECEDING)."
				return refuse("aggregates over a frame from the partition's start to an offset before the current row into a stream")
			}
		}
	}
	// constant is a function's constant argument, from least to
	// maxOverKeep (NULL: 0, the function's value is NULL)
	constant := func(e *expr.Expr, what string, least int64) (int, error) {
		if len(e.Columns()) > 0 {
			return 0, pgerror.NotSupported("%s that is not a constant into a stream", what).WithHint("%s", hint)
		}
		v, err := constantArg(e, env)
		if err != nil || v.IsNull() {
			return 0, err
		}
		if v.I < least || v.I > maxOverKeep {
			return 0, pgerror.NotSupported("%s other than %d to %d into a stream", what, least, maxOverKeep).WithHint("%s", hint)
		}
		return int(v.I), nil
	}
	for i := range spec.Funcs {
		f := &spec.Funcs[i]
		switch f.Name {
		case "row_number", "rank", "dense_rank", "last_value":
		case "lag":
			n := 1
			if len(f.Args) > 1 {
				var err error
				if n, err = constant(f.Args[1], "lag's offset", 0); err != nil {
					return sh, err
				}
			}
			sh.keep = max(sh.keep, n)
		case "first_value":
			if sh.running {
				sh.head = max(sh.head, 1)
			}
		case "nth_value":
			if len(f.Args) > 1 && (sh.running || len(f.Args[1].Columns()) == 0) {
				n, err := constant(f.Args[1], "nth_value's position", 1)
				if err != nil {
					return sh, err
				}
				if sh.running {
					sh.head = max(sh.head, n)
				}
			}
		case "lead", "ntile", "percent_rank", "cume_dist":
			hint = "Use lag, the rankings or aggregates over the rows so far; or CREATE MATERIALIZED VIEW."
			return refuse("%s into a stream (its value depends on rows after the current one)", f.Name)
		default:
			if !IsAggregate(f.Name) {
				return sh, pgerror.New(pgerror.UndefinedFunction, "window function %s does not exist", f.Name)
			}
			if !sh.running {
				continue
			}
			agg, err := windowAgg(f, env)
			if err != nil {
				return sh, err
			}
			if _, err := agg.New().LoadState(agg.New().AppendState(nil)); err != nil || agg.Grows {
				hint = "Give it a frame of n preceding rows (ROWS BETWEEN n PRECEDING AND CURRENT ROW), or use CREATE MATERIALIZED VIEW."
				return refuse("%s over a frame from the partition's start into a stream (it would keep every row)", f.Name)
			}
		}
	}
	return sh, nil
}

// NewOverTime compiles a stream's window step in event time; timeCol is
// the input column of its first ORDER BY term.
func NewOverTime(spec *plan.OverSpec, width, timeCol int, timeType types.Type, env *expr.Env, onErr RowError) (*OverTime, error) {
	sh, err := overTimeShapeOf(spec, env)
	if err != nil {
		return nil, err
	}
	w, err := NewWindowFuncs(spec, env, onErr, nil)
	if err != nil {
		return nil, err
	}
	o := &OverTime{w: w, keep: sh.keep, head: sh.head, running: sh.running}
	for j := range spec.Funcs {
		o.framed = o.framed || usesFrame(&spec.Funcs[j])
	}
	o.timedRows = timedRows{PartitionBy: w.part, TimeCol: timeCol, Width: width, TimeType: timeType, OnError: onErr}
	return o, nil
}

// Finish implements Operator: a bounded input's end passes every row.
func (o *OverTime) Finish(emit Emit) error { return o.OnWatermark(math.MaxInt64, emit) }

// Process implements Operator: each row waits under its time and
// partition, with its ORDER BY and argument values, evaluated now (a row
// whose values fail is a poison row, as in any step), in memory until
// the next checkpoint.
func (o *OverTime) Process(b *Batch, _ Emit) error {
	if err := o.load(); err != nil {
		return err
	}
	for i, row := range b.Rows {
		key, ok, err := o.place(b, i, "a stream's window functions got a row whose time is NULL: its values would never be final", "row time")
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		// the partition key is the state key's (place evaluated it)
		r, err := o.w.rowOf(row, false)
		if err != nil {
			if err := o.OnError(b, i, err); err != nil {
				return err
			}
			continue
		}
		r.row = slices.Clone(row[:o.Width])
		if o.wait == nil {
			o.wait = map[string][]winRow{}
		}
		k := string(key)
		rows, ok := o.wait[k]
		if !ok {
			if n := len(o.pending); n > 0 && o.pending[n-1] > k {
				o.unsorted = true
			}
			o.pending = append(o.pending, k)
		}
		o.wait[k] = append(rows, r)
	}
	return nil
}

func (o *OverTime) appendWinRow(buf []byte, r winRow) []byte {
	buf = types.AppendValues(types.AppendValues(buf, r.row), r.ord)
	for _, a := range r.args {
		buf = types.AppendValues(buf, a)
	}
	return buf
}

func (o *OverTime) readWinRow(buf []byte) (winRow, []byte, error) {
	var r winRow
	var err error
	if r.row, buf, err = types.DecodeValues(buf, o.Width); err != nil {
		return r, nil, err
	}
	if r.ord, buf, err = types.DecodeValues(buf, len(o.w.ord)); err != nil {
		return r, nil, err
	}
	r.args = make([]types.Row, len(o.w.args))
	for j, evs := range o.w.args {
		if r.args[j], buf, err = types.DecodeValues(buf, len(evs)); err != nil {
			return r, nil, err
		}
	}
	return r, buf, nil
}

// readWinRows reads n rows, or all of buf when n < 0.
func (o *OverTime) readWinRows(buf []byte, n int) ([]winRow, []byte, error) {
	var rows []winRow
	for i := 0; n < 0 && len(buf) > 0 || i < n; i++ {
		r, rest, err := o.readWinRow(buf)
		if err != nil {
			return nil, nil, err
		}
		rows, buf = append(rows, r), rest
	}
	return rows, buf, nil
}

// part loads the partition of key pk.
func (o *OverTime) part(pk []byte) (*overTimePart, error) {
	p := &overTimePart{accs: make([]Accumulator, len(o.w.aggs))}
	if o.running {
		for j, agg := range o.w.aggs {
			if agg != nil {
				p.accs[j] = agg.New()
			}
		}
	}
	if !o.running {
		for j, agg := range o.w.aggs {
			if f := &o.w.Spec.Funcs[j]; agg != nil && slides(f) {
				if p.slides == nil {
					p.slides = make([]*slider, len(o.w.aggs))
				}
				p.slides[j] = &slider{agg: agg, star: f.Star, j: j}
			}
		}
	}
	o.pkey = append(append(o.pkey[:0], overTimePartKey), pk...)
	v, ok, err := o.kv.Get(o.pkey)
	if err != nil || !ok {
		return p, err
	}
	var n [5]uint64
	for i := range n {
		var k int
		if n[i], k = binary.Uvarint(v); k <= 0 {
			return nil, ErrBadState
		}
		v = v[k:]
	}
	p.rows, p.groups, p.folded = int64(n[0]), int64(n[1]), int64(n[2])
	if p.head, v, err = o.readWinRows(v, int(n[3])); err != nil {
		return nil, err
	}
	if p.last, v, err = o.readWinRows(v, int(n[4])); err != nil {
		return nil, err
	}
	for _, acc := range p.accs {
		if acc != nil {
			if v, err = acc.LoadState(v); err != nil {
				return nil, err
			}
		}
	}
	if o.w.rng != nil {
		var cut types.Row
		if cut, v, err = types.DecodeValues(v, 1); err != nil {
			return nil, err
		}
		p.cut = cut[0]
	}
	if len(v) > 0 {
		return nil, ErrBadState
	}
	return p, nil
}

// storePart writes the partition of key pk.
func (o *OverTime) storePart(pk []byte, p *overTimePart) error {
	buf := o.buf[:0]
	last := p.last
	if o.w.rng == nil {
		last = last[max(0, len(last)-o.keep):]
	}
	for _, n := range []int64{p.rows, p.groups, p.folded, int64(len(p.head)), int64(len(last))} {
		buf = binary.AppendUvarint(buf, uint64(n))
	}
	for _, r := range p.head {
		buf = o.appendWinRow(buf, r)
	}
	for _, r := range last {
		buf = o.appendWinRow(buf, r)
	}
	for _, acc := range p.accs {
		if acc != nil {
			buf = acc.AppendState(buf)
		}
	}
	if o.w.rng != nil {
		buf = types.AppendValues(buf, types.Row{p.cut})
	}
	o.buf = buf
	return o.kv.Set(append([]byte{overTimePartKey}, pk...), buf)
}

// OnWatermark implements Stateful: the rows at or below wm come out, in
// time order, each partition's computed on from what it kept.
func (o *OverTime) OnWatermark(wm int64, emit Emit) error {
	hi, moved, err := o.advance(wm)
	if err != nil || !moved {
		return err
	}
	o.out.Reset()
	// the keys below hi: those the KV holds (rows that waited at a
	// checkpoint), and those of rows placed since, merged in key order
	var stored []string
	var values [][]byte
	err = o.kv.Scan([]byte{timedData}, hi, func(key, value []byte) error {
		stored, values = append(stored, string(key)), append(values, append([]byte(nil), value...))
		return nil
	})
	if err != nil {
		return err
	}
	if o.unsorted {
		slices.Sort(o.pending)
		o.unsorted = false
	}
	n, _ := slices.BinarySearch(o.pending, string(hi))
	placed := o.pending[:n]
	if o.parts == nil {
		o.parts = map[string]*overTimePart{}
	}
	order := o.w.Spec.Order
	for i, j := 0, 0; i < len(stored) || j < len(placed); {
		var key string
		var rows []winRow
		switch {
		case j == len(placed) || i < len(stored) && stored[i] <= placed[j]:
			key = stored[i]
			if rows, _, err = o.readWinRows(values[i], -1); err != nil {
				return err
			}
			if err := o.kv.Delete([]byte(key)); err != nil {
				return err
			}
			i++
			if j < len(placed) && placed[j] == key {
				j++
				rows = append(rows, o.wait[key]...)
			}
		default:
			key = placed[j]
			rows = o.wait[key]
			j++
		}
		delete(o.wait, key)
		pk := key[9:]
		p, ok := o.parts[pk]
		if !ok {
			if p, err = o.part([]byte(pk)); err != nil {
				return err
			}
			o.parts[pk] = p
		}
		slices.SortStableFunc(rows, func(x, y winRow) int { return CompareRows(order, x.ord, y.ord) })
		if err := o.compute(p, rows); err != nil {
			return err
		}
	}
	o.pending = append(o.pending[:0], o.pending[n:]...)
	if err := o.saveWatermark(); err != nil {
		return err
	}
	if len(o.out.Rows) == 0 {
		return nil
	}
	return emit(&o.out)
}

// compute puts out the rows of one time of partition p (fresh, in
// order), with their values, and moves p on past them. Rows are numbered
// across the partition: fresh[i] is row p.rows + i.
func (o *OverTime) compute(p *overTimePart, fresh []winRow) error {
	spec := o.w.Spec
	fr := &spec.Frame
	n0 := p.rows
	base := n0 - int64(len(p.last)) // the number of p.last[0]
	at := func(x int64) *winRow {
		switch {
		case x >= n0 && x < n0+int64(len(fresh)):
			return &fresh[x-n0]
		case x >= base && x < n0:
			return &p.last[x-base]
		case x >= 0 && x < int64(len(p.head)):
			return &p.head[x]
		}
		return nil
	}
	missing := errNotKept
	var gStart, gEnd int                  // the current peer group in fresh
	unfolded := make([]error, len(fresh)) // rows whose values failed to fold
	groups := p.groups
	prev := [2]int64{-1, -1} // the previous row's frame
	var prevVals []types.Value
	for i := range fresh {
		if i == gEnd {
			gStart, gEnd = i, i+1
			for gEnd < len(fresh) && CompareRows(spec.Order, fresh[gStart].ord, fresh[gEnd].ord) == 0 {
				gEnd++
			}
			groups++
		}
		x := n0 + int64(i)
		var s, e int64
		switch fr.Start.Kind {
		case plan.BoundUnboundedPreceding:
			s = 0
		case plan.BoundPreceding:
			s = max(0, x-fr.Start.Offset)
		default:
			s = x
			if fr.Mode != plan.FrameRows {
				s = n0 + int64(gStart)
			}
		}
		switch fr.End.Kind {
		case plan.BoundPreceding:
			e = max(0, x-fr.End.Offset+1)
		default:
			e = x + 1
			if fr.Mode != plan.FrameRows {
				e = n0 + int64(gEnd)
			}
		}
		var bad error
		if rng := o.w.rng; rng != nil {
			// a RANGE offset's bound: the rows kept are in time order
			// (never NULL), numbered from base
			t := fresh[i].ord[0]
			kept := int(n0 - base + int64(len(fresh)))
			ord := func(k int) types.Value { return at(base + int64(k)).ord[0] }
			// a bound that lands on the first row kept may belong among
			// rows let go past maxOverRange (those up to p.cut): the
			// frame cannot be found
			cutOff := func(b *rangeLimit) bool {
				if p.cut.IsNull() {
					return false
				}
				lim, inf, err := rng.limit(b, t)
				return err == nil && (inf < 0 || inf == 0 && types.Compare(p.cut, lim) >= 0)
			}
			var err error
			if rng.start != nil {
				k, err1 := rng.search(0, kept, ord, rng.start, t, false)
				s, err = base+int64(k), err1
				if err == nil && s == base && o.framed && cutOff(rng.start) {
					err = errRangeCut()
				}
			}
			if rng.end != nil && err == nil {
				k, err1 := rng.search(0, kept, ord, rng.end, t, true)
				e, err = base+int64(k), err1
				// (or its last row, e-1, was let go: last_value reads it)
				if err == nil && e == base && o.framed && (s < e || cutOff(rng.end)) && !p.cut.IsNull() {
					err = errRangeCut()
				}
			}
			if err != nil {
				bad = err
				s, e = n0+int64(i), n0+int64(i) // an empty frame: the row is poison
			}
		}
		e = max(e, s)
		bad = cmp.Or(bad, unfolded[i])
		if o.running {
			// a row whose value fails to fold is left out of the
			// aggregates: reported now if it is out already (a frame
			// ending before the current row), else in its turn
			err := o.fold(p, e, at, func(y int64, err error) error {
				if k := int(y - n0); k >= i {
					if unfolded[k] == nil {
						unfolded[k] = err
					}
					return nil
				}
				return o.OnError(&Batch{Rows: []types.Row{at(y).row}}, 0, err)
			})
			if err == errMissingRow {
				return missing
			} else if err != nil {
				return err
			}
			bad = cmp.Or(bad, unfolded[i])
		}
		out := make(types.Row, 0, o.Width+len(spec.Funcs))
		out = append(out, fresh[i].row...)
		for j := range spec.Funcs {
			f := &spec.Funcs[j]
			arg := func(r *winRow, k int) types.Value { return r.args[j][k] }
			v := types.NullValue
			switch f.Name {
			case "row_number":
				v = types.NewInt8(x + 1)
			case "rank":
				v = types.NewInt8(n0 + int64(gStart) + 1)
			case "dense_rank":
				v = types.NewInt8(groups)
			case "lag":
				off := types.NewInt8(1)
				if len(f.Args) > 1 {
					off = arg(&fresh[i], 1)
				}
				switch t := x - off.I; {
				case off.IsNull():
				case t >= 0:
					r := at(t)
					if r == nil {
						return missing
					}
					v = arg(r, 0)
				case len(f.Args) > 2:
					v = arg(&fresh[i], 2)
				}
			case "first_value", "last_value", "nth_value":
				t := s
				switch f.Name {
				case "last_value":
					t = e - 1
				case "nth_value":
					k := arg(&fresh[i], 1)
					if k.IsNull() {
						t = -1
						break
					}
					if k.I <= 0 {
						bad = pgerror.New(pgerror.InvalidArgumentForNthValue, "argument of nth_value must be greater than zero")
					}
					t = s + k.I - 1
				}
				if t >= s && t < e {
					r := at(t)
					if r == nil {
						return missing
					}
					v = arg(r, 0)
				}
			default:
				switch {
				case o.running:
					v = p.accs[j].Result()
				case prev == [2]int64{s, e}:
					v = prevVals[j]
				default:
					if p.slides != nil && p.slides[j] != nil && e-s >= minSlideRows {
						var ok bool
						var err error
						if v, ok, err = p.slides[j].value(s, e, at); err == errMissingRow {
							return missing
						} else if ok {
							break
						}
					}
					var err error
					if v, err = o.aggregate(j, s, e, at); err == errMissingRow {
						return missing
					} else if err != nil {
						bad = err
					}
				}
			}
			out = append(out, v)
		}
		prev, prevVals = [2]int64{s, e}, out[o.Width:]
		if bad != nil {
			prev = [2]int64{-1, -1}
			if err := o.OnError(&Batch{Rows: []types.Row{fresh[i].row}}, 0, bad); err != nil {
				return err
			}
			continue
		}
		o.out.Rows = append(o.out.Rows, out)
	}
	p.rows += int64(len(fresh))
	p.groups = groups
	// keep the partition's first head rows and last keep rows (copies:
	// fresh goes)
	for x := int64(len(p.head)); x < int64(o.head) && x < p.rows; x++ {
		p.head = append(p.head, *at(x))
	}
	// the last keep rows, trimmed once they are twice as many (a copy per
	// keep rows, not per time); storePart writes keep of them
	p.last = append(p.last, fresh...)
	if o.w.rng != nil {
		o.trimRange(p)
	} else if len(p.last) > 2*o.keep+16 {
		p.last = append(p.last[:0], p.last[len(p.last)-o.keep:]...) // copy handles the overlap
	}
	return nil
}

// trimRange lets a partition's rows go that no later row's RANGE frame
// reaches (later rows come at the newest time or after it), keeping the
// last keep rows too (lag), and at most maxOverRange rows.
func (o *OverTime) trimRange(p *overTimePart) {
	rng := o.w.rng
	n := len(p.last)
	if n == 0 {
		return
	}
	from := max(0, n-o.keep)
	if !o.framed {
		// no function reads the frame: lag's rows are all it needs
		p.last = p.last[from:]
		return
	}
	newest := p.last[n-1].ord[0]
	ord := func(k int) types.Value { return p.last[k].ord[0] }
	// (a limit in error keeps everything: its rows are poison anyway)
	if rng.start != nil {
		k, _ := rng.search(0, n, ord, rng.start, newest, false)
		from = min(from, k)
	}
	if rng.end != nil {
		// last_value's row, the last before the frame's end
		k, _ := rng.search(0, n, ord, rng.end, newest, true)
		from = min(from, max(0, k-1))
	}
	if n-from > maxOverRange {
		from = n - maxOverRange
		p.cut = p.last[from-1].ord[0]
	}
	// a slice, not a copy: append lets the rows before it go when it
	// grows the array
	p.last = p.last[from:]
}

// errRangeCut is a RANGE frame reaching rows its partition let go past
// maxOverRange.
func errRangeCut() error {
	return pgerror.New(pgerror.ProgramLimitExceeded, "a stream's RANGE frame reaches more than %d rows of its partition", maxOverRange).
		WithHint("Give the frame a smaller offset, or partition the rows further.")
}

// errNotKept is a frame or lag reaching a row its partition did not keep,
// which CheckOverTime's bounds rule out.
var errNotKept = pgerror.New(pgerror.Internal, "operators: a stream's window function reads a row its partition did not keep")

// errMissingRow is an aggregate's frame reaching a row its partition did
// not keep (compute reports it as an internal error).
var errMissingRow = pgerror.New(pgerror.Internal, "operators: missing row")

// fold folds the rows up to e into the partition's accumulators, which
// hold its rows from its start: the frames of a running aggregate only
// grow. A row whose value fails to fold (an accumulator refusing it
// leaves itself as it was) goes to failed, and the rest go on without
// it.
func (o *OverTime) fold(p *overTimePart, e int64, at func(int64) *winRow, failed func(int64, error) error) error {
	if !slices.ContainsFunc(p.accs, func(a Accumulator) bool { return a != nil }) {
		// no aggregates (a frame from the start for first_value, say):
		// nothing to fold, and the rows need not be kept
		p.folded = max(p.folded, e)
		return nil
	}
	for ; p.folded < e; p.folded++ {
		r := at(p.folded)
		if r == nil {
			return errMissingRow
		}
		for j, acc := range p.accs {
			if acc == nil {
				continue
			}
			v := types.NullValue
			if !o.w.Spec.Funcs[j].Star {
				v = r.args[j][0]
			}
			if err := acc.Add(v); err != nil {
				if err := failed(p.folded, err); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// aggregate is aggregate function j over the frame [s, e) folded afresh
// (the previous row's value when its frame was the same).
func (o *OverTime) aggregate(j int, s, e int64, at func(int64) *winRow) (types.Value, error) {
	acc := o.w.aggs[j].New()
	for x := s; x < e; x++ {
		r := at(x)
		if r == nil {
			return types.NullValue, errMissingRow
		}
		v := types.NullValue
		if !o.w.Spec.Funcs[j].Star {
			v = r.args[j][0]
		}
		if err := acc.Add(v); err != nil {
			return types.NullValue, err
		}
	}
	return acc.Result(), nil
}
