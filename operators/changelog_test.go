package operators_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestSignedGroupAggregate feeds a view's table, random upserts and
// tombstones by record key, through a changelog step into a group
// aggregate over signed rows, rebuilding both from their state or
// starting a new epoch at random,
// and checks after every batch that the aggregate's changes, applied by
// group, equal the bounded aggregate over the rows the table holds then.
func TestSignedGroupAggregate(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 30
	}
	for seed := range cases {
		for _, global := range []bool{false, true} {
			name := fmt.Sprintf("seed=%d/global=%v", seed, global)
			t.Run(name, func(t *testing.T) { signedCase(t, uint64(seed), global) })
		}
	}
}

func signedCase(t *testing.T, seed uint64, global bool) {
	rng := rand.New(rand.NewPCG(seed, 19))
	g := expr.Col(0, types.Int8, "g")
	v := expr.Col(1, types.Int8, "v")
	f := expr.Col(2, types.Float8, "f")
	n := expr.Col(3, types.Numeric, "n")
	pos, err := expr.Call(">", v, expr.Const(types.NewInt8(0)))
	if err != nil {
		t.Fatal(err)
	}
	aggs := []plan.AggSpec{
		{Name: "count", Star: true}, {Name: "count", Arg: v}, {Name: "sum", Arg: v},
		{Name: "avg", Arg: v}, {Name: "sum", Arg: n}, {Name: "avg", Arg: n},
		// those that keep the group's values (numerics of one value but
		// different scales would show whichever came first: not here)
		{Name: "min", Arg: v}, {Name: "max", Arg: v}, {Name: "count", Arg: v, Distinct: true},
		{Name: "sum", Arg: v, Distinct: true}, {Name: "avg", Arg: v, Distinct: true},
		{Name: "bool_or", Arg: pos}, {Name: "bool_and", Arg: pos},
		// NaNs and infinities, which a sum cannot take back out
		{Name: "sum", Arg: f}, {Name: "avg", Arg: f}, {Name: "var_pop", Arg: n}, {Name: "var_samp", Arg: n},
	}
	var groupBy []*expr.Expr
	if !global {
		groupBy = []*expr.Expr{g}
	}
	const width, keyCol = 4, 4 // g, v, f, n; then _key and the other metadata
	inc := plan.Step{Op: plan.OpGroupAggregate, GroupBy: groupBy, Aggs: aggs, Changes: true, Sign: width + 4}
	build := func(s *plan.Step, kv operators.KV) operators.Stateful {
		op, err := operators.Build(s, &expr.Env{}, operators.AbortOnError)
		if err != nil {
			t.Fatal(err)
		}
		st := op.(operators.Stateful)
		st.Bind(kv)
		return st
	}
	logKV, aggKV := operators.NewMemKV(), operators.NewMemKV()
	logStep := plan.Step{Op: plan.OpChangelog, Width: width, KeyCol: keyCol}
	logOp, aggOp := build(&logStep, logKV), build(&inc, aggKV)
	table := map[string]types.Row{} // the view's rows by record key
	view := map[string]types.Row{}  // the aggregate's rows by group, from its changes
	var log []string
	for round := range 40 {
		b := &operators.Batch{}
		for range 1 + rng.IntN(12) {
			key := fmt.Sprintf("k%d", rng.IntN(10))
			row := make(types.Row, width+4)
			for j := range row {
				row[j] = types.NullValue
			}
			row[keyCol] = types.Value{K: types.Bytea, S: key}
			if rng.IntN(4) == 0 {
				delete(table, key)
				b.Rows, b.Ops = append(b.Rows, row), append(b.Ops, operators.OpDelete)
				log = append(log, "delete "+key)
				continue
			}
			row[0] = types.NewInt8(int64(rng.IntN(3)))
			if rng.IntN(5) > 0 {
				row[1] = types.NewInt8(int64(rng.IntN(20) - 10)) // values repeat within a group
			}
			if rng.IntN(5) > 0 {
				row[3] = types.NewNumeric(apd.New(int64(rng.IntN(5001)-2500), -int32(rng.IntN(3))))
				if rng.IntN(15) == 0 {
					row[3] = types.NewNumeric(&apd.Decimal{Form: apd.NaN})
				}
			}
			if rng.IntN(5) > 0 { // whole numbers: float sums exact in any order
				row[2] = types.NewFloat8([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)])
				if rng.IntN(6) > 0 {
					row[2] = types.NewFloat8(float64(rng.IntN(200) - 100))
				}
			}
			table[key] = types.CloneRow(row[:width])
			b.Rows, b.Ops = append(b.Rows, row), append(b.Ops, operators.OpInsert)
			log = append(log, fmt.Sprintf("upsert %s %v", key, row[:width]))
		}
		err := logOp.Process(b, func(signed *operators.Batch) error {
			return aggOp.Process(signed, func(ch *operators.Batch) error {
				for i, r := range ch.Rows {
					k := "all"
					if !global {
						k = r[0].String()
					}
					_, had := view[k]
					switch op := ch.Ops[i]; {
					case op == operators.OpInsert && had, op == operators.OpUpdate && !had, op == operators.OpDelete && !had:
						return fmt.Errorf("%s of group %s, which the view %s", op, k, map[bool]string{true: "has", false: "lacks"}[had])
					case op == operators.OpDelete:
						delete(view, k)
					default:
						view[k] = types.CloneRow(r)
					}
				}
				return nil
			})
		})
		if err != nil {
			t.Fatalf("round %d: %v\ninput:\n%s", round, err, strings.Join(log, "\n"))
		}
		// the bounded aggregate over what the table holds
		bounded, err := operators.Build(&plan.Step{Op: plan.OpAggregate, GroupBy: groupBy, Aggs: aggs}, &expr.Env{}, operators.AbortOnError)
		if err != nil {
			t.Fatal(err)
		}
		live := &operators.Batch{}
		for _, r := range table {
			live.Rows = append(live.Rows, append(types.CloneRow(r), make(types.Row, 5)...))
		}
		want := map[string]string{}
		collect := func(o *operators.Batch) error {
			for _, r := range o.Rows {
				k := "all"
				if !global {
					k = r[0].String()
				}
				want[k] = fmt.Sprint(r)
			}
			return nil
		}
		if len(live.Rows) > 0 {
			if err := bounded.Process(live, collect); err != nil {
				t.Fatal(err)
			}
		}
		if err := bounded.Finish(collect); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for k, r := range view {
			got[k] = fmt.Sprint(r)
		}
		if global && len(view) == 0 && len(table) == 0 {
			got = want // no row came yet: the group is made by its first row
		}
		if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
			t.Fatalf("round %d: view\n%v\nwant\n%v\ninput:\n%s", round, sorted(got), sorted(want), strings.Join(log, "\n"))
		}
		if rng.IntN(3) == 0 { // checkpoint, and start again from the state
			if err := logOp.OnCheckpoint(); err != nil {
				t.Fatal(err)
			}
			if err := aggOp.OnCheckpoint(); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				logOp, aggOp = build(&logStep, logKV), build(&inc, aggKV)
			} else { // the next epoch of the same operators (cached groups move to the cold cache)
				logOp.Bind(logKV)
				aggOp.Bind(aggKV)
			}
		}
	}
}

func sorted(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+": "+v)
	}
	sort.Strings(out)
	return out
}

// TestGroupAggregateSeed checks the group over no rows a seed marker
// makes an aggregate without GROUP BY emit (operators.Seeder): once, as
// an insert of count 0 and sum NULL; not again after a restart from its
// state, nor after rows came; never with GROUP BY.
func TestGroupAggregateSeed(t *testing.T) {
	v := expr.Col(0, types.Int8, "v")
	aggs := []plan.AggSpec{{Name: "count", Star: true}, {Name: "sum", Arg: v}}
	build := func(groupBy []*expr.Expr, kv operators.KV) operators.Seeder {
		op, err := operators.Build(&plan.Step{Op: plan.OpGroupAggregate, GroupBy: groupBy, Aggs: aggs, Changes: true}, &expr.Env{}, operators.AbortOnError)
		if err != nil {
			t.Fatal(err)
		}
		op.(operators.Stateful).Bind(kv)
		return op.(operators.Seeder)
	}
	seed := func(s operators.Seeder) []string {
		var got []string
		err := s.Seed(func(b *operators.Batch) error {
			for i, r := range b.Rows {
				got = append(got, fmt.Sprintf("%s %v", b.Ops[i], r))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	kv := operators.NewMemKV()
	g := build(nil, kv)
	if got := seed(g); len(got) != 1 || got[0] != fmt.Sprintf("%s %v", operators.OpInsert, types.Row{types.NewInt8(0), types.NullValue}) {
		t.Fatalf("first seed emitted %q, want one insert of (0, NULL)", got)
	}
	if got := seed(g); len(got) != 0 {
		t.Fatalf("second seed emitted %q", got)
	}
	if err := g.(operators.Stateful).OnCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if got := seed(build(nil, kv)); len(got) != 0 {
		t.Fatalf("seed after a restart from state emitted %q", got)
	}
	fresh := build(nil, operators.NewMemKV())
	err := fresh.(operators.Operator).Process(&operators.Batch{Rows: []types.Row{{types.NewInt8(4)}}}, func(*operators.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := seed(fresh); len(got) != 0 {
		t.Fatalf("seed after a row emitted %q", got)
	}
	if got := seed(build([]*expr.Expr{v}, operators.NewMemKV())); len(got) != 0 {
		t.Fatalf("seed with GROUP BY emitted %q", got)
	}
}
