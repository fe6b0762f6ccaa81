package kafka_test

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/tests/testenv"
	"github.com/twmb/franz-go/pkg/kfake"
)

// caps are what the kafka:// backend provides. Seek: the consumer does
// not implement backends.Seeker; Positioned: the producer does not
// implement backends.PositionedProducer (pipelines get exactly-once from
// Kafka transactions instead).
var caps = conformance.Caps{
	Shards: true, Keys: true, BinaryPayloads: true, Timestamps: true,
	Bounded: true, ExactEnd: true, Replay: true, Durable: true, Latest: true,
	Groups: true, CrashRedelivery: true, PartialAck: true,
	ThroughputN: 100_000,
}

func run(t *testing.T, brokers []string) {
	prefix := testenv.UniqueName("conformance-") + "-"
	conformance.Run(t, func(t *testing.T) backends.Streamer {
		st, err := kafka.Connect(context.Background(), kafka.Config{Brokers: brokers, TopicPrefix: prefix})
		if err != nil {
			t.Fatalf("connect to %v: %v", brokers, err)
		}
		return st
	}, caps)
}

// TestConformanceEmbedded runs the suite against franz-go's in-process
// broker (kfake), the server's embedded broker.
func TestConformanceEmbedded(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run(t, c.ListenAddrs())
}

// TestConformanceReal runs it against the Apache Kafka broker of
// ./scripts/test.sh (skipped without FVSQL_TEST_KAFKA, failed in CI).
func TestConformanceReal(t *testing.T) {
	run(t, []string{testenv.Kafka(t)})
}
