// Package clients runs real PostgreSQL client libraries against a started
// fvsql server: pgx with the extended protocol, parameters and binary
// results, its simple protocol mode, TLS and COPY; and TestClientSuites,
// the client compatibility suite: a program of checks per driver or tool
// (python/: psycopg, psycopg2, SQLAlchemy, pandas, asyncpg; superset/:
// Apache Superset's own code; java/: pgjdbc and the SQL Metabase and
// DBeaver send through it; node/: node-postgres; pgxpool and Grafana's
// SQL in Go), each printing "ok <check>" or "FAIL <check>: <why>", run
// against fvsql with SCRAM and TLS, or against a real PostgreSQL
// (FVSQL_CLIENTS_POSTGRES, `scripts/test.sh --clients-postgres`) to show
// that the checks themselves are right. known_failures.txt lists the
// checks fvsql does not pass yet.
package clients
