// Package join holds the joins, continuous and bounded, over the
// operator contract of package operators:
//
//   - HashJoin (hash.go), the regular join of views, inner, outer, semi
//     and anti: it keeps both sides' rows per key in state and emits
//     signed rows: pairs, and an outer row's NULL-padded row until its
//     first partner takes it back (a semi join's left row while it has a
//     partner, an anti join's while it has none). It takes signed input
//     too (another join's rows, a view's changes) and takes back the
//     pairs of a row that goes. The rows of the keys it probed stay in
//     memory between epochs (rowcache.go), kept equal to its state by
//     its own writes, up to --group-cache-mb per partition.
//   - IntervalJoin (interval.go), two streams joined on a key within a
//     time bound, each row kept until the watermark passes its bound.
//   - LookupJoin (lookup.go), a stream's rows looking up a view's current
//     rows by key, with no state of its own.
//   - Bounded (bounded.go), the join of a bounded query: the right input
//     held and hashed, the left streamed through it.
//
// Every join lays its rows out alike (padded: the left side's columns,
// then the right's, NULLs for a missing side), matches keys by one rule
// (a NULL never matches), and each is checked against one nested-loop
// oracle (join_test.go). Build makes a join step's operator; the engine
// (BuildStep) sends the other steps to operators.
package join
