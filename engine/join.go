package engine

import (
	"context"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// joinBatch is how many joined rows go downstream at once: a left row
// may match every right row (a cross join), and the output must flow in
// pieces rather than as one batch of len(left batch) × len(right) rows.
const joinBatch = 1024

// joinCheckEvery is how many candidate pairs the join tries between two
// looks at the query's end, so that a join whose ON rejects every pair
// still stops promptly when cancelled.
const joinCheckEvery = 1 << 14

// runJoin collects the right input (charged to the query's memory
// account), then streams the left through it.
func (q *query) runJoin(ctx context.Context, j *plan.Join, env *expr.Env, emit operators.Emit) error {
	var right []types.Row
	var charged int64
	defer func() { q.budget.Release(charged) }()
	charge := func(n int64) error {
		charged += n
		return q.budget.Grow(n)
	}
	err := q.run(ctx, j.Right, env, func(b *operators.Batch) error {
		// the row itself, its index entry and the slice header that keeps it
		if err := charge(operators.BatchBytes(b.Rows) + 32*int64(len(b.Rows))); err != nil {
			return err
		}
		right = append(right, b.Rows...)
		return nil
	})
	if err != nil {
		return err
	}
	lkeys, err := compileEvals(j.LeftKeys, env)
	if err != nil {
		return err
	}
	rkeys, err := compileEvals(j.RightKeys, env)
	if err != nil {
		return err
	}
	var on expr.Predicate
	if j.On != nil {
		if on, err = expr.CompilePredicateEnv(j.On, env); err != nil {
			return err
		}
	}
	// hash the right side by key; rows with a NULL key never match
	var table map[string][]int
	if len(rkeys) > 0 {
		table = make(map[string][]int, len(right))
		var kb []byte
		for i, row := range right {
			var null bool
			if kb, null, err = keyOf(rkeys, row, kb[:0]); err != nil {
				return err
			}
			if !null {
				if _, ok := table[string(kb)]; !ok {
					if err := charge(int64(len(kb)) + 48); err != nil {
						return err
					}
				}
				table[string(kb)] = append(table[string(kb)], i)
			}
			if i%joinCheckEvery == joinCheckEvery-1 {
				if err := q.budget.Err(); err != nil {
					return err
				}
			}
		}
	}
	var all []int
	if table == nil {
		all = make([]int, len(right))
		for i := range all {
			all[i] = i
		}
	}
	matchedRight := make([]bool, len(right))
	joined := func(l, rr types.Row) types.Row {
		out := make(types.Row, 0, j.LeftWidth+j.RightWidth)
		if l == nil {
			out = append(out, make(types.Row, j.LeftWidth)...)
		} else {
			out = append(out, l...)
		}
		if rr == nil {
			return append(out, make(types.Row, j.RightWidth)...)
		}
		return append(out, rr...)
	}
	out := &operators.Batch{}
	flush := func() error {
		if len(out.Rows) == 0 {
			return nil
		}
		if err := q.budget.Err(); err != nil {
			return err
		}
		err := emit(out)
		out = &operators.Batch{Rows: make([]types.Row, 0, joinBatch)} // the receiver may keep the rows
		return err
	}
	var kb []byte
	tried := 0
	err = q.run(ctx, j.Left, env, func(b *operators.Batch) error {
		for _, l := range b.Rows {
			cands := all
			if table != nil {
				var null bool
				var err error
				if kb, null, err = keyOf(lkeys, l, kb[:0]); err != nil {
					return err
				}
				cands = nil
				if !null {
					cands = table[string(kb)]
				}
			}
			matched := false
			for _, ri := range cands {
				if tried++; tried == joinCheckEvery {
					tried = 0
					if err := q.budget.Err(); err != nil {
						return err
					}
				}
				row := joined(l, right[ri])
				if on != nil {
					ok, err := on(row)
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
				}
				matched = true
				if j.Kind == "semi" || j.Kind == "anti" {
					break // the left row alone, or not at all
				}
				matchedRight[ri] = true
				out.Rows = append(out.Rows, row)
				if len(out.Rows) >= joinBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if (j.Kind == "semi" && matched) || (j.Kind == "anti" && !matched) {
				out.Rows = append(out.Rows, append(types.Row(nil), l...))
				if len(out.Rows) >= joinBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
			if !matched && (j.Kind == "left" || j.Kind == "full") {
				out.Rows = append(out.Rows, joined(l, nil))
				if len(out.Rows) >= joinBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		// what a left batch produced goes on now, so rows keep flowing
		return flush()
	})
	if err != nil {
		return err
	}
	if j.Kind == "right" || j.Kind == "full" {
		for i, m := range matchedRight {
			if !m {
				out.Rows = append(out.Rows, joined(nil, right[i]))
				if len(out.Rows) >= joinBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return flush()
	}
	return nil
}

func compileEvals(es []*expr.Expr, env *expr.Env) ([]expr.Eval, error) {
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

// keyOf encodes a row's join key; null reports a NULL in it.
func keyOf(keys []expr.Eval, row types.Row, buf []byte) ([]byte, bool, error) {
	for _, k := range keys {
		v, err := k(row)
		if err != nil {
			return buf, false, err
		}
		if v.IsNull() {
			return buf, true, nil
		}
		buf = types.AppendKey(buf, v)
	}
	return buf, false, nil
}
