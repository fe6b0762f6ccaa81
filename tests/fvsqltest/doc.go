// Package fvsqltest runs real fvsql server processes for integration
// tests: it builds ./cmd/fvsql once per test binary, starts processes with
// their own data directories, ports and captured logs, and stops them
// gracefully (SIGTERM), kills them (SIGKILL) and restarts them on the same
// data directory and ports. Every process a test starts is killed when the
// test ends, also when it fails or panics, and a failed test prints the
// tail (and the warnings and errors) of every process's log.
//
// It also pauses and resumes processes (SIGSTOP/SIGCONT), wipes a
// stopped process's data directory, copies every log to
// $FVSQL_TEST_LOG_DIR when set, and starts a private single-node Apache
// Kafka broker from the jars in $FVSQL_KAFKA_LIBS (StartKafka) that a test
// can stop and start again.
package fvsqltest
