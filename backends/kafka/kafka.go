package kafka

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	backends.Register("kafka", func(ctx context.Context, u *url.URL, env backends.Env) (backends.Streamer, error) {
		brokers := env.KafkaBrokers
		auth := SASL{Mechanism: env.KafkaSASLMechanism, User: env.KafkaUser, Password: env.KafkaPassword}
		if u.Host != "" {
			// Another cluster: its own credentials, from the URI
			// (kafka://user:password@host:9092?sasl=SCRAM-SHA-512).
			brokers = strings.Split(u.Host, ",")
			auth = SASL{}
			if u.User != nil {
				pass, _ := u.User.Password()
				auth = SASL{Mechanism: MechanismSCRAMSHA256, User: u.User.Username(), Password: pass}
				if m := u.Query().Get("sasl"); m != "" {
					auth.Mechanism = strings.ToUpper(m)
				}
			}
		}
		for k := range u.Query() {
			if k != "sasl" {
				return nil, pgerror.New(pgerror.InvalidParameterValue, "kafka: unknown URI parameter %q (the one known: sasl)", k)
			}
		}
		return Connect(ctx, Config{Brokers: brokers, TopicPrefix: env.TopicPrefix, SASL: auth})
	})
}

// Config configures a connection.
type Config struct {
	Brokers     []string
	TopicPrefix string
	// SASL authenticates every client of the Streamer (zero: none).
	SASL SASL
}

// Streamer is a connection to one Kafka cluster.
type Streamer struct {
	cfg    Config
	auth   []kgo.Opt // cfg.SASL's client options
	client *kgo.Client
	admin  *kadm.Client
}

var _ backends.Streamer = (*Streamer)(nil)

// Connect dials the cluster and checks that it answers.
func Connect(ctx context.Context, cfg Config) (*Streamer, error) {
	if len(cfg.Brokers) == 0 {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "kafka: no brokers given")
	}
	auth, err := cfg.SASL.Opts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(16 << 20),
		kgo.MaxBufferedRecords(1 << 20),
		kgo.RecordRetries(10),
	}, auth...)...)
	if err != nil {
		return nil, pgerror.Wrap(err, pgerror.SQLClientUnableToEstablish, "kafka")
	}
	s := &Streamer{cfg: cfg, auth: auth, client: cl, admin: kadm.NewClient(cl)}
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := cl.Ping(pingCtx); err != nil {
		cl.Close()
		return nil, pgerror.Wrap(err, pgerror.SQLClientUnableToEstablish, "kafka: cannot reach %s", strings.Join(cfg.Brokers, ","))
	}
	return s, nil
}

// Brokers returns the seed brokers.
func (s *Streamer) Brokers() []string { return s.cfg.Brokers }

// Topic maps a stream name to its physical topic.
func (s *Streamer) Topic(stream string) string { return s.cfg.TopicPrefix + stream }

// Close closes the client.
func (s *Streamer) Close() error {
	s.client.Close()
	return nil
}

// CreateStream creates the topic with spec.Shards partitions; an existing
// topic is fine. Options "cleanup.policy" and "retention.ms" pass through.
func (s *Streamer) CreateStream(ctx context.Context, spec backends.StreamSpec) error {
	shards := spec.Shards
	if shards <= 0 {
		shards = 1
	}
	// Room for large records (and for the poison-row reports of large
	// records): the same limit the engine's producers batch up to.
	maxBytes := "16777216"
	configs := map[string]*string{"max.message.bytes": &maxBytes}
	for k, v := range spec.Options {
		if strings.Contains(k, ".") { // Kafka topic configs are dotted names
			v := v
			configs[k] = &v
		}
	}
	if err := CreateTopic(ctx, s.client, s.Topic(spec.Name), int32(shards), configs); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: create topic %s", s.Topic(spec.Name))
	}
	return nil
}

// DropStream deletes the topic.
func (s *Streamer) DropStream(ctx context.Context, name string) error {
	if err := DeleteTopics(ctx, s.client, s.Topic(name)); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: delete topic %s", s.Topic(name))
	}
	return nil
}

// Producer returns a producer on the shared client.
func (s *Streamer) Producer(context.Context) (backends.Producer, error) {
	return &producer{s: s}, nil
}

type producer struct{ s *Streamer }

// Send produces the messages and waits for every acknowledgement. A
// topic dropped and created again by another process has a new id that
// this client's metadata does not know yet (UNKNOWN_TOPIC_ID): Send then
// forgets the topics it holds and tries once more. Records are only
// produced again when none of the first attempt was acknowledged, so a
// retry writes nothing twice.
func (p *producer) Send(ctx context.Context, msgs []backends.Message) error {
	acked, err := p.send(ctx, msgs)
	if err != nil && acked == 0 && errors.Is(err, kerr.UnknownTopicID) {
		topics := map[string]bool{}
		for _, m := range msgs {
			topics[p.s.Topic(m.Stream)] = true
		}
		for t := range topics {
			p.s.client.PurgeTopicsFromClient(t)
		}
		_, err = p.send(ctx, msgs)
	}
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: produce")
	}
	return nil
}

// send produces msgs once; acked counts the records the broker stored.
func (p *producer) send(ctx context.Context, msgs []backends.Message) (acked int, err error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(len(msgs))
	for i := range msgs {
		m := &msgs[i]
		r := &kgo.Record{Topic: p.s.Topic(m.Stream), Key: m.Key, Value: m.Payload}
		if !m.Timestamp.IsZero() {
			r.Timestamp = m.Timestamp
		}
		p.s.client.Produce(ctx, r, func(_ *kgo.Record, perr error) {
			mu.Lock()
			if perr == nil {
				acked++
			} else if err == nil {
				err = perr
			}
			mu.Unlock()
			wg.Done()
		})
	}
	wg.Wait()
	return acked, err
}

func (p *producer) Close() error { return nil }

// PartitionCount returns the number of partitions of a stream's topic.
func (s *Streamer) PartitionCount(ctx context.Context, stream string) (int, error) {
	td, err := s.admin.ListTopics(ctx, s.Topic(stream))
	if err != nil {
		return 0, err
	}
	t, ok := td[s.Topic(stream)]
	if !ok || t.Err != nil {
		return 0, pgerror.New(pgerror.UndefinedTable, "kafka: topic %s does not exist", s.Topic(stream))
	}
	return len(t.Partitions), nil
}

// Scan reads each partition of the stream from its start to the
// read_committed end offset it had when Scan began. Partitions are decoded
// by concurrent workers, one partition's batches in order.
func (s *Streamer) Scan(ctx context.Context, stream string, fn func(int32, []backends.Message) error) error {
	topic := s.Topic(stream)
	starts, err := ListFresh(ctx, s.client, s.admin.ListStartOffsets, topic)
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s", topic)
	}
	ends, err := ListFresh(ctx, s.client, s.admin.ListCommittedOffsets, topic)
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s", topic)
	}
	if err := ends.Error(); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s", topic)
	}
	from := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		st, _ := starts.Lookup(topic, o.Partition)
		if o.Offset > st.Offset {
			from[o.Partition] = kgo.NewOffset().At(st.Offset)
			end[o.Partition] = o.Offset
		}
	})
	if len(from) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		// Small fetches and one queued batch per partition keep a scan's
		// memory bounded by the partitions, not the stream's length
		// (compressed JSON expands several times when decoded).
		kgo.FetchMaxBytes(8 << 20),
		kgo.FetchMaxPartitionBytes(1 << 20),
		kgo.MaxConcurrentFetches(1),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, s.auth...)...)
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: scan client")
	}
	defer cl.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type work struct {
		part int32
		msgs []backends.Message
	}
	queues := map[int32]chan work{}
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for p := range from {
		q := make(chan work, 1)
		queues[p] = q
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range q {
				if ctx.Err() != nil {
					continue // drain
				}
				if err := fn(w.part, w.msgs); err != nil {
					fail(err)
				}
			}
		}()
	}
	closeAll := func() {
		for _, q := range queues {
			close(q)
		}
		wg.Wait()
	}
	remaining := len(from)
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		var fetchErr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && fetchErr == nil {
				fetchErr = err
			}
		})
		if fetchErr != nil {
			fail(pgerror.Wrap(fetchErr, pgerror.IOError, "kafka: read %s", topic))
			break
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			stop, ok := end[fp.Partition]
			if !ok || len(fp.Records) == 0 {
				return
			}
			msgs := make([]backends.Message, 0, len(fp.Records))
			done := false
			for _, r := range fp.Records {
				if r.Offset >= stop {
					done = true
					break
				}
				if r.Offset == stop-1 {
					done = true
				}
				if r.Attrs.IsControl() {
					continue
				}
				msgs = append(msgs, backends.Message{
					Stream: stream, Shard: r.Partition, Sequence: r.Offset,
					Timestamp: r.Timestamp, Key: r.Key, Payload: r.Value,
				})
			}
			if len(msgs) > 0 {
				select {
				case queues[fp.Partition] <- work{fp.Partition, msgs}:
				case <-ctx.Done():
				}
			}
			if done {
				delete(end, fp.Partition)
				cl.PauseFetchPartitions(map[string][]int32{topic: {fp.Partition}})
				remaining--
			}
		})
	}
	closeAll()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil && remaining > 0 {
		return fmt.Errorf("kafka: scan of %s: %w", topic, context.Cause(ctx))
	}
	return nil
}
