package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures the embedded broker.
type Config struct {
	// DataDir is the directory of the broker's log (created if missing).
	DataDir string
	// Listen is host:port of its Kafka endpoint; port 0 picks a free one.
	Listen string
	// Logger receives the reaper's notices; nil is slog.Default().
	Logger *slog.Logger
	// GhostAfter is how long a group member whose connection is closed
	// may stay silent before the reaper takes it for dead (ghosts.go).
	// Default 6 s. It must be several heartbeat intervals of the
	// consumers (engine.Config.GroupHeartbeat, 1 s): a live member
	// heartbeats on its coordinator connection, and one waiting in a long
	// JoinGroup or SyncGroup keeps the connection it joined on open, so
	// only a member that is dead, or stuck in a revoke callback that long,
	// is taken; the latter rejoins as a new member, which costs a
	// rebalance, not correctness (its transactions are fenced by
	// generation). Shorter matters: until a ghost is gone, its group's
	// rebalance waits for it and its partitions are read by nobody.
	GhostAfter time.Duration
	// Users, when not empty, makes the listener require SASL (PLAIN,
	// SCRAM-SHA-256 or SCRAM-SHA-512) with one of these user:password
	// pairs: the server's pgwire users, so that the data honours the same
	// authentication as SQL. Internal authenticates fvsql's own clients
	// (the server's, the engine's, the reaper's) and must be set with
	// Users. With no Users, the listener accepts anyone.
	Users    map[string]string
	Internal kafka.SASL
	// SyncWrites makes the broker fsync every batch it writes (kfake's
	// SyncWrites): durable across power loss, at a cost in throughput.
	// Without it the log is written through the page cache and synced on
	// segment roll and shutdown, as Apache Kafka does by default.
	SyncWrites bool
}

// Broker is a running embedded broker.
type Broker struct {
	c      *kfake.Cluster
	cl     *kgo.Client // the reaper's client of the broker
	cancel context.CancelFunc
	done   chan struct{}
	dir    string
	log    *slog.Logger
}

// Start runs franz-go's kfake in-process, persisted under cfg.DataDir,
// with the workarounds this package documents.
func Start(cfg Config) (*Broker, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.GhostAfter <= 0 {
		cfg.GhostAfter = 6 * time.Second
	}
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded: listen address %q: %w", cfg.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("embedded: listen port %q: %w", portStr, err)
	}
	if port == 0 {
		// kfake needs a concrete port to advertise; pick a free one.
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	// kfake would absorb damage silently (check.go): look first.
	if err := checkDataDir(cfg.DataDir, cfg.Logger); err != nil {
		return nil, err
	}
	ghosts := newGhostReaper(cfg.GhostAfter)
	opts := []kfake.Opt{kfake.WithLogger(kfakeLogger{cfg.Logger})}
	if len(cfg.Users) > 0 {
		if !cfg.Internal.Enabled() {
			return nil, errors.New("embedded: users without internal credentials")
		}
		// fvsql's users are the source of truth: kfake would reload the
		// users it persisted last time over the ones given here.
		if err := os.Remove(filepath.Join(cfg.DataDir, "sasl.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(cfg.Internal.Mechanism, cfg.Internal.User, cfg.Internal.Password))
		for user, pass := range cfg.Users {
			for _, m := range []string{kafka.MechanismPlain, kafka.MechanismSCRAMSHA256, kafka.MechanismSCRAMSHA512} {
				opts = append(opts, kfake.Superuser(m, user, pass))
			}
		}
	}
	if cfg.SyncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			l, err := net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return nil, err
			}
			return ghosts.listen(l), nil
		}),
		kfake.DataDir(cfg.DataDir),
		kfake.ClusterID("fvsql-embedded"),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("embedded: broker on %s: %w", cfg.Listen, err)
	}
	auth, err := cfg.Internal.Opts()
	if err != nil {
		c.Close()
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, auth...)...)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{c: c, cl: cl, cancel: cancel, done: make(chan struct{}), dir: cfg.DataDir, log: cfg.Logger}
	ghosts.watch(ctx, c, cl, cfg.Logger, b.done)
	return b, nil
}

// Addrs are the broker's Kafka endpoints.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Close stops the reaper and the broker, then records what the broker
// left on disk (clean.json, check.go), which the next Start verifies.
func (b *Broker) Close() {
	b.cancel()
	<-b.done
	b.cl.Close()
	b.c.Close()
	if err := writeManifest(b.dir); err != nil {
		b.log.Warn("embedded: the next start cannot check the broker's files against this stop", "err", err)
	}
}

// kfakeLogger passes kfake's warnings and errors (a segment it cuts, a
// write that failed) to the server's log.
type kfakeLogger struct{ log *slog.Logger }

func (l kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	switch level {
	case kfake.LogLevelError:
		l.log.Error("embedded broker: " + fmt.Sprintf(format, args...))
	case kfake.LogLevelWarn:
		l.log.Warn("embedded broker: " + fmt.Sprintf(format, args...))
	}
}

// AbortProducer writes abort markers for the producer (id and epoch) on
// every partition of topics: the second workaround. kfake, reloading its
// log after a kill, aborts the transactions that were open without
// writing abort markers, so read_committed readers would skip that
// producer's later batches and never see such a partition's end. A
// transactional writer calls it once, with the id and epoch its
// InitProducerID gave, for the topics it writes, before its first
// transaction. Topics that do not exist are skipped.
func AbortProducer(ctx context.Context, adm *kadm.Client, pid int64, epoch int16, topics []string) error {
	md, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("embedded: abort markers: %w", err)
	}
	parts := kadm.TopicsSet{}
	for _, d := range md {
		if d.Err == nil {
			parts.Add(d.Topic, d.Partitions.Numbers()...)
		}
	}
	if _, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, Topics: parts}); err != nil {
		return fmt.Errorf("embedded: abort markers: %w", err)
	}
	return nil
}
