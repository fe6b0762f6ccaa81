package planner

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
)

// Subqueries in a materialized view's FROM clause are planned as what
// they are, views the query reads: each runs as a hidden view inside the
// pipeline, its stages first, writing its changes and table to internal
// topics, and the query reads that table as it reads any view's (a
// changelog step makes signed rows of it). So an aggregate over an
// aggregate, a view over a grouped subquery joined with a stream, or
// ORDER BY … LIMIT over an aggregation, compose from the shapes a view
// over a view already runs.
//
// A subquery with a ranking function (the ROW_NUMBER top-N pattern) is
// left to planTopN; subqueries in its own FROM clause are nested.

// subPrefix names a pipeline's hidden views: <pipeline>.sub<n>.
const subPrefix = ".sub"

var hiddenName = regexp.MustCompile(`^(.+)\.sub[0-9]+$`)

// overlay is a catalog with the hidden views of a query in front.
type overlay struct {
	Catalog
	views map[string]*catalog.Relation
	// joins are the columns of the hidden joins among views (hideJoin)
	joins map[string][]joinColumn
}

// joinColumn is a column of a hidden join: the FROM item it came from
// (its alias, or its relation's name) and its name there.
type joinColumn struct{ table, schema, name string } // schema: the relation's, when table is its name (public.a.k)

// joinColumns are the columns of the hidden join name, if it is one, as
// the overlays of cat (innermost first) know them.
func joinColumns(cat Catalog, name string) []joinColumn {
	for o, ok := cat.(*overlay); ok; o, ok = o.Catalog.(*overlay) {
		if cols, found := o.joins[name]; found {
			return cols
		}
	}
	return nil
}

func (o *overlay) Lookup(schema, name string) (*catalog.Relation, error) {
	if r, ok := o.views[name]; ok && schema == "" {
		return r, nil
	}
	return o.Catalog.Lookup(schema, name)
}

// Function finds user functions in the catalog below.
func (o *overlay) Function(name string) (*catalog.Function, bool) {
	if fc, ok := o.Catalog.(FunctionCatalog); ok {
		return fc.Function(name)
	}
	return nil, false
}

// nester replaces a query's subqueries in FROM by hidden views, planning
// each, and embeds their topologies in the query's.
type nester struct {
	cat  *overlay
	name string // the pipeline's
	subs []*Continuous
	// layers are subqueries windowsAsLayers made: hidden views, never a
	// top-N's inner query
	layers map[*sql.DerivedTable]bool
	// outer is the SELECT whose FROM clause is being nested
	outer *sql.Select
	// shared are the subqueries hidden so far: one met again (the FROM
	// clause the groupings of grouping sets share) reads the same view
	shared map[*sql.DerivedTable]*sql.TableName
	// streams: the query is a stream's, and every subquery is a hidden
	// stream (hideStream)
	streams bool
}

// checkHiddenName refuses a pipeline whose name is a hidden view's of
// another pipeline (their internal topics would be the same), and a
// hidden view whose name is a relation's.
func checkHiddenName(cat Catalog, name string) error {
	// a.sub1.sub2 is a subquery's of a.sub1, itself a's
	for m := hiddenName.FindStringSubmatch(name); m != nil; m = hiddenName.FindStringSubmatch(m[1]) {
		if r, err := cat.Lookup("", m[1]); err == nil && len(r.Plan) > 0 {
			return pgerror.New(pgerror.DuplicateObject, "the name %q is the internal name of a subquery of pipeline %q", name, m[1]).
				WithHint("Choose another name.")
		}
	}
	return nil
}

// from returns the FROM list with its subqueries replaced.
func (ns *nester) from(list []sql.TableExpr) ([]sql.TableExpr, error) {
	out := make([]sql.TableExpr, len(list))
	for i, te := range list {
		t, err := ns.table(te)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (ns *nester) table(te sql.TableExpr) (sql.TableExpr, error) {
	switch t := te.(type) {
	case *sql.Join:
		l, err := ns.joined(t.Left)
		if err != nil {
			return nil, err
		}
		r, err := ns.joined(t.Right)
		if err != nil {
			return nil, err
		}
		if ns.streams {
			if l, err = ns.hideJoin(l); err != nil {
				return nil, err
			}
			if r, err = ns.hideJoin(r); err != nil {
				return nil, err
			}
		}
		j := *t
		j.Left, j.Right = l, r
		return &j, nil
	case *sql.WindowTVF:
		if t.Query == nil {
			return te, nil
		}
		// TUMBLE(q, …) over a WITH query q: q's rows only come (a window
		// closes on them), so q is a hidden stream in a view too
		streams := ns.streams
		ns.streams = true
		src, err := ns.hide(&sql.DerivedTable{Query: t.Query, Alias: t.Source.Name})
		ns.streams = streams
		if err != nil {
			return nil, err
		}
		w := *t
		w.Source, w.Query = &sql.TableName{Name: src.(*sql.TableName).Name}, nil
		return &w, nil
	case *sql.DerivedTable:
		if inner, ok := t.Query.(*sql.Select); ok && ns.streams && topNShape(ns.outer, inner) && len(inner.From) == 1 {
			// a stream's top-N (a window's: planFinalTopN) reads its
			// input as it is, a window's rows as a hidden stream
			outer := ns.outer
			ns.outer = inner
			from, err := ns.joined(inner.From[0])
			ns.outer = outer
			if err != nil {
				return nil, err
			}
			in := *inner
			in.From = []sql.TableExpr{from}
			return &sql.DerivedTable{Query: &in, Alias: t.Alias}, nil
		}
		if inner, ok := t.Query.(*sql.Select); ok && ns.streams && hasWindowCall(inner) && len(inner.From) == 1 {
			if _, ok := inner.From[0].(*sql.WindowTVF); ok {
				return nil, pgerror.NotSupported("window functions over a window's rows in a subquery of a stream, other than a top-N the outer query only bounds by its rank (WHERE rn <= N)").
					WithHint("Filter the top-N's rows in another stream over this one, or use a materialized view, or EMIT CHANGES.")
			}
		}
		if ns.streams { // window functions too: in event time (planWindowStream)
			return ns.hide(t)
		}
		if inner, ok := t.Query.(*sql.Select); ok && !ns.layers[t] && topNShape(ns.outer, inner) {
			inner = commaAsJoins(ns.cat, inner)
			outer := ns.outer
			ns.outer = inner
			from, err := ns.from(inner.From)
			ns.outer = outer
			if err != nil {
				return nil, err
			}
			in := *inner
			in.From = from
			if len(from) == 1 {
				if _, join := from[0].(*sql.Join); join && !columnsOnlyRanking(&in) {
					return ns.rankedJoin(&in, t.Alias)
				} // of columns: the join's rows go to the top-N (planJoinTopN)
			}
			return &sql.DerivedTable{Query: &in, Alias: t.Alias}, nil
		}
		return ns.hide(t)
	}
	return te, nil
}

// joined is table for a side of a join: a window there (TUMBLE or HOP)
// is its rows, each with the window's start and end (a window join joins
// them ON … AND l.window_start = r.window_start), a hidden stream.
func (ns *nester) joined(te sql.TableExpr) (sql.TableExpr, error) {
	tvf, ok := te.(*sql.WindowTVF)
	if !ok || tvf.Kind == "session" {
		return ns.table(te)
	}
	alias := tvf.Alias
	if alias == "" {
		alias = tvf.Source.Name
	}
	in := *tvf
	in.Alias = ""
	streams := ns.streams
	ns.streams = true
	defer func() { ns.streams = streams }()
	return ns.hide(&sql.DerivedTable{Query: &sql.Select{Items: []sql.SelectItem{{Expr: &sql.Star{}}}, From: []sql.TableExpr{&in}}, Alias: alias})
}

// hideJoin makes a join that is a side of another join in a stream's
// FROM clause (a JOIN b ON … JOIN c ON …) a hidden stream of its joined
// rows, so that a stream joins two inputs at a time, each a stream: the
// join of a and b, then that stream with c, as if the query had joined a
// subquery (FROM (SELECT … FROM a JOIN b ON …) ab JOIN c ON …). Its
// columns are every visible column of its FROM items, and keep the
// qualifiers and names they had there (joinColumns): the query above
// says a.k and b.k, or k where only one item has it, as over the join
// itself. Only the columns the query reads are carried (readColumns),
// and no FROM item's metadata columns (a._offset). Anything else comes
// back as it is.
func (ns *nester) hideJoin(te sql.TableExpr) (sql.TableExpr, error) {
	j, ok := te.(*sql.Join)
	if !ok {
		return te, nil
	}
	var cols []joinColumn
	var leaves func(te sql.TableExpr) error
	leaves = func(te sql.TableExpr) error {
		switch t := te.(type) {
		case *sql.Join:
			if err := leaves(t.Left); err != nil {
				return err
			}
			return leaves(t.Right)
		case *sql.TableName:
			if jc := joinColumns(ns.cat, t.Name); t.Schema == "" && jc != nil {
				cols = append(cols, jc...)
				return nil
			}
			rel, err := ns.cat.Lookup(t.Schema, t.Name)
			if err != nil {
				return err
			}
			qual, schema := t.Name, relSchema(rel)
			if t.Alias != "" {
				qual, schema = t.Alias, ""
			}
			for _, c := range rel.ReadColumns() {
				if !c.Hidden {
					cols = append(cols, joinColumn{table: qual, schema: schema, name: c.Name})
				}
			}
			return nil
		}
		return pgerror.NotSupported("a stream join of more than two inputs where one is a table function or a SESSION window").
			WithHint("Join a subquery that joins two of them (FROM (SELECT … FROM a JOIN b ON …) ab JOIN c ON …).")
	}
	if err := leaves(j); err != nil {
		return nil, err
	}
	if read := readColumns(ns.outer); read != nil {
		cols = slices.DeleteFunc(cols, func(c joinColumn) bool { return !read(c) })
	}
	items := make([]sql.SelectItem, len(cols))
	for i, c := range cols {
		items[i] = sql.SelectItem{Expr: &sql.ColumnRef{Table: c.table, Name: c.name}, Alias: c.table + "." + c.name}
	}
	t, err := ns.hide(&sql.DerivedTable{Query: &sql.Select{Items: items, From: []sql.TableExpr{j}}})
	if pe, ok := err.(*pgerror.Error); ok && pe.Detail == subqueryDetail {
		var names []string
		for _, c := range cols {
			if !slices.Contains(names, c.table) {
				names = append(names, c.table)
			}
		}
		return nil, pe.WithDetail("In the join of %s, which runs as a stream of its own that the next join reads.", strings.Join(names, ", "))
	}
	if err != nil {
		return nil, err
	}
	if ns.cat.joins == nil {
		ns.cat.joins = map[string][]joinColumn{}
	}
	ns.cat.joins[t.(*sql.TableName).Name] = cols
	return t, nil
}

// readColumns says which columns of its FROM items sel may read: those
// its expressions and its joins' ON and USING name (a.k, or k of any
// item), and every column of an item its select list expands (a.*).
// nil: any column (a * of every item, a subquery, a table function).
func readColumns(sel *sql.Select) func(joinColumn) bool {
	if sel == nil {
		return nil
	}
	refs, names, stars := map[joinColumn]bool{}, map[string]bool{}, map[string]bool{}
	all := false
	visit := func(e sql.Expr) {
		walkExpr(e, func(x sql.Expr) bool {
			switch x := x.(type) {
			case *sql.ColumnRef:
				if x.Table == "" {
					names[x.Name] = true
				} else {
					_, table, _ := strings.Cut(x.Table, ".") // public.a.k
					if table == "" {
						table = x.Table
					}
					refs[joinColumn{table: table, name: x.Name}] = true
				}
			case *sql.Subquery:
				all = true
			case *sql.In:
				all = all || x.Sub != nil
			case *sql.Quantified:
				all = all || x.Sub != nil
			}
			return true
		})
	}
	for _, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok {
			if st.Table == "" {
				return nil
			}
			_, table, _ := strings.Cut(st.Table, ".")
			if table == "" {
				table = st.Table
			}
			stars[table] = true
			continue
		}
		visit(it.Expr)
	}
	for _, e := range append(append([]sql.Expr{sel.Where, sel.Having}, sel.GroupBy...), sel.DistinctOn...) {
		visit(e)
	}
	for _, o := range sel.OrderBy {
		visit(o.Expr)
	}
	var joins func(te sql.TableExpr)
	joins = func(te sql.TableExpr) {
		switch j := te.(type) {
		case *sql.Join:
			visit(j.On)
			for _, u := range j.Using {
				names[u] = true
			}
			joins(j.Left)
			joins(j.Right)
		case *sql.TableFunc: // its arguments read the items before it
			all = true
		}
	}
	for _, te := range sel.From {
		joins(te)
	}
	if all {
		return nil
	}
	return func(c joinColumn) bool {
		return refs[joinColumn{table: c.table, name: c.name}] || names[c.name] || stars[c.table]
	}
}

// topNShape says whether inner, a subquery of outer's FROM clause, is a
// top-N's: its one window function is a ranking one, and, over one input,
// it carries columns only, outer's WHERE bounds the rank and outer only
// filters and projects. Any other subquery with window functions is a
// hidden view (see planWindowView).
func topNShape(outer, inner *sql.Select) bool {
	var rank *sql.SelectItem
	windows := 0
	for i, it := range inner.Items {
		walkExpr(it.Expr, func(e sql.Expr) bool {
			if f, ok := e.(*sql.FuncCall); ok && f.Over != nil {
				windows++
				if f == it.Expr && rankingFuncs[f.Name] {
					rank = &inner.Items[i]
				}
				return false
			}
			return true
		})
	}
	if windows != 1 || rank == nil || outer == nil {
		return false
	}
	// beside its ranking, a top-N over one input carries columns only; a
	// ranked join (rankedJoin) computes expressions too
	if len(inner.From) == 1 && !isJoin(inner.From[0]) {
		for _, it := range inner.Items {
			switch it.Expr.(type) {
			case *sql.ColumnRef, *sql.Star:
			default:
				if it.Expr != rank.Expr {
					return false
				}
			}
		}
	}
	if aggregates(outer) || outer.Distinct || len(outer.From) != 1 ||
		len(outer.OrderBy) > 0 || outer.Limit != nil || outer.Offset != nil || hasWindowCall(outer) {
		return false
	}
	name := rank.Alias
	if name == "" {
		name = rank.Expr.(*sql.FuncCall).Name
	}
	_, hi, err := rowNumberBounds(outer.Where, name)
	return err == nil && hi > 0
}

// hide plans a subquery as a hidden view and returns the table that
// reads it. A UNION ALL, and the rows of a stream and LATERAL functions
// of them, are a hidden stream instead: their rows only come in, so what
// reads them keeps the fast paths of a stream's readers.
func (ns *nester) hide(dt *sql.DerivedTable) (sql.TableExpr, error) {
	if t, ok := ns.shared[dt]; ok {
		c := *t
		return &c, nil
	}
	t, err := ns.hideNew(dt)
	if err != nil {
		return nil, err
	}
	if ns.shared == nil {
		ns.shared = map[*sql.DerivedTable]*sql.TableName{}
	}
	ns.shared[dt] = t
	return t, nil
}

// hideNew plans a subquery not met before as a hidden view (or stream).
func (ns *nester) hideNew(dt *sql.DerivedTable) (*sql.TableName, error) {
	so, union := plainUnionAll(dt.Query)
	var branches []*sql.Select // a union of views' rows: its branches, after hiding
	if union && !ns.streams {
		if qs := flattenUnionAll(so); !streamRows(ns.cat, qs) {
			var err error
			if branches, err = ns.unionBranches(qs); err != nil {
				return nil, err
			}
		}
	}
	n := len(ns.subs) + 1
	name := ns.name + subPrefix + strconv.Itoa(n)
	if len(name) > MaxNameLength {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "a subquery in FROM needs an internal name, %q, of at most %d characters", name, MaxNameLength).
			WithHint("Use a shorter view name.")
	}
	if _, err := ns.cat.Catalog.Lookup("", name); err == nil {
		return nil, pgerror.New(pgerror.DuplicateTable, "relation %q exists: it would be the internal name of this view's subquery", name)
	}
	var sub *Continuous
	var err error
	sel, _ := dt.Query.(*sql.Select)
	if ns.streams {
		if sub, err = hideStream(ns.cat, name, dt.Query); err != nil {
			return nil, err
		}
	} else if branches != nil {
		if sub, err = planUnionView(ns.cat, &sql.CreateAs{Kind: sql.KindMaterializedView, Name: name}, branches); err != nil {
			return nil, err
		}
		if err := hiddenTable(sub, name); err != nil {
			return nil, err
		}
	} else if union {
		sub, err = planUnionAll(ns.cat, &sql.CreateAs{Kind: sql.KindStream, Name: name, Query: &sql.Query{Body: so}}, so)
		if err != nil {
			return nil, err
		}
		sub.Rel.Topic = InternalTopic(name, "stream")
	} else if sel != nil && lateralRows(sel) && lateralOverStream(ns.cat, sel) {
		sub, err = planQuery(ns.cat, &sql.CreateAs{Kind: sql.KindStream, Name: name, Query: &sql.Query{Body: sel}})
		if err != nil {
			return nil, err
		}
		sub.Rel.Topic = InternalTopic(name, "stream")
	} else {
		sub, err = planQuery(ns.cat, &sql.CreateAs{Kind: sql.KindMaterializedView, Name: name, Query: &sql.Query{Body: dt.Query}})
		if err != nil {
			return nil, err
		}
		if err := hiddenTable(sub, name); err != nil {
			return nil, err
		}
	}
	ns.cat.views[name] = sub.Rel
	ns.subs = append(ns.subs, sub)
	alias := dt.Alias
	if alias == "" {
		alias = "subquery" + strconv.Itoa(n)
	}
	return &sql.TableName{Name: name, Alias: alias}, nil
}

// subqueryDetail is the DETAIL of a subquery's refusal.
const subqueryDetail = "In a subquery of a stream's FROM clause, which runs as a stream of its own."

// hideStream plans a subquery of a stream's FROM clause as a hidden
// stream of the pipeline: the continuous query it is on its own (a
// filter, a windowed aggregation, a join in time, a union), writing an
// internal topic. What a stream could not be (an aggregation without a
// window, DISTINCT, a join without a time bound) is refused as that
// stream would be, naming the subquery.
func hideStream(cat Catalog, name string, q sql.QueryExpr) (*Continuous, error) {
	sub, err := planQuery(cat, &sql.CreateAs{Kind: sql.KindStream, Name: name, Query: &sql.Query{Body: q}})
	if err != nil {
		if pe, ok := err.(*pgerror.Error); ok && pe.Code == pgerror.FeatureNotSupported && pe.Detail == "" {
			return nil, pe.WithDetail(subqueryDetail)
		}
		return nil, err
	}
	sub.Rel.Topic = InternalTopic(name, "stream")
	return sub, nil
}

// upstreamWatermarks makes each stage of t (a pipeline ns embedded its
// subqueries in) that reads a hidden stream in event time take the
// watermark the stream's writer sends, less the most its rows' time may
// trail it (writerLag; see plan.WatermarkSpec.Upstream). A watermark
// computed from the rows read would count as late what the writer's
// partitions put out in an order of their own: a window's rows as each
// partition closes it, a join's pairs as their second row arrives. So a
// time column whose lag is not known (computed, a session's) is refused.
func (ns *nester) upstreamWatermarks(t *plan.Topology, inputs []*catalog.Relation) error {
	for i := range t.Stages {
		st := &t.Stages[i]
		if st.Watermark == nil || st.Watermark.Upstream || len(st.Inputs) != 1 {
			continue
		}
		at := slices.IndexFunc(ns.subs, func(sub *Continuous) bool { return sub.Changes == nil && sub.Rel.Name == st.Inputs[0] })
		if at < 0 {
			continue
		}
		lag, ok := writerLag(t, inputs, st.Inputs[0], st.Watermark.Col)
		if !ok {
			name := "?"
			if read := ns.subs[at].Rel.ReadColumns(); st.Watermark.Col < len(read) {
				name = read[st.Watermark.Col].Name
			}
			return pgerror.NotSupported("a window, join in time or top-N over the column %q of a subquery, whose event time fvsql cannot follow through the subquery", name).
				WithDetail("Its rows' order in event time is known for the input's time column passed through as it is, a window's window_start and window_end, and a time-bounded join's sides' times.").
				WithHint("Select the time column as it is in the subquery, and compute from it in the outer query.")
		}
		st.Watermark = &plan.WatermarkSpec{Col: st.Watermark.Col, Delay: lag, Upstream: true}
	}
	return nil
}

// writerLag follows column col of stream out back through the steps of
// the stage of t writing it to a column whose lag behind the stage's
// watermark is known: a window's end (none) or start (the window's
// size), a joined side's time (the join's bound on the other side), or,
// through filters and projections only, an input stream's column, which
// becomes the writer's event time (watermarkFor; a stage from a stream
// has no watermark unless it keeps state).
//
// A stream several stages write (a union's branches) lags by the most any
// of them does, and only if every one's lag is known.
func writerLag(t *plan.Topology, inputs []*catalog.Relation, out string, col int) (int64, bool) {
	var lag int64
	writers := 0
	for i := range t.Stages {
		if t.Stages[i].Output != out {
			continue
		}
		l, ok := stageLag(t, inputs, &t.Stages[i], col)
		if !ok {
			return 0, false
		}
		lag = max(lag, l)
		writers++
	}
	return lag, writers > 0
}

// stageLag is writerLag for one writing stage w. It may give w a
// watermark (should another writer's lag be unknown, the query is
// refused anyway). A column traced to an input stream with a WATERMARK
// must be that column: another timestamp's rows come in no order the
// watermark tells.
func stageLag(t *plan.Topology, inputs []*catalog.Relation, w *plan.Stage, col int) (int64, bool) {
	// the stream the stage reads, if it is one the pipeline reads (not
	// another stage's output)
	var src *catalog.Relation
	if len(w.Inputs) == 1 && !slices.ContainsFunc(t.Stages, func(s plan.Stage) bool { return s.Output == w.Inputs[0] }) {
		src = inputNamed(t, inputs, w.Inputs[0])
	}
	var lag int64
	for k := len(w.Steps) - 1; k >= 0; k-- {
		st := w.Steps[k]
		switch st.Op {
		case plan.OpFilter:
		case plan.OpProject:
			if col >= len(st.Exprs) || st.Exprs[col].Kind != expr.KCol {
				return 0, false
			}
			col = st.Exprs[col].Col
		case plan.OpWindowAssign:
			// output rows: its input's columns (Width), window_start,
			// window_end; a row's window starts up to a size before its
			// time and ends after it
			if st.Window == nil || st.Width == 0 {
				return 0, false
			}
			switch n := st.Width; col {
			case n:
				lag, col = lag+st.Window.Size, st.TimeCol
			case n + 1:
				col = st.TimeCol
			}
		case plan.OpWindowAggregate:
			// output rows: the group columns, window_start, window_end, the aggregates
			n := len(st.GroupBy)
			if st.Window == nil || st.Window.Kind == "session" || st.Changes {
				return 0, false
			}
			switch col {
			case n:
				return lag + st.Window.Size, true
			case n + 1:
				return lag, true
			}
			return 0, false
		case plan.OpLookupJoin:
			// output rows: the stream row, the view row it found
			if st.Lookup == nil || col >= st.Lookup.StreamWidth {
				return 0, false
			}
		case plan.OpGroupAggregate:
			// Once (a stream's DISTINCT): output rows are the group
			// columns, each the first row of its group as it came
			if !st.Once || col >= len(st.GroupBy) || st.GroupBy[col].Kind != expr.KCol {
				return 0, false
			}
			col = st.GroupBy[col].Col
		case plan.OpFinalTopN, plan.OpFirstN, plan.OpOverTime:
			// output rows: the input row, its number (and position); a
			// partition's rows come out once the watermark passes its time
			// (firstN: a row, once the watermark passes its time; overTime:
			// the input row and its values, likewise)
			if col == st.TimeCol {
				return lag, true
			}
			return 0, false
		case plan.OpIntervalJoin:
			// output rows: the left columns, the right columns; a pair
			// comes when its second row does (not late), an outer row when
			// the watermark passes its time plus the bound
			js := st.Join
			switch col {
			case js.LeftTime - 1:
				return lag + max(js.Hi, 0), true
			case js.RightTime - 1:
				return lag + max(-js.Lo, 0), true
			}
			return 0, false
		default:
			return 0, false
		}
	}
	if src == nil {
		// a stage that reads another's output (a repartition): its rows
		// trail their writer's watermark, which it passes on, as much as
		// the writer's do
		if len(w.Inputs) != 1 || w.Watermark != nil {
			return 0, false
		}
		l, ok := writerLag(t, inputs, w.Inputs[0], col)
		return lag + l, ok
	}
	if read := src.ReadColumns(); src.Watermark != nil && (col >= len(read) || read[col].Name != src.Watermark.Column) {
		return 0, false
	}
	if w.Watermark != nil {
		return lag, w.Watermark.Col == col && !w.Watermark.Upstream
	}
	w.Watermark = watermarkFor(src, col)
	return lag, true
}

// streamSubquery says whether a stream's FROM list holds a subquery.
func streamSubquery(list []sql.TableExpr) bool {
	for _, te := range list {
		switch t := te.(type) {
		case *sql.Join:
			if isJoin(t.Left) || isJoin(t.Right) || streamSubquery([]sql.TableExpr{t.Left, t.Right}) {
				return true // a join of joins: see hideJoin
			}
		case *sql.DerivedTable:
			return true
		case *sql.WindowTVF:
			if t.Query != nil {
				return true
			}
		}
		if j, ok := te.(*sql.Join); ok && (isWindow(j.Left) || isWindow(j.Right)) {
			return true // a window join
		}
	}
	return false
}

func isWindow(te sql.TableExpr) bool { _, ok := te.(*sql.WindowTVF); return ok }

// hiddenTable sends a hidden view's table and changes to internal topics
// of the pipeline, not to user topics.
func hiddenTable(sub *Continuous, name string) error {
	last, err := internalTable(sub, InternalTopic(name, "table"), "this subquery in a materialized view")
	if err != nil {
		return err
	}
	sub.Changes.Topic = InternalTopic(name, "changes")
	last.Changes.Before = false // the views over it read its table, not its changes
	return nil
}

// unionBranches readies the branches of a union of views' rows for
// planUnionView: a branch that is more than a filter and projection of
// one stream's or view's rows becomes a hidden view of its own, and the
// branch its rows. The subqueries in a branch's FROM clause are hidden
// first, here, so that branches reading one subquery (the groupings of
// grouping sets) read one view of it.
func (ns *nester) unionBranches(qs []sql.QueryExpr) ([]*sql.Select, error) {
	out := make([]*sql.Select, len(qs))
	for i, q := range qs {
		if sel, ok := q.(*sql.Select); ok && hasSubquery(sel.From) {
			outer := ns.outer
			ns.outer = sel
			from, err := ns.from(sel.From)
			ns.outer = outer
			if err != nil {
				return nil, err
			}
			nested := *sel
			nested.From = from
			q = &nested
		}
		if _, ok := rowBranch(ns.cat, q); ok {
			out[i] = q.(*sql.Select)
			continue
		}
		t, err := ns.hide(&sql.DerivedTable{Query: q, Alias: "_branch"})
		if err != nil {
			return nil, err
		}
		out[i] = &sql.Select{Items: []sql.SelectItem{{Expr: &sql.Star{}}}, From: []sql.TableExpr{t}}
	}
	return out, nil
}

// embed puts the hidden views' stages before the query's, their topics
// among its internal ones, and their inputs among its inputs. Inputs on
// other backends are bridged once for the whole pipeline: a stream two
// subqueries read has one ingest bridge (one consumer group), not two.
//
// A hidden view's stages are named sub<n>_<stage>: stage names have no
// '-' or '.', so this name cannot meet another pipeline's in the state
// topics (_fvsql-<pipeline>-<stage>-state) or the consumer groups
// (fvsql.<pipeline>.<stage>), whatever the pipelines are called.
func (ns *nester) embed(c *Continuous) error {
	if len(ns.subs) == 0 {
		return nil
	}
	var stages []plan.Stage
	var inputs []*catalog.Relation
	add := func(rels []*catalog.Relation) {
		for _, r := range rels {
			_, hidden := ns.cat.views[r.Name]
			if !hidden && !slices.ContainsFunc(inputs, func(in *catalog.Relation) bool { return in.Name == r.Name }) {
				inputs = append(inputs, r)
			}
		}
	}
	unbridge(c.Topology)
	for i, sub := range ns.subs {
		unbridge(sub.Topology)
		prefix := "sub" + strconv.Itoa(i+1) + "_"
		for _, st := range sub.Topology.Stages {
			st.Name = prefix + st.Name
			stages = append(stages, st)
		}
		c.Topology.Internal = append(c.Topology.Internal, sub.Topology.Internal...)
		c.Topology.Internal = append(c.Topology.Internal, *StreamOf(sub.Rel))
		if sub.Changes != nil { // a hidden stream has none
			c.Topology.Internal = append(c.Topology.Internal, *StreamOf(sub.Changes))
		}
		add(sub.Inputs)
	}
	add(c.Inputs)
	c.Topology.Stages = append(stages, c.Topology.Stages...)
	c.Inputs = inputs
	if err := bridgeInputs(c, ns.name); err != nil {
		return err
	}
	if err := ns.upstreamWatermarks(c.Topology, c.Inputs); err != nil {
		return err
	}
	ns.inlineStreams(c.Topology, c.Inputs)
	return nil
}

// inlineStreams is a lowering rule: a hidden stream that one stage
// writes from a stream the pipeline reads, with filters, projections and
// window assignments only, and one stage reads, is a round trip through
// Kafka that moves no row to another partition. The reading stage runs
// the writer's steps first instead, on the writer's input; the writer's
// rows carry that input's metadata columns where the hidden stream's
// records would have put theirs, so the reader's steps are unchanged. Its
// watermark is the writer's, computed from the input's rows, less the lag
// the reader took off the writer's.
func (ns *nester) inlineStreams(t *plan.Topology, inputs []*catalog.Relation) {
	for _, sub := range ns.subs {
		if sub.Changes != nil {
			continue
		}
		name := sub.Rel.Name
		writers, readers := stagesWriting(t, name), stagesReading(t, name)
		if len(writers) != 1 || len(readers) != 1 || bridged(t, name) {
			continue
		}
		a, b := &t.Stages[writers[0]], &t.Stages[readers[0]]
		if len(a.Inputs) != 1 || len(b.Inputs) != 1 || len(a.Steps) == 0 || a.Steps[len(a.Steps)-1].Op != plan.OpProject {
			continue
		}
		if slices.ContainsFunc(t.Stages, func(s plan.Stage) bool { return s.Output == a.Inputs[0] }) {
			continue // a's input is another stage's output
		}
		if !slices.ContainsFunc(a.Steps, func(s plan.Step) bool {
			return s.Op == plan.OpFilter || s.Op == plan.OpProject || s.Op == plan.OpWindowAssign
		}) {
			continue
		}
		// Its steps read the input's row (one projection, the last: so its
		// metadata columns are where the input puts them), and put out a
		// row per input record at most (no HOP: a view keys rows by the
		// record they came from).
		if slices.ContainsFunc(a.Steps, func(s plan.Step) bool {
			return s.Op != plan.OpFilter && s.Op != plan.OpProject && s.Op != plan.OpWindowAssign ||
				s.Op == plan.OpWindowAssign && (s.Window == nil || s.Window.Kind != "tumble")
		}) || slices.IndexFunc(a.Steps, func(s plan.Step) bool { return s.Op == plan.OpProject }) != len(a.Steps)-1 {
			continue
		}
		src := inputNamed(t, inputs, a.Inputs[0])
		if src == nil {
			continue
		}
		var wm *plan.WatermarkSpec
		switch {
		case b.Watermark == nil:
			wm = a.Watermark
		case b.Watermark.Upstream && a.Watermark != nil && !a.Watermark.Upstream:
			wm = &plan.WatermarkSpec{Col: a.Watermark.Col, Delay: a.Watermark.Delay + b.Watermark.Delay}
		default:
			continue // a watermark from the hidden stream's own rows
		}
		proj := a.Steps[len(a.Steps)-1]
		proj.Exprs = append([]*expr.Expr(nil), proj.Exprs...)
		proj.Names = append([]string(nil), proj.Names...)
		read := src.ReadColumns()
		for i := len(src.Columns); i < len(read); i++ {
			proj.Exprs = append(proj.Exprs, expr.Col(i, read[i].Type, read[i].Name))
			proj.Names = append(proj.Names, read[i].Name)
		}
		steps := append(append(append([]plan.Step(nil), a.Steps[:len(a.Steps)-1]...), proj), b.Steps...)
		b.Inputs, b.Steps, b.Watermark = []string{a.Inputs[0]}, steps, wm
		t.Stages = slices.Delete(t.Stages, writers[0], writers[0]+1)
		t.Internal = slices.DeleteFunc(t.Internal, func(d plan.Stream) bool { return d.Name == name })
	}
}

// inputNamed is the stream of inputs a stage input names (through its
// ingest bridge, if it has one).
func inputNamed(t *plan.Topology, inputs []*catalog.Relation, name string) *catalog.Relation {
	for _, b := range t.Ingest {
		if b.Internal == name {
			name = b.External
		}
	}
	if i := slices.IndexFunc(inputs, func(r *catalog.Relation) bool { return r.Name == name }); i >= 0 {
		return inputs[i]
	}
	return nil
}

// unbridge takes a topology's ingest bridges out: its stages read the
// external streams again, for bridgeInputs to bridge once.
func unbridge(t *plan.Topology) {
	for _, b := range t.Ingest {
		for i := range t.Stages {
			for j, in := range t.Stages[i].Inputs {
				if in == b.Internal {
					t.Stages[i].Inputs[j] = b.External
				}
			}
		}
		t.Internal = slices.DeleteFunc(t.Internal, func(d plan.Stream) bool { return d.Name == b.Internal })
	}
	t.Ingest = nil
}

// limitOverGroups rewrites ORDER BY … LIMIT over an aggregation or
// DISTINCT as the top-N of a subquery that is the aggregation: SELECT *
// FROM (the query without them) ORDER BY … LIMIT (limitOverSubquery).
func limitOverGroups(sel *sql.Select) (*sql.Select, error) {
	if len(sel.OrderBy) == 0 && sel.Limit == nil && sel.Offset == nil {
		return sel, nil
	}
	if !aggregates(sel) && !sel.Distinct {
		return sel, nil
	}
	return limitOverSubquery(sel)
}

// limitOverSubquery makes sel's ORDER BY … LIMIT a top-N over a subquery
// of the rest: the order SQL evaluates them in, after grouping, window
// functions and DISTINCT. An ORDER BY term names an output column (by
// name or position) or is a select list term; any other term (count(*)
// outside the select list, a grouping column left out) is computed by the
// subquery as a hidden column the top-N orders by and the outer select
// list leaves out:
//
//	SELECT cust, sum(amount) AS s FROM orders GROUP BY cust ORDER BY count(*) DESC LIMIT 3
//	→ SELECT cust, s FROM (SELECT cust, sum(amount) AS s, count(*) AS _o0
//	    FROM orders GROUP BY cust) _top ORDER BY _o0 DESC LIMIT 3
//
// Under SELECT DISTINCT such a term is 42P10, as in PostgreSQL: it would
// have no one value per distinct row.
func limitOverSubquery(sel *sql.Select) (*sql.Select, error) {
	inner := *sel
	inner.OrderBy, inner.Limit, inner.Offset = nil, nil, nil
	names := make([]string, len(sel.Items))
	for i, it := range sel.Items {
		if _, ok := it.Expr.(*sql.Star); ok {
			return nil, pgerror.NotSupported("ORDER BY … LIMIT over an aggregation or window functions with * in its select list")
		}
		names[i] = outputName(it)
	}
	// position says which select item an ORDER BY term names, or -1.
	position := func(term sql.Expr) int {
		switch t := term.(type) {
		case *sql.Literal:
			if n := int(t.Value.I); t.Value.K.IsInteger() && n >= 1 && n <= len(names) {
				return n - 1
			}
			return -1
		case *sql.ColumnRef:
			if t.Table == "" {
				if i := slices.Index(names, t.Name); i >= 0 {
					return i
				}
			}
		}
		f := sql.FormatExpr(term)
		for i, it := range sel.Items {
			if sql.FormatExpr(it.Expr) == f {
				return i
			}
		}
		return -1
	}
	out := &sql.Select{
		Items:   []sql.SelectItem{{Expr: &sql.Star{}}},
		From:    []sql.TableExpr{&sql.DerivedTable{Query: &inner, Alias: "_top"}},
		OrderBy: make([]sql.OrderItem, len(sel.OrderBy)), Limit: sel.Limit, Offset: sel.Offset,
	}
	var hidden []sql.Expr
	at := make([]int, len(sel.OrderBy)) // the item it names, or -1
	for j, o := range sel.OrderBy {
		out.OrderBy[j] = o
		at[j] = position(o.Expr)
		if lit, ok := o.Expr.(*sql.Literal); ok {
			if lit.Value.K.IsInteger() && at[j] < 0 {
				return nil, pgerror.New(pgerror.InvalidColumnReference, "ORDER BY position %d is not in select list", lit.Value.I)
			}
			continue // a position (the outer * lists the same columns), or a constant
		}
		if at[j] >= 0 {
			out.OrderBy[j].Expr = &sql.ColumnRef{Name: names[at[j]]}
			continue
		}
		if sel.Distinct {
			return nil, pgerror.New(pgerror.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
		}
		out.OrderBy[j].Expr = &sql.ColumnRef{Name: orderColumn(names, len(hidden))}
		hidden = append(hidden, o.Expr)
	}
	if len(hidden) == 0 {
		return out, nil
	}
	// The inner items keep their names, which GROUP BY may name, unless
	// two share one: then the outer query names them apart.
	inner.Items = slices.Clip(sel.Items)
	out.Items = make([]sql.SelectItem, len(sel.Items))
	shared := false
	for i := range sel.Items {
		out.Items[i] = sql.SelectItem{Expr: &sql.ColumnRef{Name: names[i]}}
		shared = shared || slices.Index(names, names[i]) != i
	}
	if shared {
		inner.Items = make([]sql.SelectItem, len(sel.Items))
		for i, it := range sel.Items {
			c := orderColumn(names, len(hidden)+i) // a name of no output column
			inner.Items[i] = sql.SelectItem{Expr: it.Expr, Alias: c}
			out.Items[i] = sql.SelectItem{Expr: &sql.ColumnRef{Name: c}, Alias: names[i]}
		}
		for j, i := range at {
			if i >= 0 {
				out.OrderBy[j].Expr = &sql.ColumnRef{Name: inner.Items[i].Alias}
			}
		}
	}
	for k, x := range hidden {
		inner.Items = append(inner.Items, sql.SelectItem{Expr: x, Alias: orderColumn(names, k)})
	}
	return out, nil
}

// orderColumn names a subquery's k-th hidden ORDER BY column apart from
// the select list's output names.
func orderColumn(names []string, k int) string {
	for p := "_o"; ; p = "_" + p {
		if n := p + strconv.Itoa(k); !slices.Contains(names, n) {
			return n
		}
	}
}

// hasSubquery says whether a FROM list holds a subquery without window
// functions (one with them, a top-N's or a window view's, is refused or
// planned by what handles windows, which says more).
func hasSubquery(list []sql.TableExpr) bool {
	for _, te := range list {
		switch t := te.(type) {
		case *sql.Join:
			if hasSubquery([]sql.TableExpr{t.Left, t.Right}) {
				return true
			}
		case *sql.DerivedTable:
			if inner, ok := t.Query.(*sql.Select); !ok || !hasWindowCall(inner) || hasSubquery(inner.From) {
				return true
			}
		}
	}
	return false
}

// rankedJoin plans a top-N over a join (the best_line): the join,
// with the select list's terms and the ranking's PARTITION BY and ORDER
// BY terms as its columns, is a hidden view of rows, and the ranking
// reads it as a top-N over a view:
//
//	SELECT a, b, ROW_NUMBER() OVER (PARTITION BY _p0 ORDER BY _o0) AS rn
//	FROM (SELECT x.a AS a, y.b AS b, x.k AS _p0, x.v * y.w AS _o0
//	      FROM x JOIN y ON …) _ranked
func (ns *nester) rankedJoin(inner *sql.Select, alias string) (sql.TableExpr, error) {
	if len(inner.GroupBy) > 0 || inner.Having != nil || inner.Distinct || len(inner.OrderBy) > 0 || inner.Limit != nil || inner.Offset != nil {
		return nil, pgerror.NotSupported("a ranking over a join with GROUP BY, DISTINCT, ORDER BY or LIMIT in the same SELECT").
			WithHint("Group or order in a subquery, and rank its rows.")
	}
	var cols, ranked []sql.SelectItem
	var over *sql.WindowSpec
	rank := -1
	for _, it := range inner.Items {
		if f, ok := it.Expr.(*sql.FuncCall); ok && f.Over != nil {
			if over != nil {
				return nil, pgerror.NotSupported("window function %s in a continuous query (only one ROW_NUMBER(), RANK() or DENSE_RANK())", f.Name)
			}
			over, rank = f.Over, len(ranked)
			ranked = append(ranked, it)
			continue
		}
		if _, ok := it.Expr.(*sql.Star); ok {
			return nil, pgerror.NotSupported("* in a ranking over a join").WithHint("Name the columns the ranking selects.")
		}
		name := outputName(it)
		cols = append(cols, sql.SelectItem{Expr: it.Expr, Alias: name})
		ranked = append(ranked, sql.SelectItem{Expr: &sql.ColumnRef{Name: name}, Alias: name})
	}
	spec := &sql.WindowSpec{Frame: over.Frame}
	for i, p := range over.PartitionBy {
		name := "_p" + strconv.Itoa(i)
		cols = append(cols, sql.SelectItem{Expr: p, Alias: name})
		spec.PartitionBy = append(spec.PartitionBy, &sql.ColumnRef{Name: name})
	}
	for i, o := range over.OrderBy {
		name := "_o" + strconv.Itoa(i)
		cols = append(cols, sql.SelectItem{Expr: o.Expr, Alias: name})
		spec.OrderBy = append(spec.OrderBy, sql.OrderItem{Expr: &sql.ColumnRef{Name: name}, Desc: o.Desc, NullsFirst: o.NullsFirst})
	}
	join, err := ns.hide(&sql.DerivedTable{Query: &sql.Select{Items: cols, From: inner.From, Where: inner.Where}, Alias: "_ranked"})
	if err != nil {
		return nil, err
	}
	f := *ranked[rank].Expr.(*sql.FuncCall)
	f.Over = spec
	ranked[rank].Expr = &f
	return &sql.DerivedTable{Query: &sql.Select{Items: ranked, From: []sql.TableExpr{join}}, Alias: alias}, nil
}

// isJoin says whether a FROM item is a join.
func isJoin(te sql.TableExpr) bool {
	_, ok := te.(*sql.Join)
	return ok
}
