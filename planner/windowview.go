package planner

import (
	"github.com/fvsql/fvsql/catalog"
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
		l, err := windowOverView(cat, t.Left)
		if err != nil {
			return nil, err
		}
		r, err := windowOverView(cat, t.Right)
		if err != nil {
			return nil, err
		}
		if l == t.Left && r == t.Right {
			return t, nil
		}
		j := *t
		j.Left, j.Right = l, r
		return &j, nil
	case *sql.WindowTVF:
		if t.Kind == "session" || t.Query != nil {
			return t, nil
		}
		rel, err := cat.Lookup(t.Source.Schema, t.Source.Name)
		if err != nil || rel.Kind != catalog.MaterializedView {
			return t, nil
		}
		qual := t.Source.Name
		if t.Alias != "" {
			qual = t.Alias
		}
		src := &sql.TableName{Schema: t.Source.Schema, Name: t.Source.Name, Alias: qual, Pos: t.Source.Pos}
		// the same checks (a time column, sizes) as over a stream
		_, _, spec, err := (&builder{cat: cat}).windowOf(t, relationScope(cat, src, rel))
		if err != nil {
			return nil, err
		}
		return windowSubquery(src, t.TimeCol, spec.Kind, spec.Size, spec.Slide), nil
	}
	return t, nil
}

// windowSubquery is the subquery windowsOverViews puts in place of a
// window of kind ("tumble" or "hop", size and slide in microseconds) over
// src, on its time column tcol.
func windowSubquery(src *sql.TableName, tcol, kind string, size, slide int64) *sql.DerivedTable {
	qual := src.Alias
	interval := func(us int64) sql.Expr {
		return &sql.Literal{Value: types.NewInterval(types.IntervalValue{Micros: us})}
	}
	ts := &sql.ColumnRef{Table: qual, Name: tcol}
	epoch := &sql.Literal{Value: types.Value{K: types.Unknown, S: "1970-01-01 00:00:00+00"}}
	star := sql.SelectItem{Expr: &sql.Star{Table: qual}}
	window := func(start sql.Expr) []sql.SelectItem {
		return []sql.SelectItem{star, {Expr: start, Alias: "window_start"}, {Expr: &sql.Binary{Op: "+", L: start, R: interval(size)}, Alias: "window_end"}}
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
