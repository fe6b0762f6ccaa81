package operators

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// SessionAggregate is the sessionAggregate step: per group key, rows
// closer than Gap in event time form one session; a row that bridges two
// sessions merges them. A session [first, last + gap) closes when the
// watermark passes its end. State: 'g' + group key -> the key's open
// sessions; 'c' + end + group key -> an index so the watermark finds
// closing sessions with one range scan.
type SessionAggregate struct {
	Gap      int64
	TimeCol  int
	TimeType types.Type
	GroupBy  []expr.Eval
	Aggs     []AggCall
	Changes  bool
	OnError  RowError
	// Having (with Changes) decides which sessions show: one that stops
	// passing it leaves with a delete of the row it showed.
	Having expr.Eval

	before  bool // updates follow the rows they replace (BeforeEmitter)
	kv      KV
	groups  map[string]*sessionGroup
	touched []*sessionGroup
	wm      int64
	gvals   types.Row
	key     []byte
	buf     []byte
}

type session struct {
	start, last int64 // first and last event time
	accs        []Accumulator
	emitted     bool      // the session shows: a change row with this start was emitted, and no delete since
	old         types.Row // with Having or before: the row it showed before this batch changed it
}

type sessionGroup struct {
	gkey     []byte
	group    types.Row
	sessions []*session // ordered by start, disjoint
	dirty    bool
	touched  bool
	oldEnds  []int64 // close-index entries to remove at write-back
	removed  []*session
}

// NewSessionAggregate makes the operator.
func NewSessionAggregate(gap int64, timeCol int, timeType types.Type, groupBy []expr.Eval, aggs []AggCall, changes bool, onErr RowError) *SessionAggregate {
	return &SessionAggregate{Gap: gap, TimeCol: timeCol, TimeType: timeType, GroupBy: groupBy, Aggs: aggs, Changes: changes,
		OnError: onErr, wm: math.MinInt64, gvals: make(types.Row, len(groupBy))}
}

// Bind implements Stateful.
func (s *SessionAggregate) Bind(kv KV) {
	s.kv = kv
	s.groups = map[string]*sessionGroup{}
	s.touched = nil
}

func (s *SessionAggregate) newAccs() []Accumulator {
	accs := make([]Accumulator, len(s.Aggs))
	for i := range s.Aggs {
		accs[i] = s.Aggs[i].stateAcc()
	}
	return accs
}

func groupKey(gkey []byte) []byte { return append([]byte{'g'}, gkey...) }

func closeKey(end int64, gkey []byte) []byte {
	return append(AppendInt64Key([]byte{'c'}, end), gkey...)
}

func (s *SessionAggregate) load(gkey []byte, group types.Row) (*sessionGroup, error) {
	if g, ok := s.groups[string(gkey)]; ok {
		return g, nil
	}
	g := &sessionGroup{gkey: append([]byte(nil), gkey...)}
	v, ok, err := s.kv.Get(groupKey(gkey))
	if err != nil {
		return nil, err
	}
	if ok {
		if g.group, v, err = types.DecodeValues(v, len(s.GroupBy)); err != nil {
			return nil, err
		}
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return nil, ErrBadState
		}
		v = v[m:]
		for i := uint64(0); i < n; i++ {
			ss := &session{}
			if ss.start, v, err = readVarint(v); err != nil {
				return nil, err
			}
			if ss.last, v, err = readVarint(v); err != nil {
				return nil, err
			}
			if ss.emitted, v, err = readBool(v); err != nil {
				return nil, err
			}
			ss.accs = s.newAccs()
			for _, a := range ss.accs {
				if v, err = a.LoadState(v); err != nil {
					return nil, err
				}
			}
			g.sessions = append(g.sessions, ss)
			g.oldEnds = append(g.oldEnds, ss.last+s.Gap)
		}
	} else {
		g.group = types.CloneRow(group)
	}
	s.groups[string(g.gkey)] = g
	return g, nil
}

// write puts a group back into the KV (or deletes it when empty).
func (s *SessionAggregate) write(g *sessionGroup) error {
	for _, end := range g.oldEnds {
		if err := s.kv.Delete(closeKey(end, g.gkey)); err != nil {
			return err
		}
	}
	g.oldEnds = g.oldEnds[:0]
	if len(g.sessions) == 0 {
		g.dirty = false
		return s.kv.Delete(groupKey(g.gkey))
	}
	b := types.AppendValues(s.buf[:0], g.group)
	b = binary.AppendUvarint(b, uint64(len(g.sessions)))
	for _, ss := range g.sessions {
		b = binary.AppendVarint(b, ss.start)
		b = binary.AppendVarint(b, ss.last)
		b = appendBool(b, ss.emitted)
		for _, a := range ss.accs {
			b = a.AppendState(b)
		}
		if err := s.kv.Set(closeKey(ss.last+s.Gap, g.gkey), nil); err != nil {
			return err
		}
		g.oldEnds = append(g.oldEnds, ss.last+s.Gap)
	}
	s.buf = b
	g.dirty = false
	return s.kv.Set(groupKey(g.gkey), b)
}

// Process implements Operator.
func (s *SessionAggregate) Process(b *Batch, emit Emit) error {
	if s.kv == nil {
		s.Bind(NewMemKV())
	}
	args := make([]types.Value, len(s.Aggs))
rows:
	for i, row := range b.Rows {
		t := row[s.TimeCol]
		if t.IsNull() {
			if err := s.OnError(b, i, pgerror.New(pgerror.NullValueNotAllowed, "event time is NULL")); err != nil {
				return err
			}
			continue
		}
		gkey := s.key[:0]
		for j, ge := range s.GroupBy {
			v, err := ge(row)
			if err != nil {
				if err := s.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			s.gvals[j] = v
			gkey = types.AppendKey(gkey, v)
		}
		s.key = gkey
		for j := range s.Aggs {
			args[j] = types.NullValue
			if a := s.Aggs[j].Arg; a != nil {
				var err error
				if args[j], err = a(row); err != nil {
					if err := s.OnError(b, i, err); err != nil {
						return err
					}
					continue rows
				}
			}
		}
		g, err := s.load(gkey, s.gvals)
		if err != nil {
			return err
		}
		// sessions within gap of t merge with it
		var keep, merge []*session
		for _, ss := range g.sessions {
			if t.I >= ss.start-s.Gap && t.I <= ss.last+s.Gap {
				merge = append(merge, ss)
			} else {
				keep = append(keep, ss)
			}
		}
		// A session stays open while a row at the watermark could still
		// extend it (wm <= last + gap). A row behind the watermark that
		// extends no open session is late.
		if len(merge) == 0 && t.I < s.wm {
			if err := s.OnError(b, i, fmt.Errorf("%w (event time %s, watermark %s)", ErrLate,
				types.NewTimestamp(s.TimeType, t.I).Text(), types.NewTimestamp(s.TimeType, s.wm).Text())); err != nil {
				return err
			}
			continue
		}
		ns := &session{start: t.I, last: t.I, accs: s.newAccs()}
		for _, m := range merge {
			ns.start, ns.last = min(ns.start, m.start), max(ns.last, m.last)
			for j := range ns.accs {
				if err := ns.accs[j].Merge(m.accs[j]); err != nil {
					return err
				}
			}
			if m.emitted && s.Changes {
				g.removed = append(g.removed, m)
			}
		}
		for j, v := range args {
			if err := ns.accs[j].Add(v); err != nil {
				if err := s.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
		}
		// a merged session that kept its start keeps its view row
		for k, m := range g.removed {
			if m.start == ns.start && m.emitted {
				ns.emitted = true
				if s.Having != nil || s.before {
					ns.old = m.old
					if ns.old == nil {
						ns.old = s.row(g, m)
					}
				}
				g.removed = append(g.removed[:k], g.removed[k+1:]...)
				break
			}
		}
		g.sessions = append(keep, ns)
		sort.Slice(g.sessions, func(a, c int) bool { return g.sessions[a].start < g.sessions[c].start })
		g.dirty = true
		if s.Changes && !g.touched {
			g.touched = true
			s.touched = append(s.touched, g)
		}
	}
	if s.Changes {
		return s.emitChanges(emit)
	}
	return nil
}

// passes evaluates HAVING over a session's row.
func (s *SessionAggregate) passes(row types.Row) bool { return havingPasses(s.Having, s.OnError, row) }

func (s *SessionAggregate) row(g *sessionGroup, ss *session) types.Row {
	out := make(types.Row, 0, len(g.group)+2+len(ss.accs))
	out = append(out, g.group...)
	out = append(out, types.NewTimestamp(s.TimeType, ss.start), types.NewTimestamp(s.TimeType, ss.last+s.Gap))
	for _, a := range ss.accs {
		out = append(out, a.Result())
	}
	return out
}

// emitChanges emits, per touched group, deletes for sessions merged away
// and an upsert for every open session.
func (s *SessionAggregate) emitChanges(emit Emit) error {
	if len(s.touched) == 0 {
		return nil
	}
	out := &Batch{}
	for _, g := range s.touched {
		for _, m := range g.removed {
			row := m.old // what it showed, if this batch changed it before it merged away
			if row == nil {
				row = s.row(g, m)
			}
			out.Rows = append(out.Rows, row)
			out.Ops = append(out.Ops, OpDelete)
		}
		g.removed = nil
		for _, ss := range g.sessions {
			row, old := s.row(g, ss), ss.old
			ss.old = nil
			if s.Having != nil && !s.passes(row) {
				if ss.emitted {
					if old == nil { // unchanged since it was shown
						old = row
					}
					ss.emitted = false
					out.Rows = append(out.Rows, old)
					out.Ops = append(out.Ops, OpDelete)
				}
				continue
			}
			op := OpInsert
			if ss.emitted {
				op = OpUpdate
				if s.before {
					if old == nil { // unchanged since it was shown
						old = row
					}
					out.Rows = append(out.Rows, old)
					out.Ops = append(out.Ops, OpUpdateBefore)
				}
			}
			ss.emitted = true
			out.Rows = append(out.Rows, row)
			out.Ops = append(out.Ops, op)
		}
		g.touched = false
		g.dirty = true
	}
	s.touched = s.touched[:0]
	if len(out.Rows) == 0 {
		return nil
	}
	return emit(out)
}

// OnWatermark implements Stateful: sessions whose end the watermark
// EmitBefore implements BeforeEmitter.
func (s *SessionAggregate) EmitBefore() { s.before = true }

// passed close (final rows unless Changes) and leave the state.
func (s *SessionAggregate) OnWatermark(wm int64, emit Emit) error {
	if s.kv == nil {
		s.Bind(NewMemKV())
	}
	if wm <= s.wm {
		return nil
	}
	s.wm = wm
	if err := s.OnCheckpoint(); err != nil {
		return err
	}
	var hi []byte // sessions with last + gap < wm
	if wm < math.MaxInt64 {
		hi = AppendInt64Key([]byte{'c'}, wm)
	} else {
		hi = []byte{'d'}
	}
	seen := map[string]bool{}
	var gkeys [][]byte
	err := s.kv.Scan([]byte{'c'}, hi, func(key, _ []byte) error {
		gk := string(key[9:])
		if !seen[gk] {
			seen[gk] = true
			gkeys = append(gkeys, []byte(gk))
		}
		return nil
	})
	if err != nil {
		return err
	}
	out := &Batch{}
	for _, gk := range gkeys {
		g, err := s.load(gk, nil)
		if err != nil {
			return err
		}
		var open []*session
		for _, ss := range g.sessions {
			if ss.last+s.Gap < wm || wm == math.MaxInt64 {
				if !s.Changes {
					out.Rows = append(out.Rows, s.row(g, ss))
				}
				continue
			}
			open = append(open, ss)
		}
		g.sessions = open
		if err := s.write(g); err != nil {
			return err
		}
		if len(open) == 0 {
			delete(s.groups, string(g.gkey))
		}
	}
	if len(out.Rows) > 0 {
		return emit(out)
	}
	return nil
}

// OnCheckpoint implements Stateful.
func (s *SessionAggregate) OnCheckpoint() error {
	for _, g := range s.groups {
		if g.dirty {
			if err := s.write(g); err != nil {
				return err
			}
		}
	}
	return nil
}

// Finish implements Operator: a bounded input closes every session.
func (s *SessionAggregate) Finish(emit Emit) error { return s.OnWatermark(math.MaxInt64, emit) }
