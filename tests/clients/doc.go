// Package clients runs real PostgreSQL client libraries against a started
// fvsql server: pgx with the extended protocol, parameters and binary
// results, and its simple protocol mode.
package clients
