// Package catalog keeps the definitions of streams, materialized views
// and sinks: their columns and types, backend options, OIDs and, for
// continuous queries, the defining SQL and the planned topology.
//
// The source of truth is a log: a compacted, single-partition Kafka topic
// that every fvsql process pointed at the same cluster reads and appends
// to (the server owns that I/O and calls Apply for each record), so all
// processes share one catalog. Each process keeps a copy in its local
// Pebble store under the data directory.
//
// The catalog also serves the system relations clients introspect
// (pg_catalog, information_schema, fvsql's own pipelines table) as
// generated rows, so they are queried by the same SQL engine as streams.
// pgcatalog.go says how fvsql's objects appear there: streams as tables
// (WITH options as reloptions, record metadata as system columns),
// materialized views as such, sinks as foreign tables on their backend,
// the expression functions and the user functions (functions.go) as
// pg_proc.
//
// User functions (CREATE FUNCTION) are records of the same log under
// keys no relation name can have (FunctionKey), and a wasm module's bytes
// are stored beside them in chunks named by the module's SHA-256
// (ModuleKey): the catalog holds the modules every process runs.
//
// Concurrency: a Catalog is safe for concurrent use; Relations handed out
// are immutable snapshots (a change replaces the whole Relation).
package catalog
