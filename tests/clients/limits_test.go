package clients

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// No client can exhaust the server (issue 16): a bounded query streams
// its rows, stops when cancelled, timed out or its connection is
// terminated, and holds at most --query-memory-mb of rows.

// seedPairs makes streams a and b of n rows each (x = 1…n).
func seedPairs(t *testing.T, ctx context.Context, conn *pgx.Conn, n int) {
	t.Helper()
	for _, s := range []string{"a", "b"} {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE STREAM %s (x BIGINT, pad TEXT) WITH (partitions = 1)`, s)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s SELECT g, 'row ' || g FROM generate_series(1, %d) AS g`, s, n)); err != nil {
			t.Fatal(err)
		}
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("got %v, want SQLSTATE %s", err, code)
	}
}

// A 10k x 10k cross join (10^8 rows) streams: its first rows arrive at
// once, the server's memory stays bounded while the client reads, and a
// CancelRequest ends it with 57014 within seconds. Before, the join built
// each left batch's whole output (10^8 rows) before sending one, growing
// by 250 MB/s.
func TestCrossJoinStreamsAndCancels(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seedPairs(t, ctx, conn, 10000)
	base, err := p.RSS()
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	rows, err := conn.Query(ctx, `SELECT a.x, b.x, a.pad FROM a CROSS JOIN b`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// 200k rows are 0.2% of the join: they arrive only if rows stream.
	var n int
	var peak int64
	for n < 200000 && rows.Next() {
		n++
		if n%20000 == 0 {
			if rss, err := p.RSS(); err == nil && rss > peak {
				peak = rss
			}
		}
	}
	if n < 200000 {
		t.Fatalf("only %d rows before the end: %v", n, rows.Err())
	}
	t.Logf("first 200k rows of 10^8 after %v; server RSS %d MB at start, peak %d MB while reading", time.Since(start), base>>20, peak>>20)
	if limit := base + 512<<20; peak > limit {
		t.Errorf("server RSS grew from %d MB to %d MB while streaming a join", base>>20, peak>>20)
	}

	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	asked := time.Now()
	if err := conn.PgConn().CancelRequest(cctx); err != nil {
		t.Fatal(err)
	}
	for rows.Next() { // the rows already on their way, then the error
	}
	took := time.Since(asked)
	wantCode(t, rows.Err(), "57014")
	t.Logf("57014 %v after the CancelRequest", took)
	if took > 20*time.Second {
		t.Errorf("the cancelled join took %v to end", took)
	}
	// the connection goes on
	var one int
	if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the cancel: %v", err)
	}
}

// statement_timeout: SET with units and plain milliseconds, SHOW in
// PostgreSQL's spelling, startup options (-c), and a query over it ends
// with 57014 while one within it runs.
func TestStatementTimeout(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seedPairs(t, ctx, conn, 10000)

	if _, err := conn.Exec(ctx, `SET statement_timeout = 500`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var count int64
	// 10^8 pairs counted: far more than half a second
	err := conn.QueryRow(ctx, `SELECT count(*) FROM a, b WHERE a.x + b.x > 0`).Scan(&count)
	wantCode(t, err, "57014")
	if took := time.Since(start); took < 500*time.Millisecond || took > 30*time.Second {
		t.Errorf("statement_timeout of 500ms ended the query after %v", took)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM a`).Scan(&count); err != nil || count != 10000 {
		t.Fatalf("a query within the timeout: %d, %v", count, err)
	}
	if _, err := conn.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}

	// startup options, as PGOPTIONS='-c statement_timeout=2s' sends them
	cfg, err := pgx.ParseConfig(p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["options"] = "-c statement_timeout=2s"
	c2, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	var shown string
	if err := c2.QueryRow(ctx, `SHOW statement_timeout`).Scan(&shown); err != nil || shown != "2s" {
		t.Fatalf("SHOW statement_timeout after -c statement_timeout=2s: %q, %v", shown, err)
	}
}

// pg_stat_activity shows another connection's running query;
// pg_cancel_backend cancels it (57014) and pg_terminate_backend closes
// its connection with FATAL 57P01.
func TestCancelAndTerminateBackend(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	admin := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seedPairs(t, ctx, admin, 3000)
	victim := p.Connect(t)
	vpid := int32(victim.PgConn().PID())

	var mine int32
	if err := admin.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&mine); err != nil || mine != int32(admin.PgConn().PID()) {
		t.Fatalf("pg_backend_pid() = %d, %v; BackendKeyData has %d", mine, err, admin.PgConn().PID())
	}

	const long = `SELECT count(*) FROM a, b, a c` // 2.7*10^10 triples: runs until stopped
	run := func() chan error {
		done := make(chan error, 1)
		go func() {
			var n int64
			done <- victim.QueryRow(ctx, long).Scan(&n)
		}()
		return done
	}
	// waitActive waits until pg_stat_activity shows the victim running long.
	waitActive := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var state, query, app string
			var start time.Time
			err := admin.QueryRow(ctx, `SELECT state, query, application_name, query_start FROM pg_stat_activity WHERE pid = $1`, vpid).Scan(&state, &query, &app, &start)
			if err == nil && state == "active" && query == long {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pg_stat_activity never showed the victim's query: %q %q %v", state, query, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	done := run()
	waitActive()
	var ok bool
	if err := admin.QueryRow(ctx, `SELECT pg_cancel_backend($1::int4)`, vpid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_cancel_backend: %v, %v", ok, err)
	}
	select {
	case err := <-done:
		wantCode(t, err, "57014")
	case <-time.After(30 * time.Second):
		t.Fatal("pg_cancel_backend did not stop the query")
	}
	// the victim's connection goes on, idle
	var one int
	if err := victim.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		t.Fatal(err)
	}

	done = run()
	waitActive()
	if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1`, vpid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v, %v", ok, err)
	}
	select {
	case err := <-done:
		wantCode(t, err, "57P01")
	case <-time.After(30 * time.Second):
		t.Fatal("pg_terminate_backend did not end the connection")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, vpid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the terminated connection is still in pg_stat_activity")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// an unknown pid is no error
	if err := admin.QueryRow(ctx, `SELECT pg_cancel_backend(1)`).Scan(&ok); err != nil || ok {
		t.Fatalf("pg_cancel_backend(1): %v, %v", ok, err)
	}
}

// --query-memory-mb: a join whose build side and a sort whose rows pass
// the limit fail with 53200 (DETAIL naming the flag); the same queries
// under a larger limit succeed.
func TestQueryMemoryLimit(t *testing.T) {
	queries := []string{
		`SELECT count(*) FROM a JOIN b ON a.x = b.x`,
		`SELECT x, pad FROM a ORDER BY pad DESC LIMIT 5 OFFSET 19990`,
		`SELECT pad, count(*) FROM a GROUP BY pad ORDER BY 2 LIMIT 1`,
	}
	for _, mb := range []string{"1", "64"} {
		p := fvsqltest.Start(t, fvsqltest.Config{Args: []string{"--query-memory-mb", mb}})
		conn := p.Connect(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		seedPairs(t, ctx, conn, 20000)
		for _, q := range queries {
			rows, err := conn.Query(ctx, q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if mb == "1" {
				wantCode(t, err, "53200")
				var pe *pgconn.PgError
				if errors.As(err, &pe) && !strings.Contains(pe.Detail, "--query-memory-mb") {
					t.Errorf("%s: DETAIL %q does not name the flag", q, pe.Detail)
				}
			} else if err != nil {
				t.Errorf("%s under 64 MB: %v", q, err)
			}
		}
		// a streamed join holds only its build side: it runs under 1 MB too
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM a, (SELECT x FROM b WHERE x <= 100) AS c`).Scan(&n); err != nil || n != 2000000 {
			t.Errorf("cross join with a small side under %s MB: %d, %v", mb, n, err)
		}
		cancel()
		p.Stop(t)
	}
}
