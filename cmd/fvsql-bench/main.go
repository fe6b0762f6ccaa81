// Command fvsql-bench runs the load generators and measurements of
// package bench against an fvsql server it starts (in this process, or as
// a child `fvsql-bench serve`) or reaches at a URL. It only reads flags
// and wires them into package bench; see bench/README.md. It is a command
// of its own so that the server binary does not link the benchmark
// client (pgx).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	// The backends cmd/fvsql registers, so that a server measured here
	// (in-process or a serve child) knows the same URI schemes.
	_ "github.com/fvsql/fvsql/backends/all" // the URI schemes cmd/fvsql knows
	"github.com/fvsql/fvsql/bench"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/server"
)

const usage = `usage: fvsql-bench <scenario> [flags]

scenarios:
  insert    multi-row INSERTs over one connection (simple and extended protocol) and COPY FROM STDIN (text, binary)
  select    SELECT count(*), sum(qty) … WHERE price > X over streams of two lengths; SELECT * LIMIT 10
  pipeline  catch-up of a filter+project continuous query vs plain franz-go copies (raw, transactional)
  windows   catch-up of TUMBLE and HOP aggregations and of GROUP BY views with 1M vs 10k keys (child server)
  joins     views over joins: a join view (Nexmark q3), an aggregate over an inner and a LEFT join (q4 shape) and over a three-way join
  pull      SELECT * FROM view WHERE key = $1 from 16 connections over a 1M-key view (extended and simple protocol)
  eos       exactly-once vs at-least-once: TUMBLE catch-up at 100ms/1s/10s checkpoints; produce-to-visible latency
  recovery  kill -9 of a server with 1M keys of state; restart with the data dir kept and wiped, time to ready
  backends  produce (sinks) and consume (bounded scan, ingest pipeline) rates for Kafka, Redis (--redis) and files
  udf       a stateless pipeline calling a trivial wasm user function per row vs the built-in expression; a module's cold start

Run "fvsql-bench <scenario> -h" for its flags; bench/README.md has recipes.
`

func main() {
	server.SetMemoryLimit() // a server measured here runs with fvsql's GC settings
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fvsql-bench:", err)
		os.Exit(1)
	}
}

// run runs `fvsql-bench <scenario> [flags]`: flags here, the work in
// package bench.
func run(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, usage)
		if len(args) == 0 {
			return errors.New("no scenario")
		}
		return nil
	}
	scenario, args := args[0], args[1:]
	fs := flag.NewFlagSet("fvsql-bench "+scenario, flag.ContinueOnError)
	def := engine.DefaultConfig()
	// Shared flags.
	kafka := fs.String("kafka", "", "a real Kafka broker (host:port,…); empty: the embedded broker")
	url := fs.String("url", "", "a running fvsql server (postgres://…) instead of starting one; needs --kafka")
	serverPID := fs.Int("server-pid", 0, "with --url: the server's pid, to read its memory and CPU")
	brokerPID := fs.Int("broker-pid", 0, "with --kafka: the broker's pid, to report its CPU separately")
	mode := fs.String("server", bench.DefaultMode(scenario), "where the started server runs: inproc (this process) or child (an fvsql-bench serve child, measured alone)")
	prefix := fs.String("topic-prefix", "", "servers' topic prefix (default: none on the embedded broker, unique on --kafka; with --url: that server's)")
	consumers := fs.Int("stream-consumers", def.Consumers, "STREAM_CONSUMERS of the servers (and goroutines of the raw copies)")
	batch := fs.Int("stream-batch-size", def.BatchSize, "STREAM_BATCH_SIZE")
	interval := fs.Duration("stream-checkpoint-interval", def.CheckpointInterval, "STREAM_CHECKPOINT_INTERVAL (and the raw copies' commit interval)")
	exactlyOnce := fs.Bool("stream-exactly-once", def.ExactlyOnce, "STREAM_EXACTLY_ONCE (pipeline and eos run both)")
	offsetReset := fs.String("stream-offset-reset", def.OffsetReset, "STREAM_OFFSET_RESET")
	idle := fs.Duration("stream-idle-timeout", def.IdleTimeout, "STREAM_IDLE_TIMEOUT")
	logLevel := fs.String("log-level", "warn", "servers' log level")
	timeout := fs.Duration("timeout", 20*time.Minute, "bound of the whole run")
	quiet := fs.Duration("quiet-wait", 0, "before each measured phase, wait up to this long until other processes use < 1/4 core (shared hosts)")
	syncWrites := fs.Bool("sync-writes", false, "the embedded broker fsyncs every batch (fvsql's --sync-writes)")
	profDir := fs.String("cpuprofile", "", "directory for CPU profiles of the server during each measured phase")

	// Scenario flags.
	var (
		rows                       *string
		rowsOne                    *int64
		batchRows                  *int
		partitions                 *int
		protocols                  *string
		key                        *string
		runs                       *int
		limitRuns                  *int
		priceOver                  *float64
		variants                   *string
		catchup                    *time.Duration
		dataDir, fileRoot          *string
		stateCacheMB, groupCacheMB *int
		auctions                   *int64
		bidders                    *int64
		keys                       *int64
		clients                    *int
		duration                   *time.Duration
		intervals                  *string
		latIvs                     *string
		latRate                    *int
		latDur                     *time.Duration
		pad                        *int
		modes                      *string
		ready                      *time.Duration
		backends                   *string
		redis                      *string
		keyed                      *bool
	)
	switch scenario {
	case "insert":
		rowsOne = fs.Int64("rows", 1_000_000, "rows inserted per protocol")
		batchRows = fs.Int("batch", 1000, "rows per INSERT statement")
		partitions = fs.Int("partitions", 4, "partitions of the stream")
		protocols = fs.String("protocols", "simple,extended,copy-text,copy-binary", "protocols: simple, extended, copy-text, copy-binary (COPY FROM STDIN)")
		key = fs.String("key", "sym", "the stream's key column (none: no key)")
	case "select":
		rows = fs.String("rows", "1000000,2000000", "stream lengths, comma-separated")
		runs = fs.Int("runs", 5, "runs of the aggregate per length (median reported)")
		limitRuns = fs.Int("limit-runs", 20, "runs of SELECT * LIMIT 10")
		partitions = fs.Int("partitions", 4, "partitions of the stream")
		priceOver = fs.Float64("price-over", 50, "X in WHERE price > X (prices are uniform over 0.25…100.24)")
	case "pipeline":
		rows = fs.String("rows", "500000,2000000", "stream lengths M, comma-separated")
		runs = fs.Int("runs", 1, "runs per variant (median reported)")
		partitions = fs.Int("partitions", 8, "partitions of the input stream")
		variants = fs.String("variants", "raw,rawtxn,eos,alo", "raw (franz-go copy), rawtxn (transactional copy), eos, alo (fvsql exactly-/at-least-once)")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of one variant's catch-up")
	case "windows":
		rowsOne = fs.Int64("rows", 2_000_000, "rows of the bids stream")
		partitions = fs.Int("partitions", 4, "partitions of the bids stream")
		auctions = fs.Int64("auctions", 10_000, "distinct auctions (the TUMBLE/HOP key and the low-cardinality view's)")
		bidders = fs.Int64("bidders", 1_000_000, "distinct bidders (the high-cardinality view's key)")
		variants = fs.String("variants", "tumble,tumble-keyed,hop,hc,hc-spill,lc", "tumble, tumble-keyed (over a stream keyed by auction: no repartition), tumble-cte (tumble over a WITH query), ijoin (an interval join of bids with the same auction's bids within 2 s), ijoin3 (three such inputs in one join), distinct (SELECT DISTINCT auction, price / 1000), first (each auction's first bid in event time), hop, hc (GROUP BY bidder view), hc-spill (hc on a second server with --state-cache-mb 8 --group-cache-mb 1; runs last), lc (GROUP BY auction view)")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of one variant's catch-up")
	case "joins":
		rowsOne = fs.Int64("rows", 2_000_000, "rows of the bids stream (q4)")
		auctions = fs.Int64("auctions", 1_900_000, "rows of the auctions stream (q3)")
		keys = fs.Int64("persons", 100_000, "rows of the persons stream, also the bids' distinct bidders")
		partitions = fs.Int("partitions", 4, "partitions of every stream")
		variants = fs.String("variants", "q3,q4,q4-left,q4-nested,q4-key,q9,lateral,lateral-agg,lateral-domain,3-way,union,rollup", "q3 (join view), q4 (aggregate over a join), q4-left (over a LEFT JOIN), q4-nested (aggregate over an aggregate over a join), q4-key (aggregate over a join grouped by its key: one stage), q9 (top-1 per auction over a join), lateral (q9's answer by a LATERAL subquery), lateral-agg (count and sum of each person's bids by a LATERAL subquery), lateral-domain (the same over a bound from the person: a LATERAL subquery over its domain), 3-way (aggregate over bids, auctions and persons), union (q4 UNION ALL a global aggregate of the bids), rollup (GROUP BY ROLLUP over the q4 join)")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of one variant's catch-up")
	case "pull":
		rowsOne = fs.Int64("rows", 1_000_000, "rows of the input stream")
		keys = fs.Int64("keys", 1_000_000, "distinct auctions: the view's rows")
		partitions = fs.Int("partitions", 4, "partitions of the input stream")
		clients = fs.Int("clients", 16, "concurrent pgx connections")
		duration = fs.Duration("duration", 10*time.Second, "how long each protocol's clients query")
		protocols = fs.String("protocols", "extended,simple", "protocols: extended (prepared statement), simple")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of building the view")
	case "eos":
		rowsOne = fs.Int64("rows", 2_000_000, "rows of the bids stream (the TUMBLE catch-up)")
		partitions = fs.Int("partitions", 4, "partitions of the bids stream and the latency stream")
		auctions = fs.Int64("auctions", 10_000, "distinct auctions")
		intervals = fs.String("intervals", "100ms,1s,10s", "checkpoint intervals, comma-separated: one eos and one alo server each")
		latIvs = fs.String("latency-intervals", "100ms,1s", "intervals (of --intervals) at which end-to-end latency is measured; none: skip")
		latRate = fs.Int("latency-rate", 5000, "rows/s of the latency producer")
		latDur = fs.Duration("latency-duration", 20*time.Second, "how long the latency producer runs")
		keyed = fs.Bool("keyed", false, "run the TUMBLE catch-up over the bids stream keyed by auction (one stage, no repartition)")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of one catch-up")
	case "recovery":
		keys = fs.Int64("keys", 1_000_000, "rows and distinct keys of the view's state")
		pad = fs.Int("pad", 80, "bytes of each row's pad text (the state's bulk)")
		partitions = fs.Int("partitions", 4, "partitions of the input stream")
		modes = fs.String("modes", "kept,wiped,graceful", "restarts, in order: kept (kill -9, same data dir), wiped (kill -9, emptied data dir), graceful (clean stop, same data dir)")
		catchup = fs.Duration("catchup-timeout", 10*time.Minute, "bound of building the state")
		ready = fs.Duration("ready-timeout", 3*time.Minute, "bound of one restart until ready")
	case "backends":
		rowsOne = fs.Int64("rows", 1_000_000, "rows per measurement")
		partitions = fs.Int("partitions", 4, "partitions of the Kafka source stream")
		backends = fs.String("backends", "kafka,redis,file", "backends: kafka, redis, file")
		redis = fs.String("redis", os.Getenv("FVSQL_TEST_REDIS"), "a Redis server (host:port; default $FVSQL_TEST_REDIS); empty: the redis rows are skipped")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of one measurement")
	case "udf":
		rowsOne = fs.Int64("rows", 1_000_000, "rows of the input stream")
		partitions = fs.Int("partitions", 4, "partitions of the input stream")
		runs = fs.Int("runs", 3, "runs of each variant, alternating (medians reported)")
		catchup = fs.Duration("catchup-timeout", 5*time.Minute, "bound of one run's catch-up")
	case "serve": // the child side of --server child
		dataDir = fs.String("data-dir", "", "data directory (pgwire listens on a free loopback port)")
		fileRoot = fs.String("file-root", "", "directory file:// streams must live in (empty: <data-dir>/files)")
		stateCacheMB = fs.Int("state-cache-mb", 0, "the server's --state-cache-mb (0: its default)")
		groupCacheMB = fs.Int("group-cache-mb", 0, "the server's --group-cache-mb (0: its default)")
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", scenario, fs.Args())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var brokers []string
	if *kafka != "" {
		brokers = strings.Split(*kafka, ",")
	}
	stream := engine.Config{
		Consumers: *consumers, BatchSize: *batch, CheckpointInterval: *interval,
		ExactlyOnce: *exactlyOnce, OffsetReset: *offsetReset, IdleTimeout: *idle,
	}
	if scenario == "serve" {
		var level slog.Level
		if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
			return err
		}
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
		return bench.ServeChild(ctx, bench.ServerConfig{
			Kafka: brokers, TopicPrefix: *prefix, DataDir: *dataDir, FileRoot: *fileRoot, Stream: stream, Logger: log,
			StateCacheMB: *stateCacheMB, GroupCacheMB: *groupCacheMB,
		}, os.Stdin, os.Stdout)
	}
	exe, _ := os.Executable()
	o := bench.Options{
		Out: os.Stdout, Mode: *mode, Exe: exe, Kafka: brokers, URL: *url, ServerPID: *serverPID, BrokerPID: *brokerPID,
		TopicPrefix: *prefix, Stream: stream, LogLevel: *logLevel, Timeout: *timeout, ProfileDir: *profDir, QuietWait: *quiet, SyncWrites: *syncWrites,
		Command: command(scenario, fs),
	}
	switch scenario {
	case "insert":
		return bench.Insert(ctx, o, bench.InsertConfig{Rows: *rowsOne, Batch: *batchRows, Partitions: *partitions, Protocols: splitList(*protocols), Key: *key})
	case "select":
		ns, err := parseCounts(*rows)
		if err != nil {
			return err
		}
		return bench.Select(ctx, o, bench.SelectConfig{Rows: ns, Runs: *runs, LimitRuns: *limitRuns, Partitions: *partitions, PriceOver: *priceOver})
	case "windows":
		return bench.Windows(ctx, o, bench.WindowsConfig{Rows: *rowsOne, Partitions: *partitions, Auctions: *auctions, Bidders: *bidders,
			Variants: splitList(*variants), CatchupTimeout: *catchup})
	case "joins":
		return bench.Joins(ctx, o, bench.JoinsConfig{Rows: *rowsOne, Auctions: *auctions, Persons: *keys, Partitions: *partitions,
			Variants: splitList(*variants), CatchupTimeout: *catchup})
	case "pull":
		return bench.Pull(ctx, o, bench.PullConfig{Rows: *rowsOne, Keys: *keys, Partitions: *partitions, Clients: *clients,
			Duration: *duration, Protocols: splitList(*protocols), CatchupTimeout: *catchup})
	case "eos":
		ivs, err := parseDurations(*intervals)
		if err != nil {
			return err
		}
		livs := []time.Duration{}
		if *latIvs != "none" {
			if livs, err = parseDurations(*latIvs); err != nil {
				return err
			}
		}
		return bench.EOS(ctx, o, bench.EOSConfig{Rows: *rowsOne, Partitions: *partitions, Auctions: *auctions, Intervals: ivs,
			LatencyIntervals: livs, LatencyRate: *latRate, LatencyDuration: *latDur, Keyed: *keyed, CatchupTimeout: *catchup})
	case "recovery":
		return bench.Recovery(ctx, o, bench.RecoveryConfig{Keys: *keys, Pad: *pad, Partitions: *partitions, Modes: splitList(*modes),
			CatchupTimeout: *catchup, ReadyTimeout: *ready})
	case "backends":
		return bench.Backends(ctx, o, bench.BackendsConfig{Rows: *rowsOne, Partitions: *partitions, Backends: splitList(*backends),
			Redis: *redis, CatchupTimeout: *catchup})
	case "udf":
		return bench.UDF(ctx, o, bench.UDFConfig{Rows: *rowsOne, Partitions: *partitions, Runs: *runs, CatchupTimeout: *catchup})
	default: // pipeline
		ns, err := parseCounts(*rows)
		if err != nil {
			return err
		}
		return bench.Pipeline(ctx, o, bench.PipelineConfig{Rows: ns, Partitions: *partitions, Runs: *runs, Variants: splitList(*variants), CatchupTimeout: *catchup})
	}
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// command renders the command line with every flag that differs from
// its default, so a table says how to reproduce it.
func command(scenario string, fs *flag.FlagSet) string {
	parts := []string{"go run ./cmd/fvsql-bench", scenario}
	fs.Visit(func(f *flag.Flag) {
		parts = append(parts, "--"+f.Name+"="+f.Value.String())
	})
	return strings.Join(parts, " ")
}

func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range splitList(s) {
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, errors.New("no durations given")
	}
	return out, nil
}

func parseCounts(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(strings.ReplaceAll(f, "_", ""))
		if f == "" {
			continue
		}
		mult := int64(1)
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "M"):
			mult, f = 1_000_000, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, errors.New("no counts given")
	}
	return out, nil
}
