package planner

import (
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// jsonAggregates rewrites jsonb_agg and jsonb_object_agg (and their json_
// names) in every SELECT of q, in place, as array_agg of their values'
// jsonb and a function of that array, so that they run wherever array_agg
// does (with DISTINCT, FILTER, ORDER BY and OVER; over changing rows in a
// view):
//
//	jsonb_agg(x ORDER BY y)     → _fvsql_jsonb_array_of(array_agg(to_jsonb(x) ORDER BY y))
//	jsonb_object_agg(k, v)      → _fvsql_jsonb_object_of(array_agg(jsonb_build_array(k::text, v)))
//
// A select item that is one such call keeps the aggregate's name. It is
// idempotent: the calls it writes are other functions.
func jsonAggregates(q sql.QueryExpr) {
	walkQueries(q, func(q sql.QueryExpr) bool {
		s, ok := q.(*sql.Select)
		if !ok {
			return true
		}
		for i := range s.Items {
			if f, ok := s.Items[i].Expr.(*sql.FuncCall); ok && s.Items[i].Alias == "" && jsonAggregate(f) != "" {
				s.Items[i].Alias = f.Name
			}
			s.Items[i].Expr = jsonAggregatesIn(s.Items[i].Expr)
		}
		s.Having = jsonAggregatesIn(s.Having)
		for i := range s.OrderBy {
			s.OrderBy[i].Expr = jsonAggregatesIn(s.OrderBy[i].Expr)
		}
		return true
	})
}

// jsonAggregate is which of the json aggregates f calls: "array",
// "object" or "".
func jsonAggregate(f *sql.FuncCall) string {
	switch f.Name {
	case "jsonb_agg", "json_agg":
		if len(f.Args) == 1 && !f.Star && !f.WithinGroup {
			return "array"
		}
	case "jsonb_object_agg", "json_object_agg":
		if len(f.Args) == 2 && !f.Star && !f.WithinGroup {
			return "object"
		}
	}
	return ""
}

func jsonAggregatesIn(e sql.Expr) sql.Expr {
	return sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
		f, ok := n.(*sql.FuncCall)
		if !ok {
			return nil, false
		}
		kind := jsonAggregate(f)
		if kind == "" {
			return nil, false
		}
		agg := *f
		agg.Name = "array_agg"
		final := "_fvsql_jsonb_array_of"
		if kind == "array" {
			agg.Args = []sql.Expr{&sql.FuncCall{Name: "to_jsonb", Args: []sql.Expr{jsonAggregatesIn(f.Args[0])}}}
		} else {
			final = "_fvsql_jsonb_object_of"
			agg.Args = []sql.Expr{&sql.FuncCall{Name: "jsonb_build_array", Args: []sql.Expr{
				&sql.Cast{X: jsonAggregatesIn(f.Args[0]), Type: types.Text}, jsonAggregatesIn(f.Args[1])}}}
		}
		return &sql.FuncCall{Name: final, Args: []sql.Expr{&agg}}, true
	})
}
