package operators

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// ---------------------------------------------------------------------------
// helpers

func i4(v int64) types.Value   { return types.NewInt(types.Int4, v) }
func i8(v int64) types.Value   { return types.NewInt8(v) }
func txt(s string) types.Value { return types.NewText(s) }
func f8(f float64) types.Value { return types.NewFloat8(f) }
func num(s string) types.Value {
	d, _, err := apd.NewFromString(s)
	if err != nil {
		panic(err)
	}
	return types.NewNumeric(d)
}

var null = types.NullValue

func mustExpr(t *testing.T) func(e *expr.Expr, err error) *expr.Expr {
	return func(e *expr.Expr, err error) *expr.Expr {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// collect returns an Emit that appends copies of the batches it sees.
func collect(rows *[]types.Row, ops *[]Op) Emit {
	return func(b *Batch) error {
		*rows = append(*rows, b.Rows...)
		if ops != nil {
			*ops = append(*ops, b.Ops...)
		}
		return nil
	}
}

func show(rows []types.Row) string {
	var parts []string
	for _, r := range rows {
		vs := make([]string, len(r))
		for i, v := range r {
			vs[i] = v.String()
		}
		parts = append(parts, "("+strings.Join(vs, ",")+")")
	}
	return strings.Join(parts, " ")
}

type poisonLog struct {
	idx  []any
	errs []error
}

func (p *poisonLog) onErr(b *Batch, i int, err error) error {
	var src any = i
	if b.Source != nil {
		src = b.Source[i]
	}
	p.idx = append(p.idx, src)
	p.errs = append(p.errs, err)
	return nil
}

// ---------------------------------------------------------------------------
// Filter and Project

func TestFilterPoisonRowsAndCarriedColumns(t *testing.T) {
	m := mustExpr(t)
	// 10 / x > 1
	div := m(expr.Call("/", expr.Const(i4(10)), expr.Col(0, types.Int4, "x")))
	pred := m(expr.Compare(">", div, expr.Const(i4(1))))
	var log poisonLog
	op, err := Build(&plan.Step{Op: plan.OpFilter, Pred: pred}, nil, log.onErr)
	if err != nil {
		t.Fatal(err)
	}
	in := &Batch{
		Rows:   []types.Row{{i4(1)}, {i4(0)}, {i4(20)}, {null}, {i4(5)}, {i4(0)}},
		Source: []any{"a", "b", "c", "d", "e", "f"},
		Ops:    []Op{OpInsert, OpUpdate, OpDelete, OpInsert, OpUpdate, OpInsert},
	}
	var got []types.Row
	var ops []Op
	var srcs []any
	if err := op.Process(in, func(b *Batch) error {
		got = append(got, b.Rows...)
		ops = append(ops, b.Ops...)
		srcs = append(srcs, b.Source...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if show(got) != "(1) (5)" {
		t.Errorf("rows %s, want (1) (5)", show(got))
	}
	if fmt.Sprint(srcs) != "[a e]" || fmt.Sprint(ops) != fmt.Sprint([]Op{OpInsert, OpUpdate}) {
		t.Errorf("sources %v ops %v", srcs, ops)
	}
	if fmt.Sprint(log.idx) != "[b f]" {
		t.Errorf("poison rows %v, want [b f]", log.idx)
	}
	for _, e := range log.errs {
		if pgerror.CodeOf(e) != pgerror.DivisionByZero {
			t.Errorf("poison error %v, want 22012", e)
		}
	}
	// 20 and NULL are filtered by the predicate (false / NULL), not errors
	if f := op.(*Filter).Filtered; f != 2 {
		t.Errorf("Filtered = %d, want 2", f)
	}

	// a RowError that returns an error stops processing with it
	abort, err := Build(&plan.Step{Op: plan.OpFilter, Pred: pred}, nil, AbortOnError)
	if err != nil {
		t.Fatal(err)
	}
	err = abort.Process(&Batch{Rows: []types.Row{{i4(1)}, {i4(0)}}}, func(*Batch) error { t.Error("emitted after abort"); return nil })
	if pgerror.CodeOf(err) != pgerror.DivisionByZero {
		t.Errorf("abort policy: %v", err)
	}
	// no rows left: nothing emitted, no Source/Ops invented
	err = op.Process(&Batch{Rows: []types.Row{{i4(100)}}}, func(b *Batch) error { t.Errorf("emitted empty batch %v", b.Rows); return nil })
	if err != nil {
		t.Fatal(err)
	}
	var b2 *Batch
	_ = op.Process(&Batch{Rows: []types.Row{{i4(2)}}}, func(b *Batch) error { b2 = &Batch{Rows: b.Rows, Source: b.Source, Ops: b.Ops}; return nil })
	if b2 == nil || b2.Source != nil || b2.Ops != nil {
		t.Errorf("batch without Source/Ops came out as %+v", b2)
	}
}

func TestProjectPoisonRows(t *testing.T) {
	m := mustExpr(t)
	a := expr.Col(0, types.Int4, "a")
	b := expr.Col(1, types.Int4, "b")
	exprs := []*expr.Expr{
		m(expr.Call("+", a, b)),
		m(expr.Call("/", a, b)),
		m(expr.Call("||", expr.Col(2, types.Text, "s"), expr.Const(txt("!")))),
	}
	var log poisonLog
	op, err := Build(&plan.Step{Op: plan.OpProject, Exprs: exprs}, nil, log.onErr)
	if err != nil {
		t.Fatal(err)
	}
	in := &Batch{Rows: []types.Row{
		{i4(6), i4(3), txt("x")},
		{i4(1), i4(0), txt("poison: division")},
		{i4(math.MaxInt32), i4(1), txt("poison: overflow")},
		{i4(7), null, txt("nulls")},
		{i4(-7), i4(2), null},
	}, Source: []any{0, 1, 2, 3, 4}}
	var got []types.Row
	if err := op.Process(in, collect(&got, nil)); err != nil {
		t.Fatal(err)
	}
	want := "(9,2,x!) (NULL,NULL,nulls!) (-5,-3,NULL)"
	if show(got) != want {
		t.Errorf("got %s, want %s", show(got), want)
	}
	if fmt.Sprint(log.idx) != "[1 2]" {
		t.Errorf("poison rows %v, want [1 2]", log.idx)
	}
	if len(log.errs) == 2 && (pgerror.CodeOf(log.errs[0]) != pgerror.DivisionByZero || pgerror.CodeOf(log.errs[1]) != pgerror.NumericValueOutOfRange) {
		t.Errorf("errors %v", log.errs)
	}
	// rows emitted earlier stay intact after the next Process call
	snapshot := show(got)
	var more []types.Row
	if err := op.Process(&Batch{Rows: []types.Row{{i4(1), i4(1), txt("y")}}}, collect(&more, nil)); err != nil {
		t.Fatal(err)
	}
	if show(got) != snapshot {
		t.Errorf("emitted rows changed by a later batch: %s, was %s", show(got), snapshot)
	}
}

// ---------------------------------------------------------------------------
// HashAggregate and ResolveAgg

func aggCall(t *testing.T, name string, arg *expr.Expr, distinct bool) AggCall {
	t.Helper()
	argT := types.Null
	if arg != nil {
		argT = arg.Type
	}
	f, err := ResolveAgg(name, argT, arg == nil)
	if err != nil {
		t.Fatal(err)
	}
	c := AggCall{Func: f, Distinct: distinct}
	if arg != nil {
		if c.Arg, err = expr.Compile(arg, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func runHash(t *testing.T, h *HashAggregate, batches ...[]types.Row) []types.Row {
	t.Helper()
	var out []types.Row
	for _, b := range batches {
		if err := h.Process(&Batch{Rows: b}, collect(&out, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != 0 {
		t.Fatalf("HashAggregate emitted before Finish: %s", show(out))
	}
	if err := h.Finish(collect(&out, nil)); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHashAggregateEmptyInput(t *testing.T) {
	x := expr.Col(0, types.Int4, "x")
	aggs := func() []AggCall {
		return []AggCall{
			aggCall(t, "count", nil, false), aggCall(t, "count", x, false), aggCall(t, "sum", x, false),
			aggCall(t, "avg", x, false), aggCall(t, "min", x, false), aggCall(t, "max", x, false),
			aggCall(t, "count", x, true), aggCall(t, "bool_or", expr.Col(1, types.Bool, "b"), false),
		}
	}
	// without GROUP BY: one row, count 0, the rest NULL
	out := runHash(t, &HashAggregate{Aggs: aggs(), OnError: AbortOnError})
	if got, want := show(out), "(0,0,NULL,NULL,NULL,NULL,0,NULL)"; got != want {
		t.Errorf("empty input, no GROUP BY: %s, want %s", got, want)
	}
	if out[0][0].K != types.Int8 || out[0][6].K != types.Int8 {
		t.Errorf("count type %s", out[0][0].K)
	}
	// an empty batch is still empty input
	out = runHash(t, &HashAggregate{Aggs: aggs(), OnError: AbortOnError}, nil)
	if len(out) != 1 {
		t.Errorf("empty batch: %d rows", len(out))
	}
	// with GROUP BY: no rows
	g, _ := expr.Compile(x, nil)
	out = runHash(t, &HashAggregate{GroupBy: []expr.Eval{g}, Aggs: aggs(), OnError: AbortOnError})
	if len(out) != 0 {
		t.Errorf("empty input with GROUP BY: %s, want no rows", show(out))
	}
	// rows where every argument is NULL: count(x) 0, sum NULL
	out = runHash(t, &HashAggregate{Aggs: aggs(), OnError: AbortOnError}, []types.Row{{null, null}, {null, null}})
	if got, want := show(out), "(2,0,NULL,NULL,NULL,NULL,0,NULL)"; got != want {
		t.Errorf("all-NULL input: %s, want %s", got, want)
	}
}

func TestHashAggregateGroupsAndNulls(t *testing.T) {
	k := expr.Col(0, types.Text, "k")
	x := expr.Col(1, types.Int4, "x")
	g, _ := expr.Compile(k, nil)
	h := &HashAggregate{GroupBy: []expr.Eval{g}, OnError: AbortOnError, Aggs: []AggCall{
		aggCall(t, "count", nil, false), aggCall(t, "count", x, false), aggCall(t, "sum", x, false),
		aggCall(t, "avg", x, false), aggCall(t, "min", x, false), aggCall(t, "max", x, false), aggCall(t, "count", x, true),
	}}
	out := runHash(t, h,
		[]types.Row{{txt("a"), i4(1)}, {null, i4(5)}, {txt("b"), null}, {txt("a"), i4(2)}},
		[]types.Row{{txt("a"), null}, {null, null}, {txt("a"), i4(2)}, {txt("b"), null}},
	)
	sort.Slice(out, func(i, j int) bool { return types.Compare(out[i][0], out[j][0]) < 0 })
	want := "(a,4,3,5,1.6666666666666667,1,2,2) (b,2,0,NULL,NULL,NULL,NULL,0) (NULL,2,1,5,5.0000000000000000,5,5,1)"
	if got := show(out); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if h.Groups() != 0 {
		t.Errorf("Groups() after Finish = %d", h.Groups())
	}
}

func TestResolveAggTypes(t *testing.T) {
	for _, c := range []struct {
		name string
		arg  types.Type
		star bool
		ret  types.Type
	}{
		{"count", types.Null, true, types.Int8},
		{"count", types.Text, false, types.Int8},
		{"sum", types.Int2, false, types.Int8},
		{"sum", types.Int4, false, types.Int8},
		{"sum", types.Int8, false, types.Numeric},
		{"sum", types.Numeric, false, types.Numeric},
		{"sum", types.Float4, false, types.Float4},
		{"sum", types.Float8, false, types.Float8},
		{"sum", types.Interval, false, types.Interval},
		{"avg", types.Int2, false, types.Numeric},
		{"avg", types.Int4, false, types.Numeric},
		{"avg", types.Int8, false, types.Numeric},
		{"avg", types.Numeric, false, types.Numeric},
		{"avg", types.Float4, false, types.Float8},
		{"avg", types.Float8, false, types.Float8},
		{"min", types.Text, false, types.Text},
		{"max", types.Timestamp, false, types.Timestamp},
		{"max", types.Date, false, types.Date},
		{"min", types.Numeric, false, types.Numeric},
		{"bool_and", types.Bool, false, types.Bool},
		{"every", types.Bool, false, types.Bool},
		{"bool_or", types.Bool, false, types.Bool},
	} {
		f, err := ResolveAgg(c.name, c.arg, c.star)
		if err != nil {
			t.Errorf("%s(%s): %v", c.name, c.arg, err)
			continue
		}
		if f.Ret != c.ret {
			t.Errorf("%s(%s) returns %s, want %s", c.name, c.arg, f.Ret, c.ret)
		}
	}
	for _, c := range []struct {
		name string
		arg  types.Type
	}{{"sum", types.Text}, {"avg", types.Text}, {"avg", types.Interval}, {"bool_and", types.Int4}, {"min", types.JSONB}, {"median", types.Int4}, {"sum", types.Bool}} {
		if _, err := ResolveAgg(c.name, c.arg, false); pgerror.CodeOf(err) != pgerror.UndefinedFunction {
			t.Errorf("%s(%s): %v, want 42883", c.name, c.arg, err)
		}
	}
	for _, n := range []string{"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every"} {
		if !IsAggregate(n) {
			t.Errorf("IsAggregate(%q) = false", n)
		}
	}
	if IsAggregate("upper") {
		t.Error("IsAggregate(upper)")
	}
}

func TestHashAggregateSums(t *testing.T) {
	run := func(name string, arg *expr.Expr, distinct bool, vals ...types.Value) types.Value {
		t.Helper()
		h := &HashAggregate{Aggs: []AggCall{aggCall(t, name, arg, distinct)}, OnError: AbortOnError}
		var rows []types.Row
		for _, v := range vals {
			rows = append(rows, types.Row{v})
		}
		out := runHash(t, h, rows)
		return out[0][0]
	}
	x8 := expr.Col(0, types.Int8, "x")
	x4 := expr.Col(0, types.Int4, "x")
	xn := expr.Col(0, types.Numeric, "x")
	xf := expr.Col(0, types.Float8, "x")
	xi := expr.Col(0, types.Interval, "x")
	for _, c := range []struct {
		desc string
		got  types.Value
		want string
		typ  types.Type
	}{
		{"sum(bigint) past int64", run("sum", x8, false, i8(math.MaxInt64), i8(1), i8(math.MaxInt64)), "18446744073709551615", types.Numeric},
		{"sum(bigint) past int64 and back", run("sum", x8, false, i8(math.MaxInt64), i8(10), i8(-20)), "9223372036854775797", types.Numeric},
		{"sum(bigint) below int64", run("sum", x8, false, i8(math.MinInt64), i8(-1), i8(math.MinInt64)), "-18446744073709551617", types.Numeric},
		{"sum(integer)", run("sum", x4, false, i4(math.MaxInt32), i4(math.MaxInt32)), "4294967294", types.Int8},
		{"sum(numeric) keeps the largest scale", run("sum", xn, false, num("1.5"), num("2.25"), num("-0.750")), "3.000", types.Numeric},
		{"avg(integer)", run("avg", x4, false, i4(1), i4(2)), "1.5000000000000000", types.Numeric},
		{"avg(integer) 1/3", run("avg", x4, false, i4(0), i4(0), i4(1)), "0.33333333333333333333", types.Numeric},
		{"avg(bigint) huge", run("avg", x8, false, i8(math.MaxInt64), i8(math.MaxInt64)), "9223372036854775807", types.Numeric},
		{"avg(numeric)", run("avg", xn, false, num("1.00"), num("2")), "1.5000000000000000", types.Numeric},
		{"avg(float8)", run("avg", xf, false, f8(1), f8(2)), "1.5", types.Float8},
		{"sum(DISTINCT integer)", run("sum", x4, true, i4(2), i4(2), null, i4(3)), "5", types.Int8},
		{"count(DISTINCT numeric) 1.0 = 1.00", run("count", xn, true, num("1.0"), num("1.00"), num("1")), "1", types.Int8},
		{"sum(interval)", run("sum", xi, false, types.NewInterval(types.IntervalValue{Months: 1, Days: 2, Micros: 3}), types.NewInterval(types.IntervalValue{Days: 1, Micros: types.MicrosPerHour})), "1 mon 3 days 01:00:00.000003", types.Interval},
		{"min(text) C collation", run("min", expr.Col(0, types.Text, "s"), false, txt("b"), txt("B"), txt("a")), "B", types.Text},
		{"max(numeric)", run("max", xn, false, num("9.5"), num("10"), num("-11")), "10", types.Numeric},
		{"min(float8) ignores NaN", run("min", xf, false, f8(math.NaN()), f8(3), f8(-1)), "-1", types.Float8},
		{"max(float8) NaN is largest", run("max", xf, false, f8(3), f8(math.NaN())), "NaN", types.Float8},
	} {
		if c.got.K != c.typ || c.got.Text() != c.want {
			t.Errorf("%s: got %s (%s), want %s (%s)", c.desc, c.got, c.got.K, c.want, c.typ)
		}
	}
	// sum(integer) never overflows bigint within reason; sum(smallint) too
	if v := run("sum", expr.Col(0, types.Int2, "x"), false, types.NewInt(types.Int2, 32767), types.NewInt(types.Int2, 32767)); v.Text() != "65534" || v.K != types.Int8 {
		t.Errorf("sum(smallint) = %s %s", v, v.K)
	}
}

// PostgreSQL groups -0.0 with 0.0 (they are equal; hashfloat8 hashes them
// alike), and so do DISTINCT and count(DISTINCT).
//
// Regression test: before afce82d types.AppendKey encoded +0 and -0
// differently, so GROUP BY, DISTINCT and count(DISTINCT) over floats
// treated them as two values.
func TestFloatNegativeZeroGroupsWithZero(t *testing.T) {
	x := expr.Col(0, types.Float8, "x")
	g, _ := expr.Compile(x, nil)
	rows := []types.Row{{f8(0)}, {f8(math.Copysign(0, -1))}}
	out := runHash(t, &HashAggregate{GroupBy: []expr.Eval{g}, Aggs: []AggCall{aggCall(t, "count", nil, false)}, OnError: AbortOnError}, rows)
	if len(out) != 1 {
		t.Errorf("GROUP BY float over 0 and -0: %d groups %s, want 1 (PostgreSQL: 0 = -0)", len(out), show(out))
	}
	out = runHash(t, &HashAggregate{Aggs: []AggCall{aggCall(t, "count", x, true)}, OnError: AbortOnError}, rows)
	if out[0][0].I != 1 {
		t.Errorf("count(DISTINCT x) over 0 and -0 = %d, want 1", out[0][0].I)
	}
	var got []types.Row
	if err := (&Distinct{}).Process(&Batch{Rows: rows}, collect(&got, nil)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("DISTINCT over 0 and -0: %d rows, want 1", len(got))
	}
}

// A RowError that returns nil drops the row: "drop the row and go on".
// Window, group and session aggregates evaluate all arguments before any
// accumulator changes (aggState.add), so a poison row leaves no trace.
//
// Regression test: before afce82d HashAggregate created the group before
// evaluating the arguments and added aggregate by aggregate, so a row
// whose second argument failed had been counted by the first, and a
// poison row alone created a group.
func TestHashAggregatePoisonRowLeavesNoTrace(t *testing.T) {
	m := mustExpr(t)
	k := expr.Col(0, types.Text, "k")
	inv := m(expr.Call("/", expr.Const(i4(100)), expr.Col(1, types.Int4, "d")))
	g, _ := expr.Compile(k, nil)
	var log poisonLog
	h := &HashAggregate{GroupBy: []expr.Eval{g}, OnError: log.onErr, Aggs: []AggCall{
		aggCall(t, "count", nil, false), aggCall(t, "sum", inv, false),
	}}
	out := runHash(t, h, []types.Row{{txt("a"), i4(10)}, {txt("a"), i4(0)}, {txt("only-poison"), i4(0)}})
	if len(log.errs) != 2 {
		t.Fatalf("poison reports %v", log.errs)
	}
	if got, want := show(out), "(a,1,10)"; got != want {
		t.Errorf("got %s, want %s (the poison rows must not count or create groups)", got, want)
	}
}

// ---------------------------------------------------------------------------
// Sort, Limit, Distinct

func TestSortNullsAndDirections(t *testing.T) {
	rows := []types.Row{{i4(2), txt("a")}, {null, txt("b")}, {i4(1), txt("c")}, {i4(2), txt("d")}, {null, txt("e")}, {i4(3), txt("f")}}
	cases := []struct {
		keys []plan.SortKey
		want string
	}{
		{[]plan.SortKey{{Col: 0}}, "c a d f b e"},                                         // ASC NULLS LAST, stable
		{[]plan.SortKey{{Col: 0, Desc: true, NullsFirst: true}}, "b e f a d c"},           // DESC (NULLS FIRST)
		{[]plan.SortKey{{Col: 0, Desc: true}}, "f a d c b e"},                             // DESC NULLS LAST
		{[]plan.SortKey{{Col: 0, NullsFirst: true}}, "b e c a d f"},                       // ASC NULLS FIRST
		{[]plan.SortKey{{Col: 0}, {Col: 1, Desc: true}}, "c d a f e b"},                   // two keys
		{[]plan.SortKey{{Col: 0, NullsFirst: true}, {Col: 1, Desc: true}}, "e b c d a f"}, // NULL tie broken by the next key
	}
	for _, c := range cases {
		for _, limit := range []int64{-1, 0, 1, 2, 3, 6, 10} {
			s := &Sort{Keys: c.keys, Limit: limit}
			var out []types.Row
			for i := 0; i < len(rows); i += 2 {
				if err := s.Process(&Batch{Rows: rows[i : i+2]}, collect(&out, nil)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Finish(collect(&out, nil)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range out {
				got = append(got, r[1].S)
			}
			want := strings.Fields(c.want)
			if limit >= 0 && int(limit) < len(want) {
				want = want[:limit]
			}
			// with a limit, rows tied on every key may come in any order:
			// compare the keys, and the rows as a set
			if limit < 0 {
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("keys %+v: got %v, want %v", c.keys, got, want)
				}
				continue
			}
			if len(got) != len(want) {
				t.Errorf("keys %+v limit %d: got %v, want %v", c.keys, limit, got, want)
				continue
			}
			byName := map[string]types.Row{}
			for _, r := range rows {
				byName[r[1].S] = r
			}
			for i := range got {
				if CompareRows(c.keys, byName[got[i]], byName[want[i]]) != 0 {
					t.Errorf("keys %+v limit %d: got %v, want %v", c.keys, limit, got, want)
					break
				}
			}
		}
	}
}

func TestSortTopNMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for iter := 0; iter < 300; iter++ {
		n := r.IntN(60)
		var rows []types.Row
		for i := 0; i < n; i++ {
			v := null
			if r.IntN(5) != 0 {
				v = i8(int64(r.IntN(10)))
			}
			rows = append(rows, types.Row{v, i4(int64(i))})
		}
		keys := []plan.SortKey{{Col: 0, Desc: r.IntN(2) == 0, NullsFirst: r.IntN(2) == 0}}
		limit := int64(r.IntN(n + 3))
		full := &Sort{Keys: keys, Limit: -1}
		top := &Sort{Keys: keys, Limit: limit}
		var a, b []types.Row
		for i := 0; i < len(rows); {
			m := min(len(rows)-i, 1+r.IntN(7))
			_ = full.Process(&Batch{Rows: rows[i : i+m]}, nil)
			_ = top.Process(&Batch{Rows: rows[i : i+m]}, nil)
			i += m
		}
		_ = full.Finish(collect(&a, nil))
		_ = top.Finish(collect(&b, nil))
		if int64(len(a)) > limit {
			a = a[:limit]
		}
		if len(a) != len(b) {
			t.Fatalf("iter %d: top-%d gave %d rows, want %d", iter, limit, len(b), len(a))
		}
		for i := range a {
			if CompareRows(keys, a[i], b[i]) != 0 {
				t.Fatalf("iter %d keys %+v limit %d: position %d: %s vs %s\nfull %s\ntop  %s", iter, keys, limit, i, show(a[i:i+1]), show(b[i:i+1]), show(a), show(b))
			}
		}
	}
}

func TestLimit(t *testing.T) {
	rows := func(from, to int) []types.Row {
		var out []types.Row
		for i := from; i < to; i++ {
			out = append(out, types.Row{i4(int64(i))})
		}
		return out
	}
	for _, c := range []struct {
		offset, count int64
		batches       [][2]int
		want          string
		doneAt        int // batch index that returns ErrDone (-1: none)
	}{
		{0, 3, [][2]int{{0, 2}, {2, 4}, {4, 6}}, "(0) (1) (2)", 1},
		{0, 2, [][2]int{{0, 2}, {2, 4}}, "(0) (1)", 0},
		{2, 2, [][2]int{{0, 3}, {3, 6}}, "(2) (3)", 1},
		{0, 0, [][2]int{{0, 3}}, "", 0},
		{1, -1, [][2]int{{0, 3}, {3, 5}}, "(1) (2) (3) (4)", -1},
		{10, 5, [][2]int{{0, 3}, {3, 5}}, "", -1},
	} {
		l, _ := Build(&plan.Step{Op: plan.OpLimit, Limit: c.count, Offset: c.offset}, nil, AbortOnError)
		var out []types.Row
		done := -1
		for i, b := range c.batches {
			err := l.Process(&Batch{Rows: rows(b[0], b[1])}, collect(&out, nil))
			if errors.Is(err, ErrDone) {
				done = i
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if show(out) != c.want || done != c.doneAt {
			t.Errorf("offset %d count %d: got %q done at %d, want %q done at %d", c.offset, c.count, show(out), done, c.want, c.doneAt)
		}
	}
	// ErrDone travels up through a chain to the source
	var sink []types.Row
	lim := &Limit{Count: 2}
	ch := NewChain(collect(&sink, nil), &Distinct{}, lim)
	err := ch.Push(&Batch{Rows: []types.Row{{i4(1)}, {i4(1)}, {i4(2)}, {i4(3)}}})
	if !errors.Is(err, ErrDone) || show(sink) != "(1) (2)" {
		t.Errorf("chain: %v %s", err, show(sink))
	}
}

func TestDistinct(t *testing.T) {
	d, _ := Build(&plan.Step{Op: plan.OpDistinct}, nil, AbortOnError)
	var out []types.Row
	_ = d.Process(&Batch{Rows: []types.Row{{i4(1), txt("a")}, {i4(1), txt("a")}, {null, txt("a")}, {i4(1), txt("b")}}}, collect(&out, nil))
	_ = d.Process(&Batch{Rows: []types.Row{{null, txt("a")}, {i4(1), txt("b")}, {i4(2), null}, {i4(2), null}}}, collect(&out, nil))
	_ = d.Process(&Batch{Rows: []types.Row{{i4(1), txt("a")}}}, func(b *Batch) error { t.Errorf("emitted duplicates %s", show(b.Rows)); return nil })
	if got, want := show(out), "(1,a) (NULL,a) (1,b) (2,NULL)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// numerics equal by value; strings with NUL bytes are not confused
	var n []types.Row
	_ = (&Distinct{}).Process(&Batch{Rows: []types.Row{{num("1.0")}, {num("1.00")}, {num("1")}, {num("10")}}}, collect(&n, nil))
	if len(n) != 2 {
		t.Errorf("numeric DISTINCT: %s", show(n))
	}
	var s []types.Row
	_ = (&Distinct{}).Process(&Batch{Rows: []types.Row{{txt("a\x00"), txt("b")}, {txt("a"), txt("\x00b")}, {txt("a"), txt("b")}}}, collect(&s, nil))
	if len(s) != 3 {
		t.Errorf("text DISTINCT with NUL bytes: %d rows, want 3", len(s))
	}
}

// ---------------------------------------------------------------------------
// Accumulators: AppendState/LoadState and Merge for every aggregate.

type accCase struct {
	name     string
	arg      types.Type
	star     bool
	distinct bool
	gen      func(r *rand.Rand) types.Value
}

func accCases() []accCase {
	ints := func(t types.Type, n int) func(r *rand.Rand) types.Value {
		return func(r *rand.Rand) types.Value {
			if r.IntN(6) == 0 {
				return null
			}
			return types.NewInt(t, int64(r.IntN(n)-n/2))
		}
	}
	huge := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		v := int64(r.Uint64() >> 1)
		if r.IntN(2) == 0 {
			v = -v - 1
		}
		return i8(v)
	}
	nums := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		return types.NewNumeric(apd.New(int64(r.IntN(2001)-1000), -int32(r.IntN(4))))
	}
	floats := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		return f8(float64(r.IntN(401)-200) / 8)
	}
	texts := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		return txt([]string{"", "a", "b", "ab", "a\x00", "\xff"}[r.IntN(6)])
	}
	bools := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		return types.NewBool(r.IntN(5) != 0)
	}
	ivs := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		return types.NewInterval(types.IntervalValue{Months: int32(r.IntN(5) - 2), Days: int32(r.IntN(9) - 4), Micros: int64(r.IntN(1e6) - 5e5)})
	}
	tss := func(r *rand.Rand) types.Value {
		if r.IntN(6) == 0 {
			return null
		}
		return types.NewTimestamp(types.Timestamp, int64(r.IntN(1e6)-5e5)*1e6)
	}
	var out []accCase
	for _, d := range []bool{false, true} {
		out = append(out,
			accCase{"count", types.Int4, false, d, ints(types.Int4, 10)},
			accCase{"count", types.Text, false, d, texts},
			accCase{"count", types.Numeric, false, d, nums},
			accCase{"count", types.Float8, false, d, floats},
			accCase{"sum", types.Int2, false, d, ints(types.Int2, 100)},
			accCase{"sum", types.Int4, false, d, ints(types.Int4, 1000)},
			accCase{"sum", types.Int8, false, d, huge},
			accCase{"sum", types.Numeric, false, d, nums},
			accCase{"sum", types.Float8, false, d, floats},
			accCase{"sum", types.Float4, false, d, floats},
			accCase{"sum", types.Interval, false, d, ivs},
			accCase{"avg", types.Int4, false, d, ints(types.Int4, 1000)},
			accCase{"avg", types.Int8, false, d, huge},
			accCase{"avg", types.Numeric, false, d, nums},
			accCase{"avg", types.Float8, false, d, floats},
			accCase{"min", types.Int4, false, d, ints(types.Int4, 1000)},
			accCase{"max", types.Text, false, d, texts},
			accCase{"min", types.Numeric, false, d, nums},
			accCase{"max", types.Float8, false, d, floats},
			accCase{"max", types.Timestamp, false, d, tss},
			accCase{"bool_and", types.Bool, false, d, bools},
			accCase{"bool_or", types.Bool, false, d, bools},
			accCase{"every", types.Bool, false, d, bools},
		)
	}
	return append(out, accCase{"count", types.Null, true, false, ints(types.Int4, 10)})
}

func (c accCase) String() string {
	d := ""
	if c.distinct {
		d = "DISTINCT "
	}
	if c.star {
		return "count(*)"
	}
	return fmt.Sprintf("%s(%s%s)", c.name, d, c.arg)
}

func (c accCase) newAcc(t *testing.T) Accumulator {
	f, err := ResolveAgg(c.name, c.arg, c.star)
	if err != nil {
		t.Fatal(err)
	}
	return (&AggCall{Func: f, Distinct: c.distinct}).newAcc()
}

// sameResult compares results: numerics and intervals by value (their
// representation after a DISTINCT merge is TestDistinctMergeKeepsValues'
// business), the rest by text.
func sameResult(a, b types.Value) bool {
	if a.K != b.K {
		return false
	}
	switch a.K {
	case types.Numeric:
		return a.N.Cmp(b.N) == 0
	case types.Interval:
		return types.Compare(a, b) == 0
	}
	return a.Text() == b.Text()
}

func roundTrip(t *testing.T, c accCase, a Accumulator) Accumulator {
	t.Helper()
	junk := []byte{0xde, 0xad}
	st := a.AppendState([]byte{0x42})
	if st[0] != 0x42 {
		t.Fatalf("%s: AppendState overwrote the buffer's prefix", c)
	}
	st = append(st, junk...)
	b := c.newAcc(t)
	rest, err := b.LoadState(st[1:])
	if err != nil {
		t.Fatalf("%s: LoadState: %v", c, err)
	}
	if !bytes.Equal(rest, junk) {
		t.Fatalf("%s: LoadState left %x, want the following bytes %x", c, rest, junk)
	}
	if !sameResult(a.Result(), b.Result()) {
		t.Fatalf("%s: result %s after the state round trip, was %s", c, b.Result(), a.Result())
	}
	// an encoding that is a prefix of the state fails or decodes, never panics
	for i := 0; i < len(st)-len(junk)-1; i++ {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s: LoadState of %d of %d bytes panicked: %v", c, i, len(st)-3, p)
				}
			}()
			_, _ = c.newAcc(t).LoadState(st[1 : 1+i])
		}()
	}
	if _, err := c.newAcc(t).LoadState(nil); err == nil {
		t.Errorf("%s: LoadState(nil) succeeded", c)
	}
	return b
}

func TestAccumulatorStateAndMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range accCases() {
		t.Run(c.String(), func(t *testing.T) {
			for iter := 0; iter < 60; iter++ {
				n := r.IntN(12)
				if iter < 3 {
					n = iter // empty, one, two values
				}
				vals := make([]types.Value, n)
				for i := range vals {
					vals[i] = c.gen(r)
				}
				cut := 0
				if n > 0 {
					cut = r.IntN(n + 1)
				}
				all, left, right := c.newAcc(t), c.newAcc(t), c.newAcc(t)
				for i, v := range vals {
					if err := all.Add(v); err != nil {
						t.Fatal(err)
					}
					side := left
					if i >= cut {
						side = right
					}
					if err := side.Add(v); err != nil {
						t.Fatal(err)
					}
				}
				l2, r2 := roundTrip(t, c, left), roundTrip(t, c, right)
				// keep adding after a reload: the reloaded state is live
				if err := l2.Merge(r2); err != nil {
					t.Fatalf("%s: Merge: %v", c, err)
				}
				if !sameResult(l2.Result(), all.Result()) {
					t.Fatalf("%s over %v split at %d: merged %s, all at once %s", c, vals, cut, l2.Result(), all.Result())
				}
				// merging the other way round gives the same
				l3, r3 := roundTrip(t, c, left), roundTrip(t, c, right)
				if err := r3.Merge(l3); err != nil {
					t.Fatal(err)
				}
				if !sameResult(r3.Result(), all.Result()) {
					t.Fatalf("%s over %v: merged right+left %s, all %s", c, vals, r3.Result(), all.Result())
				}
				// a merged accumulator round-trips and keeps accepting values
				m := roundTrip(t, c, l2)
				extra := c.gen(r)
				_ = m.Add(extra)
				_ = all.Add(extra)
				if !sameResult(m.Result(), all.Result()) {
					t.Fatalf("%s: after merge, round trip and Add(%s): %s, want %s", c, extra, m.Result(), all.Result())
				}
			}
		})
	}
}

// count(DISTINCT) and friends: values on both sides of a merge count once.
func TestDistinctAccumulatorMerge(t *testing.T) {
	c := accCase{name: "count", arg: types.Text, distinct: true}
	a, b := c.newAcc(t), c.newAcc(t)
	for _, v := range []string{"x", "y", "x"} {
		_ = a.Add(txt(v))
	}
	for _, v := range []string{"y", "z", "z"} {
		_ = b.Add(txt(v))
	}
	_ = a.Add(null)
	b2 := roundTrip(t, c, b)
	if err := a.Merge(b2); err != nil {
		t.Fatal(err)
	}
	if a.Result().I != 3 {
		t.Errorf("count(DISTINCT) merged = %d, want 3", a.Result().I)
	}
	_ = a.Add(txt("z"))
	_ = a.Add(txt("w"))
	if a.Result().I != 4 {
		t.Errorf("count(DISTINCT) after more adds = %d, want 4", a.Result().I)
	}
	// sum(DISTINCT bigint) across a merge
	s := accCase{name: "sum", arg: types.Int8, distinct: true}
	x, y := s.newAcc(t), s.newAcc(t)
	_ = x.Add(i8(5))
	_ = x.Add(i8(7))
	_ = y.Add(i8(7))
	_ = y.Add(i8(-2))
	if err := x.Merge(roundTrip(t, s, y)); err != nil {
		t.Fatal(err)
	}
	if got := x.Result(); got.K != types.Numeric || got.Text() != "10" {
		t.Errorf("sum(DISTINCT) merged = %s", got)
	}
}

// A DISTINCT aggregate's result must not depend on whether its values came
// through a merge (session windows a row bridges): sum(DISTINCT x) over
// the single value '1 mon' is '1 mon', over 1.50 it is 1.50, as in
// PostgreSQL and as without a merge.
//
// BUG (fails): distinctAcc.Merge rebuilds the other side's values from
// their grouping keys (types.DecodeKey), which keep only what equality
// needs: numerics come back reduced (1.5) and, since intervals are keyed
// by their span, '1 mon' comes back as '720:00:00'. Fix in
// operators/aggregates.go: keep each distinct value itself (e.g. its
// types.AppendValue encoding as the seen map's value, saved in
// AppendState) and Merge those.
func TestDistinctMergeKeepsValues(t *testing.T) {
	for _, c := range []struct {
		acc  accCase
		v    types.Value
		want string
	}{
		{accCase{name: "sum", arg: types.Interval, distinct: true}, types.NewInterval(types.IntervalValue{Months: 1}), "1 mon"},
		{accCase{name: "max", arg: types.Interval, distinct: true}, types.NewInterval(types.IntervalValue{Days: 2}), "2 days"},
		{accCase{name: "sum", arg: types.Numeric, distinct: true}, num("1.50"), "1.50"},
		{accCase{name: "min", arg: types.Numeric, distinct: true}, num("2.000"), "2.000"},
	} {
		direct := c.acc.newAcc(t)
		_ = direct.Add(c.v)
		if got := direct.Result().Text(); got != c.want {
			t.Errorf("%s over %s without a merge = %s, want %s", c.acc, c.v, got, c.want)
		}
		other := c.acc.newAcc(t)
		_ = other.Add(c.v)
		merged := c.acc.newAcc(t)
		if err := merged.Merge(other); err != nil {
			t.Fatal(err)
		}
		if got := merged.Result().Text(); got != c.want {
			t.Errorf("%s over %s through a merge = %s, want %s", c.acc, c.v, got, c.want)
		}
	}
}

// ---------------------------------------------------------------------------
// TopN changelog

func TestTopNChangelog(t *testing.T) {
	kv := NewMemKV()
	build := func() *TopN {
		op, err := Build(&plan.Step{Op: plan.OpTopN, N: 3, Width: 2, Keys: []plan.SortKey{{Col: 1, Desc: true, NullsFirst: true}},
			PartitionBy: []*expr.Expr{expr.Col(0, types.Text, "k")}}, nil, AbortOnError)
		if err != nil {
			t.Fatal(err)
		}
		tn := op.(*TopN)
		tn.Bind(kv)
		return tn
	}
	tn := build()
	step := func(rows ...types.Row) string {
		t.Helper()
		var out []types.Row
		var ops []Op
		if err := tn.Process(&Batch{Rows: rows}, collect(&out, &ops)); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for i, r := range out {
			parts = append(parts, fmt.Sprintf("%s %s#%d=%s", ops[i], r[0].S, r[2].I, r[1]))
		}
		return strings.Join(parts, "; ")
	}
	for _, c := range []struct {
		rows []types.Row
		want string
	}{
		{[]types.Row{{txt("a"), i4(5)}}, "insert a#1=5"},
		{[]types.Row{{txt("a"), i4(7)}}, "update a#1=7; insert a#2=5"},
		{[]types.Row{{txt("a"), i4(6)}, {txt("b"), i4(1)}}, "update a#2=6; insert a#3=5; insert b#1=1"},
		{[]types.Row{{txt("a"), i4(1)}}, ""}, // below the top 3: no change
		{[]types.Row{{txt("a"), i4(5)}}, ""}, // ties with #3 and arrives later: stays out
		{[]types.Row{{txt("a"), i4(10)}}, "update a#1=10; update a#2=7; update a#3=6"},
		{[]types.Row{{txt("a"), null}}, "update a#1=NULL; update a#2=10; update a#3=7"}, // DESC NULLS FIRST
	} {
		if got := step(c.rows...); got != c.want {
			t.Errorf("after %s: got %q, want %q", show(c.rows), got, c.want)
		}
	}
	// state round trip: checkpoint, rebind (and rebuild), positions keep their emitted state
	if err := tn.OnCheckpoint(); err != nil {
		t.Fatal(err)
	}
	tn = build()
	if got, want := step(types.Row{txt("b"), i4(3)}), "update b#1=3; insert b#2=1"; got != want {
		t.Errorf("after restart: got %q, want %q", got, want)
	}
	if got, want := step(types.Row{txt("a"), i4(8)}), "update a#3=8"; got != want {
		t.Errorf("after restart: got %q, want %q", got, want)
	}
	if err := tn.OnWatermark(math.MaxInt64, func(b *Batch) error { t.Errorf("top-N emitted on watermark"); return nil }); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// WindowAggregate and SessionAggregate unit behaviour

func TestWindowAggregateLateAndNullTime(t *testing.T) {
	var log poisonLog
	op, err := Build(&plan.Step{Op: plan.OpWindowAggregate, Window: &plan.WindowSpec{Kind: "tumble", Size: 10}, TimeCol: 0, TimeType: types.Timestamp,
		Aggs: []plan.AggSpec{{Name: "count", Star: true}}}, nil, log.onErr)
	if err != nil {
		t.Fatal(err)
	}
	w := op.(*WindowAggregate)
	ts := func(v int64) types.Row { return types.Row{types.NewTimestamp(types.Timestamp, v)} }
	var out []types.Row
	emit := collect(&out, nil)
	_ = w.Process(&Batch{Rows: []types.Row{ts(-15), ts(-1), ts(0), ts(9), ts(10)}, Source: []any{0, 1, 2, 3, 4}}, emit)
	if err := w.OnWatermark(10, emit); err != nil {
		t.Fatal(err)
	}
	// windows [-20,-10) [-10,0) [0,10) closed at watermark 10; [10,20) open
	if got, want := show(out), "(1969-12-31 23:59:59.99998,1969-12-31 23:59:59.99999,1) (1969-12-31 23:59:59.99999,1970-01-01 00:00:00,1) (1970-01-01 00:00:00,1970-01-01 00:00:00.00001,2)"; got != want {
		t.Errorf("closed windows:\n got %s\nwant %s", got, want)
	}
	out = nil
	_ = w.Process(&Batch{Rows: []types.Row{ts(9), {null}, ts(10), ts(25)}, Source: []any{5, 6, 7, 8}}, emit)
	if len(log.errs) != 2 || !errors.Is(log.errs[0], ErrLate) || log.idx[0] != 5 || pgerror.CodeOf(log.errs[1]) != pgerror.NullValueNotAllowed || log.idx[1] != 6 {
		t.Errorf("errors %v at %v: want ErrLate for row 5, 22004 for row 6", log.errs, log.idx)
	}
	// a watermark that does not advance changes nothing
	if err := w.OnWatermark(5, emit); err != nil || len(out) != 0 || w.Watermark() != 10 {
		t.Errorf("backwards watermark: %v %s %d", err, show(out), w.Watermark())
	}
	if err := w.Finish(emit); err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0][2].I != 2 || out[1][2].I != 1 {
		t.Errorf("Finish: %s", show(out))
	}
}

func TestHopWindowsOf(t *testing.T) {
	for _, c := range []struct {
		spec plan.WindowSpec
		t    int64
		want string
	}{
		{plan.WindowSpec{Kind: "tumble", Size: 10}, 0, "[[0 10]]"},
		{plan.WindowSpec{Kind: "tumble", Size: 10}, -1, "[[-10 0]]"},
		{plan.WindowSpec{Kind: "tumble", Size: 10}, -10, "[[-10 0]]"},
		{plan.WindowSpec{Kind: "hop", Size: 10, Slide: 5}, 7, "[[5 15] [0 10]]"},
		{plan.WindowSpec{Kind: "hop", Size: 10, Slide: 5}, -5, "[[-5 5] [-10 0]]"},
		{plan.WindowSpec{Kind: "hop", Size: 7, Slide: 5}, 6, "[[5 12] [0 7]]"},
		{plan.WindowSpec{Kind: "hop", Size: 7, Slide: 5}, 8, "[[5 12]]"},
		{plan.WindowSpec{Kind: "hop", Size: 5, Slide: 5}, 5, "[[5 10]]"},
	} {
		if got := fmt.Sprint(c.spec.Windows(c.t, nil)); got != c.want {
			t.Errorf("%s windowsOf(%d) = %s, want %s", c.spec, c.t, got, c.want)
		}
	}
}

// A bound of D on disorder means a row may arrive exactly D behind the
// largest event time seen, which is exactly the engine's watermark
// (maxEvent - Delay). SessionAggregate merges a row into a session when
// t <= last + gap, so such a row can extend a session whose end is the
// watermark: the session must stay open until the watermark passes its
// end. Example: gap 10, delay 5: (k1, t=0); (k2, t=15) moves the
// watermark to 10; (k1, t=10), 5 behind the max, extends k1's session to
// [0, 20) with count 2, as the same rows give in one batch.
//
// Regression test: this failed before afce82d (the session closed at
// wm >= last + gap and the row opened a second session [10, 20)).
func TestSessionRowAtWatermark(t *testing.T) {
	build := func() *SessionAggregate {
		op, err := Build(&plan.Step{Op: plan.OpSession, Window: &plan.WindowSpec{Kind: "session", Gap: 10}, TimeCol: 1, TimeType: types.Timestamp,
			GroupBy: []*expr.Expr{expr.Col(0, types.Text, "k")}, Aggs: []plan.AggSpec{{Name: "count", Star: true}}}, nil, AbortOnError)
		if err != nil {
			t.Fatal(err)
		}
		return op.(*SessionAggregate)
	}
	row := func(k string, ts int64) types.Row { return types.Row{txt(k), types.NewTimestamp(types.Timestamp, ts)} }
	sessions := func(out []types.Row) string {
		var parts []string
		for _, r := range out {
			parts = append(parts, fmt.Sprintf("%s[%d,%d)=%d", r[0].S, r[1].I, r[2].I, r[3].I))
		}
		sort.Strings(parts)
		return strings.Join(parts, " ")
	}
	// the batch answer: 0 and 10 are gap apart, one session
	var out []types.Row
	s := build()
	_ = s.Process(&Batch{Rows: []types.Row{row("k1", 0), row("k2", 15), row("k1", 10)}}, nil)
	_ = s.Finish(collect(&out, nil))
	want := "k1[0,20)=2 k2[15,25)=1"
	if got := sessions(out); got != want {
		t.Fatalf("one batch: %s, want %s", got, want)
	}
	// streaming with delay 5: the third row is 5 behind the max, within the bound
	for _, delay := range []int64{5, 0} {
		out = nil
		s = build()
		maxSeen := int64(math.MinInt64)
		for _, r := range []types.Row{row("k1", 0), row("k2", 10+delay), row("k1", 10)} {
			if maxSeen > math.MinInt64 && r[1].I < maxSeen-delay {
				t.Fatalf("test input out of bound")
			}
			maxSeen = max(maxSeen, r[1].I)
			if err := s.Process(&Batch{Rows: []types.Row{r}}, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.OnWatermark(maxSeen-delay, collect(&out, nil)); err != nil {
				t.Fatal(err)
			}
		}
		_ = s.Finish(collect(&out, nil))
		want := "k1[0,20)=2 k2[" + fmt.Sprint(10+delay) + "," + fmt.Sprint(20+delay) + ")=1"
		if got := sessions(out); got != want {
			t.Errorf("delay %d, row exactly at the watermark: %s, want %s", delay, got, want)
		}
	}
}

// ---------------------------------------------------------------------------
// MemKV

func TestMemKV(t *testing.T) {
	kv := NewMemKV()
	keys := []string{"b", "a", "ab", "", "\x00", "\xff", "a\x00", "abc", "b\x00"}
	for i, k := range keys {
		v := []byte{byte(i)}
		if err := kv.Set([]byte(k), v); err != nil {
			t.Fatal(err)
		}
		v[0] = 0xEE // arguments may be modified after Set returns
	}
	scan := func(lo, hi []byte) []string {
		var out []string
		if err := kv.Scan(lo, hi, func(k, _ []byte) error { out = append(out, fmt.Sprintf("%q", k)); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := fmt.Sprint(scan(nil, nil)), `["" "\x00" "a" "a\x00" "ab" "abc" "b" "b\x00" "\xff"]`; got != want {
		t.Errorf("full scan %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(scan([]byte("a"), []byte("b"))), `["a" "a\x00" "ab" "abc"]`; got != want {
		t.Errorf("[a, b) %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(scan([]byte("ab"), nil)), `["ab" "abc" "b" "b\x00" "\xff"]`; got != want {
		t.Errorf("[ab, ∞) %s, want %s", got, want)
	}
	if got := scan([]byte("b"), []byte("b")); len(got) != 0 {
		t.Errorf("empty range %v", got)
	}
	v, ok, _ := kv.Get([]byte("a"))
	if !ok || len(v) != 1 || v[0] != 1 {
		t.Fatalf("Get(a) = %v %v", v, ok)
	}
	v[0] = 99 // Get's value is the caller's
	if v2, _, _ := kv.Get([]byte("a")); v2[0] != 1 {
		t.Errorf("modifying Get's result changed the KV")
	}
	_ = kv.Delete([]byte("a"))
	if _, ok, _ := kv.Get([]byte("a")); ok {
		t.Errorf("deleted key still there")
	}
	if kv.Len() != len(keys)-1 {
		t.Errorf("Len = %d", kv.Len())
	}
	stop := errors.New("stop")
	n := 0
	if err := kv.Scan(nil, nil, func(_, _ []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Scan error: %v after %d", err, n)
	}
	// be64 keys order like the numbers
	nums := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	for i := 1; i < len(nums); i++ {
		if bytes.Compare(AppendInt64Key(nil, nums[i-1]), AppendInt64Key(nil, nums[i])) >= 0 {
			t.Errorf("AppendInt64Key(%d) >= AppendInt64Key(%d)", nums[i-1], nums[i])
		}
		if readBE64(AppendInt64Key(nil, nums[i])) != nums[i] {
			t.Errorf("readBE64(AppendInt64Key(%d))", nums[i])
		}
	}
}

// ---------------------------------------------------------------------------
// Steps: JSON round trip (the catalog stores them), Build errors, String

func TestStepJSONRoundTrip(t *testing.T) {
	m := mustExpr(t)
	x := expr.Col(0, types.Int4, "x")
	s := expr.Col(1, types.Text, "s")
	steps := []plan.Step{
		{Op: plan.OpFilter, Pred: m(expr.Or(m(expr.Compare(">", x, expr.Const(i4(2)))), m(expr.Call("like", s, expr.Const(txt("a%")))), m(expr.IsNull(x, false))))},
		{Op: plan.OpProject, Exprs: []*expr.Expr{m(expr.Call("*", x, expr.Const(num("1.5")))), m(expr.Call("upper", s))}, Names: []string{"y", "u"}},
		{Op: plan.OpAggregate, GroupBy: []*expr.Expr{s}, Aggs: []plan.AggSpec{{Name: "count", Star: true}, {Name: "sum", Arg: x}, {Name: "count", Arg: x, Distinct: true}}},
		{Op: plan.OpSort, Keys: []plan.SortKey{{Col: 0, Desc: true, NullsFirst: true}}, Limit: -1},
		{Op: plan.OpLimit, Limit: 2, Offset: 1},
		{Op: plan.OpDistinct},
	}
	rows := []types.Row{{i4(1), txt("abc")}, {i4(3), txt("b")}, {null, txt("c")}, {i4(5), txt("abc")}, {i4(1), txt("abc")}, {i4(0), txt("zz")}}
	run := func(steps []plan.Step) string {
		var ops []Operator
		for i := range steps {
			op, err := Build(&steps[i], nil, AbortOnError)
			if err != nil {
				t.Fatalf("Build(%s): %v", steps[i].String(), err)
			}
			ops = append(ops, op)
		}
		var out []types.Row
		ch := NewChain(collect(&out, nil), ops...)
		if err := ch.Push(&Batch{Rows: rows}); err != nil && !errors.Is(err, ErrDone) {
			t.Fatal(err)
		}
		if err := ch.Finish(); err != nil && !errors.Is(err, ErrDone) {
			t.Fatal(err)
		}
		return show(out)
	}
	for i := range steps {
		one := steps[i : i+1]
		data, err := json.Marshal(one)
		if err != nil {
			t.Fatal(err)
		}
		var back []plan.Step
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if a, b := run(one), run(back); a != b {
			t.Errorf("%s: before JSON %s, after %s", one[0].String(), a, b)
		}
		if back[0].String() != one[0].String() || one[0].String() == "" {
			t.Errorf("String: %q vs %q", one[0].String(), back[0].String())
		}
	}
	if got, want := run(steps[:2]), "(1.5,ABC) (4.5,B) (NULL,C) (7.5,ABC) (1.5,ABC)"; got != want {
		t.Errorf("filter+project: %s, want %s", got, want)
	}
	if got, want := run(steps[2:]), "(c,1,NULL,0) (b,1,3,1)"; got != want {
		t.Errorf("aggregate, sort DESC NULLS FIRST, limit 2 offset 1: %s, want %s", got, want)
	}
}

func TestBuildErrors(t *testing.T) {
	for _, s := range []plan.Step{
		{Op: "nosuch"},
		{Op: plan.OpWindowAggregate},
		{Op: plan.OpSession},
		{Op: plan.OpSession, Window: &plan.WindowSpec{Kind: "session"}},
		{Op: plan.OpAggregate, Aggs: []plan.AggSpec{{Name: "sum", Arg: expr.Col(0, types.Text, "s")}}},
		{Op: plan.OpFilter, Pred: expr.Col(0, types.Int4, "x")},
		{Op: plan.OpProject, Exprs: []*expr.Expr{expr.Param(3, types.Int4)}},
	} {
		if _, err := Build(&s, nil, AbortOnError); err == nil {
			t.Errorf("Build(%+v) succeeded", s)
		}
	}
	if (&plan.Step{Op: plan.OpFilter}).Stateless() != true || (&plan.Step{Op: plan.OpProject}).Stateless() != true || (&plan.Step{Op: plan.OpTopN}).Stateless() {
		t.Error("Stateless")
	}
}

// PostgreSQL's interval equality (and hash) compares the span with 30-day
// months and 24-hour days: '1 mon' = '30 days' = '720 hours', so they form
// one group and count(DISTINCT) counts them once.
//
// Regression test: before afce82d types.AppendKey appended the months and
// days after the span, so GROUP BY / DISTINCT over intervals split values
// PostgreSQL considers equal.
func TestIntervalEqualSpansGroupTogether(t *testing.T) {
	x := expr.Col(0, types.Interval, "x")
	g, _ := expr.Compile(x, nil)
	rows := []types.Row{
		{types.NewInterval(types.IntervalValue{Months: 1})},
		{types.NewInterval(types.IntervalValue{Days: 30})},
		{types.NewInterval(types.IntervalValue{Micros: 720 * types.MicrosPerHour})},
	}
	if types.Compare(rows[0][0], rows[1][0]) != 0 || types.Compare(rows[1][0], rows[2][0]) != 0 {
		t.Fatal("types.Compare: '1 mon', '30 days' and '720:00:00' should be equal")
	}
	out := runHash(t, &HashAggregate{GroupBy: []expr.Eval{g}, Aggs: []AggCall{aggCall(t, "count", nil, false)}, OnError: AbortOnError}, rows)
	if len(out) != 1 {
		t.Errorf("GROUP BY interval: %d groups %s, want 1", len(out), show(out))
	}
	out = runHash(t, &HashAggregate{Aggs: []AggCall{aggCall(t, "count", x, true)}, OnError: AbortOnError}, rows)
	if out[0][0].I != 1 {
		t.Errorf("count(DISTINCT interval) = %d, want 1", out[0][0].I)
	}
}

// The statistics of two variables against a two-pass computation of the
// same quantities (means first, then the sums of deviations), over random
// pairs with NULLs; merged halves (session windows) and reloaded state
// give the same results. Floating point: equal to 1e-9, relative.
func TestRegrAccumulators(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
		"regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy"}
	close := func(a, b types.Value) bool {
		if a.K != b.K || a.K == types.Null {
			return a.K == b.K
		}
		x, y := types.AsFloat(a), types.AsFloat(b)
		return math.Abs(x-y) <= 1e-9*max(1, math.Abs(x), math.Abs(y))
	}
	for iter := 0; iter < 300; iter++ {
		n := r.IntN(10)
		pairs := make([]types.Value, n)
		var ys, xs []float64
		for i := range pairs {
			y, x := f8(float64(r.IntN(41)-20)/4), f8(float64(r.IntN(41)-20)/4)
			if iter%3 == 0 {
				x = f8(2) // a vertical line: corr, slope, r2, intercept NULL
			}
			switch r.IntN(8) {
			case 0:
				y = null
			case 1:
				x = null
			default:
				ys, xs = append(ys, y.Float()), append(xs, x.Float())
			}
			pairs[i] = types.NewRecord([]types.Value{y, x})
		}
		// the oracle
		m := float64(len(xs))
		var mx, my, sxx, syy, sxy float64
		for i := range xs {
			mx += xs[i]
			my += ys[i]
		}
		mx, my = mx/m, my/m
		for i := range xs {
			sxx += (xs[i] - mx) * (xs[i] - mx)
			syy += (ys[i] - my) * (ys[i] - my)
			sxy += (xs[i] - mx) * (ys[i] - my)
		}
		want := map[string]types.Value{"regr_count": types.NewInt8(int64(len(xs)))}
		if len(xs) > 0 {
			want["regr_avgx"], want["regr_avgy"] = f8(mx), f8(my)
			want["regr_sxx"], want["regr_syy"], want["regr_sxy"] = f8(sxx), f8(syy), f8(sxy)
			want["covar_pop"] = f8(sxy / m)
			if len(xs) > 1 {
				want["covar_samp"] = f8(sxy / (m - 1))
			}
			if sxx != 0 {
				want["regr_slope"], want["regr_intercept"] = f8(sxy/sxx), f8(my-mx*sxy/sxx)
				if syy != 0 {
					want["corr"], want["regr_r2"] = f8(sxy/math.Sqrt(sxx*syy)), f8(sxy*sxy/(sxx*syy))
				} else {
					want["regr_r2"] = f8(1)
				}
			}
		}
		for _, name := range names {
			f, err := ResolveAgg(name, types.Record, false)
			if err != nil {
				t.Fatal(err)
			}
			all, left, right := f.New(), f.New(), f.New()
			cut := r.IntN(n + 1)
			for i, p := range pairs {
				_ = all.Add(p)
				if i < cut {
					_ = left.Add(p)
				} else {
					_ = right.Add(p)
				}
			}
			w, ok := want[name]
			if !ok {
				w = null
			}
			if got := all.Result(); !close(got, w) {
				t.Fatalf("%s over %v: %s, two passes give %s", name, pairs, got, w)
			}
			reload := f.New()
			if _, err := reload.LoadState(right.AppendState(nil)); err != nil {
				t.Fatal(err)
			}
			if err := left.Merge(reload); err != nil {
				t.Fatal(err)
			}
			if got := left.Result(); !close(got, w) {
				t.Fatalf("%s over %v split at %d: merged %s, two passes give %s", name, pairs, cut, got, w)
			}
		}
	}
	if _, err := ResolveAgg("corr", types.Float8, false); err == nil {
		t.Error("corr of one float8 resolved")
	}
	// finite values whose sums overflow: 22003, as in PostgreSQL; an
	// infinite value: NaN sums
	f, _ := ResolveAgg("corr", types.Record, false)
	acc := f.New()
	for _, y := range []float64{1e200, -1e200, 3} {
		if err := acc.Add(types.NewRecord([]types.Value{f8(y), f8(1)})); err != nil {
			if pgerror.CodeOf(err) != pgerror.NumericValueOutOfRange {
				t.Fatalf("overflow: %v", err)
			}
			break
		} else if y == 3 {
			t.Fatal("sums past double precision's range gave no error")
		}
	}
	acc = f.New()
	for _, x := range []float64{math.Inf(1), 1} {
		if err := acc.Add(types.NewRecord([]types.Value{f8(1), f8(x)})); err != nil {
			t.Fatal(err)
		}
	}
	sxx, _ := ResolveAgg("regr_sxx", types.Record, false)
	a := sxx.New()
	_ = a.Add(types.NewRecord([]types.Value{f8(1), f8(math.Inf(1))}))
	_ = a.Add(types.NewRecord([]types.Value{f8(2), f8(1)}))
	if got := a.Result(); !math.IsNaN(got.Float()) {
		t.Errorf("regr_sxx over an infinity: %s, want NaN", got)
	}
}
