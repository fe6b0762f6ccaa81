package planner

import (
	"math/bits"
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// A comma-separated FROM list filtered by WHERE (the catalog queries of
// pgjdbc, DBeaver and Metabase join six to nine relations this way) would
// be a cross product of every item before the filter. buildFromWhere
// plans it as joins instead, the answer unchanged:
//
//   - a conjunct of WHERE that reads one item only filters that item
//     before any join;
//   - the items are joined in FROM order, except that the next one is the
//     first item an equality conjunct links to those already joined (a
//     hash join on it), so that a cross product is taken only where the
//     query has no condition at all;
//   - the conjuncts that read only joined items become the join's
//     condition; what is left (conjuncts with subqueries or reading no
//     item) stays in WHERE;
//   - a projection puts the columns back in FROM order.
//
// Lists with a function whose arguments read other items, or a LATERAL
// subquery, or of more than 64 items, keep the plain left-to-right cross
// joins.
func (b *builder) buildFromWhere(from []sql.TableExpr, where sql.Expr) (plan.Node, *scope, sql.Expr, error) {
	if len(from) >= 2 && where != nil && lateralList(from) {
		return b.filterBeforeFunctions(from, where)
	}
	if len(from) < 2 || len(from) > 64 || where == nil || !independentItems(from) || b.lateralFuncs {
		node, sc, err := b.buildFrom(from)
		return node, sc, where, err
	}
	n := len(from)
	nodes, scopes := make([]plan.Node, n), make([]*scope, n)
	for i, t := range from {
		var err error
		if tf, ok := t.(*sql.TableFunc); ok {
			nodes[i], scopes[i], err = b.buildTableFunc(tf)
		} else {
			nodes[i], scopes[i], err = b.buildTable(t)
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	conds := conjuncts(where)
	refs := make([]uint64, len(conds))
	used := make([]bool, len(conds))
	for i, c := range conds {
		var ok bool
		if refs[i], ok = itemsRead(c, scopes); !ok {
			refs[i] = 0 // stays in WHERE
		}
	}
	for i, c := range conds {
		if bits.OnesCount64(refs[i]) != 1 {
			continue
		}
		k := bits.TrailingZeros64(refs[i])
		pred, err := b.wherePred(scopes[k], c)
		if err != nil {
			return nil, nil, nil, err
		}
		nodes[k] = appendSteps(nodes[k], plan.Step{Op: plan.OpFilter, Pred: pred})
		used[i] = true
	}
	joinable := func(i int, joined uint64, k int) bool {
		bit := uint64(1) << k
		return !used[i] && refs[i]&bit != 0 && refs[i]&^(joined|bit) == 0
	}
	joined := uint64(1)
	order := []int{0}
	node, sc := nodes[0], scopes[0]
	for len(order) < n {
		next := -1
		for k := 1; k < n && next < 0; k++ {
			if joined&(1<<k) != 0 {
				continue
			}
			for i, c := range conds {
				if bin, ok := c.(*sql.Binary); ok && bin.Op == "=" && joinable(i, joined, k) {
					next = k
					break
				}
			}
		}
		for k := 1; k < n && next < 0; k++ {
			if joined&(1<<k) == 0 {
				next = k
			}
		}
		var on []sql.Expr
		for i, c := range conds {
			if joinable(i, joined, next) {
				on, used[i] = append(on, c), true
			}
		}
		var err error
		if node, sc, err = b.joinNode("cross", node, sc, nodes[next], scopes[next], on); err != nil {
			return nil, nil, nil, err
		}
		order, joined = append(order, next), joined|1<<next
	}
	node, sc = b.fromOrder(node, sc, order, scopes)
	var rest []sql.Expr
	for i, c := range conds {
		if !used[i] {
			rest = append(rest, c)
		}
	}
	return node, sc, andAll(rest), nil
}

// fromOrder projects joined rows, whose items came in order, back to the
// FROM list's order.
func (b *builder) fromOrder(node plan.Node, sc *scope, order []int, scopes []*scope) (plan.Node, *scope) {
	start := make([]int, len(scopes))
	at, inOrder := 0, true
	for pos, k := range order {
		start[k] = at
		at += len(scopes[k].cols)
		inOrder = inOrder && pos == k
	}
	if inOrder {
		return node, sc
	}
	out := &scope{}
	var exprs []*expr.Expr
	var names []string
	for k, s := range scopes {
		for j, c := range s.cols {
			exprs = append(exprs, expr.Col(start[k]+j, c.typ, c.name))
			names = append(names, c.name)
			out.cols = append(out.cols, c)
		}
	}
	return appendSteps(node, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: names}), out
}

// independentItems reports whether no FROM item is a function reading
// another item's columns, or a LATERAL subquery.
func independentItems(from []sql.TableExpr) bool {
	for _, t := range from {
		if d, ok := t.(*sql.DerivedTable); ok && d.Lateral {
			return false
		}
		if tf, ok := t.(*sql.TableFunc); ok {
			for _, a := range tf.Args {
				if hasColumn(a) {
					return false
				}
			}
		}
	}
	return true
}

// itemsRead is the set of FROM items (bit i: item i) a conjunct reads; ok
// is false when that cannot be told: a subquery (it may read any item), a
// column no item or several items have (an outer or ambiguous reference,
// whose error the WHERE clause reports).
func itemsRead(e sql.Expr, scopes []*scope) (set uint64, ok bool) {
	ok = true
	walkExpr(e, func(n sql.Expr) bool {
		switch n := n.(type) {
		case *sql.Subquery:
			ok = false
		case *sql.In:
			if n.Sub != nil {
				ok = false
			}
		case *sql.Quantified:
			if n.Sub != nil {
				ok = false
			}
		case *sql.ColumnRef:
			found := -1
			for k, s := range scopes {
				if _, err := s.resolve(n.Table, n.Name); err == nil {
					if found >= 0 {
						ok = false
					}
					found = k
				}
			}
			if found < 0 {
				ok = false
			} else {
				set |= 1 << found
			}
		}
		return ok
	})
	return set, ok
}

// itemName is the name a FROM item's columns are qualified by: a table's
// alias or name, a subquery's alias; "" for other items.
func itemName(te sql.TableExpr) string {
	switch t := te.(type) {
	case *sql.TableName:
		if t.Alias != "" {
			return t.Alias
		}
		return t.Name
	case *sql.DerivedTable:
		return t.Alias
	}
	return ""
}

// andAll is the conjunction of es (nil for none).
func andAll(es []sql.Expr) sql.Expr {
	if len(es) == 0 {
		return nil
	}
	out := es[0]
	for _, e := range es[1:] {
		out = &sql.Binary{Op: "and", L: out, R: e}
	}
	return out
}

// commaAsJoins rewrites a continuous query's comma FROM list filtered by
// WHERE (FROM auction a, person p WHERE a.seller = p.id AND …) as the
// joins it means, for the join planners, which take JOIN … ON: the items
// are joined in the order buildFromWhere picks (the next one is the first
// an equality conjunct links to those joined), each join's ON the
// conjuncts that read it and the items before it; the rest stays in WHERE.
// An unqualified * of items joined out of FROM order lists them in FROM
// order (a.*, b.*, …), as the bounded SELECT does. Lists with functions
// or windows stay as they are (and are refused as before).
func commaAsJoins(cat Catalog, sel *sql.Select) *sql.Select {
	from := sel.From
	if len(from) < 2 || len(from) > 64 {
		return sel
	}
	b := &builder{cat: cat}
	scopes := make([]*scope, len(from))
	names := make([]string, len(from))
	for i := range from {
		switch from[i].(type) {
		case *sql.TableName, *sql.DerivedTable:
			names[i] = itemName(from[i])
		default:
			return sel // functions, windows
		}
		var err error
		if _, scopes[i], err = b.buildTable(from[i]); err != nil {
			return sel // its error comes from the planner
		}
	}
	conds := conjuncts(sel.Where)
	refs := make([]uint64, len(conds))
	stay := make([]bool, len(conds)) // in WHERE: reads one item, or cannot be told
	taken := make([]bool, len(conds))
	for i, c := range conds {
		var ok bool
		refs[i], ok = itemsRead(c, scopes)
		stay[i] = !ok || bits.OnesCount64(refs[i]) < 2
	}
	joinable := func(i int, joined uint64, k int) bool {
		bit := uint64(1) << k
		return !stay[i] && !taken[i] && refs[i]&bit != 0 && refs[i]&^(joined|bit) == 0
	}
	joined, order := uint64(1), []int{0}
	var tree sql.TableExpr = from[0]
	for len(order) < len(from) {
		next := -1
		for k := 1; k < len(from) && next < 0; k++ {
			for i, c := range conds {
				if bin, ok := c.(*sql.Binary); ok && bin.Op == "=" && joined&(1<<k) == 0 && joinable(i, joined, k) {
					next = k
					break
				}
			}
		}
		for k := 1; k < len(from) && next < 0; k++ {
			if joined&(1<<k) == 0 {
				next = k
			}
		}
		var on []sql.Expr
		for i := range conds {
			if joinable(i, joined, next) {
				on, taken[i] = append(on, conds[i]), true
			}
		}
		cond := andAll(on)
		if cond == nil {
			cond = &sql.Literal{Value: types.NewBool(true)}
		}
		tree = &sql.Join{Kind: "inner", Left: tree, Right: from[next], On: cond}
		order, joined = append(order, next), joined|1<<next
	}
	out := *sel
	out.From = []sql.TableExpr{tree}
	var rest []sql.Expr
	for i, c := range conds {
		if stay[i] {
			rest = append(rest, c)
		}
	}
	out.Where = andAll(rest)
	if !slices.IsSorted(order) {
		var items []sql.SelectItem
		for _, it := range sel.Items {
			if st, ok := it.Expr.(*sql.Star); ok && st.Table == "" {
				for _, n := range names {
					items = append(items, sql.SelectItem{Expr: &sql.Star{Table: n}})
				}
				continue
			}
			items = append(items, it)
		}
		out.Items = items
	}
	return &out
}

// whereIntoJoins moves each conjunct of a stream's WHERE that relates
// the two sides of an inner join in its FROM clause (FROM a JOIN b ON
// a.k = b.k WHERE b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' MINUTE)
// into that join's ON, where the stream join planners look for its
// time bound. The answer is the same: WHERE filters the joined rows, and
// an inner join's ON does too. A conjunct only goes down through inner
// joins and the preserved side of outer ones (a LEFT JOIN's left), never
// into an outer join's ON; one whose columns are not all qualified by
// the FROM items' names, or with a subquery, stays, as does one that
// reads a single item (a filter) or is more than a comparison of
// columns (plainComparison).
func whereIntoJoins(sel *sql.Select) *sql.Select {
	if sel.Where == nil || len(sel.From) != 1 || !isJoin(sel.From[0]) {
		return sel
	}
	from := sel.From[0]
	var keep []sql.Expr
	moved := false
	for _, c := range conjuncts(sel.Where) {
		reads, ok := qualifiersRead(c)
		if ok && len(reads) > 1 && plainComparison(c) {
			if te, placed := joinCondition(from, c, reads); placed {
				from, moved = te, true
				continue
			}
		}
		keep = append(keep, c)
	}
	if !moved {
		return sel
	}
	out := *sel
	out.From, out.Where = []sql.TableExpr{from}, andAll(keep)
	return &out
}

// qualifiersRead is the set of qualifiers e's columns name; ok is false
// when a column is unqualified or e holds a subquery.
func qualifiersRead(e sql.Expr) (map[string]bool, bool) {
	reads, ok := map[string]bool{}, true
	walkExpr(e, func(x sql.Expr) bool {
		switch x := x.(type) {
		case *sql.ColumnRef:
			if x.Table == "" {
				ok = false
			}
			reads[x.Table] = true
		case *sql.Subquery:
			ok = false
		case *sql.In:
			ok = x.Sub == nil
		case *sql.Quantified:
			ok = x.Sub == nil
		}
		return ok
	})
	return reads, ok
}

// plainComparison says whether c compares columns, constants and
// columns plus or minus constants (a.k = b.k, b.ts BETWEEN a.ts AND a.ts
// + INTERVAL '1' MINUTE): what a join's key and time bound are made of,
// and what cannot fail on a row. In a join's ON a condition that fails
// sets the arriving row aside with all its pairs; in WHERE, the one pair.
func plainComparison(c sql.Expr) bool {
	term := func(e sql.Expr) bool {
		switch e := e.(type) {
		case *sql.ColumnRef, *sql.Literal:
			return true
		case *sql.Binary:
			if e.Op != "+" && e.Op != "-" {
				return false
			}
			_, lcol := e.L.(*sql.ColumnRef)
			_, rlit := e.R.(*sql.Literal)
			return lcol && rlit
		}
		return false
	}
	switch c := c.(type) {
	case *sql.Binary:
		switch c.Op {
		case "=", "<>", "<", "<=", ">", ">=":
			return term(c.L) && term(c.R)
		}
	case *sql.Between:
		return !c.Not && term(c.X) && term(c.Lo) && term(c.Hi)
	}
	return false
}

// joinCondition adds c, which reads the FROM items reads, to the ON of
// the lowest inner join of te whose two sides hold them all, going down
// only through inner joins and outer joins' preserved sides.
func joinCondition(te sql.TableExpr, c sql.Expr, reads map[string]bool) (sql.TableExpr, bool) {
	j, ok := te.(*sql.Join)
	if !ok {
		return te, false
	}
	l, lok := itemNames(j.Left)
	r, rok := itemNames(j.Right)
	if !lok || !rok {
		return te, false
	}
	inner := j.Kind == "inner" || j.Kind == "cross" || j.Kind == ""
	within := func(names map[string]bool) bool {
		for q := range reads {
			if !names[q] {
				return false
			}
		}
		return true
	}
	out := *j
	switch {
	case within(l):
		if !inner && j.Kind != "left" {
			return te, false
		}
		out.Left, ok = joinCondition(j.Left, c, reads)
	case within(r):
		if !inner && j.Kind != "right" {
			return te, false
		}
		out.Right, ok = joinCondition(j.Right, c, reads)
	case inner:
		for q := range l {
			r[q] = true
		}
		if !within(r) {
			return te, false
		}
		out.On, out.Kind, ok = andAll([]sql.Expr{j.On, c}), "inner", true
		if j.On == nil {
			out.On = c
		}
	default:
		return te, false
	}
	if !ok {
		return te, false
	}
	return &out, true
}

// itemNames are the names the FROM items of te are known by; ok is false
// when an item has none (a table function without an alias).
func itemNames(te sql.TableExpr) (map[string]bool, bool) {
	names := map[string]bool{}
	var add func(te sql.TableExpr) bool
	add = func(te sql.TableExpr) bool {
		switch t := te.(type) {
		case *sql.Join:
			return add(t.Left) && add(t.Right)
		case *sql.WindowTVF:
			if t.Alias != "" {
				names[t.Alias] = true
			} else {
				names[t.Source.Name] = true
			}
			return true
		}
		n := itemName(te)
		names[n] = true
		return n != ""
	}
	ok := add(te)
	return names, ok
}

// lateralList says whether a FROM list is one item and functions after
// it (FROM s, unnest(s.tags) t, …).
func lateralList(from []sql.TableExpr) bool {
	for _, t := range from[1:] {
		if _, ok := t.(*sql.TableFunc); !ok {
			return false
		}
	}
	_, fn := from[0].(*sql.TableFunc)
	return !fn
}

// filterBeforeFunctions plans a FROM list of one item and functions of
// its rows with WHERE's conjuncts that read that item alone (and call
// nothing volatile) as filters before the functions, as PostgreSQL does:
// a row they drop never reaches the functions, which cost work, and can
// fail on a row the query leaves out (jsonb_each of an array). Each such
// conjunct must still read the same columns over the whole FROM list (a
// name a function's column shares is ambiguous there): it is built over
// that scope too, for its errors. The rest of WHERE is returned.
func (b *builder) filterBeforeFunctions(from []sql.TableExpr, where sql.Expr) (plan.Node, *scope, sql.Expr, error) {
	node, sc, err := b.buildTable(from[0])
	if err != nil {
		return nil, nil, nil, err
	}
	var early, rest []sql.Expr
	for _, c := range conjuncts(where) {
		if set, ok := itemsRead(c, []*scope{sc}); ok && set != 0 {
			pred, err := b.wherePred(sc, c)
			if err != nil {
				return nil, nil, nil, err
			}
			if !expr.Volatile(pred) {
				node = appendSteps(node, plan.Step{Op: plan.OpFilter, Pred: pred})
				early = append(early, c)
				continue
			}
		}
		rest = append(rest, c)
	}
	node, all, err := b.buildFromRest(node, sc, from[1:])
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range early {
		if _, err := b.wherePred(all, c); err != nil {
			return nil, nil, nil, err
		}
	}
	return node, all, andAll(rest), nil
}
