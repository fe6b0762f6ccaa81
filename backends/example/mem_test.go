package example_test

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	_ "github.com/fvsql/fvsql/backends/example" // registers mem://
)

// TestConformance opens the backend the way the server does — by URI,
// through the registry — and runs the suite every backend runs.
func TestConformance(t *testing.T) {
	uri := "mem://" + t.Name() // one store per test; Streamers of it share data
	conformance.Run(t, func(t *testing.T) backends.Streamer {
		st, err := backends.Open(context.Background(), uri, backends.Env{})
		if err != nil {
			t.Fatalf("open %s: %v", uri, err)
		}
		return st
	}, conformance.Caps{
		Shards: true, Keys: true, BinaryPayloads: true, Timestamps: true,
		Bounded: true, ExactEnd: true, Replay: true, Durable: true, Latest: true,
		Groups: true, CrashRedelivery: true, PartialAck: true,
		Seek: true, StartTime: true, Realtime: true, SharedGroups: true,
		Positioned: true, ThroughputN: 100_000,
	})
}
