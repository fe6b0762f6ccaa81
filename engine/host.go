package engine

import (
	"context"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/plan"
)

// Host is what the engine asks of the system around it (the seed's
// ControlPlane shape). The server answers it from the catalog.
type Host interface {
	// Topology returns a pipeline's stages.
	Topology(ctx context.Context, pipeline string) (*plan.Topology, error)
	// Stream resolves a stream a stage reads or writes (a user stream)
	// to its topic and schema. Internal streams come from the topology.
	Stream(ctx context.Context, name string) (*plan.Stream, error)
	// Backend resolves a stream on another backend (for bridges): the
	// connection and the stream's key there.
	Backend(ctx context.Context, name string) (backends.Streamer, string, error)
	// Heartbeat is called on a cadence; Stop ends the pipeline in order
	// (final commit, then leave the group).
	Heartbeat(ctx context.Context, pipeline string) Signal
	// PutRecord reports a pipeline's live record.
	PutRecord(rec Record)
	// AwaitView returns once this process's copy of a materialized view
	// has applied its table topic up to that topic's end as of the call
	// (at once when the process keeps no copy of it), or ctx ends.
	AwaitView(ctx context.Context, view string) error
}

// Signal is the answer to a heartbeat.
type Signal int

// Heartbeat answers.
const (
	Continue Signal = iota
	Stop
)

// Pipeline statuses.
const (
	StatusStarting = "STARTING"
	StatusRunning  = "RUNNING"
	StatusRetrying = "RETRYING"
	StatusStopped  = "STOPPED"
	StatusFailed   = "FAILED"
)

// Record is a pipeline's live record on this node.
type Record struct {
	Pipeline string
	Status   string
	Error    string // the last error, while RETRYING or FAILED
	// Counters count committed work only (what a read_committed reader
	// can see), on this node since it started the pipeline.
	Consumed int64 // input records read by the stages that read the pipeline's inputs
	Emitted  int64 // rows written by the last stage
	Filtered int64 // rows removed by filters
	Dropped  int64 // poison rows reported to the errors stream
	Late     int64 // rows behind the watermark
	Epochs   int64 // committed checkpoints
	// LastCheckpoint is when the last epoch committed.
	LastCheckpoint time.Time
	// Partitions is how many input partitions this node's consumers own.
	Partitions int
	// CheckpointBytes is the size of the state changes of the last epoch.
	CheckpointBytes int64
	// Restoring counts partitions rebuilding their state from the state
	// topic now; RestoredKeys the state records read so far; LocalRestores
	// the partitions that found their local state current.
	Restoring     int
	RestoredKeys  int64
	LocalRestores int64
	// StateBytes is the size of the pipeline's operator state in this
	// node's Pebble store (estimated for large states, measured at most
	// every 2 s).
	StateBytes int64
	// Watermark is the lowest event-time watermark of the last stage's
	// partitions on this node (zero: the pipeline has none, being
	// stateless or without rows yet).
	Watermark time.Time
	Started   time.Time
}
