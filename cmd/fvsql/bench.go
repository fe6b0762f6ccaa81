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

	"github.com/fvsql/fvsql/bench"
	"github.com/fvsql/fvsql/engine"
)

const benchUsage = `usage: fvsql bench <scenario> [flags]

scenarios:
  insert    multi-row INSERTs over one connection (simple and extended protocol)
  select    SELECT count(*), sum(qty) … WHERE price > X over streams of two lengths; SELECT * LIMIT 10
  pipeline  catch-up of a filter+project continuous query vs plain franz-go copies (raw, transactional)

Run "fvsql bench <scenario> -h" for its flags; bench/README.md has recipes.
`

// runBench runs `fvsql bench <scenario> [flags]`: flags here, the work in
// package bench.
func runBench(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, benchUsage)
		if len(args) == 0 {
			return errors.New("bench: no scenario")
		}
		return nil
	}
	scenario, args := args[0], args[1:]
	fs := flag.NewFlagSet("fvsql bench "+scenario, flag.ContinueOnError)
	def := engine.DefaultConfig()
	// Shared flags.
	kafka := fs.String("kafka", "", "a real Kafka broker (host:port,…); empty: the embedded broker")
	url := fs.String("url", "", "a running fvsql server (postgres://…) instead of starting one; needs --kafka")
	serverPID := fs.Int("server-pid", 0, "with --url: the server's pid, to read its memory and CPU")
	brokerPID := fs.Int("broker-pid", 0, "with --kafka: the broker's pid, to report its CPU separately")
	mode := fs.String("server", "inproc", "where the started server runs: inproc (this process) or child (a `fvsql bench serve` child, measured alone)")
	prefix := fs.String("topic-prefix", "", "servers' topic prefix (default: none on the embedded broker, unique on --kafka; with --url: that server's)")
	consumers := fs.Int("stream-consumers", def.Consumers, "STREAM_CONSUMERS of the servers (and goroutines of the raw copies)")
	batch := fs.Int("stream-batch-size", def.BatchSize, "STREAM_BATCH_SIZE")
	interval := fs.Duration("stream-checkpoint-interval", def.CheckpointInterval, "STREAM_CHECKPOINT_INTERVAL (and the raw copies' commit interval)")
	exactlyOnce := fs.Bool("stream-exactly-once", def.ExactlyOnce, "STREAM_EXACTLY_ONCE (insert, select, serve; pipeline runs both)")
	offsetReset := fs.String("stream-offset-reset", def.OffsetReset, "STREAM_OFFSET_RESET")
	idle := fs.Duration("stream-idle-timeout", def.IdleTimeout, "STREAM_IDLE_TIMEOUT")
	logLevel := fs.String("log-level", "warn", "servers' log level")
	timeout := fs.Duration("timeout", 20*time.Minute, "bound of the whole run")
	quiet := fs.Duration("quiet-wait", 0, "before each measured phase, wait up to this long until other processes use < 1/4 core (shared hosts)")
	profDir := fs.String("cpuprofile", "", "directory for CPU profiles of the server during each measured phase")

	// Scenario flags.
	var (
		rows       *string
		rowsOne    *int64
		batchRows  *int
		partitions *int
		protocols  *string
		key        *string
		runs       *int
		limitRuns  *int
		priceOver  *float64
		variants   *string
		catchup    *time.Duration
		dataDir    *string
	)
	switch scenario {
	case "insert":
		rowsOne = fs.Int64("rows", 1_000_000, "rows inserted per protocol")
		batchRows = fs.Int("batch", 1000, "rows per INSERT statement")
		partitions = fs.Int("partitions", 4, "partitions of the stream")
		protocols = fs.String("protocols", "simple,extended", "protocols: simple, extended")
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
	case "serve": // the child side of --server child
		dataDir = fs.String("data-dir", "", "data directory (pgwire listens on a free loopback port)")
	default:
		fmt.Fprint(os.Stderr, benchUsage)
		return fmt.Errorf("bench: unknown scenario %q", scenario)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench %s: unexpected arguments %q", scenario, fs.Args())
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
			Kafka: brokers, TopicPrefix: *prefix, DataDir: *dataDir, Stream: stream, Logger: log,
		}, os.Stdin, os.Stdout)
	}
	exe, _ := os.Executable()
	o := bench.Options{
		Out: os.Stdout, Mode: *mode, Exe: exe, Kafka: brokers, URL: *url, ServerPID: *serverPID, BrokerPID: *brokerPID,
		TopicPrefix: *prefix, Stream: stream, LogLevel: *logLevel, Timeout: *timeout, ProfileDir: *profDir, QuietWait: *quiet,
		Command: benchCommand(scenario, fs),
	}
	switch scenario {
	case "insert":
		var ps []string
		for _, p := range strings.Split(*protocols, ",") {
			if p = strings.TrimSpace(p); p != "" {
				ps = append(ps, p)
			}
		}
		return bench.Insert(ctx, o, bench.InsertConfig{Rows: *rowsOne, Batch: *batchRows, Partitions: *partitions, Protocols: ps, Key: *key})
	case "select":
		ns, err := parseCounts(*rows)
		if err != nil {
			return err
		}
		return bench.Select(ctx, o, bench.SelectConfig{Rows: ns, Runs: *runs, LimitRuns: *limitRuns, Partitions: *partitions, PriceOver: *priceOver})
	default: // pipeline
		ns, err := parseCounts(*rows)
		if err != nil {
			return err
		}
		var vs []string
		for _, v := range strings.Split(*variants, ",") {
			if v = strings.TrimSpace(v); v != "" {
				vs = append(vs, v)
			}
		}
		return bench.Pipeline(ctx, o, bench.PipelineConfig{Rows: ns, Partitions: *partitions, Runs: *runs, Variants: vs, CatchupTimeout: *catchup})
	}
}

// benchCommand renders the command line with every flag that differs from
// its default, so a table says how to reproduce it.
func benchCommand(scenario string, fs *flag.FlagSet) string {
	parts := []string{"go run ./cmd/fvsql bench", scenario}
	fs.Visit(func(f *flag.Flag) {
		parts = append(parts, "--"+f.Name+"="+f.Value.String())
	})
	return strings.Join(parts, " ")
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
			return nil, fmt.Errorf("bench: %q is not a positive count", f)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, errors.New("bench: no counts given")
	}
	return out, nil
}
