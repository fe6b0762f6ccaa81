package expr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

func setRows(t *testing.T, name string, ord bool, args ...*expr.Expr) (string, error) {
	t.Helper()
	call, err := expr.ResolveSet(name, args)
	if err != nil {
		return "", err
	}
	rows, err := call.Rows(ord)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = v.String()
		}
		lines = append(lines, strings.Join(cells, ","))
	}
	return strings.Join(lines, " "), nil
}

func TestSetFunctions(t *testing.T) {
	c := func(v types.Value) *expr.Expr { return expr.Const(v) }
	for _, tc := range []struct {
		name string
		ord  bool
		args []*expr.Expr
		want string
	}{
		{"unnest", false, []*expr.Expr{c(arr(types.Int4Array, "{3,NULL,1}"))}, "3 NULL 1"},
		{"unnest", true, []*expr.Expr{c(arr(types.TextArray, "{a,b}"))}, "a,1 b,2"},
		{"unnest", false, []*expr.Expr{c(arr(types.Int4Array, "{1,2}")), c(arr(types.TextArray, "{x}"))}, "1,x 2,NULL"},
		{"unnest", false, []*expr.Expr{expr.TypedNull(types.Int4Array)}, ""},
		{"unnest", false, []*expr.Expr{c(unk("{a,b}"))}, "a b"},
		{"generate_series", false, []*expr.Expr{c(i4(1)), c(i4(3))}, "1 2 3"},
		{"generate_series", false, []*expr.Expr{c(i4(5)), c(i4(1)), c(i4(-2))}, "5 3 1"},
		{"generate_series", false, []*expr.Expr{c(i4(3)), c(i4(1))}, ""},
		{"generate_series", false, []*expr.Expr{c(i8(9223372036854775806)), c(i8(9223372036854775807))}, "9223372036854775806 9223372036854775807"},
		{"generate_series", false, []*expr.Expr{c(num("0.5")), c(num("1.6")), c(num("0.5"))}, "0.5 1.0 1.5"},
		{"generate_series", false, []*expr.Expr{c(ts("2026-01-01")), c(ts("2026-01-01 02:00")), c(iv("1 hour"))},
			"2026-01-01 00:00:00 2026-01-01 01:00:00 2026-01-01 02:00:00"},
		{"generate_series", false, []*expr.Expr{expr.TypedNull(types.Int4), c(i4(3))}, ""},
		{"generate_subscripts", false, []*expr.Expr{c(arr(types.TextArray, "{a,b,c}")), c(i4(1))}, "1 2 3"},
		{"pg_options_to_table", false, []*expr.Expr{c(arr(types.TextArray, "{topic=x,flag}"))}, "topic,x flag,NULL"},
	} {
		got, err := setRows(t, tc.name, tc.ord, tc.args...)
		if err != nil || got != tc.want {
			t.Errorf("%s%v: %q, %v; want %q", tc.name, tc.args, got, err, tc.want)
		}
	}
	if _, err := setRows(t, "generate_series", false, c(i4(1)), c(i4(2)), c(i4(0))); pgerror.CodeOf(err).String() != pgerror.InvalidParameterValue.String() {
		t.Errorf("step 0: %v", err)
	}
	if _, err := setRows(t, "generate_series", false, c(i8(1)), c(i8(1<<40))); pgerror.CodeOf(err).String() != pgerror.ProgramLimitExceeded.String() {
		t.Errorf("a runaway series: %v", err)
	}
	if _, err := setRows(t, "generate_series", false, c(txt("a")), c(i4(2))); pgerror.CodeOf(err).String() != pgerror.UndefinedFunction.String() {
		t.Errorf("generate_series(text, int): %v", err)
	}
	if _, err := setRows(t, "upper", false, c(txt("a"))); pgerror.CodeOf(err).String() != pgerror.FeatureNotSupported.String() {
		t.Errorf("a scalar function in FROM: %v", err)
	}
	call, err := expr.ResolveSet("unnest", []*expr.Expr{c(arr(types.Int8Array, "{1}"))})
	if err != nil || len(call.Types) != 1 || call.Types[0] != types.Int8 || call.Names[0] != "unnest" {
		t.Errorf("unnest(int8[]) columns: %v %v %v", call.Names, call.Types, err)
	}
}

// TestFuncScan evaluates ARRAY(SELECT x || '!' FROM unnest(tags) x WHERE
// x <> $current_row[1]) in place, per row.
func TestFuncScan(t *testing.T) {
	m := mustBuild(t)
	tags := expr.Col(0, types.TextArray, "tags")
	skip := expr.Col(1, types.Text, "skip")
	call, err := expr.ResolveSet("unnest", []*expr.Expr{tags})
	if err != nil {
		t.Fatal(err)
	}
	// inside: column 0 is the function's, columns 1… the current row's
	x := expr.Col(0, types.Text, "x")
	where := m(expr.Compare("<>", x, expr.Col(2, types.Text, "skip")))
	item := m(expr.Call("||", x, expr.Const(unk("!"))))
	row := types.Row{arr(types.TextArray, "{a,b,NULL}"), txt("b")}
	for _, c := range []struct {
		mode string
		typ  types.Type
		x    *expr.Expr
		want string
	}{
		{"array", types.TextArray, nil, "{a!}"},
		{"exists", types.Bool, nil, "t"},
		{"scalar", types.Text, nil, "a!"},
		{"in", types.Bool, m(expr.Call("||", skip, expr.Const(unk("!")))), "f"},
		{"in", types.Bool, expr.Const(txt("a!")), "t"},
	} {
		e := expr.FuncScan(call, false, where, item, c.mode, c.typ, c.x)
		v, err := evalRow(t, e, row)
		if err != nil || v.String() != c.want {
			t.Errorf("%s: %s = %s, %v; want %s", c.mode, e, v, err, c.want)
		}
		b, _ := json.Marshal(e)
		var back expr.Expr
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if v2, err := evalRow(t, &back, row); err != nil || v2.String() != c.want {
			t.Errorf("%s after JSON: %s, %v", c.mode, v2, err)
		}
	}
	scalar := expr.FuncScan(call, false, expr.Const(bl(true)), item, "scalar", types.Text, nil)
	if _, err := evalRow(t, scalar, row); pgerror.CodeOf(err).String() != pgerror.CardinalityViolation.String() {
		t.Errorf("two rows for a scalar subquery: %v", err)
	}
	if v, err := evalRow(t, scalar, types.Row{null, txt("")}); err != nil || !v.IsNull() {
		t.Errorf("unnest(NULL) as a scalar subquery: %s, %v", v, err)
	}
}

func TestFail(t *testing.T) {
	m := mustBuild(t)
	f := expr.Fail(pgerror.NotSupported("string_agg"), types.Unknown)
	// built into other expressions and folded, it stays put …
	e := m(expr.Case([]*expr.Expr{expr.Const(bl(false))}, []*expr.Expr{m(expr.Cast(f, types.Text))}, nil))
	if v, err := evalRow(t, e, nil); err != nil || !v.IsNull() {
		t.Errorf("an unevaluated failure: %s, %v", v, err)
	}
	// … and fails with its SQLSTATE when evaluated
	if _, err := evalRow(t, m(expr.Cast(f, types.Text)), nil); pgerror.CodeOf(err).String() != pgerror.FeatureNotSupported.String() {
		t.Errorf("an evaluated failure: %v", err)
	}
}

func TestQuoteAndFormat(t *testing.T) {
	for _, c := range []struct {
		fn   string
		args []any
		want string
	}{
		{"quote_ident", []any{"abc"}, "abc::text"},
		{"quote_ident", []any{"Abc"}, `"Abc"::text`},
		{"quote_ident", []any{"select"}, `"select"::text`},
		{"quote_ident", []any{`a"b`}, `"a""b"::text`},
		{"quote_ident", []any{"a1$"}, "a1$::text"},
		{"quote_literal", []any{"it's"}, "'it''s'::text"},
		{"quote_literal", []any{`a\b`}, `E'a\\b'::text`},
		{"quote_literal", []any{42}, "'42'::text"},
		{"quote_nullable", []any{nullOf(types.Text)}, "NULL::text"},
		{"format", []any{"%s|%I|%L|%%|%1$s", "x y", "x y", nullOf(types.Text)}, `x y|"x y"|NULL|%|x y::text`},
		{"format", []any{"%s", 1}, "1::text"},
		{"format", []any{"%s %s", "a"}, "ERROR 22023"},
		{"pg_size_pretty", []any{i8(10239)}, "10239 bytes::text"},
		{"pg_size_pretty", []any{i8(10240)}, "10 kB::text"},
		{"pg_size_pretty", []any{i8(1 << 30)}, "1024 MB::text"},
		{"pg_size_pretty", []any{i8(-20 << 20)}, "-20 MB::text"},
	} {
		if r := run(t, callOf(c.fn), c.args...); r.String() != c.want {
			t.Errorf("%s%v = %s, want %s", c.fn, c.args, r, c.want)
		}
	}
}
