// Package planner turns the typed AST of package sql into plans: bounded
// queries become engine.Node trees of sources and step chains; INSERT
// becomes an InsertPlan; CREATE STREAM becomes a catalog relation;
// continuous queries (CREATE … AS SELECT) become an engine.Topology of
// stages. Every error a user can make — unknown relations and columns,
// type mismatches, misplaced aggregates, unsupported constructs — is found
// here, with its SQLSTATE, before anything runs.
//
// Plans are plain data without goroutines. Name resolution works on
// scopes (the columns visible at a point of the query, with their table
// qualifiers); expression typing is package expr's.
package planner
