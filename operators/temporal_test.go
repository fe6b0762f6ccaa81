package operators

import (
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// TestTemporalFilter runs rows (id, from, until) through a temporal filter
// visible while from <= now() < until, on a clock the test moves, and
// checks what comes in and goes out at each step, across restarts from
// the state and a clock that steps back.
func TestTemporalFilter(t *testing.T) {
	bounds := []plan.TemporalBound{
		{Expr: expr.Col(1, types.TimestampTZ, "from"), Lower: true},
		{Expr: expr.Col(2, types.TimestampTZ, "until")},
	}
	var now int64 = 100
	kv := NewMemKV()
	build := func() *TemporalFilter {
		t.Helper()
		f, err := NewTemporalFilter(bounds, &expr.Env{}, AbortOnError, func() int64 { return now })
		if err != nil {
			t.Fatal(err)
		}
		f.Bind(kv)
		return f
	}
	var got []string
	emit := func(b *Batch) error {
		for i, r := range b.Rows {
			sign := "+"
			if b.Ops != nil && b.Ops[i] == OpDelete {
				sign = "-"
			}
			got = append(got, sign+r[0].String())
		}
		return nil
	}
	ts := func(v int64) types.Value { return types.NewTimestamp(types.TimestampTZ, v) }
	row := func(id, from, until int64) types.Row { return types.Row{i8(id), ts(from), ts(until)} }
	step := func(what, want string) {
		t.Helper()
		if g := strings.Join(got, " "); g != want {
			t.Fatalf("%s (clock %d): got %q, want %q", what, now, g, want)
		}
		got = nil
	}

	f := build()
	in := &Batch{Rows: []types.Row{
		row(1, 50, 150),  // in now, out at 150
		row(2, 100, 101), // in now (from is inclusive), out at 101
		row(3, 50, 100),  // until is exclusive: never in
		row(4, 120, 130), // in at 120, out at 130
		row(5, 110, 111), // a span a tick can pass whole
		row(6, 200, 190), // an empty span
		{i8(7), null, ts(500)},
		row(8, 10, 1<<62), // in for good
	}}
	if err := f.Process(in, emit); err != nil {
		t.Fatal(err)
	}
	step("process", "+1 +2 +8")
	now = 120
	if err := f.OnTick(emit); err != nil {
		t.Fatal(err)
	}
	step("tick", "+4 -2")

	// a restart from the state, on a clock behind the last one: nothing
	// comes back in, nothing goes out again
	now = 90
	f = build()
	if err := f.OnTick(emit); err != nil {
		t.Fatal(err)
	}
	step("tick after restart, clock behind", "")
	if err := f.Process(&Batch{Rows: []types.Row{row(9, 0, 121), row(10, 0, 120)}}, emit); err != nil {
		t.Fatal(err)
	}
	step("process after restart", "+9") // at the clock's latest, 120

	now = 1000
	f = build()
	if err := f.OnTick(emit); err != nil {
		t.Fatal(err)
	}
	step("tick past every end", "-9 -4 -1")
	if err := f.OnTick(emit); err != nil {
		t.Fatal(err)
	}
	step("tick again", "")
	// what is left in the state: the clock, the row count, row 8's end
	// (its until is far off); nothing of the rows that went
	var keys []string
	_ = kv.Scan(nil, nil, func(k, _ []byte) error { keys = append(keys, string(k[:1])); return nil })
	if strings.Join(keys, "") != "cno" {
		t.Fatalf("state keys by kind: %q, want \"cno\"", strings.Join(keys, ""))
	}

	// the input only comes: a delete is a bug in the plan
	err := f.Process(&Batch{Rows: []types.Row{row(11, 0, 2000)}, Ops: []Op{OpDelete}}, emit)
	if err == nil {
		t.Fatal("a delete in a temporal filter's input was taken")
	}
	if _, err := NewTemporalFilter(nil, &expr.Env{}, AbortOnError, nil); err == nil {
		t.Fatal("a temporal filter without bounds was built")
	}
}
