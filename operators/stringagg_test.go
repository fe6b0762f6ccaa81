package operators

import (
	"context"
	"sort"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

func TestStringAggArrayAgg(t *testing.T) {
	k := expr.Col(0, types.Text, "k")
	x := expr.Col(1, types.Int4, "x")
	s := expr.Col(2, types.Text, "s")
	g, _ := expr.Compile(k, nil)
	sa := aggCall(t, "string_agg", s, false)
	comma := ","
	sa.Func.Delim = &comma
	h := &HashAggregate{GroupBy: []expr.Eval{g}, OnError: AbortOnError, Aggs: []AggCall{sa, aggCall(t, "array_agg", x, false)}}
	out := runHash(t, h,
		[]types.Row{{txt("a"), i4(1), txt("p")}, {txt("b"), null, null}, {txt("a"), null, null}},
		[]types.Row{{txt("a"), i4(3), txt("q")}, {txt("b"), null, null}},
	)
	sort.Slice(out, func(i, j int) bool { return types.Compare(out[i][0], out[j][0]) < 0 })
	// values in the order added; string_agg skips NULLs, array_agg keeps them
	if got, want := show(out), "(a,p,q,{1,NULL,3}) (b,NULL,{NULL,NULL})"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if out[0][2].K != types.Int4Array || out[0][1].K != types.Text {
		t.Errorf("types %s %s", out[0][1].K, out[0][2].K)
	}
	// no rows: NULL for both
	h = &HashAggregate{OnError: AbortOnError, Aggs: []AggCall{aggCall(t, "string_agg", s, false), aggCall(t, "array_agg", x, false)}}
	if got := show(runHash(t, h)); got != "(NULL,NULL)" {
		t.Errorf("empty input: %s", got)
	}
	// a NULL delimiter (Delim nil) joins with nothing
	h = &HashAggregate{OnError: AbortOnError, Aggs: []AggCall{aggCall(t, "string_agg", s, false)}}
	if got := show(runHash(t, h, []types.Row{{null, null, txt("a")}, {null, null, txt("b")}})); got != "(ab)" {
		t.Errorf("NULL delimiter: %s", got)
	}
}

func TestResolveStringArrayAgg(t *testing.T) {
	for _, c := range []struct {
		name string
		arg  types.Type
		ret  types.Type
		code pgerror.Code
	}{
		{"string_agg", types.Text, types.Text, pgerror.SuccessfulCompletion},
		{"string_agg", types.Varchar, types.Text, pgerror.SuccessfulCompletion},
		{"string_agg", types.Name, types.Text, pgerror.SuccessfulCompletion},
		{"string_agg", types.Unknown, types.Text, pgerror.SuccessfulCompletion},
		{"string_agg", types.Bytea, types.Bytea, pgerror.SuccessfulCompletion},
		{"string_agg", types.Int4, types.Null, pgerror.UndefinedFunction},
		{"array_agg", types.Int8, types.Int8Array, pgerror.SuccessfulCompletion},
		{"array_agg", types.Unknown, types.TextArray, pgerror.SuccessfulCompletion},
		{"array_agg", types.Int4Array, types.Null, pgerror.FeatureNotSupported},
	} {
		f, err := ResolveAgg(c.name, c.arg, false)
		if c.code != pgerror.SuccessfulCompletion {
			if pgerror.CodeOf(err) != c.code {
				t.Errorf("%s(%s): %v, want %s", c.name, c.arg, err, c.code)
			}
			continue
		}
		if err != nil || f.Ret != c.ret || !f.Grows {
			t.Errorf("%s(%s): %v %v", c.name, c.arg, f, err)
		}
	}
}

func TestStringArrayAggLimit(t *testing.T) {
	defer SetMaxAggValueBytes(10)()
	f, _ := ResolveAgg("string_agg", types.Text, false)
	d := "--"
	f.Delim = &d
	a := f.New()
	if err := a.Add(txt("abcd")); err != nil {
		t.Fatal(err)
	}
	if err := a.Add(txt("efgh")); err != nil { // 10 bytes: at the limit
		t.Fatal(err)
	}
	if err := a.Add(txt("")); pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
		t.Errorf("past the limit: %v", err)
	}
	if got := a.Result().S; got != "abcd--efgh" {
		t.Errorf("after the failed Add: %q", got)
	}
	defer SetMaxAggValueBytes(2 * valueBytes)()
	f, _ = ResolveAgg("array_agg", types.Int4, false)
	a = f.New()
	for i := 0; i < 2; i++ {
		if err := a.Add(i4(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Add(null); pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
		t.Errorf("array past the limit: %v", err)
	}
}

func TestStringArrayAggStateAndMerge(t *testing.T) {
	d := ";"
	for _, name := range []string{"string_agg", "array_agg"} {
		f, _ := ResolveAgg(name, types.Text, false)
		f.Delim = &d
		a, b := f.New(), f.New()
		a.Add(txt("x"))
		a.Add(null)
		b.Add(txt("y"))
		c := f.New()
		rest, err := c.LoadState(append(a.AppendState(nil), 7))
		if err != nil || len(rest) != 1 || rest[0] != 7 {
			t.Fatalf("%s LoadState: %v %v", name, rest, err)
		}
		if err := c.Merge(b); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"string_agg": "x;y", "array_agg": "{x,NULL,y}"}[name]
		if got := c.Result().String(); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

func TestStringAggBudget(t *testing.T) {
	s := expr.Col(0, types.Text, "s")
	b := NewBudget(context.Background(), 1<<20, "work_mem")
	h := &HashAggregate{OnError: AbortOnError, Budget: b, Aggs: []AggCall{aggCall(t, "string_agg", s, false)}}
	row := types.Row{txt(string(make([]byte, 4096)))}
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		err = h.Process(&Batch{Rows: []types.Row{row}}, nil)
	}
	if pgerror.CodeOf(err) != pgerror.OutOfMemory {
		t.Fatalf("4 MB of string_agg under a 1 MB budget: %v", err)
	}
}
