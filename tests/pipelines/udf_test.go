package pipelines

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fvsql/fvsql/udf/wasmgen"
)

// TestUserFunctions: wasm and sql functions end to end, on two fvsql
// processes. Modules come from FV_TRANSFORMS_DIR (ref:NAME), from the
// statement (decode('…', 'base64')) and from a bytea parameter ($1, as a
// driver ships a file). Bounded queries, a stream and a view call them;
// a trap is a poison row in <name>_errors naming the function and the
// stream goes on; a call over --udf-call-timeout likewise. The second
// process computes with the functions the first created, and again after
// its data directory is wiped (the module's bytes come back from the
// catalog log). CREATE OR REPLACE swaps a running pipeline's module
// between two epochs: each partition's rows switch from the old result
// to the new once, never back. DROP FUNCTION is refused while a
// pipeline calls the function.
func TestUserFunctions(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		refs := t.TempDir()
		if err := os.WriteFile(filepath.Join(refs, "lucky.wasm"), wasmgen.Check(), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"--transforms-dir", refs, "--udf-call-timeout", "200ms"}
		a := c.start(t, "a", args...)
		ca := a.Connect(t) // a runs the embedded broker b connects to
		b := c.start(t, "b", args...)
		cb := b.Connect(t)

		exec(t, ca, "CREATE FUNCTION lucky(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'ref:lucky' WITH (export = 'check')")
		exec(t, ca, fmt.Sprintf("CREATE FUNCTION add2(a BIGINT, b BIGINT) RETURNS BIGINT LANGUAGE wasm AS decode('%s', 'base64') WITH (export = 'add')",
			base64.StdEncoding.EncodeToString(wasmgen.Add())))
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		if _, err := ca.Exec(ctx, "CREATE FUNCTION shout(s TEXT) RETURNS TEXT LANGUAGE wasm AS $1 WITH (export = 'upper')", wasmgen.Upper()); err != nil {
			t.Fatalf("CREATE FUNCTION … AS $1 with the module as a bytea parameter: %v", err)
		}
		exec(t, ca, "CREATE FUNCTION net(price NUMERIC) RETURNS NUMERIC LANGUAGE sql AS 'SELECT price * 0.908'")
		exec(t, ca, "CREATE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS decode('"+base64.StdEncoding.EncodeToString(wasmgen.Scale(1))+"', 'base64')")

		check := func(conn *pgx.Conn, q, want string) {
			t.Helper()
			if got := queryStrings(t, conn, q); got != want {
				t.Errorf("%s = %q, want %q", q, got, want)
			}
		}
		check(ca, "SELECT add2(40, 2) || ' ' || shout('fvsql, wasm') || ' ' || net(100) || ' ' || lucky(5)", "42 FVSQL, WASM 90.800 5")
		check(cb, "SELECT add2(40, 2) || ' ' || shout('fvsql, wasm') || ' ' || net(100) || ' ' || lucky(5)", "42 FVSQL, WASM 90.800 5")
		check(cb, "SELECT string_agg(p.proname || ':' || l.lanname, ',' ORDER BY p.proname) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.pronamespace = 2200",
			"add2:wasm,f:wasm,lucky:wasm,net:sql,shout:wasm")
		wantErr(t, ca, "SELECT lucky(13)", "38000", "function lucky")
		wantErr(t, ca, "CREATE FUNCTION add2(a BIGINT, b BIGINT) RETURNS BIGINT LANGUAGE sql AS 'SELECT a'", "42723", "already exists")
		wantErr(t, ca, "CREATE FUNCTION upper(s TEXT) RETURNS TEXT LANGUAGE sql AS 'SELECT s'", "42723", "built in")
		wantErr(t, ca, "CREATE FUNCTION g(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS 'ref:../escape'", "22023", "without directories")
		wantErr(t, ca, "CREATE FUNCTION g(x TEXT) RETURNS BIGINT LANGUAGE wasm AS 'ref:lucky' WITH (export = 'check')", "42P13", "does not take")

		exec(t, ca, "CREATE STREAM uev (id BIGINT, v BIGINT, name TEXT) WITH (partitions = 3)")
		exec(t, ca, "CREATE STREAM uout AS SELECT id, lucky(id) AS l, add2(id, v) AS s, shout(name) AS up, f(id) AS fx FROM uev WHERE net(v) > 0")
		exec(t, ca, "CREATE MATERIALIZED VIEW uagg AS SELECT shout(name) AS up, count(*) AS n, sum(add2(id, v)) AS s FROM uev WHERE lucky(id) >= 0 GROUP BY 1")
		insert := func(from, to int) {
			var vals []string
			for i := from; i < to; i++ {
				vals = append(vals, fmt.Sprintf("(%d, %d, 'n%d')", i, i%4, i%3))
			}
			exec(t, ca, "INSERT INTO uev VALUES "+strings.Join(vals, ", "))
		}
		insert(0, 30) // 7 spins past the time limit, 13 traps; v = 0 rows are filtered
		flush(t, a, ca)
		// rows with v > 0, except the two poison ones
		want := 0
		for i := 0; i < 30; i++ {
			if i%4 != 0 && i != 7 && i != 13 {
				want++
			}
		}
		check(ca, "SELECT count(*) FROM uout", fmt.Sprint(want))
		check(ca, "SELECT count(*) FROM uout WHERE s = id + id % 4 AND up = 'N' || id % 3 AND l = id AND fx = id", fmt.Sprint(want))
		reasons := queryStrings(t, ca, "SELECT string_agg(reason, ' | ' ORDER BY reason) FROM uout_errors")
		if !strings.Contains(reasons, "function lucky: wasm error: unreachable: unlucky number") || !strings.Contains(reasons, "function lucky: call exceeded the time limit") {
			t.Errorf("uout_errors: %q, want the trap and the time limit, each naming the function", reasons)
		}
		// the view: 28 rows (7 and 13 set aside), on both processes
		wantAgg := map[string][2]int{}
		for i := 0; i < 30; i++ {
			if i == 7 || i == 13 {
				continue
			}
			k := fmt.Sprintf("N%d", i%3)
			g := wantAgg[k]
			wantAgg[k] = [2]int{g[0] + 1, g[1] + i + i%4}
		}
		wantView := fmt.Sprintf("N0:%d:%d N1:%d:%d N2:%d:%d", wantAgg["N0"][0], wantAgg["N0"][1], wantAgg["N1"][0], wantAgg["N1"][1], wantAgg["N2"][0], wantAgg["N2"][1])
		check(ca, "SELECT up || ':' || n || ':' || s FROM uagg ORDER BY up", wantView)
		flush(t, b, cb)
		check(cb, "SELECT up || ':' || n || ':' || s FROM uagg ORDER BY up", wantView)

		wantErr(t, ca, "DROP FUNCTION lucky", "2BP01", "calls it")
		wantErr(t, ca, "DROP FUNCTION net", "2BP01", "calls it")

		// CREATE OR REPLACE: f becomes x * 10 between two epochs.
		exec(t, ca, "CREATE OR REPLACE FUNCTION f(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS decode('"+base64.StdEncoding.EncodeToString(wasmgen.Scale(10))+"', 'base64')")
		check(ca, "SELECT f(3)", "30")
		// the second process learns of the replacement from the catalog
		// topic it tails: within seconds, not at once
		replaced := func(show string) bool {
			return strings.Contains(show, "f|x bigint|bigint|wasm|(bytes)|") && strings.HasSuffix(strings.Split(show, "\n")[1], "|2")
		}
		show := showFunctions(t, cb)
		for deadline := time.Now().Add(15 * time.Second); !replaced(show) && time.Now().Before(deadline); show = showFunctions(t, cb) {
			time.Sleep(pollInterval)
		}
		if !replaced(show) {
			t.Errorf("SHOW FUNCTIONS on the second process 15 s after the replacement:\n%s", show)
		}
		insert(30, 60)
		time.Sleep(time.Second) // several epochs: every worker has moved to the new version
		insert(60, 90)
		flush(t, a, ca)
		check(ca, "SELECT count(*) FROM uout WHERE id >= 60 AND fx <> id * 10", "0")
		check(ca, "SELECT count(*) FROM uout WHERE id >= 30 AND fx <> id AND fx <> id * 10", "0")
		// per partition, in offset order, the result switches once
		rows := queryStrings(t, ca, "SELECT string_agg(CASE WHEN fx = id THEN 'o' ELSE 'n' END, '' ORDER BY _offset) FROM uout WHERE id >= 30 GROUP BY _partition")
		for _, seq := range strings.Fields(rows) {
			if strings.Contains(seq, "no") {
				t.Errorf("a partition went back to the old version after the new one: %s", seq)
			}
		}

		// The second process, wiped, gets the functions back from Kafka.
		b.Stop(t)
		b.WipeDataDir(t)
		b.Restart(t)
		cb = b.Connect(t)
		check(cb, "SELECT add2(1, 2) || shout('x') || f(2)", "3X20")

		exec(t, ca, "DROP STREAM uout")
		exec(t, ca, "DROP MATERIALIZED VIEW uagg")
		exec(t, ca, "DROP FUNCTION lucky, add2(bigint, bigint), shout, net, f")
		check(ca, "SELECT count(*) FROM pg_proc WHERE pronamespace = 2200", "0")
		wantErr(t, ca, "DROP FUNCTION lucky", "42883", "does not exist")
		exec(t, ca, "DROP FUNCTION IF EXISTS lucky")
	})
}

// wantErr runs q and fails unless it fails with code and a message
// holding says.
func wantErr(t *testing.T, conn *pgx.Conn, q, code, says string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	_, err := conn.Exec(ctx, q)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message+" "+pe.Detail+" "+pe.Hint, says) {
		t.Errorf("%s: %v, want SQLSTATE %s saying %q", q, err, code, says)
	}
}

// showFunctions returns SHOW FUNCTIONS as lines of |-separated values,
// ordered by name.
func showFunctions(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SHOW FUNCTIONS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v != nil {
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return strings.Join(out, "\n")
}

// TestUserFunctionGoModule: the README's example module, written in Go
// (examples/udf/risk) and built here with the Go toolchain for
// GOOS=wasip1: a module with WASI imports and Go's runtime. Its scalar
// function and its table function run in bounded queries and in a
// stream; the table function's rows come out of a LATERAL join.
func TestUserFunctionGoModule(t *testing.T) {
	goBin, err := osexec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example module")
	}
	dir := t.TempDir()
	build := osexec.Command(goBin, "build", "-buildmode=c-shared", "-o", filepath.Join(dir, "risk.wasm"), "./examples/udf/risk")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/udf/risk for wasip1: %v\n%s", err, out)
	}
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "go", "--transforms-dir", dir)
		conn := srv.Connect(t)
		exec(t, conn, "CREATE FUNCTION risk(amount DOUBLE PRECISION, country TEXT) RETURNS DOUBLE PRECISION LANGUAGE wasm AS 'ref:risk'")
		exec(t, conn, "CREATE FUNCTION tags(payload JSONB) RETURNS TABLE (id BIGINT, tag TEXT) LANGUAGE wasm AS 'ref:risk' WITH (export = 'tags')")
		if got := queryStrings(t, conn, "SELECT risk(1000, 'ng') || ' ' || risk(1000, 'DE')"); got != "3 1" {
			t.Errorf("risk: %s, want 3 1", got)
		}
		exec(t, conn, "CREATE STREAM pay (id BIGINT, amount DOUBLE PRECISION, country TEXT, payload JSONB) WITH (partitions = 2)")
		exec(t, conn, "CREATE STREAM flagged AS SELECT p.id, risk(p.amount, p.country) AS r, t.tag FROM pay p, LATERAL tags(p.payload) t WHERE risk(p.amount, p.country) > 0.5")
		exec(t, conn, `INSERT INTO pay VALUES (1, 2000, 'RU', '{"items":[{"id":1,"tag":"a"},{"id":2}]}'), (2, 100, 'RU', '{"items":[{"id":3,"tag":"b"}]}'),
			(3, 900, 'DE', '{"items":[{"id":4,"tag":"c"},{"id":5,"tag":"d"}]}'), (4, 5000, 'DE', '{}')`)
		flush(t, srv, conn)
		if got := queryStrings(t, conn, "SELECT string_agg(id || ':' || r || ':' || tag, ' ' ORDER BY id, tag) FROM flagged"); got != "1:6:a 3:0.9:c 3:0.9:d" {
			t.Errorf("flagged: %s", got)
		}
	})
}
