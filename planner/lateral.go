package planner

import (
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Functions in FROM that read the items before them (LATERAL, explicit
// or not, as PostgreSQL allows for functions): FROM s, LATERAL f(s.x) e,
// s CROSS JOIN LATERAL f(…), s [LEFT] JOIN LATERAL f(…) ON true. Each row
// of the items before is followed by each of the function's rows for it
// (a lateral step, operators.ProjectSet with one function): no row when
// the function gives none, or with LEFT JOIN one row padded with NULLs.
// User table functions (RETURNS TABLE) and the built-in set-returning
// functions both run this way.

// tableCall is a function of a FROM item resolved over a scope: the key
// CompileSet takes, its arguments and its columns.
type tableCall struct {
	key   string
	args  []*expr.Expr
	names []string
	types []types.Type
	// user: a user table function, whose columns keep their names under
	// an alias (a RETURNS TABLE column is an OUT parameter's, as in
	// PostgreSQL), where a built-in's one column takes the alias.
	user bool
}

// scope names the call's columns for tf's alias and column aliases.
func (c *tableCall) scope(tf *sql.TableFunc) (*scope, error) {
	sc, err := tableFuncScope(tf, &expr.SetCall{Names: c.names, Types: c.types})
	if err != nil || !c.user || len(tf.Columns) > 0 {
		return sc, err
	}
	for i := range c.names {
		sc.cols[i].name = c.names[i]
	}
	return sc, nil
}

// resolveTableCall resolves a set-returning function in FROM, built-in or
// a user table function, its arguments built in sc.
func (b *builder) resolveTableCall(tf *sql.TableFunc, sc *scope) (*tableCall, error) {
	if fn, ok := b.userFunction(tf.Name); ok && !expr.IsSetFunc(tf.Name) && !expr.Exists(tf.Name) {
		if !fn.IsTable() {
			return nil, pgerror.NotSupported("scalar function %s over the rows of other FROM items", tf.Name).
				WithHint("Call it in the select list.")
		}
		args, err := b.buildAll(&exprCtx{scope: sc, what: "FROM", noAggs: true}, tf.Args)
		if err != nil {
			return nil, err
		}
		cast, err := b.userArgs(fn, args)
		if err != nil {
			return nil, err
		}
		c := &tableCall{key: expr.UserSetKey(fn.Name), args: cast, user: true}
		for _, col := range fn.Table {
			c.names, c.types = append(c.names, col.Name), append(c.types, col.Type)
		}
		return c, nil
	}
	call, err := b.setCall(tf, sc)
	if err != nil {
		return nil, err
	}
	return &tableCall{key: call.Fn.Key(), args: call.Args, names: call.Names, types: call.Types}, nil
}

// userTableFunc plans a user table function in FROM whose arguments read
// no FROM item: its rows, computed when the query runs.
func (b *builder) userTableFunc(tf *sql.TableFunc) (plan.Node, *scope, error) {
	c, err := b.resolveTableCall(tf, &scope{})
	if err != nil {
		return nil, nil, err
	}
	for _, a := range c.args {
		if err := b.fromFuncArg(tf, a); err != nil {
			return nil, nil, err
		}
	}
	sc, err := c.scope(tf)
	if err != nil {
		return nil, nil, err
	}
	return &plan.FuncRows{Set: c.key, Args: c.args, Ordinality: tf.Ordinality}, sc, nil
}

// readsScope reports whether any argument of tf reads a column of sc:
// the function is then LATERAL to those items.
func (b *builder) readsScope(tf *sql.TableFunc, sc *scope) bool {
	if sc == nil || len(sc.cols) == 0 {
		return false
	}
	probe := &builder{cat: b.cat, params: append([]types.Type(nil), b.params...), inlining: b.inlining}
	for _, a := range tf.Args {
		if x, err := probe.build(&exprCtx{scope: sc, what: "FROM", noAggs: true}, a); err == nil && len(x.Columns()) > 0 {
			return true
		}
	}
	return false
}

// lateralFunc plans tf over the rows of node (scope sc): a lateral step,
// and the scope of sc's columns then tf's.
func (b *builder) lateralFunc(node plan.Node, sc *scope, tf *sql.TableFunc, outer bool) (plan.Node, *scope, error) {
	if b.scalarInFrom(tf.Name) {
		if tf.Ordinality {
			return nil, nil, pgerror.NotSupported("WITH ORDINALITY on a LATERAL scalar function")
		}
		return b.lateralScalar(node, sc, tf)
	}
	c, err := b.resolveTableCall(tf, sc)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range c.args {
		if a.HasOuter() || a.Has(expr.KSubquery) {
			return nil, nil, pgerror.NotSupported("function %s over a subquery or the enclosing query's columns, LATERAL", tf.Name)
		}
	}
	fsc, err := c.scope(tf)
	if err != nil {
		return nil, nil, err
	}
	step := plan.Step{Op: plan.OpLateral, Outer: outer, Ordinal: tf.Ordinality,
		Sets: []plan.SetSpec{{Fn: c.key, Args: c.args, Width: len(c.names)}}}
	return appendSteps(node, step), &scope{cols: append(append([]scopeCol(nil), sc.cols...), fsc.cols...)}, nil
}

// scalarInFrom reports whether a function in FROM returns one value (a
// built-in that is not set-returning, or a user scalar function).
func (b *builder) scalarInFrom(name string) bool {
	if expr.IsSetFunc(name) {
		return false
	}
	if expr.Exists(name) {
		return true
	}
	fn, ok := b.userFunction(name)
	return ok && !fn.IsTable()
}

// lateralScalar plans a function returning one value over the rows
// before it in FROM (FROM t, upper(t.v) u): one more column of each row,
// named as a scalar function in FROM is (buildScalarTableFunc).
func (b *builder) lateralScalar(node plan.Node, sc *scope, tf *sql.TableFunc) (plan.Node, *scope, error) {
	x, fsc, err := b.scalarFuncColumn(tf, sc)
	if err != nil {
		return nil, nil, err
	}
	if x.HasOuter() || x.Has(expr.KSubquery) {
		return nil, nil, pgerror.NotSupported("function %s over a subquery or the enclosing query's columns, LATERAL", tf.Name)
	}
	out := &scope{cols: append(append([]scopeCol(nil), sc.cols...), fsc.cols...)}
	exprs := make([]*expr.Expr, 0, len(out.cols))
	names := make([]string, 0, len(out.cols))
	for i, c := range sc.cols {
		exprs, names = append(exprs, expr.Col(i, c.typ, c.name)), append(names, c.name)
	}
	exprs, names = append(exprs, x), append(names, fsc.cols[0].name)
	return appendSteps(node, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: names}), out, nil
}

// lateralJoinKind checks a join whose right side is a function reading
// its left side: CROSS JOIN LATERAL, or [INNER|LEFT] JOIN LATERAL … ON
// true; outer for LEFT.
func lateralJoinKind(j *sql.Join) (outer bool, err error) {
	switch j.Kind {
	case "cross", "inner", "left":
	default:
		return false, pgerror.NotSupported("%s JOIN LATERAL", j.Kind).WithHint("Use CROSS JOIN LATERAL, JOIN LATERAL … ON true or LEFT JOIN LATERAL … ON true.")
	}
	if j.On != nil && !isTrue(j.On) {
		return false, pgerror.NotSupported("JOIN LATERAL with a condition other than ON true").WithHint("Filter the rows in WHERE.")
	}
	if len(j.Using) > 0 {
		return false, pgerror.NotSupported("JOIN LATERAL … USING")
	}
	return j.Kind == "left", nil
}

func isTrue(e sql.Expr) bool {
	l, ok := e.(*sql.Literal)
	return ok && l.Value.K == types.Bool && l.Value.I != 0
}

// lateralInput recognises a continuous query's FROM of one stream and
// functions after it (FROM s, LATERAL f(s.x) e; s CROSS JOIN LATERAL
// f(…); s LEFT JOIN LATERAL f(…) ON true): the stream.
func lateralInput(from []sql.TableExpr) (*sql.TableName, bool) {
	t, ok := lateralSource(from).(*sql.TableName)
	return t, ok
}

// planLateral plans a continuous query over a stream and LATERAL
// functions of its rows: a stream of the rows they make, filtered and
// projected. A view or an aggregate over them is refused: their rows
// are no view's rows (several per input record), so they are written as
// a stream first, which a view can read.
func planLateral(cat Catalog, ca *sql.CreateAs, sel *sql.Select, src *sql.TableName) (*Continuous, error) {
	if in, ok := lateralOverView(cat, sel); ok && ca.Kind == sql.KindMaterializedView && lateralRows(sel) {
		return planLateralView(cat, ca, sel, in)
	}
	if ca.Kind == sql.KindMaterializedView || aggregates(sel) || ca.Query.Emit != sql.EmitDefault {
		return nil, pgerror.NotSupported("a LATERAL function in a materialized view or an aggregation").
			WithHint("Write its rows as a stream (CREATE STREAM t AS SELECT … FROM s, LATERAL f(…) x), then aggregate or view t.")
	}
	return planStateless(cat, ca, sel, src)
}

// lateralFrom says whether a FROM clause is one item (a table or a
// subquery) and LATERAL functions of its rows.
func lateralFrom(from []sql.TableExpr) bool {
	switch lateralSource(from).(type) {
	case *sql.TableName, *sql.DerivedTable:
		return true
	}
	return false
}

// lateralSource is the item of a FROM clause that is one item and
// functions of its rows (FROM s, f(s.x) g; s CROSS JOIN LATERAL f(…);
// s LEFT JOIN LATERAL f(…) ON true, nested): that item, or nil.
func lateralSource(from []sql.TableExpr) sql.TableExpr {
	if len(from) == 1 {
		j, ok := from[0].(*sql.Join)
		if !ok {
			return nil
		}
		if _, ok := j.Right.(*sql.TableFunc); !ok {
			return nil
		}
		switch j.Left.(type) {
		case *sql.TableName, *sql.DerivedTable:
			return j.Left
		}
		return lateralSource([]sql.TableExpr{j.Left})
	}
	if len(from) < 2 {
		return nil
	}
	for _, t := range from[1:] {
		if _, ok := t.(*sql.TableFunc); !ok {
			return nil
		}
	}
	switch from[0].(type) {
	case *sql.TableName, *sql.DerivedTable:
		return from[0]
	}
	return lateralSource(from[:1])
}

// lateralOverStream says whether sel's FROM clause is a stream and
// LATERAL functions of its rows.
func lateralOverStream(cat Catalog, sel *sql.Select) bool {
	src, ok := lateralInput(sel.From)
	if !ok {
		return false
	}
	in, err := cat.Lookup(src.Schema, src.Name)
	return err == nil && in.Kind == catalog.Stream
}

// lateralOverView says whether sel's FROM clause is a view and LATERAL
// functions of its rows, and returns the view.
func lateralOverView(cat Catalog, sel *sql.Select) (*catalog.Relation, bool) {
	if sel == nil {
		return nil, false
	}
	src, ok := lateralInput(sel.From)
	if !ok {
		return nil, false
	}
	in, err := cat.Lookup(src.Schema, src.Name)
	return in, err == nil && in.Kind == catalog.MaterializedView
}

// planLateralView plans a materialized view of a view's rows and
// LATERAL functions of them, filtered and projected: each row of the
// input view is followed by the functions' rows for it, signed as the
// input row is (a changelog step reads the input's table), so that when
// the input row changes or leaves, the rows made of it leave too. A row
// is keyed by its input row's key (the hidden _src_key) and its
// position among each function's rows (_src_ord, _src_ord2, …: the
// lateral steps' ordinals): a function gives the same rows for the same
// input.
func planLateralView(cat Catalog, ca *sql.CreateAs, sel *sql.Select, in *catalog.Relation) (*Continuous, error) {
	chain, sc, err := statelessSelect(cat, sel, "a materialized view")
	if err != nil {
		return nil, err
	}
	if _, ok := chain.Input.(*plan.Source); !ok {
		return nil, pgerror.NotSupported("this FROM clause in a materialized view")
	}
	steps := append([]plan.Step(nil), chain.Steps...)
	first := -1
	for i, st := range steps {
		switch st.Op {
		case plan.OpLateral:
			if first < 0 {
				first = i
			}
		case plan.OpFilter:
		case plan.OpProject:
			if i < len(steps)-1 { // a scalar function in FROM: its row replaces the read's
				return nil, pgerror.NotSupported("a scalar function in FROM over a view's rows in a materialized view").
					WithHint("Call it in the select list.")
			}
		default:
			return nil, pgerror.NotSupported("step %s in a materialized view", st.Op)
		}
	}
	proj := steps[len(steps)-1]
	if first < 0 || proj.Op != plan.OpProject || first == len(steps)-1 {
		return nil, pgerror.NotSupported("this materialized view over LATERAL functions")
	}
	// The functions' columns were planned after the columns a query
	// names (in.ReadColumns()), each function's after the one before
	// (and its WITH ORDINALITY column, when asked for); a row read from
	// a view's table has the metadata columns after its own, and the
	// changelog step the sign after them: each function's columns
	// follow that, each with its ordinal, which the view's key takes.
	planned, run := len(in.ReadColumns()), len(in.Columns)+plan.MetaWidth+1
	shift := map[int]int{}
	var ords []int
	for i, st := range steps {
		if st.Op != plan.OpLateral {
			continue
		}
		w := st.Sets[0].Width
		for c := 0; c < w; c++ {
			shift[planned+c] = run + c
		}
		if st.Ordinal { // WITH ORDINALITY's column is the ordinal
			shift[planned+w] = run + w
			planned++
		}
		planned += w
		ords = append(ords, run+w)
		run += w + 1
		steps[i].Ordinal = true
	}
	for i := first; i < len(steps); i++ {
		st := steps[i]
		if st.Pred != nil {
			st.Pred = st.Pred.Remap(shift)
		}
		st.Exprs = remapAll(st.Exprs, shift)
		if len(st.Sets) > 0 {
			set := st.Sets[0]
			set.Args = remapAll(set.Args, shift)
			st.Sets = []plan.SetSpec{set}
		}
		steps[i] = st
	}
	proj = steps[len(steps)-1]
	proj.Names = append([]string(nil), proj.Names...)
	cols := columnsOf(sc)
	key := []int{len(cols)}
	proj.Exprs = append(proj.Exprs, expr.Col(len(in.Columns), types.Bytea, "_key"))
	proj.Names = append(proj.Names, "_src_key")
	cols = append(cols, catalog.Column{Name: "_src_key", Type: types.Bytea, Hidden: true})
	for n, o := range ords {
		name := "_src_ord"
		if n > 0 {
			name += strconv.Itoa(n + 1)
		}
		key = append(key, len(cols))
		proj.Exprs = append(proj.Exprs, expr.Col(o, types.Int8, "_ordinal"))
		proj.Names = append(proj.Names, name)
		cols = append(cols, catalog.Column{Name: name, Type: types.Int8, Hidden: true})
	}
	proj.Exprs = append(proj.Exprs, signColumn(in))
	proj.Names = append(proj.Names, "_sign")
	steps[len(steps)-1] = proj
	steps = append([]plan.Step{changelogStep(in)}, steps...)
	errs := ErrorsRelation(ca.Name)
	out := &Continuous{Errors: errs, Inputs: []*catalog.Relation{in}, Topology: &plan.Topology{Errors: errs.Name,
		Stages: []plan.Stage{{Name: "s0", Inputs: []string{in.Name}, Output: ca.Name + ChangesSuffix, Steps: steps}}}}
	last := &out.Topology.Stages[0]
	if err := viewOutput(ca, out, last, cols, key, in.Partitions); err != nil {
		return nil, err
	}
	last.Changes.Sign = len(cols)
	return out, nil
}

// remapAll is Remap over a list of expressions.
func remapAll(xs []*expr.Expr, m map[int]int) []*expr.Expr {
	if xs == nil {
		return nil
	}
	out := make([]*expr.Expr, len(xs))
	for i, x := range xs {
		out[i] = x.Remap(m)
	}
	return out
}

// lateralAlias is the FROM item a view over LATERAL functions reads.
const lateralAlias = "_lateral"

// lateralRows says whether sel is rows of one FROM item (a table or a
// subquery) and LATERAL functions of them, filtered and projected only:
// over a stream a stream's rows, which a hidden stream of a view's
// pipeline can carry (see nester.hide); over a view or a subquery a
// view's (planLateralView).
func lateralRows(sel *sql.Select) bool {
	if !lateralFrom(sel.From) {
		return false
	}
	return !sel.Distinct && len(sel.DistinctOn) == 0 && len(sel.GroupBy) == 0 && sel.Having == nil &&
		len(sel.OrderBy) == 0 && sel.Limit == nil && sel.Offset == nil && !anyAggregate(sel.Items) && !hasWindowCall(sel)
}

// lateralAsSubquery rewrites a materialized view over a stream and
// LATERAL functions of its rows as the same query over a subquery that
// is those rows, filtered by the view's WHERE:
//
//	SELECT e.tag, count(*) FROM s, LATERAL unnest(s.tags) e(tag) WHERE s.x > 0 GROUP BY e.tag
//	→ SELECT _lateral.tag, count(*) FROM (SELECT e.tag FROM s, LATERAL unnest(s.tags) e(tag) WHERE s.x > 0) _lateral GROUP BY _lateral.tag
//
// The subquery carries the columns the query reads, under their names
// (qualified by their FROM item where a name is not unique, or is a
// metadata column's), and runs as a hidden stream: its rows only come
// in. Every select list item keeps the name it had. A query with a
// subquery expression, or that is not over a stream and functions, is
// returned as it is (the planner refuses it as before).
func lateralAsSubquery(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	if !lateralFrom(sel.From) || hasSubqueryExpr(sel) {
		return sel, nil
	}
	if lateralRows(sel) && !lateralOverStream(cat, sel) {
		return sel, nil // a view's or a subquery's rows and functions: planLateralView's
	}
	return fromAsSubquery(cat, sel, lateralAlias)
}

// fromAsSubquery rewrites sel as the same query over a subquery (alias)
// that is its FROM clause filtered by its WHERE, carrying the columns the
// rest of the query reads under their names (qualified by their FROM item
// where a name is not unique, or is a metadata column's). Every select
// list item keeps the name it had.
func fromAsSubquery(cat Catalog, sel *sql.Select, alias string) (*sql.Select, error) {
	b := &builder{cat: cat}
	probe := *sel // its output columns; DISTINCT ON changes no column (and plans a subquery of its own)
	probe.DistinctOn = nil
	_, out, err := b.buildSelect(&probe)
	if err != nil {
		return nil, err
	}
	_, sc, err := b.buildFrom(sel.From)
	if err != nil {
		return nil, err
	}
	outNames := map[string]bool{}
	for _, c := range out.outColumns() {
		outNames[c.Name] = true
	}
	// The columns the query reads, by their index in sc.
	used := map[int]bool{}
	mark := func(e sql.Expr) {
		walkExpr(e, func(n sql.Expr) bool {
			if x, ok := n.(*sql.ColumnRef); ok {
				if i, err := sc.resolve(x.Table, x.Name); err == nil {
					used[i] = true
				}
			}
			return true
		})
	}
	starCols := func(st *sql.Star) []int {
		var cols []int
		for i, c := range sc.cols {
			if !c.hidden && (st.Table == "" || c.qualifiedBy(st.Table)) {
				cols = append(cols, i)
			}
		}
		return cols
	}
	for _, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok {
			for _, i := range starCols(st) {
				used[i] = true
			}
			continue
		}
		mark(it.Expr)
	}
	// WHERE runs in the subquery: what only it reads stays there.
	for _, g := range sel.GroupBy {
		mark(g)
	}
	mark(sel.Having)
	byOutput := func(e sql.Expr) bool { // an ORDER BY term naming an output column
		r, ok := e.(*sql.ColumnRef)
		return ok && r.Table == "" && outNames[r.Name]
	}
	for _, o := range sel.OrderBy {
		if !byOutput(o.Expr) {
			mark(o.Expr)
		}
	}
	for _, e := range sel.DistinctOn {
		if !byOutput(e) {
			mark(e)
		}
	}
	// Their names in the subquery.
	count := map[string]int{}
	for i := range used {
		count[sc.cols[i].name]++
	}
	names := map[int]string{}
	taken := map[string]bool{}
	inner := &sql.Select{From: sel.From, Where: sel.Where}
	for i, c := range sc.cols {
		if !used[i] {
			continue
		}
		name := c.name
		if count[name] > 1 || name[0] == '_' {
			name = c.table + "_" + c.name
		}
		for base, n := name, 2; taken[name]; n++ {
			name = base + "_" + strconv.Itoa(n)
		}
		taken[name] = true
		names[i] = name
		inner.Items = append(inner.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: c.table, Name: c.name}, Alias: name})
	}
	requalify := func(e sql.Expr) sql.Expr {
		return mapColumnRefs(sc, e, func(i int, r *sql.ColumnRef) sql.Expr {
			return &sql.ColumnRef{Table: alias, Name: names[i], Pos: r.Pos}
		})
	}
	outer := &sql.Select{
		Distinct: sel.Distinct,
		From:     []sql.TableExpr{&sql.DerivedTable{Query: inner, Alias: alias}},
		Having:   requalify(sel.Having),
		Limit:    sel.Limit,
		Offset:   sel.Offset,
	}
	cols := out.outColumns()
	pos := 0
	for _, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok {
			for _, i := range starCols(st) {
				outer.Items = append(outer.Items, sql.SelectItem{Expr: &sql.ColumnRef{Table: alias, Name: names[i]}, Alias: sc.cols[i].name})
				pos++
			}
			continue
		}
		outer.Items = append(outer.Items, sql.SelectItem{Expr: requalify(it.Expr), Alias: cols[pos].Name})
		pos++
	}
	for _, e := range sel.DistinctOn {
		if !byOutput(e) {
			e = requalify(e)
		}
		outer.DistinctOn = append(outer.DistinctOn, e)
	}
	for _, g := range sel.GroupBy {
		outer.GroupBy = append(outer.GroupBy, requalify(g))
	}
	for _, o := range sel.OrderBy {
		if !byOutput(o.Expr) {
			o.Expr = requalify(o.Expr)
		}
		outer.OrderBy = append(outer.OrderBy, o)
	}
	return outer, nil
}

// hasSubqueryExpr says whether a SELECT's expressions hold a subquery.
func hasSubqueryExpr(sel *sql.Select) bool {
	found := hasSubqueryIn(sel.Where) || hasSubqueryIn(sel.Having)
	for _, it := range sel.Items {
		found = found || hasSubqueryIn(it.Expr)
	}
	for _, g := range sel.GroupBy {
		found = found || hasSubqueryIn(g)
	}
	for _, o := range sel.OrderBy {
		found = found || hasSubqueryIn(o.Expr)
	}
	return found
}

// hasSubqueryIn says whether e holds a subquery (scalar, EXISTS, ARRAY,
// IN or a quantified comparison's).
func hasSubqueryIn(e sql.Expr) bool {
	found := false
	walkExpr(e, func(n sql.Expr) bool {
		switch x := n.(type) {
		case *sql.Subquery:
			found = true
		case *sql.In:
			found = found || x.Sub != nil
		case *sql.Quantified:
			found = found || x.Sub != nil
		}
		return !found
	})
	return found
}
