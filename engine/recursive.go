package engine

import (
	"context"
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// runRecursive runs a WITH RECURSIVE query: the anchor, then the step
// again and again, each run reading the rows the run before it made as
// its work table, until a run makes none. Rows go out as they are made.
// The work table and, for UNION, the key encoding of every row made are
// charged to the query's memory account; a query that never ends stops
// at its memory limit, its statement_timeout or a cancel, as in
// PostgreSQL.
func (q *query) runRecursive(ctx context.Context, n *plan.Recursive, env *expr.Env, emit operators.Emit) error {
	acct := q.budget.Account()
	defer acct.Close()
	seen := map[string]bool{}
	var kb []byte
	var made []types.Row
	var madeBytes int64
	collect := func(b *operators.Batch) error {
		out := &operators.Batch{}
		for _, row := range b.Rows {
			if !n.All {
				kb = types.AppendKeyRow(kb[:0], row)
				if seen[string(kb)] {
					continue
				}
				if err := acct.Grow(int64(len(kb)) + 48); err != nil {
					return err
				}
				seen[string(kb)] = true
			}
			row = slices.Clip(append(types.Row(nil), row...)) // kept past this batch; an append to it copies
			size := operators.RowBytes(row)
			if err := acct.Grow(size); err != nil {
				return err
			}
			madeBytes += size
			made = append(made, row)
			out.Rows = append(out.Rows, row)
		}
		if len(out.Rows) == 0 {
			return nil
		}
		return emit(out)
	}
	if q.work == nil {
		q.work = map[int64][]types.Row{}
	}
	defer delete(q.work, n.ID)
	if err := q.run(ctx, n.Anchor, env, collect); err != nil {
		return err
	}
	var last int64 // the bytes of the work table being read
	for len(made) > 0 {
		if err := q.budget.Err(); err != nil {
			return err
		}
		q.work[n.ID] = made
		acct.Release(last)
		last = madeBytes
		made, madeBytes = nil, 0
		if err := q.run(ctx, n.Step, env, collect); err != nil {
			return err
		}
	}
	return nil
}

// emitRows sends rows held in memory (constants, a work table) in
// batches, stopping once the query has ended.
func (q *query) emitRows(rows []types.Row, emit operators.Emit) error {
	for len(rows) > 0 {
		k := min(len(rows), valuesBatch)
		if err := q.budget.Err(); err != nil {
			return err
		}
		if err := emit(&operators.Batch{Rows: rows[:k]}); err != nil {
			return err
		}
		rows = rows[k:]
	}
	return nil
}
