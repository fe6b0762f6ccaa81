// Command fvsql runs the fvsql server: a PostgreSQL-wire gateway to
// streams on Kafka. It only reads flags and environment and wires the
// packages together; see ARCHITECTURE.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/fvsql/fvsql/backends/all" // every backend's URI scheme
	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/server"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/udf"
)

// envDefault returns the environment variable's value, or def.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func main() {
	server.SetMemoryLimit()
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fvsql:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "pipe" {
		return runPipe(args[1:])
	}
	if len(args) > 0 && args[0] == "bench" { // cmd/fvsql-bench: the server does not link the benchmarks' client
		return errors.New("the benchmarks are their own command now: go run ./cmd/fvsql-bench <scenario>")
	}
	fs := flag.NewFlagSet("fvsql", flag.ContinueOnError)
	listen := fs.String("listen", envDefault("FVSQL_LISTEN", "127.0.0.1:5433"), "PostgreSQL wire protocol address (FVSQL_LISTEN)")
	dataDir := fs.String("data-dir", envDefault("FVSQL_DATA_DIR", "./fvsql-data"), "data directory (FVSQL_DATA_DIR)")
	fileRoot := fs.String("file-root", envDefault("FVSQL_FILE_ROOT", ""), "directory file:// streams must live in; default <data-dir>/files (FVSQL_FILE_ROOT)")
	kafkaBrokers := fs.String("kafka", envDefault("FVSQL_KAFKA_BROKERS", ""), "brokers of a real Kafka cluster, comma-separated; empty runs the embedded broker (FVSQL_KAFKA_BROKERS)")
	kafkaMech := fs.String("kafka-sasl", envDefault("FVSQL_KAFKA_SASL", ""), "SASL mechanism for --kafka: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty: none (FVSQL_KAFKA_SASL)")
	kafkaUser := fs.String("kafka-user", envDefault("FVSQL_KAFKA_USER", ""), "SASL user for --kafka (FVSQL_KAFKA_USER)")
	kafkaPass := fs.String("kafka-password", envDefault("FVSQL_KAFKA_PASSWORD", ""), "SASL password for --kafka (FVSQL_KAFKA_PASSWORD)")
	syncWrites := fs.Bool("sync-writes", envBool("FVSQL_SYNC_WRITES", false), "the embedded broker fsyncs every batch: durable across power loss, slower (FVSQL_SYNC_WRITES)")
	kafkaListen := fs.String("kafka-listen", envDefault("FVSQL_KAFKA_LISTEN", "127.0.0.1:9092"), "the embedded broker's Kafka endpoint (FVSQL_KAFKA_LISTEN)")
	auth := fs.String("auth", envDefault("FVSQL_AUTH", "trust"), "client authentication: trust, password, md5 or scram-sha-256 (FVSQL_AUTH)")
	maxConns := fs.Int("max-connections", envInt("FVSQL_MAX_CONNECTIONS", pgwire.DefaultMaxConnections), "connections served at once; one more is refused with 53300 (FVSQL_MAX_CONNECTIONS)")
	tlsCert := fs.String("tls-cert", envDefault("FVSQL_TLS_CERT", ""), "PEM certificate (chain) for TLS on the pgwire listener, with --tls-key (FVSQL_TLS_CERT)")
	tlsKey := fs.String("tls-key", envDefault("FVSQL_TLS_KEY", ""), "PEM private key of --tls-cert (FVSQL_TLS_KEY)")
	tlsMode := fs.String("tls-mode", envDefault("FVSQL_TLS_MODE", ""), "off, prefer (TLS offered) or require (plaintext refused with 28000); default prefer when a certificate is set, else off (FVSQL_TLS_MODE)")
	tlsSelf := fs.Bool("tls-self-signed", envBool("FVSQL_TLS_SELF_SIGNED", false), "make a self-signed certificate into <data-dir>/tls/ on first start and use it (FVSQL_TLS_SELF_SIGNED)")
	users := fs.String("users", envDefault("FVSQL_USERS", ""), "user:password pairs, comma-separated, for password authentication (FVSQL_USERS)")
	topicPrefix := fs.String("topic-prefix", envDefault("FVSQL_TOPIC_PREFIX", ""), "prefix of every Kafka topic and group fvsql creates (FVSQL_TOPIC_PREFIX)")
	stateCache := fs.Int("state-cache-mb", envInt("FVSQL_STATE_CACHE_MB", state.DefaultCacheBytes>>20), "MiB of Pebble block cache for operator state and views' local copies (FVSQL_STATE_CACHE_MB)")
	groupCache := fs.Int("group-cache-mb", envInt("FVSQL_GROUP_CACHE_MB", operators.DefaultGroupCacheBytes>>20), "MiB of GROUP BY state, and of a view's join rows, kept in memory between checkpoints, per partition of each view or stream that groups or joins (FVSQL_GROUP_CACHE_MB)")
	queryMem := fs.Int("query-memory-mb", envInt("FVSQL_QUERY_MEMORY_MB", 1024), "MiB of rows one bounded query may hold in memory (join build sides, sorts, aggregates); over it the query fails with 53200; 0: unlimited (FVSQL_QUERY_MEMORY_MB)")
	transforms := fs.String("transforms-dir", envDefault("FV_TRANSFORMS_DIR", ""), "directory of the WebAssembly modules CREATE FUNCTION … AS 'ref:NAME' names (NAME.wasm) (FV_TRANSFORMS_DIR)")
	udfTimeout := fs.Duration("udf-call-timeout", envDuration("FVSQL_UDF_CALL_TIMEOUT", udf.DefaultCallTimeout), "longest a call of a wasm user function may run; past it the row is set aside as a poison row (FVSQL_UDF_CALL_TIMEOUT)")
	udfMemory := fs.Int("udf-memory-mb", envInt("FVSQL_UDF_MEMORY_MB", udf.DefaultMemoryPages/16), "MiB of memory one instance of a wasm user function may use (FVSQL_UDF_MEMORY_MB)")
	def := engine.DefaultConfig()
	consumers := fs.Int("stream-consumers", envInt("STREAM_CONSUMERS", def.Consumers), "consumer goroutines per pipeline stage (STREAM_CONSUMERS)")
	batchSize := fs.Int("stream-batch-size", envInt("STREAM_BATCH_SIZE", def.BatchSize), "records per poll (STREAM_BATCH_SIZE)")
	interval := fs.Duration("stream-checkpoint-interval", envDuration("STREAM_CHECKPOINT_INTERVAL", def.CheckpointInterval), "checkpoint (transaction) interval (STREAM_CHECKPOINT_INTERVAL)")
	exactlyOnce := fs.Bool("stream-exactly-once", envBool("STREAM_EXACTLY_ONCE", def.ExactlyOnce), "exactly-once output with Kafka transactions; off: at-least-once (STREAM_EXACTLY_ONCE)")
	offsetReset := fs.String("stream-offset-reset", envDefault("STREAM_OFFSET_RESET", def.OffsetReset), "where a new pipeline starts reading: earliest or latest (STREAM_OFFSET_RESET)")
	idleTimeout := fs.Duration("stream-idle-timeout", envDuration("STREAM_IDLE_TIMEOUT", def.IdleTimeout), "after this long without data a partition stops holding back watermarks (STREAM_IDLE_TIMEOUT)")
	flushGiveUp := fs.Duration("stream-flush-give-up", envDuration("STREAM_FLUSH_GIVE_UP", def.FlushGiveUp), "FLUSH stops waiting for a pipeline that has been retrying this long, and names it in a notice (STREAM_FLUSH_GIVE_UP)")
	logLevel := fs.String("log-level", envDefault("FVSQL_LOG_LEVEL", "info"), "debug, info, warn or error (FVSQL_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *udfMemory < 1 || *udfMemory > 4096 {
		return fmt.Errorf("--udf-memory-mb %d: must be 1 to 4096", *udfMemory)
	}
	if *udfTimeout <= 0 {
		return fmt.Errorf("--udf-call-timeout %v: must be positive", *udfTimeout)
	}
	if *queryMem < 0 {
		return fmt.Errorf("--query-memory-mb %d: must be 0 (unlimited) or more", *queryMem)
	}
	for name, v := range badEnv {
		return fmt.Errorf("environment variable %s=%q is not a valid value", name, v)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	userMap, err := parseUsers(*users)
	if err != nil {
		return err
	}
	listenHost, _, _ := net.SplitHostPort(*listen)
	tlsConf, requireTLS, err := server.TLSConfig(server.TLSOptions{Mode: *tlsMode, CertFile: *tlsCert, KeyFile: *tlsKey,
		SelfSigned: *tlsSelf, DataDir: *dataDir, Hosts: []string{listenHost}, Logger: log})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var brokers []string
	if *kafkaBrokers != "" {
		brokers = strings.Split(*kafkaBrokers, ",")
	}
	// With a password method on, the embedded broker's Kafka listener
	// requires SASL with the same users, so that the data honours the
	// authentication SQL does.
	var kafkaUsers map[string]string
	if *auth != pgwire.AuthTrust && *auth != "" {
		kafkaUsers = userMap
	}
	srv, err := server.Open(ctx, server.Config{
		KafkaUsers: kafkaUsers, SyncWrites: *syncWrites,
		KafkaSASL: kafka.SASL{Mechanism: strings.ToUpper(*kafkaMech), User: *kafkaUser, Password: *kafkaPass},
		DataDir:   *dataDir, FileRoot: *fileRoot, Kafka: brokers, KafkaListen: *kafkaListen, TopicPrefix: *topicPrefix, Logger: log,
		StateCacheBytes: int64(*stateCache) << 20, QueryMemoryBytes: int64(*queryMem) << 20,
		TransformsDir: *transforms, UDF: udf.Limits{CallTimeout: *udfTimeout, MemoryPages: uint32(*udfMemory) * 16},
		Stream: engine.Config{
			Consumers: *consumers, BatchSize: *batchSize, CheckpointInterval: *interval,
			ExactlyOnce: *exactlyOnce, OffsetReset: *offsetReset, IdleTimeout: *idleTimeout, FlushGiveUp: *flushGiveUp,
			GroupCacheBytes: *groupCache << 20,
		},
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	roles := make([]string, 0, len(userMap))
	for name := range userMap {
		roles = append(roles, name)
	}
	sort.Strings(roles)
	srv.Catalog().SetRoles(roles) // pg_roles lists every user who may log in

	wire, err := pgwire.NewServer(pgwire.Config{
		Addr: *listen, Auth: *auth, Users: userMap, ServerVersion: server.ServerVersion, Logger: log,
		MaxConnections: *maxConns, TLSConfig: tlsConf, RequireTLS: requireTLS,
	}, srv)
	if err != nil {
		return err
	}
	srv.SetWire(wire)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Info("fvsql ready", "listen", ln.Addr().String(), "kafka", strings.Join(srv.KafkaBrokers(), ","), "data_dir", *dataDir)
	errc := make(chan error, 1)
	go func() { errc <- wire.Serve(ln) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-errc:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
	}
	return wire.Close()
}

// envInt, envBool and envDuration read typed environment defaults; a
// malformed value is reported when flags are validated, not ignored.
func envInt(name string, def int) int {
	if v, ok := os.LookupEnv(name); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		badEnv[name] = v
	}
	return def
}

func envBool(name string, def bool) bool {
	if v, ok := os.LookupEnv(name); ok {
		switch strings.ToLower(v) {
		case "1", "true", "on", "yes":
			return true
		case "0", "false", "off", "no":
			return false
		}
		badEnv[name] = v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
		badEnv[name] = v
	}
	return def
}

var badEnv = map[string]string{}

func parseUsers(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		u, p, ok := strings.Cut(pair, ":")
		if !ok || u == "" {
			return nil, fmt.Errorf("--users: %q is not user:password", pair)
		}
		out[u] = p
	}
	return out, nil
}
