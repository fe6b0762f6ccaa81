package join

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// IntervalJoin is the operator of a JoinSpec. Each row is stored in the
// state of its side until the watermark makes a match impossible: a left
// row expires when left.ts + Hi ≤ watermark, a right row when right.ts -
// Lo ≤ watermark. A pair is emitted once, when its second row arrives;
// an outer side's rows that never matched are emitted with NULLs when
// they expire. Rows behind the watermark are late (ErrLate), as with
// windows. State per row: a data entry keyed (side, key, ts, seq) and a
// time index entry (side, ts, seq) used to expire rows in time order.
type IntervalJoin struct {
	Spec     plan.JoinSpec
	Residual expr.Eval // nil: none
	OnError  operators.RowError

	kv    operators.KV
	wm    int64
	seq   int64 // next row sequence number; -1 until loaded
	keep  [2]bool
	key   []byte
	buf   []byte
	pairs []types.Row
}

// NewIntervalJoin builds the operator.
func NewIntervalJoin(spec plan.JoinSpec, residual expr.Eval, onErr operators.RowError) *IntervalJoin {
	j := &IntervalJoin{Spec: spec, Residual: residual, OnError: onErr, wm: math.MinInt64, seq: -1}
	j.keep[0] = spec.Type == "left" || spec.Type == "full"
	j.keep[1] = spec.Type == "right" || spec.Type == "full"
	return j
}

// State key prefixes.
const (
	joinData  = 'd'
	joinTime  = 't'
	joinSeqNo = 'n'
)

// Bind implements Stateful.
func (j *IntervalJoin) Bind(kv operators.KV) {
	j.kv = kv
	j.seq = -1
}

// OnCheckpoint implements Stateful: everything is written as it happens.
func (j *IntervalJoin) OnCheckpoint() error { return nil }

// Finish implements Operator.
func (j *IntervalJoin) Finish(emit operators.Emit) error { return j.OnWatermark(math.MaxInt64, emit) }

func (j *IntervalJoin) ensureKV() error {
	if j.kv == nil {
		j.Bind(operators.NewMemKV())
	}
	if j.seq >= 0 {
		return nil
	}
	seq, err := loadSeq(j.kv)
	j.seq = seq
	return err
}

// pair makes an output row from a left and a right side (nil: NULLs).
func (j *IntervalJoin) pair(left, right types.Row) types.Row {
	return padded(j.Spec.LeftWidth, j.Spec.RightWidth, left, right, 0)
}

// Process implements Operator.
func (j *IntervalJoin) Process(b *operators.Batch, emit operators.Emit) error {
	if err := j.ensureKV(); err != nil {
		return err
	}
	j.pairs = j.pairs[:0]
rows:
	for i, row := range b.Rows {
		sv := row[0]
		if sv.IsNull() || sv.I < 0 || sv.I > 1 {
			return pgerror.New(pgerror.Internal, "operators: interval join input without a side")
		}
		s := int(sv.I)
		keyCols, timeCol := j.Spec.LeftKey, j.Spec.LeftTime
		if s == 1 {
			keyCols, timeCol = j.Spec.RightKey, j.Spec.RightTime
		}
		t := row[timeCol]
		if t.IsNull() {
			// The time bound is not true of a NULL time: no match ever,
			// as with a NULL key (a side a LEFT JOIN padded with NULLs
			// that a second join reads).
			if j.keep[s] {
				j.pairs = append(j.pairs, j.orphan(s, types.CloneRow(j.Spec.Side(row, s))))
			}
			continue
		}
		if t.I <= j.wm {
			// Its partners may have expired already: like a row of a
			// closed window, it is late.
			if err := j.OnError(b, i, fmt.Errorf("%w (event time %s, watermark %s)", operators.ErrLate,
				types.NewTimestamp(j.Spec.TimeType, t.I).Text(), types.NewTimestamp(j.Spec.TimeType, j.wm).Text())); err != nil {
				return err
			}
			continue
		}
		mine := j.Spec.Side(row, s)
		key := j.key[:0]
		for _, c := range keyCols {
			if row[c].IsNull() { // NULL = anything is not true: no match ever
				if j.keep[s] {
					j.pairs = append(j.pairs, j.orphan(s, types.CloneRow(mine)))
				}
				continue rows
			}
			key = types.AppendKey(key, row[c])
		}
		j.key = key
		// Probe the other side: the rows of the same key whose time is in
		// range of this row's.
		o := 1 - s
		lo, hi := operators.SaturatingAdd(t.I, j.Spec.Lo), operators.SaturatingAdd(t.I, j.Spec.Hi)
		if s == 1 {
			lo, hi = operators.SaturatingAdd(t.I, -j.Spec.Hi), operators.SaturatingAdd(t.I, -j.Spec.Lo)
		}
		matched, emitted := false, len(j.pairs)
		var touched [][]byte // other-side entries of an outer side matched for the first time
		var touchedVals [][]byte
		prefix := append([]byte{joinData, byte(o)}, key...)
		from := operators.AppendInt64Key(append([]byte(nil), prefix...), lo)
		var to []byte
		if hi < math.MaxInt64 {
			to = operators.AppendInt64Key(append([]byte(nil), prefix...), hi+1)
		} else {
			to = prefixEnd(prefix)
		}
		err := j.kv.Scan(from, to, func(k, v []byte) error {
			if len(v) < 1 {
				return operators.ErrBadState
			}
			other, _, err := types.DecodeValues(v[1:], j.Spec.Width(o))
			if err != nil {
				return err
			}
			var out types.Row
			if s == 0 {
				out = j.pair(mine, other)
			} else {
				out = j.pair(other, mine)
			}
			if j.Residual != nil {
				ok, err := j.Residual(out)
				if err != nil {
					return &residualError{err}
				}
				if ok.K != types.Bool || ok.I == 0 {
					return nil
				}
			}
			matched = true
			j.pairs = append(j.pairs, out)
			if j.keep[o] && v[0] == 0 {
				touched = append(touched, append([]byte(nil), k...))
				touchedVals = append(touchedVals, append([]byte(nil), v...))
			}
			return nil
		})
		if err != nil {
			if re, ok := err.(*residualError); ok {
				j.pairs = j.pairs[:emitted] // the row is set aside whole
				if err := j.OnError(b, i, re.err); err != nil {
					return err
				}
				continue
			}
			return err
		}
		for n, k := range touched {
			v := touchedVals[n]
			v[0] = 1
			if err := j.kv.Set(k, v); err != nil {
				return err
			}
		}
		if j.expiredAt(s, t.I, j.wm) {
			// No future row can match it (right.ts - Lo <= watermark):
			// it is done now, as the watermark would find it next.
			if j.keep[s] && !matched {
				j.pairs = append(j.pairs, j.orphan(s, types.CloneRow(mine)))
			}
			continue
		}
		if err := j.store(s, key, t.I, mine, matched); err != nil {
			return err
		}
	}
	if len(j.pairs) == 0 {
		return nil
	}
	return emit(&operators.Batch{Rows: j.pairs})
}

// residualError carries a per-row evaluation error out of a scan.
type residualError struct{ err error }

func (e *residualError) Error() string { return e.err.Error() }

// orphan is an output row of one side with NULLs for the other.
func (j *IntervalJoin) orphan(s int, row types.Row) types.Row {
	if s == 0 {
		return j.pair(row, nil)
	}
	return j.pair(nil, row)
}

// expiredAt reports whether a row of side s at time t can no longer match
// a row of the other side once the watermark is wm.
func (j *IntervalJoin) expiredAt(s int, t, wm int64) bool {
	if wm == math.MinInt64 {
		return false
	}
	if s == 0 {
		return operators.SaturatingAdd(t, j.Spec.Hi) <= wm
	}
	return operators.SaturatingAdd(t, -j.Spec.Lo) <= wm
}

// store keeps a row of side s until it expires.
func (j *IntervalJoin) store(s int, key []byte, t int64, row types.Row, matched bool) error {
	seq := j.seq
	j.seq++
	var seqb [binary.MaxVarintLen64]byte
	if err := j.kv.Set([]byte{joinSeqNo}, seqb[:binary.PutUvarint(seqb[:], uint64(j.seq))]); err != nil {
		return err
	}
	dk := operators.AppendInt64Key(operators.AppendInt64Key(append([]byte{joinData, byte(s)}, key...), t), seq)
	flag := byte(0)
	if matched {
		flag = 1
	}
	j.buf = types.AppendValues(append(j.buf[:0], flag), row)
	if err := j.kv.Set(dk, j.buf); err != nil {
		return err
	}
	tk := operators.AppendInt64Key(operators.AppendInt64Key([]byte{joinTime, byte(s)}, t), seq)
	return j.kv.Set(tk, key)
}

// OnWatermark implements Stateful: rows that can no longer match are
// deleted; an outer side's unmatched ones are emitted with NULLs.
func (j *IntervalJoin) OnWatermark(wm int64, emit operators.Emit) error {
	if err := j.ensureKV(); err != nil {
		return err
	}
	if wm <= j.wm {
		return nil
	}
	j.wm = wm
	var out []types.Row
	for s := 0; s < 2; s++ {
		// Side s rows expire at t <= wm - Hi (left) or t <= wm + Lo (right).
		limit := operators.SaturatingAdd(wm, -j.Spec.Hi)
		if s == 1 {
			limit = operators.SaturatingAdd(wm, j.Spec.Lo)
		}
		var hi []byte
		if limit < math.MaxInt64 {
			hi = operators.AppendInt64Key([]byte{joinTime, byte(s)}, limit+1)
		} else {
			hi = []byte{joinTime, byte(s) + 1}
		}
		var dead [][2][]byte // time index key, data key
		err := j.kv.Scan([]byte{joinTime, byte(s)}, hi, func(k, v []byte) error {
			if len(k) != 18 {
				return operators.ErrBadState
			}
			dk := append(append([]byte{joinData, byte(s)}, v...), k[2:]...)
			dead = append(dead, [2][]byte{append([]byte(nil), k...), dk})
			return nil
		})
		if err != nil {
			return err
		}
		for _, d := range dead {
			if j.keep[s] {
				v, ok, err := j.kv.Get(d[1])
				if err != nil {
					return err
				}
				if ok && len(v) > 0 && v[0] == 0 {
					row, _, err := types.DecodeValues(v[1:], j.Spec.Width(s))
					if err != nil {
						return err
					}
					out = append(out, j.orphan(s, row))
				}
			}
			if err := j.kv.Delete(d[0]); err != nil {
				return err
			}
			if err := j.kv.Delete(d[1]); err != nil {
				return err
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return emit(&operators.Batch{Rows: out})
}

// prefixEnd is the smallest key above every key starting with prefix.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
