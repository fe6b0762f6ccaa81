package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/tests/testenv"
	"github.com/twmb/franz-go/pkg/kfake"
)

// caps are what the kafka:// backend provides: everything but
// Positioned (the producer does not implement
// backends.PositionedProducer: pipelines get exactly-once from Kafka
// transactions instead).
var caps = conformance.Caps{
	Shards: true, Keys: true, BinaryPayloads: true, Timestamps: true,
	Bounded: true, ExactEnd: true, Replay: true, Durable: true, Latest: true,
	Groups: true, CrashRedelivery: true, PartialAck: true,
	Seek: true, StartTime: true, Realtime: true, SharedGroups: true,
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

// testSeekShards checks what the suite's one-partition Seek subtest does
// not: Seek and SeekTime on a topic of several partitions move every
// partition, without a group and in one (a seek before the member's first
// assignment applies to it; after, to the partitions it owns).
func testSeekShards(t *testing.T, brokers []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := kafka.Connect(ctx, kafka.Config{Brokers: brokers, TopicPrefix: testenv.UniqueName("seek-") + "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "s", Shards: 4}); err != nil {
		t.Fatal(err)
	}
	defer st.DropStream(context.Background(), "s")
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var msgs []backends.Message
	for i := range 200 {
		msgs = append(msgs, backends.Message{
			Stream: "s", Key: fmt.Appendf(nil, "k%d", i%16), Payload: fmt.Appendf(nil, "%03d", i),
			Timestamp: base.Add(time.Duration(i) * time.Second),
		})
	}
	p, _ := st.Producer(ctx)
	if err := p.Send(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	readAll := func(c backends.Consumer) []backends.Message {
		t.Helper()
		var out []backends.Message
		for {
			got, err := c.Read(ctx, 100)
			if errors.Is(err, backends.ErrEndOfStream) {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, got...)
		}
	}
	open := func(o backends.ConsumerOptions) backends.Consumer {
		t.Helper()
		c, err := st.Consumer(ctx, "s", o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	all := readAll(open(backends.ConsumerOptions{}))
	if len(all) != 200 {
		t.Fatalf("read %d of 200", len(all))
	}
	// What a seek must deliver: per partition, offsets >= seq; stamped >= ts.
	count := func(keep func(backends.Message) bool) int {
		n := 0
		for _, m := range all {
			if keep(m) {
				n++
			}
		}
		return n
	}
	check := func(what string, got []backends.Message, keep func(backends.Message) bool) {
		t.Helper()
		if want := count(keep); len(got) != want {
			t.Fatalf("%s: %d messages, want %d", what, len(got), want)
		}
		for _, m := range got {
			if !keep(m) {
				t.Fatalf("%s: message %s (partition %d, offset %d) should not be there", what, m.Payload, m.Shard, m.Sequence)
			}
		}
	}
	ts := base.Add(150 * time.Second)
	after := func(m backends.Message) bool { return !m.Timestamp.Before(ts) }
	from := func(seq int64) func(backends.Message) bool {
		return func(m backends.Message) bool { return m.Sequence >= seq }
	}
	for _, group := range []string{"", testenv.UniqueName("g")} {
		o := backends.ConsumerOptions{Group: group, Member: "m1"}
		c := open(o)
		sk := c.(backends.Seeker)
		// Before any Read: a group member has no partitions yet.
		if err := sk.SeekTime(ctx, ts); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("group %q: SeekTime before the first Read", group), readAll(c), after)
		if err := sk.Seek(ctx, 10); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("group %q: Seek(10)", group), readAll(c), from(10))
		if err := sk.Seek(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("group %q: Seek past every end", group), readAll(c), from(1000))
		if err := sk.SeekTime(ctx, base.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("group %q: SeekTime before the first", group), readAll(c), from(0))
	}
}

func TestSeekShardsEmbedded(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testSeekShards(t, c.ListenAddrs())
}

func TestSeekShardsReal(t *testing.T) {
	testSeekShards(t, []string{testenv.Kafka(t)})
}
