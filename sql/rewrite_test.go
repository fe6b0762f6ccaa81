package sql

import "testing"

// TestRewrite requalifies every column reference of select lists that
// use each kind of expression node, and checks that a rewrite that
// changes nothing returns the expression itself.
func TestRewrite(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a + -b", "t.a + (- t.b)"},
		{"CASE a WHEN 1 THEN b ELSE c END", "CASE t.a WHEN 1 THEN t.b ELSE t.c END"},
		{"a BETWEEN b AND c", "t.a BETWEEN t.b AND t.c"},
		{"a IN (b, 1) AND c IS NULL AND d IS TRUE", "t.a IN (t.b, 1) AND t.c IS NULL AND t.d IS TRUE"},
		{"a LIKE b", "t.a LIKE t.b"},
		{"sum(a ORDER BY b) FILTER (WHERE c > 0)", "sum(t.a ORDER BY t.b) FILTER (WHERE t.c > 0)"},
		{"sum(a) OVER (PARTITION BY b ORDER BY c)", "sum(t.a) OVER (PARTITION BY t.b ORDER BY t.c)"},
		{"CAST(a AS text) || ARRAY[b][1]", "CAST(t.a AS text) || ARRAY[t.b][1]"},
		{"(a, b) = (c, d)", "(t.a, t.b) = (t.c, t.d)"},
		{"a = ANY (ARRAY[b])", "t.a = ANY (ARRAY[t.b])"},
		{"a > (SELECT max(x) FROM s)", "t.a > (SELECT max(x) FROM s)"},
	}
	for _, c := range cases {
		st, err := Parse("SELECT " + c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		e := st[0].Stmt.(*Query).Body.(*Select).Items[0].Expr
		before := FormatExpr(e)
		got := Rewrite(e, func(e Expr) (Expr, bool) {
			if r, ok := e.(*ColumnRef); ok {
				return &ColumnRef{Table: "t", Name: r.Name}, true
			}
			return nil, false
		})
		want, err := Parse("SELECT " + c.want)
		if err != nil {
			t.Fatalf("%s: %v", c.want, err)
		}
		if g, w := FormatExpr(got), FormatExpr(want[0].Stmt.(*Query).Body.(*Select).Items[0].Expr); g != w {
			t.Errorf("%s: got %s, want %s", c.in, g, w)
		}
		if FormatExpr(e) != before {
			t.Errorf("%s: the input changed to %s", c.in, FormatExpr(e))
		}
		if same := Rewrite(e, func(Expr) (Expr, bool) { return nil, false }); same != e {
			t.Errorf("%s: a rewrite that changes nothing made a copy", c.in)
		}
	}
}
