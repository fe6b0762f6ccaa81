// Package catalog keeps the definitions of streams, materialized views
// and sinks: their columns and types, backend options, OIDs and, for
// continuous queries, the defining SQL and the planned topology. It is
// persisted in the local Pebble store under the data directory and
// loaded at start; every change is written before it is acknowledged.
//
// The catalog also serves the system relations clients introspect
// (pg_catalog, information_schema, fvsql's own pipelines table) as
// generated rows, so they are queried by the same SQL engine as streams.
//
// Concurrency: a Catalog is safe for concurrent use; Relations handed out
// are immutable snapshots (a change replaces the whole Relation).
package catalog
