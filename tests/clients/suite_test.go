package clients

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/fvsql/fvsql/tests/testenv"
	"github.com/jackc/pgx/v5"
)

// The client compatibility suite (issue 17): each real driver or tool runs
// a program of checks (tests/clients/<language>/) against one server that
// holds fixture/fvsql.sql. A program prints "ok <check>" or
// "FAIL <check>: <reason>" per check and exits 0 when all passed; each
// check becomes a subtest here.
//
// The toolchains come from scripts/test.sh, which installs them from PyPI,
// npm and Maven Central and exports where they are (the variables below);
// without one its suites skip, or fail under CI.
//
// FVSQL_CLIENTS_POSTGRES points the same suites at a real PostgreSQL
// instead (a connection string of a role that may create databases;
// `./scripts/test.sh --clients-postgres` starts one and sets it): the
// fixture is then postgres.sql in a new database, so that a check that
// fails there is known to be wrong, not fvsql.
const (
	pythonEnv   = "FVSQL_CLIENTS_PYTHON"   // python of a venv with python/requirements.txt
	supersetEnv = "FVSQL_CLIENTS_SUPERSET" // python of a venv with superset/requirements.txt
	jdbcEnv     = "FVSQL_CLIENTS_JDBC"     // the pgjdbc jar
	nodeEnv     = "FVSQL_CLIENTS_NODE"     // node_modules with node/package.json's packages
	postgresEnv = "FVSQL_CLIENTS_POSTGRES"
)

// A suite is one program of checks.
type suite struct {
	name string
	tool string // the environment variable naming its toolchain
	// argv is the command line, given the toolchain's path and a scratch
	// directory.
	argv func(t *testing.T, tool, scratch string) []string
}

func python(file string) func(*testing.T, string, string) []string {
	return func(_ *testing.T, py, _ string) []string { return []string{py, filepath.Join("python", file)} }
}

func java(class string) func(*testing.T, string, string) []string {
	return func(t *testing.T, jar, scratch string) []string {
		sources, _ := filepath.Glob(filepath.Join("java", "*.java"))
		out := filepath.Join(scratch, "classes")
		cmd := exec.Command("javac", append([]string{"-d", out, "-cp", jar}, sources...)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, msg)
		}
		return []string{"java", "-cp", out + string(os.PathListSeparator) + jar, class}
	}
}

func node(file string) func(*testing.T, string, string) []string {
	return func(_ *testing.T, modules, _ string) []string {
		return []string{"env", "NODE_PATH=" + modules, "node", filepath.Join("node", file)}
	}
}

var suites = []suite{
	{"psycopg", pythonEnv, python("psycopg3.py")},
	{"psycopg2", pythonEnv, python("psycopg2_suite.py")},
	{"sqlalchemy", pythonEnv, python("sqlalchemy_suite.py")},
	{"pandas", pythonEnv, python("pandas_suite.py")},
	{"asyncpg", pythonEnv, python("asyncpg_suite.py")},
	{"superset", supersetEnv, func(_ *testing.T, py, _ string) []string {
		return []string{py, filepath.Join("superset", "superset_suite.py")}
	}},
	{"pgjdbc", jdbcEnv, java("Pgjdbc")},
	{"metabase", jdbcEnv, java("Metabase")},
	{"dbeaver", jdbcEnv, java("DBeaver")},
	{"node-postgres", nodeEnv, node("suite.js")},
}

// target is the server the suites run against: its address, login and
// database, as libpq's environment variables say them.
type target struct {
	kind                           string // fvsql or postgres
	host, port, user, pass, dbname string
}

func (tg target) dsn() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(tg.user, tg.pass), Host: tg.host + ":" + tg.port,
		Path: "/" + tg.dbname, RawQuery: "sslmode=require&connect_timeout=10"}
	return u.String()
}

func (tg target) env() []string {
	return []string{"PGHOST=" + tg.host, "PGPORT=" + tg.port, "PGUSER=" + tg.user, "PGPASSWORD=" + tg.pass,
		"PGDATABASE=" + tg.dbname, "PGSSLMODE=require", "FVSQL_CLIENT_TARGET=" + tg.kind}
}

// startTarget starts fvsql with SCRAM and TLS (so that every driver logs
// in as a production client would) and loads the fixture, or makes a new
// database on FVSQL_CLIENTS_POSTGRES.
func startTarget(t *testing.T) target {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if admin := os.Getenv(postgresEnv); admin != "" {
		return postgresTarget(ctx, t, admin)
	}
	p := fvsqltest.Start(t, fvsqltest.Config{Name: "clients", SSLMode: "require", User: "client", Password: "secret",
		Args: []string{"--auth", "scram-sha-256", "--users", "client:secret", "--tls-self-signed"}})
	conn := p.Connect(t)
	loadFixture(ctx, t, conn, "fvsql.sql")
	host, port, _ := strings.Cut(p.Addr(), ":")
	return target{kind: "fvsql", host: host, port: port, user: "client", pass: "secret", dbname: "fvsql"}
}

func postgresTarget(ctx context.Context, t *testing.T, admin string) target {
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	defer conn.Close(ctx)
	const db = "fvsql_clients"
	for _, q := range []string{"DROP DATABASE IF EXISTS " + db + " WITH (FORCE)", "CREATE DATABASE " + db} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg.Database = db
	fix, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fix.Close(ctx)
	loadFixture(ctx, t, fix, "postgres.sql")
	return target{kind: "postgres", host: cfg.Host, port: fmt.Sprint(cfg.Port), user: cfg.User, pass: cfg.Password, dbname: db}
}

func loadFixture(ctx context.Context, t *testing.T, conn *pgx.Conn, name string) {
	sql, err := os.ReadFile(filepath.Join("fixture", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().Exec(ctx, string(sql)).ReadAll(); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
}

func TestClientSuites(t *testing.T) {
	tg := startTarget(t)
	t.Logf("client suites against %s at %s:%s", tg.kind, tg.host, tg.port)
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			tool := testenv.Tool(t, s.tool, "the "+s.name+" client (scripts/test.sh installs it)")
			runSuite(t, tg, s.name, s.argv(t, tool, t.TempDir()))
		})
	}
	for _, g := range goSuites {
		t.Run(g.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			g.run(ctx, &checker{t: t}, tg)
		})
	}
}

// runSuite runs one program and turns its lines into subtests. A check
// listed in known_failures.txt that fails against fvsql is skipped with
// the reason; one that passes fails the test, so that the list shrinks
// as fvsql grows and never hides a check that works.
func runSuite(t *testing.T, tg target, suiteName string, argv []string) {
	known := knownFailures(t)
	seen := map[string]bool{}     // known failures that failed
	reported := map[string]bool{} // every check the program reported
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), tg.env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	checks, failed := 0, 0
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ok "):
			checks++
			name := strings.TrimPrefix(line, "ok ")
			reported[suiteName+"/"+name] = true
			if why, ok := known[suiteName+"/"+name]; ok && tg.kind == "fvsql" {
				t.Run(name, func(t *testing.T) {
					t.Errorf("passes now: take it out of known_failures.txt (%s)", why)
				})
				continue
			}
			t.Run(name, func(*testing.T) {})
		case strings.HasPrefix(line, "FAIL "):
			checks++
			name, reason, _ := strings.Cut(strings.TrimPrefix(line, "FAIL "), ": ")
			reported[suiteName+"/"+name] = true
			if why, ok := known[suiteName+"/"+name]; ok && tg.kind == "fvsql" {
				seen[suiteName+"/"+name] = true
				t.Run(name, func(t *testing.T) {
					t.Skipf("known fvsql gap (known_failures.txt: %s); the client says: %s", why, reason)
				})
				continue
			}
			failed++
			t.Run(name, func(t *testing.T) { t.Error(reason) })
		default:
			t.Errorf("unexpected output line %q (a suite prints only ok/FAIL lines)", line)
		}
	}
	t.Logf("%s: %d checks, %d failed, %.1fs", strings.Join(argv, " "), checks, failed, time.Since(start).Seconds())
	if tg.kind == "fvsql" {
		for name := range known {
			if strings.HasPrefix(name, suiteName+"/") && !reported[name] {
				t.Errorf("known_failures.txt names %s, which the suite did not run", name)
			}
		}
	}
	if runErr != nil && failed == 0 && len(seen) == 0 || checks == 0 {
		t.Errorf("%s: %v, %d checks; stderr:\n%s", strings.Join(argv, " "), runErr, checks, tail(stderr.String(), 4000))
	} else if failed > 0 {
		t.Logf("stderr:\n%s", tail(stderr.String(), 4000))
	}
}

// knownFailures reads known_failures.txt: "suite/check  reason" per line,
// # comments.
func knownFailures(t *testing.T) map[string]string {
	data, err := os.ReadFile("known_failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, why, _ := strings.Cut(line, " ")
		out[name] = strings.TrimSpace(why)
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// A goSuite is a suite of checks written in Go, for the clients whose
// driver is Go's own (pgxpool; Grafana's PostgreSQL data source runs on
// pgx).
type goSuite struct {
	name string
	run  func(ctx context.Context, c *checker, tg target)
}

var goSuites []goSuite

// checker runs one named check as a subtest.
type checker struct{ t *testing.T }

func (c *checker) check(name string, fn func(t *testing.T) error) {
	c.t.Run(name, func(t *testing.T) {
		if err := fn(t); err != nil {
			t.Error(err)
		}
	})
}
