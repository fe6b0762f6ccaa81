package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/fvsql/fvsql/engine"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// harness is the set-up every scenario shares: its temp dir, the broker
// (its own, a real one, or the server's), a unique topic prefix on a real
// broker, the server under measurement and one connection to it, and the
// measured phases with their profiles. A scenario is then a sequence of
// openHarness (or newHarness and serve), createStream, catchUp or
// buildView, and measure calls around its own queries and tables.
//
// A harness is used from the scenario's goroutine only. It holds one
// server at a time: serve and launch close the current one first, so two
// servers never compete for the host's CPUs.
type harness struct {
	o      Options
	id     string // unique per run: relation names with --url, Redis keys, groups
	dir    string // temp dir: data directories, the bench-hosted broker, files
	broker *Broker
	prefix string // topic prefix of the servers started (and of the run's topics)
	log    *slog.Logger
	n      int // servers started, for their data directories
	cancel context.CancelFunc

	srv  Server    // the current server (nil between stopServer and launch)
	conn *pgx.Conn // a connection to srv (nil until connect)

	// admCl and adm are an admin client of srv's brokers, made on first
	// use and closed with srv.
	admCl *kgo.Client
	adm   *kadm.Client
	profs []string // CPU profiles written, in order
}

// newHarness prepares a scenario and bounds ctx by Options.Timeout.
// sharedBroker asks for a broker that outlives any one server (always the
// case in child mode): without --kafka the bench then hosts one. The
// returned harness must be closed.
func newHarness(ctx context.Context, o Options, sharedBroker bool) (*harness, context.Context, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Stream.Consumers == 0 {
		o.Stream = engine.DefaultConfig()
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Minute
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %w", err)
	}
	if o.URL != "" && len(o.Kafka) == 0 {
		return nil, nil, errors.New("--url needs --kafka: the brokers of that server, to load data and run the baselines")
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, nil, err
		}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	h := &harness{o: o, id: hex.EncodeToString(b[:]), prefix: o.TopicPrefix,
		log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	dir, err := os.MkdirTemp("", "fvsql-bench-")
	if err != nil {
		return nil, nil, err
	}
	h.dir = dir
	switch {
	case o.URL != "":
	case len(o.Kafka) > 0:
		if h.prefix == "" {
			h.prefix = "bench-" + h.id + "."
		}
	case sharedBroker || o.Mode == "child":
		if h.broker, err = StartBroker(filepath.Join(dir, "broker"), o.SyncWrites); err != nil {
			h.close()
			return nil, nil, err
		}
	}
	ctx, h.cancel = context.WithTimeout(ctx, o.Timeout)
	return h, ctx, nil
}

// openHarness is newHarness, then serve of a server with the run's stream
// settings: the set-up of a scenario that needs one server.
func openHarness(ctx context.Context, o Options, sharedBroker bool) (*harness, context.Context, error) {
	h, ctx, err := newHarness(ctx, o, sharedBroker)
	if err != nil {
		return nil, nil, err
	}
	if err := h.serve(ctx, serverSpec{stream: h.o.Stream}); err != nil {
		h.close()
		return nil, nil, err
	}
	return h, ctx, nil
}

// close stops the server and deletes what the run created.
func (h *harness) close() {
	_ = h.stopServer(false)
	if len(h.o.Kafka) > 0 && h.prefix != "" && h.o.TopicPrefix == "" {
		h.cleanupKafka()
	}
	if h.broker != nil {
		h.broker.Close()
		h.broker = nil
	}
	if h.dir != "" {
		os.RemoveAll(h.dir)
		h.dir = ""
	}
	if h.cancel != nil {
		h.cancel()
	}
}

// ---------------------------------------------------------------- servers

// serverSpec is what a started server has of its own; the rest (mode,
// brokers, prefix, log level) comes from Options.
type serverSpec struct {
	stream engine.Config
	// stateMB and groupMB are its --state-cache-mb and --group-cache-mb
	// (0: its defaults).
	stateMB, groupMB int
	// dataDir is its data directory; empty: a new one under the temp dir.
	// A restart on the same directory keeps the server's state.
	dataDir string
}

// serve starts a server as spec says (or takes the one at --url) in place
// of the current one, and connects to it.
func (h *harness) serve(ctx context.Context, spec serverSpec) error {
	if err := h.launch(ctx, spec); err != nil {
		return err
	}
	return h.connect(ctx)
}

// launch stops the current server and starts the next (or takes the one at
// --url), without connecting: a restart's time to ready is measured from
// here.
func (h *harness) launch(ctx context.Context, spec serverSpec) error {
	_ = h.stopServer(false)
	if h.o.URL != "" {
		h.srv = RemoteServer(h.o.URL, h.o.Kafka, h.o.ServerPID)
		return nil
	}
	if spec.dataDir == "" {
		h.n++
		spec.dataDir = filepath.Join(h.dir, fmt.Sprintf("server-%d", h.n))
	}
	srv, err := StartServer(ctx, ServerConfig{
		Mode: h.o.Mode, Exe: h.o.Exe, Kafka: h.brokers(), TopicPrefix: h.prefix,
		DataDir: spec.dataDir, FileRoot: filepath.Join(h.dir, "files"), SyncWrites: h.o.SyncWrites, Stream: spec.stream, Logger: h.log, LogLevel: h.o.LogLevel,
		StateCacheMB: spec.stateMB, GroupCacheMB: spec.groupMB,
	})
	if err != nil {
		return err
	}
	h.srv = srv
	return nil
}

// connect opens the harness's connection to the current server.
func (h *harness) connect(ctx context.Context) error {
	conn, err := connect(ctx, h.srv.URL())
	if err != nil {
		return err
	}
	h.conn = conn
	return nil
}

// stopServer closes the connection and the server: cleanly, or with
// SIGKILL (a child server only), as a crash would.
func (h *harness) stopServer(kill bool) error {
	if h.conn != nil {
		h.conn.Close(context.Background())
		h.conn = nil
	}
	if h.admCl != nil {
		h.admCl.Close()
		h.admCl, h.adm = nil, nil
	}
	if h.srv == nil {
		return nil
	}
	srv := h.srv
	h.srv = nil
	if kill {
		killer, ok := srv.(interface{ Kill() })
		if !ok {
			srv.Close()
			return errors.New("bench: the server cannot be killed")
		}
		killer.Kill()
		return nil
	}
	return srv.Close()
}

// brokers are the brokers servers are given (nil: their own embedded one).
func (h *harness) brokers() []string {
	if len(h.o.Kafka) > 0 {
		return h.o.Kafka
	}
	if h.broker != nil {
		return h.broker.Addrs()
	}
	return nil
}

// admin is a kadm client of the current server's brokers.
func (h *harness) admin() (*kadm.Client, error) {
	if h.adm == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(h.srv.Brokers()...))
		if err != nil {
			return nil, err
		}
		h.admCl, h.adm = cl, kadm.NewClient(cl)
	}
	return h.adm, nil
}

// ---------------------------------------------------------------- statements and data

// name returns a relation name, made unique when the server is shared.
func (h *harness) name(base string) string {
	if h.o.URL != "" {
		return base + "_" + h.id
	}
	return base
}

// exec runs a statement on the harness's connection (simple protocol,
// bounded by a minute).
func (h *harness) exec(ctx context.Context, sql string) error {
	return execSQL(ctx, h.conn, time.Minute, sql)
}

// execf is exec of a formatted statement.
func (h *harness) execf(ctx context.Context, format string, args ...any) error {
	return h.exec(ctx, fmt.Sprintf(format, args...))
}

// streamSpec is a stream the harness creates and loads straight into Kafka.
type streamSpec struct {
	name       string // the relation (already made unique by name)
	columns    string // "(col TYPE, …)"
	partitions int
	// key is the stream's key column ("": none). Rows then carry keyOf(i)
	// and go where fvsql's own producers put that key.
	key   string
	keyOf func(i int64) []byte
	rows  int64                          // rows 0 … rows-1
	row   func(b []byte, i int64) []byte // appends row i's JSON
}

// createStream runs CREATE STREAM, loads the rows with franz-go, checks
// that the topic holds them and says so on the output.
func (h *harness) createStream(ctx context.Context, s streamSpec) (LoadResult, error) {
	if (s.key == "") != (s.keyOf == nil) {
		return LoadResult{}, fmt.Errorf("bench: stream %s: a key column goes with a record key", s.name)
	}
	with := fmt.Sprintf("partitions = %d", s.partitions)
	if s.key != "" {
		with += ", key = '" + s.key + "'"
	}
	if err := h.execf(ctx, "CREATE STREAM %s %s WITH (%s)", s.name, s.columns, with); err != nil {
		return LoadResult{}, err
	}
	topic := h.prefix + s.name
	lctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	ld, err := LoadRows(lctx, h.srv.Brokers(), topic, s.partitions, 0, s.rows, s.row, s.keyOf)
	cancel()
	if err != nil {
		return ld, err
	}
	if adm, err := h.admin(); err == nil {
		if ends, err := endOffsets(ctx, adm, topic); err == nil {
			var sum int64
			for _, o := range ends {
				sum += o
			}
			if sum != s.rows {
				return ld, fmt.Errorf("%s holds %d records after the load, want %d", topic, sum, s.rows)
			}
		}
	}
	keyed := ""
	if s.key != "" {
		keyed = " (keyed by " + s.key + ")"
	}
	fmt.Fprintf(h.o.Out, "loaded %s rows into %s%s in %s (%s rows/s, %s MiB of JSON, %d bytes per row)\n",
		Count(float64(s.rows)), topic, keyed, Secs(ld.Duration), Count(Rate(s.rows, ld.Duration)),
		Count(float64(ld.Bytes)/(1<<20)), ld.Bytes/max(s.rows, 1))
	return ld, nil
}

// catchUp runs a statement that starts a pipeline (CREATE STREAM … AS,
// CREATE MATERIALIZED VIEW, CREATE SINK) and waits, polling every 50 ms
// for up to timeout, until the pipeline called name has consumed rows
// input rows and, when drained, has no lag left over any stage. It returns
// the pipeline's last record, also with the error of a timeout.
func (h *harness) catchUp(ctx context.Context, create, name string, rows int64, drained bool, timeout time.Duration) (pipeStat, error) {
	if err := h.exec(ctx, create); err != nil {
		return pipeStat{}, err
	}
	return waitPipeline(ctx, h.conn, name, rows, drained, timeout)
}

// buildView runs CREATE MATERIALIZED VIEW over rows loaded rows, waits
// until its pipeline has consumed them with no lag left (see catchUp),
// FLUSHes, so that the view's local copy is complete, and checks that the
// view holds keys rows. built is the time from CREATE until caught up,
// copied until FLUSH returned.
func (h *harness) buildView(ctx context.Context, create, view string, rows, keys int64, timeout time.Duration) (built, copied time.Duration, err error) {
	t0 := time.Now()
	if _, err := h.catchUp(ctx, create, view, rows, true, timeout); err != nil {
		return 0, 0, err
	}
	built = time.Since(t0)
	if err := flush(ctx, h.conn, 5*time.Minute); err != nil {
		return 0, 0, err
	}
	copied = time.Since(t0)
	n, err := countRows(ctx, h.conn, view)
	if err != nil {
		return 0, 0, err
	}
	if n != keys {
		return 0, 0, fmt.Errorf("view %s holds %d rows after the build, want %d", view, n, keys)
	}
	return built, copied, nil
}

// ---------------------------------------------------------------- measured phases

// measure runs body as a measured phase of the current server named
// name (its profile's name; "" for none): see measureOn.
func (h *harness) measure(ctx context.Context, name string, body func() error) (*phase, error) {
	return h.measureOn(ctx, h.srv, name, body)
}

// measureOn runs body as a measured phase of srv: it waits for a quiet
// host (--quiet-wait), resets srv's peaks, starts its profiles (with
// --cpuprofile), and times body alone. The phase is ended (its figures
// read) whether or not body fails; the error is body's first. A phase
// that could not start is nil.
func (h *harness) measureOn(ctx context.Context, srv Server, name string, body func() error) (*phase, error) {
	ph, err := h.startPhase(ctx, srv)
	if err != nil {
		return nil, err
	}
	stop := func() {}
	if name != "" {
		stop = h.profile(srv, name)
	}
	ph.start = time.Now()
	err = body()
	stop()
	if eerr := ph.end(); err == nil && eerr != nil {
		return nil, eerr
	}
	return ph, err
}

// profile starts a CPU profile (and a heap profile at the peak) of srv for
// a phase, with --cpuprofile; the returned function stops it. The files
// are listed by printProfiles.
func (h *harness) profile(srv Server, phase string) (stop func()) {
	if h.o.ProfileDir == "" {
		return func() {}
	}
	path := filepath.Join(h.o.ProfileDir, phase+".pprof")
	if err := srv.StartProfile(path, filepath.Join(h.o.ProfileDir, phase+".heap.pprof")); err != nil {
		fmt.Fprintf(os.Stderr, "bench: CPU profile of %s: %v\n", phase, err)
		return func() {}
	}
	h.profs = append(h.profs, path)
	return func() {
		if err := srv.StopProfile(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: CPU profile of %s: %v\n", phase, err)
		}
	}
}

// printProfiles lists the CPU profiles written, after the tables.
func (h *harness) printProfiles() {
	for _, p := range h.profs {
		fmt.Fprintf(h.o.Out, "CPU profile: %s  (go tool pprof -top %s)\n", p, p)
	}
}

// ---------------------------------------------------------------- output

// header prints what runs where (the current server) and how to run it
// again.
func (h *harness) header(title string, lines ...string) {
	w := h.o.Out
	fmt.Fprintf(w, "=== fvsql-bench %s ===\n", title)
	fmt.Fprintf(w, "command:  %s\n", h.o.Command)
	fmt.Fprintf(w, "build:    %s\n", buildRevision())
	fmt.Fprintf(w, "host:     %s, %d CPUs, GOMAXPROCS %d, %s, %s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "load:     %s (/proc/loadavg before the run: other work on the host shows in the \"other cpu\" columns)\n", loadAvg())
	fmt.Fprintf(w, "broker:   %s\n", h.brokerDesc())
	if h.srv != nil {
		fmt.Fprintf(w, "server:   %s\n", h.srv.Describe())
	}
	st := h.o.Stream
	fmt.Fprintf(w, "stream:   consumers %d, batch %d, checkpoint %s, exactly-once %v\n", st.Consumers, st.BatchSize, st.CheckpointInterval, st.ExactlyOnce)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
}

// brokerDesc says which broker the run uses.
func (h *harness) brokerDesc() string {
	switch {
	case len(h.o.Kafka) > 0:
		pid := ""
		if h.o.BrokerPID > 0 {
			pid = fmt.Sprintf(", pid %d", h.o.BrokerPID)
		}
		return "real Kafka at " + strings.Join(h.o.Kafka, ",") + " (topic prefix " + h.prefix + pid + ")"
	case h.broker != nil:
		return "embedded kfake broker hosted by the bench process (fvsql's embedded-broker options) at " + strings.Join(h.broker.Addrs(), ",")
	}
	return "embedded kfake broker (fvsql's own, in the server process)"
}

// cleanupKafka deletes the run's topics and groups (its unique prefix) on
// a real broker.
func (h *harness) cleanupKafka() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.o.Kafka...))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if td, err := adm.ListTopics(ctx); err == nil {
		if del := withPrefix(td.Names(), h.prefix); len(del) > 0 {
			_, _ = adm.DeleteTopics(ctx, del...)
		}
	}
	if gs, err := adm.ListGroups(ctx); err == nil {
		if del := withPrefix(gs.Groups(), h.prefix); len(del) > 0 {
			_, _ = adm.DeleteGroups(ctx, del...)
		}
	}
}

// withPrefix returns the names that start with prefix.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// orDefault sets *v to d when it is not positive (a flag left at 0).
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// orDefaults sets *v to d when it is empty.
func orDefaults[T any](v *[]T, d ...T) {
	if len(*v) == 0 {
		*v = d
	}
}
