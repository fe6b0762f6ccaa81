package planner

import (
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// windowsOverViews rewrites each TUMBLE or HOP over a materialized view in
// a view's FROM clause into a subquery of the view's rows with their
// windows' start and end, which the view's aggregation then groups by as
// by any computed column:
//
//	TUMBLE(v, ts, INTERVAL '1' MINUTE)
//	→ (SELECT v.*, date_bin(INTERVAL '1' MINUTE, v.ts, '1970-01-01') AS window_start,
//	     … + INTERVAL '1' MINUTE AS window_end FROM v WHERE v.ts IS NOT NULL) v
//	HOP(v, ts, INTERVAL '1' MINUTE, INTERVAL '3' MINUTE)
//	→ (SELECT v.*, _hop_start AS window_start, _hop_start + INTERVAL '3' MINUTE AS window_end
//	   FROM v, generate_series(date_bin(INTERVAL '1' MINUTE, v.ts, '1970-01-01') - INTERVAL '2' MINUTE,
//	     date_bin(INTERVAL '1' MINUTE, v.ts, '1970-01-01'), INTERVAL '1' MINUTE) _hop_start) v
//
// These are the windows plan.WindowSpec.Windows gives a row (starts at
// multiples of the slide from the Unix epoch), which a bounded query's
// TUMBLE and HOP assign too. A view's rows change, so its windows do not
// close: such a view holds every window's current rows, updated as the
// view's are, and no watermark is involved. Anything else (a WITH query,
// a stream, SESSION, an unknown name) is left for the planner further on.
func windowsOverViews(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	from := make([]sql.TableExpr, len(sel.From))
	changed := false
	for i, t := range sel.From {
		var err error
		if from[i], err = windowOverView(cat, t); err != nil {
			return nil, err
		}
		changed = changed || from[i] != t
	}
	if !changed {
		return sel, nil
	}
	out := *sel
	out.From = from
	return &out, nil
}

// windowOverView is windowsOverViews for one FROM item (a join's items
// too).
func windowOverView(cat Catalog, t sql.TableExpr) (sql.TableExpr, error) {
	switch t := t.(type) {
	case *sql.Join:
		return mapJoin(t, func(s sql.TableExpr) (sql.TableExpr, error) { return windowOverView(cat, s) })
	case *sql.WindowTVF:
		if t.Kind == "session" {
			return t, nil
		}
		v, err := viewWindow(cat, t)
		if v == nil || err != nil {
			return t, err
		}
		return windowSubquery(v.src, v.rel, t.TimeCol, v.spec.Kind, v.spec.Size, v.spec.Slide), nil
	}
	return t, nil
}

// overView is a window over a materialized view: the view (rel) named
// under the window's alias (src), its columns (scope) and the window.
type overView struct {
	src   *sql.TableName
	rel   *catalog.Relation
	scope *scope
	spec  plan.WindowSpec
}

// viewWindow reads t when its source is a materialized view (nil when it
// is not), with the same checks of its time column and sizes as over a
// stream.
func viewWindow(cat Catalog, t *sql.WindowTVF) (*overView, error) {
	if t.Query != nil {
		return nil, nil
	}
	rel, err := cat.Lookup(t.Source.Schema, t.Source.Name)
	if err != nil || rel.Kind != catalog.MaterializedView {
		return nil, nil
	}
	v := &overView{src: windowTable(t), rel: rel}
	v.scope = relationScope(cat, v.src, rel)
	if _, _, v.spec, err = (&builder{cat: cat}).windowOf(t, v.scope); err != nil {
		return nil, err
	}
	return v, nil
}

// windowSubquery is the subquery windowsOverViews puts in place of a
// window of kind ("tumble" or "hop", size and slide in microseconds) over
// src (view rel), on its time column tcol.
func windowSubquery(src *sql.TableName, rel *catalog.Relation, tcol, kind string, size, slide int64) *sql.DerivedTable {
	qual := src.Alias
	interval := func(us int64) sql.Expr {
		return &sql.Literal{Value: types.NewInterval(types.IntervalValue{Micros: us})}
	}
	ts := &sql.ColumnRef{Table: qual, Name: tcol}
	epoch := &sql.Literal{Value: types.Value{K: types.Unknown, S: "1970-01-01 00:00:00+00"}}
	window := func(start sql.Expr) []sql.SelectItem {
		return append(viewColumns(rel, qual), sql.SelectItem{Expr: start, Alias: "window_start"}, sql.SelectItem{Expr: &sql.Binary{Op: "+", L: start, R: interval(size)}, Alias: "window_end"})
	}
	if kind == "tumble" {
		start := &sql.FuncCall{Name: "date_bin", Args: []sql.Expr{interval(size), ts, epoch}}
		return &sql.DerivedTable{Alias: qual, Query: &sql.Select{Items: window(start), From: []sql.TableExpr{src}, Where: &sql.IsNull{X: ts, Not: true}}}
	}
	// a row is in the windows starting at the multiples of the slide in
	// (ts - size, ts]: from the last at or before ts back, while they hold it
	last := &sql.FuncCall{Name: "date_bin", Args: []sql.Expr{interval(slide), ts, epoch}}
	n := (size + slide - 1) / slide
	first := &sql.Binary{Op: "-", L: last, R: interval((n - 1) * slide)}
	const name = "_hop_start"
	starts := &sql.TableFunc{Name: "generate_series", Args: []sql.Expr{first, last, interval(slide)}, Alias: name}
	start := &sql.ColumnRef{Table: name, Name: name}
	q := &sql.Select{Items: window(start), From: []sql.TableExpr{src, starts}}
	if size%slide != 0 {
		q.Where = &sql.Binary{Op: ">", L: start, R: &sql.Binary{Op: "-", L: ts, R: interval(size)}}
	}
	return &sql.DerivedTable{Alias: qual, Query: q}
}

// sessionOverView rewrites a view's query over SESSION(v, ts, gap), v a
// materialized view, into one over a subquery of v's rows (those WHERE
// keeps) with their sessions' window_start and window_end, computed with
// window functions over the GROUP BY terms other than the window's, which
// a view runs over changing rows:
//
//	SELECT k, window_start, count(*) FROM SESSION(v, ts, gap) WHERE c GROUP BY k, window_start
//	→ SELECT k, window_start, count(*) FROM
//	    (SELECT v.*, min(ts) OVER (PARTITION BY k, _session) AS window_start,
//	            max(ts) OVER (PARTITION BY k, _session) + gap AS window_end FROM
//	      (SELECT v.*, sum(_session_new) OVER (PARTITION BY k ORDER BY ts) AS _session FROM
//	        (SELECT v.*, CASE WHEN ts - lag(ts) OVER (PARTITION BY k ORDER BY ts) <= gap
//	                     THEN 0 ELSE 1 END AS _session_new
//	         FROM v WHERE c AND ts IS NOT NULL) v) v) v
//	  GROUP BY k, window_start
//
// A row starts a session when it is more than the gap after the one
// before it; the running count of starts (peers share it: the default
// RANGE frame) numbers the sessions, which are the bounded SESSION's
// (buildSession). Each change of a key's rows computes its partition
// again, so a key of very many rows is slow to update. A query that does
// not group by the window is left for the planner further on.
func sessionOverView(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	if len(sel.From) != 1 {
		return sel, nil
	}
	t, ok := sel.From[0].(*sql.WindowTVF)
	if !ok || t.Kind != "session" {
		return sel, nil
	}
	v, err := viewWindow(cat, t)
	if v == nil || err != nil {
		return sel, err
	}
	src, rel, sc, qual := v.src, v.rel, v.scope, v.src.Alias
	// the sessions' keys: the GROUP BY terms but the window's, as
	// groupColumns reads them (positions and aliases name select items)
	var keys []sql.Expr
	sawWindow := false
	for _, g := range sel.GroupBy {
		term := g
		if lit, ok := g.(*sql.Literal); ok && lit.Value.K.IsInteger() {
			if n := int(lit.Value.I); n >= 1 && n <= len(sel.Items) {
				term = sel.Items[n-1].Expr
			}
		} else if c, ok := g.(*sql.ColumnRef); ok && c.Table == "" {
			if _, err := sc.resolve("", c.Name); err != nil {
				for _, it := range sel.Items {
					if it.Alias == c.Name {
						term = it.Expr
					}
				}
			}
		}
		if c, ok := term.(*sql.ColumnRef); ok && (c.Name == "window_start" || c.Name == "window_end") {
			sawWindow = true
			continue
		}
		keys = append(keys, term)
	}
	if !sawWindow {
		return sel, nil
	}
	// each layer computes the keys again: they must come out the same
	kb := &builder{cat: cat}
	for _, k := range keys {
		if x, err := kb.build(&exprCtx{scope: sc, what: "GROUP BY", noAggs: true}, k); err == nil && expr.Volatile(x) {
			return nil, pgerror.NotSupported("a volatile function or a subquery in a SESSION window's GROUP BY").
				WithHint("Compute the key in the view that SESSION reads.")
		}
	}
	interval := func(us int64) sql.Expr {
		return &sql.Literal{Value: types.NewInterval(types.IntervalValue{Micros: us})}
	}
	ts := &sql.ColumnRef{Table: qual, Name: t.TimeCol}
	over := func(order bool, more ...sql.Expr) *sql.WindowSpec {
		w := &sql.WindowSpec{PartitionBy: append(append([]sql.Expr(nil), keys...), more...)}
		if order {
			w.OrderBy = []sql.OrderItem{{Expr: ts}}
		}
		return w
	}
	// each layer selects the view's columns, the layers' before it and its own
	cols := viewColumns(rel, qual)
	layer := func(from sql.TableExpr, where sql.Expr, items ...sql.SelectItem) *sql.DerivedTable {
		q := &sql.Select{Items: append(cols[:len(cols):len(cols)], items...), From: []sql.TableExpr{from}, Where: where}
		for _, it := range items {
			cols = append(cols, sql.SelectItem{Expr: &sql.ColumnRef{Table: qual, Name: it.Alias}})
		}
		return &sql.DerivedTable{Alias: qual, Query: q}
	}
	var where sql.Expr = &sql.IsNull{X: ts, Not: true}
	if sel.Where != nil {
		where = &sql.Binary{Op: "and", L: sel.Where, R: where}
	}
	gap := interval(v.spec.Gap)
	lag := &sql.Binary{Op: "-", L: ts, R: &sql.FuncCall{Name: "lag", Args: []sql.Expr{ts}, Over: over(true)}}
	isNew := &sql.Case{Whens: []sql.When{{Cond: &sql.Binary{Op: "<=", L: lag, R: gap}, Result: &sql.Literal{Value: types.NewInt(types.Int4, 0)}}},
		Else: &sql.Literal{Value: types.NewInt(types.Int4, 1)}}
	l1 := layer(src, where, sql.SelectItem{Expr: isNew, Alias: "_fvsql_session_new"})
	number := &sql.FuncCall{Name: "sum", Args: []sql.Expr{&sql.ColumnRef{Table: qual, Name: "_fvsql_session_new"}}, Over: over(true)}
	l2 := layer(l1, nil, sql.SelectItem{Expr: number, Alias: "_fvsql_session"})
	session := &sql.ColumnRef{Table: qual, Name: "_fvsql_session"}
	first := &sql.FuncCall{Name: "min", Args: []sql.Expr{ts}, Over: over(false, session)}
	last := &sql.FuncCall{Name: "max", Args: []sql.Expr{ts}, Over: over(false, session)}
	l3 := layer(l2, nil, sql.SelectItem{Expr: first, Alias: "window_start"}, sql.SelectItem{Expr: &sql.Binary{Op: "+", L: last, R: gap}, Alias: "window_end"})
	out := *sel
	out.From, out.Where = []sql.TableExpr{l3}, nil
	return &out, nil
}

// viewColumns selects a view's visible columns under qual, but those named
// window_start and window_end, which the window's own take the place of
// (a window over a window view's rows: HOP(per_minute, window_start, …)).
func viewColumns(rel *catalog.Relation, qual string) []sql.SelectItem {
	var items []sql.SelectItem
	for _, c := range rel.Columns {
		if !c.Hidden && c.Name != "window_start" && c.Name != "window_end" {
			items = append(items, sql.SelectItem{Expr: &sql.ColumnRef{Table: qual, Name: c.Name}})
		}
	}
	return items
}

// windowGroupBy adds window_end to the GROUP BY of a query over a window
// function that groups by window_start but not window_end, and the other
// way round. A window's start and end determine each other (with the
// GROUP BY's other terms, a session's too), so the groups stay the same,
// and the select list may name either, as a stream's window aggregation
// always allowed (groupColumns); PostgreSQL's rule, which knows nothing of
// windows, would make the bounded query 42803 where its stream runs.
func windowGroupBy(sel *sql.Select) *sql.Select {
	if len(sel.GroupBy) == 0 || !hasWindowTVF(sel.From) {
		return sel
	}
	seen := map[string]string{} // window column → its qualifier in GROUP BY
	for _, g := range sel.GroupBy {
		if lit, ok := g.(*sql.Literal); ok && lit.Value.K.IsInteger() {
			if n := int(lit.Value.I); n >= 1 && n <= len(sel.Items) {
				g = sel.Items[n-1].Expr
			}
		}
		switch c := g.(type) {
		case *sql.ColumnRef:
			if c.Name == "window_start" || c.Name == "window_end" {
				seen[c.Name] = c.Table
			}
		case *sql.GroupingSets:
			return sel
		}
	}
	if len(seen) != 1 {
		return sel
	}
	out := *sel
	out.GroupBy = append([]sql.Expr(nil), sel.GroupBy...)
	for name, qual := range seen {
		other := "window_end"
		if name == "window_end" {
			other = "window_start"
		}
		out.GroupBy = append(out.GroupBy, &sql.ColumnRef{Table: qual, Name: other})
	}
	return &out
}

// hasWindowTVF reports whether a FROM clause holds a window function, in
// a join too.
func hasWindowTVF(from []sql.TableExpr) bool {
	for _, t := range from {
		switch t := t.(type) {
		case *sql.WindowTVF:
			return true
		case *sql.Join:
			if hasWindowTVF([]sql.TableExpr{t.Left, t.Right}) {
				return true
			}
		}
	}
	return false
}
