// Package services holds integration tests (package services_test) which
// prove that the services of the test environment are the real ones: an
// Apache Kafka broker that applies transactions (read_committed hides aborted
// records that read_uncommitted still sees in the log) and compaction
// settings, and a Redis server with working consumer groups on streams.
//
// The tests find the services through [github.com/fvsql/fvsql/tests/testenv]:
// they are skipped when FVSQL_TEST_KAFKA / FVSQL_TEST_REDIS are unset, and
// fail then when CI is set. ./scripts/test.sh starts both and runs them:
//
//	./scripts/test.sh ./tests/services/
package services
