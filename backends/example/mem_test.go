package example_test

import (
	"context"
	"fmt"
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

// TestGroupMemberLeaves: what a member of a shared group read and did not
// acknowledge goes to the member that stays; what it acknowledged does not.
func TestGroupMemberLeaves(t *testing.T) {
	ctx := context.Background()
	st, err := backends.Open(ctx, "mem://"+t.Name(), backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	p, _ := st.Producer(ctx)
	var msgs []backends.Message
	for i := range 10 {
		msgs = append(msgs, backends.Message{Stream: "s", Payload: fmt.Appendf(nil, "%d", i)})
	}
	if err := p.Send(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	o := backends.ConsumerOptions{Group: "g", Follow: true}
	a, _ := st.Consumer(ctx, "s", o)
	b, _ := st.Consumer(ctx, "s", o)
	defer b.Close()
	ra, _ := a.Read(ctx, 4) // 0..3
	rb, _ := b.Read(ctx, 2) // 4, 5: the members share the cursor
	if len(ra) != 4 || len(rb) != 2 || string(rb[0].Payload) != "4" {
		t.Fatalf("a read %d, b read %d (first %q)", len(ra), len(rb), rb[0].Payload)
	}
	if err := a.Ack(ctx, ra[:1]); err != nil { // 0 acknowledged; 1, 2, 3 not
		t.Fatal(err)
	}
	a.Close()
	var got []string
	for len(got) < 7 {
		ms, err := b.Read(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			got = append(got, string(m.Payload))
		}
	}
	if fmt.Sprint(got) != "[1 2 3 6 7 8 9]" {
		t.Fatalf("the member that stayed read %v, want [1 2 3 6 7 8 9]", got)
	}
}
