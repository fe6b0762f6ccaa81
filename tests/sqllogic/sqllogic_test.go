package sqllogic_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fvsql/fvsql/tests/sqllogic"
	"github.com/fvsql/fvsql/tests/testenv"
)

const (
	// brokerEnv selects the broker of the fvsql servers: "embedded" (the
	// default: the server runs its own in-process Kafka-compatible broker)
	// or "real" (the Kafka broker of FVSQL_TEST_KAFKA).
	brokerEnv = "FVSQL_SQLLOGIC_BROKER"
	// binEnv names a prebuilt fvsql binary to test instead of building
	// ./cmd/fvsql.
	binEnv = "FVSQL_SQLLOGIC_BIN"

	startTimeout  = 60 * time.Second
	recordTimeout = 60 * time.Second
	stopTimeout   = 10 * time.Second
	logTailLines  = 80
)

// TestSQLLogic runs every testdata/*.slt file, in name order, as a subtest
// against a fresh fvsql server that speaks the PostgreSQL wire protocol.
func TestSQLLogic(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.slt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.slt files")
	}

	mode := os.Getenv(brokerEnv)
	switch mode {
	case "":
		mode = "embedded"
	case "embedded", "real":
	default:
		t.Fatalf("%s=%q: want embedded or real", brokerEnv, mode)
	}
	var kafka string
	if mode == "real" {
		kafka = testenv.Kafka(t)
	}

	bin := serverBinary(t)
	broker := mode
	if kafka != "" {
		broker += " (" + kafka + ")"
	}
	t.Logf("fvsql binary %s, broker %s, %d files", bin, broker, len(files))

	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			records, err := parseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			if uses(file, "${redis}") {
				vars["redis"] = testenv.Redis(t)
			}
			srv := startServer(t, bin, name, kafka)
			vars["kafka"] = srv.kafka
			conn := srv.connect(t)

			r := &sqllogic.Runner{
				Exec:    sqllogic.PgConnExecutor{Conn: conn},
				Labels:  []string{mode},
				Timeout: recordTimeout,
				Logf:    t.Logf,
				Vars:    vars,
			}
			start := time.Now()
			failures, st := r.Run(context.Background(), name, records)
			for _, f := range failures {
				t.Error(f.String())
			}
			t.Logf("%s: %d records run, %d skipped, %d failed in %s (halted: %v)", name, st.Run, st.Skipped, st.Failed,
				time.Since(start).Round(time.Millisecond), st.Halted)
		})
	}
}

// uses reports whether a file mentions a substitution variable.
func uses(path, variable string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), variable)
}

func parseFile(path string) ([]sqllogic.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sqllogic.Parse(filepath.Base(path), f)
}

// serverBinary returns FVSQL_SQLLOGIC_BIN, or builds ./cmd/fvsql of this
// module into a temporary directory.
func serverBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binEnv); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s: %v", binEnv, err)
		}
		return abs
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	root := moduleRoot(t, goBin)
	bin := filepath.Join(t.TempDir(), "fvsql")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/fvsql")
	cmd.Dir = root
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fvsql in %s: %v\n%s", root, err, out)
	}
	t.Logf("built ./cmd/fvsql in %s", time.Since(start).Round(time.Millisecond))
	return bin
}

// moduleRoot finds the directory of go.mod: `go env GOMOD`, else ../.. of
// this package's directory.
func moduleRoot(t *testing.T, goBin string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	return root
}

type server struct {
	addr    string
	kafka   string // the Kafka brokers the server uses (its embedded endpoint, or the real broker)
	logPath string
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed
}

// startServer starts an fvsql server for one .slt file with its own data
// directory and ports, and registers its shutdown (SIGTERM, then SIGKILL
// after stopTimeout) and, when the test failed, the printing of its log tail.
func startServer(t *testing.T, bin, file, kafka string) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{
		addr:    "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
		logPath: filepath.Join(dir, "server.log"),
		exited:  make(chan struct{}),
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--listen", s.addr, "--data-dir", dataDir}
	env := os.Environ()
	s.kafka = kafka
	if kafka == "" {
		s.kafka = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		args = append(args, "--kafka-listen", s.kafka)
	} else {
		// Files share the broker and reuse stream names: every server start
		// gets its own prefix for the topics and group ids it creates.
		prefix := testenv.UniqueName("sqllogic-"+strings.TrimSuffix(file, ".slt")+"-") + "-"
		args = append(args, "--kafka", kafka)
		env = append(env, "FVSQL_TOPIC_PREFIX="+prefix)
		t.Logf("FVSQL_TOPIC_PREFIX=%s", prefix)
	}

	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", bin, strings.Join(args, " "), err)
	}
	t.Logf("started fvsql (pid %d): %s", cmd.Process.Pid, strings.Join(args, " "))
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	t.Cleanup(func() {
		s.stop(t, cmd.Process)
		if t.Failed() {
			t.Logf("last %d lines of the fvsql server log %s:\n%s", logTailLines, s.logPath, tail(s.logPath, logTailLines))
		}
	})
	return s
}

func (s *server) stop(t *testing.T, p *os.Process) {
	select {
	case <-s.exited:
		if !t.Failed() {
			t.Errorf("fvsql server exited before the end of the test: %v", s.waitErr)
		}
		return
	default:
	}
	_ = signalServer(p, syscall.SIGTERM)
	select {
	case <-s.exited:
		return
	case <-time.After(stopTimeout):
	}
	t.Errorf("fvsql server did not exit %s after SIGTERM; killing it", stopTimeout)
	_ = signalServer(p, syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		t.Errorf("fvsql server (pid %d) did not exit after SIGKILL", p.Pid)
	}
}

// connect waits until the server accepts a PostgreSQL connection.
func (s *server) connect(t *testing.T) *pgconn.PgConn {
	t.Helper()
	dsn := "postgres://fvsql@" + s.addr + "/fvsql?sslmode=disable"
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for {
		select {
		case <-s.exited:
			t.Fatalf("fvsql server exited before accepting connections: %v (its log follows)", s.waitErr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgconn.Connect(ctx, dsn)
		cancel()
		if err == nil {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = conn.Close(ctx)
			})
			return conn
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("fvsql server at %s accepted no connection within %s: %v (its log follows)",
				s.addr, startTimeout, lastErr)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			// The server answered but refused: retrying will not help.
			t.Fatalf("connecting to fvsql at %s: %v", s.addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
