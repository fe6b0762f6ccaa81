// Package pipelines holds end-to-end tests of continuous queries
// (`CREATE STREAM … AS SELECT …`): real fvsql processes, started from the
// binary built from ./cmd/fvsql (tests/fvsqltest), talked to over the
// PostgreSQL wire protocol with pgx, with input produced and output read
// by plain Kafka clients (franz-go) where that is the point.
//
// Every test runs twice, as the subtests "embedded" (the first fvsql
// process runs its embedded Kafka-compatible broker; other processes and
// the test's Kafka clients use its endpoint) and "real" (the Apache Kafka
// broker of FVSQL_TEST_KAFKA, started by ./scripts/test.sh; each test uses
// its own topic prefix). Output is read with read_committed isolation, so
// what the tests count is what a downstream consumer would see.
//
// What the package proves:
//
//   - TestPipelineExternalProducer: records that another Kafka client
//     produces straight into a stream's topic flow through a pipeline; the
//     output is exactly the projected and filtered input (every id and
//     value), and the pipeline's counters add up (consumed = emitted +
//     filtered + dropped).
//   - TestPipelineGracefulRestart: SIGTERM while rows keep arriving, then a
//     restart on the same data directory, loses no row and duplicates none.
//   - TestPipelineKillRestart: SIGKILL at seeded random moments, several
//     times, loses no row and, since exactly-once is on, duplicates none.
//   - TestPipelineScaleOut: two processes sharing one Kafka share the
//     catalog and each pipeline's partitions; when one is killed the
//     survivor takes all partitions over and every input row reaches the
//     output.
//   - TestPipelinePoisonRows: malformed records (broken JSON, wrong JSON
//     types, out-of-range numbers, invalid UTF-8, expressions that fail,
//     1 MiB values) are set aside in <pipeline>_errors with their reason and
//     their exact original bytes, every good row still comes out, the
//     counters say so, and the server's memory stays flat.
//   - TestPipelineSurvivesRedisRestart: while the test's own redis-server
//     is down, a pipeline reading a Redis stream and a sink writing one are
//     RETRYING with the error; they resume by themselves when it returns,
//     the Kafka output holds every id read from Redis (at least once) and
//     the Redis sink every id exactly once.
//   - TestStreamJoinKillRestart: a LEFT interval join of two streams fed in
//     event-time order while the server is killed three times: the output
//     is exactly the nested-loop join of all the input (pairs once, orders
//     without a payment once with NULL).
//   - TestPipelineSurvivesRestartDefinition: a pipeline's definition
//     survives a restart; it runs again with no manual action.
//   - TestOutsideProducersKeyedStream: a keyed stream written unkeyed,
//     murmur2-keyed and CRC32-partitioned by outside clients: a view, a
//     top-N and an interval join equal the same SELECT run bounded.
//   - TestFlushOffsetResetLatest, TestFlushGoesOnWithoutAStuckPipeline,
//     TestWindowsCloseWhenRowsSitInOnePartition, TestLookupJoinRightAfterItsView:
//     FLUSH returns under STREAM_OFFSET_RESET=latest and past a stuck
//     pipeline (naming it), windows close when the rows sit in one
//     partition and the input goes quiet, and a stream-view join created
//     right after its view sees the data already in both.
//   - TestOversizeRecords: a 13 MiB non-JSON record, an output row over
//     16 MiB and a row a topic refuses are poison rows with truncated
//     reports; every good row comes out once.
//   - TestEmbeddedKafkaRequiresSASL (embedded only): with a password
//     method on, the embedded broker's Kafka listener requires SASL with
//     the pgwire users, and fvsql's own pipelines keep running.
//
// FVSQL_TEST_BIN runs the tests against a prebuilt fvsql binary instead of
// building ./cmd/fvsql; FVSQL_TEST_SEED changes the moments at which
// TestPipelineKillRestart kills the server.
//
// The tests bound their time (contexts, polling with deadlines, FLUSH;
// no unbounded sleeps) and their data (tens of thousands of rows), use
// loopback addresses only, and kill every process they start.
package pipelines
