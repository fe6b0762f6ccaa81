package sqllogic_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/fvsql/fvsql/tests/sqllogic"
	"github.com/fvsql/fvsql/tests/testenv"
)

const (
	// brokerEnv selects the broker of the fvsql servers: "embedded" (the
	// default: the server runs its own in-process Kafka-compatible broker)
	// or "real" (the Kafka broker of FVSQL_TEST_KAFKA).
	brokerEnv = "FVSQL_SQLLOGIC_BROKER"
	// binEnv names a prebuilt fvsql binary to test instead of building
	// ./cmd/fvsql (fvsqltest's own FVSQL_TEST_BIN works too).
	binEnv = "FVSQL_SQLLOGIC_BIN"

	recordTimeout = 60 * time.Second
)

// TestMain removes the fvsql binary fvsqltest built.
func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

// TestSQLLogic runs every testdata/*.slt file as a subtest against a
// fresh fvsql server of its own that speaks the PostgreSQL wire protocol;
// the files run in parallel (as many at once as go test -parallel says).
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
			// Files run side by side (go test -parallel, GOMAXPROCS by
			// default), each against its own server: a file mostly waits
			// for its server's commits, not for a CPU.
			t.Parallel()
			records, err := parseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			if uses(file, "${redis}") {
				vars["redis"] = testenv.Redis(t)
			}
			cfg := fvsqltest.Config{Name: strings.TrimSuffix(name, ".slt"), Bin: bin, Kafka: kafka, Args: serverArgs(file)}
			if kafka != "" {
				// Files share the broker and reuse stream names: every server
				// start gets its own prefix for the topics and group ids it
				// creates.
				cfg.TopicPrefix = testenv.UniqueName("sqllogic-"+cfg.Name+"-") + "-"
			}
			srv := fvsqltest.Start(t, cfg)
			vars["kafka"] = srv.KafkaBrokers()
			conn := srv.Connect(t)

			r := &sqllogic.Runner{
				Exec:    sqllogic.PgConnExecutor{Conn: conn.PgConn()},
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

			// Every file ends with a graceful shutdown, which must succeed.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = conn.Close(ctx)
			srv.Stop(t)
		})
	}
}

// serverBinary returns FVSQL_SQLLOGIC_BIN, or fvsqltest's binary
// (FVSQL_TEST_BIN, or ./cmd/fvsql built once).
func serverBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(binEnv)
	if bin == "" {
		return fvsqltest.Binary(t)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%s: %v", binEnv, err)
	}
	return abs
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

// serverArgs are the server flags a file asks for in a comment line of
// its own, "# server args: --flag value …" (217's inputs idle between
// its batches longer than the default idle timeout while its queries
// run, which would make a batch's rows late where the expected results
// have none).
func serverArgs(file string) []string {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "# server args:"); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}
