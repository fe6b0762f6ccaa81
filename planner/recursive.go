package planner

import (
	"sync/atomic"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// WITH RECURSIVE runs in bounded queries as PostgreSQL runs it: the
// anchor's rows, then the recursive term run over the rows its run before
// made (the work table), until a run makes none (plan.Recursive). The
// columns' types are the anchor's; the term's rows are coerced to them.
// A continuous query's rows never end, so it is refused there.

// workTable is a recursive query's work table while its step is planned.
type workTable struct {
	name string
	id   int64
	cols []scopeCol
}

// workIDs numbers work tables: unique in a process, so in a query.
var workIDs atomic.Int64

func (b *builder) buildRecursive(r *sql.Recursive) (plan.Node, *scope, error) {
	anchor, asc, err := b.buildQuery(r.Anchor)
	if err != nil {
		return nil, nil, err
	}
	cols := asc.visible()
	if len(cols) != len(asc.cols) {
		anchor = dropHidden(anchor, asc)
	}
	if len(r.Columns) > len(cols) {
		return nil, nil, pgerror.New(pgerror.InvalidColumnReference, "WITH query %q has %d columns available but %d columns specified", r.Name, len(cols), len(r.Columns))
	}
	// The anchor's untyped literals are text, as in PostgreSQL.
	var casts []*expr.Expr
	var names []string
	for i := range cols {
		c := &cols[i]
		if i < len(r.Columns) {
			c.name = r.Columns[i]
		}
		x := expr.Col(i, c.typ, c.name)
		if c.untyped || c.typ == types.Unknown || c.typ == types.Null {
			if x, err = expr.Cast(x, types.Text); err != nil {
				return nil, nil, err
			}
			c.typ, c.untyped = types.Text, false
		}
		casts, names = append(casts, x), append(names, c.name)
		c.table, c.schema, c.relOID, c.attnum = "", "", 0, 0
	}
	anchor = appendSteps(anchor, plan.Step{Op: plan.OpProject, Exprs: casts, Names: names})
	id := workIDs.Add(1)
	b.works = append(b.works, workTable{name: r.Name, id: id, cols: cols})
	step, ssc, err := b.buildQuery(r.Step)
	b.works = b.works[:len(b.works)-1]
	if err != nil {
		return nil, nil, err
	}
	scols := ssc.visible()
	if len(scols) != len(cols) {
		return nil, nil, pgerror.New(pgerror.SyntaxError, "each UNION query must have the same number of columns")
	}
	casts = nil
	for i, c := range scols {
		x := expr.Col(i, c.typ, c.name)
		if c.typ != cols[i].typ {
			if c.untyped {
				x, err = expr.Cast(x, cols[i].typ)
			} else {
				x, err = expr.Coerce(x, cols[i].typ, false)
			}
			if err != nil {
				return nil, nil, pgerror.New(pgerror.DatatypeMismatch, "recursive query %q column %d has type %s in non-recursive term but type %s overall", r.Name, i+1, cols[i].typ, c.typ).
					WithHint("Cast the output of the non-recursive term to the correct type.")
			}
		}
		casts = append(casts, x)
	}
	if len(scols) != len(ssc.cols) {
		step = dropHidden(step, ssc)
	}
	step = appendSteps(step, plan.Step{Op: plan.OpProject, Exprs: casts, Names: names})
	return &plan.Recursive{Anchor: anchor, Step: step, All: r.All, ID: id}, &scope{cols: cols}, nil
}

// buildWorkTable plans a recursive query's reference to itself.
func (b *builder) buildWorkTable(t *sql.WorkTable) (plan.Node, *scope, error) {
	for i := len(b.works) - 1; i >= 0; i-- {
		w := b.works[i]
		if w.name != t.Name {
			continue
		}
		qual := t.Alias
		if qual == "" {
			qual = t.Name
		}
		sc := &scope{}
		for _, c := range w.cols {
			c.table = qual
			sc.cols = append(sc.cols, c)
		}
		return &plan.WorkTable{ID: w.id}, sc, nil
	}
	return nil, nil, pgerror.New(pgerror.InvalidRecursion, "recursive reference to query %q must not appear within a subquery", t.Name)
}

// walkQueries calls fn on q and on every query in it (its FROM items',
// its subquery expressions', a set operation's and a recursive query's
// terms), depth first; fn returns false to skip a query's insides.
func walkQueries(q sql.QueryExpr, fn func(sql.QueryExpr) bool) {
	if q == nil || !fn(q) {
		return
	}
	switch q := q.(type) {
	case *sql.SetOp:
		walkQueries(q.Left, fn)
		walkQueries(q.Right, fn)
	case *sql.Recursive:
		walkQueries(q.Anchor, fn)
		walkQueries(q.Step, fn)
	case *sql.Select:
		var table func(t sql.TableExpr)
		table = func(t sql.TableExpr) {
			switch t := t.(type) {
			case *sql.DerivedTable:
				walkQueries(t.Query, fn)
			case *sql.WindowTVF:
				walkQueries(t.Query, fn)
			case *sql.Join:
				table(t.Left)
				table(t.Right)
				exprQueries(t.On, fn)
			}
		}
		for _, t := range q.From {
			table(t)
		}
		for _, it := range q.Items {
			exprQueries(it.Expr, fn)
		}
		exprQueries(q.Where, fn)
		exprQueries(q.Having, fn)
		for _, g := range q.GroupBy {
			exprQueries(g, fn)
		}
		for _, o := range q.OrderBy {
			exprQueries(o.Expr, fn)
		}
	}
}

// exprQueries walks the queries of e's subquery expressions.
func exprQueries(e sql.Expr, fn func(sql.QueryExpr) bool) {
	walkExpr(e, func(n sql.Expr) bool {
		switch x := n.(type) {
		case *sql.Subquery:
			walkQueries(x.Query, fn)
		case *sql.In:
			walkQueries(x.Sub, fn)
		case *sql.Quantified:
			walkQueries(x.Sub, fn)
		}
		return true
	})
}

// recursiveIn refuses a continuous query that holds WITH RECURSIVE.
func recursiveIn(q sql.QueryExpr) error {
	found := false
	walkQueries(q, func(q sql.QueryExpr) bool {
		_, ok := q.(*sql.Recursive)
		found = found || ok
		return !found
	})
	if found {
		return pgerror.NotSupported("WITH RECURSIVE in a continuous query").
			WithDetail("A recursive query runs its term until a run makes no rows; fvsql runs it over the rows present, in a bounded SELECT.").
			WithHint("Run it as a bounded SELECT, or write the levels as joins.")
	}
	return nil
}
