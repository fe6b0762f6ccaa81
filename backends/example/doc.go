// Package example is a complete backend in one file, written to be read:
// "mem://name" keeps streams in process memory. It has every ability of the
// contract — shards, consumer groups with exact acknowledgement, Seek by
// sequence and time, positioned (idempotent) producers — so its test, which
// registers it and runs the conformance suite, shows the whole contract
// working. backends/README.md walks through it.
//
// The host of the URI names a store shared by every Streamer of the process
// that opens the same URI, so data outlives a Streamer (as it outlives a
// connection to Kafka) but not the process. Nothing is durable.
//
// Concurrency: one mutex per store guards everything; a channel closed and
// replaced on every change wakes following consumers. No goroutines.
//
// The package registers "mem" when imported; cmd/fvsql does not import it.
package example
