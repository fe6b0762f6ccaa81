package planner

import (
	"slices"
	"strings"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// exprCtx says how expressions of one clause are built.
type exprCtx struct {
	scope *scope
	// what names the clause for error messages ("WHERE", "GROUP BY").
	what string
	// aggs, when set, is the aggregation this clause sits above: group
	// expressions and aggregate calls resolve to its output columns, and
	// any other column reference is a grouping error.
	aggs *aggState
	// noAggs forbids aggregate calls (WHERE, GROUP BY, inside aggregates).
	noAggs bool
	// windows, when set, are the columns the SELECT's window function
	// calls were computed into (window.go), by fingerprint.
	windows map[string]winCol
	// srfs, when set, are the columns the select list's set-returning
	// calls were computed into (setlist.go), by fingerprint.
	srfs map[string]setCols
}

// aggState tracks the GROUP BY terms and aggregate calls of a SELECT.
type aggState struct {
	groupKeys []string // fingerprints of GROUP BY expressions (several may name one column)
	groupCols []int    // their output columns
	ngroups   int      // number of group columns; aggregates follow them
	aggKeys   []string
	specs     []plan.AggSpec
	out       *scope // the aggregate step's output scope
}

func (a *aggState) find(fp string) (int, bool) {
	for i, k := range a.groupKeys {
		if k == fp {
			return a.groupCols[i], true
		}
	}
	for i, k := range a.aggKeys {
		if k == fp {
			return a.ngroups + i, true
		}
	}
	return 0, false
}

// paramRef returns the parameter node for $n, typed if known.
func (b *builder) paramRef(n int) (*expr.Expr, error) {
	if n < 1 || n > 65535 {
		return nil, pgerror.New(pgerror.UndefinedParameter, "there is no parameter $%d", n)
	}
	for len(b.params) < n {
		b.params = append(b.params, types.Unknown)
	}
	return expr.Param(n-1, b.params[n-1]), nil
}

// inferParam gives an untyped parameter the type t (from the other side
// of an operator, or the target column of an INSERT).
func (b *builder) inferParam(e *expr.Expr, t types.Type) *expr.Expr {
	if e.Kind != expr.KParam || e.Type != types.Unknown || t == types.Unknown || t == types.Null {
		return e
	}
	b.params[e.Col] = t
	return expr.Param(e.Col, t)
}

// boolCondition refuses a WHERE or HAVING condition (what) that is not
// boolean; NULL is allowed and passes no row.
func boolCondition(pred *expr.Expr, what string) error {
	if pred.Type != types.Bool && pred.Type != types.Null {
		return pgerror.New(pgerror.DatatypeMismatch, "argument of %s must be type boolean, not type %s", what, pred.Type)
	}
	return nil
}

// wherePred plans a WHERE condition over scope sc: a boolean (an untyped
// parameter taken as one), else 42804.
func (b *builder) wherePred(sc *scope, e sql.Expr) (*expr.Expr, error) {
	pred, err := b.build(&exprCtx{scope: sc, what: "WHERE", noAggs: true}, e)
	if err != nil {
		return nil, err
	}
	pred = b.inferParam(pred, types.Bool)
	return pred, boolCondition(pred, "WHERE")
}

func isUntypedParam(e *expr.Expr) bool { return e.Kind == expr.KParam && e.Type == types.Unknown }

// buildAll builds each of es.
func (b *builder) buildAll(c *exprCtx, es []sql.Expr) ([]*expr.Expr, error) {
	out := make([]*expr.Expr, len(es))
	for i, e := range es {
		x, err := b.build(c, e)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// build converts an AST expression into a typed expression, noting
// whether it calls a volatile function (builder.volatile).
func (b *builder) build(c *exprCtx, e sql.Expr) (*expr.Expr, error) {
	x, err := b.buildExpr(c, e)
	if err == nil && x != nil && !b.volatile && expr.CallsVolatile(x) {
		b.volatile = true
	}
	return x, err
}

func (b *builder) buildExpr(c *exprCtx, e sql.Expr) (*expr.Expr, error) {
	if c.aggs != nil {
		if col, ok := c.aggs.find(fingerprint(e)); ok {
			return c.aggs.out.ref(col), nil
		}
	}
	if f, ok := e.(*sql.FuncCall); ok && f.Over != nil && c.windows != nil {
		if w, ok := c.windows[fingerprint(f)]; ok {
			return expr.Col(w.col, w.typ, w.name), nil
		}
	}
	if f, ok := e.(*sql.FuncCall); ok && c.srfs != nil {
		if s, ok := c.srfs[fingerprint(f)]; ok {
			return s.value(b), nil
		}
	}
	switch e := e.(type) {
	case *sql.Literal:
		return expr.Const(e.Value), nil
	case *sql.Param:
		return b.paramRef(e.N)
	case *sql.ColumnRef:
		if c.aggs != nil {
			// Not a GROUP BY term: is it a column of the input at all? Or
			// of the enclosing query's row, one value for every group?
			if _, err := c.scope.resolve(e.Table, e.Name); err != nil {
				if x, ok := b.outerRef(e, err); ok {
					return x, nil
				}
				return nil, err
			}
			return nil, pgerror.New(pgerror.GroupingError,
				"column %q must appear in the GROUP BY clause or be used in an aggregate function", qualified(e))
		}
		i, err := c.scope.resolve(e.Table, e.Name)
		if err != nil && e.Name == "tableoid" {
			if o, ok := c.scope.tableOID(e.Table); ok {
				return expr.Const(types.NewInt(types.Oid, int64(o))), nil
			}
		}
		if err != nil {
			if x, ok := b.outerRef(e, err); ok {
				return x, nil
			}
			if e.Pos > 0 {
				err = pgerror.WithPosition(err, e.Pos)
			}
			return nil, err
		}
		return c.scope.ref(i), nil
	case *sql.Star:
		return nil, pgerror.New(pgerror.SyntaxError, "* is not allowed in %s", c.what)
	case *sql.Unary:
		x, err := b.build(c, e.X)
		if err != nil {
			return nil, err
		}
		if e.Op == "not" {
			return expr.Not(x)
		}
		if isUntypedParam(x) {
			x = b.inferParam(x, types.Int8)
		}
		return expr.Call(e.Op, x)
	case *sql.Binary:
		return b.buildBinary(c, e)
	case *sql.IsNull:
		x, err := b.build(c, e.X)
		if err != nil {
			return nil, err
		}
		return expr.IsNull(x, e.Not)
	case *sql.IsBool:
		x, err := b.build(c, e.X)
		if err != nil {
			return nil, err
		}
		x = b.inferParam(x, types.Bool)
		// x IS TRUE is (x = true) with NULL as false; IS NOT TRUE the negation.
		return expr.Distinct(x, expr.Const(types.NewBool(e.Value)), !e.Not)
	case *sql.Between:
		x, err := b.build(c, e.X)
		if err != nil {
			return nil, err
		}
		lo, err := b.build(c, e.Lo)
		if err != nil {
			return nil, err
		}
		hi, err := b.build(c, e.Hi)
		if err != nil {
			return nil, err
		}
		lo, hi = b.inferParam(lo, x.Type), b.inferParam(hi, x.Type)
		ge, err := expr.Compare(">=", x, lo)
		if err != nil {
			return nil, err
		}
		le, err := expr.Compare("<=", x, hi)
		if err != nil {
			return nil, err
		}
		both, err := expr.And(ge, le)
		if err != nil || !e.Not {
			return both, err
		}
		return expr.Not(both)
	case *sql.In:
		if e.Sub != nil {
			x, err := b.build(c, e.X)
			if err != nil {
				return nil, err
			}
			in, err := b.subqueryExpr(c, e.Sub, "in", x)
			if err != nil {
				return nil, err
			}
			if e.Not {
				return expr.Not(in)
			}
			return in, nil
		}
		x, err := b.build(c, e.X)
		if err != nil {
			return nil, err
		}
		list := make([]*expr.Expr, len(e.List))
		for i, it := range e.List {
			if list[i], err = b.build(c, it); err != nil {
				return nil, err
			}
			list[i] = b.inferParam(list[i], x.Type)
		}
		return expr.In(x, list, e.Not)
	case *sql.Like:
		return b.buildLike(c, e)
	case *sql.Cast:
		if a, ok := e.X.(*sql.ArrayExpr); ok && len(a.Items) == 0 {
			return expr.EmptyArray(e.Type) // ARRAY[]::int[]
		}
		x, err := b.build(c, e.X)
		if err != nil {
			return nil, err
		}
		if r, ok, err := b.regInput(e.TypeName, x); ok || err != nil {
			return r, err
		}
		x = b.inferParam(x, e.Type)
		return expr.Cast(x, e.Type)
	case *sql.Case:
		return b.buildCase(c, e)
	case *sql.FuncCall:
		return b.buildFunc(c, e)
	case *sql.Subquery:
		mode := "scalar"
		switch {
		case e.Exists:
			mode = "exists"
		case e.Array:
			mode = "array"
		}
		return b.subqueryExpr(c, e.Query, mode, nil)
	case *sql.RowExpr:
		return nil, pgerror.NotSupported("row constructors")
	case *sql.ArrayExpr:
		return b.buildArray(c, e)
	case *sql.Subscript:
		return b.buildSubscript(c, e)
	case *sql.FieldSelect:
		return b.buildFieldSelect(c, e)
	case *sql.Quantified:
		return b.buildQuantified(c, e)
	}
	return nil, pgerror.NotSupported("expression %T", e)
}

func qualified(c *sql.ColumnRef) string {
	if c.Table != "" {
		return c.Table + "." + c.Name
	}
	return c.Name
}

func (b *builder) buildBinary(c *exprCtx, e *sql.Binary) (*expr.Expr, error) {
	l, err := b.build(c, e.L)
	if err != nil {
		return nil, err
	}
	r, err := b.build(c, e.R)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "and":
		return expr.And(b.inferParam(l, types.Bool), b.inferParam(r, types.Bool))
	case "or":
		return expr.Or(b.inferParam(l, types.Bool), b.inferParam(r, types.Bool))
	case "is distinct from", "is not distinct from":
		l, r = b.inferParam(l, r.Type), b.inferParam(r, l.Type)
		return expr.Distinct(l, r, e.Op == "is not distinct from")
	}
	l, r = b.inferParam(l, r.Type), b.inferParam(r, l.Type)
	if isUntypedParam(l) && isUntypedParam(r) {
		l, r = b.inferParam(l, types.Text), b.inferParam(r, types.Text)
	}
	if e.Op == "<>" || e.Op == "!=" {
		return expr.Compare("<>", l, r)
	}
	return expr.Call(e.Op, l, r)
}

func (b *builder) buildLike(c *exprCtx, e *sql.Like) (*expr.Expr, error) {
	x, err := b.build(c, e.X)
	if err != nil {
		return nil, err
	}
	p, err := b.build(c, e.Pattern)
	if err != nil {
		return nil, err
	}
	x, p = b.inferParam(x, types.Text), b.inferParam(p, types.Text)
	if e.Escape != nil {
		// x LIKE p ESCAPE e is x LIKE like_escape(p, e), as in PostgreSQL.
		esc, err := b.build(c, e.Escape)
		if err != nil {
			return nil, err
		}
		if p, err = expr.Call("like_escape", p, b.inferParam(esc, types.Text)); err != nil {
			return nil, err
		}
	}
	name := "like"
	switch {
	case e.Regex && e.CaseInsensitive:
		name = "regexp_imatch_bool"
	case e.Regex:
		name = "regexp_match_bool"
	case e.CaseInsensitive:
		name = "ilike"
	}
	m, err := expr.Call(name, x, p)
	if err != nil {
		return nil, err
	}
	if e.Not {
		return expr.Not(m)
	}
	return m, nil
}

func (b *builder) buildCase(c *exprCtx, e *sql.Case) (*expr.Expr, error) {
	var operand *expr.Expr
	if e.Operand != nil {
		var err error
		if operand, err = b.build(c, e.Operand); err != nil {
			return nil, err
		}
	}
	conds := make([]*expr.Expr, len(e.Whens))
	results := make([]*expr.Expr, len(e.Whens))
	for i, w := range e.Whens {
		cond, err := b.build(c, w.Cond)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			if cond, err = expr.Compare("=", operand, b.inferParam(cond, operand.Type)); err != nil {
				return nil, err
			}
		}
		conds[i] = b.inferParam(cond, types.Bool)
		if results[i], err = b.build(c, w.Result); err != nil {
			return nil, err
		}
	}
	var els *expr.Expr
	if e.Else != nil {
		var err error
		if els, err = b.build(c, e.Else); err != nil {
			return nil, err
		}
	}
	return expr.Case(conds, results, els)
}

func (b *builder) buildFunc(c *exprCtx, e *sql.FuncCall) (*expr.Expr, error) {
	if e.Over != nil {
		if c.what == "SELECT" {
			// A select list whose window calls were not planned: a
			// continuous query's (bounded SELECTs plan them in window.go).
			return nil, pgerror.NotSupported("window function %s in a continuous query", e.Name).
				WithHint("Use ROW_NUMBER(), RANK() or DENSE_RANK() OVER (…) <= N in a materialized view for top-N.")
		}
		return nil, pgerror.New(pgerror.WindowingError, "window functions are not allowed in %s", c.what)
	}
	if operators.IsWindowFunc(e.Name) {
		return nil, pgerror.New(pgerror.WrongObjectType, "window function %s requires an OVER clause", e.Name)
	}
	if operators.IsAggregate(e.Name) {
		if c.aggs != nil {
			// find() above matched every aggregate of this SELECT; reaching
			// here means an aggregate nested in another one.
			return nil, pgerror.New(pgerror.GroupingError, "aggregate function calls cannot be nested")
		}
		return nil, pgerror.New(pgerror.GroupingError, "aggregate functions are not allowed in %s", c.what)
	}
	if missingAggregates[e.Name] && !expr.Exists(e.Name) {
		// before its arguments, whose columns are no group's
		return nil, pgerror.NotSupported("aggregate function %s", e.Name)
	}
	if e.Distinct || e.Star || e.Filter != nil {
		return nil, pgerror.New(pgerror.WrongObjectType, "%s is not an aggregate function", e.Name)
	}
	args, err := b.buildAll(c, e.Args)
	if err != nil {
		return nil, err
	}
	switch e.Name {
	case "coalesce":
		return expr.Coalesce(args...)
	case "nullif", "greatest", "least":
		// polymorphic: untyped params take the others' type
		var t types.Type = types.Null
		for _, a := range args {
			if !isUntypedParam(a) && a.Type != types.Unknown && a.Type != types.Null {
				t = a.Type
			}
		}
		for i := range args {
			args[i] = b.inferParam(args[i], t)
		}
	}
	for i := range args {
		if isUntypedParam(args[i]) {
			args[i] = b.inferParam(args[i], types.Text)
		}
	}
	if x, ok, err := b.catalogLookup(c, e.Name, args); ok || err != nil {
		return x, err
	}
	if !expr.Exists(e.Name) {
		if fn, ok := b.userFunction(e.Name); ok {
			return b.callUser(fn, args)
		}
		if missingAggregates[e.Name] {
			return nil, pgerror.NotSupported("aggregate function %s", e.Name)
		}
		if expr.IsSetFunc(e.Name) {
			return nil, pgerror.NotSupported("set-returning function %s outside FROM", e.Name)
		}
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", e.Name)
	}
	return expr.Call(e.Name, args...)
}

// collectAggs finds the aggregate calls of an expression tree (not
// descending into them) and records them in a.
func (b *builder) collectAggs(c *exprCtx, a *aggState, e sql.Expr) error {
	var err error
	walkExpr(e, func(n sql.Expr) bool {
		if err != nil {
			return false
		}
		f, ok := n.(*sql.FuncCall)
		if !ok || !operators.IsAggregate(f.Name) || f.Over != nil {
			return true
		}
		fp := fingerprint(f)
		for _, k := range a.aggKeys {
			if k == fp {
				return false
			}
		}
		if len(f.OrderBy) > 0 && f.Distinct {
			for _, o := range f.OrderBy {
				if len(f.Args) == 0 || fingerprint(o.Expr) != fingerprint(f.Args[0]) {
					err = pgerror.New(pgerror.InvalidColumnReference, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
					return false
				}
			}
		}
		var fraction sql.Expr // a percentile's
		if f.WithinGroup || operators.IsOrderedSet(f.Name) {
			if f, fraction, err = orderedSetCall(f); err != nil {
				return false
			}
		}
		var filter sql.Expr // array_agg's; the other aggregates' is a CASE in the argument
		if f.Filter != nil && f.Name == "array_agg" {
			g := *f
			g.Filter, filter, f = nil, f.Filter, &g
		} else if f.Filter != nil {
			if f, err = filterAsCase(f); err != nil {
				return false
			}
		}
		spec := plan.AggSpec{Name: f.Name, Star: f.Star, Distinct: f.Distinct}
		if !f.Star {
			if len(f.Args) != aggArity(f.Name) {
				err = pgerror.New(pgerror.UndefinedFunction, "function %s with %d arguments does not exist", f.Name, len(f.Args))
				return false
			}
			inner := &exprCtx{scope: c.scope, what: "aggregate function arguments", noAggs: true}
			var arg *expr.Expr
			if arg, err = b.aggValue(inner, f); err != nil {
				return false
			}
			spec.Arg = arg
			for _, o := range f.OrderBy {
				var k *expr.Expr
				if k, err = b.build(inner, o.Expr); err != nil {
					return false
				}
				if isUntypedParam(k) {
					k = b.inferParam(k, types.Text)
				}
				spec.OrderBy, spec.Order = append(spec.OrderBy, k), append(spec.Order, sortKey(0, o))
			}
			if f.Name == "string_agg" {
				if spec.Delim, err = b.aggDelim(inner, arg, f.Args[1]); err != nil {
					return false
				}
			}
			if fraction != nil {
				if spec.Fraction, err = b.aggConstant(inner, fraction, types.Float8, f.Name+" with a fraction"); err != nil {
					return false
				}
			}
			if filter != nil {
				fctx := &exprCtx{scope: c.scope, what: "FILTER", noAggs: true}
				if spec.Filter, err = b.build(fctx, filter); err != nil {
					return false
				}
				if isUntypedParam(spec.Filter) {
					spec.Filter = b.inferParam(spec.Filter, types.Bool)
				}
				if err = boolCondition(spec.Filter, "FILTER"); err != nil {
					return false
				}
			}
		}
		if _, err = operators.ResolveSpec(spec); err != nil {
			return false
		}
		a.aggKeys = append(a.aggKeys, fp)
		a.specs = append(a.specs, spec)
		return false
	})
	return err
}

// filterAsCase rewrites agg(x) FILTER (WHERE c) as agg(CASE WHEN c THEN
// x END), and count(*) FILTER (WHERE c) as count(CASE WHEN c THEN 1 END):
// the same for every aggregate that skips NULL arguments, which all but
// array_agg do (its FILTER is AggSpec.Filter). The caller keeps the
// original call's fingerprint, which the SELECT list's reference to the
// aggregate is matched by.
func filterAsCase(f *sql.FuncCall) (*sql.FuncCall, error) {
	g := *f
	g.Filter = nil
	args := append([]sql.Expr(nil), f.Args...)
	if f.Star {
		g.Star = false
		args = []sql.Expr{&sql.Literal{Value: types.NewInt(types.Int4, 1)}}
	}
	if len(args) > 0 {
		args[0] = &sql.Case{Whens: []sql.When{{Cond: f.Filter, Result: args[0]}}}
	}
	g.Args = args
	return &g, nil
}

// orderedSetCall checks an ordered-set aggregate's call, f(fraction)
// WITHIN GROUP (ORDER BY x) or mode() WITHIN GROUP (ORDER BY x), and
// returns it as f(x ORDER BY x) with its fraction (nil for mode): the
// value is the argument an aggregate's FILTER and ORDER BY apply to.
func orderedSetCall(f *sql.FuncCall) (*sql.FuncCall, sql.Expr, error) {
	switch {
	case !f.WithinGroup:
		return nil, nil, pgerror.New(pgerror.UndefinedFunction, "WITHIN GROUP is required for ordered-set aggregate %s", f.Name)
	case !operators.IsOrderedSet(f.Name):
		return nil, nil, pgerror.New(pgerror.UndefinedFunction, "%s is not an ordered-set aggregate, so it cannot have WITHIN GROUP", f.Name)
	case f.Distinct:
		return nil, nil, pgerror.New(pgerror.SyntaxError, "cannot use DISTINCT with WITHIN GROUP")
	}
	direct := 1
	if f.Name == "mode" {
		direct = 0
	}
	if len(f.Args) != direct || len(f.OrderBy) != 1 || f.Star {
		return nil, nil, pgerror.New(pgerror.UndefinedFunction, "function %s with %d direct and %d ordered arguments does not exist", f.Name, len(f.Args), len(f.OrderBy)).
			WithHint("percentile_cont(fraction) and percentile_disc(fraction) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x).")
	}
	var fraction sql.Expr
	if direct == 1 {
		fraction = f.Args[0]
	}
	g := *f
	g.Args = []sql.Expr{f.OrderBy[0].Expr}
	g.WithinGroup = false
	return &g, fraction, nil
}

// aggArity is how many arguments an aggregate takes (count(*) aside):
// string_agg its value and delimiter, a statistic of two variables y and
// x, the others one.
func aggArity(name string) int {
	if name == "string_agg" || operators.IsTwoArgAggregate(name) {
		return 2
	}
	return 1
}

// aggValue plans an aggregate's value, the argument it folds: its first,
// or a statistic's y and x as one record (pairArg). An untyped parameter
// is text for string_agg and array_agg, numeric for the others.
func (b *builder) aggValue(c *exprCtx, f *sql.FuncCall) (*expr.Expr, error) {
	if operators.IsTwoArgAggregate(f.Name) {
		return b.pairArg(c, f)
	}
	x, err := b.build(c, f.Args[0])
	if err != nil || !isUntypedParam(x) {
		return x, err
	}
	if f.Name == "string_agg" || f.Name == "array_agg" {
		return b.inferParam(x, types.Text), nil
	}
	return b.inferParam(x, types.Numeric), nil
}

// pairArg plans the two values of a statistic of two variables, f(y,
// x) (corr, covar_*, regr_*), as its one argument: a record of both as
// double precision, the type PostgreSQL's take.
func (b *builder) pairArg(c *exprCtx, f *sql.FuncCall) (*expr.Expr, error) {
	args := make([]*expr.Expr, len(f.Args))
	var ts []string
	for i, a := range f.Args {
		x, err := b.build(c, a)
		if err != nil {
			return nil, err
		}
		if isUntypedParam(x) {
			x = b.inferParam(x, types.Float8)
		}
		args[i] = x
		ts = append(ts, x.Type.String())
	}
	for i, x := range args {
		if !expr.CanImplicitCast(x.Type, types.Float8) {
			return nil, pgerror.New(pgerror.UndefinedFunction, "function %s(%s) does not exist", f.Name, strings.Join(ts, ", ")).
				WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
		}
		var err error
		if args[i], err = expr.Cast(x, types.Float8); err != nil {
			return nil, err
		}
	}
	return expr.Row(args...), nil
}

// aggDelim plans string_agg's delimiter: of the value's type (text or
// bytea), and a constant of the query (aggConstant).
func (b *builder) aggDelim(c *exprCtx, arg *expr.Expr, e sql.Expr) (*expr.Expr, error) {
	t := types.Text
	if arg.Type == types.Bytea {
		t = types.Bytea
	}
	d, err := b.aggConstant(c, e, t, "string_agg with a delimiter")
	if err != nil {
		return nil, err
	}
	if d.Type != t && d.Type != types.Unknown && d.Type != types.Null && !(t == types.Text && d.Type.IsString()) {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function string_agg(%s, %s) does not exist", arg.Type, d.Type).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	}
	return expr.Coerce(d, t, false)
}

// aggConstant plans an aggregate's argument that is one value for the
// whole query, what ("string_agg with a delimiter"): a
// constant of the query (literals, parameters and functions of them),
// evaluated once when the aggregate is built. A parameter is of type t;
// a fraction is coerced to it.
func (b *builder) aggConstant(c *exprCtx, e sql.Expr, t types.Type, what string) (*expr.Expr, error) {
	d, err := b.build(c, e)
	if err != nil {
		return nil, err
	}
	if isUntypedParam(d) {
		d = b.inferParam(d, t)
	}
	constant := true
	d.Walk(func(n *expr.Expr) {
		switch n.Kind {
		case expr.KCol, expr.KOuter, expr.KSubquery, expr.KFuncScan:
			constant = false
		}
	})
	if !constant {
		return nil, pgerror.NotSupported("%s that is not a constant", what).
			WithHint("Use a literal or a parameter.")
	}
	if t == types.Float8 && d.Type.IsArray() { // a percentile's array of fractions
		t = types.ArrayOf(types.Float8)
	}
	if t.Elem() == types.Float8 || t == types.Float8 {
		return expr.Coerce(d, t, false)
	}
	return d, nil
}

// walkExpr visits AST expressions depth first; fn returns false to skip
// a node's children.
func walkExpr(e sql.Expr, fn func(sql.Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *sql.Unary:
		walkExpr(e.X, fn)
	case *sql.Binary:
		walkExpr(e.L, fn)
		walkExpr(e.R, fn)
	case *sql.IsNull:
		walkExpr(e.X, fn)
	case *sql.IsBool:
		walkExpr(e.X, fn)
	case *sql.Between:
		walkExpr(e.X, fn)
		walkExpr(e.Lo, fn)
		walkExpr(e.Hi, fn)
	case *sql.In:
		walkExpr(e.X, fn)
		for _, x := range e.List {
			walkExpr(x, fn)
		}
	case *sql.Like:
		walkExpr(e.X, fn)
		walkExpr(e.Pattern, fn)
	case *sql.FuncCall:
		for _, x := range e.Args {
			walkExpr(x, fn)
		}
		walkExpr(e.Filter, fn)
		for _, o := range e.OrderBy { // agg(x ORDER BY …)
			walkExpr(o.Expr, fn)
		}
		if e.Over != nil {
			for _, x := range e.Over.PartitionBy {
				walkExpr(x, fn)
			}
			for _, o := range e.Over.OrderBy {
				walkExpr(o.Expr, fn)
			}
		}
	case *sql.Cast:
		walkExpr(e.X, fn)
	case *sql.Case:
		walkExpr(e.Operand, fn)
		for _, w := range e.Whens {
			walkExpr(w.Cond, fn)
			walkExpr(w.Result, fn)
		}
		walkExpr(e.Else, fn)
	case *sql.RowExpr:
		for _, x := range e.Items {
			walkExpr(x, fn)
		}
	case *sql.GroupingSets:
		for _, x := range e.Items {
			walkExpr(x, fn)
		}
	case *sql.ArrayExpr:
		for _, x := range e.Items {
			walkExpr(x, fn)
		}
	case *sql.FieldSelect:
		walkExpr(e.X, fn)
	case *sql.Subscript:
		walkExpr(e.X, fn)
		walkExpr(e.Index, fn)
		walkExpr(e.Lo, fn)
		walkExpr(e.Hi, fn)
	case *sql.Quantified:
		walkExpr(e.X, fn)
		walkExpr(e.Array, fn)
	}
}

// hasAggregate reports whether e calls an aggregate.
func hasAggregate(e sql.Expr) bool {
	found := false
	walkExpr(e, func(n sql.Expr) bool {
		if f, ok := n.(*sql.FuncCall); ok && operators.IsAggregate(f.Name) && f.Over == nil {
			found = true
		}
		return !found
	})
	return found
}

// outerRef resolves column reference e, which the query's own columns
// do not have (err), against the enclosing query's row: a correlated
// subquery's outer reference.
func (b *builder) outerRef(e *sql.ColumnRef, err error) (*expr.Expr, bool) {
	if b.outer == nil {
		return nil, false
	}
	if code := pgerror.CodeOf(err); code != pgerror.UndefinedColumn && code != pgerror.UndefinedTable {
		return nil, false
	}
	j, oerr := b.outer.resolve(e.Table, e.Name)
	if oerr != nil {
		return nil, false
	}
	b.correlated = true
	b.outerCols = append(b.outerCols, j)
	oc := b.outer.cols[j]
	return expr.Outer(j, oc.typ, oc.name), true
}

// distinctInts returns xs sorted, each once.
func distinctInts(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// errCorrelatedAboveGroups is the 0A000 of a subquery that reads the
// groups of the query around it (correlatedAboveGroups looks for it).
const errCorrelatedAboveGroups = "correlated subqueries above GROUP BY"

// subquery plans a subquery of the current SELECT and returns its index
// and the type of its (single) column. Columns it does not find in its
// own FROM resolve against the enclosing scope, making it correlated.
func (b *builder) subquery(c *exprCtx, q sql.QueryExpr) (int, types.Type, error) {
	child := &builder{cat: b.cat, params: b.params, outer: c.scope, applyLateral: b.applyLateral}
	node, sc, err := child.buildQuery(q)
	b.params = child.params
	if err != nil {
		return 0, types.Null, err
	}
	cols := sc.outColumns()
	if len(cols) != 1 {
		return 0, types.Null, pgerror.New(pgerror.SyntaxError, "subquery must return only one column")
	}
	if child.correlated && c.aggs != nil {
		return 0, types.Null, pgerror.NotSupported(errCorrelatedAboveGroups)
	}
	b.volatile = b.volatile || child.volatile
	sq := plan.Subquery{Plan: node, Correlated: child.correlated}
	if !child.volatile { // run again per row, as PostgreSQL runs it, a volatile one may differ
		sq.Outer = distinctInts(child.outerCols)
	}
	b.subs = append(b.subs, sq)
	return len(b.subs) - 1, cols[0].Type, nil
}
