package operators

import (
	"math"
	"sort"

	"encoding/binary"
	"errors"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// Accumulator folds the values of one group for one aggregate.
type Accumulator interface {
	Add(v types.Value) error
	Result() types.Value
	// AppendState and LoadState move the accumulator in and out of
	// operator state (Pebble, checkpoints).
	AppendState(buf []byte) []byte
	LoadState(buf []byte) ([]byte, error)
	// Merge folds another accumulator of the same aggregate into this one
	// (session windows that a row bridges).
	Merge(o Accumulator) error
}

// AggFunc is a resolved aggregate function.
type AggFunc struct {
	Name string
	Arg  types.Type // types.Null for count(*)
	Ret  types.Type
	New  func() Accumulator
	// Delim is string_agg's delimiter (a constant of the query, set by
	// Build before accumulators are made); nil is a NULL delimiter, which
	// joins the values with nothing, as in PostgreSQL.
	Delim *string
	// Fraction is percentile_cont's and percentile_disc's fraction (a
	// constant of the query, set by Build); nil is NULL.
	Fraction *float64
	// Fractions, when Array, are the fractions of percentile_cont(float8[])
	// and percentile_disc(float8[]), whose result is the array of each
	// one's percentile (a nil fraction, NULL in the array, gives NULL);
	// Fractions nil is a NULL array. Set by Build.
	Fractions []*float64
	Array     bool
	// Grows marks the aggregates whose state grows with their input
	// (string_agg, array_agg): their accumulators are sizedAccs, charged
	// to a bounded query's Budget as they grow, and in a continuous query
	// listAccs (AggCall.stateAcc).
	Grows bool
}

// sizedAcc is an accumulator whose state grows with its input.
type sizedAcc interface {
	// Size is the bytes the accumulator holds.
	Size() int64
}

// IsAggregate reports whether name is an aggregate function.
func IsAggregate(name string) bool {
	switch name {
	case "count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "string_agg", "array_agg":
		return true
	}
	return isVarAgg(name) || isRegrAgg(name) || IsOrderedSet(name)
}

// ResolveAgg types an aggregate call as PostgreSQL does: count gives
// bigint; sum of smallint/integer gives bigint, of bigint and numeric
// gives numeric, of floats the float; avg of integers and numeric gives
// numeric, of floats double precision, and so do the variances and
// standard deviations; min and max keep their type. star
// marks count(*).
func ResolveAgg(name string, arg types.Type, star bool) (*AggFunc, error) {
	f := &AggFunc{Name: name, Arg: arg}
	bad := func() (*AggFunc, error) {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s(%s) does not exist", name, arg)
	}
	switch name {
	case "count":
		f.Ret = types.Int8
		if star {
			f.Arg = types.Null
			f.New = func() Accumulator { return &countAcc{star: true} }
		} else {
			f.New = func() Accumulator { return &countAcc{} }
		}
	case "sum":
		switch arg {
		case types.Int2, types.Int4:
			f.Ret = types.Int8
			f.New = func() Accumulator { return &sumIntAcc{} }
		case types.Int8, types.Numeric, types.Unknown, types.Null:
			f.Ret = types.Numeric
			f.New = func() Accumulator { return &sumIntAcc{numeric: true} }
		case types.Float4, types.Float8:
			t := arg
			f.Ret = t
			f.New = func() Accumulator { return &sumFloatAcc{t: t} }
		case types.Interval:
			f.Ret = types.Interval
			f.New = func() Accumulator { return &sumIntervalAcc{} }
		default:
			return bad()
		}
	case "avg":
		switch {
		case arg.IsInteger() || arg == types.Numeric || arg == types.Unknown:
			f.Ret = types.Numeric
			f.New = func() Accumulator { return &avgAcc{sum: sumIntAcc{numeric: true}} }
		case arg.IsFloat():
			f.Ret = types.Float8
			f.New = func() Accumulator { return &avgAcc{float: true, fsum: sumFloatAcc{t: types.Float8}} }
		default:
			return bad()
		}
	case "var_pop", "var_samp", "variance", "stddev_pop", "stddev_samp", "stddev":
		switch {
		case arg.IsInteger() || arg == types.Numeric || arg == types.Unknown:
			f.Ret = types.Numeric
			f.New = func() Accumulator { return newVarAcc(name, false) }
		case arg.IsFloat():
			f.Ret = types.Float8
			f.New = func() Accumulator { return newVarAcc(name, true) }
		default:
			return bad()
		}
	case "percentile_cont", "percentile_disc", "mode":
		return resolveOrderedSet(f, arg)
	case "corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
		"regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy":
		if arg != types.Record { // the planner's record of y and x
			return nil, pgerror.New(pgerror.Internal, "operators: %s of %s, not of a record of two values", name, arg)
		}
		f.Ret = types.Float8
		if name == "regr_count" {
			f.Ret = types.Int8
		}
		f.New = func() Accumulator { return &regrAcc{name: name} }
	case "min", "max":
		if arg == types.JSONB {
			return bad()
		}
		f.Ret = arg
		if arg == types.Unknown || arg == types.Null {
			f.Ret = types.Text
		}
		sign := 1
		if name == "min" {
			sign = -1
		}
		f.New = func() Accumulator { return &extremeAcc{sign: sign} }
	case "bool_and", "every", "bool_or":
		if arg != types.Bool {
			return bad()
		}
		f.Ret = types.Bool
		and := name != "bool_or"
		f.New = func() Accumulator { return &boolAcc{and: and} }
	case "string_agg":
		// string_agg(text, text) and string_agg(bytea, bytea); the other
		// string types are cast to text, as PostgreSQL casts them.
		switch {
		case arg.IsString() || arg == types.Null:
			f.Ret = types.Text
		case arg == types.Bytea:
			f.Ret = types.Bytea
		default:
			return nil, pgerror.New(pgerror.UndefinedFunction, "function string_agg(%s, %s) does not exist", arg, arg)
		}
		f.Grows = true
		bytea := f.Ret == types.Bytea
		f.New = func() Accumulator { return &stringAggAcc{delim: f.Delim, bytea: bytea} }
	case "array_agg":
		elem := arg
		if arg == types.Unknown || arg == types.Null {
			elem = types.Text
		}
		if elem.IsArray() {
			return nil, pgerror.NotSupported("array_agg of arrays (multidimensional arrays)")
		}
		at := types.ArrayOf(elem)
		if at == types.Null {
			return nil, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", elem)
		}
		f.Ret = at
		f.Grows = true
		f.New = func() Accumulator { return &arrayAggAcc{t: at} }
	default:
		return nil, pgerror.New(pgerror.UndefinedFunction, "aggregate %s does not exist", name)
	}
	return f, nil
}

// maxAggValueBytes is the largest value string_agg and array_agg build:
// expr.MaxValueBytes, the limit of every function's result, lowered by
// tests (SetMaxAggValueBytes in export_test.go).
var maxAggValueBytes int64 = expr.MaxValueBytes

// stringAggAcc is string_agg: the non-NULL values joined by the
// delimiter, NULL when there are none. The values keep the order they
// were added in.
type stringAggAcc struct {
	delim *string
	bytea bool
	seen  bool
	b     []byte
}

func (a *stringAggAcc) add(s string) error {
	n := int64(len(a.b)) + int64(len(s))
	if a.seen && a.delim != nil {
		n += int64(len(*a.delim))
	}
	if n > maxAggValueBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "result of string_agg would be %d bytes, more than the maximum value size (%d bytes)", n, maxAggValueBytes)
	}
	if a.seen && a.delim != nil {
		a.b = append(a.b, *a.delim...)
	}
	a.b = append(a.b, s...)
	a.seen = true
	return nil
}

func (a *stringAggAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	return a.add(v.S)
}

func (a *stringAggAcc) Result() types.Value {
	if !a.seen {
		return types.NullValue
	}
	if a.bytea {
		return types.NewBytea(a.b)
	}
	return types.NewText(string(a.b))
}

func (a *stringAggAcc) Size() int64 { return int64(cap(a.b)) }

// arrayAggAcc is array_agg: every value, NULLs included, in the order
// added; NULL for no rows. It keeps the elements encoded as an array
// value's S holds them (types.NewArray), without the count.
type arrayAggAcc struct {
	t       types.Type
	n       int64
	payload int64 // the elements' string and numeric bytes
	buf     []byte
}

func (a *arrayAggAcc) Add(v types.Value) error {
	var p int64
	if v.N != nil {
		p = int64(v.N.NumDigits())
	} else {
		p = int64(len(v.S))
	}
	n, payload := a.n+1, a.payload+p
	if n*valueBytes+payload > maxAggValueBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "array size exceeds the maximum allowed (%d bytes)", maxAggValueBytes)
	}
	a.buf = types.AppendValue(a.buf, v)
	a.n, a.payload = n, payload
	return nil
}

func (a *arrayAggAcc) Result() types.Value {
	if a.n == 0 {
		return types.NullValue
	}
	s := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(a.buf)), uint64(a.n))
	return types.Value{K: a.t, S: string(append(s, a.buf...))}
}

func (a *arrayAggAcc) Size() int64 { return int64(cap(a.buf)) }

type countAcc struct {
	star bool
	n    int64
}

func (a *countAcc) Add(v types.Value) error {
	if a.star || v.K != types.Null {
		a.n++
	}
	return nil
}
func (a *countAcc) Result() types.Value { return types.NewInt8(a.n) }

// sumIntAcc sums integers in an int64 and moves to a decimal on overflow;
// numeric inputs go to the decimal directly.
type sumIntAcc struct {
	numeric bool // result type numeric (else bigint)
	seen    bool
	i       int64
	d       *apd.Decimal
}

func (a *sumIntAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	a.seen = true
	if v.K == types.Numeric {
		if a.d == nil {
			a.d = new(apd.Decimal)
		}
		_, err := types.DecimalContext.Add(a.d, a.d, v.N)
		return err
	}
	r := a.i + v.I
	if (a.i > 0 && v.I > 0 && r < 0) || (a.i < 0 && v.I < 0 && r >= 0) {
		if !a.numeric {
			return pgerror.New(pgerror.NumericValueOutOfRange, "bigint out of range")
		}
		if a.d == nil {
			a.d = new(apd.Decimal)
		}
		_, err := types.DecimalContext.Add(a.d, a.d, apd.New(a.i, 0))
		if err != nil {
			return err
		}
		a.i = v.I
		return nil
	}
	a.i = r
	return nil
}

func (a *sumIntAcc) decimal() *apd.Decimal {
	d := apd.New(a.i, 0)
	if a.d != nil {
		types.DecimalContext.Add(d, d, a.d)
	}
	return d
}

func (a *sumIntAcc) Result() types.Value {
	if !a.seen {
		return types.NullValue
	}
	if !a.numeric {
		return types.NewInt8(a.i)
	}
	return types.NewNumeric(a.decimal())
}

type sumFloatAcc struct {
	t    types.Type
	seen bool
	f    float64
}

func (a *sumFloatAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	a.seen = true
	a.f += types.AsFloat(v)
	return nil
}

func (a *sumFloatAcc) Result() types.Value {
	if !a.seen {
		return types.NullValue
	}
	if a.t == types.Float4 {
		return types.NewFloat(types.Float4, float64(float32(a.f)))
	}
	return types.NewFloat8(a.f)
}

type sumIntervalAcc struct {
	seen bool
	iv   types.IntervalValue
}

func (a *sumIntervalAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	a.seen = true
	x := v.Interval()
	a.iv.Months += x.Months
	a.iv.Days += x.Days
	a.iv.Micros += x.Micros
	return nil
}

func (a *sumIntervalAcc) Result() types.Value {
	if !a.seen {
		return types.NullValue
	}
	return types.NewInterval(a.iv)
}

type avgAcc struct {
	float bool
	n     int64
	sum   sumIntAcc
	fsum  sumFloatAcc
}

func (a *avgAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	add := a.sum.Add
	if a.float {
		add = a.fsum.Add
	}
	if err := add(v); err != nil {
		return err // a value refused leaves the average as it was
	}
	a.n++
	return nil
}

func (a *avgAcc) Result() types.Value {
	if a.n == 0 {
		return types.NullValue
	}
	if a.float {
		return types.NewFloat8(a.fsum.f / float64(a.n))
	}
	r, err := expr.DivNumeric(types.NewNumeric(a.sum.decimal()), types.NewNumeric(apd.New(a.n, 0)))
	if err != nil {
		return types.NullValue
	}
	return r
}

type extremeAcc struct {
	sign int
	v    types.Value
}

func (a *extremeAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	if a.v.K == types.Null {
		a.v = v
		return nil
	}
	if v.K.IsFloat() && math.IsNaN(v.Float()) && a.sign < 0 {
		return nil
	}
	if types.Compare(v, a.v)*a.sign > 0 {
		a.v = v
	}
	return nil
}

func (a *extremeAcc) Result() types.Value { return a.v }

type boolAcc struct {
	and  bool
	seen bool
	b    bool
}

func (a *boolAcc) Add(v types.Value) error {
	if v.K == types.Null {
		return nil
	}
	if !a.seen {
		a.seen, a.b = true, v.I != 0
		return nil
	}
	if a.and {
		a.b = a.b && v.I != 0
	} else {
		a.b = a.b || v.I != 0
	}
	return nil
}

func (a *boolAcc) Result() types.Value {
	if !a.seen {
		return types.NullValue
	}
	return types.NewBool(a.b)
}

// orderedAcc is an aggregate with ORDER BY (string_agg(x, ',' ORDER BY
// y)): it keeps each row's value and sort keys (a record) and feeds the
// values to a new inner accumulator in key order (stable: ties keep
// their input order) when the result is asked for. Bounded queries only:
// it has no state encoding (a continuous query's is a listAcc).
type orderedAcc struct {
	keys  []plan.SortKey
	inner func() Accumulator
	rows  []types.Row
	size  int64
}

var errOrderedState = pgerror.NotSupported("an aggregate with ORDER BY in a continuous query")

func (a *orderedAcc) Add(v types.Value) error {
	if v.K == types.Null { // a row FILTER left out
		return nil
	}
	r := v.Fields()
	a.rows = append(a.rows, r)
	a.size += RowBytes(r) + 24
	return nil
}

// Size implements sizedAcc: the rows held, charged to the query.
func (a *orderedAcc) Size() int64 { return a.size }

func (a *orderedAcc) Result() types.Value {
	sort.SliceStable(a.rows, func(i, j int) bool { return CompareRows(a.keys, a.rows[i], a.rows[j]) < 0 })
	acc := a.inner()
	for _, r := range a.rows {
		if err := acc.Add(r[0]); err != nil {
			break // the inner aggregate's own limit; it reports NULL or what it has
		}
	}
	return acc.Result()
}

func (a *orderedAcc) AppendState(buf []byte) []byte        { return buf }
func (a *orderedAcc) LoadState(buf []byte) ([]byte, error) { return buf, errOrderedState }
func (a *orderedAcc) Merge(Accumulator) error              { return errOrderedState }

// distinctAcc feeds each distinct non-null value once to the inner accumulator.
// array_agg, which keeps NULLs, keeps one NULL among its distinct values.
type distinctAcc struct {
	t        types.Type // the argument's type, to decode seen values
	inner    Accumulator
	seen     map[string]string // grouping key -> the value's lossless encoding
	buf      []byte
	keepNull bool // array_agg
	sawNull  bool
}

func newDistinctAcc(f *AggFunc) *distinctAcc {
	return &distinctAcc{t: f.Arg, inner: f.New(), seen: map[string]string{}, keepNull: f.Name == "array_agg"}
}

func (a *distinctAcc) Add(v types.Value) error {
	if v.K == types.Null {
		if !a.keepNull || a.sawNull {
			return nil
		}
		a.sawNull = true
		return a.inner.Add(v)
	}
	a.buf = types.AppendKey(a.buf[:0], v)
	if _, ok := a.seen[string(a.buf)]; ok {
		return nil
	}
	a.seen[string(a.buf)] = string(types.AppendValue(nil, v))
	return a.inner.Add(v)
}

func (a *distinctAcc) Result() types.Value { return a.inner.Result() }

// ErrBadState is a state entry that does not decode: written by another
// layout, or damaged.
var ErrBadState = errors.New("operators: malformed operator state")

func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, 1)
	}
	return append(buf, 0)
}

func readBool(buf []byte) (bool, []byte, error) {
	if len(buf) < 1 {
		return false, buf, ErrBadState
	}
	return buf[0] != 0, buf[1:], nil
}

func readVarint(buf []byte) (int64, []byte, error) {
	v, n := binary.Varint(buf)
	if n <= 0 {
		return 0, buf, ErrBadState
	}
	return v, buf[n:], nil
}

func (a *countAcc) AppendState(buf []byte) []byte { return binary.AppendVarint(buf, a.n) }
func (a *countAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	a.n, buf, err = readVarint(buf)
	return buf, err
}

func (a *sumIntAcc) AppendState(buf []byte) []byte {
	buf = appendBool(buf, a.seen)
	buf = binary.AppendVarint(buf, a.i)
	d := types.NullValue
	if a.d != nil {
		d = types.NewNumeric(a.d)
	}
	return types.AppendValue(buf, d)
}

func (a *sumIntAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.seen, buf, err = readBool(buf); err != nil {
		return buf, err
	}
	if a.i, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	var d types.Value
	if d, buf, err = types.DecodeValue(buf); err != nil {
		return buf, err
	}
	a.d = nil
	if d.K == types.Numeric {
		a.d = d.N
	}
	return buf, nil
}

func (a *sumFloatAcc) AppendState(buf []byte) []byte {
	buf = appendBool(buf, a.seen)
	return types.AppendValue(buf, types.NewFloat8(a.f))
}

func (a *sumFloatAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.seen, buf, err = readBool(buf); err != nil {
		return buf, err
	}
	var v types.Value
	if v, buf, err = types.DecodeValue(buf); err != nil {
		return buf, err
	}
	a.f = v.Float()
	return buf, nil
}

func (a *sumIntervalAcc) AppendState(buf []byte) []byte {
	buf = appendBool(buf, a.seen)
	return types.AppendValue(buf, types.NewInterval(a.iv))
}

func (a *sumIntervalAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.seen, buf, err = readBool(buf); err != nil {
		return buf, err
	}
	var v types.Value
	if v, buf, err = types.DecodeValue(buf); err != nil {
		return buf, err
	}
	a.iv = v.Interval()
	return buf, nil
}

func (a *avgAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	if a.float {
		return a.fsum.AppendState(buf)
	}
	return a.sum.AppendState(buf)
}

func (a *avgAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.n, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	if a.float {
		return a.fsum.LoadState(buf)
	}
	return a.sum.LoadState(buf)
}

func (a *extremeAcc) AppendState(buf []byte) []byte { return types.AppendValue(buf, a.v) }
func (a *extremeAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	a.v, buf, err = types.DecodeValue(buf)
	return buf, err
}

func (a *boolAcc) AppendState(buf []byte) []byte {
	return appendBool(appendBool(buf, a.seen), a.b)
}

func (a *boolAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.seen, buf, err = readBool(buf); err != nil {
		return buf, err
	}
	a.b, buf, err = readBool(buf)
	return buf, err
}

// distinctAcc's state is its inner state and the set of values seen.
func (a *distinctAcc) AppendState(buf []byte) []byte {
	buf = a.inner.AppendState(buf)
	buf = binary.AppendUvarint(buf, uint64(len(a.seen)))
	for k, enc := range a.seen {
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendUvarint(buf, uint64(len(enc)))
		buf = append(buf, enc...)
	}
	return buf
}

func (a *distinctAcc) LoadState(buf []byte) ([]byte, error) {
	buf, err := a.inner.LoadState(buf)
	if err != nil {
		return buf, err
	}
	n, m := binary.Uvarint(buf)
	if m <= 0 {
		return buf, ErrBadState
	}
	buf = buf[m:]
	a.seen = make(map[string]string, n)
	read := func() (string, bool) {
		l, m := binary.Uvarint(buf)
		if m <= 0 || uint64(len(buf)-m) < l {
			return "", false
		}
		s := string(buf[m : m+int(l)])
		buf = buf[m+int(l):]
		return s, true
	}
	for i := uint64(0); i < n; i++ {
		k, ok1 := read()
		enc, ok2 := read()
		if !ok1 || !ok2 {
			return buf, ErrBadState
		}
		a.seen[k] = enc
	}
	return buf, nil
}

func (a *countAcc) Merge(o Accumulator) error { a.n += o.(*countAcc).n; return nil }

func (a *sumIntAcc) Merge(o Accumulator) error {
	b := o.(*sumIntAcc)
	if !b.seen {
		return nil
	}
	if b.d != nil {
		if err := a.Add(types.NewNumeric(b.d)); err != nil {
			return err
		}
	}
	return a.Add(types.NewInt8(b.i))
}

func (a *sumFloatAcc) Merge(o Accumulator) error {
	b := o.(*sumFloatAcc)
	if b.seen {
		a.seen = true
		a.f += b.f
	}
	return nil
}

func (a *sumIntervalAcc) Merge(o Accumulator) error {
	b := o.(*sumIntervalAcc)
	if b.seen {
		return a.Add(types.NewInterval(b.iv))
	}
	return nil
}

func (a *avgAcc) Merge(o Accumulator) error {
	b := o.(*avgAcc)
	a.n += b.n
	if a.float {
		return a.fsum.Merge(&b.fsum)
	}
	return a.sum.Merge(&b.sum)
}

func (a *extremeAcc) Merge(o Accumulator) error { return a.Add(o.(*extremeAcc).v) }

func (a *boolAcc) Merge(o Accumulator) error {
	b := o.(*boolAcc)
	if b.seen {
		return a.Add(types.NewBool(b.b))
	}
	return nil
}

// Merge adds the other side's values this side has not seen, as they
// were (the seen set keeps each value's lossless encoding).
func (a *distinctAcc) Merge(o Accumulator) error {
	for k, enc := range o.(*distinctAcc).seen {
		if _, ok := a.seen[k]; ok {
			continue
		}
		v, _, err := types.DecodeValue([]byte(enc))
		if err != nil {
			return err
		}
		a.seen[k] = enc
		if err := a.inner.Add(v); err != nil {
			return err
		}
	}
	return nil
}

// string_agg's and array_agg's state is what they hold (continuous
// queries refuse them, but the methods keep the Accumulator contract).
func (a *stringAggAcc) AppendState(buf []byte) []byte {
	buf = appendBool(buf, a.seen)
	buf = binary.AppendUvarint(buf, uint64(len(a.b)))
	return append(buf, a.b...)
}

func (a *stringAggAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.seen, buf, err = readBool(buf); err != nil {
		return buf, err
	}
	n, m := binary.Uvarint(buf)
	if m <= 0 || uint64(len(buf)-m) < n {
		return buf, ErrBadState
	}
	a.b = append(a.b[:0], buf[m:m+int(n)]...)
	return buf[m+int(n):], nil
}

func (a *stringAggAcc) Merge(o Accumulator) error {
	b := o.(*stringAggAcc)
	if !b.seen {
		return nil
	}
	return a.add(string(b.b))
}

func (a *arrayAggAcc) AppendState(buf []byte) []byte {
	buf = binary.AppendVarint(buf, a.n)
	buf = binary.AppendVarint(buf, a.payload)
	buf = binary.AppendUvarint(buf, uint64(len(a.buf)))
	return append(buf, a.buf...)
}

func (a *arrayAggAcc) LoadState(buf []byte) ([]byte, error) {
	var err error
	if a.n, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	if a.payload, buf, err = readVarint(buf); err != nil {
		return buf, err
	}
	n, m := binary.Uvarint(buf)
	if m <= 0 || uint64(len(buf)-m) < n {
		return buf, ErrBadState
	}
	a.buf = append(a.buf[:0], buf[m:m+int(n)]...)
	return buf[m+int(n):], nil
}

func (a *arrayAggAcc) Merge(o Accumulator) error {
	b := o.(*arrayAggAcc)
	n, payload := a.n+b.n, a.payload+b.payload
	if n*valueBytes+payload > maxAggValueBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "array size exceeds the maximum allowed (%d bytes)", maxAggValueBytes)
	}
	a.buf = append(a.buf, b.buf...)
	a.n, a.payload = n, payload
	return nil
}

// Size is the inner accumulator's (string_agg(DISTINCT …)); the set of
// values seen is charged as values are added.
func (a *distinctAcc) Size() int64 {
	if s, ok := a.inner.(sizedAcc); ok {
		return s.Size()
	}
	return 0
}
