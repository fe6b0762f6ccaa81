package engine

import (
	"context"
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// runApply runs a LATERAL subquery for each left row and joins its rows
// to the row. Its results are kept in the query's subquery memo, by the
// values of the left columns it reads, as a correlated scalar
// subquery's are: left rows alike in those run it once.
func (q *query) runApply(ctx context.Context, a *plan.Apply, env *expr.Env, emit operators.Emit) error {
	var on expr.Predicate
	if a.On != nil {
		var err error
		if on, err = expr.CompilePredicateEnv(a.On, env); err != nil {
			return err
		}
	}
	work := readsWorkTable(a.Right.Plan)
	var out []types.Row
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		b := &operators.Batch{Rows: out}
		out = nil
		return emit(b)
	}
	// pair holds a candidate row while ON is tested; only a match is
	// copied out
	pair := make(types.Row, a.LeftWidth+a.RightWidth)
	err := q.run(ctx, a.Left, env, func(b *operators.Batch) error {
		for _, left := range b.Rows {
			rows, err := q.lateralRows(ctx, a, env, left, work)
			if err != nil {
				return err
			}
			copy(pair, left[:a.LeftWidth])
			matched := false
			for _, r := range rows {
				clear(pair[a.LeftWidth+copy(pair[a.LeftWidth:], r):])
				if on != nil {
					ok, err := on(pair)
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
				}
				matched = true
				out = append(out, slices.Clone(pair))
			}
			if !matched && a.Kind == "left" {
				row := make(types.Row, a.LeftWidth+a.RightWidth) // NULLs on the right
				copy(row, left[:a.LeftWidth])
				out = append(out, row)
			}
			if len(out) >= valuesBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return flush()
	})
	if err != nil {
		return err
	}
	return flush()
}

// lateralRows returns the rows of a's subquery for the left row: from
// the memo when it ran for the same values of the columns it reads.
func (q *query) lateralRows(ctx context.Context, a *plan.Apply, env *expr.Env, left types.Row, work bool) ([]types.Row, error) {
	return runKept(ctx, q, &a.Right, work, env, left,
		func(b *operators.Batch) int64 {
			var n int64
			for _, r := range b.Rows {
				n += operators.RowBytes(r)
			}
			return n
		},
		func(rows []types.Row, b *operators.Batch) []types.Row {
			for _, r := range b.Rows {
				rows = append(rows, append(types.Row(nil), r...))
			}
			return rows
		})
}
