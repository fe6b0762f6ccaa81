package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// windowAggsAsJoins rewrites aggregate window functions over whole
// partitions in a materialized view's select list (sum(x) OVER
// (PARTITION BY k), count(*) OVER ()) as what they are, each row joined
// with its partition's aggregate: one hidden grouped view per PARTITION
// BY list, over the same FROM and WHERE, LEFT JOINed on the partition
// keys:
//
//	SELECT id, amount / sum(amount) OVER (PARTITION BY cust) AS share FROM orders WHERE amount > 0
//	→ SELECT id, amount / _w1._a1 AS share FROM orders LEFT JOIN
//	    (SELECT cust AS _p1, sum(amount) AS _a1 FROM orders WHERE amount > 0 GROUP BY cust) _w1
//	    ON coalesce(cust, 0) = coalesce(_w1._p1, 0) AND (cust IS NULL) = (_w1._p1 IS NULL)
//	  WHERE amount > 0
//
// PARTITION BY puts NULL keys together, as GROUP BY does; a join's
// equality does not, so each key is joined as the pair (is it NULL, its
// value or its type's zero), never NULL. When a row comes or goes, its
// partition's aggregate changes, and the join takes back every row of
// the partition with the old value and puts it in with the new one.
//
// A running aggregate (OVER (PARTITION BY … ORDER BY x), the default
// frame: the rows up to the current one and its peers) is each row
// joined with the aggregate of a self-join, see runningAggregate. A
// window with another frame is refused; so is one in a grouped or
// DISTINCT query. Ranking and other window functions, and string_agg
// and array_agg, are left as they are (the top-N recognises the ranking
// ones).
func windowAggsAsJoins(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	sel, err := windowFiltersAsCase(sel)
	if err != nil {
		return nil, err
	}
	var calls []*sql.FuncCall
	other := false
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(e sql.Expr) bool {
			if f, ok := e.(*sql.FuncCall); ok && f.Over != nil {
				// string_agg and array_agg list the frame's rows in the
				// window's order, which a grouping of the self-join would
				// not keep: the window operator computes them
				if operators.IsAggregate(f.Name) && f.Name != "string_agg" && f.Name != "array_agg" {
					calls = append(calls, f)
				} else {
					other = true
				}
				return false
			}
			return true
		})
	}
	if len(calls) == 0 || other || len(sel.From) != 1 {
		return sel, nil
	}
	if sel.Distinct || len(sel.DistinctOn) > 0 || aggregates(sel) {
		return nil, pgerror.NotSupported("a window function over a grouped or DISTINCT query in a materialized view").
			WithHint("Group in a subquery, and compute the window function over its rows.")
	}
	if hasSubqueryExpr(sel) {
		return nil, pgerror.NotSupported("a window function with a subquery in a materialized view")
	}
	// Over one stream or view, other frames, and running aggregates over
	// a view, are the window operator's (planWindowView).
	one, view := false, false
	switch t := sel.From[0].(type) {
	case *sql.TableName:
		r, err := cat.Lookup(t.Schema, t.Name)
		one = err == nil && (r.Kind == catalog.Stream || r.Kind == catalog.MaterializedView)
		view = one && r.Kind == catalog.MaterializedView
	case *sql.DerivedTable: // a hidden view
		one, view = true, true
	}
	for _, f := range calls {
		if one && (f.Over.Frame != nil && !runningFrame(f.Over.Frame) || len(f.Over.OrderBy) > 0 && view) {
			return sel, nil
		}
	}
	for _, f := range calls {
		if f.Over.Frame != nil && !runningFrame(f.Over.Frame) || f.Over.Frame != nil && len(f.Over.OrderBy) == 0 {
			return nil, pgerror.NotSupported("a window function with a frame over a join in a materialized view").
				WithHint("Over one stream or view any frame runs; over a join, compute the join in a subquery and the window over its rows.")
		}
	}
	from := sel.From[0]
	star := itemName(from)
	for _, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok && st.Table == "" && star == "" {
			return nil, pgerror.NotSupported("* with a window function over a join in a materialized view").
				WithHint("Name the columns, or qualify the star (t.*).")
		}
	}
	b := &builder{cat: cat}
	_, sc, err := b.buildFrom(sel.From)
	if err != nil {
		return nil, err
	}
	// one hidden view per PARTITION BY list
	type partition struct {
		alias string
		inner *sql.Select
		on    sql.Expr
	}
	var parts []*partition
	byKeys := map[string]*partition{}
	value := map[*sql.FuncCall]sql.Expr{}
	for _, f := range calls {
		keys := make([]string, len(f.Over.PartitionBy))
		for i, e := range f.Over.PartitionBy {
			keys[i] = sql.FormatExpr(e)
		}
		for _, o := range f.Over.OrderBy {
			keys = append(keys, "\x01"+sql.FormatExpr(o.Expr), fmt.Sprint(o.Desc, o.NullsFirst != nil && *o.NullsFirst, o.NullsFirst == nil))
		}
		p := byKeys[strings.Join(keys, "\x00")]
		if p == nil && len(f.Over.OrderBy) > 0 {
			alias := "_w" + strconv.Itoa(len(parts)+1)
			inner, on, err := runningAggregate(cat, sel, sc, f, alias)
			if err != nil {
				return nil, err
			}
			p = &partition{alias: alias, inner: inner, on: on}
			byKeys[strings.Join(keys, "\x00")] = p
			parts = append(parts, p)
		}
		if p == nil {
			p = &partition{alias: "_w" + strconv.Itoa(len(parts)+1), inner: &sql.Select{From: sel.From, Where: sel.Where}}
			typed, err := b.buildAll(&exprCtx{scope: sc, what: "PARTITION BY", noAggs: true}, f.Over.PartitionBy)
			if err != nil {
				return nil, err
			}
			var on sql.Expr = &sql.Literal{Value: types.NewBool(true)} // OVER (): one partition
			for i, e := range f.Over.PartitionBy {
				name := "_p" + strconv.Itoa(i+1)
				p.inner.Items = append(p.inner.Items, sql.SelectItem{Expr: e, Alias: name})
				p.inner.GroupBy = append(p.inner.GroupBy, e)
				zero, ok := zeroOf(typed[i].Type)
				if !ok {
					return nil, pgerror.NotSupported("PARTITION BY a %s in a materialized view", typed[i].Type).
						WithHint("Partition by a number, text, boolean, date, time or interval.")
				}
				eq := nullSafeEq(e, &sql.ColumnRef{Table: p.alias, Name: name}, zero)
				if i == 0 {
					on = eq
				} else {
					on = &sql.Binary{Op: "and", L: on, R: eq}
				}
			}
			p.on = on
			byKeys[strings.Join(keys, "\x00")] = p
			parts = append(parts, p)
		}
		name := "_a" + strconv.Itoa(len(p.inner.Items)+1)
		agg := *f
		agg.Over = nil
		if len(f.Over.OrderBy) > 0 { // over the rows before the current one, the join's right side
			agg.Args = make([]sql.Expr, len(f.Args))
			for i, a := range f.Args {
				agg.Args[i] = requalify(sc, a, runningPeer)
			}
		}
		p.inner.Items = append(p.inner.Items, sql.SelectItem{Expr: &agg, Alias: name})
		value[f] = &sql.ColumnRef{Table: p.alias, Name: name}
	}
	out := *sel
	out.Items = make([]sql.SelectItem, len(sel.Items))
	for i, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok && st.Table == "" {
			out.Items[i] = sql.SelectItem{Expr: &sql.Star{Table: star}}
			continue
		}
		x := sql.Rewrite(it.Expr, func(e sql.Expr) (sql.Expr, bool) {
			if f, ok := e.(*sql.FuncCall); ok && f.Over != nil {
				return value[f], true
			}
			return nil, false
		})
		out.Items[i] = sql.SelectItem{Expr: x, Alias: it.Alias}
		if it.Alias == "" && x != it.Expr {
			out.Items[i].Alias = columnName(it.Expr) // the name the window function gave the column
		}
	}
	for _, p := range parts {
		from = &sql.Join{Kind: "left", Left: from, Right: &sql.DerivedTable{Query: p.inner, Alias: p.alias}, On: p.on}
	}
	out.From = []sql.TableExpr{from}
	return &out, nil
}

// windowFiltersAsCase applies windowFilterAsCase to the window calls of
// sel's select list.
func windowFiltersAsCase(sel *sql.Select) (*sql.Select, error) {
	var err error
	items := make([]sql.SelectItem, len(sel.Items))
	changed := false
	for i, it := range sel.Items {
		items[i] = it
		items[i].Expr = sql.Rewrite(it.Expr, func(x sql.Expr) (sql.Expr, bool) {
			f, ok := x.(*sql.FuncCall)
			if !ok || f.Over == nil || f.Filter == nil || err != nil {
				return nil, false
			}
			var g *sql.FuncCall
			if g, err = windowFilterAsCase(f); err != nil {
				return f, true
			}
			changed = true
			return g, true
		})
	}
	if err != nil || !changed {
		return sel, err
	}
	out := *sel
	out.Items = items
	return &out, nil
}

func coalesced(e, zero sql.Expr) sql.Expr {
	return &sql.FuncCall{Name: "coalesce", Args: []sql.Expr{e, zero}}
}

// zeroOf is a constant of type t, to stand for NULL in a join key that
// also says whether the value was NULL.
func zeroOf(t types.Type) (sql.Expr, bool) {
	text := ""
	switch {
	case t.IsNumeric(), t == types.Interval:
		text = "0"
	case t.IsString(), t == types.Bytea:
	case t == types.Bool:
		text = "false"
	case t.IsTime():
		text = "2000-01-01"
	default:
		return nil, false
	}
	return &sql.Cast{X: &sql.Literal{Value: types.NewText(text)}, Type: t, TypeName: t.String()}, true
}

// The aliases of runningAggregate's self-join: the current row, and the
// rows up to it.
const (
	runningRow  = "_wrow"
	runningPeer = "_wpeer"
)

// runningFrame says whether a frame is the default one of a window with
// ORDER BY: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
func runningFrame(f *sql.WindowFrame) bool {
	return f.Mode == "range" && f.Start.Kind == sql.FrameUnboundedPreceding && f.End.Kind == sql.FrameCurrentRow
}

// runningAggregate is the hidden view of a running aggregate over one
// stream s: the stream joined with itself, each row (runningRow) with
// every row of its partition ordered up to it or as its peer
// (runningPeer), both filtered by the query's WHERE, grouped by the
// row's record (_partition, _offset); and the condition that joins a
// row of s to its group:
//
//	sum(x) OVER (PARTITION BY k ORDER BY t)
//	→ LEFT JOIN (SELECT r._partition AS _rp, r._offset AS _ro, sum(p.x) AS _a3
//	    FROM s r JOIN s p ON (k pair) AND p precedes or is a peer of r by t GROUP BY r._partition, r._offset) _w1
//	  ON s._partition = _w1._rp AND s._offset = _w1._ro
//
// Its state is the stream's rows, twice, and each new row is joined with
// every row of its partition: for partitions of many rows, a cost that
// grows with their square.
func runningAggregate(cat Catalog, sel *sql.Select, sc *scope, f *sql.FuncCall, alias string) (*sql.Select, sql.Expr, error) {
	t, ok := singleTable(sel)
	if ok {
		r, err := cat.Lookup(t.Schema, t.Name)
		if err != nil {
			return nil, nil, err
		}
		ok = r.Kind == catalog.Stream
	}
	if !ok {
		return nil, nil, pgerror.NotSupported("a running aggregate (OVER (… ORDER BY …)) over a join, a view or a subquery in a materialized view").
			WithHint("Over one stream, or over whole partitions (without ORDER BY), it runs.")
	}
	row := func(e sql.Expr) sql.Expr { return requalify(sc, e, runningRow) }
	peer := func(e sql.Expr) sql.Expr { return requalify(sc, e, runningPeer) }
	var on sql.Expr
	and := func(e sql.Expr) {
		if on == nil {
			on = e
		} else {
			on = &sql.Binary{Op: "and", L: on, R: e}
		}
	}
	b := &builder{cat: cat}
	typed, err := b.buildAll(&exprCtx{scope: sc, what: "PARTITION BY", noAggs: true}, f.Over.PartitionBy)
	if err != nil {
		return nil, nil, err
	}
	for i, e := range f.Over.PartitionBy {
		zero, ok := zeroOf(typed[i].Type)
		if !ok {
			return nil, nil, pgerror.NotSupported("PARTITION BY a %s in a materialized view", typed[i].Type).
				WithHint("Partition by a number, text, boolean, date, time or interval.")
		}
		and(nullSafeEq(row(e), peer(e), zero))
	}
	and(upTo(f.Over.OrderBy, peer, row))
	if sel.Where != nil {
		and(peer(sel.Where)) // the rows the window sees passed WHERE
	}
	table := func(a string) *sql.TableName { return &sql.TableName{Schema: t.Schema, Name: t.Name, Alias: a} }
	inner := &sql.Select{
		From: []sql.TableExpr{&sql.Join{Kind: "inner", Left: table(runningRow), Right: table(runningPeer), On: on}},
		Items: []sql.SelectItem{
			{Expr: &sql.ColumnRef{Table: runningRow, Name: "_partition"}, Alias: "_rp"},
			{Expr: &sql.ColumnRef{Table: runningRow, Name: "_offset"}, Alias: "_ro"},
		},
		GroupBy: []sql.Expr{&sql.ColumnRef{Table: runningRow, Name: "_partition"}, &sql.ColumnRef{Table: runningRow, Name: "_offset"}},
	}
	if sel.Where != nil {
		inner.Where = row(sel.Where)
	}
	qual := itemName(sel.From[0])
	join := &sql.Binary{Op: "and",
		L: &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: qual, Name: "_partition"}, R: &sql.ColumnRef{Table: alias, Name: "_rp"}},
		R: &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: qual, Name: "_offset"}, R: &sql.ColumnRef{Table: alias, Name: "_ro"}}}
	return inner, join, nil
}

// upTo says that row p comes before row r in the order of the ORDER BY
// terms, or is its peer (equal by every term, NULLs equal), given each
// term's value at p (at(e)) and at r (rt(e)): p precedes r strictly by the
// first term, or is its peer by it and comes up to r by the rest.
func upTo(terms []sql.OrderItem, at, rt func(sql.Expr) sql.Expr) sql.Expr {
	last := terms[len(terms)-1]
	e := precedes(at(last.Expr), rt(last.Expr), last, false)
	for i := len(terms) - 2; i >= 0; i-- {
		p, r := at(terms[i].Expr), rt(terms[i].Expr)
		peers := &sql.Binary{Op: "or", L: &sql.Binary{Op: "and", L: &sql.IsNull{X: p}, R: &sql.IsNull{X: r}}, R: &sql.Binary{Op: "=", L: p, R: r}}
		e = &sql.Binary{Op: "or", L: precedes(p, r, terms[i], true), R: &sql.Binary{Op: "and", L: peers, R: e}}
	}
	return e
}

// precedes says that row p comes before row r, or unless strict is its
// peer, in the order of one ORDER BY term (NULLs last ascending, first
// descending, unless NULLS FIRST or LAST says otherwise), given its
// values at p and r.
func precedes(p, r sql.Expr, o sql.OrderItem, strict bool) sql.Expr {
	nullsFirst := o.Desc
	if o.NullsFirst != nil {
		nullsFirst = *o.NullsFirst
	}
	cmp := &sql.Binary{Op: "<=", L: p, R: r}
	switch {
	case o.Desc && strict:
		cmp.Op = ">"
	case o.Desc:
		cmp.Op = ">="
	case strict:
		cmp.Op = "<"
	}
	first, second := p, r // the NULL that comes first, and the other
	if !nullsFirst {
		first, second = r, p
	}
	// first is NULL (and, if strict, second is not), or neither is and cmp
	var null sql.Expr = &sql.IsNull{X: first}
	if strict {
		null = &sql.Binary{Op: "and", L: null, R: &sql.IsNull{X: second, Not: true}}
	}
	return &sql.Binary{Op: "or", L: null, R: &sql.Binary{Op: "and", L: &sql.IsNull{X: second, Not: true}, R: cmp}}
}

// requalify names the columns of the FROM item sc in e by alias.
func requalify(sc *scope, e sql.Expr, alias string) sql.Expr {
	return mapColumnRefs(sc, e, func(_ int, r *sql.ColumnRef) sql.Expr {
		return &sql.ColumnRef{Table: alias, Name: r.Name, Pos: r.Pos}
	})
}

// mapColumnRefs replaces each column reference of e that resolves in sc
// (to its column i) by what f makes of it; other references stay.
func mapColumnRefs(sc *scope, e sql.Expr, f func(i int, r *sql.ColumnRef) sql.Expr) sql.Expr {
	return sql.Rewrite(e, func(x sql.Expr) (sql.Expr, bool) {
		r, ok := x.(*sql.ColumnRef)
		if !ok {
			return nil, false
		}
		if i, err := sc.resolve(r.Table, r.Name); err == nil {
			return f(i, r), true
		}
		return r, true
	})
}

// nullSafeEq is a = b where NULL equals NULL, as two equalities of
// never-NULL values a join can key on: coalesce(a, zero) = coalesce(b,
// zero) AND (a IS NULL) = (b IS NULL).
func nullSafeEq(a, b, zero sql.Expr) sql.Expr {
	return &sql.Binary{Op: "and",
		L: &sql.Binary{Op: "=", L: coalesced(a, zero), R: coalesced(b, zero)},
		R: &sql.Binary{Op: "=", L: &sql.IsNull{X: a}, R: &sql.IsNull{X: b}}}
}
