package server

import (
	"context"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// maxInsertBuffer bounds how many encoded rows an INSERT holds before
// writing; larger INSERT … SELECT statements write in several sends.
const maxInsertBuffer = 64 << 20

func (s *session) planInsert(ins *sql.Insert, params []types.Type) (*statement, error) {
	plan, err := planner.PlanInsert(s.srv.cat, ins, params)
	if err != nil {
		return nil, err
	}
	return &statement{
		params: plan.ParamTypes,
		exec: func(ctx context.Context, args []types.Value) (pgwire.Result, error) {
			ctx, stop := s.withStatementTimeout(ctx)
			defer stop()
			n, err := s.srv.insert(ctx, plan, args, s.writes(), s.queryLimits())
			if err != nil {
				return nil, err
			}
			return tagOnly("INSERT 0 " + itoa(n)), nil
		},
	}, nil
}

// insert evaluates every row first and writes only if all of them are
// valid, so a bad value fails the statement with nothing written. In a
// transaction block (hold set) the rows are held until COMMIT instead.
func (s *Server) insert(ctx context.Context, ins *planner.InsertPlan, args []types.Value, hold *txWrites, lim engine.Limits) (int64, error) {
	rel := ins.Rel
	st, err := s.backend(ctx, rel)
	if err != nil {
		return 0, err
	}
	codec, err := codecFor(rel)
	if err != nil {
		return 0, err
	}
	keyCols := make([]int, len(rel.Key))
	for i, k := range rel.Key {
		keyCols[i] = rel.ColumnIndex(k)
	}
	var msgs []backends.Message
	size := 0
	var n int64
	var prod backends.Producer
	if hold == nil {
		if prod, err = st.Producer(ctx); err != nil {
			return 0, err
		}
		defer prod.Close()
	}
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		var err error
		if hold != nil {
			err = hold.hold(ins.Rel, msgs, lim.MemoryBytes)
			msgs = nil // held: a new slice for the next rows
		} else {
			err = prod.Send(ctx, msgs)
			msgs = msgs[:0]
		}
		size = 0
		return err
	}
	err = engine.RunBoundedLimits(ctx, ins.Source, &datasets{srv: s, held: hold}, args, operators.AbortOnError, lim, func(b *operators.Batch) error {
		for _, row := range b.Rows {
			if err := checkNotNull(rel, row); err != nil {
				return err
			}
			payload := codec.Append(make([]byte, 0, 64), row)
			msgs = append(msgs, backends.Message{Stream: rel.Topic, Key: types.RecordKey(row, keyCols), Payload: payload})
			size += len(payload)
			n++
		}
		if size > maxInsertBuffer && ins.Source != nil {
			if _, isValues := ins.Source.(*plan.Values); !isValues {
				return flush()
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return n, nil
}

func checkNotNull(rel *catalog.Relation, row types.Row) error {
	for i, c := range rel.Columns {
		if c.NotNull && row[i].IsNull() {
			return pgerror.New(pgerror.NotNullViolation, "null value in column %q of relation %q violates not-null constraint", c.Name, rel.Name)
		}
	}
	return nil
}
