package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

func toWireColumns(cols []planner.Column) []pgwire.Column {
	out := make([]pgwire.Column, len(cols))
	for i, c := range cols {
		out[i] = pgwire.Column{Name: c.Name, Type: c.Type, TableOID: c.TableOID, AttNum: c.AttNum}
	}
	return out
}

// planQuery plans a bounded SELECT.
func (s *session) planQuery(q *sql.Query, params []types.Type) (*statement, error) {
	plan, err := planner.PlanQuery(s.srv.cat, q, params)
	if err != nil {
		return nil, err
	}
	point := s.srv.pointLookup(plan.Root)
	return &statement{
		params: plan.ParamTypes,
		cols:   toWireColumns(plan.Columns),
		exec: func(ctx context.Context, args []types.Value) (pgwire.Result, error) {
			ds := &datasets{srv: s.srv, held: s.txw}
			lim := s.queryLimits()
			ctx, stop := s.withStatementTimeout(ctx)
			if point {
				// At most one row: run on the session's goroutine, without
				// a producer goroutine and its channel.
				defer stop()
				var rows []types.Row
				err := engine.RunBoundedLimits(ctx, plan.Root, ds, args, operators.AbortOnError, lim, func(b *operators.Batch) error {
					rows = append(rows, b.Rows...) // operators reuse their batches, not their rows
					return nil
				})
				if err != nil {
					return nil, err
				}
				return &rowsResult{rows: rows, tag: fmt.Sprintf("SELECT %d", len(rows)), notices: ds.notices()}, nil
			}
			r := newStreamResult(ctx, "SELECT", func(ctx context.Context, emit operators.Emit) error {
				return engine.RunBoundedLimits(ctx, plan.Root, ds, args, operators.AbortOnError, lim, emit)
			})
			r.release = stop
			r.notices = ds.notices
			return r, nil
		},
	}, nil
}

// queryLimits are the engine.Limits of the server's bounded queries.
func (s *Server) queryLimits() engine.Limits {
	return engine.Limits{MemoryBytes: s.cfg.QueryMemoryBytes, MemoryName: "--query-memory-mb (FVSQL_QUERY_MEMORY_MB)", Funcs: s.funcs}
}

// queryLimits are the engine.Limits of the session's bounded queries.
func (s *session) queryLimits() engine.Limits {
	lim := s.srv.queryLimits()
	lim.Session = s
	return lim
}

// withStatementTimeout bounds ctx by the session's statement_timeout:
// past it the statement ends with errStatementTimeout (57014). stop
// releases the timer.
func (s *session) withStatementTimeout(ctx context.Context) (context.Context, func()) {
	d := s.statementTimeout()
	if d <= 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, errStatementTimeout)
	return ctx, cancel
}

// pointLookup reports whether a plan reads at most one row of a
// materialized view: the view's local copy looked up by its whole key.
func (s *Server) pointLookup(n plan.Node) bool {
	if c, ok := n.(*plan.Chain); ok {
		if len(c.Subqueries) > 0 {
			return false
		}
		n = c.Input
	}
	src, ok := n.(*plan.Source)
	if !ok || len(src.Lookup) == 0 {
		return false
	}
	name, ok := strings.CutPrefix(src.Dataset, "rel:")
	if !ok {
		return false
	}
	c := s.views.get(name)
	return c != nil && len(src.Lookup) == len(c.keyIdx)
}

// planExplain describes the plan of a statement.
func (s *session) planExplain(e *sql.Explain, params []types.Type) (*statement, error) {
	var lines []string
	switch st := e.Stmt.(type) {
	case *sql.Query:
		plan, err := planner.PlanQuery(s.srv.cat, st, params)
		if err != nil {
			return nil, err
		}
		lines = explainNode(plan.Root, 0)
	case *sql.Insert:
		plan, err := planner.PlanInsert(s.srv.cat, st, params)
		if err != nil {
			return nil, err
		}
		lines = append([]string{"insert into " + plan.Rel.Name}, explainNode(plan.Source, 1)...)
	case *sql.CreateAs:
		plan, err := planner.PlanContinuous(s.srv.cat, st)
		if err != nil {
			return nil, err
		}
		lines = strings.Split(strings.TrimRight(plan.Topology.String(), "\n"), "\n")
	default:
		return nil, pgerror.NotSupported("EXPLAIN of %T", e.Stmt)
	}
	rows := make([]types.Row, len(lines))
	for i, l := range lines {
		rows[i] = types.Row{types.NewText(l)}
	}
	return rowsStatement(textCols("QUERY PLAN"), func(context.Context) ([]types.Row, error) { return rows, nil }), nil
}

// explainNode renders a bounded plan, one line per node or step, the
// input below what consumes it.
func explainNode(n plan.Node, depth int) []string {
	pad := strings.Repeat("  ", depth)
	switch n := n.(type) {
	case *plan.Source:
		line := pad + "scan " + strings.TrimPrefix(n.Dataset, "rel:")
		if len(n.Lookup) > 0 {
			keys := make([]string, len(n.Lookup))
			for i, k := range n.Lookup {
				keys[i] = k.String()
			}
			line = pad + "lookup " + strings.TrimPrefix(n.Dataset, "rel:") + " by key (" + strings.Join(keys, ", ") + ")"
		}
		return []string{line}
	case *plan.Values:
		return []string{fmt.Sprintf("%svalues (%d rows)", pad, len(n.Rows))}
	case *plan.Join:
		line := pad + n.Kind + " join"
		if len(n.LeftKeys) > 0 {
			var keys []string
			for i := range n.LeftKeys {
				keys = append(keys, n.LeftKeys[i].String()+" = "+n.RightKeys[i].String())
			}
			line += " (hash on " + strings.Join(keys, ", ") + ")"
		}
		if n.On != nil {
			line += " on " + n.On.String()
		}
		return append(append([]string{line}, explainNode(n.Left, depth+1)...), explainNode(n.Right, depth+1)...)
	case *plan.Apply:
		line := pad + n.Kind + " lateral join"
		if n.On != nil {
			line += " on " + n.On.String()
		}
		return append(append([]string{line}, explainNode(n.Left, depth+1)...), explainNode(n.Right.Plan, depth+1)...)
	case *plan.SetOp:
		line := pad + "intersect"
		if n.Except {
			line = pad + "except"
		}
		if n.All {
			line += " all"
		}
		return append(append([]string{line}, explainNode(n.Left, depth+1)...), explainNode(n.Right, depth+1)...)
	case *plan.Recursive:
		line := pad + "recursive union"
		if n.All {
			line += " all"
		}
		return append(append([]string{line}, explainNode(n.Anchor, depth+1)...), explainNode(n.Step, depth+1)...)
	case *plan.WorkTable:
		return []string{pad + "work table"}
	case *plan.UnionAll:
		out := []string{pad + "union all"}
		for _, in := range n.Inputs {
			out = append(out, explainNode(in, depth+1)...)
		}
		return out
	case *plan.Chain:
		var out []string
		for i := len(n.Steps) - 1; i >= 0; i-- {
			out = append(out, pad+n.Steps[i].String())
		}
		return append(out, explainNode(n.Input, depth+1)...)
	}
	return []string{pad + "?"}
}
