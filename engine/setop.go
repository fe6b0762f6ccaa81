package engine

import (
	"context"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// runSetOp counts the right input's rows by their key encoding (charged
// to the query's memory account), then streams the left through the
// counts.
func (q *query) runSetOp(ctx context.Context, n *plan.SetOp, env *expr.Env, emit operators.Emit) error {
	acct := q.budget.Account()
	defer acct.Close()
	counts := map[string]int64{}
	var kb []byte
	err := q.run(ctx, n.Right, env, func(b *operators.Batch) error {
		for _, row := range b.Rows {
			kb = types.AppendKeyRow(kb[:0], row[:n.Width])
			if _, ok := counts[string(kb)]; !ok {
				if err := acct.Grow(int64(len(kb)) + 48); err != nil {
					return err
				}
			}
			counts[string(kb)]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	seen := map[string]bool{} // the distinct rows already put out
	return q.run(ctx, n.Left, env, func(b *operators.Batch) error {
		out := &operators.Batch{}
		for _, row := range b.Rows {
			kb = types.AppendKeyRow(kb[:0], row[:n.Width])
			c := counts[string(kb)]
			keep := false
			switch {
			case n.All && n.Except:
				keep = c == 0
				if c > 0 {
					counts[string(kb)]--
				}
			case n.All:
				keep = c > 0
				if keep {
					counts[string(kb)]--
				}
			default:
				keep = (c > 0) != n.Except && !seen[string(kb)]
				if keep {
					if err := acct.Grow(int64(len(kb)) + 48); err != nil {
						return err
					}
					seen[string(kb)] = true
				}
			}
			if keep {
				out.Rows = append(out.Rows, row)
			}
		}
		if len(out.Rows) == 0 {
			return nil
		}
		return emit(out)
	})
}
