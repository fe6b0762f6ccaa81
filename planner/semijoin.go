package planner

import (
	"cmp"
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// existsAsJoins plans the EXISTS (SELECT … FROM r WHERE …), NOT EXISTS
// (…) and x IN (SELECT y FROM r WHERE …) conjuncts of a materialized
// view's WHERE as what they are over inputs that keep coming: semi and
// anti joins of the FROM clause with r on the subquery's WHERE (and x =
// y), each a hash join that keeps both sides' rows and puts out a left
// row while it has a partner (EXISTS) or while it has none (NOT EXISTS).
// The view's bounded SELECT keeps planning them as subqueries, its
// independent answer. ok is false when there is none.
func existsAsJoins(cat Catalog, sel *sql.Select) (out *sql.Select, ok bool, err error) {
	if sel.Where == nil || len(sel.From) != 1 {
		return sel, false, nil
	}
	from := sel.From[0]
	var rest []sql.Expr
	for _, c := range conjuncts(sel.Where) {
		kind, sub, in := probeOf(c)
		if kind != "" && !overRelation(sub) {
			kind = "" // over unnest(…) and the like: an expression of the row
		}
		if kind == "" {
			if x, ok := c.(*sql.In); ok && x.Sub != nil && x.Not {
				return nil, false, pgerror.NotSupported("NOT IN (SELECT …) in a materialized view").
					WithHint("Write NOT EXISTS (SELECT … WHERE y = x), which is what NOT IN means when neither side is NULL.")
			}
			rest = append(rest, c)
			continue
		}
		j, err := probeJoin(cat, from, kind, sub, in)
		if err != nil {
			return nil, false, err
		}
		from, ok = j, true
	}
	if !ok {
		return sel, false, nil
	}
	d := *sel
	d.From = []sql.TableExpr{from}
	d.Where = nil
	for _, c := range rest {
		if d.Where == nil {
			d.Where = c
		} else {
			d.Where = &sql.Binary{Op: "and", L: d.Where, R: c}
		}
	}
	return &d, true, nil
}

// hasProbe reports whether sel's WHERE has an EXISTS or IN (SELECT …)
// conjunct.
func hasProbe(sel *sql.Select) bool {
	for _, c := range conjuncts(sel.Where) {
		if kind, sub, _ := probeOf(c); kind != "" && overRelation(sub) {
			return true
		}
	}
	return false
}

// probeOf tells a conjunct that is a semi or anti join: its kind ("semi",
// "anti"; "" for none), its subquery and, for IN, the value looked for.
func probeOf(c sql.Expr) (kind string, sub sql.QueryExpr, in sql.Expr) {
	switch c := c.(type) {
	case *sql.Subquery:
		if c.Exists {
			return "semi", c.Query, nil
		}
	case *sql.Unary:
		if s, ok := c.X.(*sql.Subquery); ok && c.Op == "not" && s.Exists {
			return "anti", s.Query, nil
		}
	case *sql.In:
		if c.Sub != nil && !c.Not {
			return "semi", c.Sub, c.X
		}
	}
	return "", nil, nil
}

// overRelation reports whether a subquery reads one relation (a stream
// or a view): SELECT … FROM r ….
func overRelation(sub sql.QueryExpr) bool {
	s, ok := sub.(*sql.Select)
	if !ok || len(s.From) != 1 {
		return false
	}
	_, ok = s.From[0].(*sql.TableName)
	return ok
}

// probeJoin joins left with the relation of the subquery sub, a
// SELECT … FROM r [WHERE …] (overRelation) without grouping or LIMIT, on its WHERE (and
// in = its one column, for IN). Column names the subquery does not
// qualify are its relation's first, as they are inside it.
func probeJoin(cat Catalog, left sql.TableExpr, kind string, sub sql.QueryExpr, in sql.Expr) (*sql.Join, error) {
	what := "EXISTS"
	switch {
	case kind == "anti":
		what = "NOT EXISTS"
	case in != nil:
		what = "IN (SELECT …)"
	}
	s := sub.(*sql.Select)
	t := s.From[0].(*sql.TableName)
	if aggregates(s) || s.Limit != nil || s.Offset != nil {
		return nil, pgerror.NotSupported("%s over a grouped or limited subquery in a materialized view", what).
			WithHint("Put the grouping in a view of its own, and look into that view.")
	}
	rel, err := cat.Lookup(t.Schema, t.Name)
	if err != nil {
		return nil, err
	}
	alias := t.Alias
	if alias == "" {
		alias = t.Name
	}
	if tableNamed(left, alias) {
		// the subquery's table hides the outer one of its name inside
		// it; joined, it needs a name of its own
		s, t = renameTable(s, alias, left)
		alias = t.Alias
	}
	own := map[string]bool{}
	for _, c := range rel.ReadColumns() {
		own[c.Name] = c.Name != ""
	}
	qualify := func(e sql.Expr) {
		walkExpr(e, func(n sql.Expr) bool {
			if c, ok := n.(*sql.ColumnRef); ok && c.Table == "" && own[c.Name] {
				c.Table = alias
			}
			return true
		})
	}
	on := s.Where
	qualify(on)
	if in != nil {
		if len(s.Items) != 1 {
			return nil, pgerror.New(pgerror.SyntaxError, "subquery has too many columns")
		}
		if _, star := s.Items[0].Expr.(*sql.Star); star {
			return nil, pgerror.NotSupported("IN (SELECT * …) in a materialized view").WithHint("Name the column: IN (SELECT y FROM …).")
		}
		item := s.Items[0].Expr
		qualify(item)
		if err := qualifyOuter(cat, left, in); err != nil {
			return nil, err
		}
		eq := &sql.Binary{Op: "=", L: in, R: item}
		if on == nil {
			on = eq
		} else {
			on = &sql.Binary{Op: "and", L: eq, R: on}
		}
	}
	if on == nil {
		return nil, pgerror.NotSupported("%s without a WHERE that links the subquery to the outer row, in a materialized view", what).
			WithHint("Correlate it: WHERE r.k = outer.k.")
	}
	return &sql.Join{Kind: kind, Left: left, Right: t, On: on}, nil
}

// renameTable gives the table of the subquery s, named name as one of
// outer's is, an alias no table of outer has, and its references to name
// (in its select list and WHERE; a deeper subquery's are its own) the
// alias.
func renameTable(s *sql.Select, name string, outer sql.TableExpr) (*sql.Select, *sql.TableName) {
	alias := "_" + name
	for n := 2; tableNamed(outer, alias); n++ {
		alias = "_" + name + strconv.Itoa(n)
	}
	rename := func(e sql.Expr) sql.Expr {
		return sql.Rewrite(e, func(e sql.Expr) (sql.Expr, bool) {
			if c, ok := e.(*sql.ColumnRef); ok && c.Table == name {
				r := *c
				r.Table = alias
				return &r, true
			}
			return e, false
		})
	}
	r := *s
	t := *s.From[0].(*sql.TableName)
	t.Alias = alias
	r.From = []sql.TableExpr{&t}
	r.Where = rename(s.Where)
	r.Items = make([]sql.SelectItem, len(s.Items))
	for i, it := range s.Items {
		r.Items[i] = sql.SelectItem{Expr: rename(it.Expr), Alias: it.Alias}
	}
	return &r, &t
}

// notInAsProbes rewrites the x NOT IN (SELECT y FROM r WHERE c)
// conjuncts of a materialized view's WHERE as what NOT IN means, NULLs
// included, in terms a view runs: no y equals x (an anti join, as NOT
// EXISTS), and, by what r holds for the row (a scalar subquery, joined:
// NULL when nothing, 1 without NULLs, 2 with one), the row stays when
// r holds nothing, or holds no NULL and x is not NULL:
//
//	x NOT IN (SELECT y FROM r WHERE c)
//	→ NOT EXISTS (SELECT 1 FROM r WHERE c AND y = x)
//	  AND CASE coalesce((SELECT max(CASE WHEN y IS NULL THEN 2 ELSE 1 END) FROM r WHERE c), 0)
//	      WHEN 0 THEN true WHEN 1 THEN x IS NOT NULL ELSE false END
//
// (a NOT IN whose answer is NULL drops the row, as false does). A
// subquery that groups, aggregates or is DISTINCT is read as a derived
// table of its one column, (SELECT y AS _not_in FROM r … GROUP BY …)
// _not_in0, which the nester makes a hidden view. Other NOT IN conjuncts
// (LIMIT, window functions, a subquery over a subquery) are left for
// existsAsJoins to refuse.
func notInAsProbes(cat Catalog, sel *sql.Select) *sql.Select {
	if sel.Where == nil || len(sel.From) != 1 {
		return sel
	}
	changed := false
	probes := 0 // NOT IN conjuncts rewritten: names their grouped subqueries
	var where sql.Expr
	and := func(e sql.Expr) {
		if where == nil {
			where = e
		} else {
			where = &sql.Binary{Op: "and", L: where, R: e}
		}
	}
	for _, c := range conjuncts(sel.Where) {
		in, ok := c.(*sql.In)
		if !ok || in.Sub == nil || !in.Not || !overRelation(in.Sub) {
			and(c)
			continue
		}
		sub := in.Sub.(*sql.Select)
		if len(sub.Items) != 1 || sub.Limit != nil || sub.Offset != nil || len(sub.DistinctOn) > 0 || hasWindowCall(sub) {
			and(c)
			continue
		}
		if _, star := sub.Items[0].Expr.(*sql.Star); star {
			and(c)
			continue
		}
		if aggregates(sub) || sub.Distinct || len(sub.GroupBy) > 0 || sub.Having != nil {
			// its rows as a table of one column: the probes below read
			// it as they read a relation, a hidden view of its groups
			inner := *sub
			inner.Items = []sql.SelectItem{{Expr: sub.Items[0].Expr, Alias: notInColumn}}
			alias := notInColumn + strconv.Itoa(probes)
			sub = &sql.Select{Items: []sql.SelectItem{{Expr: &sql.ColumnRef{Table: alias, Name: notInColumn}}},
				From: []sql.TableExpr{&sql.DerivedTable{Query: &inner, Alias: alias}}}
		} else if t := sub.From[0].(*sql.TableName); tableNamed(sel.From[0], cmp.Or(t.Alias, t.Name)) {
			// its name hides an outer one, which x below names
			sub, _ = renameTable(sub, cmp.Or(t.Alias, t.Name), sel.From[0])
		}
		probes++
		// x as the outer row's, whatever the subquery's table holds
		x := sql.Rewrite(in.X, func(e sql.Expr) (sql.Expr, bool) {
			if c, ok := e.(*sql.ColumnRef); ok {
				r := *c
				return &r, true
			}
			return e, false
		})
		if err := qualifyOuter(cat, sel.From[0], x); err != nil || unqualified(x) {
			and(c) // a column of a subquery in FROM: refused as before
			continue
		}
		y := sub.Items[0].Expr
		match := *sub
		match.Items = []sql.SelectItem{{Expr: &sql.Literal{Value: types.NewInt(types.Int4, 1)}}}
		match.Where = &sql.Binary{Op: "=", L: y, R: x}
		if sub.Where != nil {
			match.Where = &sql.Binary{Op: "and", L: sub.Where, R: match.Where}
		}
		and(&sql.Unary{Op: "not", X: &sql.Subquery{Query: &match, Exists: true}})
		held := *sub
		held.Items = []sql.SelectItem{{Expr: &sql.FuncCall{Name: "max", Args: []sql.Expr{&sql.Case{
			Whens: []sql.When{{Cond: &sql.IsNull{X: y}, Result: &sql.Literal{Value: types.NewInt(types.Int4, 2)}}},
			Else:  &sql.Literal{Value: types.NewInt(types.Int4, 1)}}}}}}
		and(&sql.Case{
			Operand: &sql.FuncCall{Name: "coalesce", Args: []sql.Expr{&sql.Subquery{Query: &held}, &sql.Literal{Value: types.NewInt(types.Int4, 0)}}},
			Whens: []sql.When{
				{Cond: &sql.Literal{Value: types.NewInt(types.Int4, 0)}, Result: &sql.Literal{Value: types.NewBool(true)}},
				{Cond: &sql.Literal{Value: types.NewInt(types.Int4, 1)}, Result: &sql.IsNull{X: in.X, Not: true}},
			},
			Else: &sql.Literal{Value: types.NewBool(false)},
		})
		changed = true
	}
	if !changed {
		return sel
	}
	out := *sel
	out.Where = where
	return &out
}

// notInColumn names the one column of a NOT IN's grouped (or aggregate,
// or DISTINCT) subquery, and, numbered, the subquery as a table.
const notInColumn = "_not_in"

// unqualified says whether e reads a column without naming its table.
func unqualified(e sql.Expr) bool {
	found := false
	walkExpr(e, func(n sql.Expr) bool {
		if c, ok := n.(*sql.ColumnRef); ok && c.Table == "" {
			found = true
		}
		return !found
	})
	return found
}

// qualifyOuter names the table of each column e does not qualify, among
// the tables of from, so that it still means the outer row's column in
// a join with the subquery's table.
func qualifyOuter(cat Catalog, from sql.TableExpr, e sql.Expr) error {
	var tables []*sql.TableName
	var collect func(te sql.TableExpr)
	collect = func(te sql.TableExpr) {
		switch te := te.(type) {
		case *sql.TableName:
			tables = append(tables, te)
		case *sql.Join:
			collect(te.Left)
			collect(te.Right)
		}
	}
	collect(from)
	rels := make([]*catalog.Relation, len(tables))
	for i, t := range tables {
		rel, err := cat.Lookup(t.Schema, t.Name)
		if err != nil {
			return err
		}
		rels[i] = rel
	}
	walkExpr(e, func(n sql.Expr) bool {
		c, ok := n.(*sql.ColumnRef)
		if !ok || c.Table != "" {
			return true
		}
		for i, t := range tables {
			for _, rc := range rels[i].ReadColumns() {
				if rc.Name == c.Name && rc.Name != "" {
					c.Table = t.Alias
					if c.Table == "" {
						c.Table = t.Name
					}
					return true
				}
			}
		}
		return true
	})
	return nil
}

// tableNamed reports whether a FROM item has a table called (or aliased)
// name.
func tableNamed(te sql.TableExpr, name string) bool {
	switch te := te.(type) {
	case *sql.TableName:
		return te.Alias == name || (te.Alias == "" && te.Name == name)
	case *sql.Join:
		return tableNamed(te.Left, name) || tableNamed(te.Right, name)
	case *sql.DerivedTable:
		return te.Alias == name
	}
	return false
}

// probeAlias names the subquery of an IN over a grouped subquery.
const probeAlias = "_probe"

// probes hides the subqueries the EXISTS and IN (SELECT …) conjuncts of a
// view's WHERE read, so that existsAsJoins finds relations to join with:
// a subquery in a probe's FROM is a hidden view, as one in the view's
// FROM clause is; an IN over a grouped or limited subquery that reads no
// outer column is one over a subquery of its rows, hidden too:
//
//	x IN (SELECT k FROM r GROUP BY k HAVING count(*) > 5)
//	→ x IN (SELECT _probe1._p FROM (SELECT k AS _p FROM r GROUP BY k HAVING count(*) > 5) _probe1)
//
// and the subquery (SELECT k AS _p …) a hidden view.
func (ns *nester) probes(where sql.Expr) (sql.Expr, error) {
	var out sql.Expr
	for _, c := range conjuncts(where) {
		kind, sub, in := probeOf(c)
		if s, ok := sub.(*sql.Select); ok && kind != "" && len(s.From) == 1 {
			if in != nil && (aggregates(s) || s.Limit != nil || s.Offset != nil) && len(s.Items) == 1 {
				if _, _, err := (&builder{cat: ns.cat}).buildQuery(s); err == nil { // reads no outer column
					alias := probeAlias + strconv.Itoa(len(ns.subs)+1)
					inner := *s
					inner.Items = []sql.SelectItem{{Expr: s.Items[0].Expr, Alias: "_p"}}
					s = &sql.Select{Items: []sql.SelectItem{{Expr: &sql.ColumnRef{Table: alias, Name: "_p"}}},
						From: []sql.TableExpr{&sql.DerivedTable{Query: &inner, Alias: alias}}}
				}
			}
			if _, ok := s.From[0].(*sql.DerivedTable); ok {
				outer := ns.outer
				ns.outer = s
				from, err := ns.from(s.From)
				ns.outer = outer
				if err != nil {
					return nil, err
				}
				hidden := *s
				hidden.From = from
				c = withProbe(c, &hidden)
			}
		}
		if out == nil {
			out = c
		} else {
			out = &sql.Binary{Op: "and", L: out, R: c}
		}
	}
	return out, nil
}

// withProbe is the probe conjunct c (probeOf) over the subquery s instead.
func withProbe(c sql.Expr, s sql.QueryExpr) sql.Expr {
	switch x := c.(type) {
	case *sql.Subquery:
		y := *x
		y.Query = s
		return &y
	case *sql.Unary:
		return &sql.Unary{Op: x.Op, X: withProbe(x.X, s)}
	case *sql.In:
		y := *x
		y.Sub = s
		return &y
	}
	return c
}
