package engine

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/join"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
)

// BuildStep makes the operator of a plan step: a join's from package join,
// any other's from package operators. env holds the bound $n values (and
// subqueries, in bounded queries), onErr is the per-row error policy, res
// the running process's resources (nil in bounded queries).
func BuildStep(s *plan.Step, env *expr.Env, onErr operators.RowError, res *operators.Resources) (operators.Operator, error) {
	if join.Builds(s.Op) {
		return join.Build(s, env, onErr, res)
	}
	return operators.BuildWith(s, env, onErr, res)
}

// AskBefore asks op, the operator of stage st's i-th step, for the old
// row of each update (operators.BeforeEmitter) when st writes a changes
// stream that carries them (plan.ChangesOutput.Before) and the step is
// the stage's last stateful one, whose updates are the stage's output
// (one before it feeds the next, which takes updates alone). Any other
// op is left as it is.
func AskBefore(st *plan.Stage, i int, op operators.Operator) {
	if st.Changes == nil || !st.Changes.Before {
		return
	}
	for _, s := range st.Steps[i+1:] {
		if !s.Stateless() {
			return
		}
	}
	if b, ok := op.(operators.BeforeEmitter); ok {
		b.EmitBefore()
	}
}
