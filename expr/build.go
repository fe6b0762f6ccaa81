package expr

import (
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Comparison operator function names (registered in ops.go).
var compareOps = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

// IsComparison reports whether op is a comparison operator.
func IsComparison(op string) bool { return compareOps[op] }

// Cast builds an explicit cast (CAST(x AS t), x::t). Constants fold now,
// so a bad literal fails at planning time with its input error.
func Cast(e *Expr, to types.Type) (*Expr, error) {
	if e.Type == to {
		return e, nil
	}
	if !types.CanCast(e.Type, to) {
		return nil, pgerror.New(pgerror.DatatypeMismatch, "cannot cast type %s to %s", e.Type, to)
	}
	if e.Kind == KConst { // what fold would compute, without compiling
		if e.Val.K == types.Null {
			return TypedNull(to), nil
		}
		v, err := castValue(e.Val, to)
		if err != nil {
			return nil, err
		}
		if v.K == types.Null {
			return TypedNull(to), nil
		}
		c := Const(v)
		c.Type = to
		return c, nil
	}
	c := &Expr{Kind: KCast, Type: to, Args: []*Expr{e}}
	return fold(c)
}

// Coerce casts e to t if PostgreSQL would do so implicitly (assignment
// contexts accept any castable type when assign is true, as INSERT does).
func Coerce(e *Expr, to types.Type, assign bool) (*Expr, error) {
	if e.Type == to || to == Any {
		return e, nil
	}
	if e.Type == types.Null {
		return TypedNull(to), nil
	}
	if castCost(e.Type, to) >= 0 || (assign && types.CanCast(e.Type, to)) {
		return Cast(e, to)
	}
	return nil, pgerror.New(pgerror.DatatypeMismatch, "expression %s is of type %s but %s is expected", e, e.Type, to)
}

// jsonbConcat says x || y of these types is jsonb || jsonb: both jsonb, or
// one jsonb and the other an unknown literal (or NULL), as PostgreSQL
// resolves it; jsonb || text is text's concatenation.
func jsonbConcat(x, y types.Type) bool {
	loose := func(t types.Type) bool { return t == types.JSONB || t == types.Unknown || t == types.Null }
	return (x == types.JSONB || y == types.JSONB) && loose(x) && loose(y)
}

// Call builds a call of a function or operator by name, resolving the
// overload and inserting implicit casts.
func Call(name string, args ...*Expr) (*Expr, error) {
	if compareOps[name] && len(args) == 2 {
		return Compare(name, args[0], args[1])
	}
	if name == "||" && len(args) == 2 && !args[0].Type.IsArray() && !args[1].Type.IsArray() && !jsonbConcat(args[0].Type, args[1].Type) {
		// anynonarray || text: the non-text side is cast to text.
		for i, a := range args {
			if !a.Type.IsString() && a.Type != types.Null {
				c, err := Cast(a, types.Text)
				if err != nil {
					return nil, err
				}
				args[i] = c
			}
		}
	}
	argTypes := make([]types.Type, len(args))
	for i, a := range args {
		argTypes[i] = a.Type
	}
	f, params, err := Resolve(name, argTypes)
	if err != nil {
		return nil, err
	}
	cast := make([]*Expr, len(args))
	for i, a := range args {
		if cast[i], err = Coerce(a, params[i], false); err != nil {
			return nil, err
		}
	}
	return fold(&Expr{Kind: KCall, Type: resultType(f, params), Fn: f.Key(), Args: cast})
}

// Compare builds a comparison, casting both sides to their common type.
func Compare(op string, l, r *Expr) (*Expr, error) {
	t, err := CommonType(l.Type, r.Type)
	if err != nil {
		return nil, pgerror.New(pgerror.UndefinedFunction, "operator does not exist: %s %s %s", l.Type, op, r.Type).
			WithHint("No operator matches the given name and argument types. You might need to add explicit type casts.")
	}
	if l, err = Coerce(l, t, false); err != nil {
		return nil, err
	}
	if r, err = Coerce(r, t, false); err != nil {
		return nil, err
	}
	f := lookupKey(compareKey(op))
	return fold(&Expr{Kind: KCall, Type: types.Bool, Fn: f.Key(), Args: []*Expr{l, r}})
}

func compareKey(op string) string { return (&Func{Name: op, Args: []types.Type{Any, Any}}).Key() }

func boolArg(e *Expr, what string) (*Expr, error) {
	if e.Type == types.Bool {
		return e, nil
	}
	if e.Type == types.Null || e.Type == types.Unknown {
		return Coerce(e, types.Bool, false)
	}
	return nil, pgerror.New(pgerror.DatatypeMismatch, "argument of %s must be type boolean, not type %s", what, e.Type)
}

// And builds a three-valued AND.
func And(args ...*Expr) (*Expr, error) { return logic(KAnd, "AND", args) }

// Or builds a three-valued OR.
func Or(args ...*Expr) (*Expr, error) { return logic(KOr, "OR", args) }

func logic(k Kind, what string, args []*Expr) (*Expr, error) {
	out := &Expr{Kind: k, Type: types.Bool}
	for _, a := range args {
		b, err := boolArg(a, what)
		if err != nil {
			return nil, err
		}
		if b.Kind == k { // flatten
			out.Args = append(out.Args, b.Args...)
		} else {
			out.Args = append(out.Args, b)
		}
	}
	if len(out.Args) == 1 {
		return out.Args[0], nil
	}
	return fold(out)
}

// Not builds NOT e.
func Not(e *Expr) (*Expr, error) {
	b, err := boolArg(e, "NOT")
	if err != nil {
		return nil, err
	}
	return fold(&Expr{Kind: KNot, Type: types.Bool, Args: []*Expr{b}})
}

// IsNull builds e IS NULL (not: IS NOT NULL).
func IsNull(e *Expr, not bool) (*Expr, error) {
	n := &Expr{Kind: KIsNull, Type: types.Bool, Args: []*Expr{e}}
	if not {
		return Not(n)
	}
	return fold(n)
}

// Distinct builds l IS [NOT] DISTINCT FROM r.
func Distinct(l, r *Expr, not bool) (*Expr, error) {
	t, err := CommonType(l.Type, r.Type)
	if err != nil {
		return nil, err
	}
	if l, err = Coerce(l, t, false); err != nil {
		return nil, err
	}
	if r, err = Coerce(r, t, false); err != nil {
		return nil, err
	}
	d := &Expr{Kind: KDistinct, Type: types.Bool, Args: []*Expr{l, r}}
	if not {
		return Not(d)
	}
	return fold(d)
}

// Case builds a searched CASE; els may be nil.
func Case(conds, results []*Expr, els *Expr) (*Expr, error) {
	all := append([]*Expr(nil), results...)
	if els != nil {
		all = append(all, els)
	}
	ts := make([]types.Type, len(all))
	for i, r := range all {
		ts[i] = r.Type
	}
	t, err := CommonType(ts...)
	if err != nil {
		return nil, err
	}
	if t == types.Null {
		t = types.Text
	}
	out := &Expr{Kind: KCase, Type: t, HasElse: els != nil}
	for i := range conds {
		c, err := boolArg(conds[i], "CASE/WHEN")
		if err != nil {
			return nil, err
		}
		r, err := Coerce(results[i], t, false)
		if err != nil {
			return nil, err
		}
		out.Args = append(out.Args, c, r)
	}
	if els != nil {
		e, err := Coerce(els, t, false)
		if err != nil {
			return nil, err
		}
		out.Args = append(out.Args, e)
	}
	return fold(out)
}

// Coalesce builds coalesce(args…).
func Coalesce(args ...*Expr) (*Expr, error) {
	out, err := unify(KCoalesce, args)
	if err != nil {
		return nil, err
	}
	return fold(out)
}

// In builds x IN (list…).
func In(x *Expr, list []*Expr, not bool) (*Expr, error) {
	all, err := unify(KIn, append([]*Expr{x}, list...))
	if err != nil {
		return nil, err
	}
	all.Type = types.Bool
	if not {
		return Not(all)
	}
	return fold(all)
}

func unify(k Kind, args []*Expr) (*Expr, error) {
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	t, err := CommonType(ts...)
	if err != nil {
		return nil, err
	}
	if t == types.Null {
		t = types.Text
	}
	out := &Expr{Kind: k, Type: t}
	for _, a := range args {
		c, err := Coerce(a, t, false)
		if err != nil {
			return nil, err
		}
		out.Args = append(out.Args, c)
	}
	return out, nil
}

// Volatile reports whether e calls a volatile function (random(), now())
// or runs a subquery: two evaluations of it over one row may differ.
func Volatile(e *Expr) bool {
	if e == nil {
		return false
	}
	if e.Kind == KSubquery {
		return true
	}
	if e.Kind == KCall {
		if f := lookupKey(e.Fn); f == nil || f.Volatile {
			return true
		}
	}
	for _, a := range e.Args {
		if Volatile(a) {
			return true
		}
	}
	return false
}

// CallsVolatile reports whether e itself calls a volatile function or a
// user function (whose volatility fvsql does not know); unlike Volatile,
// a subquery in e counts only by the expressions around it (its probe),
// not by running: whether a subquery's own plan calls one is its
// planner's to tell.
func CallsVolatile(e *Expr) bool {
	found := false
	e.Walk(func(n *Expr) {
		switch n.Kind {
		case KUser:
			found = true
		case KCall:
			if f := lookupKey(n.Fn); f == nil || f.Volatile {
				found = true
			}
		}
	})
	return found
}

// fold evaluates e now when every input is constant and nothing volatile
// is called. Errors are deferred to run time (PostgreSQL reports them when
// the row is evaluated), except for casts of literals, which PostgreSQL
// reports at planning.
func fold(e *Expr) (*Expr, error) {
	if e.Kind == KSubquery || e.Kind == KOuter || e.Kind == KFail {
		return e, nil
	}
	for _, a := range e.Args {
		if a.Kind != KConst {
			return e, nil
		}
	}
	if e.Kind == KCall {
		if f := lookupKey(e.Fn); f == nil || f.Volatile {
			return e, nil
		}
	}
	ev, err := compile(e, &Env{})
	if err != nil {
		return e, nil
	}
	v, err := ev(nil)
	if err != nil {
		if e.Kind == KCast {
			return nil, err
		}
		return e, nil
	}
	if v.K == types.Null {
		return TypedNull(e.Type), nil
	}
	c := Const(v)
	c.Type = e.Type
	return c, nil
}
