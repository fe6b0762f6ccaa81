package file_test

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	_ "github.com/fvsql/fvsql/backends/file"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, query string }{
		{"default", ""},
		{"small-blocks", "?block_size=1024"}, // many beacons: seeks and recovery cross blocks
	} {
		t.Run(c.name, func(t *testing.T) {
			uri := "file://" + dir + "/" + c.query
			conformance.Run(t, func(t *testing.T) backends.Streamer {
				st, err := backends.Open(context.Background(), uri, backends.Env{FileRoot: dir})
				if err != nil {
					t.Fatalf("open %s: %v", uri, err)
				}
				return st
			}, conformance.Caps{
				Keys: true, BinaryPayloads: true, Timestamps: true,
				Bounded: true, ExactEnd: true, Replay: true, Durable: true, Latest: true,
				Groups: true, CrashRedelivery: true, PartialAck: true,
				Seek: true, Positioned: true, ThroughputN: 100_000,
			})
		})
	}
}
