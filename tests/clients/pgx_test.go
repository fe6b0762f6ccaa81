package clients

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

// Every type fvsql stores goes in as a bound parameter (binary where pgx
// can) and comes back as a binary result, unchanged.
func TestPgxTypesRoundTrip(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := conn.Exec(ctx, `CREATE STREAM everything (b BOOLEAN, i2 SMALLINT, i4 INTEGER, i8 BIGINT, f4 REAL,
		f8 DOUBLE PRECISION, n NUMERIC, t TEXT, v VARCHAR, bt BYTEA, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ,
		iv INTERVAL, j JSONB)`)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	num := pgtype.Numeric{Int: big.NewInt(12345), Exp: -2, Valid: true}
	iv := pgtype.Interval{Months: 1, Days: 2, Microseconds: 3_000_004, Valid: true}
	_, err = conn.Exec(ctx, `INSERT INTO everything VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		true, int16(-7), int32(123456), int64(-9007199254740993), float32(1.5), 2.25, num, "héllo", "vc",
		[]byte{0, 1, 255}, time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC), ts, ts, iv, map[string]any{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	// a second row of NULLs
	_, err = conn.Exec(ctx, `INSERT INTO everything (b) VALUES ($1)`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		b           bool
		i2          int16
		i4          int32
		i8          int64
		f4          float32
		f8          float64
		n           pgtype.Numeric
		txt, vc     string
		by          []byte
		d, tsv, tzv time.Time
		ivv         pgtype.Interval
		j           map[string]any
	)
	err = conn.QueryRow(ctx, `SELECT b, i2, i4, i8, f4, f8, n, t, v, bt, d, ts, tz, iv, j FROM everything WHERE i8 = $1`, int64(-9007199254740993)).
		Scan(&b, &i2, &i4, &i8, &f4, &f8, &n, &txt, &vc, &by, &d, &tsv, &tzv, &ivv, &j)
	if err != nil {
		t.Fatal(err)
	}
	if !b || i2 != -7 || i4 != 123456 || i8 != -9007199254740993 || f4 != 1.5 || f8 != 2.25 || txt != "héllo" || vc != "vc" {
		t.Errorf("scalars: %v %v %v %v %v %v %q %q", b, i2, i4, i8, f4, f8, txt, vc)
	}
	if n.Int.Cmp(big.NewInt(12345)) != 0 || n.Exp != -2 {
		t.Errorf("numeric: %v e%d", n.Int, n.Exp)
	}
	if string(by) != "\x00\x01\xff" {
		t.Errorf("bytea: %x", by)
	}
	if !d.Equal(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)) || !tsv.Equal(ts) || !tzv.Equal(ts) {
		t.Errorf("times: %v %v %v", d, tsv, tzv)
	}
	if ivv != iv {
		t.Errorf("interval: %+v", ivv)
	}
	if j["a"] != float64(1) {
		t.Errorf("jsonb: %v", j)
	}
	var nulls int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM everything WHERE i4 IS NULL AND n IS NULL AND ts IS NULL`).Scan(&nulls); err != nil || nulls != 1 {
		t.Errorf("NULL row: %d %v", nulls, err)
	}
}

// Parameters get their types from context; errors carry SQLSTATEs; a
// prepared statement runs many times; the simple protocol works too.
func TestPgxParametersAndErrors(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, `CREATE STREAM trades (sym TEXT, price DOUBLE PRECISION, qty BIGINT) WITH (partitions = 4, key = 'sym')`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := conn.Exec(ctx, `INSERT INTO trades VALUES ($1, $2, $3)`, []string{"ACME", "INIT"}[i%2], float64(i)+0.5, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT sym, count(*), sum(qty) FROM trades WHERE price > $1 GROUP BY sym ORDER BY sym`, 5.0)
	if err != nil {
		t.Fatal(err)
	}
	type agg struct {
		sym string
		n   int64
		s   pgtype.Numeric
	}
	var got []agg
	for rows.Next() {
		var a agg
		if err := rows.Scan(&a.sym, &a.n, &a.s); err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if rows.Err() != nil || len(got) != 2 || got[0].sym != "ACME" || got[0].n != 7 || got[1].n != 8 {
		t.Fatalf("aggregate: %+v %v", got, rows.Err())
	}
	if got[0].s.Int.Int64() != 6+8+10+12+14+16+18 {
		t.Errorf("sum: %v", got[0].s.Int)
	}
	// the simple protocol, same query
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM trades WHERE sym = $1`, pgx.QueryExecModeSimpleProtocol, "ACME").Scan(&n); err != nil || n != 10 {
		t.Errorf("simple protocol: %d %v", n, err)
	}
	for _, c := range []struct {
		sql  string
		code string
	}{
		{`SELECT * FROM nope`, "42P01"},
		{`SELECT nope FROM trades`, "42703"},
		{`SELEC 1`, "42601"},
		{`SELECT 1/0`, "22012"},
	} {
		_, err := conn.Exec(ctx, c.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != c.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", c.sql, err, c.code)
		}
	}
	// the connection still works after errors
	if err := conn.QueryRow(ctx, `SELECT version()`).Scan(new(string)); err != nil {
		t.Fatal(err)
	}
}

// LIMIT and OFFSET take parameters and expressions of them, evaluated per
// execution of one prepared statement (SQLAlchemy's psycopg dialect sends
// LIMIT $1::INTEGER OFFSET $2::INTEGER); NULL is no limit, a negative
// count 2201W.
func TestPgxLimitParams(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "CREATE STREAM lp (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO lp SELECT * FROM generate_series(1, 10)"); err != nil {
		t.Fatal(err)
	}
	ids := func(q string, args ...any) []int64 {
		t.Helper()
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", q, args, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatalf("%s %v: %v", q, args, err)
		}
		return got
	}
	const q = "SELECT id FROM lp ORDER BY id DESC LIMIT $1::INTEGER OFFSET $2::INTEGER"
	for _, c := range []struct {
		lim, off any
		want     string
	}{
		{3, 0, "[10 9 8]"}, {2, 7, "[3 2]"}, {5, 8, "[2 1]"}, {nil, 8, "[2 1]"}, {0, 0, "[]"}, {4, nil, "[10 9 8 7]"},
	} {
		if got := fmt.Sprint(ids(q, c.lim, c.off)); got != c.want {
			t.Errorf("LIMIT %v OFFSET %v: %s, want %s", c.lim, c.off, got, c.want)
		}
	}
	// without ORDER BY: how many rows, not which
	if got := ids("SELECT id FROM lp LIMIT $1 + 1", 2); len(got) != 3 {
		t.Errorf("LIMIT $1 + 1 with 2: %d rows", len(got))
	}
	_, err := conn.Exec(ctx, q, -1, 0)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "2201W" {
		t.Errorf("LIMIT -1: %v, want 2201W", err)
	}
}

// A name that is not a constant cast to regclass is looked up when the
// query runs (SQLAlchemy sends CAST($1 AS REGCLASS), Metabase casts
// format('%I.%I', …)); a name that names nothing is 42P01, or NULL for
// to_regclass.
func TestPgxRegclassParam(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "CREATE STREAM rc (id BIGINT)"); err != nil {
		t.Fatal(err)
	}
	var want, got, byCol uint32
	if err := conn.QueryRow(ctx, "SELECT oid FROM pg_class WHERE relname = 'rc'").Scan(&want); err != nil || want == 0 {
		t.Fatalf("rc's oid: %d %v", want, err)
	}
	if err := conn.QueryRow(ctx, "SELECT CAST($1 AS regclass)::oid", "public.rc").Scan(&got); err != nil || got != want {
		t.Errorf("CAST($1 AS regclass) of public.rc: %d %v, want %d", got, err, want)
	}
	if err := conn.QueryRow(ctx, "SELECT CAST(relname::text AS regclass)::oid FROM pg_class WHERE relname = 'rc'").Scan(&byCol); err != nil || byCol != want {
		t.Errorf("a column cast to regclass: %d %v, want %d", byCol, err, want)
	}
	var pgClass uint32
	if err := conn.QueryRow(ctx, "SELECT CAST($1 AS regclass)::oid", "pg_catalog.pg_class").Scan(&pgClass); err != nil || pgClass != 1259 {
		t.Errorf("pg_catalog.pg_class: %d %v, want 1259", pgClass, err)
	}
	_, err := conn.Exec(ctx, "SELECT CAST($1 AS regclass)", "nosuch")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Errorf("nosuch: %v, want 42P01", err)
	}
	var isNull bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NULL", "nosuch").Scan(&isNull); err != nil || !isNull {
		t.Errorf("to_regclass(nosuch): %v %v", isNull, err)
	}
}

// pg_sleep waits, and ends with the query: at statement_timeout (57014)
// or a cancel request (57014), the connection usable after both.
func TestPgxPgSleep(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := conn.Exec(ctx, "SELECT pg_sleep(0.2)"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("pg_sleep(0.2) returned after %v", d)
	}
	code := func(err error) string {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return pgErr.Code
		}
		return fmt.Sprint(err)
	}
	if _, err := conn.Exec(ctx, "SET statement_timeout = '100ms'"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err := conn.Exec(ctx, "SELECT pg_sleep(30)")
	if code(err) != "57014" || time.Since(start) > 10*time.Second {
		t.Errorf("pg_sleep(30) past statement_timeout: %v after %v, want 57014 at once", err, time.Since(start))
	}
	if _, err := conn.Exec(ctx, "RESET statement_timeout"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = conn.PgConn().CancelRequest(ctx)
	}()
	start = time.Now()
	_, err = conn.Exec(ctx, "SELECT pg_sleep(30)")
	if code(err) != "57014" || time.Since(start) > 10*time.Second {
		t.Errorf("pg_sleep(30) cancelled: %v after %v, want 57014", err, time.Since(start))
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("after the cancel: %d %v", one, err)
	}
}
