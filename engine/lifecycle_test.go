package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kfake"
)

// catalogHost is a Host over a catalog of one-stage pipelines copying
// stream "in" to "out"; drop takes a pipeline out of it, as DROP takes
// the relation out of the catalog before it stops the pipeline.
type catalogHost struct {
	mu    sync.Mutex
	names map[string]bool
}

func (h *catalogHost) drop(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.names, name)
}

func (h *catalogHost) has(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[name]
}

func (h *catalogHost) Topology(_ context.Context, name string) (*plan.Topology, error) {
	return &plan.Topology{Stages: []plan.Stage{{Name: "s0", Inputs: []string{"in"}, Output: "out"}}, Errors: "errs"}, nil
}

func (h *catalogHost) Stream(_ context.Context, name string) (*plan.Stream, error) {
	return &plan.Stream{Name: name, Topic: name, Columns: []string{"k"}, Types: []types.Type{types.Int8}, Partitions: 1}, nil
}

func (h *catalogHost) Backend(context.Context, string) (backends.Streamer, string, error) {
	return nil, "", nil
}

func (h *catalogHost) Heartbeat(_ context.Context, name string) Signal {
	if h.has(name) {
		return Continue
	}
	return Stop
}

func (h *catalogHost) PutRecord(Record)                        {}
func (h *catalogHost) AwaitView(context.Context, string) error { return nil }

// TestDroppedPipelineLeaves: a pipeline the catalog no longer has is not
// started (a catalog follow-up's Start that finishes after DROP stopped
// the pipeline brought it back, and FLUSH then failed on its deleted
// topics), and a running one whose heartbeat finds it dropped leaves the
// running set, so FLUSH skips it and a new pipeline of its name starts.
func TestDroppedPipelineLeaves(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "errs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	store, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h := &catalogHost{names: map[string]bool{"p": true}}
	e, err := New(Config{
		Brokers: c.ListenAddrs(), NodeID: "n1", Store: store, RecordInterval: 20 * time.Millisecond,
		Consumers: 1, BatchSize: 100, CheckpointInterval: 50 * time.Millisecond, ExactlyOnce: true, OffsetReset: "earliest", IdleTimeout: time.Second,
	}, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	if err := e.Start(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if e.Running("gone") {
		t.Fatal("a pipeline the catalog does not have was started")
	}

	if err := e.Start(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if !e.Running("p") {
		t.Fatal("pipeline p did not start")
	}
	h.drop("p")
	for e.Running("p") {
		if ctx.Err() != nil {
			t.Fatal("a pipeline dropped from the catalog stayed in the running set")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := e.Flush(ctx); err != nil {
		t.Fatalf("FLUSH after the drop: %v", err)
	}
	h.mu.Lock()
	h.names["p"] = true
	h.mu.Unlock()
	if err := e.Start(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if !e.Running("p") {
		t.Fatal("a new pipeline of a dropped one's name did not start")
	}
}
