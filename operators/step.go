package operators

import (
	"math"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// ResolveSpec types the aggregate a step calls.
func ResolveSpec(a plan.AggSpec) (*AggFunc, error) {
	argType := types.Null
	if a.Arg != nil {
		argType = a.Arg.Type
	}
	f, err := ResolveAgg(a.Name, argType, a.Star)
	if err != nil || a.Fraction == nil || !a.Fraction.Type.IsArray() {
		return f, err
	}
	// percentile_cont(float8[]) and percentile_disc(float8[]): an array
	// of the percentiles
	if at := types.ArrayOf(f.Ret); at != types.Null && !f.Ret.IsArray() {
		f.Ret, f.Array = at, true
		return f, nil
	}
	return nil, pgerror.New(pgerror.UndefinedObject, "could not find array type for data type %s", f.Ret)
}

// fractionOf checks a percentile's fraction: nil for NULL.
func fractionOf(v types.Value) (*float64, error) {
	if v.K == types.Null {
		return nil, nil
	}
	x := types.AsFloat(v)
	if x < 0 || x > 1 || math.IsNaN(x) {
		return nil, pgerror.New(pgerror.NumericValueOutOfRange, "percentile value %g is not between 0 and 1", x)
	}
	return &x, nil
}

// constantArg evaluates an aggregate's constant argument (string_agg's
// delimiter, a percentile's fraction) once; NULL when there is none.
func constantArg(e *expr.Expr, env *expr.Env) (types.Value, error) {
	if e == nil {
		return types.NullValue, nil
	}
	d, err := expr.CompileEnv(e, env)
	if err != nil {
		return types.NullValue, err
	}
	return d(nil)
}

// withBatch is env with a Batch of the operator's own: its user function
// calls prefetch a batch's results (expr.Batch).
func withBatch(env *expr.Env) (*expr.Env, *expr.Batch) {
	if env == nil {
		env = &expr.Env{}
	}
	c := *env
	c.Batch = &expr.Batch{}
	return &c, c.Batch
}

// Build makes the operator a step describes; env holds the bound $n
// values (and subqueries, in bounded queries); onErr is the per-row error
// policy.
func Build(s *plan.Step, env *expr.Env, onErr RowError) (Operator, error) {
	return BuildWith(s, env, onErr, nil)
}

// BuildWith is Build with the resources of the running process (view
// lookups, for stream-table joins).
func BuildWith(s *plan.Step, env *expr.Env, onErr RowError, res *Resources) (Operator, error) {
	switch s.Op {
	case plan.OpFilter:
		benv, batch := withBatch(env)
		p, err := expr.CompilePredicateEnv(s.Pred, benv)
		if err != nil {
			return nil, err
		}
		return &Filter{Pred: p, OnError: onErr, batch: batch}, nil
	case plan.OpProject:
		benv, batch := withBatch(env)
		evs, err := CompileAll(s.Exprs, benv)
		if err != nil {
			return nil, err
		}
		return &Project{Exprs: evs, OnError: onErr, batch: batch}, nil
	case plan.OpWindowAssign:
		if s.Window == nil {
			return nil, pgerror.New(pgerror.Internal, "windowAssign step without a window")
		}
		return &WindowAssign{Spec: *s.Window, TimeCol: s.TimeCol, TimeType: s.TimeType}, nil
	case plan.OpSessionAssign:
		if s.Window == nil || s.Window.Gap <= 0 {
			return nil, pgerror.New(pgerror.Internal, "operators: sessionAssign without a gap")
		}
		groupBy, err := CompileAll(s.GroupBy, env)
		if err != nil {
			return nil, err
		}
		return &SessionAssign{Gap: s.Window.Gap, TimeCol: s.TimeCol, TimeType: s.TimeType, GroupBy: groupBy, OnError: onErr, Budget: res.budget()}, nil
	case plan.OpProjectSet, plan.OpLateral:
		ps := &ProjectSet{OnError: onErr, Outer: s.Outer, Ordinal: s.Ordinal}
		for _, set := range s.Sets {
			ev, err := expr.CompileSet(set.Fn, set.Args, env)
			if err != nil {
				return nil, err
			}
			ps.Sets, ps.Widths = append(ps.Sets, ev), append(ps.Widths, set.Width)
		}
		return ps, nil
	case plan.OpAggregate, plan.OpWindowAggregate, plan.OpGroupAggregate, plan.OpSession:
		groupBy, err := CompileAll(s.GroupBy, env)
		if err != nil {
			return nil, err
		}
		var aggs []AggCall
		for _, a := range s.Aggs {
			f, err := ResolveSpec(a)
			if err != nil {
				return nil, err
			}
			if v, err := constantArg(a.Delim, env); err != nil {
				return nil, err
			} else if v.K != types.Null {
				f.Delim = &v.S
			}
			v, err := constantArg(a.Fraction, env)
			if err != nil {
				return nil, err
			}
			if !f.Array {
				if f.Fraction, err = fractionOf(v); err != nil {
					return nil, err
				}
			} else if v.K != types.Null {
				f.Fractions = []*float64{}
				for _, e := range v.Elems() {
					x, err := fractionOf(e)
					if err != nil {
						return nil, err
					}
					f.Fractions = append(f.Fractions, x)
				}
			}
			call := AggCall{Func: f, Distinct: a.Distinct}
			arg := a.Arg
			if len(a.OrderBy) > 0 || a.Filter != nil {
				// a record of the value and its keys; under FILTER, NULL
				// for a row left out (an empty Order keeps arrival order)
				if arg == nil { // count(*): any value that is not NULL
					arg = expr.Const(types.NewBool(true))
				}
				arg = expr.Row(append([]*expr.Expr{arg}, a.OrderBy...)...)
				if a.Filter != nil {
					if arg, err = expr.Case([]*expr.Expr{a.Filter}, []*expr.Expr{arg}, nil); err != nil {
						return nil, err
					}
				}
				call.Order = make([]plan.SortKey, len(a.Order))
				for i, k := range a.Order {
					call.Order[i] = plan.SortKey{Col: i + 1, Desc: k.Desc, NullsFirst: k.NullsFirst}
				}
			}
			if arg != nil {
				if call.Arg, err = expr.CompileEnv(arg, env); err != nil {
					return nil, err
				}
			}
			aggs = append(aggs, call)
		}
		var having expr.Eval
		if s.Having != nil {
			if s.Op != plan.OpGroupAggregate && ((s.Op != plan.OpWindowAggregate && s.Op != plan.OpSession) || !s.Changes) {
				return nil, pgerror.New(pgerror.Internal, "operators: HAVING in a %s step", s.Op)
			}
			if having, err = expr.CompileEnv(s.Having, env); err != nil {
				return nil, err
			}
		}
		switch s.Op {
		case plan.OpWindowAggregate:
			if s.Window == nil {
				return nil, pgerror.New(pgerror.Internal, "operators: windowedAggregate without a window")
			}
			w := NewWindowAggregate(*s.Window, s.TimeCol, s.TimeType, groupBy, aggs, s.Changes, onErr)
			w.st.having, w.st.onErr = having, onErr
			return w, nil
		case plan.OpGroupAggregate:
			if s.Once && (len(aggs) > 0 || s.Sign != 0 || len(groupBy) == 0) {
				return nil, pgerror.New(pgerror.Internal, "operators: a groupAggregate once with aggregates, signed rows or no group")
			}
			g := NewGroupAggregate(groupBy, aggs, onErr)
			g.st.having, g.st.onErr, g.st.sign, g.st.once = having, onErr, s.Sign, s.Once
			if res != nil && res.GroupCacheBytes > 0 {
				g.st.cold.limit = res.GroupCacheBytes
			}
			return g, nil
		case plan.OpSession:
			if s.Window == nil || s.Window.Gap <= 0 {
				return nil, pgerror.New(pgerror.Internal, "operators: sessionAggregate without a gap")
			}
			sa := NewSessionAggregate(s.Window.Gap, s.TimeCol, s.TimeType, groupBy, aggs, s.Changes, onErr)
			sa.Having = having
			return sa, nil
		}
		return &HashAggregate{GroupBy: groupBy, Aggs: aggs, OnError: onErr, Budget: res.budget()}, nil
	case plan.OpChangelog:
		return &Changelog{Width: s.Width, KeyCol: s.KeyCol}, nil
	case plan.OpTemporalFilter:
		var clock func() int64
		if res != nil {
			clock = res.Clock
		}
		return NewTemporalFilter(s.Bounds, env, onErr, clock)
	case plan.OpTopN, plan.OpFinalTopN, plan.OpFirstN:
		parts, err := CompileAll(s.PartitionBy, env)
		if err != nil {
			return nil, err
		}
		rank, err := rankingOf(s.Rank)
		if err != nil {
			return nil, err
		}
		timed := timedRows{PartitionBy: parts, TimeCol: s.TimeCol, TimeType: s.TimeType, Keys: s.Keys, Width: s.Width, OnError: onErr}
		switch s.Op {
		case plan.OpFinalTopN:
			return &FinalTopN{timedRows: timed, N: s.N, Ranking: rank}, nil
		case plan.OpFirstN:
			if len(s.Keys) == 0 || s.Keys[0].Col != s.TimeCol || s.Keys[0].Desc || s.N < 1 {
				return nil, pgerror.New(pgerror.Internal, "operators: firstN not ordered by its time column ascending, or N < 1")
			}
			return &FirstN{timedRows: timed, N: s.N, Ranking: rank}, nil
		}
		if s.Sign != 0 && s.Sign != s.Width {
			return nil, pgerror.New(pgerror.Internal, "operators: top-N sign in column %d of rows of %d", s.Sign, s.Width)
		}
		return &TopN{PartitionBy: parts, Keys: s.Keys, N: s.N, Width: s.Width, Ranking: rank, OnError: onErr, Sign: s.Sign}, nil
	case plan.OpSort:
		limit, offset, err := s.Limits(env)
		if err != nil {
			return nil, err
		}
		if limit >= 0 {
			limit += offset
		}
		return &Sort{Keys: s.Keys, Limit: limit, Budget: res.budget()}, nil
	case plan.OpLimit:
		limit, offset, err := s.Limits(env)
		if err != nil {
			return nil, err
		}
		return &Limit{Offset: offset, Count: limit}, nil
	case plan.OpDistinct:
		return &Distinct{Budget: res.budget()}, nil
	case plan.OpOverWindow:
		if s.Over == nil {
			return nil, pgerror.New(pgerror.Internal, "operators: overWindow without a spec")
		}
		if s.Sign != 0 && s.Sign != s.Width {
			return nil, pgerror.New(pgerror.Internal, "operators: overWindow sign in column %d of rows of %d", s.Sign, s.Width)
		}
		return NewOverWindow(s.Over, s.Width, s.Sign, env, onErr)
	case plan.OpOverTime:
		if s.Over == nil {
			return nil, pgerror.New(pgerror.Internal, "operators: overTime without a spec")
		}
		return NewOverTime(s.Over, s.Width, s.TimeCol, s.TimeType, env, onErr)
	case plan.OpWindow:
		if s.Over == nil {
			return nil, pgerror.New(pgerror.Internal, "operators: window without a spec")
		}
		return NewWindowFuncs(s.Over, env, onErr, res.budget())
	}
	return nil, pgerror.New(pgerror.Internal, "operators: unknown step %q", s.Op)
}

// CompileAll compiles each expression against env.
func CompileAll(es []*expr.Expr, env *expr.Env) ([]expr.Eval, error) {
	out := make([]expr.Eval, len(es))
	for i, e := range es {
		ev, err := expr.CompileEnv(e, env)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}
