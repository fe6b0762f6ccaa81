// Package plan is the plan as data: what the planner makes and the
// engine runs, with no behaviour of its own beyond describing itself.
//
// A Step is one step of a stage in the engine's vocabulary (filter,
// project, the aggregates, top-N, sort, the joins, …), with the specs
// its operator is built from (AggSpec, WindowSpec, OverSpec, JoinSpec,
// LookupSpec, SetSpec, SortKey). Steps are stored in the catalog as
// JSON, so their field names are a format: a change to them is a change
// of the stored topology's version. String renders each one for EXPLAIN.
//
// plan imports only expr, types and pgerror; operators and join build
// running operators from its steps, the engine runs them, the planner
// writes them.
package plan
