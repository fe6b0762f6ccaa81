package operators

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// Ticker is a Stateful operator that acts on the wall clock: OnTick, at
// each epoch's end, emits what the clock's move since the last tick
// changed (into the rest of the chain, as OnWatermark does).
type Ticker interface {
	OnTick(emit Emit) error
}

// TemporalFilter is a materialized view's filter on the wall clock (a
// temporal filter: WHERE ts > now() - INTERVAL '1 hour'). Each input row
// has a span of clock time, [from, until), in which every bound holds;
// the row comes out when the clock enters its span and is taken back out
// (OpDelete) when the clock leaves it, so the view holds what its SELECT
// returns at the time of the last tick. The input only comes (a stream's
// rows); a row whose span is already over is dropped, one whose span is
// to come waits in the state, and one in the view waits there for its
// end.
//
// The clock never goes back: the operator keeps the latest time it used
// and takes the later of that and the wall clock (a restart on another
// machine, a clock step back). A tick that passes both ends of a waiting
// row's span emits nothing for it.
type TemporalFilter struct {
	Bounds  []temporalBound
	Clock   func() int64 // microseconds since the epoch; nil: the wall clock
	OnError RowError

	kv     KV
	loaded bool
	now    int64 // the latest clock reading used
	seq    int64 // rows numbered so far: a row's number keeps equal spans apart
	out    Batch // Process's
	ticked Batch // OnTick's
	key    []byte
	buf    []byte
}

type temporalBound struct {
	eval   expr.Eval
	offset int64
	lower  bool
}

// State keys: 'c' the clock, 'n' the row count, 'i' + from + number: a
// row waiting to come in (its until, then the row), 'o' + until +
// number: a row in the view waiting to go out.
const (
	temporalClock = 'c'
	temporalSeq   = 'n'
	temporalIn    = 'i'
	temporalOut   = 'o'
)

// NewTemporalFilter compiles a temporalFilter step's bounds.
func NewTemporalFilter(bounds []plan.TemporalBound, env *expr.Env, onErr RowError, clock func() int64) (*TemporalFilter, error) {
	if len(bounds) == 0 {
		return nil, pgerror.New(pgerror.Internal, "operators: temporalFilter without bounds")
	}
	t := &TemporalFilter{Clock: clock, OnError: onErr}
	for _, b := range bounds {
		ev, err := expr.CompileEnv(b.Expr, env)
		if err != nil {
			return nil, err
		}
		t.Bounds = append(t.Bounds, temporalBound{eval: ev, offset: b.Offset, lower: b.Lower})
	}
	return t, nil
}

// Bind implements Stateful.
func (t *TemporalFilter) Bind(kv KV) {
	t.kv = kv
	t.loaded = false
}

// OnWatermark implements Stateful: event time does not matter here.
func (t *TemporalFilter) OnWatermark(int64, Emit) error { return nil }

// OnCheckpoint implements Stateful: every change goes to the KV as it
// happens.
func (t *TemporalFilter) OnCheckpoint() error { return nil }

// Finish implements Operator.
func (t *TemporalFilter) Finish(Emit) error { return nil }

func (t *TemporalFilter) load() error {
	if t.kv == nil {
		t.Bind(NewMemKV())
	}
	if t.loaded {
		return nil
	}
	t.now, t.seq = math.MinInt64, 0
	for _, k := range []byte{temporalClock, temporalSeq} {
		v, ok, err := t.kv.Get([]byte{k})
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if len(v) != 8 {
			return ErrBadState
		}
		if k == temporalClock {
			t.now = int64(binary.BigEndian.Uint64(v))
		} else {
			t.seq = int64(binary.BigEndian.Uint64(v))
		}
	}
	t.loaded = true
	return nil
}

// tick reads the clock (never behind the last reading) and saves it.
func (t *TemporalFilter) tick() (int64, error) {
	var now int64
	if t.Clock != nil {
		now = t.Clock()
	} else {
		now = time.Now().UnixMicro()
	}
	if now <= t.now {
		return t.now, nil
	}
	t.now = now
	return now, t.kv.Set([]byte{temporalClock}, binary.BigEndian.AppendUint64(nil, uint64(now)))
}

// span evaluates a row's bounds: the clock time from which it is in the
// view and the one from which it is not; ok is false when a bound is
// NULL (the comparison is not true at any time).
func (t *TemporalFilter) span(row types.Row) (from, until int64, ok bool, err error) {
	from, until = math.MinInt64, math.MaxInt64
	for _, b := range t.Bounds {
		v, err := b.eval(row)
		if err != nil {
			return 0, 0, false, err
		}
		if v.IsNull() {
			return 0, 0, false, nil
		}
		at := SaturatingAdd(v.I, b.offset)
		if b.lower {
			from = max(from, at)
		} else {
			until = min(until, at)
		}
	}
	return from, until, from < until, nil
}

// SaturatingAdd is a + b, held at the int64 range's ends (a time plus
// an offset: a temporal filter's bounds, an interval join's).
func SaturatingAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// Process implements Operator.
func (t *TemporalFilter) Process(b *Batch, emit Emit) error {
	if err := t.load(); err != nil {
		return err
	}
	now, err := t.tick()
	if err != nil {
		return err
	}
	t.out.Reset()
	numbered := false
	for i, row := range b.Rows {
		if b.Ops != nil && b.Ops[i] != OpInsert {
			return pgerror.New(pgerror.Internal, "operators: a temporal filter's input takes rows back")
		}
		from, until, ok, err := t.span(row)
		if err != nil {
			if err := t.OnError(b, i, err); err != nil {
				return err
			}
			continue
		}
		if !ok || until <= now {
			continue // never in the view, or no longer
		}
		if from <= now {
			t.out.Rows = append(t.out.Rows, row)
			if b.Source != nil {
				t.out.Source = append(t.out.Source, b.Source[i])
			}
			if until != math.MaxInt64 {
				t.seq++
				numbered = true
				if err := t.kv.Set(t.stateKey(temporalOut, until), types.AppendValues(t.buf[:0], row)); err != nil {
					return err
				}
			}
			continue
		}
		t.seq++
		numbered = true
		t.buf = types.AppendValues(binary.BigEndian.AppendUint64(t.buf[:0], uint64(until)), row)
		if err := t.kv.Set(t.stateKey(temporalIn, from), t.buf); err != nil {
			return err
		}
	}
	if numbered {
		if err := t.kv.Set([]byte{temporalSeq}, binary.BigEndian.AppendUint64(nil, uint64(t.seq))); err != nil {
			return err
		}
	}
	if len(t.out.Rows) == 0 {
		return nil
	}
	if len(t.out.Source) != len(t.out.Rows) {
		t.out.Source = t.out.Source[:0]
	}
	return emit(&t.out)
}

// stateKey is kind + at + the current row number.
func (t *TemporalFilter) stateKey(kind byte, at int64) []byte {
	t.key = AppendInt64Key(AppendInt64Key(append(t.key[:0], kind), at), t.seq)
	return t.key
}

// OnTick implements Ticker: rows whose span the clock entered come in,
// those whose span it left go out.
func (t *TemporalFilter) OnTick(emit Emit) error {
	if err := t.load(); err != nil {
		return err
	}
	now, err := t.tick()
	if err != nil {
		return err
	}
	t.ticked.Reset()
	var done [][]byte
	type move struct {
		key   []byte
		until int64
		row   types.Row
	}
	var moves []move
	err = t.kv.Scan([]byte{temporalIn}, dueBy(temporalIn, now), func(key, value []byte) error {
		if len(value) < 8 || len(key) != 17 {
			return ErrBadState
		}
		until := int64(binary.BigEndian.Uint64(value))
		row, err := decodeAll(value[8:])
		if err != nil {
			return err
		}
		done = append(done, append([]byte(nil), key...))
		if until > now {
			moves = append(moves, move{append([]byte(nil), key...), until, row})
			t.ticked.Rows = append(t.ticked.Rows, row)
			t.ticked.Ops = append(t.ticked.Ops, OpInsert)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range moves {
		if m.until == math.MaxInt64 {
			continue
		}
		// out under its end, with the number it had
		key := append(AppendInt64Key([]byte{temporalOut}, m.until), m.key[9:]...)
		if err := t.kv.Set(key, types.AppendValues(nil, m.row)); err != nil {
			return err
		}
	}
	err = t.kv.Scan([]byte{temporalOut}, dueBy(temporalOut, now), func(key, value []byte) error {
		row, err := decodeAll(value)
		if err != nil {
			return err
		}
		done = append(done, append([]byte(nil), key...))
		t.ticked.Rows = append(t.ticked.Rows, row)
		t.ticked.Ops = append(t.ticked.Ops, OpDelete)
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range done {
		if err := t.kv.Delete(k); err != nil {
			return err
		}
	}
	if len(t.ticked.Rows) == 0 {
		return nil
	}
	return emit(&t.ticked)
}

// dueBy is the end of the scan of kind's keys whose time is at or before
// now.
func dueBy(kind byte, now int64) []byte {
	if now == math.MaxInt64 {
		return []byte{kind + 1}
	}
	return AppendInt64Key([]byte{kind}, now+1)
}

// decodeAll reads the values of a row written by types.AppendValues.
func decodeAll(buf []byte) (types.Row, error) {
	var row types.Row
	for len(buf) > 0 {
		v, rest, err := types.DecodeValue(buf)
		if err != nil {
			return nil, ErrBadState
		}
		row, buf = append(row, v), rest
	}
	return row, nil
}
