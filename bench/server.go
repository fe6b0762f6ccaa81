package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/server"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Server is an fvsql server under measurement.
type Server interface {
	// URL is the postgres:// URL to connect to.
	URL() string
	// Brokers are the Kafka brokers the server uses.
	Brokers() []string
	// Describe says where the server runs.
	Describe() string
	// PID is the server's process id (0: unknown).
	PID() int
	// Usage returns the server process's figures (Heap -1 when unknown).
	Usage() (Usage, error)
	// ResetPeaks starts new memory peaks.
	ResetPeaks() error
	// StartProfile and StopProfile write a CPU profile of the server's
	// process to path, and a heap profile at its peak to heapPath (when
	// not empty).
	StartProfile(path, heapPath string) error
	StopProfile() error
	Close() error
}

// ServerConfig configures a server started by the bench.
type ServerConfig struct {
	Mode        string   // "inproc" (default) or "child"
	Exe         string   // child mode: the fvsql-bench binary (runs `serve`)
	Kafka       []string // brokers; empty: the server's own embedded broker
	TopicPrefix string
	DataDir     string
	FileRoot    string // the server's --file-root (empty: <DataDir>/files)
	SyncWrites  bool   // the server's --sync-writes (its own embedded broker only)
	Stream      engine.Config
	Logger      *slog.Logger
	LogLevel    string // child mode: --log-level
	// StateCacheMB and GroupCacheMB are the server's --state-cache-mb and
	// --group-cache-mb (0: its defaults).
	StateCacheMB, GroupCacheMB int
}

// DefaultMode is where a scenario's server runs unless --server says:
// the scenarios that report the server's own memory and CPU, or kill it,
// use a child process.
func DefaultMode(scenario string) string {
	switch scenario {
	case "windows", "joins", "pull", "eos", "recovery", "backends":
		return "child"
	}
	return "inproc"
}

// StartServer starts a server as cfg says.
func StartServer(ctx context.Context, cfg ServerConfig) (Server, error) {
	switch cfg.Mode {
	case "", "inproc":
		return startInproc(ctx, cfg)
	case "child":
		return startChild(ctx, cfg)
	}
	return nil, fmt.Errorf("bench: unknown server mode %q (want inproc or child)", cfg.Mode)
}

// ---------------------------------------------------------------- in-process

type inprocServer struct {
	srv  *server.Server
	wire *pgwire.Server
	url  string
	own  bool // the server's own embedded broker
	prof *os.File
}

func startInproc(ctx context.Context, cfg ServerConfig) (*inprocServer, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	stream := cfg.Stream
	stream.GroupCacheBytes = cfg.GroupCacheMB << 20
	srv, err := server.Open(ctx, server.Config{
		DataDir: cfg.DataDir, FileRoot: cfg.FileRoot, SyncWrites: cfg.SyncWrites, Kafka: cfg.Kafka, KafkaListen: "127.0.0.1:0",
		TopicPrefix: cfg.TopicPrefix, Stream: stream, Logger: log,
		StateCacheBytes: int64(cfg.StateCacheMB) << 20,
	})
	if err != nil {
		return nil, err
	}
	wire, err := pgwire.NewServer(pgwire.Config{Addr: "127.0.0.1:0", ServerVersion: server.ServerVersion, Logger: log}, srv)
	if err != nil {
		srv.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	go func() { _ = wire.Serve(ln) }()
	startHeapWatch()
	return &inprocServer{srv: srv, wire: wire, own: len(cfg.Kafka) == 0,
		url: "postgres://fvsql@" + ln.Addr().String() + "/fvsql?sslmode=disable"}, nil
}

func (s *inprocServer) URL() string       { return s.url }
func (s *inprocServer) Brokers() []string { return s.srv.KafkaBrokers() }
func (s *inprocServer) Describe() string {
	if s.own {
		return "in-process (its embedded broker in the same process)"
	}
	return "in-process"
}
func (s *inprocServer) PID() int              { return os.Getpid() }
func (s *inprocServer) Usage() (Usage, error) { return SelfUsage(), nil }
func (s *inprocServer) ResetPeaks() error     { return ResetSelfPeaks() }

func (s *inprocServer) StartProfile(path, heapPath string) error {
	if heapPath != "" {
		StartHeapProfile(heapPath)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	s.prof = f
	return nil
}

func (s *inprocServer) StopProfile() error {
	StopHeapProfile()
	if s.prof == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := s.prof.Close()
	s.prof = nil
	return err
}

func (s *inprocServer) Close() error {
	s.StopProfile()
	s.wire.Close()
	return s.srv.Close()
}

// ---------------------------------------------------------------- child process

// childServer is `fvsql-bench serve` in a child process, driven by one
// command per line on its stdin; it answers one JSON line each.
type childServer struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	in      io.WriteCloser
	out     *bufio.Reader
	url     string
	brokers []string
	exited  chan struct{}
}

type childHello struct {
	URL     string   `json:"url"`
	Brokers []string `json:"brokers"`
	PID     int      `json:"pid"`
	Error   string   `json:"error"`
}

type childReply struct {
	Usage *Usage `json:"usage,omitempty"`
	Error string `json:"error,omitempty"`
}

func startChild(ctx context.Context, cfg ServerConfig) (*childServer, error) {
	if cfg.Exe == "" {
		return nil, errors.New("bench: child mode needs the fvsql-bench binary")
	}
	if len(cfg.Kafka) == 0 {
		return nil, errors.New("bench: child mode needs a broker (the bench hosts an embedded one)")
	}
	st := cfg.Stream
	args := []string{"serve",
		"--data-dir", cfg.DataDir, "--file-root", cfg.FileRoot, "--kafka", strings.Join(cfg.Kafka, ","), "--topic-prefix", cfg.TopicPrefix,
		"--stream-consumers", strconv.Itoa(st.Consumers), "--stream-batch-size", strconv.Itoa(st.BatchSize),
		"--stream-checkpoint-interval", st.CheckpointInterval.String(),
		"--stream-exactly-once=" + strconv.FormatBool(st.ExactlyOnce),
		"--stream-offset-reset", st.OffsetReset, "--stream-idle-timeout", st.IdleTimeout.String(),
		"--log-level", cfg.LogLevel,
		"--state-cache-mb", strconv.Itoa(cfg.StateCacheMB), "--group-cache-mb", strconv.Itoa(cfg.GroupCacheMB),
	}
	cmd := exec.Command(cfg.Exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childServer{cmd: cmd, in: in, out: bufio.NewReader(outPipe), exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	helloc := make(chan error, 1)
	var hello childHello
	go func() {
		line, err := c.out.ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &hello)
		}
		if err == nil && hello.Error != "" {
			err = errors.New(hello.Error)
		}
		helloc <- err
	}()
	select {
	case err = <-helloc:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(2 * time.Minute):
		err = errors.New("child server did not start within 2m")
	}
	if err != nil {
		c.kill()
		return nil, fmt.Errorf("bench: child server: %w", err)
	}
	c.url, c.brokers = hello.URL, hello.Brokers
	return c, nil
}

func (c *childServer) URL() string       { return c.url }
func (c *childServer) Brokers() []string { return c.brokers }
func (c *childServer) Describe() string {
	return fmt.Sprintf("child process (pid %d, `fvsql-bench serve`)", c.cmd.Process.Pid)
}

// call sends one command and reads its reply, bounded by 2 minutes.
func (c *childServer) call(cmd string) (childReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		return childReply{}, err
	}
	type res struct {
		line []byte
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := c.out.ReadBytes('\n')
		ch <- res{l, err}
	}()
	var r res
	select {
	case r = <-ch:
	case <-time.After(2 * time.Minute):
		return childReply{}, fmt.Errorf("child server: no reply to %q", cmd)
	}
	if r.err != nil {
		return childReply{}, r.err
	}
	var rep childReply
	if err := json.Unmarshal(r.line, &rep); err != nil {
		return rep, err
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

func (c *childServer) PID() int { return c.cmd.Process.Pid }

func (c *childServer) Usage() (Usage, error) {
	rep, err := c.call("usage")
	if err != nil || rep.Usage == nil {
		return Usage{}, err
	}
	return *rep.Usage, nil
}

func (c *childServer) ResetPeaks() error { _, err := c.call("reset"); return err }
func (c *childServer) StartProfile(path, heapPath string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	cmd := "prof-start " + abs
	if heapPath != "" {
		habs, err := filepath.Abs(heapPath)
		if err != nil {
			return err
		}
		cmd += " " + habs
	}
	_, err = c.call(cmd)
	return err
}
func (c *childServer) StopProfile() error { _, err := c.call("prof-stop"); return err }

func (c *childServer) Close() error {
	c.mu.Lock()
	_, _ = io.WriteString(c.in, "quit\n")
	c.in.Close()
	c.mu.Unlock()
	select {
	case <-c.exited:
		return nil
	case <-time.After(30 * time.Second):
		c.kill()
		return errors.New("child server did not stop within 30s: killed")
	}
}

// Kill ends the child with SIGKILL, as a crash would: no shutdown, no
// last checkpoint.
func (c *childServer) Kill() { c.kill() }

func (c *childServer) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// ServeChild is the child side of child mode (`fvsql-bench serve`): it
// starts an in-process server, writes a hello line with its URL to out,
// then answers commands from in: usage, reset, prof-start CPUPATH
// [HEAPPATH], prof-stop, quit (or end of input).
func ServeChild(ctx context.Context, cfg ServerConfig, in io.Reader, out io.Writer) error {
	enc := json.NewEncoder(out)
	s, err := startInproc(ctx, cfg)
	if err != nil {
		_ = enc.Encode(childHello{Error: err.Error()})
		return err
	}
	defer s.Close()
	if err := enc.Encode(childHello{URL: s.URL(), Brokers: s.Brokers(), PID: os.Getpid()}); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		var rep childReply
		var err error
		switch cmd {
		case "usage":
			u := SelfUsage()
			rep.Usage = &u
		case "reset":
			err = s.ResetPeaks()
		case "prof-start":
			cpu, heap, _ := strings.Cut(arg, " ")
			err = s.StartProfile(cpu, heap)
		case "prof-stop":
			err = s.StopProfile()
		case "quit":
			return nil
		default:
			err = fmt.Errorf("unknown command %q", cmd)
		}
		if err != nil {
			rep.Error = err.Error()
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------- remote

// remoteServer is a running fvsql reached at a URL; with a pid its
// memory and CPU are read from /proc.
type remoteServer struct {
	url     string
	brokers []string
	pid     int
}

// RemoteServer describes a server started elsewhere.
func RemoteServer(url string, brokers []string, pid int) Server {
	return &remoteServer{url: url, brokers: brokers, pid: pid}
}

func (r *remoteServer) URL() string       { return r.url }
func (r *remoteServer) Brokers() []string { return r.brokers }
func (r *remoteServer) Describe() string {
	if r.pid > 0 {
		return fmt.Sprintf("running server at --url (pid %d)", r.pid)
	}
	return "running server at --url (memory unknown: pass --server-pid)"
}
func (r *remoteServer) PID() int { return r.pid }
func (r *remoteServer) Usage() (Usage, error) {
	if r.pid <= 0 {
		return Usage{RSS: -1, PeakRSS: -1, Heap: -1, PeakHeap: -1}, nil
	}
	return PIDUsage(r.pid)
}
func (r *remoteServer) ResetPeaks() error {
	if r.pid <= 0 {
		return nil
	}
	return ResetPIDPeaks(r.pid)
}
func (r *remoteServer) StartProfile(string, string) error {
	return errors.New("cannot profile a server at --url")
}
func (r *remoteServer) StopProfile() error { return nil }
func (r *remoteServer) Close() error       { return nil }

// ---------------------------------------------------------------- embedded broker

// Broker is an embedded kfake broker hosted by the bench process, with the
// options fvsql's own embedded broker uses, for scenarios that run
// several servers against one broker or measure a server alone.
type Broker struct {
	c *kfake.Cluster
}

// StartBroker starts the broker on a free loopback port, persisted under
// dir; syncWrites makes it fsync every batch, as fvsql's --sync-writes.
func StartBroker(dir string, syncWrites bool) (*Broker, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var sync []kfake.Opt
	if syncWrites {
		sync = append(sync, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		}),
		kfake.DataDir(filepath.Join(dir, "kafka")),
		kfake.ClusterID("fvsql-bench"),
		// Its warnings (transaction timeouts, late heartbeats) explain
		// stalls; fvsql's own embedded broker does not log them.
		kfake.WithLogger(kfake.BasicLogger(prefixWriter{os.Stderr, "bench: embedded broker: "}, kfake.LogLevelWarn)),
	}, sync...)...)
	if err != nil {
		return nil, fmt.Errorf("bench: embedded broker: %w", err)
	}
	return &Broker{c: c}, nil
}

// Addrs are the broker's addresses.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// Close stops the broker.
func (b *Broker) Close() { b.c.Close() }

// prefixWriter writes each Write to w with a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
