package planner

import (
	"strconv"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Set-returning functions in a select list (SELECT unnest(a), …) run in a
// projectSet step under the projection, as PostgreSQL 10 and later run
// them: the step appends each distinct call's columns to the row, and
// the select list reads them. A call of a function of one column is that
// column; one of several columns (information_schema._pg_expandarray's
// x and n) is a record whose fields (f(…)).x selects, also from an
// enclosing query (pgjdbc's getPrimaryKeys reads (result.keys).x).

// setCols is where a select list's set-returning call put its columns.
type setCols struct {
	start int
	names []string
	types []types.Type
}

// value is the call's value in the select list: its column, or a record
// of its columns.
func (s setCols) value(b *builder) *expr.Expr {
	if len(s.types) == 1 {
		return expr.Col(s.start, s.types[0], s.names[0])
	}
	args := make([]*expr.Expr, len(s.types))
	for i, t := range s.types {
		args[i] = expr.Col(s.start+i, t, s.names[i])
	}
	row := expr.Row(args...)
	b.rememberFields(row, s.names, s.types)
	return row
}

// recordShape names a record expression's fields.
type recordShape struct {
	names []string
	types []types.Type
}

func (b *builder) rememberFields(e *expr.Expr, names []string, ts []types.Type) {
	if b.records == nil {
		b.records = map[*expr.Expr]recordShape{}
	}
	b.records[e] = recordShape{names: names, types: ts}
}

// setCalls finds the set-returning calls of the select list, outside
// aggregates and subqueries, by fingerprint, in order of appearance.
func setCalls(items []sql.SelectItem) (calls []*sql.FuncCall, err error) {
	seen := map[string]bool{}
	for _, it := range items {
		walkExpr(it.Expr, func(e sql.Expr) bool {
			f, ok := e.(*sql.FuncCall)
			if !ok || err != nil {
				return err == nil
			}
			if operators.IsAggregate(f.Name) || f.Over != nil {
				return false
			}
			if !expr.IsSetFunc(f.Name) {
				return true
			}
			for _, a := range f.Args {
				if hasSetCall(a) {
					err = pgerror.NotSupported("a set-returning function in the arguments of %s", f.Name)
					return false
				}
			}
			if fp := fingerprint(f); !seen[fp] {
				seen[fp] = true
				calls = append(calls, f)
			}
			return false
		})
	}
	return calls, err
}

func hasSetCall(e sql.Expr) bool {
	found := false
	walkExpr(e, func(n sql.Expr) bool {
		if f, ok := n.(*sql.FuncCall); ok && expr.IsSetFunc(f.Name) && f.Over == nil {
			found = true
		}
		return !found
	})
	return found
}

// planSetCalls plans the calls over the input scope in, whose rows are
// width wide: the projectSet step and where each call's columns are.
func (b *builder) planSetCalls(in *scope, calls []*sql.FuncCall, width int) (plan.Step, map[string]setCols, error) {
	step := plan.Step{Op: plan.OpProjectSet}
	cols := map[string]setCols{}
	at := width
	for _, f := range calls {
		if f.Distinct || f.Star || f.Filter != nil {
			return step, nil, pgerror.New(pgerror.WrongObjectType, "%s is not an aggregate function", f.Name)
		}
		call, err := b.setCall(&sql.TableFunc{Name: f.Name, Args: f.Args}, in)
		if err != nil {
			return step, nil, err
		}
		step.Sets = append(step.Sets, plan.SetSpec{Fn: call.Fn.Key(), Args: call.Args, Width: len(call.Types)})
		cols[fingerprint(f)] = setCols{start: at, names: call.Names, types: call.Types}
		at += len(call.Types)
	}
	return step, cols, nil
}

// buildFieldSelect plans (x).field: a field of a set-returning call of
// the select list, of a record column, or of a record built here.
func (b *builder) buildFieldSelect(c *exprCtx, e *sql.FieldSelect) (*expr.Expr, error) {
	if f, ok := e.X.(*sql.FuncCall); ok && c.srfs != nil {
		if s, ok := c.srfs[fingerprint(f)]; ok {
			for i, n := range s.names {
				if n == e.Field {
					return expr.Col(s.start+i, s.types[i], n), nil
				}
			}
			return nil, noField(e.Field)
		}
	}
	x, err := b.build(c, e.X)
	if err != nil {
		return nil, err
	}
	var shape recordShape
	var known bool
	if x.Kind == expr.KCol {
		if col := c.scope.cols[x.Col]; col.fields != nil {
			shape, known = recordShape{names: col.fields, types: col.fieldTypes}, true
		}
	} else {
		shape, known = b.records[x]
	}
	if x.Type != types.Record {
		return nil, pgerror.New(pgerror.WrongObjectType, "column notation .%s applied to type %s, which is not a composite type", e.Field, x.Type)
	}
	if !known {
		return nil, pgerror.NotSupported("selecting a field of this record")
	}
	for i, n := range shape.names {
		if n != e.Field {
			continue
		}
		if x.Kind == expr.KRow {
			return x.Args[i], nil
		}
		return expr.Field(x, i, shape.types[i], n), nil
	}
	return nil, noField(e.Field)
}

func noField(name string) error {
	return pgerror.New(pgerror.UndefinedColumn, "could not identify column %q in record data type", name)
}

// numberSetRows readies steps[i], a view's projectSet step, to key the
// view's rows: it numbers each input row's rows (a function gives the
// same rows for the same input, so the ordinal and the input row's key
// tell a row apart), and moves the functions' columns, which the query
// planned from column planned on, to column run on in the steps after it
// (a view's read has columns the bounded plan has not). It returns the
// ordinal's column.
func numberSetRows(steps []plan.Step, i, planned, run int) int {
	width := 0
	for _, set := range steps[i].Sets {
		width += set.Width
	}
	steps[i].Ordinal = true
	if planned == run {
		return run + width
	}
	shift := map[int]int{}
	for c := range width {
		shift[planned+c] = run + c
	}
	for j := i + 1; j < len(steps); j++ {
		st := steps[j]
		if st.Pred != nil {
			st.Pred = st.Pred.Remap(shift)
		}
		st.Exprs = remapAll(st.Exprs, shift)
		steps[j] = st
	}
	return run + width
}

// setsAlias names the subquery setsAsSubquery makes, and prefixes its
// columns.
const setsAlias = "_srf"

// setsAsSubquery rewrites a SELECT whose select list calls set-returning
// functions and that then takes DISTINCT, DISTINCT ON, ORDER BY or LIMIT
// as the same over a subquery that is its rows, since in PostgreSQL these
// come after the functions' rows:
//
//	SELECT DISTINCT ON (k) k, unnest(a) AS x FROM t WHERE c ORDER BY k, x DESC, ts
//	→ SELECT DISTINCT ON (_srf1) _srf1 AS k, _srf2 AS x
//	  FROM (SELECT k AS _srf1, unnest(a) AS _srf2, ts AS _srf_o1 FROM t WHERE c) _srf
//	  ORDER BY _srf1, _srf2 DESC, _srf_o1
//
// A term names an output column by position or name, is a select item's
// expression, or is computed by the subquery. A query that groups or
// aggregates, or calls no such function, is returned as it is.
func setsAsSubquery(b *builder, sel *sql.Select) (*sql.Select, error) {
	if !sel.Distinct && len(sel.DistinctOn) == 0 && len(sel.OrderBy) == 0 && sel.Limit == nil && sel.Offset == nil {
		return sel, nil
	}
	if aggregates(sel) || hasWindowCall(sel) || !anySetCall(sel.Items) {
		return sel, nil
	}
	_, in, err := b.buildFrom(sel.From)
	if err != nil {
		return nil, err
	}
	items, err := expandStars(in, sel.Items)
	if err != nil {
		return nil, err
	}
	inner := &sql.Select{From: sel.From, Where: sel.Where}
	out := &sql.Select{Distinct: sel.Distinct, Limit: sel.Limit, Offset: sel.Offset,
		From: []sql.TableExpr{&sql.DerivedTable{Query: inner, Alias: setsAlias}}}
	for i, it := range items {
		col := setsAlias + strconv.Itoa(i+1)
		inner.Items = append(inner.Items, sql.SelectItem{Expr: it.Expr, Alias: col})
		out.Items = append(out.Items, sql.SelectItem{Expr: &sql.ColumnRef{Name: col}, Alias: outputName(it)})
	}
	// A term is a select item's column, or computed by the subquery.
	column := func(e sql.Expr) sql.Expr {
		fp := fingerprint(e)
		for i, it := range items {
			if fingerprint(it.Expr) == fp {
				return &sql.ColumnRef{Name: setsAlias + strconv.Itoa(i+1)}
			}
		}
		col := setsAlias + "_o" + strconv.Itoa(len(inner.Items)-len(items)+1)
		inner.Items = append(inner.Items, sql.SelectItem{Expr: e, Alias: col})
		return &sql.ColumnRef{Name: col}
	}
	keys := make([]sql.OrderItem, len(sel.DistinctOn))
	for i, k := range sel.DistinctOn {
		keys[i].Expr = k
	}
	if keys, err = orderTerms(items, keys); err != nil { // output columns by position or name
		return nil, err
	}
	for _, k := range keys {
		out.DistinctOn = append(out.DistinctOn, column(k.Expr))
	}
	order, err := orderTerms(items, sel.OrderBy)
	if err != nil {
		return nil, err
	}
	for _, o := range order {
		out.OrderBy = append(out.OrderBy, sql.OrderItem{Expr: column(o.Expr), Desc: o.Desc, NullsFirst: o.NullsFirst})
	}
	return out, nil
}

// anySetCall says whether a select list calls a set-returning function.
func anySetCall(items []sql.SelectItem) bool {
	for _, it := range items {
		if hasSetCall(it.Expr) {
			return true
		}
	}
	return false
}

// setsOverJoin rewrites a view whose select list calls set-returning
// functions over a join as the same over a subquery that is the join's
// rows (fromAsSubquery): a view of the join's rows, whose rows the
// functions' follow as they change.
func setsOverJoin(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	if len(sel.From) != 1 || aggregates(sel) || hasWindowCall(sel) || !anySetCall(sel.Items) {
		return sel, nil
	}
	if _, ok := sel.From[0].(*sql.Join); !ok || lateralFrom(sel.From) {
		return sel, nil
	}
	return fromAsSubquery(cat, sel, setsAlias)
}
