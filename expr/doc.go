// Package expr holds fvsql's scalar expressions: typed trees built by the
// planner with PostgreSQL's typing rules (implicit casts, operator and
// function overloads), serialisable as plain data so a pipeline's plan can
// be stored in the catalog, and compiled into closures that evaluate one
// row at a time without allocating for fixed-width types.
//
// Building (Build* functions) resolves types and fails with a SQLSTATE
// (42883 undefined function, 42804 datatype mismatch) before anything
// runs. Evaluation errors (22012 division by zero, 22003 overflow, 22P02
// bad input) are per row: the engine turns them into poison rows. No
// function, operator or cast builds a value above MaxValueBytes (256 MiB;
// limits.go): lpad, repeat, concatenation, replace, format, the array
// builders and casts compute their result's size first and fail with 54000
// before allocating it, and the rows of a set-returning function count
// against the same limit. Constant folding runs the same evaluators, so a
// constant call over the limit fails the same way when it runs.
//
// The function registry is open: higher layers register system functions
// (version(), current_database(), …) with Register at init. The first
// registration of an overload (same name and argument types) wins, both
// for overload resolution and for the plans that name it.
//
// Types are resolved as PostgreSQL does, polymorphic ones included:
// anyarray and anyelement parameters of one call take one array type and
// its element type (array_append(int[], bigint) is bigint[]); an unknown
// literal prefers a concrete parameter ('x' || text is text) to a
// polymorphic one. Arrays (array.go): ARRAY[…], subscripts and slices
// (out of range is NULL), x op ANY|ALL (array) with SQL's three-valued
// results (an empty array: ANY false, ALL true, whatever x is; a NULL
// array: NULL), the array functions. Set-returning functions (unnest,
// generate_series, pg_options_to_table; setfuncs.go) produce rows: the
// planner calls them while planning when their arguments are constants,
// and FuncScan evaluates a subquery over one of them in place, per row.
// Fail stands for a part of a plan that cannot run: it fails with its
// SQLSTATE only if it is evaluated.
//
// User functions (user.go) are not in the registry: a KUser node names
// one, and compiling it asks Env.Funcs (the catalog the query runs
// against) for its implementation, again whenever Env.Epoch moves (a
// pipeline's next epoch: a replaced function changes between epochs). A
// call evaluated for every row of its operator's batch (Env.Batch) calls
// the function for the batch at once, when the implementation can
// (BatchUserFunc). encode and decode are PostgreSQL's binary string
// conversions (encode.go).
package expr
