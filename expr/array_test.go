package expr_test

import (
	"encoding/json"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

func arr(t types.Type, s string) types.Value { return parse(t, s) }

func quantified(op string, all bool) builder {
	return func(e ...*expr.Expr) (*expr.Expr, error) { return expr.Quantified(op, e[0], e[1], all) }
}

// TestQuantifiedNullSemantics checks x op ANY/ALL (array) against
// PostgreSQL's three-valued results, element NULLs and empty arrays
// included.
func TestQuantifiedNullSemantics(t *testing.T) {
	ia := func(s string) types.Value { return arr(types.Int4Array, s) }
	for _, c := range []struct {
		x        any
		op       string
		a        any
		any, all string
	}{
		{1, "=", ia("{1,2}"), "t", "f"},
		{3, "=", ia("{1,2}"), "f", "f"},
		{1, "=", ia("{1,NULL}"), "t", "NULL"},
		{3, "=", ia("{1,NULL}"), "NULL", "f"},
		{1, "=", ia("{1,1,NULL}"), "t", "NULL"},
		{1, "=", ia("{1,1}"), "t", "t"},
		{1, "<>", ia("{2,3}"), "t", "t"},
		{1, "<>", ia("{1,NULL}"), "NULL", "f"},
		{2, "<>", ia("{1,NULL}"), "t", "NULL"},
		{nullOf(types.Int4), "=", ia("{1,2}"), "NULL", "NULL"},
		{nullOf(types.Int4), "=", ia("{}"), "f", "t"},
		{1, "=", ia("{}"), "f", "t"},
		{1, "=", nullOf(types.Int4Array), "NULL", "NULL"},
		{5, ">", ia("{1,4}"), "t", "t"},
		{3, ">", ia("{1,4}"), "t", "f"},
		{3, ">=", ia("{3,NULL}"), "t", "NULL"},
		{i8(1), "=", ia("{1}"), "t", "t"},
		{num("1.0"), "=", ia("{1,2}"), "t", "f"},
		{1, "=", unk("{3,1}"), "t", "f"},
		{"b", "=", unk("{a,b}"), "t", "f"},
		{"abc", "like", arr(types.TextArray, "{a%,x%}"), "t", "f"},
		{"abc", "like", arr(types.TextArray, "{x%,NULL}"), "NULL", "f"},
		{"ABC", "ilike", arr(types.TextArray, "{a%,%c}"), "t", "t"},
	} {
		if r := run(t, quantified(c.op, false), c.x, c.a); r.String() != c.any+"::boolean" {
			t.Errorf("%v %s ANY (%v) = %s, want %s", c.x, c.op, c.a, r, c.any)
		}
		if r := run(t, quantified(c.op, true), c.x, c.a); r.String() != c.all+"::boolean" {
			t.Errorf("%v %s ALL (%v) = %s, want %s", c.x, c.op, c.a, r, c.all)
		}
	}
	if r := run(t, quantified("=", false), 1, 2); r.code != pgerror.WrongObjectType.String() {
		t.Errorf("1 = ANY (2): %s, want 42809", r)
	}
	if r := run(t, quantified("=", false), 1, arr(types.TextArray, "{a}")); r.code != pgerror.UndefinedFunction.String() {
		t.Errorf("int = ANY (text[]): %s, want 42883", r)
	}
	if r := run(t, quantified("=", false), 1, unk("{a}")); r.code != pgerror.InvalidTextRepresentation.String() {
		t.Errorf("1 = ANY ('{a}'): %s, want 22P02", r)
	}
}

func TestArrayConstructorAndSubscripts(t *testing.T) {
	m := mustBuild(t)
	build := func(e ...*expr.Expr) (*expr.Expr, error) { return expr.Array(e) }
	if r := run(t, build, 1, i8(2), nullOf(types.Int4)); r.String() != "{1,2,NULL}::bigint[]" {
		t.Errorf("ARRAY[1, 2::int8, NULL] = %s", r)
	}
	if r := run(t, build, unk("a"), "b c"); r.String() != `{a,"b c"}::text[]` {
		t.Errorf("ARRAY['a', 'b c'] = %s", r)
	}
	if r := run(t, build, 1, "x"); r.code != pgerror.DatatypeMismatch.String() {
		t.Errorf("ARRAY[1, 'x'::text] = %s, want 42804", r)
	}
	if _, err := expr.Array(nil); pgerror.CodeOf(err).String() != pgerror.IndeterminateDatatype.String() {
		t.Errorf("ARRAY[] = %v, want 42P18", err)
	}
	if e, err := expr.EmptyArray(types.Int4Array); err != nil || e.Val.Text() != "{}" || e.Type != types.Int4Array {
		t.Errorf("ARRAY[]::int[] = %v, %v", e, err)
	}
	if _, err := expr.Array([]*expr.Expr{expr.Const(arr(types.Int4Array, "{1}"))}); pgerror.CodeOf(err).String() != pgerror.FeatureNotSupported.String() {
		t.Errorf("ARRAY[ARRAY[1]] = %v, want 0A000", err)
	}

	a := arr(types.TextArray, "{a,b,NULL,d}")
	sub := func(e ...*expr.Expr) (*expr.Expr, error) { return expr.Subscript(e[0], e[1]) }
	for i, want := range map[int]string{1: "a::text", 2: "b::text", 3: "NULL::text", 4: "d::text", 0: "NULL::text", 5: "NULL::text", -1: "NULL::text"} {
		if r := run(t, sub, a, i); r.String() != want {
			t.Errorf("a[%d] = %s, want %s", i, r, want)
		}
	}
	if r := run(t, sub, a, nullOf(types.Int4)); r.String() != "NULL::text" {
		t.Errorf("a[NULL] = %s", r)
	}
	if r := run(t, sub, "abc", 1); r.code != pgerror.DatatypeMismatch.String() {
		t.Errorf("'abc'[1] = %s, want 42804", r)
	}
	if r := run(t, sub, a, "1"); r.code != pgerror.DatatypeMismatch.String() {
		t.Errorf("a['1'::text] = %s, want 42804", r)
	}
	x := expr.Col(0, types.TextArray, "x")
	for _, c := range []struct {
		lo, hi *expr.Expr
		want   string
	}{
		{expr.Const(i4(2)), expr.Const(i4(3)), "{b,NULL}"},
		{nil, expr.Const(i4(2)), "{a,b}"},
		{expr.Const(i4(3)), nil, "{NULL,d}"},
		{expr.Const(i4(-5)), expr.Const(i4(9)), "{a,b,NULL,d}"},
		{expr.Const(i4(3)), expr.Const(i4(2)), "{}"},
		{expr.TypedNull(types.Int4), nil, "NULL"},
	} {
		e := m(expr.Slice(x, c.lo, c.hi))
		v, err := evalRow(t, e, types.Row{a})
		if err != nil || v.String() != c.want || e.Type != types.TextArray {
			t.Errorf("%s = %s, %v; want %s", e, v, err, c.want)
		}
	}
}

func TestArrayFunctions(t *testing.T) {
	ia := func(s string) types.Value { return arr(types.Int4Array, s) }
	ta := func(s string) types.Value { return arr(types.TextArray, s) }
	for _, c := range []struct {
		fn   string
		args []any
		want string
	}{
		{"array_to_string", []any{ta("{a,NULL,c}"), ","}, "a,c::text"},
		{"array_to_string", []any{ta("{a,NULL,c}"), ", ", "*"}, "a, *, c::text"},
		{"array_to_string", []any{ia("{1,2}"), "-"}, "1-2::text"},
		{"array_to_string", []any{ia("{}"), "-"}, "::text"},
		{"array_to_string", []any{nullOf(types.TextArray), "-"}, "NULL::text"},
		{"string_to_array", []any{"a,b,,c", ","}, `{a,b,"",c}::text[]`},
		{"string_to_array", []any{"a,b,x", ",", "x"}, "{a,b,NULL}::text[]"},
		{"string_to_array", []any{"abc", nullOf(types.Text)}, "{a,b,c}::text[]"},
		{"string_to_array", []any{"", ","}, "{}::text[]"},
		{"array_length", []any{ia("{1,2,3}"), 1}, "3::integer"},
		{"array_length", []any{ia("{}"), 1}, "NULL::integer"},
		{"array_length", []any{ia("{1}"), 2}, "NULL::integer"},
		{"array_upper", []any{ia("{5,6}"), 1}, "2::integer"},
		{"array_lower", []any{ia("{5,6}"), 1}, "1::integer"},
		{"cardinality", []any{ia("{}")}, "0::integer"},
		{"cardinality", []any{ia("{1,NULL}")}, "2::integer"},
		{"array_ndims", []any{ia("{1}")}, "1::integer"},
		{"array_dims", []any{ia("{1,2}")}, "[1:2]::text"},
		{"array_append", []any{ia("{1}"), 2}, "{1,2}::integer[]"},
		{"array_append", []any{nullOf(types.Int4Array), 2}, "{2}::integer[]"},
		{"array_prepend", []any{0, ia("{1}")}, "{0,1}::integer[]"},
		{"array_cat", []any{ia("{1}"), ia("{2,3}")}, "{1,2,3}::integer[]"},
		{"array_cat", []any{ia("{1}"), nullOf(types.Int4Array)}, "{1}::integer[]"},
		{"array_position", []any{ta("{a,NULL,b}"), "b"}, "3::integer"},
		{"array_position", []any{ta("{a,NULL,b}"), nullOf(types.Text)}, "2::integer"},
		{"array_position", []any{ta("{a}"), "z"}, "NULL::integer"},
		{"array_positions", []any{ia("{1,2,1}"), 1}, "{1,3}::integer[]"},
		{"array_remove", []any{ia("{1,2,1}"), 1}, "{2}::integer[]"},
		{"array_replace", []any{ia("{1,2,1}"), 1, 9}, "{9,2,9}::integer[]"},
		{"||", []any{ia("{1}"), ia("{2}")}, "{1,2}::integer[]"},
		{"||", []any{ia("{1}"), 2}, "{1,2}::integer[]"},
		{"||", []any{0, ia("{1}")}, "{0,1}::integer[]"},
		{"||", []any{ia("{1}"), unk("{2,3}")}, "{1,2,3}::integer[]"},
		{"||", []any{ta("{a}"), "b"}, "{a,b}::text[]"},
		{"||", []any{ia("{1}"), i8(2)}, "{1,2}::bigint[]"},
		{"||", []any{"a", "b"}, "ab::text"},
	} {
		if r := run(t, callOf(c.fn), c.args...); r.String() != c.want {
			t.Errorf("%s%v = %s, want %s", c.fn, c.args, r, c.want)
		}
	}
	if r := run(t, callOf("array_length"), "abc", 1); r.code != pgerror.UndefinedFunction.String() {
		t.Errorf("array_length(text) = %s, want 42883", r)
	}
	if r := run(t, callOf("array_append"), ia("{1}"), "x"); r.code != pgerror.DatatypeMismatch.String() {
		t.Errorf("array_append(int[], text) = %s, want 42804", r)
	}
}

func TestArrayComparisonAndCasts(t *testing.T) {
	ia := func(s string) types.Value { return arr(types.Int4Array, s) }
	for _, c := range []struct {
		op   string
		l, r any
		want string
	}{
		{"=", ia("{1,NULL}"), ia("{1,NULL}"), "t"},
		{"=", ia("{1,2}"), arr(types.Int8Array, "{1,2}"), "t"},
		{"<", ia("{1,2}"), ia("{1,3}"), "t"},
		{"<", ia("{1}"), ia("{1,0}"), "t"},
		{"=", arr(types.OidArray, "{0}"), unk("{0}"), "t"},
		{"<>", arr(types.OidArray, "{0}"), unk("{0,1}"), "t"},
		{"=", ia("{1}"), nullOf(types.Int4Array), "NULL"},
	} {
		if r := run(t, cmpOf(c.op), c.l, c.r); r.v.String() != c.want {
			t.Errorf("%v %s %v = %s, want %s", c.l, c.op, c.r, r, c.want)
		}
	}
	if r := run(t, cmpOf("="), ia("{1}"), arr(types.TextArray, "{1}")); r.code != pgerror.UndefinedFunction.String() {
		t.Errorf("int[] = text[]: %s, want 42883", r)
	}
	m := mustBuild(t)
	c := m(expr.Cast(expr.Const(unk("{1,2}")), types.Int8Array))
	if c.Kind != expr.KConst || c.Val.Text() != "{1,2}" || c.Type != types.Int8Array {
		t.Errorf("'{1,2}'::int8[] = %s", c)
	}
	if _, err := expr.Cast(expr.Const(unk("{x}")), types.Int4Array); pgerror.CodeOf(err).String() != pgerror.InvalidTextRepresentation.String() {
		t.Errorf("'{x}'::int[] = %v, want 22P02", err)
	}
	if _, err := expr.Cast(expr.Col(0, types.Int4, "x"), types.Int4Array); pgerror.CodeOf(err).String() != pgerror.DatatypeMismatch.String() {
		t.Errorf("int::int[] = %v, want 42804", err)
	}
	rt := m(expr.Cast(expr.Const(unk("pg_catalog.trigger")), types.Regtype))
	if rt.Val.I != 2279 || rt.Val.Text() != "trigger" {
		t.Errorf("'pg_catalog.trigger'::regtype = %d %s", rt.Val.I, rt.Val)
	}
	eq := m(expr.Compare("=", expr.Col(0, types.Oid, "typ"), rt))
	if v, _ := evalRow(t, eq, types.Row{types.NewInt(types.Oid, 2279)}); v.String() != "t" {
		t.Errorf("oid = regtype: %s", v)
	}
}

// Array expressions survive a plan's JSON round trip.
func TestArrayExprJSONRoundTrip(t *testing.T) {
	m := mustBuild(t)
	x := expr.Col(0, types.Int4Array, "x")
	n := expr.Col(1, types.Int4, "n")
	exprs := []*expr.Expr{
		m(expr.Array([]*expr.Expr{n, expr.Const(i4(2))})),
		m(expr.Subscript(x, n)),
		m(expr.Slice(x, nil, n)),
		m(expr.Quantified("=", n, x, false)),
		m(expr.Quantified("<", n, x, true)),
		m(expr.Quantified("like", expr.Const(txt("ab")), expr.Const(arr(types.TextArray, "{a%}")), false)),
		m(expr.Call("array_to_string", x, expr.Const(unk(",")))),
		m(expr.Call("||", x, n)),
	}
	row := types.Row{arr(types.Int4Array, "{3,1,NULL}"), i4(2)}
	for _, e := range exprs {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back expr.Expr
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		v1, err1 := evalRow(t, e, row)
		v2, err2 := evalRow(t, &back, row)
		if v1.String() != v2.String() || (err1 == nil) != (err2 == nil) || back.String() != e.String() {
			t.Errorf("%s: %s %v, after JSON %s %s %v", e, v1, err1, &back, v2, err2)
		}
	}
}

// An unknown literal next to a text value concatenates text, next to an
// array it is an array.
func TestConcatResolution(t *testing.T) {
	m := mustBuild(t)
	x := expr.Col(0, types.Text, "x")
	e := m(expr.Call("||", expr.Const(unk("toast.")), x))
	if e.Type != types.Text {
		t.Errorf("'toast.' || text is %s", e.Type)
	}
	a := expr.Col(0, types.Int4Array, "a")
	e = m(expr.Call("||", a, expr.Const(unk("{2,3}"))))
	if v, err := evalRow(t, e, types.Row{arr(types.Int4Array, "{1}")}); err != nil || v.String() != "{1,2,3}" {
		t.Errorf("int[] || '{2,3}' = %s, %v", v, err)
	}
}

func TestNameConcatUnknown(t *testing.T) {
	m := mustBuild(t)
	e := m(expr.Call("||", expr.Col(0, types.Name, "attname"), expr.Const(unk(":\n  "))))
	if e.Type != types.Text {
		t.Errorf("name || unknown is %s", e.Type)
	}
}
