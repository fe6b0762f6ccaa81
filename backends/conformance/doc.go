// Package conformance is the one test suite every backend runs: a backend's
// test calls Run with a function that opens its Streamer and the Caps it
// claims, and the suite checks the backends contract (package backends)
// against the real thing — open/close, round trips, per-shard ordering,
// Follow and bounded reads, replay and seek, consumer groups and
// at-least-once after a consumer crash, positioned (idempotent) sinks, and
// a 100k-message throughput figure.
//
// Each subtest opens its own Streamer (and closes it when it ends), uses
// streams named with a random suffix, and drops them at the end, so a suite
// can run against a shared broker. Subtests whose ability a backend lacks
// are skipped with the name of the missing capability, never silently
// passed. Throughput is reported with t.Logf as messages per second; it is
// a figure, not an assertion (the suite asserts only that every message
// arrives exactly once).
//
// The suite runs its subtests one after another (the test machines are
// small); it starts no goroutines that outlive a subtest.
package conformance
