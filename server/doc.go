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
package server
