// Package stdio is the stdio:// backend: streams as lines on the process's
// standard input and output, for Unix pipes (`fvsql … | jq`, `producer |
// fvsql …`). Lines use the seed's framing
//
//	[2026-01-02T03:04:05.123456Z | clicks | 42 | 0] {"user":7}
//
// (timestamp RFC 3339 in UTC with microseconds, stream key, sequence,
// shard). A producer writes one framed line per message and flushes per
// Send; "stdio://?framing=plain" writes bare payloads. Producer sequences
// count per stream from 0 in each process; keys are not written.
//
// Consumers read standard input through one shared reader per input (a
// hub): one goroutine reads lines and hands each to the consumers of its
// stream — a framed line to its stream key's consumers, a plain line to
// every stream — round-robin among the consumers of one (stream, group)
// (the seed's load balancing), every line to each group. Plain lines get
// sequence = line number (from 1), shard 0, timestamp = arrival; framed
// lines what their frame gives. A blank plain line is no message.
//
// Guarantees: at-most-once. Nothing is stored: no replay, no seek, Ack is
// a no-op; a line read into a consumer's queue is lost if the process
// dies; a line whose stream has no consumer (while others exist) is
// dropped. The reader waits while no consumer exists at all, and while
// the consumer whose turn it is has a full queue (back-pressure to the
// pipe). Read returns ErrEndOfStream at EOF, following or not (the input
// does not grow after EOF); Scan reads until EOF. Payloads may not contain
// a newline. New takes any io.Reader and io.Writer (tests, in-process
// pipes); the registered factory shares one hub on os.Stdin/os.Stdout for
// the whole process, whatever URIs open it.
package stdio
