package engine

import (
	"context"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// runFuncRows computes a FuncRows node's rows and sends them on, charged
// to the query's memory account while they are held.
func (q *query) runFuncRows(ctx context.Context, n *plan.FuncRows, env *expr.Env, emit operators.Emit) error {
	var rows []types.Row
	if n.Set == "" {
		ev, err := expr.CompileEnv(n.Args[0], env)
		if err != nil {
			return err
		}
		v, err := ev(nil)
		if err != nil {
			return err
		}
		rows = []types.Row{{v}}
	} else {
		set, err := expr.CompileSet(n.Set, n.Args, env)
		if err != nil {
			return err
		}
		if rows, err = set(nil); err != nil {
			return err
		}
	}
	var charged int64
	defer func() { q.budget.Release(charged) }()
	for i, r := range rows {
		if n.Ordinality {
			rows[i] = append(r, types.NewInt8(int64(i+1)))
		}
		charged += operators.RowBytes(rows[i])
	}
	if err := q.budget.Grow(charged); err != nil {
		return err
	}
	for len(rows) > 0 {
		k := min(len(rows), valuesBatch)
		if err := q.budget.Err(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if err := emit(&operators.Batch{Rows: rows[:k]}); err != nil {
			return err
		}
		rows = rows[k:]
	}
	return nil
}
