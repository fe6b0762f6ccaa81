package planner

import (
	"slices"
	"strconv"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Continuous is a planned continuous query: the relation it writes, the
// stream its poison rows go to, and the topology the engine runs.
type Continuous struct {
	Rel      *catalog.Relation // output relation (SQL and Plan set by the caller)
	Errors   *catalog.Relation // <name>_errors
	Changes  *catalog.Relation // <view>_changes, for materialized views
	Topology *plan.Topology
	Inputs   []*catalog.Relation
}

// ErrorsSuffix names a pipeline's poison-row stream.
const ErrorsSuffix = "_errors"

// PlanContinuous plans CREATE STREAM|MATERIALIZED VIEW … AS SELECT (and
// CREATE SINK), refusing what it could not run (checkContinuous).
func PlanContinuous(cat Catalog, ca *sql.CreateAs) (*Continuous, error) {
	po, ca, err := pipelineOptions(ca, time.Now())
	if err != nil {
		return nil, err
	}
	c, err := planContinuous(cat, ca)
	if err != nil {
		return nil, err
	}
	fuseStages(c.Topology)
	c.Topology.StartTime = po.start
	if err := applyUpdateBefore(c, po); err != nil {
		return nil, err
	}
	if err := checkStartTime(c); err != nil {
		return nil, err
	}
	if err := checkContinuous(ca, c); err != nil {
		return nil, err
	}
	return c, nil
}

func planContinuous(cat Catalog, ca *sql.CreateAs) (*Continuous, error) {
	if err := checkName(ca.Name); err != nil {
		return nil, err
	}
	if ca.Kind == sql.KindSink {
		return planSink(cat, ca)
	}
	if err := checkHiddenName(cat, ca.Name); err != nil {
		return nil, err
	}
	return planQuery(cat, ca)
}

// planQuery plans a continuous query whose name is checked: a pipeline's,
// or a hidden view's inside one (see nester).
func planQuery(cat Catalog, ca *sql.CreateAs) (*Continuous, error) {
	if err := recursiveIn(ca.Query.Body); err != nil {
		return nil, err
	}
	jsonAggregates(ca.Query.Body)
	if body, err := derivedColumns(cat, ca.Query.Body); err != nil {
		return nil, err
	} else if body != ca.Query.Body {
		q := *ca.Query
		q.Body = body
		renamed := *ca
		renamed.Query = &q
		ca = &renamed
	}
	if ca.Kind == sql.KindStream && ca.Query.Emit == sql.EmitChanges {
		return planChangesStream(cat, ca)
	}
	if ca.Query.NumParams > 0 {
		return nil, pgerror.New(pgerror.UndefinedParameter, "continuous queries cannot have parameters")
	}
	sel, ok := ca.Query.Body.(*sql.Select)
	if ok {
		grouped := sel
		if _, one := singleTable(sel); !one && ca.Kind == sql.KindMaterializedView && groupingSetsIn(sel) {
			// the groupings read one hidden view of the FROM clause (a
			// join runs once, not once per grouping set)
			var err error
			if grouped, err = fromAsSubquery(cat, sel, "_grouping_sets"); err != nil {
				return nil, err
			}
		}
		q, sets, err := groupingSetsAsUnion(&builder{cat: cat}, grouped)
		if err != nil {
			return nil, err
		}
		if sets && ca.Kind != sql.KindMaterializedView {
			return nil, pgerror.NotSupported("GROUPING SETS, ROLLUP or CUBE in a %s", ca.Kind).
				WithDetail("Each grouping set is an aggregation of its own, whose rows change.").
				WithHint("Use CREATE MATERIALIZED VIEW, or EMIT CHANGES for a stream of its changes.")
		}
		if sets {
			body := *ca.Query
			body.Body = q
			grouped := *ca
			grouped.Query = &body
			return planQuery(cat, &grouped)
		}
	}
	if so, union := ca.Query.Body.(*sql.SetOp); union {
		if ca.Kind != sql.KindMaterializedView {
			return planUnionAll(cat, ca, so)
		}
		if c, err := planViewUnion(cat, ca, so); c != nil || err != nil {
			return c, err
		}
		var err error
		if sel, err = unionAsSubquery(cat, so); err != nil {
			return nil, err
		}
		ok = true
	}
	if !ok {
		return nil, pgerror.NotSupported("this continuous query")
	}
	sel, err := setsAsSubquery(&builder{cat: cat}, sel)
	if err != nil {
		return nil, err
	}
	var layers map[*sql.DerivedTable]bool
	if ca.Kind == sql.KindMaterializedView {
		var err error
		sel = temporalAsSubquery(cat, sel)
		sel = windowGroupBy(sel)
		if sel, err = sessionOverView(cat, sel); err != nil {
			return nil, err
		}
		if sel, err = windowsOverViews(cat, sel); err != nil {
			return nil, err
		}
		if sel, err = lateralAsSubquery(cat, sel); err != nil {
			return nil, err
		}
		if sel, err = setsOverJoin(cat, sel); err != nil {
			return nil, err
		}
		if sel, err = windowsOverQuery(sel); err != nil {
			return nil, err
		}
		if sel, err = havingOverGroups(cat, sel); err != nil {
			return nil, err
		}
		if sel, err = windowAggsAsJoins(cat, sel); err != nil {
			return nil, err
		}
		if sel, layers, err = windowsAsLayers(sel); err != nil {
			return nil, err
		}
	}
	if len(sel.DistinctOn) > 0 {
		var err error
		if sel, err = distinctOnAsRank(&builder{cat: cat}, sel); err != nil {
			return nil, err
		}
		if sel.Limit == nil && sel.Offset == nil {
			sel.OrderBy = nil // it chose the row of each key; a view's rows have no order
		}
	}
	sel = commaAsJoins(cat, sel)
	if ca.Kind == sql.KindStream {
		if sel.Distinct && hasWindowCall(sel) {
			sel = distinctOverWindows(sel) // SQL's order: the window functions' values are among what DISTINCT compares
		}
		sel = distinctAsSubquery(whereIntoJoins(sel))
	}
	if ca.Kind == sql.KindMaterializedView {
		sel = scalarsAsJoins(cat, notInAsProbes(cat, quantifiedAsScalars(sel)))
		var err error
		if sel, err = limitOverGroups(sel); err != nil {
			return nil, err
		}
		if sel, err = limitOverJoin(cat, sel); err != nil {
			return nil, err
		}
		ns := &nester{cat: &overlay{Catalog: cat, views: map[string]*catalog.Relation{}}, name: ca.Name, layers: layers, outer: sel}
		nested := *sel
		if nested.From, err = ns.from(sel.From); err != nil {
			return nil, err
		}
		if nested.Where, err = ns.probes(sel.Where); err != nil {
			return nil, err
		}
		if len(ns.subs) > 0 {
			c, err := planSelect(ns.cat, ca, &nested)
			if err != nil {
				return nil, err
			}
			return c, ns.embed(c)
		}
	} else if streamSubquery(sel.From) {
		// a stream's subqueries are hidden streams: what each puts out
		// only comes, so the query reads it as it reads any stream
		ns := &nester{cat: &overlay{Catalog: cat, views: map[string]*catalog.Relation{}}, name: ca.Name, outer: sel, streams: true}
		nested := *sel
		var err error
		if nested.From, err = ns.from(sel.From); err != nil {
			return nil, err
		}
		c, err := planSelect(ns.cat, ca, &nested)
		if err != nil {
			return nil, err
		}
		return c, ns.embed(c)
	}
	return planSelect(cat, ca, sel)
}

// planSelect plans a continuous SELECT whose FROM clause holds no
// subqueries to nest.
func planSelect(cat Catalog, ca *sql.CreateAs, sel *sql.Select) (*Continuous, error) {
	if err := correlatedAboveGroups(cat, sel); err != nil {
		return nil, err
	}
	if ca.Kind == sql.KindMaterializedView {
		var err error
		if sel, _, err = existsAsJoins(cat, sel); err != nil {
			return nil, err
		}
	} else if hasProbe(sel) {
		return nil, pgerror.NotSupported("EXISTS or IN (SELECT …) in a %s (a row's answer changes as the subquery's input grows, and a stream's rows do not change)", ca.Kind).
			WithHint("Use CREATE MATERIALIZED VIEW, which keeps both inputs and puts a row in or takes it out as the answer changes.")
	}
	if sel.Distinct {
		d, err := distinctAsGroups(cat, sel, ca.Kind)
		if err != nil {
			return nil, err
		}
		sel = d
	}
	if ca.Kind == sql.KindMaterializedView && (len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil) {
		t, err := limitAsTopN(cat, sel)
		if err != nil {
			return nil, err
		}
		sel = t
	}
	if len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil {
		return nil, pgerror.New(pgerror.FeatureNotSupported, "ORDER BY and LIMIT make no sense on an unbounded stream").
			WithHint("Use ROW_NUMBER() OVER (…) <= N in a materialized view for top-N.")
	}
	if src, ok := lateralInput(sel.From); ok {
		return planLateral(cat, ca, sel, src)
	}
	if len(sel.From) == 1 {
		if j, ok := sel.From[0].(*sql.Join); ok {
			return planStreamJoin(cat, ca, sel, j)
		}
	}
	if len(sel.From) == 0 {
		return nil, pgerror.NotSupported("a continuous query that reads no stream or view").
			WithDetail("Its rows are constants (SELECT without FROM, VALUES, functions of constants): nothing would ever change them.").
			WithHint("Run it as a bounded SELECT.")
	}
	if len(sel.From) != 1 {
		return nil, pgerror.NotSupported("continuous queries over more than one input (use JOIN … ON)")
	}
	if tvf, ok := sel.From[0].(*sql.WindowTVF); ok && windowRows(sel, tvf) {
		return planStateless(cat, ca, sel, tvf.Source)
	}
	if dt, j, ok := joinTopN(cat, sel); ok && ca.Kind == sql.KindMaterializedView {
		return planJoinTopN(cat, ca, sel, dt, j)
	}
	sq, err := planStateful(cat, sel, ca.Kind, ca.Query.Emit)
	if err != nil {
		return nil, err
	}
	if sq != nil {
		c, err := planStatefulTopology(ca, sq)
		if err != nil {
			return nil, err
		}
		return c, bridgeInputs(c, ca.Name)
	}
	if ca.Query.Emit != sql.EmitDefault {
		return nil, pgerror.New(pgerror.SyntaxError, "EMIT applies to windowed aggregations")
	}
	return planStateless(cat, ca, sel, sel.From[0].(*sql.TableName))
}

// filtersBeforeWindows moves a filter that reads none of a window
// assignment's columns before it: a HOP puts a row in several windows,
// and the filter would test each copy.
func filtersBeforeWindows(steps []plan.Step) {
	for i := 0; i+1 < len(steps); i++ {
		w, f := steps[i], steps[i+1]
		if w.Op != plan.OpWindowAssign || f.Op != plan.OpFilter || w.Width == 0 {
			continue
		}
		reads := false
		f.Pred.Walk(func(e *expr.Expr) { reads = reads || (e.Kind == expr.KCol && e.Col >= w.Width) })
		if !reads {
			steps[i], steps[i+1] = f, w
		}
	}
}

// windowRows says whether sel reads a TUMBLE or HOP window's rows as
// they are (no aggregate, GROUP BY or window function): each row once per
// window, its start and end appended, as in a bounded query; no state.
func windowRows(sel *sql.Select, tvf *sql.WindowTVF) bool {
	return tvf.Kind != "session" && tvf.Query == nil && len(sel.GroupBy) == 0 && sel.Having == nil &&
		!anyAggregate(sel.Items) && !hasWindowCall(sel)
}

// correlatedAboveGroups refuses a grouped query whose select list or
// HAVING reads the groups in a subquery that scalarsAsJoins left as it
// is (correlated otherwise than by GROUP BY columns), as PostgreSQL's
// rules would let it run and fvsql cannot: each group's row would fail.
func correlatedAboveGroups(cat Catalog, sel *sql.Select) error {
	if !aggregates(sel) || !hasSubqueryExpr(&sql.Select{Items: sel.Items, Having: sel.Having}) {
		return nil
	}
	es := []sql.Expr{sel.Having}
	for _, it := range sel.Items {
		es = append(es, it.Expr)
	}
	if correlatedIn(cat, sel.From, es...) {
		return pgerror.NotSupported(errCorrelatedAboveGroups).
			WithHint("Join the subquery grouped by the columns it reads instead, or correlate it by equalities with GROUP BY columns.")
	}
	return nil
}

// correlatedIn says whether a subquery in es reads a column of from's
// relations (false when from cannot be resolved: the planner reports it).
func correlatedIn(cat Catalog, from []sql.TableExpr, es ...sql.Expr) bool {
	sc, err := (&builder{cat: cat}).fromScope(from)
	if err != nil {
		return false
	}
	found := false
	for _, e := range es {
		walkExpr(e, func(n sql.Expr) bool {
			var q sql.QueryExpr
			switch x := n.(type) {
			case *sql.Subquery:
				q = x.Query
			case *sql.In:
				q = x.Sub
			case *sql.Quantified:
				q = x.Sub
			}
			if q != nil && !found {
				child := &builder{cat: cat, outer: sc}
				_, _, err := child.buildQuery(q)
				found = err == nil && child.correlated
			}
			return !found
		})
	}
	return found
}

// havingOverGroups rewrites a grouped view whose HAVING holds subqueries
// of their own (reading no column of the group's rows) into a filter over
// the grouping, SQL's order: the grouping is a subquery (a hidden view,
// _h) and HAVING its reader's WHERE, where the subqueries run as in any
// view's WHERE (a scalar one joined, EXISTS and IN semi or anti joins):
//
//	SELECT k, count(*) FROM t GROUP BY k HAVING count(*) > (SELECT max(x) FROM lim)
//	→ SELECT _h.k, _h.count FROM (SELECT k AS k, count(*) AS count FROM t GROUP BY k) _h
//	  WHERE _h.count > (SELECT max(x) FROM lim)
//
// A correlated one, a select list with subqueries, DISTINCT, ORDER BY
// or LIMIT leave sel as it is (correlatedAboveGroups refuses the first).
func havingOverGroups(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	if sel.Having == nil || !hasSubqueryIn(sel.Having) || len(sel.From) == 0 || sel.Distinct || len(sel.DistinctOn) > 0 ||
		len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil || hasSubqueryExpr(&sql.Select{Items: sel.Items}) ||
		correlatedIn(cat, sel.From, sel.Having) {
		return sel, nil
	}
	return splitAtGroups(sel, "_h", hasSubqueryIn, true, pgerror.New(pgerror.Internal, "planner: a select item with a subquery over groups"))
}

// planStateless plans a continuous query of filters and projections (and
// LATERAL functions) over one input, src.
func planStateless(cat Catalog, ca *sql.CreateAs, sel *sql.Select, src *sql.TableName) (*Continuous, error) {
	input := streamInput
	if ca.Kind == sql.KindMaterializedView {
		input = changelogInput
	}
	in, _, err := input(cat, src)
	if err != nil {
		return nil, err
	}
	what := "continuous queries"
	if ca.Kind == sql.KindStream && hasWindowCall(sel) {
		return planWindowStream(cat, ca, sel, in)
	}
	if ca.Kind == sql.KindMaterializedView {
		what = "a materialized view"
		if hasWindowCall(sel) {
			return planWindowView(cat, ca, sel, in)
		}
	}
	chain, out, err := statelessSelect(cat, sel, what)
	if err != nil {
		return nil, err
	}
	if _, ok := chain.Input.(*plan.Source); !ok {
		// the steps are over one input's rows, not over a join of them
		return nil, pgerror.NotSupported("this FROM clause in %s", what)
	}
	if ca.Kind == sql.KindMaterializedView {
		c, err := planRowView(ca, in, chain, out)
		if err != nil {
			return nil, err
		}
		return c, bridgeInputs(c, ca.Name)
	}
	// The output keeps the input's key when the key columns pass through
	// unchanged, so downstream stateful queries need no repartition.
	var key []string
	if proj := chain.Steps[len(chain.Steps)-1]; proj.Op == plan.OpProject {
		key = passthroughKey(in, proj.Exprs, columnsOf(out))
	}
	rel, err := outputStream(ca, columnsOf(out), in.Partitions, key)
	if err != nil {
		return nil, err
	}
	if proj := chain.Steps[len(chain.Steps)-1]; proj.Op == plan.OpProject {
		rel.Watermark = passthroughWatermark(in, proj.Exprs, rel.Columns)
	}
	errs := ErrorsRelation(ca.Name)
	topo := &plan.Topology{
		Stages: []plan.Stage{{Name: "s0", Inputs: []string{in.Name}, Output: rel.Name, Steps: chain.Steps}},
		Errors: errs.Name,
	}
	c := &Continuous{Rel: rel, Errors: errs, Topology: topo, Inputs: []*catalog.Relation{in}}
	return c, bridgeInputs(c, ca.Name)
}

// distinctAsGroups plans SELECT DISTINCT in a materialized view as what it
// is, a GROUP BY of every select-list term: each distinct row is a group,
// and the view's key is the whole row. Over an aggregation the rows are
// already distinct (a view selects all its group columns), so DISTINCT
// changes nothing there.
//
// Into a stream, over rows that only come, a distinct row is final when
// it is first seen: the GROUP BY of one stream is planned as a grouping
// that emits each group once (planGrouped), and over a window's rows as
// the windowed grouping it is (each window's distinct rows when it
// closes). distinctAsSubquery has put any other FROM clause in a hidden
// stream first.
func distinctAsGroups(cat Catalog, sel *sql.Select, kind sql.ObjectKind) (*sql.Select, error) {
	d := *sel
	d.Distinct = false
	if kind != sql.KindMaterializedView {
		if len(sel.GroupBy) > 0 || sel.Having != nil || anyAggregate(sel.Items) {
			return nil, pgerror.NotSupported("DISTINCT with GROUP BY, HAVING or aggregates into a %s", kind).
				WithHint("Put the aggregation in a subquery: SELECT DISTINCT … FROM (SELECT … GROUP BY …) t.")
		}
		t, ok := singleTable(sel)
		if !ok && (len(sel.From) != 1 || !isWindow(sel.From[0])) {
			return nil, pgerror.NotSupported("DISTINCT over this FROM clause into a %s", kind)
		}
		var sc *scope
		var err error
		switch {
		case ok:
			_, sc, err = streamInput(cat, t)
		case slices.ContainsFunc(sel.Items, func(it sql.SelectItem) bool { _, star := it.Expr.(*sql.Star); return star }):
			// a window's columns, for the stars (a SESSION's are not a
			// bounded FROM clause: its stars are refused there)
			_, sc, err = (&builder{cat: cat}).buildFrom(sel.From)
		}
		if err != nil {
			return nil, err
		}
		return groupByEveryItem(&d, sc)
	}
	if len(sel.GroupBy) > 0 || anyAggregate(sel.Items) {
		return &d, nil
	}
	var sc *scope
	if t, ok := singleTable(sel); ok {
		var err error
		if _, sc, err = changelogInput(cat, t); err != nil {
			return nil, err
		}
	} else if j, ok := sel.From[0].(*sql.Join); ok && len(sel.From) == 1 {
		// over a join of streams: a GROUP BY of the joined rows
		_, jsc, err := (&builder{cat: cat}).buildJoin(j)
		if err != nil {
			return nil, err
		}
		sc = jsc
	} else {
		return nil, pgerror.NotSupported("DISTINCT over a window or a subquery in a continuous query")
	}
	return groupByEveryItem(&d, sc)
}

// groupByEveryItem makes d (a SELECT DISTINCT with its DISTINCT taken
// off) a GROUP BY of each of its select-list terms, its stars expanded
// over sc (nil: it has none).
func groupByEveryItem(d *sql.Select, sc *scope) (*sql.Select, error) {
	if sc != nil {
		var err error
		if d.Items, err = expandStars(sc, d.Items); err != nil {
			return nil, err
		}
	}
	d.GroupBy = nil
	for i := range d.Items {
		d.GroupBy = append(d.GroupBy, &sql.Literal{Value: types.NewInt(types.Int4, int64(i+1))})
	}
	return d, nil
}

// distinctAsSubquery readies a stream's SELECT DISTINCT over a join (or
// any FROM clause but one stream or one window's rows): its rows become a
// hidden stream of the pipeline, and the query the DISTINCT of that
// stream's rows, which distinctAsGroups plans.
//
//	SELECT DISTINCT a.k, b.w FROM a JOIN b ON …
//	→ SELECT DISTINCT * FROM (SELECT a.k, b.w FROM a JOIN b ON …) _distinct
func distinctAsSubquery(sel *sql.Select) *sql.Select {
	if !sel.Distinct || len(sel.DistinctOn) > 0 || len(sel.GroupBy) > 0 || sel.Having != nil || anyAggregate(sel.Items) {
		return sel
	}
	if _, one := singleTable(sel); one || len(sel.From) == 1 && isWindow(sel.From[0]) || len(sel.From) == 0 {
		return sel
	}
	inner := *sel
	inner.Distinct, inner.OrderBy, inner.Limit, inner.Offset = false, nil, nil, nil
	return &sql.Select{
		Distinct: true, Items: []sql.SelectItem{{Expr: &sql.Star{}}},
		From:    []sql.TableExpr{&sql.DerivedTable{Query: &inner, Alias: "_distinct"}},
		OrderBy: sel.OrderBy, Limit: sel.Limit, Offset: sel.Offset,
	}
}

// limitAsTopN plans SELECT … FROM s ORDER BY o LIMIT n [OFFSET m] in a
// materialized view as the top-N it is: SELECT … FROM (SELECT *,
// ROW_NUMBER() OVER (ORDER BY o) AS _rn FROM s) s WHERE _rn <= n (with
// OFFSET, _rn > m AND _rn <= m + n), whose number is the view's hidden
// _position.
func limitAsTopN(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	n, off, err := constantLimits(cat, sel)
	switch {
	case err != nil:
		return nil, err
	case n < 0 && off == 0:
		return nil, pgerror.New(pgerror.FeatureNotSupported, "ORDER BY without LIMIT in a materialized view").
			WithDetail("A view's rows have no order.").WithHint("ORDER BY when you query the view.")
	case n < 0:
		return nil, pgerror.NotSupported("OFFSET without LIMIT in a materialized view")
	case len(sel.OrderBy) == 0:
		return nil, pgerror.New(pgerror.FeatureNotSupported, "LIMIT without ORDER BY in a materialized view").
			WithDetail("Which rows it keeps would depend on the order they arrive in.")
	case aggregates(sel) || sel.Distinct:
		return nil, pgerror.NotSupported("ORDER BY … LIMIT over an aggregation or DISTINCT in a materialized view")
	}
	const rn = "_rn"
	where := rankRange(&sql.ColumnRef{Name: rn}, n, off)
	t, ok := singleTable(sel)
	if !ok {
		if len(sel.From) == 1 {
			if _, join := sel.From[0].(*sql.Join); join {
				return limitOverFrom(cat, sel, rn, where)
			}
		}
		return nil, pgerror.NotSupported("ORDER BY … LIMIT over a window in a materialized view")
	}
	_, sc, err := changelogInput(cat, t)
	if err != nil {
		return nil, err
	}
	items, err := expandStars(sc, sel.Items) // the outer * must not show _rn
	if err != nil {
		return nil, err
	}
	order, err := orderTerms(items, sel.OrderBy)
	if err != nil {
		return nil, err
	}
	alias := t.Alias
	if alias == "" {
		alias = t.Name
	}
	inner := &sql.Select{
		Items: []sql.SelectItem{{Expr: &sql.Star{}}, {Expr: &sql.FuncCall{Name: "row_number", Over: &sql.WindowSpec{OrderBy: order}}, Alias: rn}},
		From:  sel.From, Where: sel.Where,
	}
	return &sql.Select{
		Items: items,
		From:  []sql.TableExpr{&sql.DerivedTable{Query: inner, Alias: alias}},
		Where: where,
	}, nil
}

// constantLimits reads a continuous query's LIMIT and OFFSET as the
// bounded planner does (constant expressions; LIMIT ALL or NULL is no
// limit, n < 0; a negative one is 2201W), but they must be known at
// CREATE: a parameter is refused.
func constantLimits(cat Catalog, sel *sql.Select) (n, off int64, err error) {
	l, err := (&builder{cat: cat}).limitOffset(sel.Limit, sel.Offset)
	if err != nil {
		return 0, 0, err
	}
	if l.limX != nil || l.offX != nil {
		return 0, 0, pgerror.New(pgerror.FeatureNotSupported, "a continuous query's LIMIT and OFFSET must be constants")
	}
	return l.lim, l.off, nil
}

// rankRange is the condition that keeps the ranks OFFSET off LIMIT n
// keeps: off < rank <= off + n (n < 0: no upper end).
func rankRange(rank sql.Expr, n, off int64) sql.Expr {
	var conds []sql.Expr
	if off > 0 {
		conds = append(conds, &sql.Binary{Op: ">", L: rank, R: &sql.Literal{Value: types.NewInt8(off)}})
	}
	if n >= 0 {
		conds = append(conds, &sql.Binary{Op: "<=", L: rank, R: &sql.Literal{Value: types.NewInt8(off + n)}})
	}
	return andAll(conds)
}

// orderTerms reads ORDER BY terms as expressions over the FROM clause:
// an output column's position, or a name alone that names an output
// column (its alias, or the name it gets without one), stands for its
// item, as in PostgreSQL; a name two different items have is ambiguous
// (42702).
func orderTerms(items []sql.SelectItem, by []sql.OrderItem) ([]sql.OrderItem, error) {
	var order []sql.OrderItem
	for _, o := range by {
		term := o.Expr
		if l, ok := term.(*sql.Literal); ok && l.Value.K.IsInteger() {
			if n := int(l.Value.I); n >= 1 && n <= len(items) {
				term = items[n-1].Expr
			}
		} else if c, ok := term.(*sql.ColumnRef); ok && c.Table == "" {
			var found sql.Expr
			for _, it := range items {
				if outputName(it) != c.Name {
					continue
				}
				if found != nil && sql.FormatExpr(found) != sql.FormatExpr(it.Expr) {
					return nil, pgerror.New(pgerror.AmbiguousColumn, "ORDER BY \"%s\" is ambiguous", c.Name)
				}
				found = it.Expr
			}
			if found != nil {
				term = found
			}
		}
		order = append(order, sql.OrderItem{Expr: term, Desc: o.Desc, NullsFirst: o.NullsFirst})
	}
	return order, nil
}

// limitOverJoin rewrites ORDER BY … LIMIT over a join (not over its
// aggregation: limitOverGroups) before the nester hides subqueries, so
// that the ranked subquery limitOverFrom makes of the join is one of them.
func limitOverJoin(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	if sel.Limit == nil || len(sel.OrderBy) == 0 || aggregates(sel) || sel.Distinct || len(sel.From) != 1 {
		return sel, nil
	}
	if _, join := sel.From[0].(*sql.Join); !join {
		return sel, nil
	}
	return limitAsTopN(cat, sel)
}

// limitOverFrom is limitAsTopN over a join: the FROM clause and WHERE become
// a subquery carrying the columns the rest reads (fromAsSubquery), which
// ranks its rows by the ORDER BY terms, and the query keeps the rows
// whose rank where accepts:
//
//	SELECT a.id, b.price FROM a JOIN b ON a.id = b.aid ORDER BY b.price DESC LIMIT 3
//	→ SELECT _top.id, _top.price FROM (SELECT a.id, b.price, ROW_NUMBER() OVER (ORDER BY b.price DESC) AS _rn
//	    FROM a JOIN b ON a.id = b.aid) _top WHERE _rn <= 3
//
// The subquery is a hidden view ranked by a top-N over its changes, as
// ROW_NUMBER over a join written out is.
func limitOverFrom(cat Catalog, sel *sql.Select, rn string, where sql.Expr) (*sql.Select, error) {
	b := &builder{cat: cat}
	_, sc, err := b.buildFrom(sel.From)
	if err != nil {
		return nil, err
	}
	items, err := expandStars(sc, sel.Items)
	if err != nil {
		return nil, err
	}
	s := *sel
	// read in the subquery: it carries what they read
	if s.OrderBy, err = orderTerms(items, sel.OrderBy); err != nil {
		return nil, err
	}
	s.Limit, s.Offset = nil, nil
	out, err := fromAsSubquery(cat, &s, "_top")
	if err != nil {
		return nil, err
	}
	var inner *sql.Select
	if len(out.From) == 1 {
		if dt, ok := out.From[0].(*sql.DerivedTable); ok {
			inner, _ = dt.Query.(*sql.Select)
		}
	}
	if inner == nil || out.Where != nil {
		return nil, pgerror.NotSupported("ORDER BY … LIMIT over this FROM clause in a materialized view")
	}
	inner.Items = append(inner.Items, sql.SelectItem{Expr: &sql.FuncCall{Name: "row_number", Over: &sql.WindowSpec{OrderBy: s.OrderBy}}, Alias: rn})
	out.OrderBy, out.Where = nil, where
	return out, nil
}

func singleTable(sel *sql.Select) (*sql.TableName, bool) {
	if len(sel.From) != 1 {
		return nil, false
	}
	t, ok := sel.From[0].(*sql.TableName)
	return t, ok
}

// statelessSelect plans a continuous query's SELECT with the bounded
// planner and checks that what follows its FROM is stateless steps (what
// reads the FROM is the caller's to check: chain.Input).
func statelessSelect(cat Catalog, sel *sql.Select, what string) (*plan.Chain, *scope, error) {
	b := &builder{cat: cat, lateralFuncs: true}
	node, out, err := b.buildSelect(sel)
	if err != nil {
		return nil, nil, err
	}
	chain, ok := node.(*plan.Chain)
	if ok && len(chain.Subqueries) > 0 {
		if quantifiedSubquery(sel) {
			return nil, nil, pgerror.NotSupported("a comparison with ANY or ALL (SELECT …) in %s, other than one WHERE decides with through AND and OR", what).
				WithDetail("Such a comparison with =, <>, <, <=, > or >= runs as one with the subquery's min, max and count; under NOT, in CASE or in the select list its NULLs would differ.").
				WithHint("Write x <= ALL (…) for NOT (x > ANY (…)), or NOT EXISTS (SELECT … WHERE …) for a test of each row.")
		}
		return nil, nil, pgerror.NotSupported("this scalar subquery in %s", what).
			WithDetail("A continuous query runs a scalar subquery that is an aggregate without GROUP BY over relations of its own, as a join with its one row; not one that reads the outer row (correlated), or that may be several rows.").
			WithHint("Join with the subquery grouped by the correlated columns: FROM s JOIN (SELECT k, count(*) AS n FROM r GROUP BY k) c ON c.k = s.k.")
	}
	if !ok {
		return nil, nil, pgerror.NotSupported("this query in %s", what)
	}
	// a window's rows (TUMBLE or HOP without aggregates) are a chain over
	// the source: one stage runs both
	for inner, ok := chain.Input.(*plan.Chain); ok && len(inner.Subqueries) == 0 && len(chain.Subqueries) == 0; inner, ok = chain.Input.(*plan.Chain) {
		chain = &plan.Chain{Input: inner.Input, Steps: append(append([]plan.Step(nil), inner.Steps...), chain.Steps...)}
	}
	filtersBeforeWindows(chain.Steps)
	for _, st := range chain.Steps {
		if st.Op == plan.OpWindow {
			return nil, nil, pgerror.NotSupported("window functions in %s", what).
				WithHint("Window functions run over one input: put the join in a subquery, FROM (SELECT … JOIN …) j.")
		}
		if !st.Stateless() {
			return nil, nil, pgerror.NotSupported("step %s in %s", st.Op, what)
		}
	}
	return chain, out, nil
}

// columnsOf is a scope's output columns as catalog columns.
func columnsOf(sc *scope) []catalog.Column {
	var cols []catalog.Column
	for _, c := range sc.outColumns() {
		cols = append(cols, catalog.Column{Name: c.Name, Type: c.Type})
	}
	return cols
}

// outputStream is the stream a continuous query writes: its columns, its
// partitions, a key it keeps from its input (or none), then the query's
// WITH options.
func outputStream(ca *sql.CreateAs, cols []catalog.Column, partitions int, key []string) (*catalog.Relation, error) {
	rel := &catalog.Relation{Name: ca.Name, Kind: catalog.Stream, Topic: ca.Name, Format: "json", Partitions: partitions, Columns: cols, Key: key}
	if err := uniqueColumns(rel.Columns); err != nil {
		return nil, err
	}
	if err := applyOutputOptions(rel, ca.Options); err != nil {
		return nil, err
	}
	return rel, nil
}

// bridgeInputs routes inputs on other backends (Redis, files, another
// Kafka cluster) through an ingest bridge into an internal topic.
func bridgeInputs(c *Continuous, name string) error {
	bridged := 0
	for _, in := range c.Inputs {
		if in.Backend != "" {
			bridged++
		}
	}
	for _, in := range c.Inputs {
		if in.Backend == "" {
			continue
		}
		internal := StreamOf(in)
		internal.Name, internal.Topic = name+".ingest", InternalTopic(name, "ingest")
		if bridged > 1 { // a join of two streams on other backends
			internal.Name, internal.Topic = name+".ingest."+in.Name, InternalTopic(name, "ingest-"+in.Name)
		}
		internal.Partitions = max(in.Partitions, 1)
		internal.Key = nil
		c.Topology.Internal = append(c.Topology.Internal, *internal)
		c.Topology.Ingest = append(c.Topology.Ingest, plan.Bridge{External: in.Name, Internal: internal.Name})
		for i := range c.Topology.Stages {
			for j, s := range c.Topology.Stages[i].Inputs {
				if s == in.Name {
					c.Topology.Stages[i].Inputs[j] = internal.Name
				}
			}
		}
	}
	return nil
}

// planSink plans CREATE SINK … AS SELECT … WITH (backend = …): the query
// as a stream whose last stage writes an internal topic, which a sink
// bridge forwards to the sink's backend.
func planSink(cat Catalog, ca *sql.CreateAs) (*Continuous, error) {
	asStream := *ca
	asStream.Kind = sql.KindStream
	opts := append([]sql.Option(nil), ca.Options...)
	asStream.Options = nil
	c, err := planContinuous(cat, &asStream)
	if err != nil {
		return nil, err
	}
	rel := c.Rel
	inParts := rel.Partitions
	rel.Kind = catalog.Sink
	rel.Key = nil
	rel.Topic = ca.Name
	rel.Partitions = 1 // the target's own; WITH (partitions = …) for a Kafka target
	if err := applyOptions(rel, opts); err != nil {
		return nil, err
	}
	if _, err := types.NewCodec(rel.Format, rel.ColumnNames(), rel.ColumnTypes()); err != nil {
		return nil, err
	}
	out := StreamOf(rel)
	out.Name, out.Topic, out.Meta = ca.Name+".out", InternalTopic(ca.Name, "out"), false
	out.Partitions = max(inParts, 1)
	c.Topology.Internal = append(c.Topology.Internal, *out)
	last := &c.Topology.Stages[len(c.Topology.Stages)-1]
	last.Output = out.Name
	c.Topology.Sinks = []plan.Bridge{{External: rel.Name, Internal: out.Name}}
	return c, nil
}

func applyOutputOptions(rel *catalog.Relation, opts []sql.Option) error {
	if err := applyOptions(rel, opts); err != nil {
		return err
	}
	if rel.Backend != "" {
		return pgerror.New(pgerror.FeatureNotSupported, "a continuous stream lives on the server's Kafka").
			WithHint("Use CREATE SINK … AS SELECT … WITH (backend = '%s') to write to another backend.", rel.Backend)
	}
	return nil
}

// planStatefulTopology cuts a stateful query into stages: when the input
// has more than one partition, a first stage re-keys it by the state's key
// into an internal topic (and carries watermarks there as control records), and
// the stateful stage reads that topic.
func planStatefulTopology(ca *sql.CreateAs, q *statefulQuery) (*Continuous, error) {
	in := q.in
	errs := ErrorsRelation(ca.Name)
	out := &Continuous{Errors: errs, Inputs: []*catalog.Relation{in}, Topology: &plan.Topology{Errors: errs.Name}}
	partitions := in.Partitions
	if len(q.partition) == 0 {
		partitions = 1 // one global group: one instance holds it
	}
	// A view read by this query comes as its table's changes, made into
	// signed rows by a changelog step before anything else; the sign goes
	// along to the aggregate after the read columns and computed keys.
	view := in.Kind == catalog.MaterializedView
	var changelog []plan.Step
	if view {
		changelog = []plan.Step{changelogStep(in)}
		sign := len(in.ReadColumns()) + len(q.computed)
		if q.pre != nil { // a top-N: its projection carries the sign after its columns
			pre := *q.pre
			pre.Exprs = append(append([]*expr.Expr(nil), pre.Exprs...), expr.Col(sign, types.Int8, "_sign"))
			pre.Names = append(append([]string(nil), pre.Names...), "_sign")
			q.pre = &pre
			sign = q.step.Width
		}
		q.step.Sign = sign
	}
	stateful := q.statefulSteps()
	// Computed group keys are appended to the rows before anything else:
	// the rows must be re-keyed by their values. The read columns
	// (metadata included) go along, so that the stateful stage's
	// expressions find every column where the query's scope put it. A
	// query that reads the metadata columns behind a repartition gets them
	// carried the same way: read there, they would be the repartition
	// record's (its partition and offset), not the input's.
	var keyed []plan.Step
	repartitioned := in.Partitions > 1 || view || q.step.Seeds() // as the stage cut below decides
	if len(q.computed) > 0 || view || (repartitioned && (q.carry || q.readsMeta(len(in.Columns)))) {
		var read []*expr.Expr
		for i, c := range in.ReadColumns() {
			read = append(read, expr.Col(i, c.Type, c.Name))
		}
		var sign *expr.Expr
		if view {
			sign = signColumn(in)
		}
		keyed = []plan.Step{keyedProjection(read, q.computed, sign)}
	}
	outputName := ca.Name
	if q.changes {
		outputName = ca.Name + ChangesSuffix
	}
	// One stage only when every row of a group is certain to be in one
	// input partition: the input has one. fvsql never trusts partitioning
	// it did not write: a stream declared with a key can be written by any
	// Kafka client (unkeyed, keyed by other bytes, or hashed with
	// librdkafka's CRC32), so a multi-partition input is always re-keyed.
	// A view's changes are always: its changelog step is a stage's one
	// stateful step. An aggregate without GROUP BY always reads an
	// internal topic too: its group over no rows (count 0) is emitted
	// when it reads the seed marker the pipeline's start writes there
	// (engine.Engine.seed), which fvsql does not write to a user's topic.
	if in.Partitions == 1 && !view && !q.step.Seeds() {
		var steps []plan.Step
		if q.filter != nil {
			steps = append(steps, plan.Step{Op: plan.OpFilter, Pred: q.filter})
		}
		steps = append(steps, keyed...)
		out.Topology.Stages = []plan.Stage{{
			Name: "s0", Inputs: []string{in.Name}, Output: outputName,
			Steps: append(steps, stateful...), Watermark: q.watermark,
		}}
	} else {
		var internal plan.Stream
		if len(keyed) > 0 {
			internal = repartitionStream(ca.Name, partitions, q.partition, keyed[0])
		} else {
			internal = plan.Stream{Name: ca.Name + ".repartition", Topic: InternalTopic(ca.Name, "repartition"), Partitions: partitions, Key: q.partition, Meta: true, Format: types.InternalFormat}
			for _, c := range in.Columns {
				internal.Columns = append(internal.Columns, c.Name)
				internal.Types = append(internal.Types, c.Type)
			}
		}
		out.Topology.Internal = []plan.Stream{internal}
		s0 := plan.Stage{Name: "s0", Inputs: []string{in.Name}, Output: internal.Name, Watermark: q.watermark, OutputKey: q.partition}
		s0.Steps = changelog
		if q.filter != nil {
			s0.Steps = append(s0.Steps, plan.Step{Op: plan.OpFilter, Pred: q.filter})
		}
		s0.Steps = append(s0.Steps, keyed...)
		out.Topology.Stages = []plan.Stage{s0, {Name: "s1", Inputs: []string{internal.Name}, Output: outputName, Steps: stateful}}
	}
	last := &out.Topology.Stages[len(out.Topology.Stages)-1]
	if q.changes {
		return out, viewOutput(ca, out, last, q.out, q.key, partitions)
	}
	rel := &catalog.Relation{Name: ca.Name, Kind: catalog.Stream, Topic: ca.Name, Format: "json", Partitions: in.Partitions, Columns: q.out}
	if err := uniqueColumns(rel.Columns); err != nil {
		return nil, err
	}
	if err := applyOutputOptions(rel, ca.Options); err != nil {
		return nil, err
	}
	out.Rel = rel
	return out, nil
}

// statefulSteps are the steps of the stage that holds the stateful step:
// a projection before it (top-N), the step, HAVING over final rows, and
// the select list.
func (q *statefulQuery) statefulSteps() []plan.Step {
	var steps []plan.Step
	if q.pre != nil {
		steps = append(steps, *q.pre)
	}
	steps = append(steps, q.step)
	if q.having != nil {
		steps = append(steps, plan.Step{Op: plan.OpFilter, Pred: q.having})
	}
	return append(steps, q.project)
}

// keyedProjection is the projection before a repartition that carries the
// read columns as values, then the computed group keys, then the sign of
// signed rows (when sign is not nil), so that the stage after it finds
// every column where the query's scope put it.
func keyedProjection(read, computed []*expr.Expr, sign *expr.Expr) plan.Step {
	pre := plan.Step{Op: plan.OpProject}
	for i, x := range read {
		pre.Exprs = append(pre.Exprs, x)
		pre.Names = append(pre.Names, "_c"+strconv.Itoa(i))
	}
	for i, x := range computed {
		pre.Exprs = append(pre.Exprs, x)
		pre.Names = append(pre.Names, "_g"+strconv.Itoa(i))
	}
	if sign != nil {
		pre.Exprs = append(pre.Exprs, sign)
		pre.Names = append(pre.Names, "_sign")
	}
	return pre
}

// repartitionStream is the internal topic a keyed projection's rows are
// re-keyed into, by the columns key.
func repartitionStream(pipeline string, partitions int, key []int, keyed plan.Step) plan.Stream {
	s := plan.Stream{Name: pipeline + ".repartition", Topic: InternalTopic(pipeline, "repartition"), Partitions: partitions, Key: key, Format: types.InternalFormat,
		Columns: keyed.Names}
	for _, x := range keyed.Exprs {
		s.Types = append(s.Types, x.Type)
	}
	return s
}

// changelogStep reads a materialized view's table as signed rows.
func changelogStep(view *catalog.Relation) plan.Step {
	return plan.Step{Op: plan.OpChangelog, Width: len(view.Columns), KeyCol: len(view.Columns)}
}

// signColumn is the sign a changelog step appends to a view's rows
// (after its columns and the read's metadata columns).
func signColumn(view *catalog.Relation) *expr.Expr {
	return expr.Col(len(view.Columns)+plan.MetaWidth, types.Int8, "_sign")
}

// readsMeta says whether the stateful step reads an input column at or
// after n (the metadata columns follow the declared ones).
func (q *statefulQuery) readsMeta(n int) bool {
	exprs := append([]*expr.Expr(nil), q.step.GroupBy...)
	exprs = append(exprs, q.step.PartitionBy...)
	for _, a := range q.step.Aggs {
		exprs = append(exprs, a.Arg, a.Filter)
		exprs = append(exprs, a.OrderBy...)
	}
	if q.pre != nil {
		exprs = append(exprs, q.pre.Exprs...)
	}
	found := false
	for _, e := range exprs {
		if e != nil {
			e.Walk(func(x *expr.Expr) { found = found || (x.Kind == expr.KCol && x.Col >= n) })
		}
	}
	return found
}

// viewOutput makes a materialized view's relations, its changes stream
// and its table, written by the topology's last stage.
func viewOutput(ca *sql.CreateAs, out *Continuous, last *plan.Stage, cols []catalog.Column, key []int, partitions int) error {
	view := &catalog.Relation{Name: ca.Name, Kind: catalog.MaterializedView, Topic: ca.Name, Format: "json",
		Partitions: partitions, Columns: cols}
	for _, k := range key {
		view.Key = append(view.Key, cols[k].Name)
	}
	if err := uniqueColumns(view.Columns); err != nil {
		return err
	}
	if err := applyOutputOptions(view, ca.Options); err != nil {
		return err
	}
	view.Partitions = partitions
	name := ca.Name + ChangesSuffix
	changes := &catalog.Relation{Name: name, Kind: catalog.Stream, Topic: name, Format: "json",
		Partitions: partitions, Options: map[string]string{"pipeline": ca.Name},
		Columns: append([]catalog.Column{{Name: "op", Type: types.Text}}, cols...)}
	last.Changes = &plan.ChangesOutput{Table: view.Topic, Key: key, Before: true}
	out.Rel, out.Changes = view, changes
	return nil
}

// planRowView plans a materialized view of a stream's rows, filtered and
// projected, without aggregation: every input row that passes is a row of
// the view, keyed by where it came from (the hidden columns _src_partition
// and _src_offset: its input record's _partition and _offset, under names
// that leave those free for the select list), so equal rows stay apart as
// they do in the SELECT. One stage, no repartition: the rows are never combined.
//
// in, chain and sc are the view's input stream and its SELECT as
// statelessSelect plans it.
func planRowView(ca *sql.CreateAs, in *catalog.Relation, chain *plan.Chain, sc *scope) (*Continuous, error) {
	steps := chain.Steps
	if len(steps) == 0 || steps[len(steps)-1].Op != plan.OpProject {
		return nil, pgerror.NotSupported("this materialized view")
	}
	if in.Kind != catalog.MaterializedView {
		var err error
		if steps, err = temporalSteps(steps); err != nil {
			return nil, err
		}
	}
	var window *plan.Step // a window's rows: a row per record and window
	set := -1             // the select list's set-returning functions: a row per record and function row
	for i, st := range steps[:len(steps)-1] {
		if st.Op == plan.OpWindowAssign && window == nil && set < 0 && in.Kind != catalog.MaterializedView {
			window = &steps[i]
			continue
		}
		if st.Op == plan.OpProjectSet && set < 0 && window == nil {
			set = i
			continue
		}
		if st.Op != plan.OpFilter && st.Op != plan.OpTemporalFilter {
			return nil, pgerror.NotSupported("step %s in a materialized view", st.Op)
		}
	}
	steps = append([]plan.Step(nil), steps...)
	n := len(in.Columns)
	ord := -1
	if set >= 0 {
		// A view's read carries its metadata and the changelog's sign
		// after the columns the query planned: the functions' columns
		// follow those.
		ord = numberSetRows(steps, set, len(in.ReadColumns()), readWidth(in))
	}
	proj := steps[len(steps)-1]
	proj.Exprs = append([]*expr.Expr(nil), proj.Exprs...)
	proj.Names = append([]string(nil), proj.Names...)
	cols := columnsOf(sc)
	errs := ErrorsRelation(ca.Name)
	if in.Kind == catalog.MaterializedView {
		// A view of another view's rows: keyed by the record key of the
		// row it came from (the hidden _src_key), its changes signed by
		// a changelog step; a row that leaves the input leaves this view.
		key := []int{len(proj.Exprs)}
		proj.Exprs = append(proj.Exprs, expr.Col(n, types.Bytea, "_key"))
		proj.Names = append(proj.Names, "_src_key")
		cols = append(cols, catalog.Column{Name: "_src_key", Type: types.Bytea, Hidden: true})
		if ord >= 0 {
			key = append(key, appendHidden(&proj, &cols, []hiddenCol{{ord, "_ordinal", "_src_ord", types.Int8}})...)
		}
		proj.Exprs = append(proj.Exprs, signColumn(in))
		proj.Names = append(proj.Names, "_sign")
		steps = append(append([]plan.Step{changelogStep(in)}, steps[:len(steps)-1]...), proj)
		out := &Continuous{Errors: errs, Inputs: []*catalog.Relation{in}, Topology: &plan.Topology{Errors: errs.Name,
			Stages: []plan.Stage{{Name: "s0", Inputs: []string{in.Name}, Output: ca.Name + ChangesSuffix, Steps: steps}}}}
		last := &out.Topology.Stages[0]
		if err := viewOutput(ca, out, last, cols, key, in.Partitions); err != nil {
			return nil, err
		}
		last.Changes.Sign = len(cols)
		return out, nil
	}
	rk := recordKey(n)
	if window != nil {
		// the window's start tells a record's windows apart (HOP); it
		// follows the read columns, which end with the metadata ones
		rk = append(rk, hiddenCol{n + plan.MetaWidth, "window_start", "_src_window", window.TimeType})
	}
	if ord >= 0 {
		rk = append(rk, hiddenCol{ord, "_ordinal", "_src_ord", types.Int8})
	}
	key := appendHidden(&proj, &cols, rk)
	steps = append(append([]plan.Step(nil), steps[:len(steps)-1]...), proj)
	out := &Continuous{Errors: errs, Inputs: []*catalog.Relation{in}, Topology: &plan.Topology{Errors: errs.Name,
		Stages: []plan.Stage{{Name: "s0", Inputs: []string{in.Name}, Output: ca.Name + ChangesSuffix, Steps: steps}}}}
	return out, viewOutput(ca, out, &out.Topology.Stages[0], cols, key, in.Partitions)
}

// readWidth is how wide a continuous query's read of in is: its columns
// and the metadata, and for a view the sign its changelog step adds.
func readWidth(in *catalog.Relation) int {
	if in.Kind == catalog.MaterializedView {
		return len(in.Columns) + plan.MetaWidth + 1
	}
	return len(in.Columns) + plan.MetaWidth
}

// hiddenCol is a hidden column a view's projection adds: input column
// col (named from in EXPLAIN), shown as name.
type hiddenCol struct {
	col        int
	from, name string
	typ        types.Type
}

// recordKey is what keys a view's row by the record of a stream of n
// columns it came from: the record's partition and offset (the metadata
// columns after _key).
func recordKey(n int) []hiddenCol {
	return []hiddenCol{{n + 1, "_partition", "_src_partition", types.Int4}, {n + 2, "_offset", "_src_offset", types.Int8}}
}

// appendHidden adds hs to a view's projection and its columns, and
// returns their indices.
func appendHidden(proj *plan.Step, cols *[]catalog.Column, hs []hiddenCol) []int {
	var idx []int
	for _, h := range hs {
		idx = append(idx, len(proj.Exprs))
		proj.Exprs = append(proj.Exprs, expr.Col(h.col, h.typ, h.from))
		proj.Names = append(proj.Names, h.name)
		*cols = append(*cols, catalog.Column{Name: h.name, Type: h.typ, Hidden: true})
	}
	return idx
}

func fromKind(t sql.TableExpr) string {
	switch t.(type) {
	case *sql.Join:
		return "joins"
	case *sql.WindowTVF:
		return "window functions"
	case *sql.DerivedTable:
		return "subqueries"
	}
	return "this FROM clause"
}

func uniqueColumns(cols []catalog.Column) error {
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.Name] {
			return pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", c.Name).
				WithHint("Give the select items distinct names with AS.")
		}
		seen[c.Name] = true
	}
	return nil
}

func passthroughKey(in *catalog.Relation, exprs []*expr.Expr, out []catalog.Column) []string {
	if len(in.Key) == 0 {
		return nil
	}
	var key []string
	for _, k := range in.Key {
		src := in.ColumnIndex(k)
		found := ""
		for i, e := range exprs {
			if e.Kind == expr.KCol && e.Col == src && i < len(out) {
				found = out[i].Name
				break
			}
		}
		if found == "" {
			return nil
		}
		key = append(key, found)
	}
	return key
}

// passthroughWatermark is the WATERMARK of a stream whose rows are a
// filter and projection of in's: in's own, on the output column that
// passes its event-time column through unchanged (the first, if several
// do), so that a window or join in time over the output drops as late
// what it would over in. None when no column passes it through.
func passthroughWatermark(in *catalog.Relation, exprs []*expr.Expr, out []catalog.Column) *catalog.Watermark {
	if in.Watermark == nil {
		return nil
	}
	src := slices.IndexFunc(in.ReadColumns(), func(c catalog.Column) bool { return c.Name == in.Watermark.Column })
	for i, e := range exprs {
		if src >= 0 && e.Kind == expr.KCol && e.Col == src && i < len(out) {
			return &catalog.Watermark{Column: out[i].Name, Delay: in.Watermark.Delay}
		}
	}
	return nil
}

// InternalTopic names a pipeline's internal topic. The "_fvsql-" prefix
// and dashes keep it apart from user topics, including Kafka's rule that
// names differing only in '.' versus '_' collide.
func InternalTopic(pipeline, what string) string { return "_fvsql-" + pipeline + "-" + what }

// ErrorsRelation is the poison-row stream of a pipeline.
func ErrorsRelation(pipeline string) *catalog.Relation {
	rel := &catalog.Relation{
		Name: pipeline + ErrorsSuffix, Kind: catalog.Stream, Topic: pipeline + ErrorsSuffix, Format: "json", Partitions: 1,
		Options: map[string]string{"pipeline": pipeline},
	}
	for i, n := range engine.ErrorsColumns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: n, Type: engine.ErrorsTypes[i]})
	}
	return rel
}

// StreamOf converts a relation to the engine's view of it.
func StreamOf(rel *catalog.Relation) *plan.Stream {
	s := &plan.Stream{Name: rel.Name, Topic: rel.Topic, Partitions: rel.Partitions, Meta: rel.HasMeta(), Format: rel.Format}
	if rel.Kind == catalog.MaterializedView {
		s.Meta, s.Upsert = true, true // read as its table's upserts (a changelog step follows)
	}
	for _, c := range rel.Columns {
		s.Columns = append(s.Columns, c.Name)
		s.Types = append(s.Types, c.Type)
	}
	for _, k := range rel.Key {
		s.Key = append(s.Key, rel.ColumnIndex(k))
	}
	return s
}

// planChangesStream plans CREATE STREAM … AS <query> EMIT CHANGES: the
// query's changes as a stream, as a materialized view's <view>_changes
// carries them (an op column, insert, update_before then update, or
// delete, then the row, each record keyed by the row's key in the view),
// with no view to query. It is a view's pipeline whose table is an internal topic.
func planChangesStream(cat Catalog, ca *sql.CreateAs) (*Continuous, error) {
	q := *ca.Query
	q.Emit = sql.EmitDefault
	view := &sql.CreateAs{Kind: sql.KindMaterializedView, Name: ca.Name, Query: &q}
	c, err := planQuery(cat, view)
	if err != nil {
		return nil, err
	}
	last, err := internalTable(c, InternalTopic(ca.Name, "table"), "EMIT CHANGES for this query")
	if err != nil {
		return nil, err
	}
	c.Rel.Name = ca.Name + ".table"
	c.Topology.Internal = append(c.Topology.Internal, *StreamOf(c.Rel))
	out := c.Changes
	out.Name, out.Topic, out.Options = ca.Name, ca.Name, nil
	if err := applyOutputOptions(out, ca.Options); err != nil {
		return nil, err
	}
	if len(out.Key) > 0 {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "an EMIT CHANGES stream takes no key option").
			WithDetail("Each change is keyed by the key of the row it changes, so that a key's changes stay in order on one partition.")
	}
	last.Output = out.Name
	c.Rel, c.Changes = out, nil
	return c, nil
}

// internalTable points a view plan's table at an internal topic of the
// pipeline (a hidden view's, an EMIT CHANGES stream's) and returns the
// stage that writes it; what names the query in the error of a plan
// that writes no view.
func internalTable(c *Continuous, topic, what string) (*plan.Stage, error) {
	last := &c.Topology.Stages[len(c.Topology.Stages)-1]
	if c.Changes == nil || last.Changes == nil || last.Output != c.Changes.Name {
		return nil, pgerror.NotSupported("%s", what)
	}
	c.Rel.Topic, last.Changes.Table = topic, topic
	return last, nil
}
