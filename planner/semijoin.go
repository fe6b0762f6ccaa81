package planner

import (
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
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
		return nil, pgerror.NotSupported("%s whose table is named %q, as one outside it is, in a materialized view", what, alias).
			WithHint("Give the subquery's table its own alias.")
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
