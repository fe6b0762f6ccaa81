package join

import (
	"context"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// LookupJoin is the operator of a LookupSpec. It keeps no state: the
// view's copy in the running process is the table side, read as it is when
// the stream row is processed (a replayed row after a crash sees the view
// as it is then, as in Kafka Streams and ksqlDB).
type LookupJoin struct {
	Spec     plan.LookupSpec
	Keys     []expr.Eval
	Residual expr.Eval
	Lookup   operators.ViewLookup
	OnError  operators.RowError
	Ctx      context.Context // passed to Lookup

	key types.Row
	out operators.Batch
}

// Process implements Operator.
func (j *LookupJoin) Process(b *operators.Batch, emit operators.Emit) error {
	j.out.Reset()
rows:
	for i, row := range b.Rows {
		j.key = j.key[:0]
		null := false
		for _, k := range j.Keys {
			v, err := k(row)
			if err != nil {
				if err := j.OnError(b, i, err); err != nil {
					return err
				}
				continue rows
			}
			null = null || v.IsNull()
			j.key = append(j.key, v)
		}
		var matches []types.Row
		if !null { // NULL = anything is not true
			var err error
			if matches, err = j.Lookup(j.Ctx, j.Spec.View, j.key); err != nil {
				return err
			}
		}
		found := false
		for _, m := range matches {
			out := make(types.Row, j.Spec.StreamWidth+j.Spec.ViewWidth)
			copy(out, row[:j.Spec.StreamWidth])
			copy(out[j.Spec.StreamWidth:], m)
			if j.Residual != nil {
				ok, err := j.Residual(out)
				if err != nil {
					if err := j.OnError(b, i, err); err != nil {
						return err
					}
					continue rows
				}
				if ok.K != types.Bool || ok.I == 0 {
					continue
				}
			}
			found = true
			j.add(b, i, out)
		}
		if !found && j.Spec.Type == "left" {
			out := make(types.Row, j.Spec.StreamWidth+j.Spec.ViewWidth)
			copy(out, row[:j.Spec.StreamWidth])
			j.add(b, i, out)
		}
	}
	if len(j.out.Rows) == 0 {
		return nil
	}
	if b.Source == nil {
		j.out.Source = nil
	}
	return emit(&j.out)
}

func (j *LookupJoin) add(b *operators.Batch, i int, out types.Row) {
	j.out.Rows = append(j.out.Rows, out)
	if b.Source != nil {
		j.out.Source = append(j.out.Source, b.Source[i])
	}
}

// Finish implements Operator.
func (j *LookupJoin) Finish(operators.Emit) error { return nil }

func buildLookupJoin(s *plan.Step, env *expr.Env, onErr operators.RowError, res *operators.Resources) (operators.Operator, error) {
	if s.Lookup == nil {
		return nil, pgerror.New(pgerror.Internal, "operators: lookupJoin without a spec")
	}
	if res == nil || res.ViewLookup == nil {
		return nil, pgerror.NotSupported("a stream-table join outside a continuous query")
	}
	keys, err := operators.CompileAll(s.Lookup.Key, env)
	if err != nil {
		return nil, err
	}
	ctx := res.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	j := &LookupJoin{Spec: *s.Lookup, Keys: keys, Lookup: res.ViewLookup, OnError: onErr, Ctx: ctx}
	if s.Lookup.Residual != nil {
		if j.Residual, err = expr.CompileEnv(s.Lookup.Residual, env); err != nil {
			return nil, err
		}
	}
	return j, nil
}
