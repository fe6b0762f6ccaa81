// Package expr holds fvsql's scalar expressions: typed trees built by the
// planner with PostgreSQL's typing rules (implicit casts, operator and
// function overloads), serialisable as plain data so a pipeline's plan can
// be stored in the catalog, and compiled into closures that evaluate one
// row at a time without allocating for fixed-width types.
//
// Building (Build* functions) resolves types and fails with a SQLSTATE
// (42883 undefined function, 42804 datatype mismatch) before anything
// runs. Evaluation errors (22012 division by zero, 22003 overflow, 22P02
// bad input) are per row: the engine turns them into poison rows.
//
// The function registry is open: higher layers register system functions
// (version(), current_database(), …) with Register at init.
package expr
