package psql

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

// psqlPath is the psql on PATH; without one the test fails in CI and is
// skipped elsewhere.
func psqlPath(t *testing.T) string {
	t.Helper()
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("psql is not installed")
		}
		t.Skip("psql is not installed")
	}
	return psql
}

// server starts fvsql with a stream, a materialized view over it and a
// sink, and returns a function running one psql meta-command.
func server(t *testing.T) func(cmd string) string {
	psql := psqlPath(t)
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, stmt := range []string{
		`CREATE STREAM trades (sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP,
			WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH (partitions = 4, key = 'sym')`,
		`CREATE MATERIALIZED VIEW per_sym AS SELECT sym, count(*) AS n, max(price) AS top FROM trades GROUP BY sym`,
		`CREATE SINK big_trades AS SELECT sym, price FROM trades WHERE price > 100`,
		`CREATE FUNCTION add2(a BIGINT, b BIGINT) RETURNS BIGINT LANGUAGE wasm AS decode('AGFzbQEAAAABBwFgAn5+AX4DAgEABwcBA2FkZAAACgkBBwAgACABfAs=', 'base64') WITH (export = 'add')`,
		`CREATE FUNCTION net(price NUMERIC) RETURNS NUMERIC LANGUAGE sql AS 'SELECT price * 0.908'`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	host, port, _ := strings.Cut(p.Addr(), ":")
	return func(cmd string) string {
		t.Helper()
		c := exec.Command(psql, "-h", host, "-p", port, "-U", "fvsql", "-d", "fvsql", "-X", "-v", "ON_ERROR_STOP=1", "-c", cmd)
		c.Env = append(os.Environ(), "PAGER=", "PSQL_PAGER=", "COLUMNS=200")
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		if err != nil || strings.Contains(errOut.String(), "ERROR") || strings.Contains(out.String(), "ERROR") {
			t.Errorf("psql %s failed: %v\nstderr:\n%s\nstdout:\n%s", cmd, err, errOut.String(), out.String())
		}
		return out.String()
	}
}

// has checks that out holds every line fragment of want, each on one line
// (so "| sym | text" checks a column's row, not words anywhere).
func has(t *testing.T, cmd, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, w := range want {
		parts := strings.Split(w, "|")
		found := false
		for _, l := range lines {
			ok := true
			rest := l
			for _, part := range parts {
				i := strings.Index(rest, strings.TrimSpace(part))
				if i < 0 {
					ok = false
					break
				}
				rest = rest[i+len(strings.TrimSpace(part)):]
			}
			if ok {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: output lacks %q:\n%s", cmd, w, out)
		}
	}
}

func lacks(t *testing.T, cmd, out string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(out, u) {
			t.Errorf("%s: output has %q:\n%s", cmd, u, out)
		}
	}
}

func TestDescribeCommands(t *testing.T) {
	psql := server(t)
	for _, c := range []struct {
		cmd    string
		want   []string
		unwant []string
	}{
		{`\d`, []string{
			"List of relations",
			"public | trades | table | fvsql",
			"public | per_sym | materialized view | fvsql",
			"public | big_trades | foreign table | fvsql",
		}, nil},
		{`\d trades`, []string{
			`Table "public.trades"`,
			"Column | Type | Collation | Nullable | Default",
			"sym | text",
			"price | double precision",
			"qty | bigint",
			"ts | timestamp without time zone",
		}, []string{"_key", "_offset"}},
		{`\d+ trades`, []string{
			`Table "public.trades"`,
			"Storage",
			"sym | text | | | | extended",
			"qty | bigint | | | | plain",
			"Options: topic=trades, format=json, partitions=4, key=sym, watermark=ts - '00:00:04'",
		}, nil},
		{`\d per_sym`, []string{
			`Materialized view "public.per_sym"`,
			"sym | text", "n | bigint", "top | double precision",
		}, nil},
		{`\d+ per_sym`, []string{
			`Materialized view "public.per_sym"`,
			"View definition:",
			"SELECT sym, count(*) AS n, max(price) AS top FROM trades GROUP BY sym;",
		}, []string{"CREATE MATERIALIZED VIEW"}},
		{`\d big_trades`, []string{
			`Foreign table "public.big_trades"`,
			"sym | text", "price | double precision",
			"Server: kafka",
			"FDW options: (topic 'big_trades', format 'json', partitions '1', query 'SELECT sym, price FROM trades WHERE price > 100')",
		}, nil},
		{`\d pg_catalog.pg_class`, []string{
			`Table "pg_catalog.pg_class"`,
			"oid | oid", "relname | name", "relkind | \"char\"", "reloptions | text[]",
		}, nil},
		{`\d information_schema.columns`, []string{`View "information_schema.columns"`, "column_name | text"}, nil},
		{`\dt`, []string{"public | trades | table | fvsql"}, []string{"per_sym |", "big_trades |", "pg_class"}},
		{`\dt+`, []string{"public | trades | table | fvsql | permanent"}, nil},
		// fvsql_catalog is not on the search path: \dv lists its views
		// only when asked by schema, as psql does for PostgreSQL's
		{`\dv`, nil, []string{"trades", "fvsql_catalog"}},
		{`\dv fvsql_catalog.*`, []string{"fvsql_catalog | streams | view | fvsql"}, []string{"trades"}},
		{`\dm`, []string{"public | per_sym | materialized view | fvsql"}, []string{"trades |"}},
		{`\ds`, nil, nil},
		{`\dE`, []string{"public | big_trades | foreign table | fvsql"}, nil},
		{`\dn`, []string{"List of schemas", "public | fvsql", "fvsql_catalog | fvsql"}, nil},
		{`\dn+`, []string{"public | fvsql"}, nil},
		{`\l`, []string{"List of databases", "fvsql | fvsql | UTF8"}, nil},
		{`\l+`, []string{"fvsql | fvsql | UTF8"}, nil},
		{`\du`, []string{"List of roles", "fvsql | Superuser"}, nil},
		{`\dT`, []string{"List of data types", "Schema | Name | Description"}, nil},
		{`\dTS`, []string{"pg_catalog | bigint", "pg_catalog | timestamp with time zone", "pg_catalog | jsonb"}, []string{"integer[]"}},
		{`\df`, []string{"List of functions", "Schema | Name | Result data type | Argument data types | Type",
			"public | add2 | bigint | a bigint, b bigint | func", "public | net | numeric | price numeric | func"}, []string{"array_to_string"}},
		{`\df+ net`, []string{"public | net | numeric | price numeric | func", "sql", "SELECT price * 0.908"}, nil},
		{`\sf net`, []string{"CREATE OR REPLACE FUNCTION public.net(price numeric)", "RETURNS numeric", "LANGUAGE sql", "SELECT price * 0.908"}, nil},
		{`\dfS array_to_string`, []string{"pg_catalog | array_to_string | text | anyarray, text | func"}, nil},
		{`\dfS generate_series`, []string{"pg_catalog | generate_series | SETOF integer | integer, integer | func"}, nil},
		{`\dfS max`, []string{"pg_catalog | max | bigint | bigint | agg"}, nil},
		{`\des`, []string{"kafka | fvsql | fvsql"}, nil},
		{`\dp`, []string{"public | trades | table"}, nil},
		{`\db`, []string{"pg_default | fvsql"}, nil},
		{`\dx`, []string{"List of installed extensions"}, nil},
		{`\di`, nil, nil},
	} {
		out := psql(c.cmd)
		has(t, c.cmd, out, c.want...)
		lacks(t, c.cmd, out, c.unwant...)
	}
}

// TestArraysInPsql runs array queries through psql's simple protocol.
func TestArraysInPsql(t *testing.T) {
	psql := server(t)
	out := psql(`SELECT ARRAY[1, 2] || 3 AS a, 'b' = ANY ('{a,b}') AS any, (ARRAY['x', 'y z'])[2] AS second,
		array_to_string(ARRAY(SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1), ',') AS rels`)
	has(t, "arrays", out, "{1,2,3} | t | y z | big_trades,big_trades_errors,per_sym,per_sym_changes,per_sym_errors,trades")
}

// TestDatabaseNames: psql logs in to fvsql's one database, to "postgres"
// and, naming none, to the user's name (libpq's default); a misspelt name
// is refused at login with PostgreSQL's FATAL 3D000 and a hint, not taken
// for the one database.
func TestDatabaseNames(t *testing.T) {
	psql := psqlPath(t)
	p := fvsqltest.Start(t, fvsqltest.Config{})
	p.Connect(t).Close(context.Background()) // up
	host, port, _ := strings.Cut(p.Addr(), ":")
	run := func(user string, db ...string) (string, error) {
		args := []string{"-h", host, "-p", port, "-U", user, "-X", "-At", "-c", "SELECT current_database()"}
		if len(db) > 0 {
			args = append(args, "-d", db[0])
		}
		c := exec.Command(psql, args...)
		c.Env = append(os.Environ(), "PGDATABASE=", "PGCONNECT_TIMEOUT=10")
		out, err := c.CombinedOutput()
		return string(out), err
	}
	for _, tc := range []struct{ user, db string }{{"fvsql", "fvsql"}, {"fvsql", "postgres"}, {"alice", ""}} {
		var out string
		var err error
		if tc.db == "" {
			out, err = run(tc.user)
		} else {
			out, err = run(tc.user, tc.db)
		}
		if err != nil || strings.TrimSpace(out) != "fvsql" {
			t.Errorf("user %s, database %q: %v\n%s", tc.user, tc.db, err, out)
		}
	}
	out, err := run("fvsql", "fvsq")
	if err == nil || !strings.Contains(out, `FATAL:  database "fvsq" does not exist`) || !strings.Contains(out, `HINT:  fvsql serves one database, "fvsql"`) {
		t.Errorf("a misspelt database: %v\n%s", err, out)
	}
}
