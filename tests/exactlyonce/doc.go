// Package exactlyonce holds the acceptance tests of exactly-once state:
// operator state checkpointed to compacted Kafka topics in one
// transaction with the output and the input offsets, and restored from
// them. The tests run real fvsql processes (tests/fvsqltest), feed them
// with a plain franz-go producer and read what they wrote with
// read_committed consumers, so what they check is what a downstream
// consumer sees. Expected outputs are computed independently, in the
// test, from the generated input.
//
// Input and queries (data_test.go): one stream
//
//	ev (k BIGINT, v BIGINT, g BIGINT, ts TIMESTAMP,
//	    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (partitions = 8, key = 'k')
//
// where g = v % 7 is precomputed by the producer (w2 groups by a column
// that is not the input's key), and the continuous queries
//
//	s1  stateless: SELECT k, v * 2 AS v2, ts FROM ev WHERE v % 3 <> 0
//	w1  tumbling 10 s windows GROUP BY k (the input's key: one stage)
//	w2  tumbling 10 s windows GROUP BY g (a repartition stage first)
//	t3  materialized top-3 view: ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) <= 3
//	v4  a view over the view t3: SELECT k % 16 AS b, count(*) AS n, sum(v) AS s FROM t3 GROUP BY 1
//	j5  an aggregate over a join: SELECT m.d, count(*), count(m.k), sum(e.v)
//	    FROM ev e LEFT JOIN dim m ON e.k = m.k GROUP BY m.d
//	j6  a view of a join's rows: SELECT e.k, e.v, m.d FROM ev e JOIN dim m ON e.k = m.k WHERE e.v % 100 = 0
//	j7  an aggregate over an anti join, in the join's stage (grouped by its key):
//	    SELECT e.k, count(*) AS n, sum(e.v) AS s FROM ev e WHERE e.v % 100 = 1
//	    AND NOT EXISTS (SELECT 1 FROM dim m WHERE m.k = e.k AND m.d < 3) GROUP BY e.k
//	n8  an aggregate over a grouped subquery (a hidden view in the pipeline):
//	    SELECT c % 16 AS b, count(*) AS n, sum(s) AS s
//	    FROM (SELECT k, count(*) AS c, sum(v) AS s FROM ev GROUP BY k) t GROUP BY 1
//	o9  a window view (the overWindow operator): SELECT v, k, v - lag(v)
//	    OVER (PARTITION BY k ORDER BY ts) AS d FROM ev WHERE v % 100 = 2
//
// over a second stream dim (k, d = k % 5), one row per key, produced apart
// from ev: the even keys before the data, the odd ones halfway through the
// kills, so that j5 first counts the odd keys' rows NULL-padded and takes
// them back out when their dim rows come, and j7 counts the odd keys' rows
// until then.
//
// Row i has event time 2026-01-01 + i ms (monotonic in every partition);
// v is a seeded permutation of 1..N (no ties in the top-N); the first 8
// rows are one per partition and are flushed before the rest, so every
// partition of w2's repartition topic has heard from every input
// partition early (TestRepartitionFirstWatermarks covers the case
// without it); the last 8 rows, one per partition, are 10^7 s later,
// so every data window closes. The checks: s1 equals the expected rows as
// a multiset (nothing lost, nothing duplicated, every value right); w1
// and w2 hold every expected window exactly once with the right count,
// sum and max; t3's compacted topic (folded by key) and SELECT * FROM t3
// equal the expected top 3 per key; v4's compacted topic and SELECT equal
// the count and sum per bucket of those rows; SELECT * FROM j5 has one row
// per d with every row matched (no NULL group left) and j6 every row of
// ev with v % 100 = 0 once; j7 one row per key of d >= 3 with its count
// and sum (no group of a key whose dim row came with d < 3); o9 every row of ev with v % 100 = 2 once, with
// its key's lag; the pipelines' _errors streams are
// empty (no poison, no late rows).
//
// The tests:
//
//   - TestCrashRestart: the process doing the work is killed with SIGKILL
//     at seeded random moments (FVSQL_EO_KILLS, default 20) while the
//     input (FVSQL_EO_ROWS rows, default 200000) is produced, and
//     restarted on the same data directory each time. Kill moments mix
//     "early" (during start, catalog replay, group join, restore),
//     "working" (after it committed an epoch with input) and, in embedded
//     mode, "failover" (it stays dead until the survivor owns every
//     partition). On the real broker one process runs everything; on the
//     embedded broker process a hosts the broker (it cannot be killed
//     without killing the broker) and process b, the victim, uses it;
//     both run every pipeline, so kills also move partitions between them.
//   - TestCrashRestartWiped: the same, with the victim's data directory
//     wiped before every 4th restart: state and catalog must come back
//     from Kafka (state topics, catalog topic); the process comes back as
//     a new node, unable to fence the transactions it left open.
//   - TestFailover: two processes share w1 and t3; one is killed with
//     SIGKILL mid-stream after it checkpointed state; the survivor
//     restores the moved partitions from the state topics (restored_keys
//     grows; its log says "partition state restored from its checkpoint
//     topic") and the output is exact.
//   - TestZombieFencing: process p (10 s epochs, so 30 s transaction
//     timeout) is frozen with SIGSTOP while its open transaction holds
//     output (checked on the output topic: last stable offset stuck below
//     the high watermark, p's records there); after the 10 s session
//     timeout q owns all partitions and catches up; p is resumed with
//     SIGCONT and must not commit (its pending records are never in the
//     committed output), and the final output is exact.
//   - TestBrokerRestart: the broker goes away for a few seconds under
//     running pipelines: "real" is a private Apache Kafka broker the test
//     starts from the jars in FVSQL_KAFKA_LIBS (fvsqltest.StartKafka) and
//     stops with SIGTERM; "embedded" stops the broker's host process with
//     SIGTERM. The pipelines must show RETRYING with an error meanwhile,
//     RUNNING after, and the output is exact.
//   - TestHangingTransaction: a transaction its coordinator never knew
//     holds a partition of a pipeline's input open (a private broker with
//     partition verification off takes it); the pipeline must abort it
//     and carry on with the rows behind it, and the hanging row must not
//     come out.
//   - TestKilledWhileJoining: a process killed (three times) while its
//     consumers are joining their groups must not keep partitions from
//     the survivor, which must own them all within 45 s.
//   - TestPipelineCreatedDuringStart: a pipeline created by one process
//     while another is starting must run on both.
//   - TestRepartitionFirstWatermarks: w2 created over a backlog in all 8
//     partitions (no warm-up) must count every row; none may come late.
//   - TestBacklogSparseWatermarks: a HOP aggregation (10 s windows every
//     16 ms: 625 per row) behind a repartition stage, created over a
//     backlog of 100000 rows on a process with --stream-idle-timeout 6s
//     and 8 consumers per stage, must count every row; none may come
//     late. The repartition stage writes its sparse watermark records
//     within seconds, the window stage needs far longer than the idle
//     timeout to work through them: an upstream partition is idle in the
//     input's own time, not in the wall-clock time a slow stage spends.
//
// Bugs these tests found, fixed, that they keep guarding against:
//
//   - Embedded broker: kfake's group coordinator kept, for ever, a member
//     whose process died while it waited in JoinGroup/SyncGroup; its
//     partitions were consumed by nobody. fvsql's embedded broker now
//     removes group members whose connection closed and who stayed
//     silent for 6 s (backends/kafka/embedded/ghosts.go).
//   - Both brokers: a process that was starting missed pipelines another
//     process created meanwhile (TestPipelineCreatedDuringStart).
//   - Both brokers: behind a repartition stage, the watermark was the
//     minimum over the upstream partitions that reported one so far, so
//     rows of upstream partitions that reported later were dropped as late
//     (TestRepartitionFirstWatermarks).
//   - Apache Kafka: a broker stopped with SIGTERM under running pipelines
//     can leave a hanging transaction: records in a partition, and
//     offsets in the group coordinator, that no marker will ever close.
//     Readers of the partition stalled, and so did the consumer assigned
//     the offsets' partitions (OffsetFetch answered
//     UNSTABLE_OFFSET_COMMIT). Pipelines now abort such transactions
//     (engine/hanging.go; TestBrokerRestart, TestHangingTransaction).
//
// Every test but TestBrokerRestart and TestHangingTransaction runs as
// subtests "embedded" and "real" (the Apache Kafka of FVSQL_TEST_KAFKA,
// each test under its own topic prefix; skipped without it, failed under
// CI). TestBrokerRestart/real and TestHangingTransaction need
// FVSQL_KAFKA_LIBS (a private broker they stop or reconfigure; skipped
// without it, failed under CI). TestHangingTransaction switches off the
// broker's transaction.partition.verification.enable, writes a
// transactional record for a partition the coordinator was never told
// of, and checks that the pipeline aborts it and goes on.
// ./scripts/test.sh exports all of them:
//
//	./scripts/test.sh -run . ./tests/exactlyonce/
//	FVSQL_EO_ROWS=1000000 ./scripts/test.sh -run 'TestCrashRestart$' ./tests/exactlyonce/
//
// Other settings: FVSQL_EO_KILLS (kills per crash run, default 20),
// FVSQL_EO_KEYS (distinct k, default 500), FVSQL_EO_REAL_PROCS=2 (crash
// tests on the real broker with a survivor and a victim, as on the
// embedded one), FVSQL_EO_FAILOVER_ROWS, FVSQL_EO_ZOMBIE_ROWS and
// FVSQL_EO_BROKER_ROWS (default 60000 each), FVSQL_TEST_LOG_DIR (keep
// every process's log), FVSQL_TEST_BIN (test a prebuilt binary).
//
// Seeds are printed and set by FVSQL_TEST_SEED. Every process runs with
// 200 ms epochs and --stream-idle-timeout 1h: a dead process's input
// partitions must keep holding w2's watermark back (with the default
// idle timeout, equal to the group session timeout, they would be left
// out and their rows would rightly come late). The tests bound every
// wait (polling with deadlines, FLUSH retried while it times out), use
// loopback only, and kill every process they start.
package exactlyonce
