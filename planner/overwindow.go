package planner

import (
	"slices"
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// hasWindowCall says whether sel's select list calls a window function.
func hasWindowCall(sel *sql.Select) bool {
	return slices.ContainsFunc(sel.Items, func(it sql.SelectItem) bool { return hasWindowCallIn(it.Expr) })
}

// planWindowView plans a materialized view whose select list calls window
// functions of one OVER clause over one input (a stream, or a view read
// as its changes): the bounded planner's steps, with its window step run
// by an overWindow operator behind a re-keying by the PARTITION BY values.
// The operator emits signed rows, so each input row is a row of the view,
// keyed by where it came from (its record's partition and offset, or a
// view's key and the row's PARTITION BY values), and its values change as
// rows come and go around it. Any function and frame the bounded window step computes runs
// (lag, lead, first_value, nth_value, the rankings, ntile, aggregates
// over ROWS, RANGE or GROUPS frames).
//
//	SELECT id, amount - lag(amount) OVER (PARTITION BY cust ORDER BY ts) AS delta FROM orders
//	→ s0: orders → filter → project the read columns, cust AS _g0 → repartition by _g0
//	  s1: overWindow lag(amount) over (partition by cust order by ts) → project id, delta, _src_partition, _src_offset
func planWindowView(cat Catalog, ca *sql.CreateAs, sel *sql.Select, in *catalog.Relation) (*Continuous, error) {
	q, err := windowQuery(cat, sel, in, "materialized view")
	if err != nil {
		return nil, err
	}
	q.changes = true
	q.step.Op = plan.OpOverWindow
	read := in.ReadColumns()
	nread := len(read)
	proj, cols := q.project, q.out
	// The view's key: where each row came from, a stream's record or a
	// view's key.
	hidden := recordKey(len(in.Columns))
	for i := range hidden { // the operator's rows name them so
		hidden[i].from = hidden[i].name
	}
	if in.Kind == catalog.MaterializedView {
		hidden = nil
		for _, k := range in.Key {
			i := in.ColumnIndex(k)
			if i < 0 {
				return nil, pgerror.New(pgerror.Internal, "view %s: key column %s is not a column", in.Name, k)
			}
			hidden = append(hidden, hiddenCol{i, "_src_" + k, "_src_" + k, in.Columns[i].Type})
		}
		if len(hidden) == 0 {
			return nil, pgerror.NotSupported("window functions over view %s, which has no key", in.Name)
		}
		// A view's row may move to another partition (its PARTITION BY
		// values changed): another operator instance puts it in, maybe
		// before this one takes it out. With the partition in the key the
		// two are different rows of the view, in whichever order.
		for i, e := range q.computed {
			name := "_src_part" + strconv.Itoa(i+1)
			hidden = append(hidden, hiddenCol{nread + i, name, name, e.Type})
		}
	}
	q.key = append(q.key, appendHidden(&proj, &cols, hidden)...)
	proj.Exprs = append(proj.Exprs, expr.Col(q.step.Width+len(q.step.Over.Funcs), types.Int8, "_sign")) // after the function values
	proj.Names = append(proj.Names, "_sign")
	q.project, q.out = proj, cols
	c, err := planStatefulTopology(ca, q)
	if err != nil {
		return nil, err
	}
	c.Topology.Stages[len(c.Topology.Stages)-1].Changes.Sign = len(cols)
	return c, bridgeInputs(c, ca.Name)
}

// planWindowStream plans a stream whose select list calls window
// functions of one OVER clause over one stream, in event time
// (plan.OpOverTime): the clause's ORDER BY starts with the stream's event
// time, ascending, and its frames end at the current row or before it,
// so that a row's values are final once the watermark passes its time
// (operators.CheckOverTime says which functions and frames). The rows
// are re-keyed by their PARTITION BY values, as in planWindowView; each
// comes out once, with its values.
//
//	SELECT id, sum(amount) OVER (PARTITION BY cust ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) FROM orders
//	→ s0: orders → project the read columns, cust AS _g0 → repartition by _g0
//	  s1: overTime sum(amount) over (…) when the watermark passes #ts → project id, sum
func planWindowStream(cat Catalog, ca *sql.CreateAs, sel *sql.Select, in *catalog.Relation) (*Continuous, error) {
	q, err := windowQuery(cat, sel, in, "stream")
	if err != nil {
		return nil, err
	}
	over := q.step.Over
	if err := operators.CheckOverTime(over, nil); err != nil {
		return nil, err
	}
	// the event time: the first ORDER BY term, a timestamp column; of a
	// stream with a WATERMARK, its column (another timestamp's rows come
	// in no order the watermark tells); of a subquery's hidden stream, a
	// time whose lag upstreamWatermarks derives (or refuses)
	read := in.ReadColumns()
	t := over.OrderBy[over.Order[0].Col]
	if t.Kind != expr.KCol || t.Col >= len(read) || t.Type != types.Timestamp && t.Type != types.TimestampTZ {
		return nil, pgerror.NotSupported("window functions into a stream ordered first by %s, not an event time column", t).
			WithHint("Order by the event time first, ascending: a row's values are final once the watermark passes its time. Or use CREATE MATERIALIZED VIEW.")
	}
	hidden := false
	if o, ok := cat.(*overlay); ok {
		_, hidden = o.views[in.Name]
	}
	if in.Watermark != nil && !hidden && read[t.Col].Name != in.Watermark.Column {
		return nil, pgerror.NotSupported("window functions into a stream ordered by %q, not the event time of %q (its WATERMARK is on %q)", read[t.Col].Name, in.Name, in.Watermark.Column).
			WithHint("Order by %s first; or use CREATE MATERIALIZED VIEW.", in.Watermark.Column)
	}
	q.step.Op, q.step.TimeCol, q.step.TimeType = plan.OpOverTime, t.Col, t.Type
	q.watermark = watermarkFor(in, t.Col)
	c, err := planStatefulTopology(ca, q)
	if err != nil {
		return nil, err
	}
	return c, bridgeInputs(c, ca.Name)
}

// windowQuery plans sel, the window functions of one OVER clause over
// one input, in, for a continuous query (a "materialized view" or a
// "stream", what): its WHERE before the window step, the rows re-keyed
// by the PARTITION BY values, which are computed after in's read columns
// (the two are the operator's rows, of q.step.Width columns; the
// function values follow), and the select list over them. The caller
// sets the step's operator.
func windowQuery(cat Catalog, sel *sql.Select, in *catalog.Relation, what string) (*statefulQuery, error) {
	b := &builder{cat: cat}
	node, sc, err := b.buildSelect(sel)
	if err != nil {
		return nil, err
	}
	chain, ok := node.(*plan.Chain)
	if !ok || len(chain.Subqueries) > 0 {
		return nil, pgerror.NotSupported("window functions with a subquery in a %s", what)
	}
	if _, ok := chain.Input.(*plan.Source); !ok {
		return nil, pgerror.NotSupported("window functions over this FROM clause in a %s", what).
			WithHint("Compute them over one input: put the rest in a subquery, FROM (SELECT …) t.")
	}
	var filters []*expr.Expr
	var window, project *plan.Step
	for i := range chain.Steps {
		st := &chain.Steps[i]
		switch {
		case st.Op == plan.OpFilter && window == nil:
			filters = append(filters, st.Pred)
		case st.Op == plan.OpWindow && window == nil:
			window = st
		case st.Op == plan.OpWindow:
			return nil, pgerror.NotSupported("window functions of several OVER clauses in one %s", what).
				WithHint("Give them the same OVER clause, or compute one in a subquery and the other over its rows.")
		case st.Op == plan.OpProject && window != nil && i == len(chain.Steps)-1:
			project = st
		default:
			return nil, pgerror.NotSupported("step %s with window functions in a %s", st.Op, what)
		}
	}
	if window == nil || project == nil {
		return nil, pgerror.NotSupported("this window query in a %s", what)
	}
	read := in.ReadColumns()
	nread := len(read)
	over := *window.Over
	q := &statefulQuery{in: in, carry: true}
	if len(filters) > 0 {
		if q.filter, err = expr.And(filters...); err != nil {
			return nil, err
		}
	}
	for i, e := range over.PartitionBy {
		q.computed = append(q.computed, e)
		q.partition = append(q.partition, nread+i)
	}
	width := nread + len(q.computed)
	q.step = plan.Step{Over: &over, Width: width}
	by := make([]*expr.Expr, nread+len(over.Funcs))
	for c, col := range read {
		by[c] = expr.Col(c, col.Type, col.Name)
	}
	for j := range over.Funcs {
		t, err := operators.WindowResult(&over.Funcs[j])
		if err != nil {
			return nil, err
		}
		by[nread+j] = expr.Col(width+j, t, over.Funcs[j].Name)
	}
	q.project = plan.Step{Op: plan.OpProject, Names: append([]string(nil), project.Names...)}
	for _, e := range project.Exprs {
		q.project.Exprs = append(q.project.Exprs, e.Substitute(by))
	}
	q.out = columnsOf(sc)
	return q, nil
}

// windowsAsLayers rewrites a view whose select list has window functions
// of several OVER clauses over one FROM item into layers of one clause
// each: the first clause's functions in a subquery of every column
// (SELECT *, f(…) OVER w1 AS _w1 …, its WHERE applied there), which runs
// as a hidden view, and the rest over its rows (an overWindow reads a
// view's rows as their changes). The clauses of ranking functions come
// last; layers lists the subqueries it made, which the nester hides as
// views even where they read like a top-N's inner query.
func windowsAsLayers(sel *sql.Select) (out *sql.Select, layers map[*sql.DerivedTable]bool, err error) {
	type clause struct {
		calls   []*sql.FuncCall
		ranking bool
	}
	var clauses []*clause
	byText := map[string]*clause{}
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(e sql.Expr) bool {
			f, ok := e.(*sql.FuncCall)
			if !ok || f.Over == nil {
				return true
			}
			text := sql.FormatExpr(&sql.FuncCall{Name: "w", Over: f.Over})
			c := byText[text]
			if c == nil {
				c = &clause{}
				byText[text] = c
				clauses = append(clauses, c)
			}
			c.calls = append(c.calls, f)
			c.ranking = c.ranking || rankingFuncs[f.Name]
			return false
		})
	}
	if len(clauses) < 2 || len(sel.From) != 1 {
		return sel, nil, nil
	}
	var alias string
	switch t := sel.From[0].(type) {
	case *sql.TableName:
		alias = t.Alias
		if alias == "" {
			alias = t.Name
		}
	case *sql.DerivedTable:
		alias = t.Alias
	default: // a join: the window is refused as before
		return sel, nil, nil
	}
	for _, it := range sel.Items {
		if _, ok := it.Expr.(*sql.Star); ok {
			return nil, nil, pgerror.NotSupported("* with window functions of several OVER clauses in a materialized view").
				WithHint("Name the columns.")
		}
	}
	if aggregates(sel) || sel.Distinct || len(sel.DistinctOn) > 0 {
		return nil, nil, pgerror.NotSupported("window functions over a grouped or DISTINCT query in a materialized view").
			WithHint("Group in a subquery, and compute the window functions over its rows.")
	}
	// ranking clauses last (stable)
	var order []*clause
	for _, ranking := range []bool{false, true} {
		for _, c := range clauses {
			if c.ranking == ranking {
				order = append(order, c)
			}
		}
	}
	// The metadata columns a layer above reads go along by name: * does
	// not carry them.
	var meta []sql.SelectItem
	if _, ok := sel.From[0].(*sql.TableName); ok {
		for _, m := range catalog.MetaColumns {
			found := false
			for _, it := range sel.Items {
				walkExpr(it.Expr, func(e sql.Expr) bool {
					if r, ok := e.(*sql.ColumnRef); ok && r.Name == m.Name {
						found = true
					}
					return !found
				})
			}
			if found {
				meta = append(meta, sql.SelectItem{Expr: &sql.ColumnRef{Name: m.Name}, Alias: m.Name})
			}
		}
	}
	value := map[*sql.FuncCall]sql.Expr{}
	layers = map[*sql.DerivedTable]bool{}
	from := sel.From[0]
	where := sel.Where
	for n, c := range order[:len(order)-1] {
		items := []sql.SelectItem{{Expr: &sql.Star{}}}
		if n == 0 { // above, * has them: the layer below named them
			items = append(items, meta...)
		}
		inner := &sql.Select{Items: items, From: []sql.TableExpr{from}, Where: where}
		for k, f := range c.calls {
			name := "_w" + strconv.Itoa(n+1) + "_" + strconv.Itoa(k+1)
			inner.Items = append(inner.Items, sql.SelectItem{Expr: substituteCalls(f, value), Alias: name})
			value[f] = &sql.ColumnRef{Table: alias, Name: name}
		}
		dt := &sql.DerivedTable{Query: inner, Alias: alias}
		layers[dt] = true
		from, where = dt, nil
	}
	top := *sel
	top.From, top.Where = []sql.TableExpr{from}, where
	top.Items = make([]sql.SelectItem, len(sel.Items))
	for i, it := range sel.Items {
		top.Items[i] = sql.SelectItem{Expr: substituteCalls(it.Expr, value), Alias: it.Alias}
		if top.Items[i].Alias == "" {
			top.Items[i].Alias = columnName(it.Expr)
		}
	}
	return &top, layers, nil
}

// substituteCalls replaces the function calls of e that value maps.
func substituteCalls(e sql.Expr, value map[*sql.FuncCall]sql.Expr) sql.Expr {
	return sql.Rewrite(e, func(x sql.Expr) (sql.Expr, bool) {
		if f, ok := x.(*sql.FuncCall); ok {
			if v, ok := value[f]; ok {
				return v, true
			}
		}
		return nil, false
	})
}

// windowsOverQuery rewrites a view whose window functions run over a
// grouped query or a join into window functions over a subquery of it,
// which is the order SQL evaluates them in: FROM, WHERE, GROUP BY and
// HAVING below, in the subquery, and the window functions above, over
// its rows (a hidden view, read as its changes by planWindowView).
//
//	SELECT cust, sum(amount) AS s, rank() OVER (ORDER BY sum(amount) DESC) FROM orders GROUP BY cust
//	→ SELECT _q.cust, _q.s, rank() OVER (ORDER BY _q._q1 DESC) AS rank
//	  FROM (SELECT cust AS cust, sum(amount) AS s, sum(amount) AS _q1 FROM orders GROUP BY cust) _q
//
// Each largest part of the select list without a window call becomes a
// column of the subquery (an item that is one whole keeps its name, so
// that GROUP BY can name it, and GROUP BY's ordinals are its positions
// there), and so does each argument, PARTITION BY and ORDER BY term of a
// window call; constants inside window calls stay where they are.
// Whole-partition aggregates over a join keep windowAggsAsJoins' plan.
// ORDER BY … LIMIT is a top-N over a subquery of the rest
// (limitOverSubquery), SELECT DISTINCT is DISTINCT over one
// (distinctOverWindows), and each subquery is planned the same way in its
// turn. A query with DISTINCT ON, or a * in its select list, is left as it
// is (and refused further on).
func windowsOverQuery(sel *sql.Select) (*sql.Select, error) {
	if !hasWindowCall(sel) || len(sel.DistinctOn) > 0 || len(sel.From) == 0 {
		return sel, nil
	}
	if len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil {
		return limitOverSubquery(sel)
	}
	if sel.Distinct {
		return distinctOverWindows(sel), nil
	}
	grouped := aggregates(sel)
	joined := len(sel.From) > 1 || isJoin(sel.From[0])
	if !grouped && !joined || !grouped && wholePartitionAggregates(sel) {
		return sel, nil
	}
	return splitAtGroups(sel, "_q", hasWindowCallIn, false,
		pgerror.New(pgerror.WindowingError, "window functions are not allowed in GROUP BY"))
}

// splitAtGroups rewrites a grouped (or joined) sel into an outer SELECT
// over a subquery, alias, that holds its FROM, WHERE, GROUP BY and, unless
// liftHaving, HAVING. above says what must be evaluated over the
// subquery's rows (a window call, a subquery): each largest part of the
// select list (and with liftHaving, of HAVING, which becomes the outer
// WHERE) without it becomes a column of the subquery, constants aside.
// An item that is one whole keeps its name there, so that GROUP BY can
// name it, and GROUP BY's ordinals become its positions there; an
// ordinal of an item that is not whole there is refused with notWhole.
// Fresh names avoid every output name. A * in the select list leaves sel
// as it is.
func splitAtGroups(sel *sql.Select, alias string, above func(sql.Expr) bool, liftHaving bool, notWhole error) (*sql.Select, error) {
	used := map[string]bool{} // the output names, which fresh names avoid
	for _, it := range sel.Items {
		if _, ok := it.Expr.(*sql.Star); ok {
			return sel, nil
		}
		used[it.Alias] = true
		used[columnName(it.Expr)] = true
	}
	inner := &sql.Select{From: sel.From, Where: sel.Where}
	if !liftHaving {
		inner.Having = sel.Having
	}
	// column returns a reference to the subquery's column of e and its
	// position there (from 1): a column it adds, named name or, when name
	// is "", a fresh name; or the column the subquery has for e already.
	named := map[string]int{}
	column := func(e sql.Expr, name string) (*sql.ColumnRef, int) {
		text := sql.FormatExpr(e)
		if at, ok := named[text]; ok && (name == "" || name == inner.Items[at-1].Alias) {
			return &sql.ColumnRef{Table: alias, Name: inner.Items[at-1].Alias}, at
		}
		for n := len(inner.Items) + 1; name == ""; n++ {
			if c := alias + strconv.Itoa(n); !used[c] {
				name = c
			}
		}
		used[name] = true
		inner.Items = append(inner.Items, sql.SelectItem{Expr: e, Alias: name})
		named[text] = len(inner.Items)
		return &sql.ColumnRef{Table: alias, Name: name}, len(inner.Items)
	}
	// lift makes each largest part of e without what goes above (a
	// literal aside) a column of the subquery: within a window call, its
	// arguments, FILTER, PARTITION BY and ORDER BY terms
	lift := func(e sql.Expr) sql.Expr {
		return sql.Rewrite(e, func(x sql.Expr) (sql.Expr, bool) {
			if _, ok := x.(*sql.Literal); ok {
				return x, true
			}
			if !above(x) {
				ref, _ := column(x, "")
				return ref, true
			}
			return nil, false
		})
	}
	out := &sql.Select{From: []sql.TableExpr{&sql.DerivedTable{Query: inner, Alias: alias}}}
	at := make([]int, len(sel.Items)) // an item's position in the subquery, when it is there whole
	for i, it := range sel.Items {
		name := outputName(it)
		var e sql.Expr
		if above(it.Expr) {
			e = lift(it.Expr)
		} else {
			e, at[i] = column(it.Expr, name)
		}
		out.Items = append(out.Items, sql.SelectItem{Expr: e, Alias: name})
	}
	if liftHaving {
		out.Where = lift(sel.Having)
	}
	// GROUP BY: a name is the subquery's (an item whole keeps its name),
	// an ordinal the position its item has there
	for _, g := range sel.GroupBy {
		if l, ok := g.(*sql.Literal); ok && l.Value.K.IsInteger() {
			n := int(l.Value.I)
			switch {
			case n < 1 || n > len(sel.Items):
				return nil, pgerror.New(pgerror.InvalidColumnReference, "GROUP BY position %d is not in select list", n)
			case at[n-1] == 0:
				return nil, notWhole
			}
			g = &sql.Literal{Value: types.NewInt(types.Int4, int64(at[n-1]))}
		}
		inner.GroupBy = append(inner.GroupBy, g)
	}
	return out, nil
}

// distinctOverWindows rewrites SELECT DISTINCT with window functions
// into DISTINCT over a subquery of the rest, SQL's order (the window
// functions' values are among what DISTINCT compares):
//
//	SELECT DISTINCT name, rank() OVER (ORDER BY name) AS r FROM … → SELECT DISTINCT _d.name, _d.r FROM (SELECT name, rank() OVER (ORDER BY name) AS r FROM …) _d
//
// A * or two items of one name leave it as it is.
func distinctOverWindows(sel *sql.Select) *sql.Select {
	const alias = "_d"
	inner := *sel
	inner.Distinct = false
	inner.Items = make([]sql.SelectItem, len(sel.Items))
	out := &sql.Select{Distinct: true, From: []sql.TableExpr{&sql.DerivedTable{Query: &inner, Alias: alias}}}
	seen := map[string]bool{}
	for i, it := range sel.Items {
		name := outputName(it)
		if _, ok := it.Expr.(*sql.Star); ok || seen[name] {
			return sel
		}
		seen[name] = true
		inner.Items[i] = sql.SelectItem{Expr: it.Expr, Alias: name}
		out.Items = append(out.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: alias, Name: name}, Alias: name})
	}
	return out
}

// wholePartitionAggregates says whether every window call of sel is an
// aggregate over whole partitions (no ORDER BY, no frame).
func wholePartitionAggregates(sel *sql.Select) bool {
	all := true
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(e sql.Expr) bool {
			if f, ok := e.(*sql.FuncCall); ok && f.Over != nil {
				all = all && operators.IsAggregate(f.Name) && len(f.Over.OrderBy) == 0 && f.Over.Frame == nil
				return false
			}
			return all
		})
	}
	return all
}

// hasWindowCallIn says whether e calls a window function.
func hasWindowCallIn(e sql.Expr) bool {
	found := false
	walkExpr(e, func(x sql.Expr) bool {
		if f, ok := x.(*sql.FuncCall); ok && f.Over != nil {
			found = true
		}
		return !found
	})
	return found
}
