// Package bench holds the load generators and measurements behind the
// command fvsql-bench (cmd/fvsql-bench): figures (rows/s, latency
// percentiles, peak memory, CPU), not pass/fail tests.
//
// Scenarios:
//
//   - Insert: multi-row INSERT statements over one pgx connection, with
//     the simple protocol (literal SQL text) and the extended protocol
//     (one prepared statement with 4×B parameters).
//   - Select: a bounded aggregate over a stream loaded straight into Kafka
//     with franz-go, at two stream lengths, to show that the scan's memory
//     does not grow with the stream; plus the latency of SELECT * LIMIT 10.
//   - Pipeline: the catch-up rate of a filter+project continuous query over
//     a preloaded stream, side by side with plain franz-go copies of the
//     same topic through the same broker (at-least-once and transactional).
//   - Windows: the catch-up of TUMBLE and HOP aggregations and of GROUP BY
//     views with 1M and 10k keys over a slightly out-of-order bids
//     stream, with the output checked against known results.
//   - Pull: concurrent key lookups on a 1M-key materialized view.
//   - EOS: exactly-once against at-least-once at several checkpoint
//     intervals (catch-up rate), and produce-to-visible latency.
//   - Recovery: SIGKILL of a server holding 1M keys of state, restarted
//     with its data directory kept and wiped: time until ready.
//   - Backends: sinks into and reads of Kafka, Redis and file streams.
//
// Every scenario is built on one set-up harness (harness.go): newHarness
// or openHarness prepares the run and its server, createStream loads a
// stream, catchUp and buildView wait for a pipeline, measure takes a
// phase's figures and profiles, close removes what the run made.
//
// Shared machinery: an fvsql server started in-process (server.Open and
// pgwire on a free loopback port), in a child process (`fvsql-bench
// serve`, so that its memory and CPU are measured alone), or reached at a
// URL; an embedded kfake broker hosted by the bench process when a
// scenario needs one that outlives a server; a franz-go loader of JSON
// rows with known aggregates; peak memory from /proc (VmHWM, reset through
// clear_refs) and a sampled Go heap; host and process CPU time; latency
// percentiles; plain-text tables.
//
// Every run is bounded by a context deadline. Nothing here is imported by
// the server: the server binary (cmd/fvsql) links neither this package
// nor its client, pgx.
package bench
