package expr_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

const tooLong = 2147483647 // the largest int4: lpad('x', 2147483647)

// Functions asked for a value above the limit by a length fail with 54000
// before they allocate it, over columns and over constants (folding).
func TestValueLimitFromLength(t *testing.T) {
	for _, c := range []struct {
		name string
		args []any
		want string // the value, or the SQLSTATE
	}{
		{"lpad", []any{"x", tooLong}, "54000"},
		{"lpad", []any{"x", tooLong, "ab"}, "54000"},
		{"lpad", []any{"x", tooLong, "é"}, "54000"},
		{"rpad", []any{"x", tooLong}, "54000"},
		{"rpad", []any{"x", tooLong, "ab"}, "54000"},
		{"repeat", []any{"x", tooLong}, "54000"},
		{"chr", []any{0}, "54000"},
		{"chr", []any{-1}, "54000"},
		{"chr", []any{0x110000}, "54000"},
		{"chr", []any{0xD800}, "54000"},
		{"repeat", []any{"abc", 1 << 27}, "54000"},
		{"lpad", []any{"x", expr.MaxValueBytes + 1}, "54000"},
		// within the limit, and the cases that do not grow
		{"lpad", []any{"x", tooLong, ""}, "x"},
		{"lpad", []any{strings.Repeat("ab", 4), 3, "y"}, "aba"},
		{"rpad", []any{"héllo", 7, "üv"}, "héllo" + "üv"},
		{"rpad", []any{"hé", 5, "xyz"}, "héxyz"},
		{"lpad", []any{"hé", 6, "xy"}, "xyxyhé"},
		{"repeat", []any{"", tooLong}, ""},
	} {
		r := run(t, callOf(c.name), c.args...)
		got := r.v.String()
		if r.code != "" {
			got = r.code
		}
		if got != c.want {
			t.Errorf("%s%v = %s, want %s", c.name, c.args, got, c.want)
		}
	}
	r := run(t, callOf("lpad"), "x", 1<<20)
	if r.code != "" || len(r.v.S) != 1<<20 {
		t.Errorf("lpad('x', 1048576) = %d bytes, %s", len(r.v.S), r.code)
	}
}

// Folding a constant call that is over the limit neither fails the plan
// nor allocates the value: the call stays in the plan and fails with 54000
// when it runs, having allocated next to nothing.
func TestValueLimitFolding(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e, err := expr.Call("length", mustBuild(t)(expr.Call("lpad", expr.Const(txt("x")), expr.Const(i4(tooLong)))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = evalRow(t, e, nil)
	runtime.ReadMemStats(&after)
	if pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
		t.Errorf("length(lpad('x', 2147483647)) = %v, want 54000", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("building and running it allocated %d bytes", n)
	}
}

// With the limit lowered to 1 kB, every function that builds a value by
// concatenation, repetition or replacement, every array builder and casts
// fail with 54000 past it, and work below it.
func TestValueLimitBuilders(t *testing.T) {
	defer expr.SetMaxValueBytes(1024)()
	s := strings.Repeat
	ints := func(n int) types.Value { return arr(types.Int4Array, "{"+strings.TrimSuffix(s("1,", n), ",")+"}") }
	texts := func(n int, e string) types.Value {
		return arr(types.TextArray, "{"+strings.TrimSuffix(s(e+",", n), ",")+"}")
	}
	for _, c := range []struct {
		name string
		args []any
		ok   bool // the call must succeed; else fail with 54000
	}{
		{"||", []any{s("a", 500), s("b", 500)}, true},
		{"||", []any{s("a", 600), s("b", 600)}, false},
		{"||", []any{s("a", 1020), 12345}, false}, // anynonarray || text
		{"concat", []any{s("a", 400), s("b", 400)}, true},
		{"concat", []any{s("a", 400), s("b", 400), s("c", 400)}, false},
		{"concat", []any{s("a", 1020), 12345}, false},
		{"replace", []any{s("a", 100), "a", "xxxxxxxxxx"}, true},
		{"replace", []any{s("a", 100), "a", s("x", 20)}, false},
		{"replace", []any{s("a", 100), "", s("x", 20)}, true}, // an empty pattern replaces nothing
		{"format", []any{"%s-%s", s("a", 500), s("b", 500)}, true},
		{"format", []any{"%1$s%1$s%1$s", s("a", 400)}, false},
		{"format", []any{"%1$L%1$L", s("'", 400)}, false},
		{"format", []any{s("x", 900) + "%s" + s("y", 200), "z"}, false},
		{"quote_literal", []any{s("'", 500)}, true},
		{"quote_literal", []any{s("'", 600)}, false},
		{"quote_literal", []any{s(`\`, 600)}, false},
		{"quote_ident", []any{s(`"`, 600)}, false},
		{"array_to_string", []any{texts(10, "a"), s(",", 90)}, true},
		{"array_to_string", []any{texts(10, "a"), s(",", 200)}, false},
		{"array_to_string", []any{texts(10, "NULL"), ",", s("n", 200)}, false},
		{"string_to_array", []any{s("a,", 10), ","}, true},
		{"string_to_array", []any{s("a,", 30), ","}, false}, // 31 elements of 48 bytes decoded
		{"string_to_array", []any{s("a", 30), nullOf(types.Text)}, false},
		{"||", []any{ints(10), ints(10)}, true},
		{"||", []any{ints(15), ints(15)}, false},
		{"array_cat", []any{ints(15), ints(15)}, false},
		{"||", []any{ints(21), 1}, false},
		{"||", []any{1, ints(21)}, false},
		{"array_append", []any{ints(19), 1}, true},
		{"array_append", []any{ints(21), 1}, false},
		{"array_prepend", []any{1, ints(21)}, false},
		{"array_append", []any{texts(1, "a"), s("x", 1000)}, false},
		{"array_replace", []any{texts(5, "a"), "a", s("x", 100)}, true},
		{"array_replace", []any{texts(5, "a"), "a", s("x", 200)}, false},
	} {
		r := run(t, callOf(c.name), c.args...)
		switch {
		case c.ok && r.code != "":
			t.Errorf("%s%.40v: %s, want a value", c.name, c.args, r.code)
		case !c.ok && r.code != pgerror.ProgramLimitExceeded.String():
			t.Errorf("%s%.40v = %.40s, want 54000", c.name, c.args, r)
		}
	}
	if r := run(t, callOf("replace"), "abc", "", "x"); r.v.S != "abc" {
		t.Errorf("replace('abc', '', 'x') = %s, want abc", r)
	}

	// ARRAY[…] and ARRAY(subquery)
	elems := func(n int) []*expr.Expr {
		es := make([]*expr.Expr, n)
		for i := range es {
			es[i] = expr.Col(i, types.Int4, "c")
		}
		return es
	}
	row := make(types.Row, 30)
	for i := range row {
		row[i] = i4(int64(i))
	}
	for _, c := range []struct {
		n  int
		ok bool
	}{{20, true}, {30, false}} {
		e := mustBuild(t)(expr.Array(elems(c.n)))
		if _, err := evalRow(t, e, row); (err == nil) != c.ok || err != nil && pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
			t.Errorf("ARRAY[%d elements]: %v", c.n, err)
		}
		env := &expr.Env{Subquery: func(int, types.Row) ([]types.Value, error) { return row[:c.n], nil }}
		ev, err := expr.CompileEnv(expr.Subquery(0, "array", types.Int4Array, nil), env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ev(nil); (err == nil) != c.ok || err != nil && pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
			t.Errorf("ARRAY(subquery of %d rows): %v", c.n, err)
		}
	}

	// casts: text read as an array counts its elements before parsing;
	// the other casts check what they made
	for _, c := range []struct {
		v  types.Value
		to types.Type
		ok bool
	}{
		{txt("{" + strings.TrimSuffix(s("1,", 20), ",") + "}"), types.Int4Array, true},
		{txt("{" + strings.TrimSuffix(s("1,", 30), ",") + "}"), types.Int4Array, false},
		{txt(`{"` + s(",", 100) + `"}`), types.TextArray, true}, // quoted commas are one element
		{types.NewBytea([]byte(s("a", 500))), types.Text, true},
		{types.NewBytea([]byte(s("a", 600))), types.Text, false}, // \x and two digits a byte
	} {
		r := run(t, func(a ...*expr.Expr) (*expr.Expr, error) { return expr.Cast(a[0], c.to) }, c.v)
		if c.ok != (r.code == "") || !c.ok && r.code != pgerror.ProgramLimitExceeded.String() {
			t.Errorf("%s::%s = %s", c.v.K, c.to, r)
		}
	}
	// an unknown literal read as an array (folded while planning)
	_, err := expr.Cast(expr.Const(unk("{"+strings.TrimSuffix(s("1,", 30), ",")+"}")), types.Int4Array)
	if pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
		t.Errorf("'{1,…}'::int[] of 30 elements: %v, want 54000", err)
	}
}

// The character functions that do not grow their input still give
// PostgreSQL's results (they now walk the string instead of decoding it
// to runes, which took four times its size).
func TestCharacterFunctionsWithoutRunes(t *testing.T) {
	for _, c := range []struct {
		name string
		args []any
		want string
	}{
		{"substring", []any{"héllo wörld", 2, 4}, "éllo"},
		{"substring", []any{"héllo", 5}, "o"},
		{"substring", []any{"héllo", -2, 4}, "h"},
		{"substring", []any{"héllo", -2, 2}, ""},
		{"left", []any{"héllo", 2}, "hé"},
		{"left", []any{"héllo", 10}, "héllo"},
		{"left", []any{"héllo", -4}, "h"},
		{"right", []any{"héllo", 4}, "éllo"},
		{"right", []any{"héllo", -1}, "éllo"},
		{"right", []any{"héllo", -10}, ""},
		{"reverse", []any{"aéü"}, "üéa"},
		{"reverse", []any{""}, ""},
		{"split_part", []any{"a,b,c", ",", 3}, "c"},
		{"split_part", []any{"a,b,c", ",", -2}, "b"},
		{"split_part", []any{"a~~b~~", "~~", 3}, ""},
		{"split_part", []any{"a~~b~~", "~~", -1}, ""},
		{"split_part", []any{"a~~b~~", "~~", -3}, "a"},
		{"split_part", []any{"", "", -1}, ""},
	} {
		r := run(t, callOf(c.name), c.args...)
		got := r.v.String()
		if r.code != "" {
			got = r.code
		}
		if got != c.want {
			t.Errorf("%s%v = %s, want %s", c.name, c.args, got, c.want)
		}
	}
}

// The rows of a set-returning function are materialised at once, so they
// count against the same limit: with it lowered to 1 kB, 14 rows of one
// integer (72 bytes each) fit and 15 do not.
func TestValueLimitSetRows(t *testing.T) {
	defer expr.SetMaxValueBytes(1024)()
	c := func(v types.Value) *expr.Expr { return expr.Const(v) }
	ints := func(n int) types.Value {
		return arr(types.Int4Array, "{"+strings.TrimSuffix(strings.Repeat("7,", n), ",")+"}")
	}
	for _, tc := range []struct {
		name string
		args []*expr.Expr
		ok   bool
	}{
		{"generate_series", []*expr.Expr{c(i4(1)), c(i4(14))}, true},
		{"generate_series", []*expr.Expr{c(i4(1)), c(i4(15))}, false},
		{"generate_series", []*expr.Expr{c(i8(100)), c(i8(1)), c(i8(-8))}, true},
		{"generate_series", []*expr.Expr{c(i8(-1 << 62)), c(i8(1 << 62)), c(i8(1 << 40))}, false},
		{"generate_series", []*expr.Expr{c(num("1")), c(num("5"))}, true},
		{"generate_series", []*expr.Expr{c(num("1")), c(num("15"))}, false},
		{"generate_series", []*expr.Expr{c(ts("2026-01-01")), c(ts("2026-01-14")), c(iv("1 day"))}, true},
		{"generate_series", []*expr.Expr{c(ts("2026-01-01")), c(ts("2026-01-15")), c(iv("1 day"))}, false},
		{"unnest", []*expr.Expr{c(ints(14))}, true},
		{"unnest", []*expr.Expr{c(ints(15))}, false},
	} {
		_, err := setRows(t, tc.name, false, tc.args...)
		if tc.ok && err != nil || !tc.ok && pgerror.CodeOf(err) != pgerror.ProgramLimitExceeded {
			t.Errorf("%s%v: %v", tc.name, tc.args, err)
		}
	}
}
