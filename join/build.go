package join

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
)

// Builds reports whether op is a join step, which Build makes; the other
// steps are operators.BuildWith's.
func Builds(op string) bool {
	return op == plan.OpHashJoin || op == plan.OpIntervalJoin || op == plan.OpLookupJoin
}

// Build makes the operator of a join step; env holds the bound $n values,
// onErr is the per-row error policy, res the running process's view
// lookups (a stream-table join needs them).
func Build(s *plan.Step, env *expr.Env, onErr operators.RowError, res *operators.Resources) (operators.Operator, error) {
	if s.Op == plan.OpLookupJoin {
		return buildLookupJoin(s, env, onErr, res)
	}
	if s.Join == nil || !Builds(s.Op) {
		return nil, pgerror.New(pgerror.Internal, "join: %s without a join spec", s.Op)
	}
	var residual expr.Eval
	if s.Join.Residual != nil {
		var err error
		if residual, err = expr.CompileEnv(s.Join.Residual, env); err != nil {
			return nil, err
		}
	}
	if s.Op == plan.OpHashJoin {
		cache := 0
		if res != nil {
			cache = res.GroupCacheBytes
		}
		return NewHashJoin(*s.Join, residual, onErr, cache), nil
	}
	return NewIntervalJoin(*s.Join, residual, onErr), nil
}
