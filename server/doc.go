// Package server is one fvsql instance: it owns the data directory, the
// Pebble store, the catalog, the Kafka connection (an embedded kfake
// broker or a real cluster) and the backends, and it executes the
// statements of pgwire sessions through the pipeline of packages:
// sql.Parse -> planner.Plan* -> engine.RunBounded / engine pipelines ->
// backends.
//
// Concurrency: sessions run concurrently; catalog changes (DDL) are
// serialised by one mutex so that a relation's backend objects and its
// catalog record change together. A statement's execution runs on the
// session's goroutine, except bounded scans, whose per-partition work runs
// on the engine's goroutines.
//
// COPY (copy.go): TO STDOUT runs the bounded query (or the subscription)
// and encodes its rows as they come; FROM STDIN holds the encoded rows
// until the last is read and writes them in one Send, as INSERT … VALUES
// does, so a bad row writes nothing; the rows held are bounded by
// --query-memory-mb (53200 past it). Files and programs are refused
// (42501).
//
// Catalog sharing: every process replays the compacted catalog topic at
// start and then follows it (catalog_log.go); changes applied while the
// process lists the catalog to start its pipelines are followed when it
// goes live, so none is missed.
//
// User functions (functions.go): CREATE FUNCTION reads or receives the
// module, compiles it against the signature (nothing is stored when that
// fails), writes the module's chunks and the function to the catalog
// log; each process compiles a module on its first call, once, and the
// version a replacement or a drop retires is closed two minutes later.
// DROP FUNCTION is refused while a relation's query calls the function.
//
// The embedded broker's group members whose connection closed and that
// stayed silent for two heartbeat intervals (6 s) are removed from their groups
// (ghosts.go): kfake would otherwise keep a member whose process died
// while joining, and nobody would read its partitions.
package server
