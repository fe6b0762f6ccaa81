package planner

import (
	"slices"
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// scalarsAsJoins rewrites the scalar subqueries of a materialized view's
// WHERE clause and select list that are one row by their shape (an
// aggregate without GROUP BY over relations of their own, no column of
// the outer query) as a LEFT JOIN of the FROM item with each, ON true, the
// subquery's value a column of the joined rows:
//
//	SELECT id FROM o WHERE amt > (SELECT avg(amt) FROM o)
//	→ SELECT id FROM o LEFT JOIN (SELECT avg(amt) AS _v FROM o) _sq1 ON true WHERE amt > _sq1._v
//
// The subquery is a hidden view of the pipeline (see nester); the join
// has no equality, so every row meets its one row on one partition, and
// a change of its value takes back and puts in again every row it
// decides. LEFT JOIN pads a row with NULL when HAVING leaves the
// subquery without its row, as the subquery's value would be NULL.
// Grouped queries get the value as one more GROUP BY term (it is one
// value: the groups stay the same); so does a correlated one in their
// select list whose outer columns are GROUP BY columns (one value per
// group).
//
// A correlated one whose outer references are equalities with columns of
// its own (an aggregate per outer row's key: the row with its group's
// maximum) is its aggregate grouped by those columns, joined on them:
//
//	WHERE amount = (SELECT max(amount) FROM orders x WHERE x.cust = o.cust)
//	→ LEFT JOIN (SELECT x.cust AS _k1, max(amount) AS _v FROM orders x GROUP BY x.cust) _sq1
//	  ON _sq1._k1 = o.cust WHERE amount = _sq1._v
//
// (count's value is coalesced to 0, its value over no rows). Other scalar
// subqueries are left as they are, for the planner to refuse.
func scalarsAsJoins(cat Catalog, sel *sql.Select) *sql.Select {
	if len(sel.From) != 1 {
		return sel
	}
	// An unqualified * must not take the subqueries' columns: it becomes
	// the FROM item's own *.
	star := itemName(sel.From[0])
	if _, join := sel.From[0].(*sql.Join); star == "" && !join { // windows, functions
		return sel
	}
	grouped := aggregates(sel)
	out := *sel
	var joined []*sql.Join // each with its Right and On, Left to be set
	var keys []sql.Expr
	inSelect := false // rewriting the select list, not WHERE
	rewrite := func(s *sql.Subquery) (sql.Expr, bool) {
		alias := "_sq" + strconv.Itoa(len(joined)+1)
		lateral := false
		var on sql.Expr = &sql.Literal{Value: types.NewBool(true)}
		var inner *sql.Select
		var value sql.Expr = &sql.ColumnRef{Table: alias, Name: "_v"}
		if oneRow(cat, s) {
			inner = new(sql.Select)
			*inner = *s.Query.(*sql.Select)
			inner.Items = []sql.SelectItem{{Expr: inner.Items[0].Expr, Alias: "_v"}}
		} else if c, ok := correlated(cat, s); ok && (!(inSelect && grouped) || groupedBy(c.outer, sel.GroupBy)) {
			inner, on = c.grouped(alias)
			if c.count { // count over no rows is 0, not the NULL a LEFT JOIN pads with
				value = &sql.FuncCall{Name: "coalesce", Args: []sql.Expr{value, &sql.Literal{Value: types.NewInt8(0)}}}
			}
		} else if in, j, count, ok := perRow(cat, sel, s, alias); ok && !(inSelect && grouped) {
			inner, on = in, j
			if count {
				value = &sql.FuncCall{Name: "coalesce", Args: []sql.Expr{value, &sql.Literal{Value: types.NewInt8(0)}}}
			}
		} else if in, ok := aggregateRow(s); ok && (!(inSelect && grouped) || readsGroupsOnly(cat, sel, s)) {
			inner, lateral = in, true
		} else {
			return nil, false
		}
		joined = append(joined, &sql.Join{Kind: "left", Right: &sql.DerivedTable{Query: inner, Alias: alias, Lateral: lateral}, On: on})
		keys = append(keys, value)
		return value, true
	}
	out.Where = mapScalars(aggregatesApart(sel.Where), rewrite)
	fromWhere := len(joined)
	inSelect = true
	if !grouped || len(sel.GroupBy) > 0 {
		out.Items = make([]sql.SelectItem, len(sel.Items))
		for i, it := range sel.Items {
			x := mapScalars(aggregatesApart(it.Expr), rewrite)
			out.Items[i] = sql.SelectItem{Expr: x, Alias: it.Alias}
			if out.Items[i].Alias == "" && x != it.Expr {
				out.Items[i].Alias = columnName(it.Expr) // the name the subquery gave the column
			}
		}
	}
	if len(joined) == 0 {
		return sel
	}
	for i, it := range out.Items {
		if st, ok := it.Expr.(*sql.Star); ok && st.Table == "" {
			if star == "" {
				return sel // * over a join: left to the planner
			}
			out.Items[i].Expr = &sql.Star{Table: star}
		}
	}
	from := sel.From[0]
	for _, j := range joined {
		j.Left = from
		from = j
	}
	out.From = []sql.TableExpr{from}
	if grouped {
		// the select list's values are one more group term each
		out.GroupBy = append(append([]sql.Expr(nil), sel.GroupBy...), keys[fromWhere:]...)
	}
	if hasLateralSubquery(out.From) {
		j, err := lateralAsJoins(cat, &out)
		if err != nil {
			return sel // left for the planner to refuse, as a scalar subquery
		}
		return j
	}
	return &out
}

// readsGroupsOnly says whether a scalar subquery in grouped query sel's
// select list is correlated, reads only columns sel groups by, and none in
// an aggregate (which would be sel's aggregate): its value is then one
// per group, one more GROUP BY term.
func readsGroupsOnly(cat Catalog, sel *sql.Select, s *sql.Subquery) bool {
	sc, err := (&builder{cat: cat}).fromScope(sel.From)
	if err != nil {
		return false
	}
	child := &builder{cat: cat, outer: sc}
	if _, _, err := child.buildQuery(s.Query); err != nil || !child.correlated {
		return false
	}
	for _, i := range distinctInts(child.outerCols) {
		grouped := false
		for _, g := range sel.GroupBy {
			if c, ok := g.(*sql.ColumnRef); ok {
				j, err := sc.resolve(c.Table, c.Name)
				grouped = grouped || err == nil && j == i
			}
		}
		if !grouped {
			return false
		}
	}
	// an aggregate over a name the query around has (qualified by it, or
	// not: conservative) might be its aggregate
	q := s.Query.(*sql.Select)
	exprs := []sql.Expr{q.Having}
	for _, it := range q.Items {
		exprs = append(exprs, it.Expr)
	}
	inAggregate := false
	for _, e := range exprs {
		walkExpr(e, func(n sql.Expr) bool {
			if f, ok := n.(*sql.FuncCall); ok && f.Over == nil && operators.IsAggregate(f.Name) {
				walkExpr(f, func(m sql.Expr) bool {
					if c, ok := m.(*sql.ColumnRef); ok {
						if _, err := sc.resolve(c.Table, c.Name); err == nil {
							inAggregate = true
						}
					}
					return !inAggregate
				})
				return false
			}
			return !inAggregate
		})
	}
	return !inAggregate
}

// groupScalarsAsLaterals rewrites a bounded grouped query's correlated
// scalar subqueries in its select list that are an aggregate's one row
// and read only columns it groups by (readsGroupsOnly) as the LEFT JOIN
// LATERAL … ON true with that row, the value one more GROUP BY term, as
// a view plans them (scalarsAsJoins): the bounded planner cannot run a
// correlated subquery over the groups.
//
//	SELECT k, count(*), (SELECT max(o.k) FROM o WHERE o.k < t.k) FROM t GROUP BY k
//	→ SELECT k, count(*), s1._v FROM t LEFT JOIN LATERAL
//	    (SELECT max(o.k) AS _v FROM o WHERE o.k < t.k) s1 ON true GROUP BY k, s1._v
func groupScalarsAsLaterals(cat Catalog, sel *sql.Select) *sql.Select {
	if len(sel.GroupBy) == 0 || len(sel.From) != 1 {
		return sel
	}
	out := *sel
	out.Items = slices.Clone(sel.Items)
	from := sel.From[0]
	n := 0
	for i, it := range sel.Items {
		x := mapScalars(it.Expr, func(s *sql.Subquery) (sql.Expr, bool) {
			in, ok := aggregateRow(s)
			if !ok || !readsGroupsOnly(cat, sel, s) {
				return nil, false
			}
			n++
			alias := lateralPrefix + "s" + strconv.Itoa(n)
			from = &sql.Join{Kind: "left", Left: from, Right: &sql.DerivedTable{Query: in, Alias: alias, Lateral: true},
				On: &sql.Literal{Value: types.NewBool(true)}}
			v := &sql.ColumnRef{Table: alias, Name: "_v"}
			out.GroupBy = append(slices.Clone(out.GroupBy), v)
			return v, true
		})
		if x != it.Expr && it.Alias == "" {
			out.Items[i].Alias = columnName(it.Expr) // the name the subquery gave the column
		}
		out.Items[i].Expr = x
	}
	if n == 0 {
		return sel
	}
	out.From = []sql.TableExpr{from}
	return &out
}

// aggregateRow is a correlated scalar subquery that is one row by its
// shape (one item over an aggregate without GROUP BY, and no LIMIT) as
// the LATERAL subquery that is its one row, its value the column _v: a
// LEFT JOIN LATERAL … ON true with it is the scalar subquery's value for
// each row, which lateralAsJoins rewrites as a join (over the
// subquery's domain where it reads the outer row otherwise than by
// equalities: (SELECT count(*) + t.qty FROM u WHERE u.ts < t.ts)).
func aggregateRow(s *sql.Subquery) (*sql.Select, bool) {
	q, ok := s.Query.(*sql.Select)
	if !ok || s.Exists || s.Array || len(q.Items) != 1 || len(q.GroupBy) > 0 || !anyAggregate(q.Items) ||
		len(q.From) == 0 || q.Limit != nil || q.Offset != nil {
		return nil, false
	}
	if _, star := q.Items[0].Expr.(*sql.Star); star {
		return nil, false
	}
	out := *q
	out.Items = []sql.SelectItem{{Expr: q.Items[0].Expr, Alias: "_v"}}
	return &out, true
}

// groupedBy says whether each outer expression a correlated subquery
// reads is a column the query groups by (so that the subquery's value is
// one per group: one more GROUP BY term, as an uncorrelated one's).
func groupedBy(outer, groupBy []sql.Expr) bool {
	for _, o := range outer {
		r, ok := o.(*sql.ColumnRef)
		if !ok {
			return false
		}
		found := false
		for _, g := range groupBy {
			if gr, ok := g.(*sql.ColumnRef); ok && gr.Name == r.Name && (gr.Table == r.Table || gr.Table == "" || r.Table == "") {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// oneRow says whether a scalar subquery is one row by its shape and reads
// nothing of the outer query: an aggregate without GROUP BY that the
// bounded planner plans on its own.
func oneRow(cat Catalog, s *sql.Subquery) bool {
	inner, ok := aggregateRow(s)
	if !ok {
		return false
	}
	_, _, err := (&builder{cat: cat}).buildSelect(inner)
	return err == nil // an outer column is not found there
}

// mapScalars replaces the scalar subqueries of e that f takes (f returns
// false to leave one), without going into subqueries, aggregates or
// window functions (their insides are another query level's).
func mapScalars(e sql.Expr, f func(*sql.Subquery) (sql.Expr, bool)) sql.Expr {
	return sql.Rewrite(e, func(e sql.Expr) (sql.Expr, bool) {
		switch x := e.(type) {
		case *sql.Subquery:
			if y, ok := f(x); ok {
				return y, true
			}
			return x, true
		case *sql.FuncCall:
			if x.Over != nil || x.Filter != nil || len(x.OrderBy) > 0 {
				return x, true
			}
		}
		return nil, false
	})
}

// correlation is a scalar subquery correlated by equalities: its
// aggregate, the FROM and the WHERE conjuncts of its own, and the pairs
// of an inner and an outer expression that must be equal.
type correlation struct {
	sel          *sql.Select
	agg          sql.Expr
	where        []sql.Expr
	inner, outer []sql.Expr
	count        bool
}

// grouped is the subquery as a derived table of the aggregate per
// correlation key, and the join's ON.
func (c *correlation) grouped(alias string) (*sql.Select, sql.Expr) {
	d := &sql.Select{From: c.sel.From, Where: andAll(c.where)}
	var on []sql.Expr
	for i, k := range c.inner {
		name := "_k" + strconv.Itoa(i+1)
		d.Items = append(d.Items, sql.SelectItem{Expr: k, Alias: name})
		d.GroupBy = append(d.GroupBy, k)
		on = append(on, &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: alias, Name: name}, R: c.outer[i]})
	}
	d.Items = append(d.Items, sql.SelectItem{Expr: c.agg, Alias: "_v"})
	return d, andAll(on)
}

// correlated recognises a scalar subquery that is one aggregate call
// over relations of its own, correlated with the outer query only by
// equalities of its WHERE between one of its expressions and an outer one.
func correlated(cat Catalog, s *sql.Subquery) (*correlation, bool) {
	inner, ok := s.Query.(*sql.Select)
	if !ok || s.Exists || s.Array || len(inner.Items) != 1 || len(inner.GroupBy) > 0 || inner.Having != nil ||
		len(inner.From) == 0 || inner.Limit != nil || inner.Offset != nil || inner.Distinct || len(inner.OrderBy) > 0 {
		return nil, false
	}
	agg, ok := inner.Items[0].Expr.(*sql.FuncCall)
	if !ok || agg.Over != nil || !operators.IsAggregate(agg.Name) {
		return nil, false
	}
	_, sc, err := (&builder{cat: cat}).buildFrom(inner.From)
	if err != nil {
		return nil, false
	}
	// own says whether an expression reads only the subquery's columns
	// (true) or only outer ones (false); mixed is not ok.
	own := func(e sql.Expr) (mine, ok bool) {
		ins, outs := 0, 0
		walkExpr(e, func(n sql.Expr) bool {
			switch n := n.(type) {
			case *sql.Subquery:
				outs, ins = 1, 1 // cannot be told
				return false
			case *sql.ColumnRef:
				if _, err := sc.resolve(n.Table, n.Name); err == nil {
					ins++
				} else {
					outs++
				}
			}
			return true
		})
		return outs == 0, ins == 0 || outs == 0
	}
	for _, a := range append(append([]sql.Expr(nil), agg.Args...), agg.Filter) {
		if a != nil {
			if mine, ok := own(a); !mine || !ok {
				return nil, false
			}
		}
	}
	c := &correlation{sel: inner, agg: agg, count: countsRows(agg.Name)}
	for _, w := range conjuncts(inner.Where) {
		if mine, ok := own(w); ok && mine {
			c.where = append(c.where, w)
			continue
		}
		bin, isEq := w.(*sql.Binary)
		if !isEq || bin.Op != "=" {
			return nil, false
		}
		lMine, lok := own(bin.L)
		rMine, rok := own(bin.R)
		switch {
		case !lok || !rok || lMine == rMine:
			return nil, false
		case lMine:
			c.inner, c.outer = append(c.inner, bin.L), append(c.outer, bin.R)
		default:
			c.inner, c.outer = append(c.inner, bin.R), append(c.outer, bin.L)
		}
	}
	return c, len(c.inner) > 0
}

// correlatedRow is the alias of the outer stream's rows in perRow's join.
const correlatedRow = "_cr"

// perRow plans a scalar subquery of one aggregate correlated with a
// stream's rows otherwise than by equalities (WHERE u.k = t.k AND u.w >
// t.v) as what it is per outer row: the stream joined with the
// subquery's relation on the subquery's WHERE, grouped by each stream
// row's record, whose aggregate the row is LEFT JOINed back with:
//
//	SELECT id FROM t WHERE v > (SELECT avg(w) FROM u WHERE u.k = t.k AND u.w > t.v)
//	→ SELECT id FROM t LEFT JOIN (SELECT _cr._partition AS _rp, _cr._offset AS _ro, avg(w) AS _v
//	    FROM t _cr JOIN u ON u.k = _cr.k AND u.w > _cr.v GROUP BY _cr._partition, _cr._offset) _sq1
//	  ON t._partition = _sq1._rp AND t._offset = _sq1._ro WHERE v > _sq1._v
//
// The join keys on the WHERE's equalities (a cross join of both inputs
// without any: every pair is tried). A row without partners gets NULL
// (count: 0). ok is false for any other subquery, or an outer query not
// over one stream.
func perRow(cat Catalog, outer *sql.Select, s *sql.Subquery, alias string) (inner *sql.Select, on sql.Expr, count, ok bool) {
	t, single := singleTable(outer)
	if !single || s.Exists || s.Array {
		return nil, nil, false, false
	}
	if rel, err := cat.Lookup(t.Schema, t.Name); err != nil || rel.Kind != catalog.Stream {
		return nil, nil, false, false
	}
	q, isSel := s.Query.(*sql.Select)
	if !isSel || len(q.Items) != 1 || len(q.GroupBy) > 0 || q.Having != nil || len(q.From) != 1 || q.Where == nil ||
		q.Limit != nil || q.Offset != nil || q.Distinct || len(q.OrderBy) > 0 {
		return nil, nil, false, false
	}
	agg, isAgg := q.Items[0].Expr.(*sql.FuncCall)
	if !isAgg || agg.Over != nil || !operators.IsAggregate(agg.Name) {
		return nil, nil, false, false
	}
	if _, isTable := q.From[0].(*sql.TableName); !isTable {
		return nil, nil, false, false
	}
	b := &builder{cat: cat}
	_, own, err := b.buildFrom(q.From)
	if err != nil {
		return nil, nil, false, false
	}
	_, outerSc, err := b.buildFrom(outer.From)
	if err != nil {
		return nil, nil, false, false
	}
	// The subquery's references to the outer row, which its own columns
	// hide, read the joined stream's row instead.
	reads := false
	mine := itemName(q.From[0])
	toRow := func(e sql.Expr) sql.Expr {
		return sql.Rewrite(e, func(x sql.Expr) (sql.Expr, bool) {
			switch r := x.(type) {
			case *sql.Subquery, *sql.In, *sql.Quantified:
				return x, true // another level's
			case *sql.ColumnRef:
				if _, err := own.resolve(r.Table, r.Name); err == nil {
					// qualified: the stream's row has columns of its name
					return &sql.ColumnRef{Table: mine, Name: r.Name, Pos: r.Pos}, true
				}
				if _, err := outerSc.resolve(r.Table, r.Name); err == nil {
					reads = true
					return &sql.ColumnRef{Table: correlatedRow, Name: r.Name, Pos: r.Pos}, true
				}
			}
			return x, false
		})
	}
	call := *agg
	call.Args = make([]sql.Expr, len(agg.Args))
	for i, a := range agg.Args {
		call.Args[i] = toRow(a)
	}
	if agg.Filter != nil {
		call.Filter = toRow(agg.Filter)
	}
	call.OrderBy = make([]sql.OrderItem, len(agg.OrderBy))
	for i, o := range agg.OrderBy {
		o.Expr = toRow(o.Expr)
		call.OrderBy[i] = o
	}
	if reads {
		return nil, nil, false, false // an aggregate of the outer row's values
	}
	where := toRow(q.Where)
	if !reads || tableNamed(q.From[0], correlatedRow) {
		return nil, nil, false, false
	}
	row := &sql.TableName{Schema: t.Schema, Name: t.Name, Alias: correlatedRow}
	ref := func(name string) sql.Expr { return &sql.ColumnRef{Table: correlatedRow, Name: name} }
	inner = &sql.Select{
		From: []sql.TableExpr{&sql.Join{Kind: "inner", Left: row, Right: q.From[0], On: where}},
		Items: []sql.SelectItem{
			{Expr: ref("_partition"), Alias: "_rp"},
			{Expr: ref("_offset"), Alias: "_ro"},
			{Expr: &call, Alias: "_v"},
		},
		GroupBy: []sql.Expr{ref("_partition"), ref("_offset")},
	}
	qual := itemName(outer.From[0])
	on = &sql.Binary{Op: "and",
		L: &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: qual, Name: "_partition"}, R: &sql.ColumnRef{Table: alias, Name: "_rp"}},
		R: &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: qual, Name: "_offset"}, R: &sql.ColumnRef{Table: alias, Name: "_ro"}}}
	return inner, on, countsRows(agg.Name), true
}

// countsRows says whether an aggregate over no rows is 0 (count,
// regr_count), not NULL: a LEFT JOINed subquery's missing row means 0.
func countsRows(name string) bool { return name == "count" || name == "regr_count" }

// aggregatesApart rewrites each scalar subquery of e whose value is an
// expression of several aggregates, or of one aggregate and constants,
// (SELECT avg(w) / 10 FROM b WHERE b.k = a.k), as that expression of
// one subquery per aggregate, ((SELECT avg(w) FROM b WHERE b.k = a.k) /
// 10): an aggregate without GROUP BY has one row, so each is that row's
// value, and each is then a subquery scalarsAsJoins plans. Only a value
// that reads no column outside its aggregates is rewritten.
func aggregatesApart(e sql.Expr) sql.Expr {
	return mapScalars(e, func(s *sql.Subquery) (sql.Expr, bool) {
		inner, ok := s.Query.(*sql.Select)
		if !ok || s.Exists || s.Array || len(inner.Items) != 1 || len(inner.GroupBy) > 0 || inner.Having != nil ||
			len(inner.From) == 0 || inner.Limit != nil || inner.Offset != nil || inner.Distinct || len(inner.DistinctOn) > 0 || len(inner.OrderBy) > 0 {
			return nil, false
		}
		item := inner.Items[0].Expr
		if f, ok := item.(*sql.FuncCall); ok && operators.IsAggregate(f.Name) || !hasAggregate(item) {
			return nil, false // one aggregate, or none
		}
		apart := true
		walkExpr(item, func(n sql.Expr) bool {
			switch x := n.(type) {
			case *sql.ColumnRef, *sql.Subquery, *sql.Star:
				apart = false
			case *sql.FuncCall:
				if x.Over != nil {
					apart = false
				}
				return !operators.IsAggregate(x.Name)
			}
			return apart
		})
		if !apart {
			return nil, false
		}
		return sql.Rewrite(item, func(n sql.Expr) (sql.Expr, bool) {
			if f, ok := n.(*sql.FuncCall); ok && operators.IsAggregate(f.Name) {
				one := *inner
				one.Items = []sql.SelectItem{{Expr: f}}
				return &sql.Subquery{Query: &one}, true
			}
			return nil, false
		}), true
	})
}
