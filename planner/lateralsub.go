package planner

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// LATERAL subqueries: FROM a, LATERAL (SELECT … WHERE x = a.k) t, and
// [LEFT] JOIN LATERAL (…) t ON …. Those correlated by equalities are
// rewritten into joins (lateralRewrite), in every query; a bounded query
// runs the others for each row of the items before it (plan.Apply), as
// PostgreSQL does, and one that reads none of them is a plain derived
// table, joined.

// lateralSubqueryJoin checks the join a LATERAL subquery is the right
// side of, for what the planner does not take.
func lateralSubqueryJoin(j *sql.Join) error {
	if len(j.Using) > 0 {
		return pgerror.NotSupported("JOIN LATERAL … USING").WithHint("Write the condition with ON.")
	}
	return nil
}

// lateralSubquery plans LATERAL (query) t after the FROM items planned
// as ln (scope ls), joined by kind on cond (nil: none).
func (b *builder) lateralSubquery(ln plan.Node, ls *scope, t *sql.DerivedTable, kind string, cond sql.Expr) (plan.Node, *scope, error) {
	child := &builder{cat: b.cat, params: b.params, outer: ls, applyLateral: b.applyLateral}
	rn, sc, err := child.buildQuery(t.Query)
	b.params = child.params
	if err != nil {
		return nil, nil, err
	}
	rn, rs, err := derivedScope(t, rn, sc)
	if err != nil {
		return nil, nil, err
	}
	if kind == "" || kind == "cross" {
		kind = "inner"
	}
	var conds []sql.Expr
	if cond != nil && !isTrue(cond) {
		conds = conjuncts(cond)
	}
	if !child.correlated {
		return b.joinNode(kind, ln, ls, rn, rs, conds)
	}
	if kind != "inner" && kind != "left" {
		// the subquery's rows depend on the left row: there are none
		// for a right row alone
		return nil, nil, pgerror.New(pgerror.InvalidColumnReference, "invalid reference to FROM-clause entry for table %q", ls.cols[child.outerCols[0]].table).
			WithDetail("The combining JOIN type must be INNER or LEFT for a LATERAL reference.")
	}
	b.volatile = b.volatile || child.volatile
	sq := plan.Subquery{Plan: rn, Correlated: true}
	if !child.volatile { // a volatile one runs again for every row
		sq.Outer = distinctInts(child.outerCols)
	}
	joined := &scope{cols: append(append([]scopeCol(nil), ls.cols...), rs.cols...)}
	apply := &plan.Apply{Kind: kind, Left: ln, Right: sq, LeftWidth: len(ls.cols), RightWidth: len(rs.cols)}
	if len(conds) > 0 {
		ctx := &exprCtx{scope: joined, what: "JOIN", noAggs: true}
		var on []*expr.Expr
		for _, c := range conds {
			x, err := b.build(ctx, c)
			if err != nil {
				return nil, nil, err
			}
			on = append(on, b.inferParam(x, types.Bool))
		}
		if apply.On, err = expr.And(on...); err != nil {
			return nil, nil, err
		}
	}
	return apply, joined, nil
}

// lateralPrefix begins the names of the columns the rewrite of a
// LATERAL subquery adds: its keys (lateralPrefix+"k1", …), its items'
// (lateralPrefix+"c1", …), the columns its other conditions and its
// computed columns read (lateralPrefix+"e1", …), a marker of its rows
// ("m", when it has computed columns), its row number ("rn"), and its
// domain's columns ("d1", …, in a derived table domainAlias).
const lateralPrefix = "__fvsql_lat_"

// lateralAsJoins rewrites the LATERAL subqueries in a continuous query's
// FROM clause as joins, for the pipeline planners, which know joins,
// groups and top-N but not a query run again per row. A subquery whose
// references to the items before it are equalities of its WHERE clause
// between one of its expressions and one of theirs is the same query
// over every row, its rows put out with those expressions and joined on
// them:
//
//	FROM c, LATERAL (SELECT amount FROM o WHERE o.cust = c.id AND amount > 5) x
//	→ FROM c, (SELECT amount, o.cust AS k1 FROM o WHERE amount > 5) x WHERE x.k1 = c.id
//
// With GROUP BY the expressions are grouped by too (one row's groups are
// those of its value); DISTINCT takes them in; ORDER BY … LIMIT n keeps
// each value's first n rows (a row number over a partition by them); an
// aggregate without GROUP BY, one row for every left row, is a LEFT JOIN
// with its groups by them (of the items before it joined into one first:
// foldItems), where a left row without one takes each column's value
// over no rows (count 0, the others NULL: lateralPad).
// A subquery of rows only (no grouping, DISTINCT or LIMIT) may read the
// items before it in any condition of its WHERE, which becomes the
// join's, over the columns of its own it reads; its select list, and
// that of one that groups or aggregates outside its aggregates, may read
// them too: the query around computes those columns, over the
// subquery's columns and aggregates. One that groups, aggregates, takes
// DISTINCT or a LIMIT and reads them otherwise (in a condition other
// than an equality, in an aggregate) runs over the distinct values of
// the columns it reads (its domain, lateralDomain), and is joined on
// those. LEFT JOIN LATERAL … ON cond is a left join on those conditions
// and cond. A subquery reading none of the items before it is a plain
// derived table. Anything else is 0A000 naming the shape. A SELECT * or
// x.* over the subquery takes its own columns, not the ones added.
func lateralAsJoins(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	return lateralRewrite(cat, sel, false)
}

// lateralRewrite is lateralAsJoins; with soft, for a bounded query, it
// leaves the LATERAL subqueries it cannot rewrite as they are (to run per
// row) instead of failing.
func lateralRewrite(cat Catalog, sel *sql.Select, soft bool) (*sql.Select, error) {
	if !hasLateralSubquery(sel.From) {
		return sel, nil
	}
	full, err := (&builder{cat: cat}).fromScope(sel.From)
	if err != nil {
		if soft {
			return sel, nil
		}
		return nil, err
	}
	out := *sel
	if out.Items, err = expandStars(full, sel.Items); err != nil {
		return nil, err
	}
	var pads []lateralPad
	folded := 0 // items of sel.From folded into out.From[0], a LEFT JOIN each
	out.From = slices.Clone(sel.From)
	for i := 0; i < len(out.From); i++ {
		t := out.From[i]
		d, ok := t.(*sql.DerivedTable)
		if !ok || !d.Lateral {
			if out.From[i], err = lateralInJoins(cat, t, &pads, soft); err != nil {
				return nil, err
			}
			continue
		}
		if i == 0 && soft {
			continue
		}
		if i == 0 { // nothing before it to read
			nd := *d
			nd.Lateral = false
			if out.From[i], err = derivedColumnsFrom(cat, &nd); err != nil {
				return nil, err
			}
			continue
		}
		before := sel.From[:i+folded] // the items before it, as written
		left, err := (&builder{cat: cat}).fromScope(before)
		if err != nil {
			return nil, err
		}
		// the query's conditions on the items before it narrow the domain
		var leftWhere []sql.Expr
		for _, c := range conjuncts(sel.Where) {
			if !hasSubqueryIn(c) && readsOnly(left, c) {
				leftWhere = append(leftWhere, c)
			}
		}
		nd, on, pad, err := decorrelate(cat, left, before, andAll(leftWhere), d, false)
		if err != nil {
			if soft {
				continue
			}
			return nil, err
		}
		if pad != nil && pad.oneRow {
			// one row for every row before it: a LEFT JOIN of the one
			// item before it, the items before it joined into one first
			if i != 1 {
				fold, where, ok := foldItems(cat, out.From[:i], out.Where)
				if !ok && soft {
					continue
				}
				if !ok {
					return nil, pgerror.NotSupported("a LATERAL subquery that aggregates without GROUP BY after more than one FROM item in a continuous query").
						WithHint("Join the items before it in a subquery, or use JOIN … LEFT JOIN LATERAL (…) ON true.")
				}
				out.From = append([]sql.TableExpr{fold}, out.From[i:]...)
				out.Where = where
				folded += i - 1
				i = 1
			}
			out.From = append([]sql.TableExpr{&sql.Join{Kind: "left", Left: out.From[0], Right: nd, On: on}}, out.From[2:]...)
			pads = append(pads, *pad)
			i--
			folded++
			continue
		}
		if pad != nil {
			pads = append(pads, *pad)
		}
		out.From[i] = nd
		if on != nil {
			out.Where = andAll(append([]sql.Expr{on}, conjuncts(out.Where)...))
		}
	}
	// the last first: a later subquery's columns computed after the join
	// may read an earlier one's, which the earlier one's pad then takes
	for k := len(pads) - 1; k >= 0; k-- {
		p := pads[k]
		unqualified := func(name string) bool {
			i, err := full.resolve("", name)
			return err == nil && full.cols[i].table == p.alias
		}
		fix := func(e sql.Expr) sql.Expr { return p.substitute(e, unqualified) }
		out.Items = slices.Clone(out.Items)
		for i, it := range out.Items {
			if out.Items[i].Expr = fix(it.Expr); it.Alias == "" && out.Items[i].Expr != it.Expr {
				out.Items[i].Alias = outputName(it) // x.n is still named n
			}
		}
		out.Where, out.Having = fix(out.Where), fix(out.Having)
		out.GroupBy = slices.Clone(out.GroupBy)
		for i := range out.GroupBy {
			out.GroupBy[i] = fix(out.GroupBy[i])
		}
		out.OrderBy = slices.Clone(out.OrderBy)
		for i := range out.OrderBy {
			out.OrderBy[i].Expr = fix(out.OrderBy[i].Expr)
		}
		for i := range out.From {
			out.From[i] = joinConditions(out.From[i], fix)
		}
	}
	return &out, nil
}

// foldItems joins FROM items into one, left to right, each join ON the
// conjuncts of where that its items are the first to read (a cross join
// without any), and returns it with the conjuncts left. ok is false when
// the items cannot be planned.
func foldItems(cat Catalog, items []sql.TableExpr, where sql.Expr) (_ sql.TableExpr, rest sql.Expr, ok bool) {
	conds := conjuncts(where)
	placed := make([]bool, len(conds))
	fold := items[0]
	for k := 1; k < len(items); k++ {
		sc, err := (&builder{cat: cat}).fromScope(items[:k+1])
		if err != nil {
			return nil, nil, false
		}
		var on []sql.Expr
		for ci, c := range conds {
			if placed[ci] || hasSubqueryIn(c) {
				continue
			}
			if readsOnly(sc, c) {
				on, placed[ci] = append(on, c), true
			}
		}
		j := &sql.Join{Kind: "cross", Left: fold, Right: items[k]}
		if len(on) > 0 {
			j.Kind, j.On = "inner", andAll(on)
		}
		fold = j
	}
	var left []sql.Expr
	for ci, c := range conds {
		if !placed[ci] {
			left = append(left, c)
		}
	}
	return fold, andAll(left), true
}

// readsOnly says whether every column e reads is one of sc's.
func readsOnly(sc *scope, e sql.Expr) bool {
	reads := true
	walkExpr(e, func(n sql.Expr) bool {
		if col, isCol := n.(*sql.ColumnRef); isCol {
			_, err := sc.resolve(col.Table, col.Name)
			reads = reads && err == nil
		}
		return reads
	})
	return reads
}

// lateralPad is what the query around a rewritten LATERAL subquery
// (alias) reads in place of some of its columns (decorrelate): a column
// computed from the items before it, as its expression over them and the
// subquery's columns; when it aggregates without GROUP BY (oneRow, a LEFT
// JOIN), each column, or its value over no rows where the left row has no
// group.
type lateralPad struct {
	alias   string
	replace map[string]sql.Expr
	oneRow  bool
}

// substitute puts p's replacements in place of the references to its
// columns in e; unqualified says whether an unqualified name is one of
// them.
func (p *lateralPad) substitute(e sql.Expr, unqualified func(string) bool) sql.Expr {
	return sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
		c, ok := n.(*sql.ColumnRef)
		if !ok || p.replace[c.Name] == nil || !(c.Table == p.alias || c.Table == "" && unqualified(c.Name)) {
			return nil, false
		}
		return p.replace[c.Name], true
	})
}

// joinConditions returns t with fix applied to the ON conditions of its
// joins.
func joinConditions(t sql.TableExpr, fix func(sql.Expr) sql.Expr) sql.TableExpr {
	j, ok := t.(*sql.Join)
	if !ok {
		return t
	}
	out := *j
	out.Left, out.Right = joinConditions(j.Left, fix), joinConditions(j.Right, fix)
	out.On = fix(j.On)
	return &out
}

// hasLateralSubquery says whether a FROM list holds a LATERAL subquery,
// as an item or in a join.
func hasLateralSubquery(from []sql.TableExpr) bool {
	for _, t := range from {
		switch t := t.(type) {
		case *sql.DerivedTable:
			if t.Lateral {
				return true
			}
		case *sql.Join:
			if hasLateralSubquery([]sql.TableExpr{t.Left, t.Right}) {
				return true
			}
		}
	}
	return false
}

// lateralInJoins rewrites the LATERAL subqueries on the right of the
// joins in t.
func lateralInJoins(cat Catalog, t sql.TableExpr, pads *[]lateralPad, soft bool) (sql.TableExpr, error) {
	j, ok := t.(*sql.Join)
	if !ok || !hasLateralSubquery([]sql.TableExpr{j}) {
		return t, nil
	}
	out := *j
	var err error
	if out.Left, err = lateralInJoins(cat, j.Left, pads, soft); err != nil {
		return nil, err
	}
	d, ok := j.Right.(*sql.DerivedTable)
	if !ok || !d.Lateral {
		if out.Right, err = lateralInJoins(cat, j.Right, pads, soft); err != nil {
			return nil, err
		}
		return &out, nil
	}
	if err := lateralSubqueryJoin(j); err != nil {
		return nil, err
	}
	left, err := (&builder{cat: cat}).fromScope([]sql.TableExpr{j.Left})
	if err != nil {
		return nil, err
	}
	nd, on, pad, err := decorrelate(cat, left, []sql.TableExpr{j.Left}, nil, d, j.Kind == "right" || j.Kind == "full")
	if err != nil {
		if soft { // this one runs per row
			return &out, nil
		}
		return nil, err
	}
	oneRow := pad != nil && pad.oneRow
	if oneRow && j.On != nil && !isTrue(j.On) && soft {
		return &out, nil
	}
	out.Right = nd
	if pad != nil {
		*pads = append(*pads, *pad)
	}
	if oneRow {
		// one row for every left row: a LEFT JOIN on the equalities
		if j.On != nil && !isTrue(j.On) {
			return nil, pgerror.NotSupported("JOIN LATERAL … ON a condition over a subquery that aggregates without GROUP BY in a continuous query").
				WithHint("Join ON true and filter in WHERE.")
		}
		out.Kind, out.On = "left", on
		return &out, nil
	}
	if j.On != nil && !isTrue(j.On) {
		on = andAll(append(conjuncts(on), j.On))
	}
	if on != nil {
		out.On = on
		if out.Kind == "cross" || out.Kind == "" {
			out.Kind = "inner"
		}
	} else if out.Kind == "left" || out.Kind == "inner" {
		out.On = &sql.Literal{Value: types.NewBool(true)}
	}
	return &out, nil
}

// decorrelate rewrites LATERAL subquery d, after FROM items leftFrom of
// scope left, as a derived table and the condition joining it to them
// (nil: none, it reads none of them). noRefs: the join cannot take a
// reference to the left (RIGHT or FULL JOIN). What reads the left other
// than through equalities it tries once more over the subquery's domain
// (lateralDomain; leftFrom nil: not again).
func decorrelate(cat Catalog, left *scope, leftFrom []sql.TableExpr, leftWhere sql.Expr, d *sql.DerivedTable, noRefs bool) (sql.TableExpr, sql.Expr, *lateralPad, error) {
	plain := *d
	plain.Lateral = false
	// What it reads: planned as the bounded planner plans it. (Over its
	// domain, leftFrom nil, it reads the domain's columns alone where
	// the left's were, which a grouped query need not group by.)
	child := &builder{cat: cat, outer: left}
	if _, _, err := child.buildQuery(d.Query); err != nil && leftFrom != nil {
		return nil, nil, nil, err
	}
	if !child.correlated && leftFrom != nil {
		t, err := derivedColumnsFrom(cat, &plain)
		return t, nil, nil, err
	}
	if noRefs {
		return nil, nil, nil, pgerror.New(pgerror.InvalidColumnReference, "invalid reference to FROM-clause entry for table %q", left.cols[child.outerCols[0]].table).
			WithDetail("The combining JOIN type must be INNER or LEFT for a LATERAL reference.")
	}
	refuse := func(what string) *pgerror.Error {
		return pgerror.NotSupported("a LATERAL subquery %s in a continuous query", what).
			WithHint("A continuous query's LATERAL subquery may read a column of the FROM items before it in the conditions of its WHERE clause, and, when a comparison there reads that column (WHERE o.customer = c.id, o.amount > c.limit), in its select list, HAVING and ORDER BY too. Its bounded SELECT runs any.")
	}
	q, ok := d.Query.(*sql.Select)
	if !ok {
		return nil, nil, nil, refuse("that is a UNION, INTERSECT or EXCEPT")
	}
	if len(q.DistinctOn) > 0 {
		return nil, nil, nil, refuse("with DISTINCT ON")
	}
	if hasWindowCall(q) {
		return nil, nil, nil, refuse("with window functions")
	}
	grouped := len(q.GroupBy) > 0
	oneRow := !grouped && aggregates(q) // one row per left row, over no rows too
	if oneRow && q.Having != nil {
		return nil, nil, nil, refuse("that aggregates with HAVING and without GROUP BY")
	}
	limited := q.Limit != nil || q.Offset != nil
	if oneRow && limited {
		return nil, nil, nil, refuse("that aggregates without GROUP BY and has LIMIT or OFFSET")
	}
	if limited && len(q.OrderBy) == 0 {
		return nil, nil, nil, refuse("with LIMIT but no ORDER BY (which rows it keeps is not defined)")
	}
	if limited && q.Distinct {
		return nil, nil, nil, refuse("with DISTINCT and LIMIT")
	}
	_, inner, err := (&builder{cat: cat}).buildFrom(q.From)
	if err != nil {
		return nil, nil, nil, err
	}
	// viaDomain decorrelates the subquery over its domain, or refuses it
	viaDomain := func(what string) (sql.TableExpr, sql.Expr, *lateralPad, error) {
		nd, back, ok := lateralDomain(left, inner, child.outerCols, leftFrom, leftWhere, d, q)
		if !ok {
			return nil, nil, nil, refuse(what)
		}
		t, on, pad, err := decorrelate(cat, left, nil, nil, nd, noRefs)
		if err != nil {
			return nil, nil, nil, err
		}
		if pad != nil && pad.oneRow { // over no rows: the left row's values
			for k, e := range pad.replace {
				pad.replace[k] = sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
					c, isCol := n.(*sql.ColumnRef)
					if !isCol || c.Table != domainAlias || back[c.Name] == nil {
						return nil, false
					}
					return back[c.Name], true
				})
			}
		}
		return t, on, pad, nil
	}
	// own says whether e reads the subquery's own columns only (true),
	// the left items' only (false), or both or cannot be told (ok false).
	own := func(e sql.Expr) (mine, ok bool) {
		ins, outs := 0, 0
		walkExpr(e, func(n sql.Expr) bool {
			switch n := n.(type) {
			case *sql.Subquery, *sql.Quantified:
				ins, outs = 1, 1
				return false
			case *sql.In:
				if n.Sub != nil {
					ins, outs = 1, 1
					return false
				}
			case *sql.ColumnRef:
				if _, err := inner.resolve(n.Table, n.Name); err == nil {
					ins++
				} else if _, err := left.resolve(n.Table, n.Name); err == nil {
					outs++
				} else {
					ins, outs = 1, 1
				}
			}
			return true
		})
		return outs == 0, ins == 0 || outs == 0
	}
	// opaque: e holds a subquery, or a column neither side has
	opaque := func(e sql.Expr) bool {
		found := false
		walkExpr(e, func(n sql.Expr) bool {
			switch n := n.(type) {
			case *sql.Subquery, *sql.Quantified:
				found = true
			case *sql.In:
				found = found || n.Sub != nil
			case *sql.ColumnRef:
				_, ierr := inner.resolve(n.Table, n.Name)
				_, oerr := left.resolve(n.Table, n.Name)
				found = found || ierr != nil && oerr != nil
			}
			return !found
		})
		return found
	}
	// A plain subquery's other conditions on the items before it
	// (lifted) are the join's: each of its own columns they read is one
	// more of its columns.
	spj := !grouped && !oneRow && !limited && !q.Distinct
	var keys, outers, rest, lifted []sql.Expr
	for _, w := range conjuncts(q.Where) {
		if bin, isEq := w.(*sql.Binary); isEq && bin.Op == "=" {
			lm, lok := own(bin.L)
			rm, rok := own(bin.R)
			if lok && rok && lm != rm && hasColumn(bin.L) && hasColumn(bin.R) {
				k, o := bin.L, bin.R
				if !lm {
					k, o = o, k
				}
				keys = append(keys, k)
				outers = append(outers, qualifyRefs(left, o))
				continue
			}
		}
		if mine, ok := own(w); spj && !(ok && mine) && !opaque(w) {
			lifted = append(lifted, w)
			continue
		}
		rest = append(rest, w)
	}
	if len(keys) == 0 && len(lifted) == 0 {
		return viaDomain("that reads the items before it other than in equalities of its WHERE clause")
	}
	// the subquery's items, each named apart, and its columns' names
	items, err := expandStars(inner, q.Items)
	if err != nil {
		return nil, nil, nil, err
	}
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = outputName(it)
		if i < len(d.Columns) {
			names[i] = d.Columns[i]
		}
	}
	body := &sql.Select{Distinct: q.Distinct, From: q.From, Where: andAll(rest), Having: q.Having}
	for i, it := range items {
		body.Items = append(body.Items, sql.SelectItem{Expr: it.Expr, Alias: lateralPrefix + "c" + strconv.Itoa(i+1)})
	}
	var on []sql.Expr
	for i, k := range keys {
		name := lateralPrefix + "k" + strconv.Itoa(i+1)
		body.Items = append(body.Items, sql.SelectItem{Expr: k, Alias: name})
		on = append(on, &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: d.Alias, Name: name}, R: outers[i]})
	}
	// outside rewrites an expression over both sides for the query
	// around: each own column it reads, and each aggregate, becomes one
	// of the rows' columns
	exposed := map[string]string{} // an own column: its name in the subquery's rows
	aggs := 0                      // the aggregates exposed, lateralPrefix+"a1", …
	outside := func(e sql.Expr) sql.Expr {
		return sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
			if f, isAgg := n.(*sql.FuncCall); isAgg && f.Over == nil && operators.IsAggregate(f.Name) {
				aggs++
				name := lateralPrefix + "a" + strconv.Itoa(aggs)
				body.Items = append(body.Items, sql.SelectItem{Expr: f, Alias: name})
				return &sql.ColumnRef{Table: d.Alias, Name: name}, true
			}
			c, ok := n.(*sql.ColumnRef)
			if !ok {
				return nil, false
			}
			i, err := inner.resolve(c.Table, c.Name)
			if err != nil {
				return qualifyRefs(left, c), true
			}
			key := inner.cols[i].table + "." + inner.cols[i].name
			name, seen := exposed[key]
			if !seen {
				name = lateralPrefix + "e" + strconv.Itoa(len(exposed)+1)
				exposed[key] = name
				body.Items = append(body.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: inner.cols[i].table, Name: inner.cols[i].name}, Alias: name})
			}
			return &sql.ColumnRef{Table: d.Alias, Name: name}, true
		})
	}
	for _, w := range lifted {
		on = append(on, outside(w))
	}
	// A plain subquery's select list may read the items before it, and a
	// grouped one's or an aggregate's outside its aggregates: those
	// columns are computed by the query around (pad.replace), over the
	// rows' columns and aggregates.
	var pad *lateralPad
	computed := make([]bool, len(items))
	computedAs := make([]sql.Expr, len(items)) // a computed column's expression for the query around
	// aggsOwn: e's aggregates read none of the items before it
	aggsOwn := func(e sql.Expr) bool {
		ok := true
		walkExpr(e, func(n sql.Expr) bool {
			if f, isAgg := n.(*sql.FuncCall); isAgg && f.Over == nil && operators.IsAggregate(f.Name) {
				mine, known := own(f)
				ok = ok && mine && known
				return false
			}
			return true
		})
		return ok
	}
	for i, it := range items {
		mine, ok := own(it.Expr)
		if ok && mine || opaque(it.Expr) {
			continue
		}
		if spj && !anyAggregate([]sql.SelectItem{it}) || (grouped || oneRow) && !q.Distinct && !limited && aggsOwn(it.Expr) {
			if pad == nil {
				pad = &lateralPad{alias: d.Alias, replace: map[string]sql.Expr{}}
			}
			if pad.replace[names[i]] != nil {
				return nil, nil, nil, refuse("whose columns share a name")
			}
			computed[i] = true
			computedAs[i] = outside(it.Expr)
			// NULL in a LEFT JOIN's row without a partner, as the column is
			padded := &sql.IsNull{X: &sql.ColumnRef{Table: d.Alias, Name: lateralPrefix + "m"}}
			pad.replace[names[i]] = &sql.Case{Whens: []sql.When{{Cond: padded, Result: &sql.Literal{Value: types.NullValue}}}, Else: computedAs[i]}
			body.Items[i].Expr = &sql.Literal{Value: types.NullValue} // not read
		}
	}
	if pad != nil { // every row's marker, NULL in a LEFT JOIN's padding
		body.Items = append(body.Items, sql.SelectItem{Expr: &sql.Literal{Value: types.NewBool(true)}, Alias: lateralPrefix + "m"})
	}
	if grouped || oneRow {
		body.GroupBy = append(slices.Clone(q.GroupBy), keys...)
	}
	var query sql.QueryExpr = body
	if limited {
		n, off, err := constantLimits(cat, q)
		if err != nil {
			return nil, nil, nil, err
		}
		// ORDER BY terms naming an output column (by position or name)
		// are that item's expression in the row number's window
		order, err := orderTerms(items, q.OrderBy)
		if err != nil {
			return nil, nil, nil, err
		}
		rn := lateralPrefix + "rn"
		body.Items = append(body.Items, sql.SelectItem{Expr: &sql.FuncCall{Name: "row_number", Over: &sql.WindowSpec{PartitionBy: keys, OrderBy: order}}, Alias: rn})
		ranked := lateralPrefix + "ranked"
		top := &sql.Select{From: []sql.TableExpr{&sql.DerivedTable{Query: body, Alias: ranked}}}
		ref := &sql.ColumnRef{Table: ranked, Name: rn}
		top.Where = rankRange(ref, n, off)
		for _, it := range body.Items[:len(body.Items)-1] {
			top.Items = append(top.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: ranked, Name: it.Alias}, Alias: it.Alias})
		}
		query = top
	}
	// the subquery's columns under their names, then the keys
	outer := &sql.Select{From: []sql.TableExpr{&sql.DerivedTable{Query: query, Alias: lateralPrefix + "q"}}}
	for i := range items {
		if !computed[i] { // a computed one is not a column: a reference left to it fails
			outer.Items = append(outer.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: lateralPrefix + "q", Name: lateralPrefix + "c" + strconv.Itoa(i+1)}, Alias: names[i]})
		}
	}
	for _, it := range body.Items[len(items):] {
		if strings.HasPrefix(it.Alias, lateralPrefix+"k") || strings.HasPrefix(it.Alias, lateralPrefix+"e") ||
			strings.HasPrefix(it.Alias, lateralPrefix+"a") || it.Alias == lateralPrefix+"m" {
			outer.Items = append(outer.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: lateralPrefix + "q", Name: it.Alias}, Alias: it.Alias})
		}
	}
	// Whatever else reads the items before it (the select list, HAVING,
	// a condition under OR with a subquery) cannot be joined on.
	if _, _, err := (&builder{cat: cat}).buildQuery(outer); err != nil {
		if code := pgerror.CodeOf(err); code == pgerror.UndefinedColumn || code == pgerror.UndefinedTable {
			return viaDomain("that reads the items before it other than in the conditions of its WHERE clause")
		}
		return nil, nil, nil, err
	}
	if oneRow {
		// a column, or where the left row has no group (its first key
		// NULL), its value over no rows: count's 0, the other aggregates'
		// NULL
		pad = &lateralPad{alias: d.Alias, replace: map[string]sql.Expr{}, oneRow: true}
		missing := &sql.IsNull{X: &sql.ColumnRef{Table: d.Alias, Name: lateralPrefix + "k1"}}
		for i, it := range items {
			value := sql.Expr(&sql.ColumnRef{Table: d.Alias, Name: names[i]})
			if computed[i] {
				value = computedAs[i]
			}
			pad.replace[names[i]] = &sql.Case{Whens: []sql.When{{Cond: missing, Result: qualifyRefs(left, overNoRows(it.Expr))}}, Else: value}
		}
	}
	return &sql.DerivedTable{Query: outer, Alias: d.Alias}, andAll(on), pad, nil
}

// overNoRows is select item e of an aggregate without GROUP BY as it is
// over no rows: each count 0, each other aggregate NULL.
func overNoRows(e sql.Expr) sql.Expr {
	return sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
		f, ok := n.(*sql.FuncCall)
		if !ok || f.Over != nil || !operators.IsAggregate(f.Name) {
			return nil, false
		}
		if countsRows(f.Name) {
			return &sql.Literal{Value: types.NewInt8(0)}, true
		}
		return &sql.Literal{Value: types.NullValue}, true
	})
}

// qualifyRefs qualifies the unqualified column references of e with the
// FROM item of sc that has them, so that they keep their meaning in a
// query that also has the subquery's columns.
func qualifyRefs(sc *scope, e sql.Expr) sql.Expr {
	return sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
		c, ok := n.(*sql.ColumnRef)
		if !ok || c.Table != "" {
			return nil, false
		}
		i, err := sc.resolve("", c.Name)
		if err != nil || sc.cols[i].table == "" {
			return nil, false
		}
		q := *c
		q.Table = sc.cols[i].table
		return &q, true
	})
}

// domainAlias names a LATERAL subquery's domain (lateralDomain), whose
// columns are lateralPrefix+"d1", ….
const domainAlias = lateralPrefix + "dom"

// lateralDomain rewrites a LATERAL subquery q that reads columns of the
// items before it (scope left, FROM items leftFrom) in ways a join cannot
// take (a condition other than an equality in a subquery that groups,
// takes DISTINCT or a LIMIT; a column read in its select list too) as one
// that reads them through equalities only: q runs over its domain, the
// distinct values of those columns over the items before it (filtered
// by leftWhere, the query's conditions on them alone),
//
//	LATERAL (SELECT DISTINCT y.v FROM y WHERE y.k = x.k AND y.t <= x.t)
//	→ LATERAL (SELECT DISTINCT y.v FROM y, (SELECT DISTINCT x.k AS d1,
//	    x.t AS d2 FROM <items before it>) dom
//	    WHERE y.k = dom.d1 AND y.t <= dom.d2 AND dom.d1 = x.k AND dom.d2 = x.t)
//
// which decorrelate then joins on dom.d1 and dom.d2. It is exact only
// when a NULL in any of those columns leaves q's WHERE no rows, as it
// leaves the rewritten one none (its equalities fail): so each column
// must be read by a comparison of q's WHERE whose operands are columns,
// constants and arithmetic. back maps each domain column to the left
// column it stands for, for what the query around computes from it.
// ok is false where it does not apply.
func lateralDomain(left, inner *scope, outerCols []int, leftFrom []sql.TableExpr, leftWhere sql.Expr, d *sql.DerivedTable, q *sql.Select) (_ *sql.DerivedTable, back map[string]sql.Expr, ok bool) {
	if len(leftFrom) == 0 || len(outerCols) == 0 {
		return nil, nil, false
	}
	// outerOf is the left column a reference reads, or -1 (its own, or
	// neither's)
	outerOf := func(c *sql.ColumnRef) int {
		if _, err := inner.resolve(c.Table, c.Name); err == nil {
			return -1
		}
		i, err := left.resolve(c.Table, c.Name)
		if err != nil {
			return -1
		}
		return i
	}
	clauses := append([]sql.Expr{q.Where, q.Having}, q.GroupBy...)
	for _, o := range q.OrderBy {
		clauses = append(clauses, o.Expr)
	}
	exprs := slices.Clone(clauses)
	for _, it := range q.Items {
		exprs = append(exprs, it.Expr)
	}
	if slices.ContainsFunc(exprs, hasSubqueryIn) {
		return nil, nil, false
	}
	// the left columns a NULL in which leaves no rows
	rejects := map[int]bool{}
	var strict func(e sql.Expr) bool
	strict = func(e sql.Expr) bool {
		switch e := e.(type) {
		case *sql.ColumnRef, *sql.Literal:
			return true
		case *sql.Unary:
			return e.Op == "-" && strict(e.X)
		case *sql.Cast:
			return strict(e.X)
		case *sql.Binary:
			switch e.Op {
			case "+", "-", "*", "/", "%":
				return strict(e.L) && strict(e.R)
			}
		}
		return false
	}
	for _, w := range conjuncts(q.Where) {
		bin, isBin := w.(*sql.Binary)
		if !isBin || !slices.Contains([]string{"=", "<>", "!=", "<", "<=", ">", ">="}, bin.Op) || !strict(bin.L) || !strict(bin.R) {
			continue
		}
		walkExpr(w, func(n sql.Expr) bool {
			if c, isCol := n.(*sql.ColumnRef); isCol {
				if i := outerOf(c); i >= 0 {
					rejects[i] = true
				}
			}
			return true
		})
	}
	// A column a grouped subquery or an aggregate reads in its select
	// list outside its aggregates only is computed by the query around
	// (decorrelate), not one of the domain's.
	outside := map[int]bool{}
	if (len(q.GroupBy) > 0 || aggregates(q)) && !q.Distinct && q.Limit == nil && q.Offset == nil {
		for _, i := range outerCols {
			outside[i] = true
		}
		var inside func(e sql.Expr, agg bool)
		inside = func(e sql.Expr, agg bool) {
			walkExpr(e, func(n sql.Expr) bool {
				switch n := n.(type) {
				case *sql.FuncCall:
					if !agg && n.Over == nil && operators.IsAggregate(n.Name) {
						inside(n, true)
						return false
					}
				case *sql.ColumnRef:
					if i := outerOf(n); i >= 0 && agg {
						outside[i] = false
					}
				}
				return true
			})
		}
		for _, e := range clauses {
			inside(e, true)
		}
		for _, it := range q.Items {
			inside(it.Expr, false)
		}
	}
	var cols []int
	for _, i := range distinctInts(outerCols) {
		if !outside[i] {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return nil, nil, false
	}
	dom := &sql.Select{Distinct: true, From: leftFrom, Where: leftWhere}
	name := map[int]string{} // left column → its domain column
	back = map[string]sql.Expr{}
	var eqs []sql.Expr
	for n, i := range cols {
		if !rejects[i] {
			return nil, nil, false
		}
		c := left.cols[i]
		ref := &sql.ColumnRef{Table: c.table, Name: c.name}
		name[i] = lateralPrefix + "d" + strconv.Itoa(n+1)
		dom.Items = append(dom.Items, sql.SelectItem{Expr: ref, Alias: name[i]})
		back[name[i]] = ref
		eqs = append(eqs, &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: domainAlias, Name: name[i]}, R: ref})
	}
	// every reference to the left reads the domain instead
	toDomain := func(e sql.Expr) sql.Expr {
		return sql.Rewrite(e, func(n sql.Expr) (sql.Expr, bool) {
			c, isCol := n.(*sql.ColumnRef)
			if !isCol {
				return nil, false
			}
			i := outerOf(c)
			if i < 0 || name[i] == "" {
				return nil, false
			}
			return &sql.ColumnRef{Table: domainAlias, Name: name[i]}, true
		})
	}
	items, err := expandStars(inner, q.Items) // the domain's columns are not the subquery's
	if err != nil {
		return nil, nil, false
	}
	out := *q
	out.Items = slices.Clone(items)
	for i, it := range out.Items {
		if out.Items[i].Expr = toDomain(it.Expr); it.Alias == "" {
			out.Items[i].Alias = outputName(it)
		}
	}
	outputs := map[string]bool{}
	for _, it := range out.Items {
		outputs[it.Alias] = true
	}
	// a bare name in GROUP BY or ORDER BY may name an output column
	byTerm := func(e sql.Expr) sql.Expr {
		if c, isCol := e.(*sql.ColumnRef); isCol && c.Table == "" && outputs[c.Name] {
			return e
		}
		return toDomain(e)
	}
	out.GroupBy = slices.Clone(q.GroupBy)
	for i, g := range out.GroupBy {
		out.GroupBy[i] = byTerm(g)
	}
	out.OrderBy = slices.Clone(q.OrderBy)
	for i, o := range out.OrderBy {
		out.OrderBy[i].Expr = byTerm(o.Expr)
	}
	out.Having = toDomain(q.Having)
	out.Where = andAll(append(conjuncts(toDomain(q.Where)), eqs...))
	out.From = append(slices.Clone(q.From), &sql.DerivedTable{Query: dom, Alias: domainAlias})
	nd := *d
	nd.Query = &out
	return &nd, back, true
}
