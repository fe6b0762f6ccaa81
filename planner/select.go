package planner

import (
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Catalog is what the planner needs of the catalog: relations by name
// (user and system) for bounded reads.
type Catalog interface {
	Lookup(schema, name string) (*catalog.Relation, error)
}

// builder carries the state of planning one statement.
type builder struct {
	cat    Catalog
	params []types.Type // $1…$n: declared by the client or inferred

	// Subqueries: outer is the enclosing query's scope while planning a
	// subquery (its columns resolve as expr.Outer); correlated records
	// that one was used, and outerCols which of outer's columns were
	// read; volatile that an expression built calls a volatile function
	// (a correlated subquery that does runs per row); subs collects the
	// current SELECT's subqueries.
	outer      *scope
	correlated bool
	outerCols  []int
	volatile   bool
	// inlining counts the sql functions being inlined around this
	// builder's expressions (userfunc.go).
	inlining int
	subs     []plan.Subquery
	// records names the fields of the record expressions built (see
	// setlist.go).
	records map[*expr.Expr]recordShape
	// lateralFuncs: every function in FROM runs for each row of the
	// items before it, as a lateral step, even one that reads none of
	// them (a continuous query's rows come one at a time: no cross join).
	lateralFuncs bool
	// works are the recursive queries whose recursive term is being
	// planned, innermost last (recursive.go).
	works []workTable
	// applyLateral: every LATERAL subquery runs per row (plan.Apply),
	// none is rewritten as a join (lateralRewrite); for the tests that
	// check one against the other.
	applyLateral bool
}

// Query is a planned bounded query.
type Query struct {
	Root       plan.Node
	Columns    []Column
	ParamTypes []types.Type
	// Relations lists the user relations read (for EXPLAIN and locking).
	Relations []string
}

// PlanQuery plans a bounded SELECT. paramTypes are the types the client
// declared for $1…$n (types.Unknown where it left them open).
func PlanQuery(cat Catalog, q *sql.Query, paramTypes []types.Type) (*Query, error) {
	return planBounded(&builder{cat: cat, params: append([]types.Type(nil), paramTypes...)}, q)
}

func planBounded(b *builder, q *sql.Query) (*Query, error) {
	jsonAggregates(q.Body)
	if q.Emit != sql.EmitDefault {
		return nil, pgerror.New(pgerror.SyntaxError, "EMIT is only allowed in CREATE … AS queries")
	}
	node, sc, err := b.buildQuery(q.Body)
	if err != nil {
		return nil, err
	}
	for len(b.params) < q.NumParams {
		b.params = append(b.params, types.Unknown)
	}
	return &Query{Root: node, Columns: sc.outColumns(), ParamTypes: b.finalParams()}, nil
}

// finalParams gives parameters still untyped the type text, as PostgreSQL
// does for unknown-typed parameters.
func (b *builder) finalParams() []types.Type {
	out := append([]types.Type(nil), b.params...)
	for i, t := range out {
		if t == types.Unknown || t == types.Null {
			out[i] = types.Text
		}
	}
	return out
}

func (b *builder) buildQuery(q sql.QueryExpr) (plan.Node, *scope, error) {
	switch q := q.(type) {
	case *sql.Select:
		return b.buildSelect(q)
	case *sql.SetOp:
		return b.buildSetOp(q)
	case *sql.Recursive:
		return b.buildRecursive(q)
	}
	return nil, nil, pgerror.NotSupported("query %T", q)
}

func (b *builder) buildSetOp(q *sql.SetOp) (plan.Node, *scope, error) {
	opName := strings.ToUpper(q.Op)
	ln, ls, err := b.buildQuery(q.Left)
	if err != nil {
		return nil, nil, err
	}
	rn, rs, err := b.buildQuery(q.Right)
	if err != nil {
		return nil, nil, err
	}
	lc, rc := ls.visible(), rs.visible()
	if len(lc) != len(rc) {
		return nil, nil, pgerror.New(pgerror.SyntaxError, "each %s query must have the same number of columns", opName)
	}
	out := &scope{}
	var lcast, rcast []*expr.Expr
	// A branch's untyped literal takes the other branch's type (VALUES
	// (1, '{}'::jsonb), (2, '[]') is jsonb); two of them stay untyped,
	// so that a third branch may type them still.
	typeOf := func(c scopeCol) types.Type {
		if c.untyped {
			return types.Unknown
		}
		return c.typ
	}
	conv := func(i int, c scopeCol, t types.Type) (*expr.Expr, error) {
		col := expr.Col(i, c.typ, c.name)
		if c.untyped && t != c.typ {
			return expr.Cast(col, t) // the literal's text read as t
		}
		return expr.Coerce(col, t, false)
	}
	for i := range lc {
		t, err := expr.CommonType(typeOf(lc[i]), typeOf(rc[i]))
		if err != nil {
			return nil, nil, pgerror.New(pgerror.DatatypeMismatch, "%s types %s and %s cannot be matched", opName, lc[i].typ, rc[i].typ)
		}
		if t == types.Null || t == types.Unknown {
			t = types.Text
		}
		l, err := conv(i, lc[i], t)
		if err != nil {
			return nil, nil, err
		}
		r, err := conv(i, rc[i], t)
		if err != nil {
			return nil, nil, err
		}
		lcast, rcast = append(lcast, l), append(rcast, r)
		out.cols = append(out.cols, scopeCol{name: lc[i].name, typ: t, untyped: lc[i].untyped && rc[i].untyped})
	}
	names := make([]string, len(lc))
	for i, c := range lc {
		names[i] = c.name
	}
	left := &plan.Chain{Input: ln, Steps: []plan.Step{{Op: plan.OpProject, Exprs: lcast, Names: names}}}
	right := &plan.Chain{Input: rn, Steps: []plan.Step{{Op: plan.OpProject, Exprs: rcast, Names: names}}}
	var node plan.Node = &plan.UnionAll{Inputs: []plan.Node{left, right}}
	if q.Op != "union" {
		node = &plan.SetOp{Except: q.Op == "except", All: q.All, Left: left, Right: right, Width: len(names)}
	}
	var steps []plan.Step
	if !q.All && q.Op == "union" {
		steps = append(steps, plan.Step{Op: plan.OpDistinct})
	}
	sortSteps, err := b.orderAndLimit(out, q.OrderBy, q.Limit, q.Offset)
	if err != nil {
		return nil, nil, err
	}
	steps = append(steps, sortSteps...)
	if len(steps) > 0 {
		node = &plan.Chain{Input: node, Steps: steps}
	}
	return node, out, nil
}

// orderAndLimit plans ORDER BY (by output column name or ordinal) and
// LIMIT/OFFSET over an output scope.
func (b *builder) orderAndLimit(sc *scope, order []sql.OrderItem, limit, offset sql.Expr) ([]plan.Step, error) {
	var steps []plan.Step
	lo, err := b.limitOffset(limit, offset)
	if err != nil {
		return nil, err
	}
	if len(order) > 0 {
		keys := make([]plan.SortKey, len(order))
		for i, o := range order {
			col, err := outputRef(sc, o.Expr)
			if err != nil {
				return nil, err
			}
			if col < 0 {
				return nil, pgerror.New(pgerror.InvalidColumnReference, "ORDER BY on a UNION result must name an output column")
			}
			keys[i] = sortKey(col, o)
		}
		steps = append(steps, lo.sortStep(keys))
	}
	if st, ok := lo.limitStep(); ok {
		steps = append(steps, st)
	}
	return steps, nil
}

func sortKey(col int, o sql.OrderItem) plan.SortKey {
	k := plan.SortKey{Col: col, Desc: o.Desc, NullsFirst: o.Desc}
	if o.NullsFirst != nil {
		k.NullsFirst = *o.NullsFirst
	}
	return k
}

// outputRef matches an ORDER BY term against the output columns: an
// ordinal, or a bare name equal to an output column. -1 if neither.
func outputRef(sc *scope, e sql.Expr) (int, error) {
	visible := []int{}
	for i, c := range sc.cols {
		if !c.hidden {
			visible = append(visible, i)
		}
	}
	switch e := e.(type) {
	case *sql.Literal:
		if e.Value.K.IsInteger() {
			n := int(e.Value.I)
			if n < 1 || n > len(visible) {
				return -1, pgerror.New(pgerror.InvalidColumnReference, "ORDER BY position %d is not in select list", n)
			}
			return visible[n-1], nil
		}
	case *sql.ColumnRef:
		if e.Table == "" {
			found := -1
			for _, i := range visible {
				if sc.cols[i].name == e.Name {
					if found >= 0 {
						return -1, pgerror.New(pgerror.AmbiguousColumn, "ORDER BY %q is ambiguous", e.Name)
					}
					found = i
				}
			}
			return found, nil
		}
	}
	return -1, nil
}

// limits is a query's LIMIT and OFFSET: constants (lim -1: none), or
// expressions of parameters evaluated when the plan runs (limX, offX).
type limits struct {
	lim, off   int64
	limX, offX *expr.Expr
}

// sortStep is a sort by keys that keeps only the rows LIMIT and OFFSET
// let through.
func (l limits) sortStep(keys []plan.SortKey) plan.Step {
	st := plan.Step{Op: plan.OpSort, Keys: keys, Limit: -1}
	if l.limX != nil || l.offX != nil {
		// known when the plan runs: Limit and Offset as written
		st.Limit, st.Offset, st.LimitExpr, st.OffsetExpr = l.lim, l.off, l.limX, l.offX
	} else if l.lim >= 0 {
		st.Limit = l.lim + l.off
	}
	return st
}

// limitStep is the LIMIT/OFFSET step, if there is one.
func (l limits) limitStep() (plan.Step, bool) {
	st := plan.Step{Op: plan.OpLimit, Limit: l.lim, Offset: l.off, LimitExpr: l.limX, OffsetExpr: l.offX}
	return st, l.lim >= 0 || l.off > 0 || l.limX != nil || l.offX != nil
}

// limitOffset plans LIMIT and OFFSET: any expression without columns,
// as PostgreSQL's; one with parameters is evaluated when the plan runs.
func (b *builder) limitOffset(limit, offset sql.Expr) (l limits, err error) {
	l.lim = -1
	eval := func(e sql.Expr, what string) (int64, *expr.Expr, error) {
		if e == nil {
			return -1, nil, nil
		}
		x, err := b.build(&exprCtx{scope: &scope{}, what: what, noAggs: true}, e)
		if err != nil {
			return 0, nil, err
		}
		if isUntypedParam(x) {
			x = b.inferParam(x, types.Int8)
		}
		if x.Kind == expr.KConst && x.Val.K == types.Null {
			return -1, nil, nil
		}
		if x.Kind != expr.KConst {
			if x.HasOuter() || len(b.subs) > 0 && x.Has(expr.KSubquery) {
				return 0, nil, pgerror.NotSupported("%s with a subquery or an outer column", what)
			}
			c, err := expr.Cast(x, types.Int8)
			if err != nil {
				return 0, nil, err
			}
			return -1, c, nil
		}
		v, err := types.Cast(x.Val, types.Int8)
		if err != nil {
			return 0, nil, err
		}
		if v.I < 0 {
			return 0, nil, pgerror.New(pgerror.InvalidRowCountInLimitClause, "%s must not be negative", what)
		}
		return v.I, nil, nil
	}
	if l.lim, l.limX, err = eval(limit, "LIMIT"); err != nil {
		return
	}
	var off int64
	if off, l.offX, err = eval(offset, "OFFSET"); err != nil {
		return
	}
	l.off = max(off, 0)
	return
}

// buildFrom plans the FROM clause: one item, or several joined (a comma
// list is a cross join, filtered by WHERE).
func (b *builder) buildFrom(from []sql.TableExpr) (plan.Node, *scope, error) {
	if len(from) == 0 {
		return &plan.Values{Rows: []types.Row{{}}}, &scope{}, nil
	}
	node, sc, err := b.buildTable(from[0])
	if err != nil {
		return nil, nil, err
	}
	return b.buildFromRest(node, sc, from[1:])
}

// buildFromRest plans the FROM items after the first (node, its scope
// sc).
func (b *builder) buildFromRest(node plan.Node, sc *scope, rest []sql.TableExpr) (plan.Node, *scope, error) {
	for _, t := range rest {
		var rn plan.Node
		var rs *scope
		var err error
		if tf, ok := t.(*sql.TableFunc); ok && (b.lateralFuncs || b.readsScope(tf, sc)) {
			if node, sc, err = b.lateralFunc(node, sc, tf, false); err != nil {
				return nil, nil, err
			}
			continue
		}
		if d, ok := t.(*sql.DerivedTable); ok && d.Lateral {
			if node, sc, err = b.lateralSubquery(node, sc, d, "inner", nil); err != nil {
				return nil, nil, err
			}
			continue
		}
		if tf, ok := t.(*sql.TableFunc); ok {
			rn, rs, err = b.buildTableFunc(tf)
		} else {
			rn, rs, err = b.buildTable(t)
		}
		if err != nil {
			return nil, nil, err
		}
		node, sc = &plan.Join{Kind: "cross", Left: node, Right: rn, LeftWidth: len(sc.cols), RightWidth: len(rs.cols)},
			&scope{cols: append(append([]scopeCol(nil), sc.cols...), rs.cols...)}
	}
	return node, sc, nil
}

func (b *builder) buildTable(t sql.TableExpr) (plan.Node, *scope, error) {
	switch t := t.(type) {
	case *sql.TableName:
		rel, err := b.cat.Lookup(t.Schema, t.Name)
		if err != nil {
			if t.Pos > 0 {
				err = pgerror.WithPosition(err, t.Pos)
			}
			return nil, nil, err
		}
		return &plan.Source{Dataset: DatasetName(rel)}, relationScope(b.cat, t, rel), nil
	case *sql.WorkTable:
		return b.buildWorkTable(t)
	case *sql.DerivedTable:
		node, sc, err := b.buildQuery(t.Query)
		if err != nil {
			return nil, nil, err
		}
		return derivedScope(t, node, sc)
	case *sql.Join:
		return b.buildJoin(t)
	case *sql.TableFunc:
		return b.buildTableFunc(t)
	case *sql.WindowTVF:
		return b.buildWindowTVF(t)
	}
	return nil, nil, pgerror.NotSupported("FROM item %T", t)
}

// derivedScope is the scope of derived table t, whose query planned as
// node with scope sc: its visible columns, qualified by t's alias and
// named by its column list; node drops the hidden ones.
func derivedScope(t *sql.DerivedTable, node plan.Node, sc *scope) (plan.Node, *scope, error) {
	out := &scope{}
	for _, c := range sc.cols {
		if c.hidden {
			continue
		}
		out.cols = append(out.cols, scopeCol{table: t.Alias, name: c.name, typ: c.typ, fields: c.fields, fieldTypes: c.fieldTypes})
	}
	if err := aliasColumns(t, len(out.cols), func(i int, name string) { out.cols[i].name = name }); err != nil {
		return nil, nil, err
	}
	if len(out.cols) != len(sc.cols) {
		node = dropHidden(node, sc)
	}
	return node, out, nil
}

// buildWindowTVF plans TUMBLE or HOP in a bounded query: the source's
// rows (a relation's, or a WITH query's), each once per window holding
// its time, with window_start and window_end after its columns, as
// Flink's window table functions return them. GROUP BY window_start
// then aggregates each window over every row, as a continuous query's
// window does once the watermark has passed it (rows it counted as late
// aside). A SESSION window depends on the rows around each row and on
// the query's GROUP BY: buildSession plans it, as the only item of a
// grouped query's FROM; anywhere else it is 0A000.
func (b *builder) buildWindowTVF(t *sql.WindowTVF) (plan.Node, *scope, error) {
	if t.Kind == "session" {
		return nil, nil, pgerror.NotSupported("a SESSION window here").
			WithHint("Use SESSION as the only item of the FROM clause of a query that groups by window_start or window_end, without GROUPING SETS, ROLLUP or CUBE; join or aggregate its groups in an enclosing query.")
	}
	node, sc, qual, err := b.windowSource(t)
	if err != nil {
		return nil, nil, err
	}
	tcol, ttype, spec, err := b.windowOf(t, sc)
	if err != nil {
		return nil, nil, err
	}
	out := windowScope(sc, qual, ttype)
	step := plan.Step{Op: plan.OpWindowAssign, Window: &spec, TimeCol: tcol, TimeType: ttype, Width: len(sc.cols)}
	return &plan.Chain{Input: node, Steps: []plan.Step{step}}, out, nil
}

// windowSource plans a window function's source: a relation, or a WITH
// query, under the window's alias (qual).
func (b *builder) windowSource(t *sql.WindowTVF) (node plan.Node, sc *scope, qual string, err error) {
	name := windowTable(t)
	var src sql.TableExpr = name
	if t.Query != nil {
		src = &sql.DerivedTable{Query: t.Query, Alias: name.Alias}
	}
	node, sc, err = b.buildTable(src)
	return node, sc, name.Alias, err
}

// windowTable is a window function's source named under the window's
// alias, or under its own name when the window has none.
func windowTable(t *sql.WindowTVF) *sql.TableName {
	qual := t.Source.Name
	if t.Alias != "" {
		qual = t.Alias
	}
	return &sql.TableName{Schema: t.Source.Schema, Name: t.Source.Name, Alias: qual, Pos: t.Source.Pos}
}

// windowScope is sc followed by window_start and window_end, which take
// the place of sc's columns of those names (a window over a window's
// rows), as in a view (windowsOverViews).
func windowScope(sc *scope, qual string, ttype types.Type) *scope {
	out := &scope{cols: append([]scopeCol(nil), sc.cols...)}
	for i, c := range out.cols {
		if c.name == "window_start" || c.name == "window_end" {
			out.cols[i].name, out.cols[i].hidden = "", true
		}
	}
	for _, name := range []string{"window_start", "window_end"} {
		out.cols = append(out.cols, scopeCol{table: qual, name: name, typ: ttype})
	}
	return out
}

// fromScope is the scope of a FROM clause, buildFrom's, or a bounded
// SESSION's as buildSession makes it (its source's columns, then
// window_start and window_end).
func (b *builder) fromScope(from []sql.TableExpr) (*scope, error) {
	if t, ok := b.sessionFrom(&sql.Select{From: from}); ok {
		_, sc, qual, err := b.windowSource(t)
		if err != nil {
			return nil, err
		}
		_, ttype, _, err := b.windowOf(t, sc)
		if err != nil {
			return nil, err
		}
		return windowScope(sc, qual, ttype), nil
	}
	_, sc, err := b.buildFrom(from)
	return sc, err
}

// sessionFrom reports the SESSION window a bounded SELECT reads, if it
// is its FROM clause.
func (b *builder) sessionFrom(sel *sql.Select) (*sql.WindowTVF, bool) {
	if len(sel.From) != 1 || b.lateralFuncs {
		return nil, false
	}
	t, ok := sel.From[0].(*sql.WindowTVF)
	return t, ok && t.Kind == "session"
}

// buildSession plans a bounded query's FROM SESSION(source, time, gap)
// and its WHERE: the source's rows that pass WHERE, each with its
// session's window_start and window_end after its columns
// (plan.OpSessionAssign). As in a continuous query (planWindowed), the
// sessions are those of each value of the GROUP BY terms other than
// window_start and window_end, over the rows WHERE keeps, so a view or
// stream of sessions holds what this query returns over the same rows,
// once every session has closed (rows it counted as late aside). The
// query must group by window_start or window_end (42803), as a
// continuous one must. steps go first in the query's chain.
func (b *builder) buildSession(sel *sql.Select, t *sql.WindowTVF) (node plan.Node, in *scope, steps []plan.Step, err error) {
	node, sc, qual, err := b.windowSource(t)
	if err != nil {
		return nil, nil, nil, err
	}
	tcol, ttype, spec, err := b.windowOf(t, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	if sel.Where != nil {
		pred, err := b.wherePred(sc, sel.Where)
		if err != nil {
			return nil, nil, nil, err
		}
		steps = append(steps, plan.Step{Op: plan.OpFilter, Pred: pred})
	}
	in = windowScope(sc, qual, ttype)
	items, err := expandStars(in, sel.Items) // for GROUP BY 2
	if err != nil {
		return nil, nil, nil, err
	}
	keyScope := &scope{cols: append([]scopeCol(nil), sc.cols...)}
	g, err := b.groupColumns(keyScope, sel.GroupBy, items, true)
	if err != nil {
		return nil, nil, nil, err
	}
	if !g.sawWindow {
		return nil, nil, nil, pgerror.New(pgerror.GroupingError, "a windowed query must GROUP BY window_start or window_end")
	}
	var keys []*expr.Expr
	for _, c := range g.cols {
		if c < len(sc.cols) {
			keys = append(keys, sc.ref(c))
			continue
		}
		// the aggregation computes a key again: it must give what the
		// sessions were made of
		k := g.computed[c-len(sc.cols)]
		if expr.Volatile(k) {
			return nil, nil, nil, pgerror.NotSupported("a volatile function or a subquery in a SESSION window's GROUP BY").
				WithHint("Compute the key in a WITH query that SESSION reads.")
		}
		keys = append(keys, k)
	}
	steps = append(steps, plan.Step{Op: plan.OpSessionAssign, Window: &spec, TimeCol: tcol, TimeType: ttype, GroupBy: keys, Width: len(sc.cols)})
	return node, in, steps, nil
}

// buildJoin plans a JOIN: equality conditions between the two sides
// become hash keys, the rest of ON is checked on joined rows.
func (b *builder) buildJoin(j *sql.Join) (plan.Node, *scope, error) {
	ln, ls, err := b.buildTable(j.Left)
	if err != nil {
		return nil, nil, err
	}
	if tf, ok := j.Right.(*sql.TableFunc); ok && b.readsScope(tf, ls) {
		outer, err := lateralJoinKind(j)
		if err != nil {
			return nil, nil, err
		}
		return b.lateralFunc(ln, ls, tf, outer)
	}
	if d, ok := j.Right.(*sql.DerivedTable); ok && d.Lateral {
		if err := lateralSubqueryJoin(j); err != nil {
			return nil, nil, err
		}
		return b.lateralSubquery(ln, ls, d, j.Kind, j.On)
	}
	rn, rs, err := b.buildTable(j.Right)
	if err != nil {
		return nil, nil, err
	}
	var conds []sql.Expr
	if j.On != nil {
		conds = conjuncts(j.On)
	}
	for _, name := range j.Using {
		conds = append(conds, &sql.Binary{Op: "=", L: &sql.ColumnRef{Table: qualOf(ls, name), Name: name}, R: &sql.ColumnRef{Table: qualOf(rs, name), Name: name}})
	}
	return b.joinNode(j.Kind, ln, ls, rn, rs, conds)
}

// joinNode joins two planned inputs on conds: equalities between the two
// sides become hash keys, the rest is checked on joined rows.
func (b *builder) joinNode(kind string, ln plan.Node, ls *scope, rn plan.Node, rs *scope, conds []sql.Expr) (plan.Node, *scope, error) {
	lw := len(ls.cols)
	sc := &scope{cols: append(append([]scopeCol(nil), ls.cols...), rs.cols...)}
	join := &plan.Join{Kind: kind, Left: ln, Right: rn, LeftWidth: lw, RightWidth: len(rs.cols)}
	if join.Kind == "" {
		join.Kind = "inner"
	}
	var err error
	var residual []*expr.Expr
	ctx := &exprCtx{scope: sc, what: "JOIN", noAggs: true}
	shift := map[int]int{}
	for i := range rs.cols {
		shift[lw+i] = i
	}
	for _, c := range conds {
		if bin, ok := c.(*sql.Binary); ok && bin.Op == "=" {
			l, err := b.build(ctx, bin.L)
			if err != nil {
				return nil, nil, err
			}
			r, err := b.build(ctx, bin.R)
			if err != nil {
				return nil, nil, err
			}
			if side(l, lw) == 2 && side(r, lw) == 1 {
				l, r = r, l
			}
			if side(l, lw) == 1 && side(r, lw) == 2 {
				t, err := expr.CommonType(l.Type, r.Type)
				if err == nil {
					lc, err1 := expr.Coerce(l, t, false)
					rc, err2 := expr.Coerce(r, t, false)
					if err1 == nil && err2 == nil {
						join.LeftKeys = append(join.LeftKeys, lc)
						join.RightKeys = append(join.RightKeys, rc.Remap(shift))
						continue
					}
				}
			}
		}
		x, err := b.build(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		residual = append(residual, b.inferParam(x, types.Bool))
	}
	if len(residual) > 0 {
		if join.On, err = expr.And(residual...); err != nil {
			return nil, nil, err
		}
	}
	if join.Kind == "cross" && (len(join.LeftKeys) > 0 || join.On != nil) {
		join.Kind = "inner"
	}
	if join.Kind == "semi" || join.Kind == "anti" { // EXISTS, NOT EXISTS: the left rows alone
		return join, &scope{cols: ls.cols}, nil
	}
	return join, sc, nil
}

// side tells which input an expression reads: 1 left, 2 right, 0 none
// (a constant), 3 both.
func side(e *expr.Expr, leftWidth int) int {
	s := 0
	for _, c := range e.Columns() {
		if c < leftWidth {
			s |= 1
		} else {
			s |= 2
		}
	}
	return s
}

func conjuncts(e sql.Expr) []sql.Expr {
	if e == nil {
		return nil
	}
	if bin, ok := e.(*sql.Binary); ok && bin.Op == "and" {
		return append(conjuncts(bin.L), conjuncts(bin.R)...)
	}
	return []sql.Expr{e}
}

func qualOf(sc *scope, name string) string {
	for _, c := range sc.cols {
		if c.name == name {
			return c.table
		}
	}
	return ""
}

// DatasetName is the name under which the server resolves a relation's
// data for bounded reads.
func DatasetName(rel *catalog.Relation) string {
	if rel.Kind == catalog.System {
		return rel.Name
	}
	return "rel:" + rel.Name
}

func dropHidden(node plan.Node, sc *scope) plan.Node {
	var exprs []*expr.Expr
	var names []string
	for i, c := range sc.cols {
		if !c.hidden {
			exprs = append(exprs, sc.ref(i))
			names = append(names, c.name)
		}
	}
	return appendSteps(node, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: names})
}

func appendSteps(node plan.Node, steps ...plan.Step) plan.Node {
	if c, ok := node.(*plan.Chain); ok {
		return &plan.Chain{Input: c.Input, Steps: append(append([]plan.Step(nil), c.Steps...), steps...), Subqueries: c.Subqueries}
	}
	return &plan.Chain{Input: node, Steps: steps}
}

// buildSelect plans one SELECT block.
func (b *builder) buildSelect(sel *sql.Select) (plan.Node, *scope, error) {
	sel = groupScalarsAsLaterals(b.cat, sel)
	if !b.applyLateral {
		// joins where a view would join, rather than a run per row
		var err error
		if sel, err = lateralRewrite(b.cat, sel, true); err != nil {
			return nil, nil, err
		}
	}
	sel = windowGroupBy(sel)
	if q, ok, err := groupingSetsAsUnion(b, sel); ok || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return b.buildQuery(q)
	}
	if len(sel.DistinctOn) > 0 && anySetCall(sel.Items) {
		// DISTINCT ON takes the functions' rows
		sets, err := setsAsSubquery(b, sel)
		if err != nil {
			return nil, nil, err
		}
		sel = sets
	}
	if len(sel.DistinctOn) > 0 {
		ranked, err := distinctOnAsRank(b, sel)
		if err != nil {
			return nil, nil, err
		}
		return b.buildSelect(ranked)
	}
	saved := b.subs
	b.subs = nil
	defer func() { b.subs = saved }()
	where := sel.Where
	if where != nil && hasAggregate(where) {
		return nil, nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in WHERE")
	}
	var steps []plan.Step
	var node plan.Node
	var in *scope
	var err error
	if t, ok := b.sessionFrom(sel); ok {
		if node, in, steps, err = b.buildSession(sel, t); err != nil {
			return nil, nil, err
		}
		where = nil // under the sessions
	} else if node, in, where, err = b.buildFromWhere(sel.From, where); err != nil {
		return nil, nil, err
	}
	if src, ok := node.(*plan.Source); ok && where != nil {
		if err := b.keyLookup(src, sel.From[0].(*sql.TableName), in, where); err != nil {
			return nil, nil, err
		}
	}
	if where != nil {
		pred, err := b.wherePred(in, where)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, plan.Step{Op: plan.OpFilter, Pred: pred})
	}

	items, err := expandStars(in, sel.Items)
	if err != nil {
		return nil, nil, err
	}
	calls, err := setCalls(items)
	if err != nil {
		return nil, nil, err
	}

	// Aggregation.
	cur := in
	var aggs *aggState
	needAgg := len(sel.GroupBy) > 0 || sel.Having != nil
	for _, it := range items {
		needAgg = needAgg || hasAggregate(it.Expr)
	}
	for _, o := range sel.OrderBy {
		needAgg = needAgg || hasAggregate(o.Expr)
	}
	if needAgg {
		aggs, err = b.planAggregate(in, sel, items, &steps)
		if err != nil {
			return nil, nil, err
		}
		cur = aggs.out
	}
	ctx := &exprCtx{scope: in, what: "SELECT", aggs: aggs}

	if sel.Having != nil {
		pred, err := b.build(&exprCtx{scope: in, what: "HAVING", aggs: aggs}, sel.Having)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, plan.Step{Op: plan.OpFilter, Pred: b.inferParam(pred, types.Bool)})
	}

	// Window functions, over the rows so far.
	width := len(cur.cols)
	winSteps, wins, err := b.planWindows(ctx, width, items, sel.OrderBy)
	if err != nil {
		return nil, nil, err
	}
	steps = append(steps, winSteps...)
	ctx.windows = wins
	if len(calls) > 0 {
		if aggs != nil || len(winSteps) > 0 {
			return nil, nil, pgerror.NotSupported("set-returning functions in the select list of a query with aggregates or window functions").
				WithHint("Call the function in FROM, or aggregate in an enclosing query.")
		}
		set, cols, err := b.planSetCalls(in, calls, width)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, set)
		ctx.srfs = cols
	}

	// Projection: the select list, then hidden columns for ORDER BY terms
	// that are not output columns.
	out := &scope{}
	var exprs []*expr.Expr
	var names []string
	for _, it := range items {
		x, err := b.build(ctx, it.Expr)
		if err != nil {
			return nil, nil, err
		}
		if isUntypedParam(x) {
			x = b.inferParam(x, types.Text)
		}
		untyped := x.Type == types.Unknown
		if untyped {
			if x, err = expr.Cast(x, types.Text); err != nil {
				return nil, nil, err
			}
		}
		name := outputName(it)
		col := scopeCol{name: name, typ: x.Type, untyped: untyped}
		if x.Kind == expr.KCol && x.Col < width {
			src := cur.cols[x.Col]
			col.relOID, col.attnum, col.table = src.relOID, src.attnum, src.table
			col.fields, col.fieldTypes = src.fields, src.fieldTypes
		}
		if shape, ok := b.records[x]; ok {
			col.fields, col.fieldTypes = shape.names, shape.types
		}
		exprs = append(exprs, x)
		names = append(names, name)
		out.cols = append(out.cols, col)
	}
	var keys []plan.SortKey
	for _, o := range sel.OrderBy {
		col, err := outputRef(out, o.Expr)
		if err != nil {
			return nil, nil, err
		}
		if col < 0 {
			if sel.Distinct {
				return nil, nil, pgerror.New(pgerror.InvalidColumnReference, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
			}
			x, err := b.build(&exprCtx{scope: in, what: "ORDER BY", aggs: aggs, windows: wins}, o.Expr)
			if err != nil {
				return nil, nil, err
			}
			// An expression equal to a select item sorts by that item.
			for i, e := range exprs {
				if expr.Equal(e, x) {
					col = i
					break
				}
			}
			if col < 0 {
				col = len(exprs)
				exprs = append(exprs, x)
				names = append(names, "?order?")
				out.cols = append(out.cols, scopeCol{name: "?order?", typ: x.Type, hidden: true})
			}
		}
		keys = append(keys, sortKey(col, o))
	}
	steps = append(steps, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: names})
	if len(b.subs) > 0 {
		// A chain of its own: its steps' subquery indexes refer to it.
		node = &plan.Chain{Input: node, Steps: steps, Subqueries: b.subs}
		steps = nil
	}
	if sel.Distinct {
		steps = append(steps, plan.Step{Op: plan.OpDistinct})
	}
	lo, err := b.limitOffset(sel.Limit, sel.Offset)
	if err != nil {
		return nil, nil, err
	}
	if len(keys) > 0 {
		steps = append(steps, lo.sortStep(keys))
	}
	if st, ok := lo.limitStep(); ok {
		steps = append(steps, st)
	}
	if len(steps) > 0 {
		node = appendSteps(node, steps...)
	}
	for _, c := range out.cols {
		if c.hidden {
			node = dropHidden(node, out)
			vis := &scope{}
			for _, c := range out.cols {
				if !c.hidden {
					vis.cols = append(vis.cols, c)
				}
			}
			out = vis
			break
		}
	}
	return node, out, nil
}

// planAggregate adds the aggregate step for a SELECT and returns the
// aggregation state the clauses above it resolve against.
func (b *builder) planAggregate(in *scope, sel *sql.Select, items []sql.SelectItem, steps *[]plan.Step) (*aggState, error) {
	a := &aggState{out: &scope{}}
	var groupBy []*expr.Expr
	gctx := &exprCtx{scope: in, what: "GROUP BY", noAggs: true}
	for _, g := range sel.GroupBy {
		term := g
		// GROUP BY 2 and GROUP BY alias name select items.
		if lit, ok := g.(*sql.Literal); ok && lit.Value.K.IsInteger() {
			n := int(lit.Value.I)
			if n < 1 || n > len(items) {
				return nil, pgerror.New(pgerror.InvalidColumnReference, "GROUP BY position %d is not in select list", n)
			}
			term = items[n-1].Expr
		} else if c, ok := g.(*sql.ColumnRef); ok && c.Table == "" {
			if _, err := in.resolve("", c.Name); err != nil {
				for _, it := range items {
					if it.Alias == c.Name {
						term = it.Expr
					}
				}
			}
		}
		if hasAggregate(term) {
			return nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in GROUP BY")
		}
		x, err := b.build(gctx, term)
		if err != nil {
			return nil, err
		}
		fp := fingerprint(term)
		dup := false
		for _, k := range a.groupKeys {
			dup = dup || k == fp
		}
		if dup {
			continue
		}
		a.groupKeys = append(a.groupKeys, fp)
		a.groupCols = append(a.groupCols, len(groupBy))
		groupBy = append(groupBy, x)
		name := columnName(term)
		sc := scopeCol{name: name, typ: x.Type}
		if x.Kind == expr.KCol {
			src := in.cols[x.Col]
			sc.table, sc.relOID, sc.attnum = src.table, src.relOID, src.attnum
		}
		a.out.cols = append(a.out.cols, sc)
	}
	a.ngroups = len(groupBy)
	actx := &exprCtx{scope: in, what: "aggregate"}
	for _, it := range items {
		if err := b.collectAggs(actx, a, it.Expr); err != nil {
			return nil, err
		}
	}
	if sel.Having != nil {
		if err := b.collectAggs(actx, a, sel.Having); err != nil {
			return nil, err
		}
	}
	for _, o := range sel.OrderBy {
		if err := b.collectAggs(actx, a, o.Expr); err != nil {
			return nil, err
		}
	}
	for _, s := range a.specs {
		f, _ := operators.ResolveSpec(s)
		a.out.cols = append(a.out.cols, scopeCol{name: s.Name, typ: f.Ret})
	}
	// Group columns also resolve by their plain column name (SELECT sym …
	// GROUP BY t.sym), via the fingerprint of an unqualified reference.
	for i, g := range groupBy {
		if g.Kind == expr.KCol {
			src := in.cols[g.Col]
			for _, alt := range []*sql.ColumnRef{{Name: src.name}, {Table: src.table, Name: src.name}} {
				a.groupKeys = append(a.groupKeys, fingerprint(alt))
				a.groupCols = append(a.groupCols, i)
			}
		}
	}
	*steps = append(*steps, plan.Step{Op: plan.OpAggregate, GroupBy: groupBy, Aggs: a.specs})
	return a, nil
}

// expandStars replaces * and t.* by the columns they stand for.
func expandStars(in *scope, items []sql.SelectItem) ([]sql.SelectItem, error) {
	var out []sql.SelectItem
	for _, it := range items {
		st, ok := it.Expr.(*sql.Star)
		if !ok {
			out = append(out, it)
			continue
		}
		n := 0
		for _, c := range in.cols {
			if c.hidden || (st.Table != "" && !c.qualifiedBy(st.Table)) {
				continue
			}
			out = append(out, sql.SelectItem{Expr: &sql.ColumnRef{Table: c.table, Name: c.name}, Alias: c.name})
			n++
		}
		if st.Table != "" && n == 0 && !in.hasTable(st.Table) {
			return nil, pgerror.New(pgerror.UndefinedTable, "missing FROM-clause entry for table %q", st.Table)
		}
		if st.Table == "" && len(in.cols) == 0 {
			return nil, pgerror.New(pgerror.SyntaxError, "SELECT * with no tables specified is not valid")
		}
	}
	return out, nil
}

// outputName is the name a select item's column gets: its alias, or
// the name PostgreSQL gives the expression (columnName).
func outputName(it sql.SelectItem) string {
	if it.Alias != "" {
		return it.Alias
	}
	return columnName(it.Expr)
}

// columnName is the output name PostgreSQL gives an unaliased select item.
func columnName(e sql.Expr) string {
	switch e := e.(type) {
	case *sql.ColumnRef:
		return e.Name
	case *sql.FuncCall:
		return e.Name
	case *sql.Cast:
		if n := columnName(e.X); n != "?column?" {
			return n
		}
		// the type's name as PostgreSQL's grammar keeps it (int: int4;
		// int[]: int4; double precision: float8; the reg types, which
		// are oids here, by their names)
		if written := strings.ToLower(strings.Fields(e.TypeName + " ")[0]); strings.HasPrefix(written, "reg") {
			return written
		}
		t := e.Type
		if t.IsArray() {
			t = t.Elem()
		}
		if t != types.Null {
			return t.TypName()
		}
		return strings.Fields(e.TypeName + " ")[0]
	case *sql.Case:
		return "case"
	case *sql.ArrayExpr:
		return "array"
	case *sql.Subquery:
		// EXISTS and ARRAY(…) by their keyword; a scalar subquery after
		// its one column (the first branch's, of a set operation)
		switch {
		case e.Exists:
			return "exists"
		case e.Array:
			return "array"
		}
		q := e.Query
		for {
			op, ok := q.(*sql.SetOp)
			if !ok {
				break
			}
			q = op.Left
		}
		if sel, ok := q.(*sql.Select); ok && len(sel.Items) == 1 {
			if sel.Items[0].Alias != "" {
				return sel.Items[0].Alias
			}
			return columnName(sel.Items[0].Expr)
		}
	}
	return "?column?"
}

// keyLookup turns WHERE key = value (for a prefix of a materialized
// view's key columns, values constant or parameters) into a lookup, so
// the view answers without a scan. The WHERE still filters the result.
func (b *builder) keyLookup(src *plan.Source, t *sql.TableName, in *scope, where sql.Expr) error {
	rel, err := b.cat.Lookup(t.Schema, t.Name)
	if err != nil || rel.Kind != catalog.MaterializedView || len(rel.Key) == 0 {
		return nil
	}
	eq := map[string]sql.Expr{}
	var conj func(e sql.Expr)
	conj = func(e sql.Expr) {
		bin, ok := e.(*sql.Binary)
		if !ok {
			return
		}
		switch bin.Op {
		case "and":
			conj(bin.L)
			conj(bin.R)
		case "=":
			for _, pair := range [][2]sql.Expr{{bin.L, bin.R}, {bin.R, bin.L}} {
				c, ok := pair[0].(*sql.ColumnRef)
				if !ok {
					continue
				}
				switch pair[1].(type) {
				case *sql.Literal, *sql.Param, *sql.Cast:
					if hasColumn(pair[1]) {
						continue
					}
					if i, err := in.resolve(c.Table, c.Name); err == nil {
						eq[in.cols[i].name] = pair[1]
					}
				}
			}
		}
	}
	conj(where)
	var lookup []*expr.Expr
	for _, k := range rel.Key {
		v, ok := eq[k]
		if !ok {
			break
		}
		x, err := b.build(&exprCtx{scope: &scope{}, what: "WHERE", noAggs: true}, v)
		if err != nil {
			return nil // leave it to the filter to report
		}
		x = b.inferParam(x, rel.Columns[rel.ColumnIndex(k)].Type)
		lookup = append(lookup, x)
	}
	src.Lookup = lookup
	return nil
}

func hasColumn(e sql.Expr) bool {
	found := false
	walkExpr(e, func(n sql.Expr) bool {
		if _, ok := n.(*sql.ColumnRef); ok {
			found = true
		}
		return !found
	})
	return found
}

// aliasColumns names the first columns of a derived table (of n visible
// columns) by its alias's column list, (…) AS x(a, b), through rename;
// more names than columns is PostgreSQL's 42P10.
func aliasColumns(t *sql.DerivedTable, n int, rename func(i int, name string)) error {
	if len(t.Columns) > n {
		return pgerror.New(pgerror.InvalidColumnReference, "table %q has %d columns available but %d columns specified", t.Alias, n, len(t.Columns))
	}
	for i, name := range t.Columns {
		rename(i, name)
	}
	return nil
}
