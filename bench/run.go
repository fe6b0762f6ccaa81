package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/fvsql/fvsql/engine"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Options are the settings every scenario shares.
type Options struct {
	Out       io.Writer
	Mode      string   // server placement: "inproc" (default) or "child"
	Exe       string   // the fvsql-bench binary, for child mode (runs `serve`)
	Kafka     []string // a real broker; empty: embedded kfake
	URL       string   // a running server instead of starting one
	ServerPID int      // with URL: the server's pid, for its memory and CPU
	BrokerPID int      // with Kafka: the broker's pid, for its CPU
	// TopicPrefix is the servers' --topic-prefix. Empty: none on a fresh
	// embedded broker, a unique "bench-<id>." on a real one. With URL it
	// must be the running server's prefix.
	TopicPrefix string
	Stream      engine.Config // STREAM_* settings of the servers started
	LogLevel    string        // servers' log level (default warn)
	Timeout     time.Duration // bound of the whole scenario
	ProfileDir  string        // write CPU profiles (<phase>.pprof) and heap profiles at the peak (<phase>.heap.pprof) of measured phases here
	Command     string        // the command line that reproduces the run
	QuietWait   time.Duration // before each measured phase, wait up to this long for the rest of the host to go idle
}

// run is one scenario's environment: temp dir, broker, servers.
type run struct {
	o       Options
	id      string
	dir     string
	broker  *Broker // embedded broker hosted by the bench, when needed
	prefix  string
	log     *slog.Logger
	created []string // topics to delete on a real broker
	n       int
}

// newRun prepares a scenario. sharedBroker asks for a broker that outlives
// any one server (always the case in child mode).
func newRun(o Options, sharedBroker bool) (*run, error) {
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
	var b [4]byte
	_, _ = rand.Read(b[:])
	r := &run{o: o, id: hex.EncodeToString(b[:])}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	r.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	dir, err := os.MkdirTemp("", "fvsql-bench-")
	if err != nil {
		return nil, err
	}
	r.dir = dir
	r.prefix = o.TopicPrefix
	switch {
	case o.URL != "":
		if len(o.Kafka) == 0 {
			r.close()
			return nil, fmt.Errorf("--url needs --kafka: the brokers of that server, to load data and run the baselines")
		}
	case len(o.Kafka) > 0:
		if r.prefix == "" {
			r.prefix = "bench-" + r.id + "."
		}
	case sharedBroker || o.Mode == "child":
		if r.broker, err = StartBroker(filepath.Join(dir, "broker")); err != nil {
			r.close()
			return nil, err
		}
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// brokers are the brokers servers are given (nil: their own embedded one).
func (r *run) brokers() []string {
	if len(r.o.Kafka) > 0 {
		return r.o.Kafka
	}
	if r.broker != nil {
		return r.broker.Addrs()
	}
	return nil
}

// brokerDesc says which broker the run uses.
func (r *run) brokerDesc() string {
	switch {
	case len(r.o.Kafka) > 0:
		pid := ""
		if r.o.BrokerPID > 0 {
			pid = fmt.Sprintf(", pid %d", r.o.BrokerPID)
		}
		return "real Kafka at " + strings.Join(r.o.Kafka, ",") + " (topic prefix " + r.prefix + pid + ")"
	case r.broker != nil:
		return "embedded kfake broker hosted by the bench process (fvsql's embedded-broker options) at " + strings.Join(r.broker.Addrs(), ",")
	}
	return "embedded kfake broker (fvsql's own, in the server process)"
}

// startServer starts a server with the given stream settings (or returns
// the remote one).
func (r *run) startServer(ctx context.Context, stream engine.Config) (Server, error) {
	if r.o.URL != "" {
		return RemoteServer(r.o.URL, r.o.Kafka, r.o.ServerPID), nil
	}
	return r.startServerCaches(ctx, stream, 0, 0)
}

// startServerCaches starts a server (never the remote one) with its --state-cache-mb
// and --group-cache-mb (0: its defaults) on a new data directory.
func (r *run) startServerCaches(ctx context.Context, stream engine.Config, stateMB, groupMB int) (Server, error) {
	r.n++
	cfg := r.serverConfig(stream, filepath.Join(r.dir, fmt.Sprintf("server-%d", r.n)))
	cfg.StateCacheMB, cfg.GroupCacheMB = stateMB, groupMB
	return StartServer(ctx, cfg)
}

// startServerAt starts a server on the given data directory (a restart
// keeps it; a wiped one starts empty).
func (r *run) startServerAt(ctx context.Context, stream engine.Config, dataDir string) (Server, error) {
	return StartServer(ctx, r.serverConfig(stream, dataDir))
}

// serverConfig is the configuration of a server the run starts.
func (r *run) serverConfig(stream engine.Config, dataDir string) ServerConfig {
	return ServerConfig{
		Mode: r.o.Mode, Exe: r.o.Exe, Kafka: r.brokers(), TopicPrefix: r.prefix,
		DataDir: dataDir, Stream: stream, Logger: r.log, LogLevel: r.o.LogLevel,
	}
}

// name returns a relation name, made unique when the server is shared.
func (r *run) name(base string) string {
	if r.o.URL != "" {
		return base + "_" + r.id
	}
	return base
}

// profile starts a CPU profile of the server for a phase; the returned
// function stops it.
func (r *run) profile(s Server, phase string) (stop func(), path string) {
	if r.o.ProfileDir == "" {
		return func() {}, ""
	}
	path = filepath.Join(r.o.ProfileDir, phase+".pprof")
	if err := s.StartProfile(path, filepath.Join(r.o.ProfileDir, phase+".heap.pprof")); err != nil {
		fmt.Fprintf(os.Stderr, "bench: CPU profile of %s: %v\n", phase, err)
		return func() {}, ""
	}
	return func() {
		if err := s.StopProfile(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: CPU profile of %s: %v\n", phase, err)
		}
	}, path
}

// close deletes what the run created.
func (r *run) close() {
	if len(r.o.Kafka) > 0 && r.prefix != "" && r.o.TopicPrefix == "" {
		r.cleanupKafka()
	}
	if r.broker != nil {
		r.broker.Close()
	}
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// cleanupKafka deletes the run's topics and groups (its unique prefix) on
// a real broker.
func (r *run) cleanupKafka() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.o.Kafka...))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if td, err := adm.ListTopics(ctx); err == nil {
		var del []string
		for _, t := range td.Names() {
			if strings.HasPrefix(t, r.prefix) {
				del = append(del, t)
			}
		}
		if len(del) > 0 {
			_, _ = adm.DeleteTopics(ctx, del...)
		}
	}
	if gs, err := adm.ListGroups(ctx); err == nil {
		var del []string
		for _, g := range gs.Groups() {
			if strings.HasPrefix(g, r.prefix) {
				del = append(del, g)
			}
		}
		if len(del) > 0 {
			_, _ = adm.DeleteGroups(ctx, del...)
		}
	}
}

// header prints what runs where and how to run it again.
func (r *run) header(title string, srv Server, lines ...string) {
	w := r.o.Out
	fmt.Fprintf(w, "=== fvsql-bench %s ===\n", title)
	fmt.Fprintf(w, "command:  %s\n", r.o.Command)
	fmt.Fprintf(w, "build:    %s\n", buildRevision())
	fmt.Fprintf(w, "host:     %s, %d CPUs, GOMAXPROCS %d, %s, %s\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "load:     %s (/proc/loadavg before the run: other work on the host shows in the \"other cpu\" columns)\n", loadAvg())
	fmt.Fprintf(w, "broker:   %s\n", r.brokerDesc())
	if srv != nil {
		fmt.Fprintf(w, "server:   %s\n", srv.Describe())
	}
	st := r.o.Stream
	fmt.Fprintf(w, "stream:   consumers %d, batch %d, checkpoint %s, exactly-once %v\n", st.Consumers, st.BatchSize, st.CheckpointInterval, st.ExactlyOnce)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
}

// Revision names the source a binary was built from when the build
// carries no VCS stamp: go build -ldflags "-X github.com/fvsql/fvsql/bench.Revision=…".
var Revision = ""

// buildRevision is the binary's VCS revision (and whether the tree was
// modified), or Revision.
func buildRevision() string {
	rev, modified := Revision, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if rev == "" {
					rev = s.Value
				}
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified tree)"
				}
			}
		}
	}
	if rev == "" {
		return "unknown revision (no VCS stamp: build with -ldflags \"-X github.com/fvsql/fvsql/bench.Revision=$(git rev-parse --short HEAD)\")"
	}
	return rev + modified
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// connect opens a pgx connection, bounded by 30 s.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return pgx.Connect(cctx, url)
}

// execSQL runs a statement with the simple protocol, bounded by d.
func execSQL(ctx context.Context, c *pgx.Conn, d time.Duration, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// phase measures a server and the host over a measured phase.
type phase struct {
	srv         Server
	brokerPID   int
	benchBroker bool // the embedded broker runs in the bench process
	u0          Usage
	host0       time.Duration
	self0       time.Duration
	broker0     time.Duration
	start       time.Time

	dur       time.Duration
	u1        Usage
	hostCPU   time.Duration // every process on the host
	srvCPU    time.Duration // the server's process
	brokerCPU time.Duration // the broker's process, when known and separate (-1: unknown)
	otherCPU  time.Duration // the rest: the bench's own work when separate, other tenants
	check     string        // a failed output check, reported with the figures
}

// startPhase resets the server's peaks and notes its CPU, the broker's
// and the host's.
func (r *run) startPhase(ctx context.Context, s Server) (*phase, error) {
	r.waitQuiet(ctx, s)
	if err := s.ResetPeaks(); err != nil {
		return nil, fmt.Errorf("reset peaks: %w", err)
	}
	u0, err := s.Usage()
	if err != nil {
		return nil, err
	}
	p := &phase{srv: s, u0: u0, host0: HostCPU(), self0: selfCPU(), brokerPID: r.o.BrokerPID, benchBroker: r.broker != nil}
	if p.brokerPID > 0 && p.brokerPID != s.PID() && p.brokerPID != os.Getpid() {
		if u, err := PIDUsage(p.brokerPID); err == nil {
			p.broker0 = u.CPU
		} else {
			p.brokerPID = 0
		}
	} else {
		p.brokerPID = 0
	}
	p.start = time.Now()
	return p, nil
}

// waitQuiet waits, up to Options.QuietWait, until the rest of the host
// (other tenants) uses less than a quarter of a core over 300 ms, so that
// measured phases do not share the CPUs with someone else's build.
func (r *run) waitQuiet(ctx context.Context, s Server) {
	if r.o.QuietWait <= 0 {
		return
	}
	cpuOf := func(pid int) time.Duration {
		if pid <= 0 || pid == os.Getpid() {
			return 0
		}
		u, err := PIDUsage(pid)
		if err != nil {
			return 0
		}
		return u.CPU
	}
	ours := func() time.Duration { return selfCPU() + cpuOf(s.PID()) + cpuOf(r.o.BrokerPID) }
	deadline := time.Now().Add(r.o.QuietWait)
	const window = 300 * time.Millisecond
	var other time.Duration
	for time.Now().Before(deadline) && ctx.Err() == nil {
		h0, o0 := HostCPU(), ours()
		select {
		case <-ctx.Done():
			return
		case <-time.After(window):
		}
		other = (HostCPU() - h0) - (ours() - o0)
		if other < window/4 {
			return
		}
	}
	fmt.Fprintf(os.Stderr, "bench: the host stayed busy for %s (other processes used %.1f cores): measuring anyway\n", r.o.QuietWait, other.Seconds()/window.Seconds())
}

// end notes the phase's duration, CPU and peaks.
func (p *phase) end() error {
	p.dur = time.Since(p.start)
	p.hostCPU = HostCPU() - p.host0
	self := selfCPU() - p.self0
	u1, err := p.srv.Usage()
	if err != nil {
		return err
	}
	p.u1 = u1
	p.srvCPU = u1.CPU - p.u0.CPU
	p.brokerCPU = -1
	if p.brokerPID > 0 {
		if u, err := PIDUsage(p.brokerPID); err == nil {
			p.brokerCPU = u.CPU - p.broker0
		}
	}
	if p.benchBroker && p.srv.PID() != os.Getpid() {
		// Child mode: the bench process hosts the broker; its CPU is
		// (mostly) the broker's.
		p.brokerCPU = self
	}
	p.otherCPU = p.hostCPU - p.srvCPU - max(p.brokerCPU, 0)
	if p.srv.PID() != os.Getpid() && !p.benchBroker {
		p.otherCPU -= self
	}
	p.otherCPU = max(p.otherCPU, 0)
	return nil
}

func cpuSecs(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", d.Seconds())
}

func perCPU(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return Count(float64(n) / d.Seconds())
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
