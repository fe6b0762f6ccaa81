package planner

import (
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// maxGroupingSets bounds the groupings one GROUP BY expands to (CUBE of
// n elements is 2^n): each is a grouping of its own, in a view a stage
// of the pipeline. PostgreSQL allows 4096.
const maxGroupingSets = 64

// groupingSetsAsUnion rewrites a SELECT whose GROUP BY holds ROLLUP,
// CUBE or GROUPING SETS, or that calls GROUPING, as what it means: the
// UNION ALL of one grouping per grouping set, in which the grouping
// expressions outside the set read NULL and GROUPING(…) is the constant
// bit mask of its arguments outside the set:
//
//	SELECT k, g, grouping(k, g), count(*) FROM t GROUP BY ROLLUP (k, g)
//	→ SELECT k, g, 0 AS grouping, count(*) AS count FROM t GROUP BY k, g
//	  UNION ALL SELECT k, NULL::text AS g, 1, count(*) FROM t GROUP BY k
//	  UNION ALL SELECT NULL::int4 AS k, NULL::text AS g, 3, count(*) FROM t
//
// So a bounded SELECT runs it as a union of aggregations, and a view as
// a union of views (planUnionView). DISTINCT makes it a UNION, and
// ORDER BY … LIMIT orders the union's rows by select list positions. ok
// is false when sel has neither.
func groupingSetsAsUnion(b *builder, sel *sql.Select) (q sql.QueryExpr, ok bool, err error) {
	if groupingInAggregate(sel) {
		return nil, false, pgerror.New(pgerror.GroupingError, "aggregate function calls cannot contain GROUPING")
	}
	if !groupingSetsIn(sel) {
		return sel, false, nil
	}
	if len(sel.DistinctOn) > 0 {
		return nil, false, pgerror.NotSupported("DISTINCT ON over GROUPING SETS, ROLLUP or CUBE")
	}
	if hasWindowCall(sel) {
		return nil, false, pgerror.NotSupported("window functions over GROUPING SETS, ROLLUP or CUBE").
			WithHint("Group in a subquery and run the window functions over its rows.")
	}
	for _, it := range sel.Items {
		if _, star := it.Expr.(*sql.Star); star {
			return nil, false, pgerror.NotSupported("* in the select list of a query with GROUPING SETS, ROLLUP or CUBE")
		}
	}
	for _, o := range sel.OrderBy {
		// A term outside the select list: ORDER BY … LIMIT over a
		// subquery that computes it, itself grouped by the sets.
		if n, err := outputPosition(sel.Items, o.Expr); err != nil || n == 0 {
			q, err := limitOverSubquery(sel)
			return q, err == nil, err
		}
	}
	_, in, err := (&builder{cat: b.cat, outer: b.outer}).buildFrom(sel.From)
	if err != nil {
		return nil, false, err
	}
	// The grouping elements as expressions: a position or an output name
	// is its select item's.
	resolve := func(g sql.Expr) (sql.Expr, error) {
		if lit, ok := g.(*sql.Literal); ok && lit.Value.K.IsInteger() {
			n := int(lit.Value.I)
			if n < 1 || n > len(sel.Items) {
				return nil, pgerror.New(pgerror.InvalidColumnReference, "GROUP BY position %d is not in select list", n)
			}
			return sel.Items[n-1].Expr, nil
		}
		if c, ok := g.(*sql.ColumnRef); ok && c.Table == "" {
			if _, err := in.resolve("", c.Name); err != nil {
				for _, it := range sel.Items {
					if it.Alias == c.Name {
						return it.Expr, nil
					}
				}
			}
		}
		if hasAggregate(g) {
			return nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in GROUP BY")
		}
		return g, nil
	}
	sets, err := groupingSetsOf(sel.GroupBy, resolve)
	if err != nil {
		return nil, false, err
	}
	// Every expression any set groups by, with its type (its NULL's).
	var all []sql.Expr
	var allTypes []types.Type
	ctx := &exprCtx{scope: in, what: "GROUP BY", noAggs: true}
	for _, s := range sets {
		for _, g := range s {
			if indexOfGroup(in, all, g) >= 0 {
				continue
			}
			x, err := b.build(ctx, g)
			if err != nil {
				return nil, false, err
			}
			all, allTypes = append(all, g), append(allTypes, x.Type)
		}
	}
	var branches []*sql.Select
	for _, s := range sets {
		inSet := func(g sql.Expr) bool { return indexOfGroup(in, s, g) >= 0 }
		var rewriteErr error
		rw := func(e sql.Expr) (sql.Expr, bool) {
			f, call := e.(*sql.FuncCall)
			switch {
			case call && f.Over == nil && operators.IsAggregate(f.Name):
				return e, true // its arguments are the rows', not the groups'
			case call && f.Name == "grouping" && f.Over == nil:
				mask := int64(0)
				for _, a := range f.Args {
					if indexOfGroup(in, all, a) < 0 {
						rewriteErr = pgerror.New(pgerror.GroupingError, "arguments to GROUPING must be grouping expressions of the associated query level")
					}
					mask <<= 1
					if !inSet(a) {
						mask |= 1
					}
				}
				if len(f.Args) == 0 || len(f.Args) > 31 {
					rewriteErr = pgerror.New(pgerror.SyntaxError, "GROUPING takes 1 to 31 arguments")
				}
				return &sql.Literal{Value: types.NewInt(types.Int4, mask)}, true
			}
			if i := indexOfGroup(in, all, e); i >= 0 && !inSet(e) {
				return &sql.Cast{X: &sql.Literal{Value: types.NullValue}, Type: allTypes[i], TypeName: allTypes[i].String()}, true
			}
			return e, false
		}
		br := *sel
		br.GroupBy = append([]sql.Expr(nil), s...)
		br.Distinct, br.OrderBy, br.Limit, br.Offset = false, nil, nil, nil
		br.Items = make([]sql.SelectItem, len(sel.Items))
		for i, it := range sel.Items {
			name := outputName(it)
			br.Items[i] = sql.SelectItem{Expr: sql.Rewrite(it.Expr, rw), Alias: name}
		}
		if sel.Having != nil {
			br.Having = sql.Rewrite(sel.Having, rw)
		}
		if len(sets) == 1 {
			// GROUPING over a plain GROUP BY: the query as it was
			br.Distinct, br.Limit, br.Offset = sel.Distinct, sel.Limit, sel.Offset
			for _, o := range sel.OrderBy {
				o.Expr = sql.Rewrite(o.Expr, rw)
				br.OrderBy = append(br.OrderBy, o)
			}
		}
		if rewriteErr != nil {
			return nil, false, rewriteErr
		}
		if len(s) == 0 && br.Having == nil && !aggregates(&br) {
			// the empty set is one group, whatever the rows: a grouping
			br.Having = &sql.Literal{Value: types.NewBool(true)}
		}
		branches = append(branches, &br)
	}
	if len(branches) == 1 {
		return branches[0], true, nil
	}
	// DISTINCT over the groupings is their UNION; ORDER BY … LIMIT
	// applies to the union's rows, its terms the select list's.
	var union *sql.SetOp
	var left sql.QueryExpr = branches[0]
	for _, br := range branches[1:] {
		union = &sql.SetOp{Op: "union", All: !sel.Distinct, Left: left, Right: br}
		left = union
	}
	for _, o := range sel.OrderBy {
		n, _ := outputPosition(sel.Items, o.Expr) // not 0: checked above
		o.Expr = &sql.Literal{Value: types.NewInt(types.Int4, int64(n))}
		union.OrderBy = append(union.OrderBy, o)
	}
	union.Limit, union.Offset = sel.Limit, sel.Offset
	return union, true, nil
}

// outputPosition is the 1-based position in the select list of an ORDER
// BY term over grouping sets: a position, an output name, or a select
// list term; 0 for another term.
func outputPosition(items []sql.SelectItem, term sql.Expr) (int, error) {
	if lit, ok := term.(*sql.Literal); ok && lit.Value.K.IsInteger() {
		n := int(lit.Value.I)
		if n < 1 || n > len(items) {
			return 0, pgerror.New(pgerror.InvalidColumnReference, "ORDER BY position %d is not in select list", n)
		}
		return n, nil
	}
	if c, ok := term.(*sql.ColumnRef); ok {
		// an output name first, as PostgreSQL resolves a bare name; then
		// an item that is the input column named
		for i, it := range items {
			if c.Table == "" && outputName(it) == c.Name {
				return i + 1, nil
			}
		}
		for i, it := range items {
			if r, ok := it.Expr.(*sql.ColumnRef); ok && r.Name == c.Name && (r.Table == c.Table || r.Table == "" || c.Table == "") {
				return i + 1, nil
			}
		}
	}
	fp := fingerprint(term)
	for i, it := range items {
		if fingerprint(it.Expr) == fp {
			return i + 1, nil
		}
	}
	return 0, nil
}

// groupingSetsIn says whether sel's GROUP BY holds grouping set
// constructs or its select list, HAVING or ORDER BY calls GROUPING.
func groupingSetsIn(sel *sql.Select) bool {
	for _, g := range sel.GroupBy {
		switch g := g.(type) {
		case *sql.GroupingSets:
			return true
		case *sql.RowExpr:
			if len(g.Items) == 0 { // GROUP BY (): the empty set
				return true
			}
		}
	}
	found := false
	find := func(e sql.Expr) bool {
		f, ok := e.(*sql.FuncCall)
		if ok && f.Name == "grouping" && f.Over == nil {
			found = true
		}
		// GROUPING inside an aggregate is the aggregate's argument,
		// which groupingInAggregate refuses
		return !found && !(ok && f.Over == nil && operators.IsAggregate(f.Name))
	}
	for _, it := range sel.Items {
		walkExpr(it.Expr, find)
	}
	walkExpr(sel.Having, find)
	for _, o := range sel.OrderBy {
		walkExpr(o.Expr, find)
	}
	return found && len(sel.GroupBy) > 0
}

// groupingInAggregate says whether an aggregate's argument, FILTER or
// ORDER BY in sel's select list, HAVING or ORDER BY calls GROUPING.
func groupingInAggregate(sel *sql.Select) bool {
	found := false
	inAgg := func(e sql.Expr) bool {
		f, ok := e.(*sql.FuncCall)
		if !ok || f.Over != nil || !operators.IsAggregate(f.Name) {
			return !found
		}
		parts := append(append([]sql.Expr(nil), f.Args...), f.Filter)
		for _, o := range f.OrderBy {
			parts = append(parts, o.Expr)
		}
		for _, p := range parts {
			walkExpr(p, func(n sql.Expr) bool {
				if g, ok := n.(*sql.FuncCall); ok && g.Name == "grouping" && g.Over == nil {
					found = true
				}
				return !found
			})
		}
		return false
	}
	for _, it := range sel.Items {
		walkExpr(it.Expr, inAgg)
	}
	walkExpr(sel.Having, inAgg)
	for _, o := range sel.OrderBy {
		walkExpr(o.Expr, inAgg)
	}
	return found
}

// groupingSetsOf expands a GROUP BY list into its grouping sets: the
// cross product of its items' sets (a plain expression is one set of
// itself), in PostgreSQL's order.
func groupingSetsOf(list []sql.Expr, resolve func(sql.Expr) (sql.Expr, error)) ([][]sql.Expr, error) {
	sets := [][]sql.Expr{nil}
	for _, item := range list {
		its, err := itemSets(item, resolve)
		if err != nil {
			return nil, err
		}
		var next [][]sql.Expr
		for _, a := range sets {
			for _, b := range its {
				next = append(next, append(append([]sql.Expr(nil), a...), b...))
				if len(next) > maxGroupingSets {
					return nil, pgerror.New(pgerror.ProgramLimitExceeded, "too many grouping sets present (maximum %d)", maxGroupingSets)
				}
			}
		}
		sets = next
	}
	return sets, nil
}

// itemSets is the grouping sets of one GROUP BY item.
func itemSets(item sql.Expr, resolve func(sql.Expr) (sql.Expr, error)) ([][]sql.Expr, error) {
	// element is one element of ROLLUP or CUBE, or a set of GROUPING
	// SETS: (a, b) is both, () none
	element := func(e sql.Expr) ([]sql.Expr, error) {
		var es []sql.Expr
		if r, ok := e.(*sql.RowExpr); ok {
			es = r.Items
		} else {
			es = []sql.Expr{e}
		}
		out := make([]sql.Expr, len(es))
		for i, x := range es {
			if _, nested := x.(*sql.GroupingSets); nested {
				return nil, pgerror.New(pgerror.SyntaxError, "syntax error: grouping sets nested in a grouping element")
			}
			r, err := resolve(x)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	gs, ok := item.(*sql.GroupingSets)
	if !ok {
		e, err := element(item)
		return [][]sql.Expr{e}, err
	}
	var els [][]sql.Expr
	var sets [][]sql.Expr
	for _, it := range gs.Items {
		if gs.Kind == "sets" {
			if _, nested := it.(*sql.GroupingSets); nested {
				inner, err := itemSets(it, resolve)
				if err != nil {
					return nil, err
				}
				sets = append(sets, inner...)
				continue
			}
		}
		e, err := element(it)
		if err != nil {
			return nil, err
		}
		els = append(els, e)
	}
	switch gs.Kind {
	case "sets":
		sets = append(sets, els...)
	case "rollup":
		for n := len(els); n >= 0; n-- {
			var s []sql.Expr
			for _, e := range els[:n] {
				s = append(s, e...)
			}
			sets = append(sets, s)
		}
	case "cube":
		if len(els) > 16 {
			return nil, pgerror.New(pgerror.ProgramLimitExceeded, "too many grouping sets present (maximum %d)", maxGroupingSets)
		}
		for mask := (1 << len(els)) - 1; mask >= 0; mask-- {
			var s []sql.Expr
			for i, e := range els {
				if mask&(1<<(len(els)-1-i)) != 0 {
					s = append(s, e...)
				}
			}
			sets = append(sets, s)
		}
	}
	if len(sets) > maxGroupingSets {
		return nil, pgerror.New(pgerror.ProgramLimitExceeded, "too many grouping sets present (maximum %d)", maxGroupingSets)
	}
	return sets, nil
}

// indexOfGroup finds e among the grouping expressions gs: the same
// expression, or a reference to the same column of the scope.
func indexOfGroup(sc *scope, gs []sql.Expr, e sql.Expr) int {
	fp := fingerprint(e)
	col := -1
	if c, ok := e.(*sql.ColumnRef); ok {
		col, _ = sc.resolve(c.Table, c.Name)
	}
	for i, g := range gs {
		if fingerprint(g) == fp {
			return i
		}
		if c, ok := g.(*sql.ColumnRef); ok && col >= 0 {
			if gc, err := sc.resolve(c.Table, c.Name); err == nil && gc == col {
				return i
			}
		}
	}
	return -1
}
