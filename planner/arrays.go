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

// Arrays and set-returning functions: ARRAY[…] and ARRAY(subquery),
// subscripts, x op ANY|ALL (array or subquery), and functions in FROM.
//
// A function in FROM whose arguments are constants is evaluated while
// planning into constant rows; one whose arguments read no row but are
// not constants ($1, current_setting(…)) runs per execution
// (plan.FuncRows); a scalar function in FROM is a one-row, one-column
// table. One whose arguments read the enclosing
// query's row — `ARRAY(SELECT 'toast.' || x FROM unnest(tc.reloptions) x)`,
// as psql's \d+ sends — is the only FROM item of a subquery, and that
// subquery is evaluated in place as an expression (expr.FuncScan).
// Functions over columns of other items of the same FROM are LATERAL
// (lateral.go): a lateral step over those items' rows.

func (b *builder) buildArray(c *exprCtx, e *sql.ArrayExpr) (*expr.Expr, error) {
	items, err := b.buildAll(c, e.Items)
	if err != nil {
		return nil, err
	}
	// untyped parameters take the type of the typed elements
	t := types.Null
	for _, x := range items {
		if !isUntypedParam(x) && x.Type != types.Unknown && x.Type != types.Null {
			t = x.Type
		}
	}
	for i := range items {
		if isUntypedParam(items[i]) {
			if t == types.Null {
				items[i] = b.inferParam(items[i], types.Text)
			} else {
				items[i] = b.inferParam(items[i], t)
			}
		}
	}
	return expr.Array(items)
}

func (b *builder) buildSubscript(c *exprCtx, e *sql.Subscript) (*expr.Expr, error) {
	x, err := b.build(c, e.X)
	if err != nil {
		return nil, err
	}
	index := func(ie sql.Expr) (*expr.Expr, error) {
		if ie == nil {
			return nil, nil
		}
		i, err := b.build(c, ie)
		if err != nil {
			return nil, err
		}
		return b.inferParam(i, types.Int4), nil
	}
	if !e.Slice {
		i, err := index(e.Index)
		if err != nil {
			return nil, err
		}
		return expr.Subscript(x, i)
	}
	lo, err := index(e.Lo)
	if err != nil {
		return nil, err
	}
	hi, err := index(e.Hi)
	if err != nil {
		return nil, err
	}
	return expr.Slice(x, lo, hi)
}

// quantifiedFuncs names the boolean function behind each pattern
// operator of a quantified comparison.
var quantifiedFuncs = map[string]string{
	"like": "like", "ilike": "ilike", "not like": "!~~", "not ilike": "!~~*",
	"~": "regexp_match_bool", "!~": "!~",
}

func (b *builder) buildQuantified(c *exprCtx, e *sql.Quantified) (*expr.Expr, error) {
	op := e.Op
	if f, ok := quantifiedFuncs[op]; ok {
		op = f
	} else if !expr.IsComparison(op) {
		return nil, pgerror.NotSupported("operator %s with ANY/ALL", e.Op)
	}
	x, err := b.build(c, e.X)
	if err != nil {
		return nil, err
	}
	var arr *expr.Expr
	if e.Sub != nil {
		if arr, err = b.subqueryExpr(c, e.Sub, "array", nil); err != nil {
			return nil, err
		}
	} else if arr, err = b.build(c, e.Array); err != nil {
		return nil, err
	}
	switch {
	case isUntypedParam(arr) && !isUntypedParam(x) && x.Type != types.Unknown && x.Type != types.Null:
		if at := types.ArrayOf(x.Type); at != types.Null {
			arr = b.inferParam(arr, at)
		}
	case isUntypedParam(x) && arr.Type.IsArray():
		x = b.inferParam(x, arr.Type.Elem())
	case isUntypedParam(x) && isUntypedParam(arr):
		x, arr = b.inferParam(x, types.Text), b.inferParam(arr, types.TextArray)
	}
	if _, pattern := quantifiedFuncs[e.Op]; pattern {
		x = b.inferParam(x, types.Text)
	}
	return expr.Quantified(op, x, arr, e.All)
}

// subqueryExpr plans a subquery used as an expression in the given mode
// (see expr.Subquery); x is the left operand of "in".
//
// A subquery that uses something fvsql does not support yet (0A000) is
// planned as an expression failing with that error when it is evaluated:
// clients' catalog queries carry subqueries about objects fvsql never has
// (psql's \d asks for publications with string_agg over a LATERAL
// generate_series), which are never evaluated because their outer rows do
// not exist. Every other error is reported now.
func (b *builder) subqueryExpr(c *exprCtx, q sql.QueryExpr, mode string, x *expr.Expr) (*expr.Expr, error) {
	e, err := b.subqueryPlan(c, q, mode, x)
	if pgerror.CodeOf(err) != pgerror.FeatureNotSupported {
		return e, err
	}
	t := types.Unknown // its type is unknown too: it takes the context's
	switch mode {
	case "exists", "in":
		t = types.Bool
	case "array":
		t = types.TextArray
	}
	return expr.Fail(err, t), nil
}

func (b *builder) subqueryPlan(c *exprCtx, q sql.QueryExpr, mode string, x *expr.Expr) (*expr.Expr, error) {
	if e, ok, err := b.funcScan(c, q, mode, x); ok || err != nil {
		return e, err
	}
	idx, t, err := b.subquery(c, q)
	if err != nil {
		return nil, err
	}
	switch mode {
	case "exists":
		t = types.Bool
	case "in":
		x = b.inferParam(x, t)
		if _, err := expr.CommonType(x.Type, t); err != nil {
			return nil, err
		}
		t = types.Bool
	case "array":
		if t == types.Unknown || t == types.Null {
			t = types.Text
		}
		at := types.ArrayOf(t)
		if at == types.Null {
			return nil, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", t)
		}
		t = at
	}
	return expr.Subquery(idx, mode, t, x), nil
}

// setCall resolves a function in FROM, its arguments built in scope sc
// (columns not found there resolve against the enclosing query).
func (b *builder) setCall(tf *sql.TableFunc, sc *scope) (*expr.SetCall, error) {
	ctx := &exprCtx{scope: sc, what: "FROM", noAggs: true}
	args := make([]*expr.Expr, len(tf.Args))
	for i, a := range tf.Args {
		if hasAggregate(a) {
			return nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in functions in FROM")
		}
		x, err := b.build(ctx, a)
		if err != nil {
			return nil, err
		}
		if isUntypedParam(x) {
			x = b.inferParam(x, types.Text)
		}
		args[i] = x
	}
	return expr.ResolveSet(tf.Name, args)
}

// tableFuncScope names a function's output columns: the column aliases
// when given, else a single column takes the alias (or the function's
// name) and several keep the function's names; WITH ORDINALITY adds
// "ordinality".
func tableFuncScope(tf *sql.TableFunc, call *expr.SetCall) (*scope, error) {
	names := append([]string(nil), call.Names...)
	ts := append([]types.Type(nil), call.Types...)
	if tf.Ordinality {
		names, ts = append(names, "ordinality"), append(ts, types.Int8)
	}
	qual := tf.Alias
	if qual == "" {
		qual = tf.Name
	}
	if len(call.Names) == 1 && tf.Alias != "" {
		names[0] = tf.Alias
	}
	if len(tf.Columns) > len(names) {
		return nil, pgerror.New(pgerror.SyntaxError, "table %q has %d columns available but %d columns specified", qual, len(names), len(tf.Columns))
	}
	copy(names, tf.Columns)
	sc := &scope{}
	for i, n := range names {
		sc.cols = append(sc.cols, scopeCol{table: qual, name: n, typ: ts[i]})
	}
	return sc, nil
}

// buildTableFunc plans a function in FROM that reads no other FROM item
// (one that does is LATERAL: lateral.go). A set-returning function over
// constants is planned as its rows, computed now; one over other
// expressions that read no row (parameters, current_setting(…), other
// functions of those) runs when the query does, per execution
// (plan.FuncRows), and so does a user table function. Any other
// function is, as in PostgreSQL, a table of one row and one column, named
// by the alias or else by the function.
func (b *builder) buildTableFunc(tf *sql.TableFunc) (plan.Node, *scope, error) {
	if fn, ok := b.userFunction(tf.Name); ok && fn.IsTable() && !expr.IsSetFunc(tf.Name) && !expr.Exists(tf.Name) {
		return b.userTableFunc(tf)
	}
	if operators.IsAggregate(tf.Name) && !expr.IsSetFunc(tf.Name) && !expr.Exists(tf.Name) {
		return nil, nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in functions in FROM")
	}
	if !expr.IsSetFunc(tf.Name) && expr.Exists(tf.Name) {
		return b.buildScalarTableFunc(tf)
	}
	call, err := b.setCall(tf, &scope{})
	if err != nil {
		return nil, nil, err
	}
	constant := true
	for _, a := range call.Args {
		if err := b.fromFuncArg(tf, a); err != nil {
			return nil, nil, err
		}
		constant = constant && a.Kind == expr.KConst
	}
	sc, err := tableFuncScope(tf, call)
	if err != nil {
		return nil, nil, err
	}
	if !constant {
		return &plan.FuncRows{Set: call.Fn.Key(), Args: call.Args, Ordinality: tf.Ordinality}, sc, nil
	}
	rows, err := call.Rows(tf.Ordinality)
	if err != nil {
		return nil, nil, err
	}
	return &plan.Values{Rows: rows}, sc, nil
}

// fromFuncArg refuses an argument of a function in FROM that cannot be
// computed once per execution: one reading the enclosing query's row
// (such a function is only supported as the only FROM item of a
// subquery), or holding a correlated subquery. An uncorrelated subquery
// is one of the select's (b.subs): the chain holding them runs the FROM
// items with their values at hand.
func (b *builder) fromFuncArg(tf *sql.TableFunc, a *expr.Expr) error {
	if a.HasOuter() {
		return pgerror.NotSupported("function %s over columns of the enclosing query, except as the only FROM item of a subquery", tf.Name)
	}
	correlated := false
	a.Walk(func(n *expr.Expr) {
		if n.Kind == expr.KSubquery && (n.Col >= len(b.subs) || b.subs[n.Col].Correlated) {
			correlated = true
		}
	})
	if correlated {
		return pgerror.NotSupported("function %s in FROM over a correlated subquery", tf.Name)
	}
	return nil
}

// buildScalarTableFunc plans a function that returns one value, in FROM:
// one row of one column (FROM upper('a') AS x, FROM string_to_array(…) s).
func (b *builder) buildScalarTableFunc(tf *sql.TableFunc) (plan.Node, *scope, error) {
	for _, a := range tf.Args {
		if hasAggregate(a) {
			return nil, nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in functions in FROM")
		}
	}
	x, sc, err := b.scalarFuncColumn(tf, &scope{})
	if err != nil {
		return nil, nil, err
	}
	if err := b.fromFuncArg(tf, x); err != nil {
		return nil, nil, err
	}
	if x.Kind == expr.KConst {
		row := types.Row{x.Val}
		if tf.Ordinality {
			row = append(row, types.NewInt8(1))
		}
		return &plan.Values{Rows: []types.Row{row}}, sc, nil
	}
	return &plan.FuncRows{Args: []*expr.Expr{x}, Ordinality: tf.Ordinality}, sc, nil
}

// scalarFuncColumn builds a function in FROM that returns one value, its
// arguments over sc, and the scope of its one column (a literal's type
// taken as text), named as PostgreSQL names it.
func (b *builder) scalarFuncColumn(tf *sql.TableFunc, sc *scope) (*expr.Expr, *scope, error) {
	x, err := b.build(&exprCtx{scope: sc, what: "FROM", noAggs: true}, &sql.FuncCall{Name: tf.Name, Args: tf.Args})
	if err != nil {
		return nil, nil, err
	}
	if x.Type == types.Unknown || x.Type == types.Null {
		if x, err = expr.Cast(x, types.Text); err != nil {
			return nil, nil, err
		}
	}
	col, err := tableFuncScope(tf, &expr.SetCall{Names: []string{tf.Name}, Types: []types.Type{x.Type}})
	return x, col, err
}

// funcScan plans a subquery whose only FROM item is a function of the
// enclosing query's row as an expression evaluated in place. It reports
// false when q is not such a subquery.
func (b *builder) funcScan(c *exprCtx, q sql.QueryExpr, mode string, x *expr.Expr) (*expr.Expr, bool, error) {
	sel, ok := q.(*sql.Select)
	if !ok || len(sel.From) != 1 {
		return nil, false, nil
	}
	tf, ok := sel.From[0].(*sql.TableFunc)
	if !ok {
		return nil, false, nil
	}
	child := &builder{cat: b.cat, params: append([]types.Type(nil), b.params...), outer: c.scope}
	call, err := child.setCall(tf, &scope{})
	if err != nil || !child.correlated {
		return nil, false, nil // the ordinary plan reports the error, or runs it
	}
	if c.aggs != nil {
		return nil, true, pgerror.NotSupported(errCorrelatedAboveGroups)
	}
	if sel.Distinct || len(sel.GroupBy) > 0 || sel.Having != nil || len(sel.OrderBy) > 0 ||
		sel.Limit != nil || sel.Offset != nil || len(sel.Items) != 1 || hasAggregate(sel.Items[0].Expr) {
		return nil, true, pgerror.NotSupported("a subquery over function %s of the enclosing query's columns with more than WHERE and one select item", tf.Name)
	}
	fsc, err := tableFuncScope(tf, call)
	if err != nil {
		return nil, true, err
	}
	var where *expr.Expr = expr.Const(types.NewBool(true))
	if sel.Where != nil {
		if where, err = child.wherePred(fsc, sel.Where); err != nil {
			return nil, true, err
		}
	}
	itemAST := sel.Items[0].Expr
	if star, ok := itemAST.(*sql.Star); ok {
		if len(fsc.cols) != 1 || (star.Table != "" && star.Table != fsc.cols[0].table) {
			return nil, true, pgerror.New(pgerror.SyntaxError, "subquery must return only one column")
		}
		itemAST = &sql.ColumnRef{Name: fsc.cols[0].name}
	}
	item, err := child.build(&exprCtx{scope: fsc, what: "SELECT", noAggs: true}, itemAST)
	if err != nil {
		return nil, true, err
	}
	if isUntypedParam(item) {
		item = child.inferParam(item, types.Text)
	}
	if item.Type == types.Unknown || item.Type == types.Null {
		if item, err = expr.Cast(item, types.Text); err != nil {
			return nil, true, err
		}
	}
	if len(child.subs) > 0 {
		return nil, true, pgerror.NotSupported("subqueries inside a subquery over function %s of the enclosing query's columns", tf.Name)
	}
	b.params = child.params
	// In place, the enclosing row is the current row: its columns follow
	// the function's.
	width := len(fsc.cols)
	shifted := func(o *expr.Expr) *expr.Expr { return expr.Col(width+o.Col, o.Type, o.Name) }
	current := func(o *expr.Expr) *expr.Expr { return expr.Col(o.Col, o.Type, o.Name) }
	for i, a := range call.Args {
		call.Args[i] = a.MapOuter(current)
	}
	where, item = where.MapOuter(shifted), item.MapOuter(shifted)
	t := item.Type
	switch mode {
	case "exists", "in":
		t = types.Bool
	case "array":
		if t = types.ArrayOf(item.Type); t == types.Null {
			return nil, true, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", item.Type)
		}
	}
	if mode == "in" {
		x = b.inferParam(x, item.Type)
		ct, err := expr.CommonType(x.Type, item.Type)
		if err != nil {
			return nil, true, err
		}
		if x, err = expr.Coerce(x, ct, false); err != nil {
			return nil, true, err
		}
		if item, err = expr.Coerce(item, ct, false); err != nil {
			return nil, true, err
		}
	}
	return expr.FuncScan(call, tf.Ordinality, where, item, mode, t, x), true, nil
}

// missingAggregates are PostgreSQL's aggregates fvsql does not have yet:
// calls of them are 0A000, not 42883 (undefined function).
var missingAggregates = map[string]bool{
	"bit_and": true, "bit_or": true, "bit_xor": true, "xmlagg": true, "any_value": true,
}

// catalogLookups are functions whose value is a column of a system
// relation's row found by the OID in their first argument: planned as a
// (correlated, unless the OID is a constant) scalar subquery over that
// relation, so they read the catalog of the server running the query.
// The other arguments (pg_get_viewdef's pretty flag) change nothing.
var catalogLookups = map[string]struct{ schema, rel, key, value string }{
	"pg_get_viewdef": {"fvsql_catalog", "definitions", "oid", "definition"},
}

func (b *builder) catalogLookup(c *exprCtx, name string, args []*expr.Expr) (*expr.Expr, bool, error) {
	l, ok := catalogLookups[name]
	if !ok || len(args) == 0 || len(args) > 2 || !expr.CanImplicitCast(args[0].Type, types.Oid) {
		return nil, false, nil
	}
	key, err := expr.Coerce(b.inferParam(args[0], types.Oid), types.Oid, false)
	if err != nil {
		return nil, true, err
	}
	if key.HasOuter() {
		return nil, true, pgerror.NotSupported("%s over a column of an enclosing query", name)
	}
	correlated := len(key.Columns()) > 0
	if correlated && c.aggs != nil {
		return nil, true, pgerror.NotSupported("%s above GROUP BY", name)
	}
	rel, err := b.cat.Lookup(l.schema, l.rel)
	if err != nil {
		return nil, true, err
	}
	kc, vc := rel.ColumnIndex(l.key), rel.ColumnIndex(l.value)
	// The current row is the lookup's enclosing row.
	outer := key.Substitute(outerRefs(c.scope))
	match, err := expr.Compare("=", expr.Col(kc, rel.Columns[kc].Type, l.key), outer)
	if err != nil {
		return nil, true, err
	}
	sub := appendSteps(&plan.Source{Dataset: DatasetName(rel)},
		plan.Step{Op: plan.OpFilter, Pred: match},
		plan.Step{Op: plan.OpProject, Exprs: []*expr.Expr{expr.Col(vc, rel.Columns[vc].Type, l.value)}, Names: []string{l.value}})
	sq := plan.Subquery{Plan: sub, Correlated: correlated}
	if !expr.CallsVolatile(key) {
		sq.Outer = distinctInts(key.Columns())
	}
	b.subs = append(b.subs, sq)
	return expr.Subquery(len(b.subs)-1, "scalar", rel.Columns[vc].Type, nil), true, nil
}

// outerRefs maps each column of sc to an outer reference to it.
func outerRefs(sc *scope) []*expr.Expr {
	out := make([]*expr.Expr, len(sc.cols))
	for i, c := range sc.cols {
		out[i] = expr.Outer(i, c.typ, c.name)
	}
	return out
}

// regInput reads a constant name cast to regclass, regnamespace, regrole
// or regproc ('pg_catalog.pg_class'::regclass) as the OID it names, found in
// the catalog now, as PostgreSQL's input functions do. Other values keep
// the plain OID cast (a number).
func (b *builder) regInput(typeName string, x *expr.Expr) (*expr.Expr, bool, error) {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(typeName)), "pg_catalog.")
	if t != "regclass" && t != "regnamespace" && t != "regrole" && t != "regproc" {
		return nil, false, nil
	}
	if x.Kind != expr.KConst && (x.Type.IsString() || isUntypedParam(x)) {
		// a column or parameter: looked up when the query runs, by the
		// server's regclassin (…) over the session's catalog
		if expr.Exists(t + "in") {
			x, err := expr.Call(t+"in", b.inferParam(x, types.Text))
			return x, true, err
		}
	}
	if x.Kind != expr.KConst || !x.Val.K.IsString() {
		return nil, false, nil
	}
	s := strings.TrimSpace(x.Val.S)
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		return nil, false, nil // an OID
	}
	o, err := RegOID(b.cat, t, s)
	if err != nil {
		return nil, true, err
	}
	return expr.Const(types.NewInt(types.Oid, int64(o))), true, nil
}

// RegOID is the OID that name s of type t (regclass, regnamespace,
// regrole or regproc) stands for in cat, as PostgreSQL's input function
// of t finds it, or its error (42P01, 3F000, 42704, 42883).
func RegOID(cat Catalog, t, s string) (uint32, error) {
	parts := splitQualified(s)
	switch t {
	case "regnamespace":
		if o, ok := catalog.NamespaceOID(parts[len(parts)-1]); ok && len(parts) == 1 {
			return o, nil
		}
		return 0, pgerror.New(pgerror.UndefinedObject, "schema %q does not exist", s)
	case "regproc":
		if fc, ok := cat.(FunctionCatalog); ok && (len(parts) == 1 || len(parts) == 2 && parts[0] == "public") {
			if fn, ok := fc.Function(parts[len(parts)-1]); ok {
				return fn.OID, nil
			}
		}
		if len(parts) == 2 && parts[0] == "pg_catalog" || len(parts) == 1 {
			return catalog.ProcOID(parts[len(parts)-1])
		}
		return 0, pgerror.New(pgerror.UndefinedFunction, "function %q does not exist", s)
	case "regrole":
		if len(parts) == 1 && parts[0] == "fvsql" {
			return 10, nil
		}
		return 0, pgerror.New(pgerror.UndefinedObject, "role %q does not exist", s)
	}
	schema, name := "", parts[len(parts)-1]
	if len(parts) == 2 {
		schema = parts[0]
	} else if len(parts) > 2 {
		return 0, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist", s)
	}
	rel, err := cat.Lookup(schema, name)
	if err != nil {
		return 0, err
	}
	return rel.OID, nil
}

// splitQualified splits a possibly qualified, possibly quoted name
// (a."B".c) into its parts, unquoted names folded to lower case.
func splitQualified(s string) []string {
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' && quoted && i+1 < len(s) && s[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
		case c == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		case quoted:
			cur.WriteByte(c)
		default:
			cur.WriteString(strings.ToLower(string(c)))
		}
	}
	return append(parts, cur.String())
}
