package expr

import (
	"context"
	"fmt"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Eval evaluates a compiled expression over one input row.
type Eval func(row types.Row) (types.Value, error)

// Predicate evaluates a boolean expression; NULL counts as false, as in WHERE.
type Predicate func(row types.Row) (bool, error)

// Env is what compiled expressions read besides their input row.
type Env struct {
	Params []types.Value // $1…$n
	// Outer is the enclosing query's row, for a correlated subquery's plan.
	Outer types.Row
	// Subquery runs subquery i of the plan for an outer row and returns
	// the first column of its rows.
	Subquery func(i int, outer types.Row) ([]types.Value, error)
	// Session is the host's session running the query, for functions
	// with EvalSession; nil in pipelines.
	Session any
	// Ctx ends when the query does (a cancel, statement_timeout), for
	// functions that wait (pg_sleep); nil: never.
	Ctx context.Context
	// Funcs resolves user functions (KUser); nil: none exist.
	Funcs UserFuncs
	// Batch, when set, is the batch its operator is evaluating (see
	// Batch); nil: row by row.
	Batch *Batch
	// lazy counts the lazily evaluated subtrees compile is in.
	lazy int
	// Epoch, when set, counts a pipeline worker's epochs: a user
	// function's implementation is looked up again when it changes, so
	// a replaced function takes effect at an epoch boundary. Without it
	// a compiled expression keeps the implementation it was compiled
	// with (a bounded query sees one version).
	Epoch *uint64
	// Now, when not 0, is the statement's time (microseconds since the
	// Unix epoch), which now(), current_timestamp and their kin return
	// for every row of a bounded query, as PostgreSQL's do for its
	// transaction (Func.EvalAt); 0 (pipelines): the wall clock at each
	// call, which stamps each row with its processing time.
	Now int64
}

// Batch is the batch of rows an operator is evaluating its expressions
// over, row Index now; Seq changes with every batch. A user function
// call evaluated for every row (not under AND, OR, CASE, COALESCE or IN)
// calls its function for the whole batch at once (compileUser) when its
// implementation can (BatchUserFunc). Each operator has its own.
type Batch struct {
	Rows  []types.Row
	Index int
	Seq   uint64
}

// Next makes b the batch of rows.
func (b *Batch) Next(rows []types.Row) {
	b.Rows, b.Index = rows, 0
	b.Seq++
}

// lazyFrom is the first argument of e that is not evaluated for every
// row: AND and OR stop at the first deciding argument, CASE evaluates
// its first condition only for sure, COALESCE stops at the first
// non-NULL, IN at the first match.
func lazyFrom(e *Expr) int {
	switch e.Kind {
	case KAnd, KOr, KCase, KCoalesce, KIn:
		return 1
	}
	return len(e.Args)
}

// UserFuncs resolves the user functions of the catalog a query runs
// against.
type UserFuncs interface {
	// UserFunc returns the current implementation of function name.
	UserFunc(name string) (UserFunc, error)
}

// BatchUserFunc is a UserFunc that calls itself for many rows at once:
// out[i] and errs[i] are what Call(args[i]) would give.
type BatchUserFunc interface {
	CallBatch(args [][]Value) (out []Value, errs []error)
}

// UserFunc is a user function's implementation.
type UserFunc interface {
	// Call computes a scalar function's result for one row's arguments.
	Call(args []Value) (Value, error)
	// CallTable computes a table function's rows for one row's
	// arguments.
	CallTable(args []Value) ([]types.Row, error)
}

// Value is types.Value (shorter in the interfaces above).
type Value = types.Value

// Compile turns e into an Eval; params are the bound values of $1…$n.
func Compile(e *Expr, params []types.Value) (Eval, error) { return compile(e, &Env{Params: params}) }

// CompileEnv is Compile with subqueries and outer references.
func CompileEnv(e *Expr, env *Env) (Eval, error) {
	if env == nil {
		env = &Env{}
	}
	return compile(e, env)
}

// CompilePredicate compiles a boolean expression for filtering.
func CompilePredicate(e *Expr, params []types.Value) (Predicate, error) {
	return CompilePredicateEnv(e, &Env{Params: params})
}

// CompilePredicateEnv is CompilePredicate with an Env.
func CompilePredicateEnv(e *Expr, env *Env) (Predicate, error) {
	if env == nil {
		env = &Env{}
	}
	if e.Type != types.Bool && e.Type != types.Null {
		return nil, pgerror.New(pgerror.DatatypeMismatch, "argument of WHERE must be type boolean, not type %s", e.Type)
	}
	ev, err := compile(e, env)
	if err != nil {
		return nil, err
	}
	return func(row types.Row) (bool, error) {
		v, err := ev(row)
		return v.K == types.Bool && v.I != 0, err
	}, nil
}

func compile(e *Expr, env *Env) (Eval, error) {
	params := env.Params
	switch e.Kind {
	case KOuter:
		i, name := e.Col, e.Name
		return func(types.Row) (types.Value, error) {
			if i >= len(env.Outer) {
				return types.NullValue, pgerror.New(pgerror.Internal, "outer reference %s outside a correlated subquery", name)
			}
			return env.Outer[i], nil
		}, nil
	case KSubquery:
		return compileSubquery(e, env)
	case KFuncScan:
		return compileFuncScan(e, env)
	case KUser:
		return compileUser(e, env)
	case KFail:
		code, msg := pgerror.MakeCode(e.Val.S), e.Name
		return func(types.Row) (types.Value, error) {
			return types.NullValue, pgerror.New(code, "%s", msg)
		}, nil
	case KCol:
		i := e.Col
		return func(row types.Row) (types.Value, error) { return row[i], nil }, nil
	case KConst:
		v := e.Val
		if v.K == types.Unknown && e.Type != types.Unknown && e.Type != types.Null {
			var err error
			if v, err = castValue(v, e.Type); err != nil {
				return nil, err
			}
		}
		return func(types.Row) (types.Value, error) { return v, nil }, nil
	case KParam:
		if e.Col >= len(params) {
			return nil, pgerror.New(pgerror.UndefinedParameter, "there is no parameter $%d", e.Col+1)
		}
		v, err := castValue(params[e.Col], e.Type)
		if err != nil {
			return nil, err
		}
		return func(types.Row) (types.Value, error) { return v, nil }, nil
	}
	args := make([]Eval, len(e.Args))
	lazy := lazyFrom(e)
	for i, a := range e.Args {
		if i == lazy {
			env.lazy++
		}
		ev, err := compile(a, env)
		if err != nil {
			if i >= lazy {
				env.lazy--
			}
			return nil, err
		}
		args[i] = ev
	}
	if lazy < len(e.Args) {
		env.lazy--
	}
	switch e.Kind {
	case KCast:
		to, x := e.Type, args[0]
		return func(row types.Row) (types.Value, error) {
			v, err := x(row)
			if err != nil || v.K == types.Null {
				return v, err
			}
			return castValue(v, to)
		}, nil
	case KAnd, KOr:
		isAnd := e.Kind == KAnd
		return func(row types.Row) (types.Value, error) {
			sawNull := false
			for _, a := range args {
				v, err := a(row)
				if err != nil {
					return v, err
				}
				if v.K == types.Null {
					sawNull = true
					continue
				}
				if (v.I != 0) != isAnd { // false for AND, true for OR decides
					return v, nil
				}
			}
			if sawNull {
				return types.NullValue, nil
			}
			return types.NewBool(isAnd), nil
		}, nil
	case KNot:
		x := args[0]
		return func(row types.Row) (types.Value, error) {
			v, err := x(row)
			if err != nil || v.K == types.Null {
				return v, err
			}
			return types.NewBool(v.I == 0), nil
		}, nil
	case KIsNull:
		x := args[0]
		return func(row types.Row) (types.Value, error) {
			v, err := x(row)
			return types.NewBool(v.K == types.Null), err
		}, nil
	case KDistinct:
		l, r := args[0], args[1]
		return func(row types.Row) (types.Value, error) {
			a, err := l(row)
			if err != nil {
				return a, err
			}
			b, err := r(row)
			if err != nil {
				return b, err
			}
			return types.NewBool(!types.Equal(a, b)), nil
		}, nil
	case KCase:
		n := len(args)
		hasElse := e.HasElse
		return func(row types.Row) (types.Value, error) {
			m := n
			if hasElse {
				m--
			}
			for i := 0; i+1 < m; i += 2 {
				c, err := args[i](row)
				if err != nil {
					return c, err
				}
				if c.K == types.Bool && c.I != 0 {
					return args[i+1](row)
				}
			}
			if hasElse {
				return args[n-1](row)
			}
			return types.NullValue, nil
		}, nil
	case KCoalesce:
		return func(row types.Row) (types.Value, error) {
			for _, a := range args {
				v, err := a(row)
				if err != nil || v.K != types.Null {
					return v, err
				}
			}
			return types.NullValue, nil
		}, nil
	case KIn:
		x, list := args[0], args[1:]
		return func(row types.Row) (types.Value, error) {
			v, err := x(row)
			if err != nil || v.K == types.Null {
				return types.NullValue, err
			}
			sawNull := false
			for _, a := range list {
				w, err := a(row)
				if err != nil {
					return w, err
				}
				if w.K == types.Null {
					sawNull = true
				} else if types.Compare(v, w) == 0 {
					return types.NewBool(true), nil
				}
			}
			if sawNull {
				return types.NullValue, nil
			}
			return types.NewBool(false), nil
		}, nil
	case KArray:
		return compileArray(e, args), nil
	case KRow:
		return func(row types.Row) (types.Value, error) {
			fields := make([]types.Value, len(args))
			for i, a := range args {
				v, err := a(row)
				if err != nil {
					return v, err
				}
				fields[i] = v
			}
			return types.NewRecord(fields), nil
		}, nil
	case KField:
		rec, i, t := args[0], e.Col, e.Type
		return func(row types.Row) (types.Value, error) {
			v, err := rec(row)
			if err != nil || v.K == types.Null {
				return types.NullValue, err
			}
			fs := v.Fields()
			if i >= len(fs) || fs[i].K == types.Null {
				return types.NullValue, nil
			}
			f := fs[i]
			f.K = t
			return f, nil
		}, nil
	case KSubscript:
		return compileSubscript(args), nil
	case KSlice:
		return compileSlice(e, args), nil
	case KAny, KAll:
		return compileQuantified(e, args)
	case KCall:
		f := lookupKey(e.Fn)
		if f == nil {
			return nil, pgerror.New(pgerror.UndefinedFunction, "function %s is not known to this server", e.Fn)
		}
		if compareOps[f.Name] && len(e.Args) == 2 {
			if cmp, ok := compileCompare(f.Name, e.Args[0].Type, args); ok {
				return cmp, nil
			}
		}
		if f.EvalAt != nil && env.Now != 0 {
			bound, v := *f, f.EvalAt(env.Now)
			bound.Eval1, bound.Eval2 = nil, nil
			bound.Eval = func([]types.Value) (types.Value, error) { return v, nil }
			f = &bound
		}
		if f.EvalSession != nil {
			bound, sess := *f, env.Session
			bound.Eval1, bound.Eval2 = nil, nil
			bound.Eval = func(a []types.Value) (types.Value, error) { return f.EvalSession(sess, a) }
			f = &bound
		}
		if f.EvalContext != nil {
			bound, ctx := *f, env.Ctx
			if ctx == nil {
				ctx = context.Background()
			}
			bound.Eval1, bound.Eval2 = nil, nil
			bound.Eval = func(a []types.Value) (types.Value, error) { return f.EvalContext(ctx, a) }
			f = &bound
		}
		return callEval(f, args), nil
	}
	return nil, fmt.Errorf("expr: unknown node kind %d", e.Kind)
}

func callEval(f *Func, args []Eval) Eval {
	strict := !f.NonStrict
	fn := f.Eval
	switch len(args) {
	case 0:
		return func(types.Row) (types.Value, error) { return fn(nil) }
	case 1:
		a0 := args[0]
		if f.Eval1 != nil {
			fn1 := f.Eval1
			return func(row types.Row) (types.Value, error) {
				v, err := a0(row)
				if err != nil || (strict && v.K == types.Null) {
					return types.NullValue, err
				}
				return fn1(v)
			}
		}
		return func(row types.Row) (types.Value, error) {
			v, err := a0(row)
			if err != nil {
				return v, err
			}
			if strict && v.K == types.Null {
				return types.NullValue, nil
			}
			var buf [1]types.Value
			buf[0] = v
			return fn(buf[:])
		}
	case 2:
		a0, a1 := args[0], args[1]
		if f.Eval2 != nil {
			fn2 := f.Eval2
			return func(row types.Row) (types.Value, error) {
				v0, err := a0(row)
				if err != nil {
					return v0, err
				}
				v1, err := a1(row)
				if err != nil {
					return v1, err
				}
				if strict && (v0.K == types.Null || v1.K == types.Null) {
					return types.NullValue, nil
				}
				return fn2(v0, v1)
			}
		}
		return func(row types.Row) (types.Value, error) {
			v0, err := a0(row)
			if err != nil {
				return v0, err
			}
			v1, err := a1(row)
			if err != nil {
				return v1, err
			}
			if strict && (v0.K == types.Null || v1.K == types.Null) {
				return types.NullValue, nil
			}
			var buf [2]types.Value
			buf[0], buf[1] = v0, v1
			return fn(buf[:])
		}
	}
	return func(row types.Row) (types.Value, error) {
		vals := make([]types.Value, len(args))
		for i, a := range args {
			v, err := a(row)
			if err != nil {
				return v, err
			}
			if strict && v.K == types.Null {
				return types.NullValue, nil
			}
			vals[i] = v
		}
		return fn(vals)
	}
}

// compileCompare specialises the comparison operators by operand type.
func compileCompare(op string, t types.Type, args []Eval) (Eval, bool) {
	if !compareOps[op] || len(args) != 2 {
		return nil, false
	}
	var test func(c int) bool
	switch op {
	case "=":
		test = func(c int) bool { return c == 0 }
	case "<>":
		test = func(c int) bool { return c != 0 }
	case "<":
		test = func(c int) bool { return c < 0 }
	case "<=":
		test = func(c int) bool { return c <= 0 }
	case ">":
		test = func(c int) bool { return c > 0 }
	case ">=":
		test = func(c int) bool { return c >= 0 }
	}
	l, r := args[0], args[1]
	if t.IsInteger() || t == types.Timestamp || t == types.TimestampTZ || t == types.Date || t == types.Bool {
		return func(row types.Row) (types.Value, error) {
			a, err := l(row)
			if err != nil || a.K == types.Null {
				return types.NullValue, err
			}
			b, err := r(row)
			if err != nil || b.K == types.Null {
				return types.NullValue, err
			}
			c := 0
			if a.I < b.I {
				c = -1
			} else if a.I > b.I {
				c = 1
			}
			return types.NewBool(test(c)), nil
		}, true
	}
	return func(row types.Row) (types.Value, error) {
		a, err := l(row)
		if err != nil || a.K == types.Null {
			return types.NullValue, err
		}
		b, err := r(row)
		if err != nil || b.K == types.Null {
			return types.NullValue, err
		}
		return types.NewBool(test(types.Compare(a, b))), nil
	}, true
}

func compileSubquery(e *Expr, env *Env) (Eval, error) {
	if env.Subquery == nil {
		return nil, pgerror.New(pgerror.FeatureNotSupported, "subqueries are not supported here")
	}
	i, mode, t := e.Col, e.Name, e.Type
	var x Eval
	if mode == "in" {
		var err error
		if x, err = compile(e.Args[0], env); err != nil {
			return nil, err
		}
	}
	return func(row types.Row) (types.Value, error) {
		vals, err := env.Subquery(i, row)
		if err != nil {
			return types.NullValue, err
		}
		return foldSubquery(mode, t, vals, func() (types.Value, error) { return x(row) })
	}, nil
}

// foldSubquery turns a subquery's values into the value of the
// expression using it: EXISTS, ARRAY(…), x IN (…) (false over no rows,
// whatever x; else NULL when x is NULL, or when no value equals x and
// one is NULL), or a scalar subquery (NULL without a row, 21000 with
// more than one). probe evaluates x.
func foldSubquery(mode string, t types.Type, vals []types.Value, probe func() (types.Value, error)) (types.Value, error) {
	switch mode {
	case "exists":
		return types.NewBool(len(vals) > 0), nil
	case "array":
		return newArray(t, vals)
	case "in":
		if len(vals) == 0 {
			return types.NewBool(false), nil
		}
		v, err := probe()
		if err != nil || v.IsNull() {
			return types.NullValue, err
		}
		sawNull := false
		for _, w := range vals {
			if w.IsNull() {
				sawNull = true
			} else if types.Compare(v, w) == 0 {
				return types.NewBool(true), nil
			}
		}
		if sawNull {
			return types.NullValue, nil
		}
		return types.NewBool(false), nil
	}
	switch len(vals) {
	case 0:
		return types.NullValue, nil
	case 1:
		return vals[0], nil
	}
	return types.NullValue, pgerror.New(pgerror.CardinalityViolation, "more than one row returned by a subquery used as an expression")
}
