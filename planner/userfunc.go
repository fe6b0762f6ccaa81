package planner

import (
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// FunctionCatalog is a Catalog with user functions (CREATE FUNCTION).
// Built-in functions come first: a user function never shadows one
// (CREATE FUNCTION refuses their names).
type FunctionCatalog interface {
	Function(name string) (*catalog.Function, bool)
}

// userFunction finds the user function called name, if the catalog has
// user functions.
func (b *builder) userFunction(name string) (*catalog.Function, bool) {
	fc, ok := b.cat.(FunctionCatalog)
	if !ok || b.cat == nil {
		return nil, false
	}
	return fc.Function(name)
}

// maxInline bounds how deep sql functions inline into each other (one
// calling itself would never end).
const maxInline = 32

// callUser plans a call of a user scalar function: its arguments cast to
// its argument types, then a wasm call (expr.User) or, for a sql
// function, its body inlined with the arguments in place of its
// parameters.
func (b *builder) callUser(fn *catalog.Function, args []*expr.Expr) (*expr.Expr, error) {
	if fn.IsTable() {
		return nil, pgerror.NotSupported("table function %s in an expression", fn.Name).
			WithHint("Call it in FROM: SELECT … FROM t, LATERAL %s(…) AS x.", fn.Name)
	}
	cast, err := b.userArgs(fn, args)
	if err != nil {
		return nil, err
	}
	if fn.Language == "sql" {
		return b.inlineSQL(fn, cast)
	}
	return expr.User(fn.Name, fn.Ret, cast...), nil
}

// userArgs casts a call's arguments to the function's argument types
// (implicit casts only, as for a built-in function), or fails with 42883
// as PostgreSQL does for a call that matches no function.
func (b *builder) userArgs(fn *catalog.Function, args []*expr.Expr) ([]*expr.Expr, error) {
	argTypes := make([]types.Type, len(args))
	for i, a := range args {
		argTypes[i] = a.Type
	}
	noMatch := func() error {
		return pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", callSignature(fn.Name, argTypes)).
			WithHint("The user function is %s; you might need to add explicit type casts.", fn.Signature())
	}
	if len(args) != len(fn.Args) {
		return nil, noMatch()
	}
	out := make([]*expr.Expr, len(args))
	for i, a := range args {
		want := fn.Args[i].Type
		a = b.inferParam(a, want)
		if a.Type != want && a.Type != types.Unknown && a.Type != types.Null && !expr.CanImplicitCast(a.Type, want) {
			return nil, noMatch()
		}
		c, err := expr.Coerce(a, want, false)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

func callSignature(name string, args []types.Type) string {
	s := name + "("
	for i, t := range args {
		if i > 0 {
			s += ", "
		}
		s += t.String()
	}
	return s + ")"
}

// inlineSQL plans a sql function's body, SELECT expr over its
// parameters (by name, or $1…), and puts the call's arguments in their
// place; the result is cast to the function's result type.
func (b *builder) inlineSQL(fn *catalog.Function, args []*expr.Expr) (*expr.Expr, error) {
	if b.inlining >= maxInline {
		return nil, pgerror.New(pgerror.MakeCode("54001"), "function %s: sql functions nested more than %d deep (does it call itself?)", fn.Name, maxInline)
	}
	body, err := SQLFunctionBody(fn.Body)
	if err != nil {
		return nil, err
	}
	sc := &scope{}
	params := make([]types.Type, len(fn.Args))
	for i, a := range fn.Args {
		sc.cols = append(sc.cols, scopeCol{name: a.Name, typ: a.Type, hidden: a.Name == ""})
		params[i] = a.Type
	}
	child := &builder{cat: b.cat, params: params, inlining: b.inlining + 1}
	e, err := child.build(&exprCtx{scope: sc, what: "a function body", noAggs: true}, body)
	if err != nil {
		if b.inlining > 0 {
			return nil, err // named by the outermost function
		}
		return nil, pgerror.Wrap(err, pgerror.CodeOf(err), "function %s", fn.Name)
	}
	if len(child.subs) > 0 {
		return nil, pgerror.NotSupported("function %s: a subquery in a sql function's body", fn.Name)
	}
	e = substituteArgs(e, args)
	mismatch := pgerror.New(pgerror.InvalidFunctionDefinition, "return type mismatch in function declared to return %s", fn.Ret).
		WithDetail("The body of function %s gives %s.", fn.Name, e.Type)
	if e.Type != fn.Ret && e.Type != types.Unknown && e.Type != types.Null && !expr.CanImplicitCast(e.Type, fn.Ret) {
		return nil, mismatch
	}
	out, err := expr.Coerce(e, fn.Ret, false)
	if err != nil {
		return nil, mismatch
	}
	return out, nil
}

// substituteArgs replaces the parameters of an inlined body, as columns
// of its scope or as $n, by the call's arguments.
func substituteArgs(e *expr.Expr, args []*expr.Expr) *expr.Expr {
	switch e.Kind {
	case expr.KCol:
		return args[e.Col]
	case expr.KParam:
		return args[e.Col]
	}
	if len(e.Args) == 0 {
		return e
	}
	c := *e
	c.Args = make([]*expr.Expr, len(e.Args))
	for i, a := range e.Args {
		c.Args[i] = substituteArgs(a, args)
	}
	return &c
}

// SQLFunctionBody parses a sql function's body: SELECT and one
// expression, nothing else (no FROM, WHERE or aggregates), which is what
// fvsql inlines.
func SQLFunctionBody(text string) (sql.Expr, error) {
	stmts, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, sqlBodyUnsupported()
	}
	q, ok := stmts[0].Stmt.(*sql.Query)
	if !ok {
		return nil, sqlBodyUnsupported()
	}
	sel, ok := q.Body.(*sql.Select)
	if !ok || len(sel.Items) != 1 || len(sel.From) > 0 || sel.Where != nil || len(sel.GroupBy) > 0 || sel.Having != nil ||
		len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil || sel.Distinct || q.Emit != sql.EmitDefault {
		return nil, sqlBodyUnsupported()
	}
	if _, star := sel.Items[0].Expr.(*sql.Star); star {
		return nil, sqlBodyUnsupported()
	}
	return sel.Items[0].Expr, nil
}

func sqlBodyUnsupported() error {
	return pgerror.NotSupported("a sql function body other than SELECT <expression>").
		WithHint("fvsql inlines sql functions: write the body as one expression over the arguments, e.g. AS 'SELECT price * 0.908'.")
}

// PlanFunctionCall plans a call of fn with arguments of its own types
// over no input, as CREATE FUNCTION checks a sql function's body.
func PlanFunctionCall(cat Catalog, fn *catalog.Function) (*expr.Expr, error) {
	b := &builder{cat: cat}
	args := make([]*expr.Expr, len(fn.Args))
	for i, a := range fn.Args {
		args[i] = expr.Param(i, a.Type)
	}
	b.params = fn.ArgTypes()
	if fn.Language == "sql" {
		return b.inlineSQL(fn, args)
	}
	return b.callUser(fn, args)
}

// SpecialFunction reports whether name is a function the planner
// handles itself rather than through the function registry (coalesce,
// the catalog lookups): a user function may not take such a name.
func SpecialFunction(name string) bool {
	_, lookup := catalogLookups[name]
	return name == "coalesce" || lookup
}

// PlanConstant plans an expression over no input (CREATE FUNCTION's
// AS expr): an untyped $n is taken as want. It returns the expression
// and the parameter types.
func PlanConstant(cat Catalog, e sql.Expr, paramTypes []types.Type, want types.Type) (*expr.Expr, []types.Type, error) {
	b := &builder{cat: cat, params: append([]types.Type(nil), paramTypes...)}
	x, err := b.build(&exprCtx{scope: &scope{}, what: "a function body", noAggs: true}, e)
	if err != nil {
		return nil, nil, err
	}
	if len(b.subs) > 0 {
		return nil, nil, pgerror.NotSupported("a subquery in a function body")
	}
	x = b.inferParam(x, want)
	return x, b.params, nil
}
