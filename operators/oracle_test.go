package operators_test

// The correctness oracle for the stateful operators: random event streams,
// out of order within the watermark delay, go through the streaming
// operators (built from Steps as the engine builds them, bound to MemKV or
// to Pebble epochs that commit, abort and restart at random points), and
// every final result is compared with the same query computed here as a
// plain batch query over the input, by an independent implementation.
//
// Every case is a subtest named by its seed, so a failure reproduces with
//
//	go test ./operators/ -run 'TestOracle/tumble/seed=123$' -v
//
// Case counts scale down with -short (1/10) and -race (1/4).

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

// ---------------------------------------------------------------------------
// Input rows of the aggregate cases (windows, sessions, unwindowed groups).

const (
	cK1    = iota // int4, sometimes NULL: group key
	cK2           // text: group key
	cT            // timestamp / timestamptz: event time
	cVI           // int4
	cVB           // int8, sometimes near ±2^62 (sum overflows int64)
	cVN           // numeric with scales 0..3
	cVF           // float8, multiples of 1/4 (exact sums)
	cVT           // text
	cVBool        // bool
	cD            // int4 divisor of the poison aggregate (0 makes a poison row)
	nCols

	cPoison = -2 // aggregate argument 100 / d
	cStar   = -1 // count(*)
)

func colType(c int, tt types.Type) types.Type {
	switch c {
	case cK1, cVI, cD, cPoison:
		return types.Int4
	case cK2, cVT:
		return types.Text
	case cT:
		return tt
	case cVB:
		return types.Int8
	case cVN:
		return types.Numeric
	case cVF:
		return types.Float8
	case cVBool:
		return types.Bool
	}
	return types.Null
}

type aggDef struct {
	name     string
	col      int
	distinct bool
}

func (a aggDef) String() string {
	arg := "*"
	switch {
	case a.col == cPoison:
		arg = "100/d"
	case a.col >= 0:
		arg = fmt.Sprintf("c%d", a.col)
	}
	if a.distinct {
		arg = "DISTINCT " + arg
	}
	return a.name + "(" + arg + ")"
}

var aggPool = []aggDef{
	{"count", cStar, false}, {"count", cVI, false}, {"count", cVT, true}, {"count", cVN, true}, {"count", cVI, true},
	{"count", cVF, true}, {"count", cK1, false},
	{"sum", cVI, false}, {"sum", cVB, false}, {"sum", cVN, false}, {"sum", cVF, false}, {"sum", cVI, true}, {"sum", cVN, true},
	{"avg", cVI, false}, {"avg", cVB, false}, {"avg", cVN, false}, {"avg", cVF, false}, {"avg", cVB, true}, {"avg", cVI, true},
	{"min", cVI, false}, {"max", cVB, false}, {"min", cVN, false}, {"max", cVN, false}, {"min", cVT, false}, {"max", cVT, false},
	{"min", cVF, false}, {"max", cVF, false}, {"min", cT, false}, {"max", cT, false}, {"max", cVI, true},
	{"bool_and", cVBool, false}, {"bool_or", cVBool, false}, {"every", cVBool, false},
	{"sum", cPoison, false}, {"count", cPoison, false},
}

func (a aggDef) spec(tt types.Type) plan.AggSpec {
	s := plan.AggSpec{Name: a.name, Distinct: a.distinct}
	switch a.col {
	case cStar:
		s.Star = true
	case cPoison:
		e, err := expr.Call("/", expr.Const(types.NewInt(types.Int4, 100)), expr.Col(cD, types.Int4, "d"))
		if err != nil {
			panic(err)
		}
		s.Arg = e
	default:
		s.Arg = expr.Col(a.col, colType(a.col, tt), fmt.Sprintf("c%d", a.col))
	}
	return s
}

// arg evaluates the aggregate's argument the batch way; poison reports
// whether the row's evaluation fails (division by zero).
func (a aggDef) arg(row types.Row) (v types.Value, poison bool) {
	switch a.col {
	case cStar:
		return types.NullValue, false
	case cPoison:
		d := row[cD]
		if d.IsNull() {
			return types.NullValue, false
		}
		if d.I == 0 {
			return types.NullValue, true
		}
		return types.NewInt(types.Int4, 100/d.I), false
	}
	return row[a.col], false
}

type aggRowGen struct {
	r     *rand.Rand
	tt    types.Type
	nk1   int
	nk2   int
	pNull float64
	pZero float64 // divisor zero (poison)
	huge  bool
}

var textPool = []string{"a", "b", "ab", "", "B", "ä", "a\x00b", "zz", "Ab"}

func (g *aggRowGen) row(t int64, nullTime bool) types.Row {
	r := g.r
	row := make(types.Row, nCols)
	null := func() bool { return r.Float64() < g.pNull }
	if r.Float64() < 0.1 {
		row[cK1] = types.NullValue
	} else {
		row[cK1] = types.NewInt(types.Int4, int64(r.IntN(g.nk1)))
	}
	row[cK2] = types.NewText(textPool[r.IntN(g.nk2)])
	if nullTime {
		row[cT] = types.NullValue
	} else {
		row[cT] = types.NewTimestamp(g.tt, t)
	}
	if !null() {
		row[cVI] = types.NewInt(types.Int4, int64(r.IntN(2001)-1000))
	}
	if !null() {
		if g.huge && r.IntN(3) == 0 {
			v := int64(1)<<62 + r.Int64N(1<<60)
			if r.IntN(2) == 0 {
				v = -v
			}
			row[cVB] = types.NewInt8(v)
		} else {
			row[cVB] = types.NewInt8(int64(r.IntN(20001) - 10000))
		}
	}
	if !null() {
		row[cVN] = types.NewNumeric(apd.New(int64(r.IntN(4001)-2000), -int32(r.IntN(4))))
	}
	if !null() {
		row[cVF] = types.NewFloat8(float64(r.IntN(801)-400) / 4)
		if r.IntN(20) == 0 {
			row[cVF] = types.NewFloat8(math.Copysign(0, -1)) // -0 = 0
		}
	}
	if !null() {
		row[cVT] = types.NewText(textPool[r.IntN(len(textPool))])
	}
	if !null() {
		row[cVBool] = types.NewBool(r.IntN(4) != 0)
	}
	switch {
	case r.Float64() < g.pZero:
		row[cD] = types.NewInt(types.Int4, 0)
	case null():
	default:
		row[cD] = types.NewInt(types.Int4, int64(r.IntN(7)-3)|1)
	}
	return row
}

// ---------------------------------------------------------------------------
// Expected aggregate values, computed independently (big.Rat arithmetic,
// PostgreSQL's result types and numeric division scale).

type want struct {
	null  bool
	typ   types.Type
	i     int64    // ints, bool (0/1), timestamps
	f     float64  // floats
	s     string   // text
	rat   *big.Rat // numeric
	scale int32    // numeric display scale to check; -1: do not check
}

func (w want) String() string {
	if w.null {
		return "NULL"
	}
	switch {
	case w.rat != nil:
		return fmt.Sprintf("%s(%s, scale %d)", w.typ, w.rat.FloatString(20), w.scale)
	case w.typ.IsFloat():
		return fmt.Sprintf("%s(%v)", w.typ, w.f)
	case w.typ.IsString():
		return fmt.Sprintf("%s(%q)", w.typ, w.s)
	}
	return fmt.Sprintf("%s(%d)", w.typ, w.i)
}

func ratOf(v types.Value) *big.Rat {
	switch v.K {
	case types.Numeric:
		r, ok := new(big.Rat).SetString(v.N.Text('f'))
		if !ok {
			panic("bad numeric " + v.N.String())
		}
		return r
	case types.Float4, types.Float8:
		return new(big.Rat).SetFloat64(v.Float())
	}
	return new(big.Rat).SetInt64(v.I)
}

func numScale(v types.Value) int32 {
	if v.K == types.Numeric && v.N.Exponent < 0 {
		return -v.N.Exponent
	}
	return 0
}

// canon is a value's identity for DISTINCT (numerics by value).
func canon(v types.Value) string {
	switch v.K {
	case types.Numeric:
		var r apd.Decimal
		r.Reduce(v.N)
		return "n" + r.Text('f')
	case types.Float8, types.Float4:
		f := v.Float()
		if f == 0 {
			f = 0 // -0 = 0
		}
		return fmt.Sprintf("f%v", f)
	case types.Text:
		return "s" + v.S
	}
	return fmt.Sprintf("%d:%d", v.K, v.I)
}

func pow10(n int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

var pow10000Cache = struct {
	sync.Mutex
	m map[int32]*big.Rat
}{m: map[int32]*big.Rat{}}

// pow10000 returns 10000^w (shared: callers must not modify it).
func pow10000(w int32) *big.Rat {
	pow10000Cache.Lock()
	defer pow10000Cache.Unlock()
	if r, ok := pow10000Cache.m[w]; ok {
		return r
	}
	var r *big.Rat
	if w >= 0 {
		r = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10000), big.NewInt(int64(w)), nil))
	} else {
		r = new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10000), big.NewInt(int64(-w)), nil))
	}
	pow10000Cache.m[w] = r
	return r
}

// pgWeight returns the base-10000 weight and first base-10000 digit of a
// nonzero |x|, as PostgreSQL's numeric stores it.
func pgWeight(x *big.Rat) (int32, int64) {
	a := new(big.Rat).Abs(x)
	if a.Sign() == 0 {
		return 0, 0
	}
	p := pow10000
	var w int32
	for a.Cmp(p(w+1)) >= 0 {
		w++
	}
	for a.Cmp(p(w)) < 0 {
		w--
	}
	q := new(big.Rat).Quo(a, p(w))
	first := new(big.Int).Quo(q.Num(), q.Denom())
	return w, first.Int64()
}

// pgDiv is PostgreSQL's numeric_div: the quotient rounded half away from
// zero to select_div_scale's result scale.
func pgDiv(num *big.Rat, numScale int32, den int64) (*big.Rat, int32) {
	w1, f1 := pgWeight(num)
	w2, f2 := pgWeight(new(big.Rat).SetInt64(den))
	qw := w1 - w2
	if f1 <= f2 {
		qw--
	}
	rscale := max(16-qw*4, numScale, 0)
	rscale = min(rscale, 1000)
	q := new(big.Rat).Quo(num, new(big.Rat).SetInt64(den))
	scaled := new(big.Rat).Mul(q, new(big.Rat).SetInt(pow10(rscale)))
	n, d := new(big.Int).Abs(scaled.Num()), scaled.Denom()
	quo, rem := new(big.Int).QuoRem(n, d, new(big.Int))
	if new(big.Int).Mul(rem, big.NewInt(2)).Cmp(d) >= 0 {
		quo.Add(quo, big.NewInt(1))
	}
	if scaled.Sign() < 0 {
		quo.Neg(quo)
	}
	return new(big.Rat).SetFrac(quo, pow10(rscale)), rscale
}

func expectAgg(a aggDef, tt types.Type, rows []types.Row) want {
	argT := colType(a.col, tt)
	var vals []types.Value
	seen := map[string]bool{}
	n := 0
	for _, row := range rows {
		n++
		v, _ := a.arg(row)
		if v.IsNull() {
			continue
		}
		if a.distinct {
			if seen[canon(v)] {
				continue
			}
			seen[canon(v)] = true
		}
		vals = append(vals, v)
	}
	switch a.name {
	case "count":
		if a.col == cStar {
			return want{typ: types.Int8, i: int64(n)}
		}
		return want{typ: types.Int8, i: int64(len(vals))}
	case "sum", "avg":
		var ret types.Type
		switch {
		case a.name == "sum" && (argT == types.Int2 || argT == types.Int4):
			ret = types.Int8
		case argT.IsFloat():
			ret = types.Float8
		default:
			ret = types.Numeric
		}
		if len(vals) == 0 {
			return want{null: true, typ: ret}
		}
		if argT.IsFloat() {
			var s float64
			for _, v := range vals {
				s += v.Float()
			}
			if a.name == "avg" {
				s /= float64(len(vals))
			}
			return want{typ: ret, f: s}
		}
		sum := new(big.Rat)
		var sc int32
		for _, v := range vals {
			sum.Add(sum, ratOf(v))
			sc = max(sc, numScale(v))
		}
		check := sc
		if a.distinct && argT == types.Numeric {
			check = -1 // which of 1.0 and 1.00 DISTINCT keeps is unspecified
		}
		if a.name == "sum" {
			if ret == types.Int8 {
				return want{typ: ret, i: sum.Num().Int64()}
			}
			return want{typ: ret, rat: sum, scale: check}
		}
		q, rscale := pgDiv(sum, sc, int64(len(vals)))
		if check < 0 {
			rscale = -1
		}
		return want{typ: ret, rat: q, scale: rscale}
	case "min", "max":
		if len(vals) == 0 {
			return want{null: true, typ: argT}
		}
		best := vals[0]
		for _, v := range vals[1:] {
			c := cmpVal(v, best)
			if (a.name == "min" && c < 0) || (a.name == "max" && c > 0) {
				best = v
			}
		}
		return wantOf(best)
	case "bool_and", "every", "bool_or":
		if len(vals) == 0 {
			return want{null: true, typ: types.Bool}
		}
		and := a.name != "bool_or"
		res := and
		for _, v := range vals {
			if and {
				res = res && v.I != 0
			} else {
				res = res || v.I != 0
			}
		}
		if res {
			return want{typ: types.Bool, i: 1}
		}
		return want{typ: types.Bool}
	}
	panic("unknown aggregate " + a.name)
}

func wantOf(v types.Value) want {
	switch {
	case v.IsNull():
		return want{null: true}
	case v.K == types.Numeric:
		return want{typ: v.K, rat: ratOf(v), scale: -1}
	case v.K.IsFloat():
		return want{typ: v.K, f: v.Float()}
	case v.K.IsString():
		return want{typ: v.K, s: v.S}
	}
	return want{typ: v.K, i: v.I}
}

// cmpVal orders two non-null values of one type (the batch side's own
// comparison: C collation for text, numbers by value).
func cmpVal(a, b types.Value) int {
	switch a.K {
	case types.Numeric:
		return ratOf(a).Cmp(ratOf(b))
	case types.Float8, types.Float4:
		x, y := a.Float(), b.Float()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case types.Text:
		return strings.Compare(a.S, b.S)
	}
	switch {
	case a.I < b.I:
		return -1
	case a.I > b.I:
		return 1
	}
	return 0
}

// match compares an operator's output value with the expected one.
func match(got types.Value, w want) error {
	if w.null {
		if !got.IsNull() {
			return fmt.Errorf("got %s (%s), want NULL", got, got.K)
		}
		return nil
	}
	if got.K != w.typ {
		return fmt.Errorf("got type %s (value %s), want %s", got.K, got, w)
	}
	switch {
	case w.rat != nil:
		if ratOf(got).Cmp(w.rat) != 0 { // exact
			return fmt.Errorf("got %s, want %s", got.N.Text('f'), w)
		}
		if w.scale >= 0 && numScale(got) != w.scale {
			return fmt.Errorf("got %s with scale %d, want scale %d (PostgreSQL's)", got.N.Text('f'), numScale(got), w.scale)
		}
	case w.typ.IsFloat():
		if got.Float() != w.f {
			return fmt.Errorf("got %v, want %v", got.Float(), w.f)
		}
	case w.typ.IsString():
		if got.S != w.s {
			return fmt.Errorf("got %q, want %q", got.S, w.s)
		}
	default:
		if got.I != w.i {
			return fmt.Errorf("got %s, want %s", got, w)
		}
	}
	return nil
}

// groupKeyText is the batch side's grouping key (NULLs group together,
// numbers by value: 1.0 = 1.00, -0 = 0).
func groupKeyText(vals []types.Value) string {
	var sb strings.Builder
	for _, v := range vals {
		if v.IsNull() {
			sb.WriteString("N|")
		} else {
			fmt.Fprintf(&sb, "V%q|", canon(v))
		}
	}
	return sb.String()
}

func rowText(r types.Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = v.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// ---------------------------------------------------------------------------
// The streaming harness: feeds batches, advances the watermark, and at
// random points checkpoints, commits, aborts (replaying from the last
// commit, as an aborted Kafka transaction is replayed) or restarts the
// operator from its committed state.

type kvMode int

const (
	kvMem      kvMode = iota // one MemKV; Bind again (cache drop) after checkpoints
	kvMemAuto                // no Bind at all: the operator binds its own MemKV; Finish at the end
	kvSnapshot               // MemKV epochs by snapshot: commit, abort, restart
	kvPebble                 // state.Epoch tables over a real Pebble store: commit, abort, restart
)

func (m kvMode) String() string {
	return [...]string{"mem", "mem-auto", "snapshot", "pebble"}[m]
}

type rowErr struct {
	id  int
	err error
}

type change struct {
	row types.Row
	op  operators.Op // 0 in append mode
}

type runResult struct {
	out     []change
	before  bool // the operator was asked for update_before rows
	errs    map[int][]error
	wmAt    []int64 // the watermark each row met (the last one before its batch)
	epochs  int
	aborts  int
	restart int
}

type harness struct {
	t       *testing.T
	r       *rand.Rand
	step    *plan.Step
	mode    kvMode
	store   *state.Store
	prefix  []byte
	timeCol int // -1: no event time
	delay   int64
	changes bool // the operator emits a changelog
	before  bool // ... with update_before rows (BeforeEmitter), when it can
	pCkpt   float64
	pAbort  float64
	pRest   float64
}

// sameRow reports whether two rows hold identical values.
func sameRow(a, b types.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.K != y.K || x.I != y.I || x.X != y.X || x.S != y.S || (x.N == nil) != (y.N == nil) || (x.N != nil && x.N.CmpTotal(y.N) != 0) {
			return false
		}
	}
	return true
}

func copyRows(rows []types.Row) []types.Row {
	out := make([]types.Row, len(rows))
	for i, r := range rows {
		out[i] = append(types.Row(nil), r...)
		for j, v := range out[i] {
			if v.N != nil {
				out[i][j].N = new(apd.Decimal).Set(v.N) // a deep copy: in-place changes show
			}
		}
	}
	return out
}

func (h *harness) build(sink *[]rowErr) operators.Stateful {
	op, err := operators.Build(h.step, nil, func(b *operators.Batch, i int, err error) error {
		if b.Source == nil || i >= len(b.Source) {
			h.t.Fatalf("OnError without the row's source (i=%d): %v", i, err)
		}
		*sink = append(*sink, rowErr{id: b.Source[i].(int), err: err})
		return nil
	})
	if err != nil {
		h.t.Fatalf("Build(%s): %v", h.step, err)
	}
	st, ok := op.(operators.Stateful)
	if !ok {
		h.t.Fatalf("Build(%s) gave %T, not a Stateful operator", h.step, op)
	}
	if b, ok := op.(operators.BeforeEmitter); ok && h.before {
		b.EmitBefore()
	}
	return st
}

// snapKV is a MemKV epoch: the committed state is a snapshot copy.
func cloneKV(kv *operators.MemKV) *operators.MemKV {
	c := operators.NewMemKV()
	_ = kv.Scan(nil, nil, func(k, v []byte) error { return c.Set(k, v) })
	return c
}

func (h *harness) run(rows []types.Row, batches [][]int) runResult {
	t := h.t
	orig := copyRows(rows)
	res := runResult{errs: map[int][]error{}, wmAt: make([]int64, len(rows))}
	if h.changes {
		h.before = h.r.IntN(2) == 0
		_, can := h.build(new([]rowErr)).(operators.BeforeEmitter)
		res.before = h.before && can
	}
	for i := range res.wmAt {
		res.wmAt[i] = math.MaxInt64 // not yet seen
	}
	var pendErr []rowErr
	var pend []change
	emit := func(b *operators.Batch) error {
		if h.changes {
			if len(b.Ops) != len(b.Rows) {
				t.Fatalf("changelog batch with %d rows and %d ops", len(b.Rows), len(b.Ops))
			}
		} else if b.Ops != nil {
			t.Fatalf("append-mode operator emitted ops %v", b.Ops)
		}
		for i, r := range b.Rows {
			c := change{row: r}
			if h.changes {
				c.op = b.Ops[i]
			}
			pend = append(pend, c)
		}
		return nil
	}
	discard := func(b *operators.Batch) error {
		if b.Len() > 0 {
			t.Fatalf("restart re-arm watermark emitted %d rows (state was not closed before the commit): %v", b.Len(), rowText(b.Rows[0]))
		}
		return nil
	}

	op := h.build(&pendErr)
	var (
		memKV    *operators.MemKV
		snapKV   *operators.MemKV // committed snapshot
		ep       *state.Epoch
		curTable func() operators.KV
	)
	switch h.mode {
	case kvMem:
		memKV = operators.NewMemKV()
		curTable = func() operators.KV { return memKV }
	case kvSnapshot:
		snapKV = operators.NewMemKV()
		curTable = func() operators.KV { memKV = cloneKV(snapKV); return memKV }
	case kvPebble:
		curTable = func() operators.KV {
			ep = h.store.NewEpoch()
			return ep.Table(h.prefix)
		}
	}
	if h.mode != kvMemAuto {
		op.Bind(curTable())
	}
	commit := func() {
		switch h.mode {
		case kvSnapshot:
			snapKV = cloneKV(memKV)
		case kvPebble:
			if err := ep.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		res.out = append(res.out, pend...)
		for _, e := range pendErr {
			res.errs[e.id] = append(res.errs[e.id], e.err)
		}
		pend, pendErr = nil, nil
		res.epochs++
	}
	abort := func() {
		if h.mode == kvPebble {
			ep.Discard()
		}
		pend, pendErr = nil, nil
	}

	wm, maxSeen := int64(math.MinInt64), int64(math.MinInt64)
	type mark struct {
		pos         int
		wm, maxSeen int64
	}
	committed := mark{0, wm, maxSeen}
	canEpoch := h.mode == kvSnapshot || h.mode == kvPebble
	for bi := 0; bi < len(batches); bi++ {
		b := &operators.Batch{}
		for _, id := range batches[bi] {
			b.Rows = append(b.Rows, rows[id])
			b.Source = append(b.Source, id)
			if res.wmAt[id] != math.MaxInt64 && res.wmAt[id] != wm {
				t.Fatalf("replay: row %d met watermark %d, before %d", id, wm, res.wmAt[id])
			}
			res.wmAt[id] = wm
		}
		if err := op.Process(b, emit); err != nil {
			t.Fatalf("Process(batch %d): %v", bi, err)
		}
		if h.timeCol >= 0 {
			for _, id := range batches[bi] {
				if v := rows[id][h.timeCol]; !v.IsNull() {
					maxSeen = max(maxSeen, v.I)
				}
			}
			if maxSeen > math.MinInt64 && maxSeen-h.delay > wm {
				wm = maxSeen - h.delay
				if err := op.OnWatermark(wm, emit); err != nil {
					t.Fatalf("OnWatermark(%d): %v", wm, err)
				}
			}
		}
		switch {
		case canEpoch && res.aborts < 3 && h.r.Float64() < h.pAbort:
			// crash or aborted transaction: no checkpoint; replay from the last commit
			abort()
			res.aborts++
			bi = committed.pos - 1
			wm, maxSeen = committed.wm, committed.maxSeen
			op = h.build(&pendErr)
			op.Bind(curTable())
			if wm > math.MinInt64 {
				if err := operators.Rearm(op, wm, discard); err != nil {
					t.Fatalf("re-arm OnWatermark: %v", err)
				}
			}
		case h.mode != kvMemAuto && h.r.Float64() < h.pCkpt:
			if err := op.OnCheckpoint(); err != nil {
				t.Fatalf("OnCheckpoint: %v", err)
			}
			commit()
			committed = mark{bi + 1, wm, maxSeen}
			if canEpoch && h.r.Float64() < h.pRest {
				res.restart++
				op = h.build(&pendErr)
				op.Bind(curTable())
				if wm > math.MinInt64 {
					if err := operators.Rearm(op, wm, discard); err != nil {
						t.Fatalf("re-arm OnWatermark: %v", err)
					}
				}
			} else {
				op.Bind(curTable())
			}
		}
	}
	if h.mode == kvMemAuto {
		if err := op.Finish(emit); err != nil {
			t.Fatalf("Finish: %v", err)
		}
	} else if h.timeCol >= 0 {
		if err := op.OnWatermark(math.MaxInt64, emit); err != nil {
			t.Fatalf("OnWatermark(max): %v", err)
		}
	}
	if h.mode != kvMemAuto {
		if err := op.OnCheckpoint(); err != nil {
			t.Fatalf("OnCheckpoint: %v", err)
		}
	}
	commit()
	oracleStats.rows += len(rows)
	oracleStats.epochs += res.epochs
	oracleStats.aborts += res.aborts
	oracleStats.restarts += res.restart
	oracleStats.out += len(res.out)
	oracleStats.modes[h.mode]++
	for _, errs := range res.errs {
		for _, err := range errs {
			if errors.Is(err, operators.ErrLate) {
				oracleStats.late++
			} else {
				oracleStats.poison++
			}
		}
	}
	for i := range rows {
		if !sameRow(rows[i], orig[i]) {
			t.Fatalf("the operator modified input row %d: %s, was %s", i, rowText(rows[i]), rowText(orig[i]))
		}
	}
	return res
}

// applyChanges folds a changelog into the final table, strictly: an insert
// must be of a new key, an update or delete of an existing one; with
// res.before, each update follows an update_before of its key holding the
// row the table has for it, and without, no update_before comes.
func applyChanges(t *testing.T, res runResult, key func(types.Row) string) map[string]types.Row {
	t.Helper()
	table := map[string]types.Row{}
	out := res.out
	for i, c := range out {
		k := key(c.row)
		_, ok := table[k]
		switch c.op {
		case operators.OpInsert:
			if ok {
				t.Fatalf("change %d: insert of existing key %s: %s (was %s)", i, k, rowText(c.row), rowText(table[k]))
			}
			table[k] = c.row
		case operators.OpUpdateBefore:
			switch {
			case !res.before:
				t.Fatalf("change %d: update_before from an operator not asked for them: %s", i, rowText(c.row))
			case !ok:
				t.Fatalf("change %d: update_before of missing key %s: %s", i, k, rowText(c.row))
			case !sameRow(c.row, table[k]):
				t.Fatalf("change %d: update_before %s of key %s, which holds %s", i, rowText(c.row), k, rowText(table[k]))
			case i+1 == len(out) || out[i+1].op != operators.OpUpdate || key(out[i+1].row) != k:
				t.Fatalf("change %d: update_before %s not followed by an update of key %s", i, rowText(c.row), k)
			}
		case operators.OpUpdate:
			if !ok {
				t.Fatalf("change %d: update of missing key %s: %s", i, k, rowText(c.row))
			}
			if res.before && (i == 0 || out[i-1].op != operators.OpUpdateBefore) {
				t.Fatalf("change %d: update of key %s without its update_before: %s", i, k, rowText(c.row))
			}
			table[k] = c.row
		case operators.OpDelete:
			if !ok {
				t.Fatalf("change %d: delete of missing key %s: %s", i, k, rowText(c.row))
			}
			delete(table, k)
		default:
			t.Fatalf("change %d: bad op %v", i, c.op)
		}
	}
	return table
}

// arrival orders events so that each arrives at most delay behind the
// latest event time seen (sorting by t + U[0, delay] bounds the disorder):
// every row is at or above the watermark (max seen - delay) when it
// arrives.
func arrival(r *rand.Rand, times []int64, delay int64) []int {
	type ev struct {
		id  int
		key int64
	}
	evs := make([]ev, len(times))
	for i, t := range times {
		evs[i] = ev{i, t + r.Int64N(delay+1)}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].key < evs[b].key })
	out := make([]int, len(evs))
	for i, e := range evs {
		out[i] = e.id
	}
	return out
}

func split(r *rand.Rand, order []int, maxBatch int) [][]int {
	var out [][]int
	for len(order) > 0 {
		n := min(1+r.IntN(maxBatch), len(order))
		out = append(out, order[:n:n])
		order = order[n:]
	}
	return out
}

// watermarks returns the watermark before each batch (MinInt64 first).
func watermarks(rows []types.Row, batches [][]int, timeCol int, delay int64) []int64 {
	wm, maxSeen := int64(math.MinInt64), int64(math.MinInt64)
	out := make([]int64, len(batches))
	for i, b := range batches {
		out[i] = wm
		for _, id := range b {
			if v := rows[id][timeCol]; !v.IsNull() {
				maxSeen = max(maxSeen, v.I)
			}
		}
		if maxSeen > math.MinInt64 {
			wm = max(wm, maxSeen-delay)
		}
	}
	return out
}

func pickMode(r *rand.Rand) kvMode {
	switch x := r.IntN(10); {
	case x < 3:
		return kvMem
	case x < 4:
		return kvMemAuto
	case x < 8:
		return kvSnapshot
	}
	return kvPebble
}

func newHarness(t *testing.T, r *rand.Rand, step *plan.Step, store *state.Store, seed uint64) *harness {
	if r.IntN(2) == 0 {
		// the catalog stores steps as JSON; the engine builds from those
		data, err := json.Marshal(step)
		if err != nil {
			t.Fatal(err)
		}
		back := new(plan.Step)
		if err := json.Unmarshal(data, back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if back.String() != step.String() {
			t.Fatalf("step JSON round trip: %s became %s", step, back)
		}
		step = back
	}
	h := &harness{t: t, r: r, step: step, mode: pickMode(r), store: store, prefix: []byte(fmt.Sprintf("case/%s/%d/", step.Op, seed)),
		timeCol: -1, pCkpt: 0.05 + 0.4*r.Float64(), pAbort: 0.15 * r.Float64(), pRest: r.Float64()}
	if h.store == nil && h.mode == kvPebble {
		h.mode = kvSnapshot
	}
	return h
}

// oracleCount scales a case count for -short and -race.
func oracleCount(n int) int {
	switch {
	case testing.Short():
		return max(n/10, 20)
	case raceEnabled:
		return n / 4
	}
	return n
}

func openStore(t *testing.T) *state.Store {
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// ---------------------------------------------------------------------------

func TestOracle(t *testing.T) {
	t.Run("tumble", func(t *testing.T) { runCases(t, oracleCount(2000), windowCase("tumble")) })
	t.Run("hop", func(t *testing.T) { runCases(t, oracleCount(1000), windowCase("hop")) })
	// A cache of 3 entries: dropped at most epochs, read back from the KV,
	// and complete again once the windows read back have closed.
	t.Run("tumble-small-cache", func(t *testing.T) {
		defer operators.SetMaxCachedEntries(3)()
		runCases(t, oracleCount(1000), windowCase("tumble"))
	})
	t.Run("hop-small-cache", func(t *testing.T) {
		defer operators.SetMaxCachedEntries(3)()
		runCases(t, oracleCount(500), windowCase("hop"))
	})
	t.Run("group", func(t *testing.T) { runCases(t, oracleCount(1000), groupCase) })
	// A cold cache of 100 bytes evicts at most epochs; a hash of five
	// values makes keys displace each other in it.
	t.Run("group-small-cold-cache", func(t *testing.T) {
		defer operators.SetColdCache(100, false)()
		runCases(t, oracleCount(500), groupCase)
	})
	t.Run("group-colliding-cold-cache", func(t *testing.T) {
		defer operators.SetColdCache(64<<20, true)()
		runCases(t, oracleCount(500), groupCase)
	})
	t.Run("topn", func(t *testing.T) { runCases(t, oracleCount(1000), topNCase) })
	t.Run("dedup", func(t *testing.T) { runCases(t, oracleCount(500), dedupCase) })
	t.Run("session", func(t *testing.T) { runCases(t, oracleCount(1000), sessionCase) })
}

// oracleStats counts what the cases of one kind exercised (logged with -v).
var oracleStats struct {
	rows, late, poison, epochs, aborts, restarts, out int
	modes                                             [4]int
}

func runCases(t *testing.T, n int, fn func(t *testing.T, seed uint64, store *state.Store)) {
	store := openStore(t)
	oracleStats = struct {
		rows, late, poison, epochs, aborts, restarts, out int
		modes                                             [4]int
	}{}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { fn(t, seed, store) })
	}
	st := oracleStats
	t.Logf("%d cases: %d input rows (%d late, %d poison), %d output rows/changes, %d epochs, %d aborts, %d restarts; modes mem/mem-auto/snapshot/pebble %v",
		n, st.rows, st.late, st.poison, st.out, st.epochs, st.aborts, st.restarts, st.modes)
}

func caseRand(seed uint64, kind string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint64(kind[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

// ---------------------------------------------------------------------------
// Windowed aggregates (TUMBLE, HOP).

type aggQuery struct {
	tt      types.Type
	group   []int // input columns
	aggs    []aggDef
	changes bool
}

func (q *aggQuery) steps(op string) *plan.Step {
	s := &plan.Step{Op: op, Changes: q.changes, TimeCol: cT, TimeType: q.tt}
	for _, c := range q.group {
		s.GroupBy = append(s.GroupBy, expr.Col(c, colType(c, q.tt), fmt.Sprintf("c%d", c)))
	}
	for _, a := range q.aggs {
		s.Aggs = append(s.Aggs, a.spec(q.tt))
	}
	return s
}

func randQuery(r *rand.Rand) *aggQuery {
	q := &aggQuery{tt: types.Timestamp, changes: r.IntN(3) == 0}
	if r.IntN(2) == 0 {
		q.tt = types.TimestampTZ
	}
	switch r.IntN(7) {
	case 0:
	case 1, 2:
		q.group = []int{cK1}
	case 3:
		q.group = []int{cK2}
	case 4:
		q.group = []int{cK2, cK1}
	case 5:
		q.group = []int{cVBool, cVN} // numerics group by value (1.0 = 1.00)
	case 6:
		q.group = []int{cVF} // -0 = 0
	}
	n := 1 + r.IntN(5)
	for range n {
		q.aggs = append(q.aggs, aggPool[r.IntN(len(aggPool))])
	}
	return q
}

func (q *aggQuery) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "group by %v, aggs %v, changes %v, time %s", q.group, q.aggs, q.changes, q.tt)
	return sb.String()
}

// poisonRow reports whether evaluating the query's aggregate arguments
// over row fails.
func (q *aggQuery) poisonRow(row types.Row) bool {
	for _, a := range q.aggs {
		if _, p := a.arg(row); p {
			return true
		}
	}
	return false
}

// expectGroups computes the aggregate rows of groups (keys → rows).
type expGroup struct {
	vals  []types.Value
	start int64
	end   int64
	rows  []types.Row
}

func checkAggRow(q *aggQuery, g *expGroup, got types.Row, window bool) error {
	ng := len(q.group)
	width := ng + len(q.aggs)
	if window {
		width += 2
	}
	if len(got) != width {
		return fmt.Errorf("row %s has %d columns, want %d", rowText(got), len(got), width)
	}
	for i, v := range g.vals {
		// which of equal values (1.0, 1.00) represents the group is
		// unspecified: compare by value
		if v.IsNull() != got[i].IsNull() || (!v.IsNull() && (v.K != got[i].K || canon(v) != canon(got[i]))) {
			return fmt.Errorf("group column %d: got %s, want %s", i, got[i], v)
		}
	}
	off := ng
	if window {
		ws, we := got[ng], got[ng+1]
		if ws.K != q.tt || we.K != q.tt || ws.I != g.start || we.I != g.end {
			return fmt.Errorf("window: got [%s(%d), %s(%d)), want [%d, %d) of %s", ws.K, ws.I, we.K, we.I, g.start, g.end, q.tt)
		}
		off += 2
	}
	for j, a := range q.aggs {
		if err := match(got[off+j], expectAgg(a, q.tt, g.rows)); err != nil {
			return fmt.Errorf("%s: %v", a, err)
		}
	}
	return nil
}

func windowCase(kind string) func(t *testing.T, seed uint64, store *state.Store) {
	return func(t *testing.T, seed uint64, store *state.Store) {
		r := caseRand(seed, kind)
		q := randQuery(r)
		unit := int64(1)
		if r.IntN(2) == 0 {
			unit = types.MicrosPerSecond
		}
		spec := plan.WindowSpec{Kind: kind, Size: int64(1+r.IntN(40)) * unit}
		if kind == "hop" {
			spec.Slide = int64(1+r.IntN(20)) * unit
			spec.Size = spec.Slide * int64(1+r.IntN(5))
			if r.IntN(3) == 0 {
				spec.Size += int64(r.IntN(int(spec.Slide/unit))) * unit // size not a multiple of the slide
			}
		}
		delay := int64(r.IntN(int(3*spec.Size/unit)+1)) * unit
		t0 := (r.Int64N(2_000_000_000) - 1_000_000_000) * unit // before and after 1970
		n := 10 + r.IntN(120)
		gen := &aggRowGen{r: r, tt: q.tt, nk1: 1 + r.IntN(4), nk2: 1 + r.IntN(4), pNull: 0.15 * r.Float64(), pZero: 0.05 * float64(r.IntN(2)), huge: r.IntN(4) == 0}
		times := make([]int64, n)
		rows := make([]types.Row, n)
		cur := t0
		maxStep := 1 + r.IntN(int(spec.Size/unit)+2)
		for i := range times {
			cur += int64(r.IntN(maxStep+1)) * unit
			times[i] = cur
			rows[i] = gen.row(cur, r.IntN(100) == 0)
		}
		batches := split(r, arrival(r, times, delay), 1+r.IntN(16))
		// inject rows around and behind the watermark: each contributes to
		// the windows still open when it arrives (end > watermark) and is
		// reported late when none is
		pLate := 0.0
		if r.IntN(2) == 0 {
			pLate = 0.2 * r.Float64()
		}
		wms := watermarks(rows, batches, cT, delay)
		for bi := range batches {
			if wms[bi] == math.MinInt64 || r.Float64() >= pLate {
				continue
			}
			for range 1 + r.IntN(3) {
				lt := wms[bi] - r.Int64N(2*spec.Size+1)
				if r.IntN(4) == 0 {
					lt = wms[bi] // exactly at the watermark
				}
				rows = append(rows, gen.row(lt, false))
				pos := r.IntN(len(batches[bi]) + 1)
				nb := append(append(append([]int(nil), batches[bi][:pos]...), len(rows)-1), batches[bi][pos:]...)
				batches[bi] = nb
			}
		}
		step := q.steps(plan.OpWindowAggregate)
		step.Window = &spec
		h := newHarness(t, r, step, store, seed)
		h.timeCol, h.delay, h.changes = cT, delay, q.changes
		if h.mode == kvMemAuto && q.changes {
			h.mode = kvMem
		}
		desc := fmt.Sprintf("%s size=%d slide=%d delay=%d unit=%d rows=%d batches=%d mode=%s; %s", kind, spec.Size, spec.Slide, delay, unit, len(rows), len(batches), h.mode, q)
		res := h.run(rows, batches)

		// batch side
		groups := map[string]*expGroup{}
		var order []string
		expErr := map[int]string{}
		for id, row := range rows {
			if row[cT].IsNull() {
				expErr[id] = pgerror.NullValueNotAllowed.String()
				continue
			}
			tm := row[cT].I
			var wins [][2]int64
			// every window [k·slide, k·slide+size) containing tm, the batch way
			slide := spec.Size
			if kind == "hop" {
				slide = spec.Slide
			}
			for k := types.FloorDiv(tm-spec.Size, slide); k <= types.FloorDiv(tm, slide); k++ {
				s := k * slide
				if s <= tm && tm < s+spec.Size && s+spec.Size > res.wmAt[id] {
					wins = append(wins, [2]int64{s, s + spec.Size})
				}
			}
			poison := q.poisonRow(row)
			switch {
			case len(wins) == 0 && poison:
				expErr[id] = "late-or-poison"
				continue
			case len(wins) == 0:
				expErr[id] = "late"
				continue
			case poison:
				expErr[id] = pgerror.DivisionByZero.String()
				continue
			}
			gv := make([]types.Value, len(q.group))
			for i, c := range q.group {
				gv[i] = row[c]
			}
			for _, w := range wins {
				k := fmt.Sprintf("%s%d,%d", groupKeyText(gv), w[0], w[1])
				g := groups[k]
				if g == nil {
					g = &expGroup{vals: gv, start: w[0], end: w[1]}
					groups[k] = g
					order = append(order, k)
				}
				g.rows = append(g.rows, row)
			}
		}
		checkErrors(t, desc, res, expErr)
		keyOf := func(row types.Row) string {
			ng := len(q.group)
			if len(row) < ng+2 {
				return "short row " + rowText(row)
			}
			return fmt.Sprintf("%s%d,%d", groupKeyText(row[:ng]), row[ng].I, row[ng+1].I)
		}
		var final map[string]types.Row
		if q.changes {
			final = applyChanges(t, res, keyOf)
		} else {
			final = map[string]types.Row{}
			for _, c := range res.out {
				k := keyOf(c.row)
				if prev, dup := final[k]; dup {
					t.Fatalf("%s\nwindow emitted twice: %s and %s", desc, rowText(prev), rowText(c.row))
				}
				final[k] = c.row
			}
		}
		compareGroups(t, desc, q, groups, order, final, true)
	}
}

func compareGroups(t *testing.T, desc string, q *aggQuery, groups map[string]*expGroup, order []string, final map[string]types.Row, window bool) {
	t.Helper()
	for _, k := range order {
		got, ok := final[k]
		if !ok {
			t.Fatalf("%s\nmissing result row for group %s (%d input rows, first %s)", desc, k, len(groups[k].rows), rowText(groups[k].rows[0]))
		}
		if err := checkAggRow(q, groups[k], got, window); err != nil {
			t.Fatalf("%s\ngroup %s, %d rows: %s: %v", desc, k, len(groups[k].rows), rowText(got), err)
		}
	}
	for k, row := range final {
		if _, ok := groups[k]; !ok {
			t.Fatalf("%s\nunexpected result row %s (key %s)", desc, rowText(row), k)
		}
	}
}

// checkErrors compares the rows reported through OnError with the
// expected ones: each reported exactly once (aborted epochs' reports are
// dropped with them), with the right kind.
func checkErrors(t *testing.T, desc string, res runResult, exp map[int]string) {
	t.Helper()
	for id, errs := range res.errs {
		want, ok := exp[id]
		if !ok {
			t.Fatalf("%s\nrow %d reported but should be fine: %v", desc, id, errs)
		}
		if len(errs) != 1 {
			t.Fatalf("%s\nrow %d reported %d times: %v", desc, id, len(errs), errs)
		}
		err := errs[0]
		late := errors.Is(err, operators.ErrLate)
		switch want {
		case "late":
			if !late {
				t.Fatalf("%s\nrow %d (met watermark %d): got %v, want ErrLate", desc, id, res.wmAt[id], err)
			}
		case "late-or-poison":
			if !late && pgerror.CodeOf(err).String() != pgerror.DivisionByZero.String() {
				t.Fatalf("%s\nrow %d: got %v, want ErrLate or 22012", desc, id, err)
			}
		default:
			if late || pgerror.CodeOf(err).String() != want {
				t.Fatalf("%s\nrow %d: got %v (code %s), want code %s", desc, id, err, pgerror.CodeOf(err).String(), want)
			}
		}
	}
	for id, want := range exp {
		if len(res.errs[id]) == 0 {
			t.Fatalf("%s\nrow %d (met watermark %d) should be reported (%s) but was not", desc, id, res.wmAt[id], want)
		}
	}
}

// ---------------------------------------------------------------------------
// Unwindowed GROUP BY (changes).

func groupCase(t *testing.T, seed uint64, store *state.Store) {
	r := caseRand(seed, "group")
	q := randQuery(r)
	q.changes = true
	n := 1 + r.IntN(150)
	gen := &aggRowGen{r: r, tt: q.tt, nk1: 1 + r.IntN(6), nk2: 1 + r.IntN(6), pNull: 0.15 * r.Float64(), pZero: 0.05 * float64(r.IntN(2)), huge: r.IntN(4) == 0}
	rows := make([]types.Row, n)
	times := make([]int64, n)
	for i := range rows {
		times[i] = int64(i)
		rows[i] = gen.row(int64(r.IntN(1000)), false)
	}
	batches := split(r, arrival(r, times, int64(r.IntN(30))), 1+r.IntN(20))
	step := q.steps(plan.OpGroupAggregate)
	h := newHarness(t, r, step, store, seed)
	h.changes = true
	if h.mode == kvMemAuto {
		h.mode = kvMem
	}
	desc := fmt.Sprintf("group rows=%d batches=%d mode=%s; %s", n, len(batches), h.mode, q)
	res := h.run(rows, batches)

	groups := map[string]*expGroup{}
	var order []string
	expErr := map[int]string{}
	for id, row := range rows {
		if q.poisonRow(row) {
			expErr[id] = pgerror.DivisionByZero.String()
			continue
		}
		gv := make([]types.Value, len(q.group))
		for i, c := range q.group {
			gv[i] = row[c]
		}
		k := groupKeyText(gv)
		g := groups[k]
		if g == nil {
			g = &expGroup{vals: gv}
			groups[k] = g
			order = append(order, k)
		}
		g.rows = append(g.rows, row)
	}
	checkErrors(t, desc, res, expErr)
	final := applyChanges(t, res, func(row types.Row) string { return groupKeyText(row[:len(q.group)]) })
	compareGroups(t, desc, q, groups, order, final, false)
}

// ---------------------------------------------------------------------------
// Sessions.

func sessionCase(t *testing.T, seed uint64, store *state.Store) {
	r := caseRand(seed, "session")
	q := randQuery(r)
	unit := int64(1)
	if r.IntN(2) == 0 {
		unit = types.MicrosPerSecond
	}
	gap := int64(1+r.IntN(30)) * unit
	delay := int64(r.IntN(int(4*gap/unit)+1)) * unit
	if r.IntN(4) == 0 {
		delay = 0 // in order but for ties
	}
	t0 := (r.Int64N(2_000_000_000) - 1_000_000_000) * unit
	n := 10 + r.IntN(120)
	gen := &aggRowGen{r: r, tt: q.tt, nk1: 1 + r.IntN(3), nk2: 1 + r.IntN(3), pNull: 0.15 * r.Float64(), pZero: 0.05 * float64(r.IntN(2)), huge: r.IntN(4) == 0}
	times := make([]int64, n)
	rows := make([]types.Row, n)
	cur := t0
	for i := range times {
		if r.IntN(8) == 0 {
			cur += int64(r.IntN(int(3*gap/unit)+1)) * unit
		} else {
			cur += int64(r.IntN(int(gap/unit)/2+2)) * unit
		}
		times[i] = cur
		rows[i] = gen.row(cur, r.IntN(100) == 0)
	}
	// Rows may arrive exactly at the watermark (delay behind the maximum):
	// they can still extend a session that ends there
	// (TestSessionRowAtWatermark).
	batches := split(r, arrival(r, times, delay), 1+r.IntN(16))
	nOnTime := len(rows)
	gkey := func(row types.Row) string {
		gv := make([]types.Value, len(q.group))
		for i, c := range q.group {
			gv[i] = row[c]
		}
		return groupKeyText(gv)
	}
	// late rows: behind the watermark and outside every session that may
	// be open (reported late), or inside the span of a session that is
	// surely open (accepted). Whether a session whose end is exactly the
	// watermark is still open is left to the operator.
	late := map[int]bool{}
	if r.IntN(2) == 0 {
		wms := watermarks(rows, batches, cT, delay)
		var seen []int
		for bi := range batches {
			if wms[bi] != math.MinInt64 && r.IntN(3) == 0 {
				row := gen.row(0, false)
				k := gkey(row)
				var ts []int64
				for _, id := range append(seen[:len(seen):len(seen)], batches[bi]...) { // the late row goes last in its batch
					if !rows[id][cT].IsNull() && gkey(rows[id]) == k && !late[id] && !q.poisonRow(rows[id]) {
						ts = append(ts, rows[id][cT].I)
					}
				}
				sess := sessionsOf(ts, gap)
				var open, maybeOpen [][2]int64
				for _, s := range sess {
					if s[1]+gap > wms[bi] {
						open = append(open, s)
					}
					if s[1]+gap >= wms[bi] {
						maybeOpen = append(maybeOpen, s)
					}
				}
				accept := len(open) > 0 && r.IntN(2) == 0
				var lt int64
				ok := false
				for range 10 {
					if accept {
						s := open[r.IntN(len(open))]
						lt = s[0] + r.Int64N(s[1]-s[0]+1)
						ok = lt <= wms[bi]
					} else {
						lt = wms[bi] - gap - r.Int64N(3*gap+1)
						ok = true
						for _, s := range maybeOpen {
							if lt >= s[0]-gap && lt <= s[1]+gap {
								ok = false
							}
						}
					}
					if ok {
						break
					}
				}
				if ok {
					row[cT] = types.NewTimestamp(q.tt, lt)
					rows = append(rows, row)
					id := len(rows) - 1
					late[id] = !accept
					batches[bi] = append(batches[bi][:len(batches[bi]):len(batches[bi])], id) // at the batch's end
				}
			}
			seen = append(seen, batches[bi]...)
		}
	}
	step := q.steps(plan.OpSession)
	step.Window = &plan.WindowSpec{Kind: "session", Gap: gap}
	h := newHarness(t, r, step, store, seed)
	h.timeCol, h.delay, h.changes = cT, delay, q.changes
	if h.mode == kvMemAuto && q.changes {
		h.mode = kvMem
	}
	desc := fmt.Sprintf("session gap=%d delay=%d unit=%d rows=%d (on time %d) batches=%d mode=%s; %s", gap, delay, unit, len(rows), nOnTime, len(batches), h.mode, q)
	res := h.run(rows, batches)

	expErr := map[int]string{}
	byKey := map[string][]int{}
	var keys []string
	for id, row := range rows {
		if row[cT].IsNull() {
			expErr[id] = pgerror.NullValueNotAllowed.String()
			continue
		}
		poison := q.poisonRow(row)
		if id < nOnTime && row[cT].I < res.wmAt[id] {
			t.Fatalf("%s\ngenerator: on-time row %d at %d met watermark %d", desc, id, row[cT].I, res.wmAt[id])
		}
		switch {
		case late[id] && poison:
			expErr[id] = "late-or-poison"
			continue
		case late[id]:
			expErr[id] = "late"
			continue
		case poison:
			expErr[id] = pgerror.DivisionByZero.String()
			continue
		}
		k := gkey(row)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], id)
	}
	checkErrors(t, desc, res, expErr)
	groups := map[string]*expGroup{}
	var order []string
	for _, k := range keys {
		ids := byKey[k]
		sort.SliceStable(ids, func(a, b int) bool { return rows[ids[a]][cT].I < rows[ids[b]][cT].I })
		var g *expGroup
		for i, id := range ids {
			tm := rows[id][cT].I
			if i == 0 || tm-rows[ids[i-1]][cT].I > gap {
				gv := make([]types.Value, len(q.group))
				for j, c := range q.group {
					gv[j] = rows[id][c]
				}
				g = &expGroup{vals: gv, start: tm}
				key := fmt.Sprintf("%s%d", k, tm)
				groups[key] = g
				order = append(order, key)
			}
			g.end = tm + gap
			g.rows = append(g.rows, rows[id])
		}
	}
	keyOf := func(row types.Row) string {
		ng := len(q.group)
		return fmt.Sprintf("%s%d", groupKeyText(row[:ng]), row[ng].I)
	}
	var final map[string]types.Row
	if q.changes {
		final = applyChanges(t, res, keyOf)
	} else {
		final = map[string]types.Row{}
		for _, c := range res.out {
			k := keyOf(c.row)
			if prev, dup := final[k]; dup {
				t.Fatalf("%s\nsession emitted twice: %s and %s", desc, rowText(prev), rowText(c.row))
			}
			final[k] = c.row
		}
	}
	compareGroups(t, desc, q, groups, order, final, true)
}

// sessionsOf splits sorted-or-not times into [first, last] spans with
// gaps > gap between them.
func sessionsOf(ts []int64, gap int64) [][2]int64 {
	ts = append([]int64(nil), ts...)
	sort.Slice(ts, func(a, b int) bool { return ts[a] < ts[b] })
	var out [][2]int64
	for i, t := range ts {
		if i == 0 || t-ts[i-1] > gap {
			out = append(out, [2]int64{t, t})
		}
		out[len(out)-1][1] = t
	}
	return out
}

// ---------------------------------------------------------------------------
// Top-N and dedup.

const (
	tK1    = iota // int4
	tK2           // text
	tTS           // timestamp
	tScore        // int8, nullable
	tID           // int4, unique
	tPay          // text
	tD            // int4 divisor of the partition expression (0: poison)
	tWidth
)

type topQuery struct {
	part   []int // input columns
	poison bool  // partition by k1 + 0*(1/d) instead of k1
	keys   []plan.SortKey
	n      int64
	rank   string // "" (ROW_NUMBER), "rank" or "dense_rank"
}

func (q *topQuery) step() *plan.Step {
	s := &plan.Step{Op: plan.OpTopN, Keys: q.keys, N: q.n, Width: tWidth, Rank: q.rank}
	tys := map[int]types.Type{tK1: types.Int4, tK2: types.Text}
	for _, c := range q.part {
		e := expr.Col(c, tys[c], fmt.Sprintf("c%d", c))
		if c == tK1 && q.poison {
			inv, err := expr.Call("/", expr.Const(types.NewInt(types.Int4, 1)), expr.Col(tD, types.Int4, "d"))
			if err != nil {
				panic(err)
			}
			zero, err := expr.Call("*", expr.Const(types.NewInt(types.Int4, 0)), inv)
			if err != nil {
				panic(err)
			}
			if e, err = expr.Call("+", e, zero); err != nil {
				panic(err)
			}
		}
		s.PartitionBy = append(s.PartitionBy, e)
	}
	return s
}

func (q *topQuery) partKey(row types.Row) string {
	gv := make([]types.Value, len(q.part))
	for i, c := range q.part {
		gv[i] = row[c]
	}
	return groupKeyText(gv)
}

// cmpOrder is the batch side's ORDER BY comparison.
func cmpOrder(keys []plan.SortKey, a, b types.Row) int {
	for _, k := range keys {
		x, y := a[k.Col], b[k.Col]
		var c int
		switch {
		case x.IsNull() && y.IsNull():
			c = 0
		case x.IsNull() || y.IsNull():
			// NULL is larger than everything; NULLS FIRST puts it first
			c = 1
			if y.IsNull() {
				c = -1
			}
			if k.NullsFirst {
				c = -c
			}
			return c
		default:
			c = cmpVal(x, y)
			if k.Desc {
				c = -c
			}
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func topNCase(t *testing.T, seed uint64, store *state.Store) {
	r := caseRand(seed, "topn")
	q := &topQuery{n: int64(1 + r.IntN(5)), poison: r.IntN(4) == 0}
	q.rank = []string{"", "rank", "dense_rank"}[r.IntN(3)]
	switch r.IntN(4) {
	case 0:
	case 1, 2:
		q.part = []int{tK1}
	case 3:
		q.part = []int{tK1, tK2}
	}
	desc := r.IntN(2) == 0
	q.keys = []plan.SortKey{{Col: tScore, Desc: desc, NullsFirst: desc != (r.IntN(4) == 0)}}
	distinctKeys := r.IntN(3) == 0
	if distinctKeys {
		q.keys = append(q.keys, plan.SortKey{Col: tID, Desc: r.IntN(2) == 0})
	} else if r.IntN(2) == 0 {
		q.keys = append(q.keys, plan.SortKey{Col: tTS})
	}
	n := 1 + r.IntN(150)
	nk1, nk2 := 1+r.IntN(5), 1+r.IntN(3)
	scoreRange := 1 + r.IntN(50)
	pNull := 0.2 * r.Float64()
	rows := make([]types.Row, n)
	times := make([]int64, n)
	ids := r.Perm(n)
	for i := range rows {
		times[i] = int64(i)
		row := make(types.Row, tWidth)
		row[tK1] = types.NewInt(types.Int4, int64(r.IntN(nk1)))
		row[tK2] = types.NewText(textPool[r.IntN(nk2)])
		row[tTS] = types.NewTimestamp(types.Timestamp, int64(r.IntN(100))*types.MicrosPerSecond)
		if r.Float64() >= pNull {
			row[tScore] = types.NewInt8(int64(r.IntN(scoreRange)))
		}
		row[tID] = types.NewInt(types.Int4, int64(ids[i]))
		row[tPay] = types.NewText(fmt.Sprintf("p%d", r.IntN(1000)))
		row[tD] = types.NewInt(types.Int4, 1+int64(r.IntN(5)))
		if q.poison && r.IntN(20) == 0 {
			row[tD] = types.NewInt(types.Int4, 0)
		}
		rows[i] = row
	}
	batches := split(r, arrival(r, times, int64(r.IntN(40))), 1+r.IntN(20))
	h := newHarness(t, r, q.step(), store, seed)
	h.changes = true
	if h.mode == kvMemAuto {
		h.mode = kvMem
	}
	d := fmt.Sprintf("topn %s n=%d part=%v poison=%v keys=%+v rows=%d batches=%d mode=%s", q.rank, q.n, q.part, q.poison, q.keys, n, len(batches), h.mode)
	res := h.run(rows, batches)
	if q.rank != "" {
		checkRank(t, d, q, rows, batches, res)
		return
	}
	checkTop(t, d, q, rows, batches, res)
}

// checkRank compares the final RANK() or DENSE_RANK() <= N table with the
// ranks computed over all input: the same multiset of (row, rank) per
// partition (ties are all kept, so the set is exact), positions 1…m in
// the order of the ranks, and every delete naming the row its position
// showed.
func checkRank(t *testing.T, desc string, q *topQuery, rows []types.Row, batches [][]int, res runResult) {
	t.Helper()
	parts := checkTopInput(t, desc, q, rows, batches, res)
	table := map[string]types.Row{}
	for i, c := range res.out {
		if len(c.row) != tWidth+2 {
			t.Fatalf("%s\nranked row %s has %d columns, want %d", desc, rowText(c.row), len(c.row), tWidth+2)
		}
		k := fmt.Sprintf("%s#%d", q.partKey(c.row), c.row[tWidth+1].I)
		old, ok := table[k]
		switch {
		case c.op == operators.OpInsert && ok, c.op != operators.OpInsert && !ok:
			t.Fatalf("%s\nchange %d: %v of key %s (present: %v): %s", desc, i, c.op, k, ok, rowText(c.row))
		case c.op == operators.OpDelete:
			if !sameRow(old, c.row) {
				t.Fatalf("%s\nchange %d: delete of %s names %s, the position shows %s", desc, i, k, rowText(c.row), rowText(old))
			}
			delete(table, k)
		default:
			table[k] = c.row
		}
	}
	total := 0
	for k, list := range parts {
		sort.SliceStable(list, func(a, b int) bool { return cmpOrder(q.keys, list[a], list[b]) < 0 })
		want := map[string]int{}
		rank := int64(0)
		for i, row := range list {
			if i == 0 || cmpOrder(q.keys, list[i-1], row) != 0 {
				rank++
				if q.rank == "rank" {
					rank = int64(i) + 1
				}
			}
			if rank > q.n {
				break
			}
			want[fmt.Sprintf("%s r%d", rowText(row), rank)]++
			total++
		}
		var prev types.Row
		for p := 1; p <= len(list); p++ {
			row, ok := table[fmt.Sprintf("%s#%d", k, p)]
			if !ok {
				break
			}
			got := fmt.Sprintf("%s r%d", rowText(row[:tWidth]), row[tWidth].I)
			if want[got] == 0 {
				t.Fatalf("%s\npartition %s position %d: %s is not expected; ranked input %s", desc, k, p, got, rowsText(list))
			}
			want[got]--
			if prev != nil && (cmpOrder(q.keys, prev, row) > 0 || prev[tWidth].I > row[tWidth].I) {
				t.Fatalf("%s\npartition %s position %d: %s after %s", desc, k, p, rowText(row), rowText(prev))
			}
			prev = row
		}
		for w, n := range want {
			if n > 0 {
				t.Fatalf("%s\npartition %s: %s missing (or not at positions 1…m)", desc, k, w)
			}
		}
	}
	if len(table) != total {
		t.Fatalf("%s\nfinal table has %d rows, want %d", desc, len(table), total)
	}
}

// checkTopInput checks the poison rows a top-N case reported and returns
// the other input rows by partition key, in arrival order (ties keep it
// in the operator; here only for stability).
func checkTopInput(t *testing.T, desc string, q *topQuery, rows []types.Row, batches [][]int, res runResult) map[string][]types.Row {
	t.Helper()
	expErr := map[int]string{}
	parts := map[string][]types.Row{}
	for _, b := range batches {
		for _, id := range b {
			if q.poison && rows[id][tD].I == 0 && slicesContains(q.part, tK1) {
				expErr[id] = pgerror.DivisionByZero.String()
				continue
			}
			k := q.partKey(rows[id])
			parts[k] = append(parts[k], rows[id])
		}
	}
	checkErrors(t, desc, res, expErr)
	return parts
}

// checkTop compares the final top-N table with ROW_NUMBER() <= N computed
// over all input: per rank the order-key values must match; rows whose
// order keys tie are compared as multisets (a tie group cut by N: the
// chosen rows must come from the group).
func checkTop(t *testing.T, desc string, q *topQuery, rows []types.Row, batches [][]int, res runResult) {
	t.Helper()
	parts := checkTopInput(t, desc, q, rows, batches, res)
	final := applyChanges(t, res, func(row types.Row) string {
		if len(row) != tWidth+1 {
			t.Fatalf("%s\ntop-N row %s has %d columns, want %d", desc, rowText(row), len(row), tWidth+1)
		}
		return fmt.Sprintf("%s#%d", q.partKey(row), row[tWidth].I)
	})
	total := 0
	for k, list := range parts {
		sort.SliceStable(list, func(a, b int) bool { return cmpOrder(q.keys, list[a], list[b]) < 0 })
		m := min(int(q.n), len(list))
		total += m
		got := make([]types.Row, m)
		for i := range m {
			row, ok := final[fmt.Sprintf("%s#%d", k, i+1)]
			if !ok {
				t.Fatalf("%s\npartition %s: rank %d missing (%d rows in partition)", desc, k, i+1, len(list))
			}
			if row[tWidth].K != types.Int8 {
				t.Fatalf("%s\nrow number %s is %s, want bigint", desc, row[tWidth], row[tWidth].K)
			}
			got[i] = row[:tWidth]
		}
		for i := 0; i < m; {
			j := i
			for j < len(list) && cmpOrder(q.keys, list[i], list[j]) == 0 {
				j++
			}
			// tie group list[i:j]; ranks i..min(j,m)-1
			hi := min(j, m)
			pool := map[string]int{}
			for _, r := range list[i:j] {
				pool[rowText(r)]++
			}
			for p := i; p < hi; p++ {
				if cmpOrder(q.keys, got[p], list[i]) != 0 {
					t.Fatalf("%s\npartition %s rank %d: got %s, want order keys of %s\nexpected top: %s", desc, k, p+1, rowText(got[p]), rowText(list[i]), rowsText(list[:m]))
				}
				if pool[rowText(got[p])] == 0 {
					t.Fatalf("%s\npartition %s rank %d: row %s is not among the tied input rows %s", desc, k, p+1, rowText(got[p]), rowsText(list[i:j]))
				}
				pool[rowText(got[p])]--
			}
			i = j
		}
	}
	if len(final) != total {
		for k, row := range final {
			t.Logf("final %s: %s", k, rowText(row))
		}
		t.Fatalf("%s\nfinal table has %d rows, want %d", desc, len(final), total)
	}
}

func rowsText(rs []types.Row) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, rowText(r))
	}
	return strings.Join(parts, " ")
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// dedupCase: ROW_NUMBER() OVER (PARTITION BY key ORDER BY ts DESC) = 1,
// the latest row per key, with distinct event times.
func dedupCase(t *testing.T, seed uint64, store *state.Store) {
	r := caseRand(seed, "dedup")
	q := &topQuery{n: 1, part: []int{tK1}, keys: []plan.SortKey{{Col: tTS, Desc: true, NullsFirst: true}}}
	if r.IntN(3) == 0 {
		q.part = []int{tK2}
	}
	n := 1 + r.IntN(200)
	nk := 1 + r.IntN(10)
	rows := make([]types.Row, n)
	tsPerm := r.Perm(n)
	times := make([]int64, n)
	for i := range rows {
		row := make(types.Row, tWidth)
		row[tK1] = types.NewInt(types.Int4, int64(r.IntN(nk)))
		row[tK2] = types.NewText(textPool[r.IntN(min(nk, len(textPool)))])
		ts := int64(tsPerm[i]) * types.MicrosPerSecond
		times[i] = ts
		row[tTS] = types.NewTimestamp(types.Timestamp, ts)
		row[tScore] = types.NewInt8(int64(r.IntN(10)))
		row[tID] = types.NewInt(types.Int4, int64(i))
		row[tPay] = types.NewText(fmt.Sprintf("v%d", i))
		row[tD] = types.NewInt(types.Int4, 1)
		rows[i] = row
	}
	delay := int64(r.IntN(50)) * types.MicrosPerSecond
	batches := split(r, arrival(r, times, delay), 1+r.IntN(20))
	h := newHarness(t, r, q.step(), store, seed)
	h.changes = true
	if h.mode == kvMemAuto {
		h.mode = kvMem
	}
	desc := fmt.Sprintf("dedup part=%v rows=%d batches=%d mode=%s", q.part, n, len(batches), h.mode)
	res := h.run(rows, batches)
	checkErrors(t, desc, res, nil)
	final := applyChanges(t, res, func(row types.Row) string { return fmt.Sprintf("%s#%d", q.partKey(row), row[tWidth].I) })
	latest := map[string]types.Row{}
	for _, row := range rows {
		k := q.partKey(row)
		if cur, ok := latest[k]; !ok || row[tTS].I > cur[tTS].I {
			latest[k] = row
		}
	}
	if len(final) != len(latest) {
		t.Fatalf("%s\nfinal table has %d rows, want %d (one per key)", desc, len(final), len(latest))
	}
	for k, want := range latest {
		got, ok := final[k+"#1"]
		if !ok {
			t.Fatalf("%s\nkey %s: no row", desc, k)
		}
		if rowText(got[:tWidth]) != rowText(want) {
			t.Fatalf("%s\nkey %s: got %s, want the latest %s", desc, k, rowText(got), rowText(want))
		}
	}
}
