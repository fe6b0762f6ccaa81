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
	Sequence  int64     // offset / entry sequence within the shard
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
