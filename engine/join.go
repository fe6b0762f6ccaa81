package engine

import (
	"context"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/join"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
)

// runJoin collects the right input into a bounded join (charged to the
// query's memory account), then streams the left through it.
func (q *query) runJoin(ctx context.Context, j *plan.Join, env *expr.Env, emit operators.Emit) error {
	bj, err := join.NewBounded(j, env, q.budget)
	if err != nil {
		return err
	}
	defer bj.Release()
	if err := q.run(ctx, j.Right, env, func(b *operators.Batch) error { return bj.AddRight(b.Rows) }); err != nil {
		return err
	}
	if err := q.run(ctx, j.Left, env, func(b *operators.Batch) error { return bj.Probe(b.Rows, emit) }); err != nil {
		return err
	}
	return bj.Finish(emit)
}
