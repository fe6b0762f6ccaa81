package backends

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/pgerror"
)

// Message is one record of a stream, whatever the backend.
type Message struct {
	Stream    string    // stream key: Kafka topic, Redis key, file path
	Shard     int32     // partition / shard
	Sequence  int64     // offset / entry sequence within the shard, increasing
	ID        string    // the backend's own position when it is not a number (a Redis stream ID)
	Timestamp time.Time // the backend's record time
	Key       []byte    // partitioning key, may be nil
	Payload   []byte
}

// StreamSpec describes a stream to create.
type StreamSpec struct {
	Name    string            // stream key on the backend (topic, Redis key, path)
	Shards  int               // partitions; backends without shards ignore it
	Options map[string]string // backend-specific WITH options
}

// Streamer is a connection to one backend.
type Streamer interface {
	// CreateStream creates the stream if it does not exist (an existing
	// stream is not an error: several fvsql processes share a backend).
	CreateStream(ctx context.Context, spec StreamSpec) error
	// DropStream deletes the stream and its data; a missing stream is not an error.
	DropStream(ctx context.Context, name string) error
	// Producer returns a producer of messages into streams of this backend.
	Producer(ctx context.Context) (Producer, error)
	// Consumer opens a consumer of one stream.
	Consumer(ctx context.Context, stream string, opts ConsumerOptions) (Consumer, error)
	// Scan reads every message the stream holds when Scan begins and
	// returns. fn is called with batches of messages of one shard, in order
	// within the shard; calls for different shards may run concurrently.
	// The messages are valid only during the call.
	Scan(ctx context.Context, stream string, fn func(shard int32, batch []Message) error) error
	// Close releases the connection.
	Close() error
}

// Producer writes messages. Send returns once every message is durably
// stored (or fails as a whole where the backend can, see Transactional).
type Producer interface {
	Send(ctx context.Context, msgs []Message) error
	Close() error
}

// StartAt says where a consumer without a stored position begins.
type StartAt int

// Start positions.
const (
	Earliest StartAt = iota // everything the stream holds
	Latest                  // only what arrives from now on
)

// ConsumerOptions configure a consumer.
type ConsumerOptions struct {
	// Group names a consumer group (backends with groups share a stream's
	// messages among the members of a group and remember what each group
	// acknowledged); "" reads the whole stream from Start.
	Group string
	// Member names this consumer within its group (unique per process
	// and goroutine).
	Member string
	// Start applies when the group has no position yet.
	Start StartAt
	// StartTime, when not zero, replaces Start: a consumer without a
	// group, or of a group with no position yet, begins at the first
	// message whose Timestamp is at or after it (seek by time). A
	// backend that cannot seek by time fails Consumer with SQLSTATE
	// 0A000 (ErrCannotSeek).
	StartTime time.Time
	// Follow keeps reading as the stream grows (tail); false stops with
	// ErrEndOfStream at the end present when the consumer opened.
	Follow bool
}

// Consumer reads messages of one stream. One goroutine uses it.
type Consumer interface {
	// Read returns up to max messages, waiting until at least one is
	// available, ctx ends, or (not following) the end is reached
	// (ErrEndOfStream). Returned messages are the caller's.
	Read(ctx context.Context, max int) ([]Message, error)
	// Ack confirms messages were processed, so the group will not deliver
	// them again (Redis XACK; a stored position elsewhere). Messages not
	// acknowledged before a crash are delivered again: at-least-once.
	Ack(ctx context.Context, msgs []Message) error
	Close() error
}

// Seeker is an optional ability of a Consumer: move to a position.
type Seeker interface {
	// Seek moves to the first message with Sequence >= seq.
	Seek(ctx context.Context, seq int64) error
	// SeekTime moves to the first message with Timestamp >= t.
	SeekTime(ctx context.Context, t time.Time) error
}

// Lagger is an optional ability of a group Consumer: how many messages
// present in the stream now the group has not acknowledged yet (FLUSH
// waits for it to reach zero).
type Lagger interface {
	Lag(ctx context.Context) (int64, error)
}

// PositionedProducer is an optional ability of a Producer: it stores,
// atomically with the messages, the position in some source they came
// from, so a writer replaying a source after a crash can skip what was
// already written (idempotent sinks). Source names are the writer's own
// ("topic/partition").
type PositionedProducer interface {
	Producer
	// SendAt writes msgs and records, in the same atomic step, that
	// everything of each source before the given position is written.
	SendAt(ctx context.Context, msgs []Message, positions map[string]int64) error
	// Positions returns what SendAt recorded for the stream's writers.
	Positions(ctx context.Context, stream string) (map[string]int64, error)
}

// Sentinel errors that drive control flow.
var (
	// ErrEndOfStream: a consumer not following reached the end.
	ErrEndOfStream = errors.New("backends: end of stream")
	// ErrNotConnected: the backend is unreachable now; callers retry.
	ErrNotConnected = errors.New("backends: not connected")
	// ErrCannotSeek: the backend cannot start a consumer at a time
	// (ConsumerOptions.StartTime); errors wrapping it carry 0A000.
	ErrCannotSeek = errors.New("backends: this backend cannot seek by time")
)

// Factory opens a Streamer for a parsed URI.
type Factory func(ctx context.Context, u *url.URL, env Env) (Streamer, error)

// Env carries server-wide settings every backend may use.
type Env struct {
	// KafkaBrokers are the server's default Kafka brokers (embedded or --kafka).
	KafkaBrokers []string
	// TopicPrefix is prepended to every Kafka topic and group fvsql creates,
	// so several servers or test runs can share one cluster.
	TopicPrefix string
	// DataDir is the server's data directory.
	DataDir string
	// FileRoot is the directory file:// streams must live in; "" means
	// <DataDir>/files.
	FileRoot string
	// KafkaSASLMechanism, KafkaUser and KafkaPassword authenticate the
	// clients of the server's own Kafka (KafkaBrokers); an empty
	// mechanism authenticates nothing.
	KafkaSASLMechanism, KafkaUser, KafkaPassword string
}

var registry = struct {
	sync.RWMutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register makes a backend available under a URI scheme.
func Register(scheme string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	registry.m[scheme] = f
}

// Schemes lists the registered schemes.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.m))
	for s := range registry.m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownScheme is returned by Open for a scheme nobody registered.
var ErrUnknownScheme = errors.New("backends: unknown scheme")

// Open connects to the backend a URI names ("kafka://h:p", "redis://h:p").
func Open(ctx context.Context, uri string, env Env) (Streamer, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "invalid backend URI %q", uri)
	}
	registry.RLock()
	f := registry.m[strings.ToLower(u.Scheme)]
	registry.RUnlock()
	if f == nil {
		return nil, pgerror.Wrap(ErrUnknownScheme, pgerror.InvalidParameterValue,
			"backend %q: scheme %q is not one of %s", uri, u.Scheme, strings.Join(Schemes(), ", "))
	}
	return f(ctx, u, env)
}
