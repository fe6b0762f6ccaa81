package planner

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// checkContinuous refuses, at CREATE, a planned continuous query that the
// engine could not run or that would give an answer unlike its SELECT's:
// a pipeline accepted and then stuck in RETRYING for ever is worse than a
// clear error now. Each check is a property of the plan, not of the
// query's shape.
func checkContinuous(ca *sql.CreateAs, c *Continuous) error {
	// A stage's input resolves to the pipeline's internal streams first
	// (engine.Start), so an input named like one would read it instead.
	for _, d := range c.Topology.Internal {
		for _, in := range c.Inputs {
			if in.Name == d.Name {
				return pgerror.New(pgerror.DuplicateTable, "relation %q has the name of one of this pipeline's internal streams", in.Name).
					WithHint("Rename it, or the pipeline.")
			}
		}
	}
	stateful := false
	for i := range c.Topology.Stages {
		for j := range c.Topology.Stages[i].Steps {
			if !c.Topology.Stages[i].Steps[j].Stateless() {
				stateful = true
			}
		}
	}
	for i := range c.Topology.Stages {
		steps := c.Topology.Stages[i].Steps
		for j := range steps {
			if err := checkStepRuns(&steps[j]); err != nil {
				return err
			}
			// A clock in a stream's select list stamps each row with the
			// time it was processed (a processing-time column). Anywhere
			// else, the result depends on when each row happened to be
			// processed: a view's rows would never leave it when the
			// clock moves on, and the view would not equal its SELECT.
			if ca.Kind != sql.KindMaterializedView && !stateful && steps[j].Op == plan.OpProject {
				continue
			}
			if fn := clockCall(&steps[j]); fn != "" {
				return pgerror.New(pgerror.FeatureNotSupported, "%s() in a continuous query's %s is not supported", fn, stepClause(&steps[j])).
					WithDetail("It is evaluated once, when a row is processed, so a row that passes it would never leave the result as time moves on. "+
						"A temporal filter is the exception: in a materialized view's WHERE over a stream, a comparison of %s() (plus or minus an interval without months) with a timestamp of the row, or of current_date (plus or minus days) with a date of the row, ANDed with the rest.", fn).
					WithHint("Write the temporal filter in a view of its own (CREATE MATERIALIZED VIEW recent AS SELECT * FROM s WHERE ts > now() - INTERVAL '1 hour') and aggregate or join over that view; or compare with the stream's event time; or use %s() only in the select list of a CREATE STREAM … AS SELECT without aggregation.", fn)
			}
		}
	}
	if stateful {
		for _, in := range c.Inputs {
			if isChangesStream(in) {
				return pgerror.New(pgerror.FeatureNotSupported, "aggregating, ranking or joining the changes stream %q is not supported yet", in.Name).
					WithDetail("Its rows are a view's changes (insert, update_before, update, delete), not the view's rows: an aggregate over them would fold in every change.").
					WithHint("Read the view itself (FROM %s): a materialized view over a view takes its changes back out.", strings.TrimSuffix(in.Name, ChangesSuffix))
			}
			if emitsChanges(in) {
				return pgerror.New(pgerror.FeatureNotSupported, "aggregating, ranking or joining the EMIT CHANGES stream %q is not supported yet", in.Name).
					WithDetail("Its rows are the changes of its query's result (insert, update_before, update, delete), not the result's rows: an aggregate over them would fold in every change.").
					WithHint("Use the stream's query as a subquery (FROM (…) t) in a materialized view: it takes its changes back out.")
			}
		}
	}
	return nil
}

// checkStepRuns builds the step's operator as the engine will, so that
// what cannot be compiled (a subquery where a pipeline has no way to run
// it) fails now with its own SQLSTATE.
func checkStepRuns(s *plan.Step) error {
	res := &operators.Resources{Ctx: context.Background(), ViewLookup: func(context.Context, string, types.Row) ([]types.Row, error) { return nil, nil }}
	op, err := engine.BuildStep(s, &expr.Env{}, operators.AbortOnError, res)
	if err != nil {
		return err
	}
	if c, ok := op.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	return nil
}

// clockFuncs read the wall clock.
var clockFuncs = map[string]bool{
	"now": true, "current_timestamp": true, "localtimestamp": true, "clock_timestamp": true,
	"current_date": true, "current_time": true, "localtime": true, "statement_timestamp": true,
	"transaction_timestamp": true, "timeofday": true,
}

// clockCall returns the name of a clock function the step calls, or "".
func clockCall(s *plan.Step) string {
	found := ""
	visit := func(e *expr.Expr) {
		if e == nil || found != "" {
			return
		}
		e.Walk(func(n *expr.Expr) {
			if n.Kind != expr.KCall || found != "" {
				return
			}
			name, _, _ := strings.Cut(n.Fn, "(")
			if clockFuncs[name] {
				found = name
			}
		})
	}
	visit(s.Pred)
	visit(s.Having)
	for _, e := range s.Exprs {
		visit(e)
	}
	for _, e := range s.GroupBy {
		visit(e)
	}
	for _, a := range s.Aggs {
		visit(a.Arg)
		visit(a.Filter)
		for _, e := range a.OrderBy {
			visit(e)
		}
	}
	for _, e := range s.PartitionBy {
		visit(e)
	}
	if s.Join != nil {
		visit(s.Join.Residual)
	}
	if s.Lookup != nil {
		for _, e := range s.Lookup.Key {
			visit(e)
		}
		visit(s.Lookup.Residual)
	}
	return found
}

// stepClause names the part of the query a step comes from, for errors.
func stepClause(s *plan.Step) string {
	switch s.Op {
	case plan.OpFilter:
		return "WHERE or HAVING"
	case plan.OpProject:
		return "select list"
	case plan.OpIntervalJoin, plan.OpHashJoin, plan.OpLookupJoin:
		return "join condition"
	}
	return "aggregation"
}

// isChangesStream says rel is a view's <view>_changes stream.
func isChangesStream(rel *catalog.Relation) bool {
	owner := rel.Options["pipeline"]
	return owner != "" && rel.Name == owner+ChangesSuffix
}

// emitsChanges says rel is a CREATE STREAM … EMIT CHANGES stream: a
// pipeline's output written by a stage that makes a view's changes.
func emitsChanges(rel *catalog.Relation) bool {
	if rel.Kind != catalog.Stream || len(rel.Plan) == 0 {
		return false
	}
	var t plan.Topology
	if json.Unmarshal(rel.Plan, &t) != nil || len(t.Stages) == 0 {
		return false
	}
	last := t.Stages[len(t.Stages)-1]
	return last.Changes != nil && last.Output == rel.Name
}
