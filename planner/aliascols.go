package planner

import (
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
)

// derivedColumns rewrites each derived table with a column list in a
// continuous query, (q) AS x(a, b) (a WITH query's column list and
// t AS x(a, b) come as such tables), into one whose select list names
// q's columns anew (and, first, each SELECT's LATERAL subqueries as
// joins: lateralAsJoins):
//
//	(q) AS x(a, b) → (SELECT x.c1 AS a, x.c2 AS b, x.c3 FROM (q) AS x) AS x
//
// c1, c2, … the names q gives its visible columns (a bounded plan of q
// finds them). The continuous planners then see a subquery like any
// other. A bounded query renames the columns in place instead
// (buildTable), which also takes a list over columns of one name; here
// those cannot be told apart by name and are 0A000.
func derivedColumns(cat Catalog, q sql.QueryExpr) (sql.QueryExpr, error) {
	switch q := q.(type) {
	case *sql.SetOp:
		l, err := derivedColumns(cat, q.Left)
		if err != nil {
			return nil, err
		}
		r, err := derivedColumns(cat, q.Right)
		if err != nil {
			return nil, err
		}
		if l == q.Left && r == q.Right {
			return q, nil
		}
		out := *q
		out.Left, out.Right = l, r
		return &out, nil
	case *sql.Select:
		return derivedColumnsSelect(cat, q)
	}
	return q, nil
}

func derivedColumnsSelect(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	// each SELECT's LATERAL subqueries first, wherever it is in the
	// query: joins, whose derived tables the rest of this walk enters
	sel, err := lateralAsJoins(cat, sel)
	if err != nil {
		return nil, err
	}
	changed := false
	var firstErr error
	from := make([]sql.TableExpr, len(sel.From))
	for i, t := range sel.From {
		var err error
		if from[i], err = derivedColumnsFrom(cat, t); err != nil {
			return nil, err
		}
		changed = changed || from[i] != t
	}
	// the subqueries of expressions
	sub := func(e sql.Expr) sql.Expr {
		return sql.Rewrite(e, func(e sql.Expr) (sql.Expr, bool) {
			var q *sql.QueryExpr
			var out sql.Expr
			switch e := e.(type) {
			case *sql.Subquery:
				c := *e
				q, out = &c.Query, &c
			case *sql.In:
				if e.Sub == nil {
					return nil, false
				}
				c := *e
				q, out = &c.Sub, &c
			case *sql.Quantified:
				if e.Sub == nil {
					return nil, false
				}
				c := *e
				q, out = &c.Sub, &c
			default:
				return nil, false
			}
			before := *q
			after, err := derivedColumns(cat, before)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if err != nil || after == before {
				return e, true // its other operands hold no query of their own here
			}
			*q = after
			return out, true
		})
	}
	out := *sel
	out.From = from
	out.Where, out.Having = sub(sel.Where), sub(sel.Having)
	out.Items = append([]sql.SelectItem(nil), sel.Items...)
	for i := range out.Items {
		out.Items[i].Expr = sub(out.Items[i].Expr)
		changed = changed || out.Items[i].Expr != sel.Items[i].Expr
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if !changed && out.Where == sel.Where && out.Having == sel.Having {
		return sel, nil
	}
	return &out, nil
}

func derivedColumnsFrom(cat Catalog, t sql.TableExpr) (sql.TableExpr, error) {
	switch t := t.(type) {
	case *sql.Join:
		return mapJoin(t, func(s sql.TableExpr) (sql.TableExpr, error) { return derivedColumnsFrom(cat, s) })
	case *sql.WindowTVF:
		if t.Query == nil {
			return t, nil
		}
		q, err := derivedColumns(cat, t.Query)
		if err != nil || q == t.Query {
			return t, err
		}
		w := *t
		w.Query = q
		return &w, nil
	case *sql.DerivedTable:
		q, err := derivedColumns(cat, t.Query)
		if err != nil {
			return nil, err
		}
		if len(t.Columns) == 0 || t.Lateral { // lateralAsJoins takes a LATERAL one's
			if q == t.Query {
				return t, nil
			}
			d := *t
			d.Query = q
			return &d, nil
		}
		_, sc, err := (&builder{cat: cat}).buildQuery(q)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, c := range sc.cols {
			if !c.hidden {
				names = append(names, c.name)
			}
		}
		items := make([]sql.SelectItem, len(names))
		for i, name := range names {
			items[i] = sql.SelectItem{Expr: &sql.ColumnRef{Table: t.Alias, Name: name}}
		}
		if err := aliasColumns(t, len(names), func(i int, name string) { items[i].Alias = name }); err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, name := range names {
			if seen[name] {
				return nil, pgerror.NotSupported("a column list on a subquery with two columns named %q in a continuous query", name).
					WithHint("Name the subquery's columns apart in its select list.")
			}
			seen[name] = true
		}
		var inner sql.TableExpr = &sql.DerivedTable{Query: q, Alias: t.Alias}
		if tn, ok := starOf(q); ok {
			// t AS x(a, b): one subquery, which a stream's planner inlines
			named := *tn
			named.Alias = t.Alias
			inner = &named
		}
		return &sql.DerivedTable{Alias: t.Alias, Query: &sql.Select{Items: items, From: []sql.TableExpr{inner}}}, nil
	}
	return t, nil
}

// starOf reports the relation q is SELECT * FROM of, and nothing more.
func starOf(q sql.QueryExpr) (*sql.TableName, bool) {
	sel, ok := q.(*sql.Select)
	if !ok || len(sel.Items) != 1 || len(sel.From) != 1 || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil ||
		sel.Distinct || sel.DistinctOn != nil || sel.OrderBy != nil || sel.Limit != nil || sel.Offset != nil {
		return nil, false
	}
	if st, ok := sel.Items[0].Expr.(*sql.Star); !ok || st.Table != "" {
		return nil, false
	}
	tn, ok := sel.From[0].(*sql.TableName)
	return tn, ok
}

// mapJoin is j with f applied to both its sides, j itself when f
// changes neither.
func mapJoin(j *sql.Join, f func(sql.TableExpr) (sql.TableExpr, error)) (sql.TableExpr, error) {
	l, err := f(j.Left)
	if err != nil {
		return nil, err
	}
	r, err := f(j.Right)
	if err != nil {
		return nil, err
	}
	if l == j.Left && r == j.Right {
		return j, nil
	}
	c := *j
	c.Left, c.Right = l, r
	return &c, nil
}
