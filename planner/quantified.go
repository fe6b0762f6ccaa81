package planner

import (
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// quantifiedAsScalars rewrites the comparisons with ANY and ALL over a
// subquery, x op ANY|ALL (SELECT e FROM …), where a materialized view's
// WHERE decides with them (reached through AND and OR only, where NULL
// and false both drop the row), as comparisons with the subquery's
// aggregates, which the view runs as scalar subqueries (joins with
// grouped hidden views, correlated ones on their correlation):
//
//	x > ANY (S)   x > min(e)                  (also >=; < and <= with max)
//	x <> ANY (S)  x <> min(e) OR x <> max(e)
//	x > ALL (S)   count(*) = 0 OR count(*) = count(e) AND x > max(e)
//	              (also >=; < and <= with min)
//	x = ALL (S)   count(*) = 0 OR count(*) = count(e) AND x = min(e) AND x = max(e)
//
// Each is what the quantified comparison decides in such a place: ANY is
// true when some e passes, and NULLs among the e only make false NULL;
// ALL is true over no rows, and otherwise only when every e is not NULL
// and passes. (= ANY and <> ALL are IN and NOT IN, planned as joins; the
// pattern operators, LIKE and ~, stay refused.) The view's bounded SELECT
// keeps the quantified comparison, its independent answer.
func quantifiedAsScalars(sel *sql.Select) *sql.Select {
	if sel.Where == nil {
		return sel
	}
	where, changed := positiveQuantified(sel.Where)
	if !changed {
		return sel
	}
	d := *sel
	d.Where = where
	return &d
}

// positiveQuantified rewrites the quantified comparisons e reaches
// through AND and OR (see quantifiedAsScalars).
func positiveQuantified(e sql.Expr) (sql.Expr, bool) {
	switch x := e.(type) {
	case *sql.Binary:
		if x.Op != "and" && x.Op != "or" {
			return e, false
		}
		l, lc := positiveQuantified(x.L)
		r, rc := positiveQuantified(x.R)
		if !lc && !rc {
			return e, false
		}
		return &sql.Binary{Op: x.Op, L: l, R: r}, true
	case *sql.Quantified:
		if x.Sub == nil {
			return e, false
		}
		if out := quantifiedAggregates(x); out != nil {
			return out, true
		}
	}
	return e, false
}

// quantifiedAggregates is x's comparison with its subquery's aggregates,
// nil for an operator it has no such form for, or a subquery that is not
// of one column.
func quantifiedAggregates(q *sql.Quantified) sql.Expr {
	agg := subqueryAggregate(q.Sub)
	if agg == nil {
		return nil
	}
	cmp := func(op, fn string) sql.Expr { return &sql.Binary{Op: op, L: q.X, R: agg(fn, false)} }
	or := func(l, r sql.Expr) sql.Expr { return &sql.Binary{Op: "or", L: l, R: r} }
	and := func(l, r sql.Expr) sql.Expr { return &sql.Binary{Op: "and", L: l, R: r} }
	if !q.All {
		switch q.Op {
		case ">", ">=":
			return cmp(q.Op, "min")
		case "<", "<=":
			return cmp(q.Op, "max")
		case "<>", "!=":
			return or(cmp("<>", "min"), cmp("<>", "max"))
		}
		return nil
	}
	var test sql.Expr
	switch q.Op {
	case ">", ">=":
		test = cmp(q.Op, "max")
	case "<", "<=":
		test = cmp(q.Op, "min")
	case "=":
		test = and(cmp("=", "min"), cmp("=", "max"))
	default:
		return nil
	}
	zero := &sql.Literal{Value: types.NewInt(types.Int8, 0)}
	none := &sql.Binary{Op: "=", L: agg("count", true), R: zero}
	noNulls := &sql.Binary{Op: "=", L: agg("count", true), R: agg("count", false)}
	return or(none, and(noNulls, test))
}

// subqueryAggregate returns a maker of scalar subqueries that aggregate
// sub's one column: fn(e), or count(*) with star. A plain SELECT e FROM
// … WHERE … is aggregated in place, so that a correlated one stays
// correlated on its WHERE; another query (grouped, limited, a union) is
// aggregated over as a derived table. nil when sub is not one column.
func subqueryAggregate(sub sql.QueryExpr) func(fn string, star bool) sql.Expr {
	s, plain := sub.(*sql.Select)
	if plain {
		plain = len(s.Items) == 1 && len(s.GroupBy) == 0 && s.Having == nil && !s.Distinct && len(s.DistinctOn) == 0 &&
			s.Limit == nil && s.Offset == nil && len(s.From) > 0 && !hasAggregate(s.Items[0].Expr) && !hasWindowCall(s)
		if _, star := s.Items[0].Expr.(*sql.Star); star {
			return nil
		}
	}
	if plain {
		return func(fn string, star bool) sql.Expr {
			call := &sql.FuncCall{Name: fn, Star: star}
			if !star {
				call.Args = []sql.Expr{s.Items[0].Expr}
			}
			return &sql.Subquery{Query: &sql.Select{Items: []sql.SelectItem{{Expr: call}}, From: s.From, Where: s.Where}}
		}
	}
	if s != nil && len(s.Items) != 1 {
		return nil
	}
	const alias, col = "_fvsql_q", "_fvsql_v"
	return func(fn string, star bool) sql.Expr {
		call := &sql.FuncCall{Name: fn, Star: star}
		if !star {
			call.Args = []sql.Expr{&sql.ColumnRef{Table: alias, Name: col}}
		}
		from := &sql.DerivedTable{Query: sub, Alias: alias, Columns: []string{col}}
		return &sql.Subquery{Query: &sql.Select{Items: []sql.SelectItem{{Expr: call}}, From: []sql.TableExpr{from}}}
	}
}

// quantifiedSubquery reports whether sel's select list or WHERE compares
// with ANY or ALL over a subquery (one quantifiedAsScalars left).
func quantifiedSubquery(sel *sql.Select) bool {
	found := false
	visit := func(e sql.Expr) {
		walkExpr(e, func(x sql.Expr) bool {
			if q, ok := x.(*sql.Quantified); ok && q.Sub != nil {
				found = true
			}
			return !found
		})
	}
	visit(sel.Where)
	for _, it := range sel.Items {
		visit(it.Expr)
	}
	return found
}
