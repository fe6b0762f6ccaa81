package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/backends/kafka/embedded"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/udf"
)

// Version is fvsql's version; ServerVersion is what clients see as the
// PostgreSQL server_version.
const (
	Version       = "0.1.0"
	ServerVersion = "15.0 (fvsql " + Version + ")"
)

// Config configures a server.
type Config struct {
	DataDir     string   // default ./fvsql-data
	Kafka       []string // brokers of a real cluster; empty: embedded broker
	KafkaListen string   // embedded broker's endpoint, default 127.0.0.1:9092
	TopicPrefix string   // prefix of every topic and group fvsql creates (at most planner.MaxTopicPrefix characters)
	// FileRoot is the directory file:// streams must live in (default
	// <DataDir>/files): every path a file:// URI or topic names, once
	// cleaned and its symlinks resolved, is inside it, and relative paths
	// resolve in it.
	FileRoot string
	// KafkaUsers, when not empty, makes the embedded broker's listener
	// require SASL with these user:password pairs (the pgwire users when
	// a password method is on), so that no client reads or writes a
	// stream's topic past authentication. fvsql's own clients use an
	// internal superuser with a password made at every start.
	KafkaUsers map[string]string
	// KafkaSASL authenticates fvsql's clients to a real cluster (--kafka).
	KafkaSASL kafka.SASL
	// SyncWrites makes the embedded broker fsync every batch (power-loss
	// durability; see embedded.Config.SyncWrites).
	SyncWrites bool
	// StateCacheBytes is Pebble's block cache (0: state.DefaultCacheBytes).
	StateCacheBytes int64
	// QueryMemoryBytes bounds the rows one bounded query holds in memory
	// (join build sides, sorts, aggregates; engine.Limits); 0 is
	// unlimited. A query over it fails with SQLSTATE 53200.
	QueryMemoryBytes int64
	// TransformsDir is where CREATE FUNCTION … AS 'ref:NAME' finds
	// NAME.wasm (FV_TRANSFORMS_DIR); empty: refs are refused.
	TransformsDir string
	// UDF bounds user functions' modules (memory, time per call, size).
	UDF udf.Limits
	// Stream holds the STREAM_* settings of continuous queries (brokers,
	// prefix and node ID are filled in by Open).
	Stream engine.Config
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		c.DataDir = "./fvsql-data"
	}
	if c.FileRoot == "" {
		c.FileRoot = filepath.Join(c.DataDir, "files")
	}
	if err := planner.CheckTopicPrefix(c.TopicPrefix); err != nil {
		return fmt.Errorf("server: --topic-prefix: %w", err)
	}
	if c.KafkaListen == "" {
		c.KafkaListen = "127.0.0.1:9092"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Stream.Consumers == 0 {
		c.Stream = engine.DefaultConfig()
	}
	if len(c.Kafka) == 0 {
		if _, _, err := net.SplitHostPort(c.KafkaListen); err != nil {
			return fmt.Errorf("server: --kafka-listen %q: %w", c.KafkaListen, err)
		}
	}
	return nil
}

// Server is a running fvsql instance.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *state.Store
	cat   *catalog.Catalog
	// ctx is the server's root context: every goroutine the server starts
	// and every request it serves derives from it; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// followUps are the goroutines applying catalog changes (followUp).
	followUps sync.WaitGroup
	followMu  sync.Mutex
	followQ   map[string][]func() // per name, the follow-ups not run yet (followUp)
	broker    *embedded.Broker    // nil when using a real cluster
	kafka     *kafka.Streamer
	engine    *engine.Engine
	host      *host
	catLog    *catalogLog
	views     *views
	funcs     *functions
	env       backends.Env
	ddl       sync.Mutex // serialises catalog changes
	backMu    sync.Mutex
	streams   map[string]backends.Streamer // by backend URI
	wire      wireHolder                   // the wire server (SetWire), for pg_stat_activity
}

// Open starts a server: it opens the data directory, starts or connects
// to Kafka, and loads the catalog.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, streams: map[string]backends.Streamer{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	var err error
	if cfg.StateCacheBytes <= 0 {
		cfg.StateCacheBytes = state.DefaultCacheBytes
	}
	if s.store, err = state.OpenCache(filepath.Join(cfg.DataDir, "state"), cfg.StateCacheBytes); err != nil {
		return nil, err
	}
	if s.cat, err = catalog.Open(s.store); err != nil {
		return nil, err
	}
	brokers, auth := cfg.Kafka, cfg.KafkaSASL
	if len(brokers) == 0 {
		bcfg := embedded.Config{DataDir: filepath.Join(cfg.DataDir, "kafka"), Listen: cfg.KafkaListen, Logger: s.log,
			GhostAfter: 6 * cfg.Stream.GroupHeartbeat, SyncWrites: cfg.SyncWrites}
		if len(cfg.KafkaUsers) > 0 {
			if auth, err = internalUser(cfg.KafkaUsers); err != nil {
				return nil, err
			}
			bcfg.Users, bcfg.Internal = cfg.KafkaUsers, auth
		}
		if s.broker, err = embedded.Start(bcfg); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		brokers = s.broker.Addrs()
		s.log.Info("embedded Kafka broker started", "addr", strings.Join(brokers, ","), "dir", bcfg.DataDir,
			"sasl", len(bcfg.Users) > 0, "sync_writes", bcfg.SyncWrites)
	}
	s.env = backends.Env{KafkaBrokers: brokers, TopicPrefix: cfg.TopicPrefix, DataDir: cfg.DataDir, FileRoot: cfg.FileRoot,
		KafkaSASLMechanism: auth.Mechanism, KafkaUser: auth.User, KafkaPassword: auth.Password}
	if s.kafka, err = kafka.Connect(ctx, kafka.Config{Brokers: brokers, TopicPrefix: cfg.TopicPrefix, SASL: auth}); err != nil {
		return nil, err
	}
	ecfg := cfg.Stream
	if ecfg.KafkaOpts, err = auth.Opts(); err != nil {
		return nil, err
	}
	ecfg.Brokers, ecfg.TopicPrefix, ecfg.Logger, ecfg.Store = brokers, cfg.TopicPrefix, cfg.Logger, s.store
	ecfg.EmbeddedBroker = s.broker != nil
	ecfg.ViewLookup = s.viewLookup
	if s.funcs, err = newFunctions(s, cfg.UDF); err != nil {
		return nil, err
	}
	ecfg.Funcs = s.funcs
	if ecfg.NodeID, err = nodeID(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("server: node id: %w", err)
	}
	s.host = &host{s: s, records: map[string]engine.Record{}}
	if s.engine, err = engine.New(ecfg, s.host); err != nil {
		return nil, err
	}
	s.cat.AddSystemTable("pipelines", pipelineColumns, s.pipelineRows)
	s.cat.AddSystemTable("pg_catalog.pg_stat_activity", pgStatActivityColumns, s.pgStatActivityRows)
	if s.catLog, err = s.openCatalogLog(ctx); err != nil {
		return nil, err
	}
	s.followQ = map[string][]func(){}
	s.views = &views{s: s, m: map[string]*viewCopy{}, ending: map[string]*viewCopy{}}
	s.catLog.listing()
	for _, r := range s.cat.List(catalog.MaterializedView) {
		s.views.start(r)
	}
	s.startPipelines(ctx)
	s.catLog.setLive()
	ok = true
	return s, nil
}

// Catalog returns the server's catalog.
func (s *Server) Catalog() *catalog.Catalog { return s.cat }

// KafkaBrokers are the brokers the server uses.
func (s *Server) KafkaBrokers() []string { return s.env.KafkaBrokers }

// Close stops the server.
func (s *Server) Close() error {
	s.backMu.Lock()
	for _, st := range s.streams {
		st.Close()
	}
	s.streams = map[string]backends.Streamer{}
	s.backMu.Unlock()
	if s.catLog != nil {
		s.catLog.close()
	}
	if s.views != nil {
		s.views.closeAll()
	}
	// What still runs on the root context (a session's statement, a
	// catalog follow-up starting a pipeline) stops, and the follow-ups
	// end, before the engine, the Kafka client and the store close under
	// them.
	if s.cancel != nil {
		s.cancel()
	}
	s.followUps.Wait()
	if s.engine != nil {
		s.engine.Close() // graceful: each consumer commits its epoch
	}
	if s.funcs != nil {
		s.funcs.close()
	}
	if s.kafka != nil {
		s.kafka.Close()
	}
	if s.broker != nil {
		s.broker.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
	return nil
}

// backend returns the Streamer holding a relation's data.
func (s *Server) backend(ctx context.Context, rel *catalog.Relation) (backends.Streamer, error) {
	if rel.Backend == "" {
		return s.kafka, nil
	}
	return s.openBackend(ctx, rel.Backend)
}

func (s *Server) openBackend(ctx context.Context, uri string) (backends.Streamer, error) {
	s.backMu.Lock()
	defer s.backMu.Unlock()
	if st, ok := s.streams[uri]; ok {
		return st, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	st, err := backends.Open(cctx, uri, s.env)
	if err != nil {
		return nil, pgerror.WithCode(err, pgerror.SQLClientUnableToEstablish)
	}
	s.streams[uri] = st
	return st, nil
}

// NewSession implements pgwire.Handler.
func (s *Server) NewSession(_ context.Context, p pgwire.SessionParams) (pgwire.Session, error) {
	if !servesDatabase(p.Database, p.User) {
		// a typo in a connection string is told at once, not taken for
		// the one database (PostgreSQL's FATAL 3D000, which tools such
		// as Superset recognise)
		return nil, pgerror.New(pgerror.InvalidCatalogName, "database %q does not exist", p.Database).
			WithHint("fvsql serves one database, %q (\"postgres\" is taken for it too).", catalog.Database)
	}
	return newSession(s, p), nil
}

// servesDatabase says whether a session may log in to database: fvsql's
// one, "postgres" (where tools connect when told no database), or the
// user's name (what libpq and pgwire ask for when a client names none).
func servesDatabase(database, user string) bool {
	return database == catalog.Database || database == "postgres" || database == user
}

var _ pgwire.Handler = (*Server)(nil)

// internalUser makes the credentials of fvsql's own clients of its
// embedded broker: a user no pgwire user can be, with a random password
// made at every start (the broker's users are seeded at every start).
func internalUser(users map[string]string) (kafka.SASL, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return kafka.SASL{}, fmt.Errorf("server: internal Kafka user: %w", err)
	}
	name := "_fvsql-internal"
	for _, taken := users[name]; taken; _, taken = users[name] {
		name += "_"
	}
	return kafka.SASL{Mechanism: kafka.MechanismSCRAMSHA512, User: name, Password: hex.EncodeToString(b[:])}, nil
}

// DefaultMemoryLimit is the Go runtime's soft memory limit of a process
// running a server, unless GOMEMLIMIT is set. A soft limit keeps the GC's
// heap target from ballooning on large scans (the live set of a scan is
// bounded; its garbage is not collected sooner without it).
const DefaultMemoryLimit = 1 << 30

// SetMemoryLimit applies DefaultMemoryLimit unless GOMEMLIMIT is set; both
// the server's command and the benchmarks' call it, so a server measured
// by the benchmarks runs with the GC settings of the fvsql binary.
func SetMemoryLimit() {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
}
