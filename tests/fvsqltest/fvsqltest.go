package fvsqltest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fvsql/fvsql/tests/testenv"
)

// BinEnv names a prebuilt fvsql binary to test instead of building
// ./cmd/fvsql.
const BinEnv = "FVSQL_TEST_BIN"

const (
	// StartTimeout bounds how long a started process may take to accept a
	// PostgreSQL connection.
	StartTimeout = 60 * time.Second
	// StopTimeout bounds how long a process may take to exit after SIGTERM
	// (graceful: each pipeline consumer commits its epoch) or SIGKILL.
	StopTimeout  = 30 * time.Second
	logTailLines = 60
	logWarnLines = 60
)

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	took time.Duration
}

// Main runs the tests of a package and then removes the binary Binary
// built. Use it from TestMain: func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }.
// Without it the binary is left in the system's temporary directory.
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	return code
}

// Binary returns $FVSQL_TEST_BIN, or builds ./cmd/fvsql of this module
// once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(BinEnv); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s: %v", BinEnv, err)
		}
		return abs
	}
	build.once.Do(func() {
		start := time.Now()
		build.bin, build.err = buildBinary()
		build.took = time.Since(start)
		if build.err == nil {
			t.Logf("fvsqltest: built ./cmd/fvsql in %s", build.took.Round(time.Millisecond))
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

func buildBinary() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	root, err := moduleRoot(goBin)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "fvsqltest-bin-")
	if err != nil {
		return "", err
	}
	build.dir = dir
	bin := filepath.Join(dir, "fvsql")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/fvsql")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/fvsql in %s: %v\n%s", root, err, out)
	}
	return bin, nil
}

// moduleRoot is the directory of go.mod (`go env GOMOD`).
func moduleRoot(goBin string) (string, error) {
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod), nil
	}
	return "", fmt.Errorf("fvsqltest: module root not found (go env GOMOD: %v)", err)
}

// Config describes one fvsql process.
type Config struct {
	// Name labels the process in logs ("a", "node-b"); default "fvsql".
	Name string
	// DataDir is the data directory; default a new directory under the
	// test's temporary directory.
	DataDir string
	// Listen is the PostgreSQL address; default 127.0.0.1 and a free port.
	Listen string
	// Kafka is the brokers of the Kafka to use; empty runs the embedded
	// broker on KafkaListen.
	Kafka string
	// KafkaListen is the embedded broker's endpoint (only without Kafka);
	// default 127.0.0.1 and a free port.
	KafkaListen string
	// TopicPrefix is --topic-prefix.
	TopicPrefix string
	// Args are further flags, e.g. "--stream-checkpoint-interval", "200ms".
	Args []string
	// SSLMode is the sslmode of DSN (and so of Connect): default disable;
	// require for a server started with --tls-mode require.
	SSLMode string
	// User and Password are the login of DSN (and so of Connect):
	// default user fvsql, no password; set them for a server started with
	// password authentication (--auth, --users).
	User, Password string
	// Env is added to the process's environment.
	Env []string
	// Bin is the fvsql binary to run (a path relative to the test's
	// working directory, or absolute); default Binary(t). For a suite that
	// names its own prebuilt binary, such as FVSQL_SQLLOGIC_BIN.
	Bin string
}

// Process is an fvsql server process that can be stopped, killed and
// restarted on the same data directory and ports.
type Process struct {
	t       testing.TB
	bin     string
	cfg     Config
	args    []string
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the current process has exited
	waitErr error         // valid after exited is closed
	ending  bool          // Stop or Kill is ending the current process
	starts  int
}

// Start starts an fvsql process and registers, for the end of the test,
// its shutdown (SIGKILL if it is still running) and, when the test
// failed, the printing of its log. It does not wait until the process
// accepts connections; Connect and WaitReady do.
func Start(t testing.TB, cfg Config) *Process {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "fvsql"
	}
	dir, err := os.MkdirTemp(t.TempDir(), cfg.Name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(dir, "data")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	}
	args := []string{"--listen", cfg.Listen, "--data-dir", cfg.DataDir}
	if cfg.Kafka != "" {
		args = append(args, "--kafka", cfg.Kafka)
	} else {
		if cfg.KafkaListen == "" {
			cfg.KafkaListen = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		}
		args = append(args, "--kafka-listen", cfg.KafkaListen)
	}
	if cfg.TopicPrefix != "" {
		args = append(args, "--topic-prefix", cfg.TopicPrefix)
	}
	args = append(args, cfg.Args...)
	bin := cfg.Bin
	if bin == "" {
		bin = Binary(t)
	} else if bin, err = filepath.Abs(bin); err != nil { // the process runs in its own directory
		t.Fatal(err)
	}
	p := &Process{t: t, bin: bin, cfg: cfg, args: args, logPath: filepath.Join(dir, "fvsql.log")}
	t.Cleanup(func() { keepLog(t, p.logPath, p.cfg.Name) }) // runs after cleanup
	t.Cleanup(p.cleanup)
	p.start()
	return p
}

func (p *Process) start() {
	t := p.t
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			t.Fatalf("fvsql %s: start while pid %d is running", p.cfg.Name, p.cmd.Process.Pid)
		}
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own copy
	p.starts++
	fmt.Fprintf(logFile, "=== fvsqltest: start #%d of %s at %s: %s %s\n", p.starts, p.cfg.Name,
		time.Now().Format("15:04:05.000"), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	cmd.Dir = filepath.Dir(p.logPath)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", p.bin, strings.Join(p.args, " "), err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.waitErr, p.ending = cmd, exited, nil, false
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	t.Logf("fvsql %s: started #%d (pid %d): %s", p.cfg.Name, p.starts, cmd.Process.Pid, strings.Join(p.args, " "))
}

// Name is the process's label.
func (p *Process) Name() string { return p.cfg.Name }

// Addr is the PostgreSQL address.
func (p *Process) Addr() string { return p.cfg.Listen }

// DataDir is the data directory.
func (p *Process) DataDir() string { return p.cfg.DataDir }

// DSN is a pgx connection string for the process.
func (p *Process) DSN() string {
	mode := p.cfg.SSLMode
	if mode == "" {
		mode = "disable"
	}
	user := url.User("fvsql")
	if p.cfg.User != "" {
		user = url.UserPassword(p.cfg.User, p.cfg.Password)
	}
	return "postgres://" + user.String() + "@" + p.cfg.Listen + "/fvsql?sslmode=" + mode + "&connect_timeout=5"
}

// KafkaBrokers is the Kafka this process uses: Config.Kafka, or its
// embedded broker's endpoint, which other processes and clients can use.
func (p *Process) KafkaBrokers() string {
	if p.cfg.Kafka != "" {
		return p.cfg.Kafka
	}
	return p.cfg.KafkaListen
}

// LogPath is the file holding the output of every run of the process.
func (p *Process) LogPath() string { return p.logPath }

// Pid is the current process's id.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Running reports whether the current process has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

func (p *Process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// Stop sends SIGTERM (graceful shutdown) and waits for the process to
// exit; it fails the test if the process does not exit within StopTimeout
// (it is then killed) or exits with an error.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	cmd, exited := p.current()
	p.mu.Lock()
	p.ending = true
	p.mu.Unlock()
	start := time.Now()
	_ = signal(cmd.Process, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(StopTimeout):
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the log before it exits: the stacks say where shutdown waits.
		_ = signal(cmd.Process, syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = signal(cmd.Process, syscall.SIGKILL)
			<-exited
		}
		t.Fatalf("fvsql %s (pid %d) did not exit within %s of SIGTERM; killed it. Its goroutines that were in fvsql code:\n%s",
			p.cfg.Name, cmd.Process.Pid, StopTimeout, ownStacks(p.logPath))
	}
	p.mu.Lock()
	err := p.waitErr
	p.mu.Unlock()
	if err != nil {
		t.Fatalf("fvsql %s (pid %d) exited with %v after SIGTERM", p.cfg.Name, cmd.Process.Pid, err)
	}
	t.Logf("fvsql %s: pid %d stopped gracefully in %s", p.cfg.Name, cmd.Process.Pid, time.Since(start).Round(time.Millisecond))
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	cmd, exited := p.current()
	p.mu.Lock()
	p.ending = true
	p.mu.Unlock()
	_ = signal(cmd.Process, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(StopTimeout):
		t.Fatalf("fvsql %s (pid %d) did not exit within %s of SIGKILL", p.cfg.Name, cmd.Process.Pid, StopTimeout)
	}
	t.Logf("fvsql %s: pid %d killed (SIGKILL)", p.cfg.Name, cmd.Process.Pid)
}

// Restart starts the process again, with the same data directory, ports
// and flags, after Stop or Kill.
func (p *Process) Restart(t testing.TB) {
	t.Helper()
	p.start()
}

// WaitReady waits until the process accepts a PostgreSQL connection (and
// runs a trivial query), or ctx ends, or the process exits.
func (p *Process) WaitReady(ctx context.Context) error {
	conn, err := p.dial(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return conn.Close(cctx)
}

func (p *Process) dial(ctx context.Context) (*pgx.Conn, error) {
	_, exited := p.current()
	var lastErr error
	for {
		select {
		case <-exited:
			p.mu.Lock()
			werr := p.waitErr
			p.mu.Unlock()
			return nil, fmt.Errorf("fvsql %s exited before accepting connections: %v", p.cfg.Name, werr)
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(cctx, p.DSN())
		if err == nil {
			_, err = conn.Exec(cctx, "SELECT 1")
			if err != nil {
				_ = conn.Close(cctx)
			}
		}
		cancel()
		if err == nil {
			return conn, nil
		}
		lastErr = err
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return nil, fmt.Errorf("fvsql %s at %s refused the connection: %w", p.cfg.Name, p.cfg.Listen, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("fvsql %s at %s accepted no connection: %v (last error: %v)", p.cfg.Name, p.cfg.Listen, ctx.Err(), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Connect waits (up to StartTimeout) until the process accepts a
// PostgreSQL connection and returns it; the connection is closed when the
// test ends.
func (p *Process) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	start := time.Now()
	conn, err := p.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fvsql %s: connected after %s", p.cfg.Name, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	return conn
}

// RSS is the resident set size of the current process, from
// /proc/<pid>/status (VmRSS), in bytes.
func (p *Process) RSS() (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(p.Pid()) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) != 2 || fields[1] != "kB" {
				return 0, fmt.Errorf("unexpected VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

// LogLines returns the lines of the process's log (all runs) for which
// keep returns true.
func (p *Process) LogLines(keep func(string) bool) []string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return []string{fmt.Sprintf("(reading %s: %v)", p.logPath, err)}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if keep(l) {
			out = append(out, l)
		}
	}
	return out
}

// cleanup kills the process if it is still running and, when the test
// failed, prints its warnings, errors and log tail.
func (p *Process) cleanup() {
	t := p.t
	cmd, exited := p.current()
	p.mu.Lock()
	ending := p.ending
	p.mu.Unlock()
	select {
	case <-exited:
		if !ending && !t.Failed() {
			p.mu.Lock()
			err := p.waitErr
			p.mu.Unlock()
			t.Errorf("fvsql %s (pid %d) exited before the end of the test: %v", p.cfg.Name, cmd.Process.Pid, err)
		}
	default:
		_ = signal(cmd.Process, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(StopTimeout):
			t.Errorf("fvsql %s (pid %d) did not exit after SIGKILL", p.cfg.Name, cmd.Process.Pid)
		}
	}
	if t.Failed() {
		warn := p.LogLines(func(l string) bool {
			return strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") ||
				strings.HasPrefix(l, "=== fvsqltest") || strings.HasPrefix(l, "panic") || strings.HasPrefix(l, "fatal")
		})
		if len(warn) > logWarnLines {
			warn = append([]string{fmt.Sprintf("(%d earlier lines left out)", len(warn)-logWarnLines)}, warn[len(warn)-logWarnLines:]...)
		}
		t.Logf("fvsql %s: starts, warnings and errors of %s:\n%s", p.cfg.Name, p.logPath, strings.Join(warn, "\n"))
		t.Logf("fvsql %s: last %d lines of %s:\n%s", p.cfg.Name, logTailLines, p.logPath, tail(p.logPath, logTailLines))
	}
}

// ownStacks returns the goroutine stacks of a SIGQUIT dump in the log at
// path that pass through fvsql's own packages; the runtime's and the
// libraries' idle goroutines are left out.
func ownStacks(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	i := bytes.Index(b, []byte("SIGQUIT: quit"))
	if i < 0 {
		return "(no goroutine dump in the log)"
	}
	var out []string
	for _, g := range strings.Split(string(b[i:]), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && strings.Contains(g, "github.com/fvsql/fvsql/") {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return "(no goroutine in fvsql code)"
	}
	return strings.Join(out, "\n\n")
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return "(empty)"
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// ShowPipelineStatus reads a pipeline's status from SHOW PIPELINES.
func ShowPipelineStatus(conn *pgx.Conn, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, "SHOW PIPELINES")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	nameCol, statusCol := -1, -1
	for i, f := range rows.FieldDescriptions() {
		switch f.Name {
		case "name":
			nameCol = i
		case "status":
			statusCol = i
		}
	}
	status := ""
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return "", err
		}
		if nameCol < 0 || statusCol < 0 {
			continue
		}
		if n, _ := vals[nameCol].(string); n == name {
			status, _ = vals[statusCol].(string)
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if nameCol < 0 || statusCol < 0 {
		return "", errors.New("SHOW PIPELINES has no name or status column")
	}
	return status, nil
}
