package operators

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sort"

	"github.com/cockroachdb/apd/v3"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Changelog turns a materialized view's table, read as upserts and
// tombstones by record key, into signed rows: each row it emits carries
// one more column, its sign (+1: the row enters the result, -1: it
// leaves). An upsert of a key it holds a row for emits that row with -1,
// then the new row with +1; a tombstone emits the held row with -1 (a
// tombstone for a key it holds nothing for emits nothing). So operators
// downstream can retract what they folded in, whatever kind of change
// the view made.
//
// Input rows are Width declared columns followed by the read's metadata
// columns, the record key (a bytea) at KeyCol; Batch.Ops says which rows
// are tombstones (OpDelete). State per record key: the declared columns
// of the row the view holds under it.
type Changelog struct {
	Width  int
	KeyCol int

	kv  KV
	buf []byte
}

// Bind implements Stateful. The state is read and written through the
// KV as rows come (nothing is cached across epochs).
func (c *Changelog) Bind(kv KV) { c.kv = kv }

// Process implements Operator.
func (c *Changelog) Process(b *Batch, emit Emit) error {
	if c.kv == nil {
		c.Bind(NewMemKV())
	}
	out := &Batch{Rows: make([]types.Row, 0, 2*len(b.Rows))}
	withSource := b.Source != nil
	push := func(row types.Row, sign int64, i int) {
		r := make(types.Row, len(row)+1)
		copy(r, row)
		r[len(row)] = types.NewInt8(sign)
		out.Rows = append(out.Rows, r)
		if withSource {
			out.Source = append(out.Source, b.Source[i])
		}
	}
	for i, row := range b.Rows {
		key := row[c.KeyCol]
		if key.IsNull() {
			continue // a table record always has a key
		}
		k := []byte(key.S)
		old, held, err := c.kv.Get(k)
		if err != nil {
			return err
		}
		if held {
			vals, _, err := types.DecodeValues(old, c.Width)
			if err != nil {
				return err
			}
			prev := make(types.Row, len(row))
			copy(prev, vals)
			for j := c.Width; j < len(prev); j++ {
				prev[j] = types.NullValue
			}
			prev[c.KeyCol] = key
			push(prev, -1, i)
		}
		if b.Ops != nil && b.Ops[i] == OpDelete {
			if held {
				if err := c.kv.Delete(k); err != nil {
					return err
				}
			}
			continue
		}
		c.buf = types.AppendValues(c.buf[:0], row[:c.Width])
		if err := c.kv.Set(k, c.buf); err != nil {
			return err
		}
		push(row, 1, i)
	}
	if len(out.Rows) == 0 {
		return nil
	}
	return emit(out)
}

// OnWatermark implements Stateful (a view's rows never expire).
func (c *Changelog) OnWatermark(int64, Emit) error { return nil }

// OnCheckpoint implements Stateful: every change is already in the KV.
func (c *Changelog) OnCheckpoint() error { return nil }

// Finish implements Operator.
func (c *Changelog) Finish(Emit) error { return nil }

// Every aggregate runs over signed rows, taking a row back out when it
// leaves: count, sum, avg and the variances and standard deviations fold
// it out of their running result (signedAcc); min, max, bool_and, bool_or, every and the DISTINCT forms
// of those and of count, sum and avg keep the group's values with their
// counts (bagAcc), and so do the float variances and the statistics of
// two variables (corr, covar_*, regr_*), fed each value as many times as
// rows hold it; string_agg, array_agg and ORDER BY aggregates keep the
// group's rows (listAcc).

// retractor is an accumulator over signed rows: signedAcc, bagAcc, listAcc.
type retractor interface {
	retract(v types.Value) error
}

// bagged says whether an aggregate over signed rows is a bagAcc.
func bagged(name string, distinct bool) bool {
	switch name {
	case "min", "max", "bool_and", "bool_or", "every":
		return true
	case "count", "sum", "avg":
		return distinct
	}
	return distinct && (isVarAgg(name) || isRegrAgg(name))
}

// bagAcc is an aggregate over signed rows whose result a leaving row
// cannot be folded out of (min, max, the boolean ones, the DISTINCT
// ones; see Retracts): it keeps the group's distinct non-NULL values,
// each with the count of rows holding it, in key order, and computes its
// result from them, each value once (which is all these aggregates need
// of a value). State: the values and their counts. It is as large as the
// group's distinct values, and each result reads them all.
type bagAcc struct {
	f    *AggFunc
	vals []bagVal
	buf  []byte
	// counted feeds each value as many times as rows hold it (a float
	// variance, which cannot take a value back out exactly).
	counted bool
}

type bagVal struct {
	key []byte
	v   types.Value // the first of the values of this key that came
	n   int64
}

func (a *bagAcc) find(v types.Value) (int, bool) {
	a.buf = types.AppendKey(a.buf[:0], v)
	return sort.Find(len(a.vals), func(i int) int { return bytes.Compare(a.buf, a.vals[i].key) })
}

func (a *bagAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	i, ok := a.find(v)
	if ok {
		a.vals[i].n++
		return nil
	}
	a.vals = slices.Insert(a.vals, i, bagVal{key: append([]byte(nil), a.buf...), v: v, n: 1})
	return nil
}

// retract takes one row's value back out; a value it does not hold (its
// row was set aside when it came) changes nothing.
func (a *bagAcc) retract(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	if i, ok := a.find(v); ok {
		if a.vals[i].n--; a.vals[i].n == 0 {
			a.vals = slices.Delete(a.vals, i, i+1)
		}
	}
	return nil
}

func (a *bagAcc) Result() types.Value {
	acc := a.f.New()
	for _, b := range a.vals {
		for k := int64(0); k < b.n && (a.counted || k == 0); k++ {
			if err := acc.Add(b.v); err != nil {
				return types.NullValue // not reached: each value was added before
			}
		}
	}
	return acc.Result()
}

func (a *bagAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(a.vals)))
	for _, b := range a.vals {
		buf = binary.AppendVarint(buf, b.n)
		buf = types.AppendValue(buf, b.v)
	}
	return buf
}

func (a *bagAcc) LoadState(buf []byte) ([]byte, error) {
	n, m := binary.Uvarint(buf)
	if m <= 0 {
		return nil, ErrBadState
	}
	buf = buf[m:]
	a.vals = make([]bagVal, 0, n)
	for range n {
		c, m := binary.Varint(buf)
		if m <= 0 {
			return nil, ErrBadState
		}
		v, rest, err := types.DecodeValue(buf[m:])
		if err != nil {
			return nil, err
		}
		buf = rest
		a.vals = append(a.vals, bagVal{key: types.AppendKey(nil, v), v: v, n: c})
	}
	return buf, nil
}

func (a *bagAcc) Merge(Accumulator) error {
	return pgerror.New(pgerror.Internal, "operators: merge of aggregates over signed rows")
}

// signedAcc is an aggregate over signed rows (count, sum, avg, or a
// variance or standard deviation): Add folds a row in, retract takes one out. It counts
// the non-NULL values it holds, so that a sum all of whose values left is
// NULL again, as over no rows. A numeric sum shows as many decimal
// places as the most precise value it holds (as PostgreSQL's does, over
// the rows that are left): it counts the values of each scale. A sum
// cannot take a NaN or an infinity back out (NaN - NaN and ∞ - ∞ are
// NaN), so those stay out of the inner accumulator, counted: while any is
// held they decide the result, as PostgreSQL's does over the rows held.
// State: the count, the counts per scale, then (flagged in the number of
// scales, so that a state without any reads as before) the NaN and
// infinity counts, then the inner state.
type signedAcc struct {
	inner  Accumulator
	n      int64
	scales []int64 // numeric values held, by their scale
	// NaNs (float or numeric), +∞ and -∞ held (not by count's)
	nan, pinf, ninf int64
}

func (a *signedAcc) Add(v types.Value) error {
	if v.K != types.Null {
		a.n++
		a.count(v, 1)
		if a.special(v, 1) {
			return nil
		}
	}
	return a.inner.Add(v)
}

// special counts v by d when it is a NaN or an infinity that the inner
// accumulator must not see, and says so.
func (a *signedAcc) special(v types.Value, d int64) bool {
	if _, ok := a.inner.(*countAcc); ok {
		return false
	}
	switch {
	case v.K == types.Numeric:
		if v.N.Form == apd.Finite {
			return false
		}
		a.nan += d
	case v.K.IsFloat():
		switch f := v.Float(); {
		case math.IsNaN(f):
			a.nan += d
		case math.IsInf(f, 1):
			a.pinf += d
		case math.IsInf(f, -1):
			a.ninf += d
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// specialResult is the result while a NaN or an infinity is held: NaN
// with a NaN or both infinities, else the infinity; a variance is NaN
// (over one row, a sample's is NULL).
func (a *signedAcc) specialResult() types.Value {
	f := math.NaN()
	if a.nan == 0 && (a.pinf == 0 || a.ninf == 0) {
		f = math.Inf(1)
		if a.ninf > 0 {
			f = math.Inf(-1)
		}
	}
	switch in := a.inner.(type) {
	case *sumFloatAcc:
		if in.t == types.Float4 {
			return types.NewFloat(types.Float4, f)
		}
		return types.NewFloat8(f)
	case *avgAcc:
		if in.float {
			return types.NewFloat8(f)
		}
	case *varAcc:
		if in.sample && a.n == 1 {
			return types.NullValue
		}
		if in.float {
			return types.NewFloat8(math.NaN())
		}
	}
	return types.NewNumeric(&apd.Decimal{Form: apd.NaN})
}

func (a *signedAcc) count(v types.Value, d int64) {
	if v.K != types.Numeric {
		return
	}
	scale := max(0, -int(v.N.Exponent))
	for len(a.scales) <= scale {
		a.scales = append(a.scales, 0)
	}
	a.scales[scale] += d
}

// scale is the largest scale of the numeric values held.
func (a *signedAcc) scale() int32 {
	for i := len(a.scales) - 1; i > 0; i-- {
		if a.scales[i] > 0 {
			return int32(i)
		}
	}
	return 0
}

// retract takes a value folded in before back out.
func (a *signedAcc) retract(v types.Value) error {
	if v.K == types.Null {
		if c, ok := a.inner.(*countAcc); ok && c.star {
			c.n--
		}
		return nil
	}
	a.n--
	a.count(v, -1)
	if a.special(v, -1) {
		return nil
	}
	switch in := a.inner.(type) {
	case *countAcc:
		in.n--
	case *sumIntAcc:
		return in.Add(negate(v))
	case *sumFloatAcc:
		in.f -= types.AsFloat(v)
	case *sumIntervalAcc:
		x := v.Interval()
		in.iv.Months -= x.Months
		in.iv.Days -= x.Days
		in.iv.Micros -= x.Micros
	case *avgAcc:
		in.n--
		if in.float {
			in.fsum.f -= types.AsFloat(v)
			return nil
		}
		return in.sum.Add(negate(v))
	case *varAcc:
		return in.retract(v)
	default:
		return pgerror.New(pgerror.Internal, "operators: this aggregate cannot retract")
	}
	return nil
}

// negate is -v for an integer or numeric value (the most negative bigint
// becomes a numeric, which sums take as such).
func negate(v types.Value) types.Value {
	if v.K == types.Numeric {
		return types.NewNumeric(new(apd.Decimal).Neg(v.N))
	}
	if v.I == math.MinInt64 {
		d := apd.New(math.MinInt64, 0)
		return types.NewNumeric(d.Neg(d))
	}
	return types.NewInt(v.K, -v.I)
}

func (a *signedAcc) Result() types.Value {
	if a.nan > 0 || a.pinf > 0 || a.ninf > 0 {
		return a.specialResult()
	}
	switch in := a.inner.(type) {
	case *sumIntAcc:
		if a.n == 0 {
			return types.NullValue
		}
		a.rescale(in)
	case *avgAcc:
		a.rescale(&in.sum)
	case *varAcc:
		in.scale = a.scale()
	case *sumFloatAcc, *sumIntervalAcc:
		if a.n == 0 {
			return types.NullValue
		}
	}
	return a.inner.Result()
}

// rescale gives a numeric sum the scale of the values it holds: values
// that left may have had more decimal places. The exact sum of what is
// held has no more than that, so this rounds nothing.
func (a *signedAcc) rescale(s *sumIntAcc) {
	if s.d != nil {
		_, _ = types.DecimalContext.Quantize(s.d, s.d, -a.scale())
	}
}

// specialsFlag, in the number of scales of a signedAcc's state, says the
// NaN and infinity counts follow the scales.
const specialsFlag = 1 << 20

func (a *signedAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	k := uint64(len(a.scales))
	specials := a.nan != 0 || a.pinf != 0 || a.ninf != 0
	if specials {
		k |= specialsFlag
	}
	buf = binary.AppendUvarint(buf, k)
	for _, c := range a.scales {
		buf = binary.AppendVarint(buf, c)
	}
	if specials {
		buf = binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(buf, a.nan), a.pinf), a.ninf)
	}
	return a.inner.AppendState(buf)
}

func (a *signedAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.n, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	k, w := binary.Uvarint(buf)
	specials := k&specialsFlag != 0
	k &^= specialsFlag
	if w <= 0 || k > 1000 {
		return buf, ErrBadState
	}
	buf = buf[w:]
	a.scales = make([]int64, k)
	for i := range a.scales {
		if a.scales[i], buf, err = readVarint(buf); err != nil {
			return buf, err
		}
	}
	a.nan, a.pinf, a.ninf = 0, 0, 0
	if specials {
		for _, c := range []*int64{&a.nan, &a.pinf, &a.ninf} {
			if *c, buf, err = readVarint(buf); err != nil {
				return buf, err
			}
		}
	}
	return a.inner.LoadState(buf)
}

func (a *signedAcc) Merge(Accumulator) error {
	return pgerror.New(pgerror.Internal, "operators: signed aggregates do not merge")
}
