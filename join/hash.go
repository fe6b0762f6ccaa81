package join

import (
	"bytes"
	"encoding/binary"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// HashJoin is the regular join of two streams into a view: every row is
// kept, in the state of its side under its join key, for as long as the
// view lives, so that each row meets every partner that ever arrives, as
// in the join's bounded SELECT. Its input is the interval join's ([side,
// left columns…, right columns…, key columns…]; Spec's time fields are
// unused) and its output is signed rows [left columns…, right columns…,
// sign]: a pair comes out with sign +1 when its second row arrives. An
// outer side's row without a partner comes out at once with NULLs for the
// other side, and is taken back (sign -1) when its first partner arrives,
// in the same batch as the pair.
//
// With Spec.SignCol set, an input row may also go (sign -1), as the
// signed rows of another join do: the join forgets one stored row of
// equal values, takes back each pair it made, and gives a partner left
// with none its NULL-padded row back (and takes back the going row's own
// NULL-padded row, if it had no partner). A row going that the join does
// not hold (it was set aside when it came) is ignored.
//
// A semi join (Type "semi", EXISTS) and an anti join ("anti", NOT
// EXISTS) put out left rows only, as [left columns…, NULLs…, sign]: a
// semi join a left row while it has a partner (it comes with its first
// and goes with its last), an anti join one while it has none (the NULL-
// padded row of a LEFT JOIN, without the pairs).
//
// State per row: a data entry keyed (side, key, seq) holding the count of
// partners the row has met (kept for outer sides only; 0 for the others)
// and its values.
type HashJoin struct {
	Spec     plan.JoinSpec
	Residual expr.Eval // nil: none
	OnError  operators.RowError

	kv    operators.KV
	rows  rowCache
	seq   int64   // next row sequence number; -1 until loaded
	keep  [2]bool // a side's rows without a partner come out alone (NULL-padded), or come with the first (semi)
	semi  bool    // a left row comes out alone while it has a partner, not while it has none
	pairs bool    // pairs come out (not in a semi or anti join)
	key   []byte
	buf   []byte
	out   []types.Row
}

// NewHashJoin builds the operator; cacheBytes bounds the stored rows it
// keeps in memory (rowCache; 0: operators.DefaultGroupCacheBytes).
func NewHashJoin(spec plan.JoinSpec, residual expr.Eval, onErr operators.RowError, cacheBytes int) *HashJoin {
	if cacheBytes <= 0 {
		cacheBytes = operators.DefaultGroupCacheBytes
	}
	j := &HashJoin{Spec: spec, Residual: residual, OnError: onErr, seq: -1, rows: rowCache{limit: cacheBytes}}
	j.keep[0] = spec.Type == "left" || spec.Type == "full" || spec.Type == "semi" || spec.Type == "anti"
	j.keep[1] = spec.Type == "right" || spec.Type == "full"
	j.semi = spec.Type == "semi"
	j.pairs = spec.Type != "semi" && spec.Type != "anti"
	return j
}

// Bind implements Stateful. The row cache outlives the epoch: a committed
// epoch leaves it equal to the KV, and an aborted one rebuilds the
// operator.
func (j *HashJoin) Bind(kv operators.KV) {
	j.kv = kv
	j.seq = -1
}

// OnCheckpoint implements Stateful: everything is written as it happens.
func (j *HashJoin) OnCheckpoint() error { return nil }

// OnWatermark implements Stateful: a regular join's rows never expire.
func (j *HashJoin) OnWatermark(int64, operators.Emit) error { return nil }

// Finish implements Operator.
func (j *HashJoin) Finish(operators.Emit) error { return nil }

func (j *HashJoin) ensureKV() error {
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

// loadSeq reads a join's next row sequence number (0 when none is stored).
func loadSeq(kv operators.KV) (int64, error) {
	v, ok, err := kv.Get([]byte{joinSeqNo})
	if err != nil || !ok {
		return 0, err
	}
	n, m := binary.Uvarint(v)
	if m <= 0 {
		return 0, operators.ErrBadState
	}
	return int64(n), nil
}

// signed makes an output row from a left and a right side (nil: NULLs)
// and a sign.
func (j *HashJoin) signed(left, right types.Row, sign int64) types.Row {
	out := padded(j.Spec.LeftWidth, j.Spec.RightWidth, left, right, 1)
	out[len(out)-1] = types.NewInt(types.Int8, sign)
	return out
}

// orphan is side s's row with NULLs for the other side.
func (j *HashJoin) orphan(s int, row types.Row, sign int64) types.Row {
	if s == 0 {
		return j.signed(row, nil, sign)
	}
	return j.signed(nil, row, sign)
}

// alone is the sign of a row put out alone as its partners change: sign
// for an outer row's padded one, -sign for a semi join's row.
func (j *HashJoin) alone(sign int64) int64 {
	if j.semi {
		return -sign
	}
	return sign
}

// Process implements Operator.
func (j *HashJoin) Process(b *operators.Batch, emit operators.Emit) error {
	if err := j.ensureKV(); err != nil {
		return err
	}
	j.out = j.out[:0]
	var counts []recount
rows:
	for i, row := range b.Rows {
		sv := row[0]
		if sv.IsNull() || sv.I < 0 || sv.I > 1 {
			return pgerror.New(pgerror.Internal, "operators: hash join input without a side")
		}
		s := int(sv.I)
		keyCols := j.Spec.LeftKey
		if s == 1 {
			keyCols = j.Spec.RightKey
		}
		sign := int64(1)
		if c := j.Spec.SignCol; c > 0 {
			if row[c].IsNull() || (row[c].I != 1 && row[c].I != -1) {
				return pgerror.New(pgerror.Internal, "operators: hash join input sign %s", row[c].Text())
			}
			sign = row[c].I
		}
		mine := types.CloneRow(j.Spec.Side(row, s))
		key := j.key[:0]
		for _, c := range keyCols {
			if row[c].IsNull() { // NULL = anything is not true: no partner ever
				if j.keep[s] && !j.semi {
					j.out = append(j.out, j.orphan(s, mine, sign))
				}
				continue rows
			}
			key = types.AppendKey(key, row[c])
		}
		j.key = key
		if sign < 0 {
			if err := j.retract(b, i, s, key, mine); err != nil {
				return err
			}
			continue
		}
		o := 1 - s
		prefix := append([]byte{joinData, byte(o)}, key...)
		emitted, matched := len(j.out), 0
		counts = counts[:0]
		err := j.rows.visit(j.kv, prefix, func(r *storedRow) error {
			n := r.n
			other, _, err := types.DecodeValues(r.vals, j.Spec.Width(o))
			if err != nil {
				return err
			}
			left, right := mine, other
			if s == 1 {
				left, right = other, mine
			}
			pair := j.signed(left, right, 1)
			if j.Residual != nil {
				ok, err := j.Residual(pair[:len(pair)-1])
				if err != nil {
					return &residualError{err}
				}
				if ok.K != types.Bool || ok.I == 0 {
					return nil
				}
			}
			matched++
			if j.keep[o] {
				if n == 0 { // its first partner: a semi join's row comes, an outer one's padded row goes
					j.out = append(j.out, j.orphan(o, other, j.alone(-1)))
				}
				counts = append(counts, recount{r, n + 1})
			}
			if j.pairs {
				j.out = append(j.out, pair)
			}
			return nil
		})
		if err != nil {
			if re, ok := err.(*residualError); ok {
				j.out = j.out[:emitted] // the row is set aside whole
				if err := j.OnError(b, i, re.err); err != nil {
					return err
				}
				continue
			}
			return err
		}
		for _, c := range counts {
			if err := j.recount(c.r, c.n); err != nil {
				return err
			}
		}
		if j.keep[s] && (matched > 0) == j.semi {
			j.out = append(j.out, j.orphan(s, mine, 1))
		}
		if !j.keep[s] {
			matched = 0 // counts are kept for outer sides only
		}
		if err := j.store(s, key, mine, matched); err != nil {
			return err
		}
	}
	if len(j.out) == 0 {
		return nil
	}
	return emit(&operators.Batch{Rows: j.out})
}

// retract takes back row i of b, side s's row mine under key: it forgets
// one stored row of equal values, takes back the pairs that row made and,
// for an outer side, gives each partner it leaves alone its NULL-padded
// row back, or takes back its own when it had no partner.
func (j *HashJoin) retract(b *operators.Batch, i, s int, key []byte, mine types.Row) error {
	want := types.AppendValues(nil, mine)
	mineKey := append([]byte{joinData, byte(s)}, key...)
	var held *storedRow // the first stored row of these values; nil: the join does not hold it
	err := j.rows.visit(j.kv, mineKey, func(r *storedRow) error {
		if held == nil && bytes.Equal(r.vals, want) {
			held = r
		}
		return nil
	})
	if err != nil || held == nil {
		return err // a row set aside when it came is not held
	}
	heldKey, partners := held.k, held.n
	o := 1 - s
	prefix := append([]byte{joinData, byte(o)}, key...)
	emitted := len(j.out)
	var counts []recount
	err = j.rows.visit(j.kv, prefix, func(r *storedRow) error {
		n := r.n
		other, _, err := types.DecodeValues(r.vals, j.Spec.Width(o))
		if err != nil {
			return err
		}
		left, right := mine, other
		if s == 1 {
			left, right = other, mine
		}
		pair := j.signed(left, right, -1)
		if j.Residual != nil {
			ok, err := j.Residual(pair[:len(pair)-1])
			if err != nil {
				return &residualError{err}
			}
			if ok.K != types.Bool || ok.I == 0 {
				return nil
			}
		}
		if j.pairs {
			j.out = append(j.out, pair)
		}
		if j.keep[o] {
			if n == 0 {
				return operators.ErrBadState // a partner always counts the rows it met
			}
			if n == 1 { // its last partner: a semi join's row goes, an outer one's padded row comes back
				j.out = append(j.out, j.orphan(o, other, j.alone(1)))
			}
			counts = append(counts, recount{r, n - 1})
		}
		return nil
	})
	if err != nil {
		if re, ok := err.(*residualError); ok {
			j.out = j.out[:emitted] // the row is set aside whole, its state kept
			return j.OnError(b, i, re.err)
		}
		return err
	}
	for _, c := range counts {
		if err := j.recount(c.r, c.n); err != nil {
			return err
		}
	}
	if j.keep[s] && (partners > 0) == j.semi {
		j.out = append(j.out, j.orphan(s, mine, -1))
	}
	j.rows.remove(mineKey, heldKey)
	return j.kv.Delete(heldKey)
}

// recount is a stored row's new count of partners.
type recount struct {
	r *storedRow
	n uint64
}

// recount stores a row's new count of partners.
func (j *HashJoin) recount(r *storedRow, n uint64) error {
	r.n = n
	j.buf = append(binary.AppendUvarint(j.buf[:0], n), r.vals...)
	return j.kv.Set(r.k, j.buf)
}

// store keeps a row of side s, with the count of partners it has met.
func (j *HashJoin) store(s int, key []byte, row types.Row, matched int) error {
	seq := j.seq
	j.seq++
	var seqb [binary.MaxVarintLen64]byte
	if err := j.kv.Set([]byte{joinSeqNo}, seqb[:binary.PutUvarint(seqb[:], uint64(j.seq))]); err != nil {
		return err
	}
	prefix := append([]byte{joinData, byte(s)}, key...)
	dk := operators.AppendInt64Key(prefix, seq)
	j.buf = types.AppendValues(binary.AppendUvarint(j.buf[:0], uint64(matched)), row)
	_, m := binary.Uvarint(j.buf)
	j.rows.add(prefix[:len(prefix):len(prefix)], dk, uint64(matched), j.buf[m:])
	return j.kv.Set(dk, j.buf)
}
