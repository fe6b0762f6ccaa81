// Package testenv tells Go tests where the real services of the test
// environment are: the Apache Kafka broker and the Redis server that
// ./scripts/test.sh starts on loopback before it runs `go test`.
//
// The addresses come from two environment variables:
//
//	FVSQL_TEST_KAFKA  Kafka bootstrap brokers, e.g. 127.0.0.1:39092 (comma separated)
//	FVSQL_TEST_REDIS  Redis address, e.g. 127.0.0.1:36379
//
// A test that needs a service asks for it with [Kafka] or [Redis]. When the
// variable is unset the test is skipped on a developer's machine (so a plain
// `go test ./...` works without services) but fails when the CI environment
// variable is set, so that CI can never pass by silently skipping the tests
// that use real services.
//
// Tests that share one broker or Redis server should name their topics,
// streams and keys with [UniqueName], and servers they start listen on ports
// from [FreePort].
package testenv
