package planner

import (
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// planUnionAll plans CREATE STREAM s AS SELECT … FROM a UNION ALL SELECT …
// FROM b …: one stage per branch, each filtering and projecting its own
// input (cast to the union's column types) straight into the output
// stream. Branches run side by side; the output interleaves them, and a
// reader with a watermark orders them by event time as it would any
// stream's partitions.
//
// A materialized view over a union reads it as a hidden stream of the
// pipeline (see unionAsSubquery and nester.hideUnion).
func planUnionAll(cat Catalog, ca *sql.CreateAs, q *sql.SetOp) (*Continuous, error) {
	if ca.Kind != sql.KindStream {
		return nil, pgerror.NotSupported("UNION ALL into a %s (write the union to a stream, then aggregate that stream)", ca.Kind)
	}
	if ca.Query.Emit != sql.EmitDefault {
		return nil, pgerror.New(pgerror.SyntaxError, "EMIT applies to windowed aggregations")
	}
	var branches []*sql.Select
	var flatten func(e sql.QueryExpr) error
	flatten = func(e sql.QueryExpr) error {
		switch e := e.(type) {
		case *sql.Select:
			branches = append(branches, e)
			return nil
		case *sql.SetOp:
			if e.Op != "union" || !e.All {
				return pgerror.NotSupported("%s in continuous queries (only UNION ALL)", setOpName(e))
			}
			if len(e.OrderBy) > 0 || e.Limit != nil || e.Offset != nil {
				return pgerror.New(pgerror.FeatureNotSupported, "ORDER BY and LIMIT make no sense on an unbounded stream")
			}
			if err := flatten(e.Left); err != nil {
				return err
			}
			return flatten(e.Right)
		}
		return pgerror.NotSupported("this query in a UNION ALL of streams")
	}
	if err := flatten(q); err != nil {
		return nil, err
	}
	type branch struct {
		in    *catalog.Relation
		steps []plan.Step
		cols  []Column
	}
	bs := make([]branch, len(branches))
	for i, sel := range branches {
		if len(sel.From) != 1 {
			return nil, pgerror.NotSupported("joins inside a UNION ALL of streams")
		}
		t, ok := sel.From[0].(*sql.TableName)
		if !ok {
			return nil, pgerror.NotSupported("%s inside a UNION ALL of streams", fromKind(sel.From[0]))
		}
		if aggregates(sel) || sel.Distinct {
			return nil, pgerror.NotSupported("aggregation or DISTINCT inside a UNION ALL of streams").
				WithDetail("An aggregate's rows change; a stream's rows only come in.").
				WithHint("Use CREATE MATERIALIZED VIEW, where a UNION ALL takes aggregates, views and joins.")
		}
		if len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil {
			return nil, pgerror.New(pgerror.FeatureNotSupported, "ORDER BY and LIMIT make no sense on an unbounded stream")
		}
		if r, err := cat.Lookup(t.Schema, t.Name); err == nil && r.Kind == catalog.MaterializedView {
			return nil, pgerror.NotSupported("the materialized view %q as a branch of a UNION ALL into a stream", r.Name).
				WithDetail("A view's rows change; a stream's rows only come in.").
				WithHint("Use CREATE MATERIALIZED VIEW, where a UNION ALL takes views; or EMIT CHANGES for a stream of the union's changes.")
		}
		in, _, err := streamInput(cat, t)
		if err != nil {
			return nil, err
		}
		chain, out, err := statelessSelect(cat, sel, "a UNION ALL of streams")
		if err != nil {
			return nil, err
		}
		if _, ok := chain.Input.(*plan.Source); !ok {
			return nil, pgerror.NotSupported("this query in a UNION ALL of streams")
		}
		bs[i] = branch{in: in, steps: chain.Steps, cols: out.outColumns()}
	}
	cols := make([][]Column, len(bs))
	for i, br := range bs {
		cols[i] = br.cols
	}
	outTypes, err := unionTypes(cols)
	if err != nil {
		return nil, err
	}
	rel := &catalog.Relation{Name: ca.Name, Kind: catalog.Stream, Topic: ca.Name, Format: "json"}
	names := make([]string, len(outTypes))
	for c, t := range outTypes {
		names[c] = bs[0].cols[c].Name
		rel.Columns = append(rel.Columns, catalog.Column{Name: names[c], Type: t})
	}
	if err := uniqueColumns(rel.Columns); err != nil {
		return nil, err
	}
	errs := ErrorsRelation(ca.Name)
	topo := &plan.Topology{Errors: errs.Name}
	c := &Continuous{Rel: rel, Errors: errs, Topology: topo}
	for i, br := range bs {
		casts := make([]*expr.Expr, len(outTypes))
		for col, t := range outTypes {
			x, err := expr.Coerce(expr.Col(col, br.cols[col].Type, br.cols[col].Name), t, false)
			if err != nil {
				return nil, err
			}
			casts[col] = x
		}
		steps := append(append([]plan.Step(nil), br.steps...), plan.Step{Op: plan.OpProject, Exprs: casts, Names: names})
		// SourceBase: as a hidden stream, read by a stage that keeps one
		// watermark per upstream partition, each branch's partitions are
		// sources of their own (the slowest branch holds the watermark)
		topo.Stages = append(topo.Stages, plan.Stage{Name: "u" + strconv.Itoa(i), Inputs: []string{br.in.Name}, Output: rel.Name, Steps: steps,
			SourceBase: int32(i) << 16})
		dup := false
		for _, in := range c.Inputs {
			dup = dup || in.Name == br.in.Name
		}
		if !dup {
			c.Inputs = append(c.Inputs, br.in)
		}
		rel.Partitions = max(rel.Partitions, br.in.Partitions)
	}
	if err := applyOutputOptions(rel, ca.Options); err != nil {
		return nil, err
	}
	return c, bridgeInputs(c, ca.Name)
}

// unionTypes resolves a union's column types from its branches' columns
// as PostgreSQL does, pairwise and left to right; a column of NULLs only
// is text.
func unionTypes(branches [][]Column) ([]types.Type, error) {
	out := make([]types.Type, len(branches[0]))
	for _, b := range branches[1:] {
		if len(b) != len(out) {
			return nil, pgerror.New(pgerror.SyntaxError, "each UNION query must have the same number of columns")
		}
	}
	for c := range out {
		t := branches[0][c].Type
		for _, b := range branches[1:] {
			nt, err := expr.CommonType(t, b[c].Type)
			if err != nil {
				return nil, pgerror.New(pgerror.DatatypeMismatch, "UNION types %s and %s cannot be matched", t, b[c].Type)
			}
			t = nt
		}
		if t == types.Null || t == types.Unknown {
			t = types.Text
		}
		out[c] = t
	}
	return out, nil
}

func setOpName(e *sql.SetOp) string {
	name := map[string]string{"union": "UNION", "intersect": "INTERSECT", "except": "EXCEPT"}[e.Op]
	if e.All {
		name += " ALL"
	}
	return name
}

// unionAsSubquery rewrites a materialized view's set operation as a
// SELECT over it, for the nester to run the union as a hidden stream:
//
//	a UNION ALL b ORDER BY … LIMIT n   →  SELECT * FROM (a UNION ALL b) _union ORDER BY … LIMIT n
//	a UNION b                          →  SELECT DISTINCT * FROM (a UNION ALL b) _union
//	a UNION b ORDER BY … LIMIT n       →  SELECT * FROM (SELECT DISTINCT * FROM (a UNION ALL b) _union) _union ORDER BY … LIMIT n
//
// A UNION without ALL removes every duplicate of its result, so the
// unions below it may keep theirs: each becomes UNION ALL. Any other set
// operation below (a UNION under a UNION ALL, INTERSECT, EXCEPT, one with
// ORDER BY or LIMIT) is a branch, which the nester makes a hidden view
// (unionBranches).
func unionAsSubquery(cat Catalog, so *sql.SetOp) (*sql.Select, error) {
	if so.Op != "union" {
		return setOpAsGroups(cat, so)
	}
	var all func(e sql.QueryExpr, distinctAbove bool) (sql.QueryExpr, error)
	all = func(e sql.QueryExpr, distinctAbove bool) (sql.QueryExpr, error) {
		op, ok := e.(*sql.SetOp)
		if !ok || op.Op != "union" || (!op.All && !distinctAbove) || len(op.OrderBy) > 0 || op.Limit != nil || op.Offset != nil {
			// a branch: INTERSECT, EXCEPT, a UNION under a UNION ALL, or
			// one with ORDER BY or LIMIT is a hidden view of its own
			return e, nil
		}
		l, err := all(op.Left, distinctAbove)
		if err != nil {
			return nil, err
		}
		r, err := all(op.Right, distinctAbove)
		if err != nil {
			return nil, err
		}
		return &sql.SetOp{Op: "union", All: true, Left: l, Right: r}, nil
	}
	top := *so
	top.OrderBy, top.Limit, top.Offset = nil, nil, nil
	body, err := all(&top, !so.All)
	if err != nil {
		return nil, err
	}
	sel := &sql.Select{
		Items:    []sql.SelectItem{{Expr: &sql.Star{}}},
		From:     []sql.TableExpr{&sql.DerivedTable{Query: body, Alias: "_union"}},
		Distinct: !so.All,
	}
	if sel.Distinct && (len(so.OrderBy) > 0 || so.Limit != nil || so.Offset != nil) {
		// the top-N of the distinct rows: a view over a hidden view
		sel = &sql.Select{Items: sel.Items, From: []sql.TableExpr{&sql.DerivedTable{Query: sel, Alias: "_union"}}}
	}
	sel.OrderBy, sel.Limit, sel.Offset = so.OrderBy, so.Limit, so.Offset
	return sel, nil
}

// Marker columns of setOpAsGroups: which side of an INTERSECT or EXCEPT
// a row came from.
const (
	leftMark  = "__fvsql_left"
	rightMark = "__fvsql_right"
)

// setOpAsGroups rewrites a materialized view's INTERSECT or EXCEPT as a
// grouping of the UNION ALL of its sides, each row marked with its side:
//
//	a INTERSECT b  →  SELECT c… FROM (SELECT *, 1 AS l, 0 AS r FROM a UNION ALL SELECT *, 0, 1 FROM b) u
//	                  GROUP BY c… HAVING sum(l) > 0 AND sum(r) > 0
//	a EXCEPT b     →  … HAVING sum(l) > 0 AND sum(r) = 0
//
// GROUP BY puts NULLs together, as set operations compare rows, and the
// groups are the distinct rows, so each row of the result comes once.
// The union runs as a hidden stream (a hidden view when a side is more
// than rows of streams: planUnionView) and the grouping as the view's
// aggregation, which keeps both counts under any order of arrival. A
// UNION inside either side of INTERSECT or EXCEPT may keep its
// duplicates (they change no count's sign), so it becomes UNION ALL; another set operation inside
// a side is a hidden view whose rows are marked. INTERSECT ALL and
// EXCEPT ALL have a row as many times as its counts say (the lesser
// count; the left's less the right's): the grouping carries that
// number, and LATERAL generate_series repeats each of its rows
// (planLateralView):
//
//	a INTERSECT ALL b  →  SELECT g.c… FROM (SELECT c…, least(sum(l), sum(r)) AS n FROM … GROUP BY c…
//	                      HAVING least(…) > 0) g, LATERAL generate_series(1, g.n)
func setOpAsGroups(cat Catalog, so *sql.SetOp) (*sql.Select, error) {
	var mark func(e sql.QueryExpr, left bool) (sql.QueryExpr, error)
	var first *sql.Select
	mark = func(e sql.QueryExpr, left bool) (sql.QueryExpr, error) {
		switch q := e.(type) {
		case *sql.Select:
			if first == nil {
				first = q
			}
			l, r := int64(0), int64(1)
			if left {
				l, r = 1, 0
			}
			m := *q
			m.Items = append(append([]sql.SelectItem(nil), q.Items...),
				sql.SelectItem{Expr: &sql.Literal{Value: types.NewInt(types.Int4, l)}, Alias: leftMark},
				sql.SelectItem{Expr: &sql.Literal{Value: types.NewInt(types.Int4, r)}, Alias: rightMark})
			return &m, nil
		case *sql.SetOp:
			if q.Op != "union" || (so.All && !q.All) || len(q.OrderBy) > 0 || q.Limit != nil || q.Offset != nil {
				// (a UNION's duplicates change no count's sign, but
				// INTERSECT ALL and EXCEPT ALL go by the counts)
				// another set operation inside: its rows, marked (the
				// nester makes it a hidden view)
				return mark(&sql.Select{Items: []sql.SelectItem{{Expr: &sql.Star{}}},
					From: []sql.TableExpr{&sql.DerivedTable{Query: q, Alias: "_side"}}}, left)
			}
			l, err := mark(q.Left, left)
			if err != nil {
				return nil, err
			}
			r, err := mark(q.Right, left)
			if err != nil {
				return nil, err
			}
			return &sql.SetOp{Op: "union", All: true, Left: l, Right: r}, nil
		}
		return nil, pgerror.NotSupported("this side of %s in a materialized view", setOpName(so))
	}
	l, err := mark(so.Left, true)
	if err != nil {
		return nil, err
	}
	r, err := mark(so.Right, false)
	if err != nil {
		return nil, err
	}
	// The result's columns are its first SELECT's.
	_, sc, err := (&builder{cat: cat}).buildSelect(first)
	if err != nil {
		return nil, err
	}
	const alias = "_setop"
	sel := &sql.Select{From: []sql.TableExpr{&sql.DerivedTable{Query: &sql.SetOp{Op: "union", All: true, Left: l, Right: r}, Alias: alias}}}
	seen := map[string]bool{}
	for _, c := range sc.outColumns() {
		if seen[c.Name] || c.Name == leftMark || c.Name == rightMark || c.Name == countCol {
			return nil, pgerror.NotSupported("%s in a materialized view whose columns share the name %q", setOpName(so), c.Name).
				WithHint("Give the first SELECT's columns names of their own (AS …).")
		}
		seen[c.Name] = true
		ref := &sql.ColumnRef{Table: alias, Name: c.Name}
		sel.Items = append(sel.Items, sql.SelectItem{Expr: ref})
		sel.GroupBy = append(sel.GroupBy, ref)
	}
	count := func(m string) sql.Expr {
		return &sql.FuncCall{Name: "sum", Args: []sql.Expr{&sql.ColumnRef{Table: alias, Name: m}}}
	}
	zero := &sql.Literal{Value: types.NewInt(types.Int4, 0)}
	right := &sql.Binary{Op: ">", L: count(rightMark), R: zero}
	if so.Op == "except" {
		right = &sql.Binary{Op: "=", L: count(rightMark), R: zero}
	}
	sel.Having = &sql.Binary{Op: "and", L: &sql.Binary{Op: ">", L: count(leftMark), R: zero}, R: right}
	if so.All {
		// each row as many times as its counts say: the grouping with
		// that number, each of its rows repeated by generate_series
		n := &sql.FuncCall{Name: "least", Args: []sql.Expr{count(leftMark), count(rightMark)}}
		if so.Op == "except" {
			n = &sql.FuncCall{Name: "greatest", Args: []sql.Expr{&sql.Binary{Op: "-", L: count(leftMark), R: count(rightMark)}, zero}}
		}
		const groups = "_setop_groups"
		outer := &sql.Select{From: []sql.TableExpr{
			&sql.DerivedTable{Query: sel, Alias: groups},
			&sql.TableFunc{Name: "generate_series", Args: []sql.Expr{&sql.Literal{Value: types.NewInt(types.Int4, 1)}, &sql.ColumnRef{Table: groups, Name: countCol}}, Alias: "_setop_copy"},
		}}
		for _, it := range sel.Items {
			outer.Items = append(outer.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: groups, Name: it.Expr.(*sql.ColumnRef).Name}})
		}
		sel.Items = append(sel.Items, sql.SelectItem{Expr: n, Alias: countCol})
		sel.Having = &sql.Binary{Op: ">", L: n, R: zero}
		sel = outer
	}
	sel.OrderBy, sel.Limit, sel.Offset = so.OrderBy, so.Limit, so.Offset
	return sel, nil
}

// countCol is the column of setOpAsGroups' grouping that says how many
// times an INTERSECT ALL or EXCEPT ALL has a row.
const countCol = "__fvsql_count"
