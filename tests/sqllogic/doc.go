// Package sqllogic runs sqllogictest files against fvsql over the PostgreSQL
// wire protocol.
//
// The package holds the .slt parser ([Parse]), the result comparison
// ([CompareResult]) and a [Runner]; TestSQLLogic (sqllogic_test.go) runs
// each testdata/*.slt file, side by side, as a subtest against a fresh
// server process with its own data directory, started through
// tests/fvsqltest (which builds ./cmd/fvsql once), and ends it with a
// graceful shutdown that must succeed:
//
//	go test ./tests/sqllogic                                   # embedded broker
//	go test ./tests/sqllogic -run 'TestSQLLogic/000_smoke.slt'  # one file
//	FVSQL_SQLLOGIC_BROKER=real FVSQL_TEST_KAFKA=127.0.0.1:9092 go test ./tests/sqllogic
//
// In the default "embedded" mode each server runs its own in-process broker
// (--kafka-listen on a free loopback port). In "real" mode the servers use
// the Kafka broker of FVSQL_TEST_KAFKA (--kafka), and each server start gets
// its own FVSQL_TOPIC_PREFIX so that files reusing stream names do not share
// topics. FVSQL_SQLLOGIC_BIN (or fvsqltest's FVSQL_TEST_BIN) names a
// prebuilt fvsql binary to use instead of building one.
//
// # File format
//
// The classic sqllogictest subset, as RisingWave and CockroachDB use it.
// Records are separated by blank lines; lines starting with # are comments.
//
//	statement ok                  SQL must succeed
//	statement count N             SQL must succeed with N rows affected
//	statement error [E]           SQL must fail
//	query <types> [sort]          SQL lines, then ----, then expected rows
//	query error [E]               the query must fail
//	halt                          stop running this file
//	sleep <duration>              e.g. sleep 500ms (for rare cases only)
//	onlyif <label> / skipif <label>  before a record: run it only if / unless
//	                              the label is active; labels are "embedded"
//	                              and "real", after the broker mode
//
// E is either a 5-character SQLSTATE such as 42P01, which the error's code
// must equal, or a regexp that the error message must match; without E any
// error reported by the server passes. An error that is not reported by the
// server (a broken connection, a timeout) always fails the record and stops
// the file.
//
// <types> has one letter per column (T text, I integer, R float, B boolean,
// ...); only its length is checked, against the number of result columns.
// The sort mode is nosort (default: rows in the order received), rowsort
// (rows sorted as text lines on both sides) or valuesort (all
// whitespace-separated values sorted, ignoring rows).
//
// Values are compared in PostgreSQL text format exactly as the server sent
// them with the simple query protocol (t/f for booleans, floats as printed
// by the server); NULL stands for null and (empty) for the empty string. A
// row is its values joined by single spaces, and each expected line is
// compared with it after collapsing runs of whitespace on both sides, since
// values may contain spaces.
//
// Each record has a 60 s timeout; a failure names the file, the record's
// line, the SQL and the expected and actual outcome, and a failed file prints
// the tail of its server's log.
package sqllogic
