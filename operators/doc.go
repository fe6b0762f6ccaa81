// Package operators holds the operator contract (Batch, Emit, Operator,
// Stateful, KV, RowError, Budget) and the engine's step vocabulary as
// batch operators, built from plan steps: the inline steps (filter, project — which covers select,
// rename, drop and applyExpression) and the stateful ones (hash and
// windowed aggregation, sort, top-N, limit, distinct, and the window
// functions of bounded queries, windowfunc.go). The same operator
// instances serve bounded queries (input ends, Finish flushes) and
// continuous pipelines (the engine feeds batches forever).
//
// Work moves in batches, never a goroutine hop per row. An operator is
// used by one goroutine at a time; rows are immutable once emitted, so a
// downstream operator may keep them.
//
// Stateful operators keep their state in a KV (Pebble, in pipelines) and
// cache it in memory between epochs: decoded for windows, and for
// unwindowed GROUP BY decoded only while an epoch touches a group, then
// encoded in a pointer-free arena (coldcache.go).
//
// In bounded queries the operators that hold rows (sort, hash aggregate,
// distinct, window functions) charge them to the query's Budget (budget.go: approximate
// bytes, SQLSTATE 53200 past the limit) and look at its context in their
// long loops; a nil Budget, as in pipelines, is unlimited.
//
// A view read by another view arrives as upserts and tombstones by record
// key; the changelog step (changelog.go) keeps each key's row and emits
// signed rows, -1 for the row a key had and +1 for its new one, and a
// group aggregate given a sign column takes -1 rows back out of count,
// sum, avg and the variances and standard deviations (signedAcc;
// varagg.go), of min, max and the DISTINCT aggregates through
// the group's distinct values and their counts (bagAcc; so too the float
// variances and the statistics of two variables, corr, covar_* and
// regr_* of regragg.go, fed each value as often as rows hold it), of string_agg,
// array_agg, ORDER BY aggregates and the ordered-set ones (percentile_cont,
// percentile_disc, mode: orderedset.go) through the group's rows in order
// (listagg.go: listAcc, which such aggregates keep in any continuous
// query, signed or not), and deletes a group all of whose rows left. The joins, which emit and
// take signed rows too, are package join's.
//
// A bounded query's TUMBLE or HOP is a step that puts each row in its
// windows (windowassign.go: WindowAssign, by plan.WindowSpec.Windows, as
// the windowed aggregation does). Its SESSION (sessionassign.go:
// SessionAssign) holds every row and, once they are all in, gives each its
// session's start and end, splitting each GROUP BY value's rows in time
// order where neighbours are more than the gap apart: the sessions the
// continuous SessionAggregate ends with, by code of its own, so each
// checks the other. A stream's top-N whose partition holds
// an event time (a window's top-N; finaltopn.go: FinalTopN) keeps each
// partition's first rows under its time and puts them out once, final,
// when the watermark passes it.
//
// The window functions of a view (overwindow.go: OverWindow) keep each
// partition's rows in order and compute a touched partition again per
// batch with the bounded window step's code (windowfunc.go), emitting
// what changed as signed rows. A stream's window functions in event time
// (overtime.go: OverTime) hold each row until the watermark passes its
// time, then put it out once with its values, computed on from what its
// partition kept (counts, last rows, first rows, running accumulators;
// CheckOverTime bounds them when the query is created). A RANGE frame
// with an offset (rangeframe.go) finds each row's frame by binary search
// over its one ORDER BY value moved by the offset, as PostgreSQL's
// in_range; OverTime keeps a partition's rows of the span for it, and
// slides the exact aggregates over such frames (slider.go: a two-stack
// queue of partial aggregates) rather than folding each frame afresh.
//
// A lateral step is a ProjectSet of one function of a FROM item over the
// rows before it (LEFT JOIN LATERAL keeps a row it gives nothing for).
// Filter and Project give their compiled expressions the batch they are
// evaluating (expr.Batch), so that a user function is called for a whole
// batch at once.
//
// Per-row evaluation errors go to the chain's RowError policy: bounded
// queries abort with the error (PostgreSQL semantics), pipelines count the
// row as poison and go on.
package operators
