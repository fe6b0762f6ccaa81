package operators

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// errStopScan ends a KV scan early.
var errStopScan = errors.New("stop scan")

// aggEntry is one group's aggregation state, loaded from the KV on first
// touch in an epoch and written back at checkpoints.
type aggEntry struct {
	key   []byte
	start int64 // window bounds (unused by unwindowed groups)
	end   int64
	group types.Row
	accs  []Accumulator
	n     int64 // rows in the group, over signed rows (aggState.sign)
	// emitted: the group shows in the changes (its last change row was an
	// insert or an update, not a delete): the next one is an update.
	emitted bool
	// old is the row the group showed before this batch touched it, kept
	// when a HAVING may turn its change into a delete of that row, over
	// signed rows, and when updates carry their old rows (before).
	old     types.Row
	dirty   bool
	touched bool // in aggState.touched
	stored  bool // the KV holds a value for key (loaded from it or flushed to it)
}

// maxCachedEntries bounds the entries an aggState keeps decoded between
// epochs; past it, the cache is dropped after a checkpoint (state beyond
// it is read from the KV again).
var maxCachedEntries = 200_000 // a variable for tests

// DefaultGroupCacheBytes bounds the encoded entries a GroupAggregate
// keeps in memory between epochs (per partition) unless Resources say
// otherwise; past it, half are evicted and read from the KV again when
// their keys come back. About 45 bytes per group of count and sum over a
// BIGINT key: 64 MiB holds 1.4M groups.
const DefaultGroupCacheBytes = 64 << 20

var coldCacheBytes = DefaultGroupCacheBytes // a variable for tests

// loadBelowBytes is the estimated size under which an aggState tries to
// load its whole state at its first bind: scanning and decoding a state
// that turns out larger than maxCachedEntries only delays the first epoch
// after a restart (about 0.6 s per 250k-key partition).
const loadBelowBytes = 8 << 20

// Sizer is a KV that can estimate its size cheaply.
type Sizer interface {
	// ApproxSize estimates the bytes the KV holds (it may count only
	// what is on disk).
	ApproxSize() int64
}

// aggState caches the entries it touches over a KV. The cache outlives an
// epoch: a committed epoch leaves the entries equal to their state in the
// KV, and an aborted one rebuilds the operator.
type aggState struct {
	aggs []AggCall
	// having, when set, decides per change whether the group shows: a
	// group that stops passing it is deleted, one that starts is inserted.
	having expr.Eval
	// window and timeType shape the rows it outputs (windowed: group
	// values, window_start, window_end, aggregates).
	window   bool
	timeType types.Type
	onErr    RowError // where a HAVING that fails to evaluate is reported
	// sign, when not 0, is the input column holding each row's sign (the
	// rows of a view's changes, Changelog): a row of sign -1 is taken back
	// out of its group, and a group all of whose rows left is deleted
	// (the one group of an aggregate without GROUP BY stays, as over no
	// rows). The accumulators are signedAccs, and each entry counts its
	// rows (n).
	sign   int
	ngroup int
	// before: each update is emitted after the row it replaces
	// (OpUpdateBefore; BeforeEmitter).
	before bool
	// once: each group's row is emitted when it first shows, and never
	// again (plan.Step.Once: a stream's DISTINCT; no aggregates, no sign)
	once    bool
	kv      KV
	entries map[string]*aggEntry
	touched []*aggEntry // in first-touch order, for change emission
	buf     []byte
	args    []types.Value
	onNew   func(e *aggEntry) // called for an entry new in the cache
	// complete says the cache holds every key of the KV, so a key not in
	// it is new and needs no read: true after the first bind found at
	// most maxCachedEntries keys (and loaded them), false once the cache
	// is dropped.
	complete bool
	bound    bool
	// kvKeys counts the keys the KV holds, when counted: from a state
	// loaded whole (or empty) at the first bind on. A dropped cache is
	// complete again once its stored entries number kvKeys (the windows
	// read back from the KV have closed, say).
	kvKeys  int
	counted bool
	// cold, when set, holds the entries not touched in the current epoch
	// encoded (coldCache), and entries holds only those touched in it:
	// at each bind the last epoch's entries move there. Without it,
	// entries keeps everything decoded, and is dropped whole past
	// maxCachedEntries.
	cold *coldCache
	// seen, when set, has every key the KV holds (the state started
	// empty or was loaded whole, and only this operator writes it): a
	// key it has not seen is new, without a get. Only with cold.
	seen *keyFilter
}

func (s *aggState) bind(kv KV) {
	s.kv = kv
	s.touched = s.touched[:0]
	if !s.bound {
		s.bound = true
		s.entries = map[string]*aggEntry{}
		if big, ok := s.kv.(Sizer); ok && big.ApproxSize() > loadBelowBytes {
			return // too large to cache whole: read keys as they come
		}
		if s.cold != nil {
			s.seen = newKeyFilter()
		}
		s.complete = s.load() == nil
		s.counted, s.kvKeys = s.complete, len(s.entries)
		if s.cold != nil {
			s.kvKeys = s.cold.len()
		}
		if !s.complete {
			s.entries = map[string]*aggEntry{}
			s.seen = nil
			if s.cold != nil {
				s.cold.reset()
			}
		}
		return
	}
	if s.cold != nil {
		s.demote()
	} else if len(s.entries) > maxCachedEntries {
		s.entries = map[string]*aggEntry{}
		s.complete = false
		return
	}
	if !s.complete && s.counted {
		stored := 0
		for _, e := range s.entries {
			if e.stored {
				stored++
			}
		}
		if s.cold != nil {
			stored += s.cold.len()
		}
		s.complete = stored == s.kvKeys
	}
}

// demote moves the entries of the epoch just committed into the cold
// cache, and keeps that within its limit. An entry never stored (made
// for a row that then failed) goes; a dirty one (not flushed, which a
// committed epoch does not leave) stays decoded.
func (s *aggState) demote() {
	for k, e := range s.entries {
		if e.dirty {
			continue
		}
		if e.stored && s.cold.put(e.key, s.encode(e)) {
			s.complete = false
		}
		delete(s.entries, k)
	}
	// The key filter counts against the cold cache's limit, up to three
	// quarters of it; a larger one is dropped (keys then cost a get).
	extra := 0
	if s.seen != nil {
		if extra = s.seen.size(); extra > s.cold.limit/4*3 {
			s.seen, extra = nil, 0
		}
	}
	if s.cold.tidy(extra) {
		s.complete = false
	}
}

// errTooMany stops loading a state too large to cache whole.
var errTooMany = errors.New("state too large to cache")

// load decodes the whole state into the cache, unless it holds more than
// maxCachedEntries keys (or more than the cold cache's limit of bytes).
func (s *aggState) load() error {
	return s.kv.Scan(nil, nil, func(key, value []byte) error {
		if s.cold != nil {
			if s.cold.live() >= s.cold.limit {
				return errTooMany
			}
			if s.cold.put(key, value) {
				return errTooMany // a collision: not every key is cached
			}
			s.seen.add(key)
			return nil
		}
		if len(s.entries) >= maxCachedEntries {
			return errTooMany
		}
		e := &aggEntry{key: append([]byte(nil), key...), stored: true}
		if err := s.decode(e, value); err != nil {
			return err
		}
		s.entries[string(e.key)] = e
		return nil
	})
}

func (s *aggState) newAccs() []Accumulator {
	accs := make([]Accumulator, len(s.aggs))
	for i := range s.aggs {
		switch c := &s.aggs[i]; {
		case c.Order != nil || c.Func.Grows:
			accs[i] = c.stateAcc() // a listAcc, signed rows or not
		case s.sign != 0 && bagged(c.Func.Name, c.Distinct):
			accs[i] = &bagAcc{f: c.Func}
		case s.sign != 0 && (isVarAgg(c.Func.Name) && c.Func.Arg.IsFloat() || isRegrAgg(c.Func.Name)):
			// float arithmetic cannot take a value back out exactly:
			// the variance is computed from the group's values
			accs[i] = &bagAcc{f: c.Func, counted: true}
		case s.sign != 0:
			accs[i] = &signedAcc{inner: c.newAcc()}
		default:
			accs[i] = c.newAcc()
		}
	}
	return accs
}

// get returns the entry for key, loading it or creating it with group.
func (s *aggState) get(key []byte, group types.Row, start, end int64) (*aggEntry, error) {
	if e, ok := s.entries[string(key)]; ok {
		return e, nil
	}
	e := &aggEntry{key: append([]byte(nil), key...), start: start, end: end}
	var v []byte
	var ok bool
	if s.cold != nil {
		v, ok = s.cold.take(key)
	}
	if !ok && !s.complete && (s.seen == nil || s.seen.mayHave(key)) {
		var err error
		if v, ok, err = s.kv.Get(key); err != nil {
			return nil, err
		}
	}
	if ok {
		if err := s.decode(e, v); err != nil {
			return nil, err
		}
		e.stored = true
	} else {
		e.group = types.CloneRow(group)
		e.accs = s.newAccs()
	}
	s.entries[string(e.key)] = e
	if s.onNew != nil {
		s.onNew(e)
	}
	return e, nil
}

func (s *aggState) encode(e *aggEntry) []byte {
	b := s.buf[:0]
	b = binary.AppendVarint(b, e.start)
	b = binary.AppendVarint(b, e.end)
	b = appendBool(b, e.emitted)
	b = types.AppendValues(b, e.group)
	for _, a := range e.accs {
		b = a.AppendState(b)
	}
	if s.sign != 0 {
		b = binary.AppendVarint(b, e.n)
	}
	s.buf = b
	return b
}

func (s *aggState) decode(e *aggEntry, v []byte) error {
	var err error
	if e.start, v, err = readVarint(v); err != nil {
		return err
	}
	if e.end, v, err = readVarint(v); err != nil {
		return err
	}
	if e.emitted, v, err = readBool(v); err != nil {
		return err
	}
	if e.group, v, err = types.DecodeValues(v, s.ngroup); err != nil {
		return err
	}
	e.accs = s.newAccs()
	for _, a := range e.accs {
		if v, err = a.LoadState(v); err != nil {
			return err
		}
	}
	if s.sign != 0 {
		e.n, _, err = readVarint(v)
	}
	return err
}

// forget drops a closed window's (or pane's) entry from the cache and,
// when the KV holds it, from the KV.
func (s *aggState) forget(key []byte, stored bool) error {
	delete(s.entries, string(key))
	if !stored {
		return nil
	}
	if err := s.kv.Delete(key); err != nil {
		return err
	}
	s.kvKeys--
	return nil
}

// flush writes dirty entries to the KV.
func (s *aggState) flush() error {
	for _, e := range s.entries {
		if e.dirty {
			if err := s.kv.Set(e.key, s.encode(e)); err != nil {
				return err
			}
			if !e.stored {
				s.kvKeys++
				if s.seen != nil {
					s.seen.add(e.key)
				}
			}
			e.dirty, e.stored = false, true
		}
	}
	return nil
}

// add folds row into e. Arguments are evaluated before any accumulator
// changes, so a poison row leaves the group as it was.
func (s *aggState) add(e *aggEntry, row types.Row) error {
	if cap(s.args) < len(s.aggs) {
		s.args = make([]types.Value, len(s.aggs))
	}
	args := s.args[:len(s.aggs)]
	for j := range s.aggs {
		args[j] = types.NullValue
		if a := s.aggs[j].Arg; a != nil {
			var err error
			if args[j], err = a(row); err != nil {
				return err
			}
		}
	}
	for j, v := range args {
		if l, ok := e.accs[j].(*listAcc); ok {
			if err := l.check(v); err != nil {
				return err
			}
		}
	}
	if (s.having != nil || s.sign != 0 || s.before) && e.emitted && !e.touched && e.old == nil {
		e.old = s.row(e, s.window, s.timeType)
	}
	if s.sign != 0 && row[s.sign].I < 0 {
		for j, v := range args {
			if err := e.accs[j].(retractor).retract(v); err != nil {
				return err
			}
		}
		e.n--
		e.dirty = true
		return nil
	}
	for j, v := range args {
		if err := e.accs[j].Add(v); err != nil {
			return err
		}
	}
	e.n++
	e.dirty = true
	return nil
}

func (s *aggState) touch(e *aggEntry) {
	if !e.touched {
		e.touched = true
		s.touched = append(s.touched, e)
	}
}

// row renders an entry as output: group values, [window_start,
// window_end,] aggregate results.
func (s *aggState) row(e *aggEntry, window bool, tt types.Type) types.Row {
	out := make(types.Row, 0, len(e.group)+2+len(e.accs))
	out = append(out, e.group...)
	if window {
		out = append(out, types.NewTimestamp(tt, e.start), types.NewTimestamp(tt, e.end))
	}
	for _, a := range e.accs {
		out = append(out, a.Result())
	}
	return out
}

// emitChanges emits one upsert per entry touched since the last call.
func (s *aggState) emitChanges(emit Emit, window bool, tt types.Type) error {
	if len(s.touched) == 0 {
		return nil
	}
	out := &Batch{}
	for _, e := range s.touched {
		row := s.row(e, window, tt)
		old := e.old
		e.old, e.dirty, e.touched = nil, true, false
		if s.sign != 0 && e.n <= 0 && s.ngroup > 0 {
			// every row of the group left: so does the group
			if e.emitted {
				out.Rows = append(out.Rows, old)
				out.Ops = append(out.Ops, OpDelete)
			}
			if err := s.forget(e.key, e.stored); err != nil {
				return err
			}
			continue
		}
		if s.having != nil && !s.passes(row) {
			if e.emitted {
				e.emitted = false
				out.Rows = append(out.Rows, old)
				out.Ops = append(out.Ops, OpDelete)
			}
			continue
		}
		op := OpInsert
		if e.emitted {
			op = OpUpdate
			if s.before && old != nil {
				out.Rows = append(out.Rows, old)
				out.Ops = append(out.Ops, OpUpdateBefore)
			}
		}
		e.emitted = true
		out.Rows = append(out.Rows, row)
		out.Ops = append(out.Ops, op)
	}
	s.touched = s.touched[:0]
	return emit(out)
}

// passes evaluates HAVING over a group's output row.
func (s *aggState) passes(row types.Row) bool { return havingPasses(s.having, s.onErr, row) }

// havingPasses evaluates a HAVING condition over an aggregate's output
// row. A condition that cannot be evaluated (a division by zero) is
// reported as the row's error (to the pipeline's error stream, as a HAVING
// step after a window does) and counts as false: the group does not show.
func havingPasses(having expr.Eval, onErr RowError, row types.Row) bool {
	v, err := having(row)
	if err != nil {
		if onErr != nil {
			_ = onErr(&Batch{Rows: []types.Row{row}}, 0, err)
		}
		return false
	}
	return !v.IsNull() && v.Bool()
}

// WindowAggregate is the windowedAggregate step for TUMBLE and HOP
// windows. State key: window end, window start, group key — so closing
// the windows a watermark completes is one ordered range scan, and their
// state is deleted as they close. Output rows: group values,
// window_start, window_end, aggregate results; final rows when windows
// close, or (Changes) an upsert per update.
type WindowAggregate struct {
	Spec     plan.WindowSpec
	TimeCol  int
	TimeType types.Type
	GroupBy  []expr.Eval
	Changes  bool
	OnError  RowError

	st      aggState
	wm      int64
	windows [][2]int64
	key     []byte
	gvals   types.Row
	mem     bool // bound to an in-memory KV by itself (bounded query)
	// minEnd is at most the smallest window end in the state, so a
	// watermark below it closes nothing and needs no scan (MinInt64:
	// unknown, as after a restore).
	minEnd int64
	// While the cache holds the whole state (st.complete), the entries by
	// window end and their ends in order: closing windows reads neither
	// the KV nor the state it has not been given, and a window opened and
	// closed between two checkpoints never reaches the KV at all.
	// (byEnd is nil when there is no index.)
	byEnd map[int64][]*aggEntry
	ends  []int64
	// panes: a HOP whose size is a multiple of its slide, emitting on
	// window close, keeps one entry per slide-long pane and group (its
	// key and bounds are the pane's) instead of one per window: a row
	// updates one entry, not size/slide, and a window's row is its
	// panes' accumulators merged when it closes.
	panes bool
	pkey  []byte // a pane's state key, reused
}

// NewWindowAggregate makes the operator.
func NewWindowAggregate(spec plan.WindowSpec, timeCol int, timeType types.Type, groupBy []expr.Eval, aggs []AggCall, changes bool, onErr RowError) *WindowAggregate {
	w := &WindowAggregate{Spec: spec, TimeCol: timeCol, TimeType: timeType, GroupBy: groupBy, Changes: changes, OnError: onErr, wm: math.MinInt64, minEnd: math.MinInt64}
	w.panes = spec.Kind == "hop" && !changes && spec.Slide > 0 && spec.Size > spec.Slide && spec.Size%spec.Slide == 0
	w.st = aggState{aggs: aggs, ngroup: len(groupBy), window: true, timeType: timeType}
	w.st.onNew = func(e *aggEntry) {
		w.minEnd = min(w.minEnd, e.end)
		if w.byEnd != nil {
			w.index(e)
		}
	}
	w.gvals = make(types.Row, len(groupBy))
	return w
}

// Bind implements Stateful.
func (w *WindowAggregate) Bind(kv KV) {
	w.st.bind(kv)
	w.reindex()
}

func (w *WindowAggregate) ensureKV() {
	if w.st.kv == nil {
		w.st.bind(NewMemKV())
		w.mem = true
		w.reindex()
	}
}

// reindex builds the by-end index of a complete cache the first time it
// is bound, and drops it once the cache is not complete.
func (w *WindowAggregate) reindex() {
	switch {
	case !w.st.complete:
		w.byEnd, w.ends = nil, nil
	case w.byEnd == nil:
		w.byEnd, w.ends = map[int64][]*aggEntry{}, nil
		for _, e := range w.st.entries {
			w.index(e)
		}
	}
}

func (w *WindowAggregate) index(e *aggEntry) {
	list, ok := w.byEnd[e.end]
	if !ok {
		i, _ := slices.BinarySearch(w.ends, e.end)
		w.ends = slices.Insert(w.ends, i, e.end)
	}
	w.byEnd[e.end] = append(list, e)
}

// Watermark returns the operator's current watermark.
func (w *WindowAggregate) Watermark() int64 { return w.wm }

// SetWatermark restores the watermark after a restart.
func (w *WindowAggregate) SetWatermark(wm int64) { w.wm = wm }

// Process implements Operator.
func (w *WindowAggregate) Process(b *Batch, emit Emit) error {
	w.ensureKV()
rows:
	for i, row := range b.Rows {
		t := row[w.TimeCol]
		if t.IsNull() {
			if err := w.OnError(b, i, pgerror.New(pgerror.NullValueNotAllowed, "event time is NULL")); err != nil {
				return err
			}
			continue
		}
		gkey := w.key[:0]
		for j, g := range w.GroupBy {
			v, err := g(row)
			if err != nil {
				if err := w.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			w.gvals[j] = v
			gkey = types.AppendKey(gkey, v)
		}
		w.key = gkey
		if w.panes {
			// The pane's last window ends at its start + size.
			p := types.FloorDiv(t.I, w.Spec.Slide) * w.Spec.Slide
			if p+w.Spec.Size <= w.wm {
				if err := w.OnError(b, i, w.late(t.I)); err != nil {
					return err
				}
				continue
			}
			w.pkey = append(AppendInt64Key(AppendInt64Key(w.pkey[:0], p+w.Spec.Slide), p), gkey...) // get copies it
			e, err := w.st.get(w.pkey, w.gvals, p, p+w.Spec.Slide)
			if err != nil {
				return err
			}
			if err := w.st.add(e, row); err != nil {
				if err := w.OnError(b, i, err); err != nil {
					return err
				}
			}
			continue
		}
		w.windows = w.Spec.Windows(t.I, w.windows)
		open := 0
		for _, win := range w.windows {
			if win[1] <= w.wm {
				continue // closed
			}
			open++
			key := AppendInt64Key(AppendInt64Key(make([]byte, 0, 16+len(gkey)), win[1]), win[0])
			key = append(key, gkey...)
			e, err := w.st.get(key, w.gvals, win[0], win[1])
			if err != nil {
				return err
			}
			if err := w.st.add(e, row); err != nil {
				if err := w.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			if w.Changes {
				w.st.touch(e)
			}
		}
		if open == 0 {
			if err := w.OnError(b, i, w.late(t.I)); err != nil {
				return err
			}
		}
	}
	if w.Changes {
		return w.st.emitChanges(emit, true, w.TimeType)
	}
	return nil
}

// late is the error of a row whose every window has closed.
func (w *WindowAggregate) late(t int64) error {
	return fmt.Errorf("%w (event time %s, watermark %s)", ErrLate,
		types.NewTimestamp(w.TimeType, t).Text(), types.NewTimestamp(w.TimeType, w.wm).Text())
}

// EmitBefore implements BeforeEmitter (EMIT CHANGES windows update).
func (w *WindowAggregate) EmitBefore() { w.st.before = true }

// OnWatermark implements Stateful: windows ending at or before wm close.
func (w *WindowAggregate) OnWatermark(wm int64, emit Emit) error {
	w.ensureKV()
	if wm <= w.wm {
		return nil
	}
	prev := w.wm
	w.wm = wm
	if wm < w.minEnd {
		return nil // no window ends at or below wm
	}
	if w.panes {
		return w.closePanes(prev, wm, emit)
	}
	if w.byEnd != nil {
		return w.closeCached(wm, emit)
	}
	if err := w.st.flush(); err != nil {
		return err
	}
	var hi []byte // window ends <= wm: keys below AppendInt64Key(wm+1)
	if wm < math.MaxInt64 {
		hi = AppendInt64Key(nil, wm+1)
	}
	var closed [][]byte
	out := &Batch{}
	err := w.st.kv.Scan(nil, hi, func(key, value []byte) error {
		if readBE64(key[:8]) > wm {
			return nil
		}
		k := append([]byte(nil), key...)
		closed = append(closed, k)
		if !w.Changes {
			e := &aggEntry{}
			if err := w.st.decode(e, value); err != nil {
				return err
			}
			out.Rows = append(out.Rows, w.st.row(e, true, w.TimeType))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range closed {
		if err := w.st.forget(k, true); err != nil {
			return err
		}
	}
	// The smallest window end left: the first key at or above hi.
	w.minEnd = math.MaxInt64
	if hi != nil {
		if w.minEnd, err = w.firstEnd(hi); err != nil {
			return err
		}
	}
	if len(out.Rows) > 0 {
		return emit(out)
	}
	return nil
}

// firstEnd returns the window (or pane) end of the first state key at or
// above lo, MaxInt64 when there is none.
func (w *WindowAggregate) firstEnd(lo []byte) (int64, error) {
	end := int64(math.MaxInt64)
	err := w.st.kv.Scan(lo, nil, func(key, _ []byte) error {
		end = readBE64(key[:8])
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return 0, err
	}
	return end, nil
}

// closeCached closes the windows ending at or before wm from the indexed
// cache, in the order of their state keys (as a scan of the KV would).
// Only windows the KV holds are deleted from it.
func (w *WindowAggregate) closeCached(wm int64, emit Emit) error {
	n := 0
	var closing []*aggEntry
	for _, end := range w.ends {
		if end > wm {
			break
		}
		closing = append(closing, w.byEnd[end]...)
		delete(w.byEnd, end)
		n++
	}
	w.ends = w.ends[n:]
	w.minEnd = math.MaxInt64
	if len(w.ends) > 0 {
		w.minEnd = w.ends[0]
	}
	slices.SortFunc(closing, func(a, b *aggEntry) int { return bytes.Compare(a.key, b.key) })
	out := &Batch{}
	for _, e := range closing {
		if err := w.st.forget(e.key, e.stored); err != nil {
			return err
		}
		if !w.Changes && (e.dirty || e.stored) { // else made for a row that then failed: no state
			out.Rows = append(out.Rows, w.st.row(e, true, w.TimeType))
		}
	}
	if len(out.Rows) > 0 {
		return emit(out)
	}
	return nil
}

// closePanes emits the windows ending in (prev, wm] from their panes, in
// window end then group key order, and deletes the panes no window still
// open needs: those ending at or before wm - size + slide. The panes come
// from the by-end index of a complete cache, or else from a scan of the
// KV (after a flush).
func (w *WindowAggregate) closePanes(prev, wm int64, emit Emit) error {
	size, slide := w.Spec.Size, w.Spec.Slide
	dropTo := wm - size + slide // panes ending at or before it are done
	byEnd, ends := w.byEnd, w.ends
	if byEnd == nil {
		if err := w.st.flush(); err != nil {
			return err
		}
		var hi []byte
		if wm < math.MaxInt64 {
			hi = AppendInt64Key(nil, wm+1)
		}
		byEnd = map[int64][]*aggEntry{}
		err := w.st.kv.Scan(nil, hi, func(key, value []byte) error {
			e := &aggEntry{key: append([]byte(nil), key...), stored: true}
			if err := w.st.decode(e, value); err != nil {
				return err
			}
			if _, ok := byEnd[e.end]; !ok {
				ends = append(ends, e.end)
			}
			byEnd[e.end] = append(byEnd[e.end], e)
			return nil
		})
		if err != nil {
			return err
		}
	}
	// The window ends to close: each pane ending at pe is in the windows
	// ending at pe, pe + slide, …, pe + size - slide.
	// Panes come in order of their ends, so the lists of their windows
	// overlap only at their heads: next is the first end not listed yet.
	var closing []int64
	next := int64(math.MinInt64)
	for _, pe := range ends {
		if pe > wm {
			break
		}
		lo := max(pe, next)
		if lo <= prev {
			lo += ((prev-lo)/slide + 1) * slide
		}
		last := pe + size - slide
		for e := lo; e <= min(last, wm); e += slide {
			closing = append(closing, e)
		}
		if last >= wm {
			break // every end up to wm with a pane in it is listed
		}
		next = max(next, last+slide)
	}
	out := &Batch{}
	merged := map[string]*aggEntry{}
	var groups []string
	for _, end := range closing {
		clear(merged)
		groups = groups[:0]
		// The panes present in the window (a binary search, not a step
		// per slide: with a small slide most panes may be empty).
		first, _ := slices.BinarySearch(ends, end-size+slide)
		for _, pe := range ends[first:] {
			if pe > end {
				break
			}
			for _, e := range byEnd[pe] {
				if !e.dirty && !e.stored {
					continue // created for a row that then failed: no state
				}
				m := merged[string(e.key[16:])]
				if m == nil {
					g := string(e.key[16:])
					m = &aggEntry{group: e.group, accs: w.st.newAccs()}
					merged[g] = m
					groups = append(groups, g)
				}
				for j, a := range m.accs {
					if err := a.Merge(e.accs[j]); err != nil {
						return err
					}
				}
			}
		}
		slices.Sort(groups)
		for _, g := range groups {
			m := merged[g]
			m.start, m.end = end-size, end
			out.Rows = append(out.Rows, w.st.row(m, true, w.TimeType))
		}
		// A watermark that jumps closes many windows: pass them on a
		// batch at a time rather than hold them all.
		if len(out.Rows) >= 8192 {
			if err := emit(out); err != nil {
				return err
			}
			out = &Batch{}
		}
	}
	// Delete the panes done with, from the cache, its index and the KV.
	n := 0
	for _, pe := range ends {
		if pe > dropTo {
			break
		}
		for _, e := range byEnd[pe] {
			if err := w.st.forget(e.key, e.stored); err != nil {
				return err
			}
		}
		n++
	}
	w.minEnd = math.MaxInt64
	if w.byEnd != nil {
		for _, pe := range w.ends[:n] {
			delete(w.byEnd, pe)
		}
		w.ends = w.ends[n:]
		if len(w.ends) > 0 {
			w.minEnd = w.ends[0]
		}
	} else if dropTo < math.MaxInt64 {
		// The smallest pane end left: the first key past the dropped.
		var err error
		if w.minEnd, err = w.firstEnd(AppendInt64Key(nil, dropTo+1)); err != nil {
			return err
		}
	}
	if len(out.Rows) > 0 {
		return emit(out)
	}
	return nil
}

// OnCheckpoint implements Stateful.
func (w *WindowAggregate) OnCheckpoint() error { return w.st.flush() }

// Finish implements Operator: a bounded input closes every window.
func (w *WindowAggregate) Finish(emit Emit) error { return w.OnWatermark(math.MaxInt64, emit) }

// GroupAggregate is unwindowed GROUP BY over a stream: state per group
// key, never expiring, and an upsert row per group touched by a batch.
type GroupAggregate struct {
	GroupBy []expr.Eval
	OnError RowError

	st    aggState
	key   []byte
	gvals types.Row
}

// NewGroupAggregate makes the operator.
func NewGroupAggregate(groupBy []expr.Eval, aggs []AggCall, onErr RowError) *GroupAggregate {
	st := aggState{aggs: aggs, ngroup: len(groupBy), cold: newColdCache(coldCacheBytes)}
	return &GroupAggregate{GroupBy: groupBy, OnError: onErr, st: st, gvals: make(types.Row, len(groupBy))}
}

// Bind implements Stateful.
func (g *GroupAggregate) Bind(kv KV) { g.st.bind(kv) }

// Process implements Operator.
func (g *GroupAggregate) Process(b *Batch, emit Emit) error {
	if g.st.kv == nil {
		g.st.bind(NewMemKV())
	}
rows:
	for i, row := range b.Rows {
		key := g.key[:0]
		for j, ge := range g.GroupBy {
			v, err := ge(row)
			if err != nil {
				if err := g.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			g.gvals[j] = v
			key = types.AppendKey(key, v)
		}
		g.key = key
		e, err := g.st.get(key, g.gvals, 0, 0)
		if err != nil {
			return err
		}
		if g.st.once && e.emitted {
			continue // its row is out, and stays as it is
		}
		if err := g.st.add(e, row); err != nil {
			if err := g.OnError(b, i, err); err != nil {
				return err
			}
			continue
		}
		g.st.touch(e)
	}
	return g.st.emitChanges(emit, false, types.Null)
}

// Seed implements Seeder: without GROUP BY, it emits the group over no
// rows if the state holds no group yet; with GROUP BY it does nothing.
func (g *GroupAggregate) Seed(emit Emit) error {
	if len(g.GroupBy) > 0 {
		return nil
	}
	if g.st.kv == nil {
		g.st.bind(NewMemKV())
	}
	e, err := g.st.get(nil, nil, 0, 0)
	if err != nil {
		return err
	}
	if e.stored || e.dirty || e.touched {
		return nil
	}
	g.st.touch(e)
	return g.st.emitChanges(emit, false, types.Null)
}

// EmitBefore implements BeforeEmitter.
func (g *GroupAggregate) EmitBefore() { g.st.before = true }

// OnWatermark implements Stateful (unwindowed groups never close).
func (g *GroupAggregate) OnWatermark(int64, Emit) error { return nil }

// OnCheckpoint implements Stateful.
func (g *GroupAggregate) OnCheckpoint() error { return g.st.flush() }

// Finish implements Operator.
func (g *GroupAggregate) Finish(Emit) error { return nil }
