package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	"github.com/fvsql/fvsql/tests/testenv"
)

// TestConformance runs the shared backend suite against the real Redis.
// claim_idle=0 lets the next group member take over a "crashed" member's
// pending entries at once (the suite reads them right after the crash).
func TestConformance(t *testing.T) {
	addr := testenv.Redis(t)
	prefix := testenv.UniqueName("fvsqlconf-") + ":"
	uri := "redis://" + addr + "/0?claim_idle=0s"
	conformance.Run(t, func(t *testing.T) backends.Streamer {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := backends.Open(ctx, uri, backends.Env{TopicPrefix: prefix})
		if err != nil {
			t.Fatalf("open %s: %v", uri, err)
		}
		return st
	}, conformance.Caps{
		Shards:          true, // shard keys <key>:0 … <key>:n-1
		Keys:            true,
		BinaryPayloads:  true,
		Timestamps:      false, // an entry's time is its ID's, assigned by Redis
		Bounded:         true,
		Replay:          true,
		Durable:         true,
		Latest:          true,
		Groups:          true,
		CrashRedelivery: true,
		PartialAck:      true,
		// Consumers are Seekers, but SeekTime goes by the entries' own
		// (ID) times, while the suite's Seek subtest seeks to the
		// Timestamps it produced, which only backends with Timestamps
		// keep. TestSeek covers Seek and SeekTime here.
		Seek:         false,
		Positioned:   true,
		StartTime:    true,
		Realtime:     true,
		SharedGroups: true,
		ThroughputN:  100_000,
	})
}
