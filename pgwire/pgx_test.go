package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
)

var allModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement,
	pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec,
	pgx.QueryExecModeSimpleProtocol,
}

// typeValues are values of every type, as pgx sends and scans them.
type typeValues struct {
	Bool        bool
	Int2        int16
	Int4        int32
	Int8        int64
	Float4      float32
	Float8      float64
	Numeric     pgtype.Numeric
	Text        string
	Varchar     string
	Bytea       []byte
	Date        pgtype.Date
	Timestamp   time.Time
	TimestampTZ time.Time
	Interval    pgtype.Interval
	JSONB       string
}

func (v *typeValues) ptrs() []any {
	return []any{&v.Bool, &v.Int2, &v.Int4, &v.Int8, &v.Float4, &v.Float8, &v.Numeric, &v.Text, &v.Varchar,
		&v.Bytea, &v.Date, &v.Timestamp, &v.TimestampTZ, &v.Interval, &v.JSONB}
}

func (v *typeValues) args() []any {
	return []any{v.Bool, v.Int2, v.Int4, v.Int8, v.Float4, v.Float8, v.Numeric, v.Text, v.Varchar,
		v.Bytea, v.Date, v.Timestamp, v.TimestampTZ, v.Interval, v.JSONB}
}

func numeric(t testing.TB, s string) pgtype.Numeric {
	var n pgtype.Numeric
	if err := n.Scan(s); err != nil {
		t.Fatal(err)
	}
	return n
}

func numericString(n pgtype.Numeric) string {
	v, _ := n.Value()
	return fmt.Sprint(v)
}

// sameValues compares exactly, numerics by their decimal value.
func sameValues(t testing.TB, got, want typeValues) {
	t.Helper()
	if numericString(got.Numeric) != numericString(want.Numeric) {
		t.Errorf("numeric: got %s, want %s", numericString(got.Numeric), numericString(want.Numeric))
	}
	got.Numeric, want.Numeric = pgtype.Numeric{}, pgtype.Numeric{}
	if !got.Timestamp.Equal(want.Timestamp) || !got.TimestampTZ.Equal(want.TimestampTZ) {
		t.Errorf("timestamps: got %v %v, want %v %v", got.Timestamp, got.TimestampTZ, want.Timestamp, want.TimestampTZ)
	}
	got.Timestamp, want.Timestamp, got.TimestampTZ, want.TimestampTZ = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !got.Date.Time.Equal(want.Date.Time) || got.Date.Valid != want.Date.Valid {
		t.Errorf("date: got %v, want %v", got.Date, want.Date)
	}
	got.Date, want.Date = pgtype.Date{}, pgtype.Date{}
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Errorf("values differ:\ngot  %#v\nwant %#v", got, want)
	}
}

const echoAllTypes = "SELECT $1::bool, $2::int2, $3::int4, $4::int8, $5::float4, $6::float8, $7::numeric, $8::text, " +
	"$9::varchar, $10::bytea, $11::date, $12::timestamp, $13::timestamptz, $14::interval, $15::jsonb"

func sampleValues(t testing.TB) []typeValues {
	return []typeValues{
		{
			Bool: true, Int2: -32768, Int4: 2147483647, Int8: -9223372036854775808,
			Float4: 1.5, Float8: -0.1, Numeric: numeric(t, "-1234567890.0123456789"),
			Text: "héllo\tworld 'quoted' \\ back", Varchar: "vc", Bytea: []byte{0, 1, 2, 0xff, '\'', '\\'},
			Date:        pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true},
			Timestamp:   time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC),
			TimestampTZ: time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC),
			Interval:    pgtype.Interval{Months: 14, Days: 3, Microseconds: 14706789000, Valid: true},
			JSONB:       `{"a": [1, 2.5, "x"], "b": null}`,
		},
		{
			Bool: false, Int2: 32767, Int4: -2147483648, Int8: 9223372036854775807,
			Float4: -3.25e-10, Float8: 1e300, Numeric: numeric(t, "0.00000001"),
			Text: "", Varchar: "ünïcødé ✓", Bytea: []byte{},
			Date:        pgtype.Date{Time: time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true},
			Timestamp:   time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
			TimestampTZ: time.Date(2038, 1, 19, 3, 14, 8, 0, time.UTC),
			Interval:    pgtype.Interval{Months: -1, Days: -2, Microseconds: -3, Valid: true},
			JSONB:       `[]`,
		},
		{
			Numeric:  numeric(t, "123456789012345678901234567890"),
			Date:     pgtype.Date{Time: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true},
			Bytea:    bytes.Repeat([]byte{0xab}, 10000),
			Text:     strings.Repeat("x", 100000),
			Interval: pgtype.Interval{Valid: true},
			JSONB:    `"just a string"`,
			Float8:   5e-324,
		},
	}
}

// TestPgxRoundTripAllTypes sends a value of every type as a parameter and
// reads it back, in every pgx execution mode: binary parameters and
// results in the prepared modes, text in Exec, literals and text results
// in the simple protocol.
func TestPgxRoundTripAllTypes(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	for _, mode := range allModes {
		for i, want := range sampleValues(t) {
			t.Run(fmt.Sprintf("%v/%d", mode, i), func(t *testing.T) {
				if mode == pgx.QueryExecModeExec && want.Date.Time.Year() == 1 {
					t.Skip("pgx's Exec mode sends dates in text")
				}
				var got typeValues
				args := append([]any{mode}, want.args()...)
				if err := conn.QueryRow(ctx, echoAllTypes, args...).Scan(got.ptrs()...); err != nil {
					t.Fatal(err)
				}
				sameValues(t, got, want)
			})
		}
		t.Run(fmt.Sprintf("%v/nulls", mode), func(t *testing.T) {
			args := []any{mode}
			dest := make([]any, 15)
			for i := range dest {
				args = append(args, nil)
				dest[i] = new(any)
			}
			if err := conn.QueryRow(ctx, echoAllTypes, args...).Scan(dest...); err != nil {
				t.Fatal(err)
			}
			for i, d := range dest {
				if *(d.(*any)) != nil {
					t.Errorf("column %d = %v, want NULL", i+1, *(d.(*any)))
				}
			}
		})
	}
}

// TestPgxDecodesTypes reads the server's own values of every type, binary
// and text.
func TestPgxDecodesTypes(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	want := typeValues{
		Bool: true, Int2: -32768, Int4: 2147483647, Int8: -9223372036854775808,
		Float4: 1.5, Float8: -0.1, Numeric: numeric(t, "-1234567890.0123456789"),
		Text: "héllo\tworld", Varchar: "vc", Bytea: []byte{0, 1, 0xff},
		Date:        pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true},
		Timestamp:   time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC),
		TimestampTZ: time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC),
		Interval:    pgtype.Interval{Months: 14, Days: 3, Microseconds: 4*3600e6 + 5*60e6 + 6789000, Valid: true},
		JSONB:       `{"a": [1, 2.5, "x"], "b": null}`,
	}
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			rows, err := conn.Query(testCtx(t), "TYPES", mode)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for _, fd := range rows.FieldDescriptions() {
				if mode == pgx.QueryExecModeSimpleProtocol && fd.Format != 0 {
					t.Errorf("simple protocol column %s in format %d", fd.Name, fd.Format)
				}
			}
			if !rows.Next() {
				t.Fatal("no row", rows.Err())
			}
			var got typeValues
			if err := rows.Scan(got.ptrs()...); err != nil {
				t.Fatal(err)
			}
			sameValues(t, got, want)
			if !rows.Next() {
				t.Fatal("no second row", rows.Err())
			}
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if v != nil {
					t.Errorf("column %d = %v, want NULL", i+1, v)
				}
			}
			if rows.Next() {
				t.Fatal("a third row")
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if tag := rows.CommandTag().String(); tag != "SELECT 2" {
				t.Errorf("tag = %q", tag)
			}
		})
	}
}

func TestPgxPreparedStatements(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	sd, err := conn.Prepare(ctx, "ps1", "SELECT $1::int8, $2::text")
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 2 || sd.ParamOIDs[0] != 20 || sd.ParamOIDs[1] != 25 || len(sd.Fields) != 2 {
		t.Fatalf("description = %+v", sd)
	}
	for i := int64(0); i < 3; i++ {
		var n int64
		var s string
		if err := conn.QueryRow(ctx, "ps1", i, fmt.Sprint("v", i)).Scan(&n, &s); err != nil || n != i || s != fmt.Sprint("v", i) {
			t.Fatalf("got %d %q %v", n, s, err)
		}
	}
	if _, err := conn.Prepare(ctx, "ps1", "SELECT $1::int8, $2::text"); err != nil {
		t.Fatalf("re-prepare of the same statement: %v", err) // pgx answers it from its cache
	}
	if err := conn.Deallocate(ctx, "ps1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prepare(ctx, "ps1", "SELECT $1::float8"); err != nil {
		t.Fatalf("prepare after deallocate: %v", err)
	}
	var f float64
	if err := conn.QueryRow(ctx, "ps1", 2.5).Scan(&f); err != nil || f != 2.5 {
		t.Fatalf("got %v %v", f, err)
	}
	// The same name twice at the protocol level is 42P05.
	_, err = conn.PgConn().Prepare(ctx, "ps1", "SELECT 1", nil)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != pgerror.DuplicatePreparedStatement.String() {
		t.Fatalf("duplicate prepare: %v", err)
	}
}

func TestPgconnExecParamsFormats(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	pc := conn.PgConn()
	sql := "SELECT $1::int8, $2::float8, $3::text"
	params := [][]byte{[]byte("42"), []byte("2.5"), []byte("hi")}
	for _, tc := range []struct {
		formats []int16
		want    [][]byte
	}{
		{nil, [][]byte{[]byte("42"), []byte("2.5"), []byte("hi")}},
		{[]int16{1}, [][]byte{{0, 0, 0, 0, 0, 0, 0, 42}, {0x40, 0x04, 0, 0, 0, 0, 0, 0}, []byte("hi")}},
		{[]int16{0, 1, 0}, [][]byte{[]byte("42"), {0x40, 0x04, 0, 0, 0, 0, 0, 0}, []byte("hi")}},
	} {
		res := pc.ExecParams(ctx, sql, params, nil, nil, tc.formats).Read()
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if len(res.Rows) != 1 || fmt.Sprint(res.Rows[0]) != fmt.Sprint(tc.want) {
			t.Errorf("formats %v: rows %v, want %v", tc.formats, res.Rows, tc.want)
		}
		for i, fd := range res.FieldDescriptions {
			if want := formatCode(tc.formats, i); fd.Format != want {
				t.Errorf("formats %v: column %d described as %d", tc.formats, i, fd.Format)
			}
		}
		if res.CommandTag.String() != "SELECT 1" {
			t.Errorf("tag %q", res.CommandTag)
		}
	}
	// Binary parameters.
	res := pc.ExecParams(ctx, "SELECT $1::int4", [][]byte{{0, 0, 1, 0}}, []uint32{23}, []int16{1}, nil).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "256" {
		t.Fatalf("binary param: %v %v", res.Rows, res.Err)
	}
}

func TestPgxErrors(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	for _, mode := range allModes {
		_, err := conn.Exec(ctx, "FAIL 23505", mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%v: %v", mode, err)
		}
		if pe.Code != "23505" || pe.Severity != "ERROR" || pe.SeverityUnlocalized != "ERROR" || pe.Message != "failed on purpose: 23505" ||
			pe.Detail != "some detail" || pe.Hint != "some hint" || pe.Position != 6 {
			t.Errorf("%v: %+v", mode, pe)
		}
		// Still usable.
		var n int64
		if err := conn.QueryRow(ctx, "SELECT 1", mode).Scan(&n, new(string)); err != nil || n != 1 {
			t.Fatalf("%v after error: %v", mode, err)
		}
	}
	_, err := conn.Exec(ctx, "PANIC")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != pgerror.Internal.String() {
		t.Fatalf("panic: %v", err)
	}
	_, err = conn.Exec(ctx, "BOGUS statement")
	if !errors.As(err, &pe) || pe.Code != pgerror.SyntaxError.String() || pe.Position != 1 {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestPgxTransactionStatus(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	pc := conn.PgConn()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := pc.TxStatus(); s != 'T' {
		t.Errorf("after BEGIN: %c", s)
	}
	if _, err := tx.Exec(ctx, "FAIL 22012"); err == nil {
		t.Fatal("no error")
	}
	if s := pc.TxStatus(); s != 'E' {
		t.Errorf("after error: %c", s)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if s := pc.TxStatus(); s != 'I' {
		t.Errorf("after ROLLBACK: %c", s)
	}
}

func TestPgxNoticesAndParameterStatus(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	var mu sync.Mutex
	var notices []string
	cfg, err := pgx.ParseConfig(connString(addr, "fvsql", "application_name=tester"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Severity+" "+n.Code+" "+n.Message)
		mu.Unlock()
	}
	ctx := testCtx(t)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if v := conn.PgConn().ParameterStatus("application_name"); v != "tester" {
		t.Errorf("application_name = %q", v)
	}
	if _, err := conn.Exec(ctx, "NOTICE"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(notices) != 1 || notices[0] != "NOTICE 00000 hello notice" {
		t.Errorf("notices = %q", notices)
	}
	mu.Unlock()
	if _, err := conn.Exec(ctx, "SET application_name = other"); err != nil {
		t.Fatal(err)
	}
	if v := conn.PgConn().ParameterStatus("application_name"); v != "other" {
		t.Errorf("application_name after SET = %q", v)
	}
}

func TestPgxCancelAndTimeout(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	// pgx configured to answer a context's end with a CancelRequest: the
	// query fails with 57014 and the connection stays usable.
	cfg, err := pgx.ParseConfig(connString(addr, "fvsql", ""))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, CancelRequestDelay: 0, DeadlineDelay: testTimeout}
	}
	conn, err := pgx.ConnectConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = conn.Exec(ctx, "SLEEP")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != pgerror.QueryCanceled.String() {
		t.Fatalf("want 57014, got %v", err)
	}
	<-h.sleepStarted
	if cause := <-h.sleepEnded; !errors.Is(cause, errQueryCanceled) {
		t.Errorf("cause = %v", cause)
	}
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n, new(string)); err != nil || n != 1 {
		t.Fatalf("after cancel: %v", err)
	}
	// The explicit API, on an extended-protocol query.
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(context.Background(), "STREAM")
		done <- err
	}()
	<-h.sleepStarted
	if err := conn.PgConn().CancelRequest(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.As(err, &pe) || pe.Code != pgerror.QueryCanceled.String() {
		t.Fatalf("want 57014, got %v", err)
	}
	<-h.sleepEnded
	// pgx's default handling (a deadline on the socket) ends the
	// connection; the server notices and cancels the query.
	plain := connectPgx(t, addr, "")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := plain.Exec(ctx2, "SLEEP"); err == nil {
		t.Fatal("no error")
	}
	select {
	case <-h.sleepEnded:
	case <-time.After(testTimeout):
		t.Fatal("query not cancelled")
	}
}

func TestPgxCopyTo(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	var buf bytes.Buffer
	tag, err := conn.PgConn().CopyTo(testCtx(t), &buf, "COPY 3")
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "COPY 3" || tag.RowsAffected() != 3 {
		t.Errorf("tag = %q", tag)
	}
	want := strings.Repeat("X\ta\\tb\\\\c\\nd\\re\t\\N\n", 3)
	want = strings.Replace(strings.Replace(strings.Replace(want, "X", "1", 1), "X", "2", 1), "X", "3", 1)
	if buf.String() != want {
		t.Errorf("copy data = %q, want %q", buf.String(), want)
	}
}

func TestPgxLargeAndStreamingResults(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		rows, err := conn.Query(ctx, "BENCH 50000", mode)
		if err != nil {
			t.Fatal(err)
		}
		var n, id int64
		var name string
		var score float64
		for rows.Next() {
			if err := rows.Scan(&id, &name, &score); err != nil {
				t.Fatal(err)
			}
			n++
			if id != n || score != float64(n)*0.25 || name != benchNames[n&1023] {
				t.Fatalf("row %d = %d %q %v", n, id, name, score)
			}
		}
		if err := rows.Err(); err != nil || n != 50000 {
			t.Fatalf("%d rows, %v", n, err)
		}
	}
	// A row produced before the Result blocks reaches the client without
	// waiting for more output: the writer's flush timer sends it.
	sctx, cancel := context.WithCancel(ctx)
	rows, err := conn.Query(sctx, "STREAM")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		var n int64
		var s string
		if rows.Next() {
			_ = rows.Scan(&n, &s)
		}
		got <- s
	}()
	select {
	case s := <-got:
		if s != "first" {
			t.Errorf("first row = %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the streamed row did not arrive")
	}
	cancel()
	rows.Close()
}

func TestPgxConcurrentClients(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx := testCtx(t)
			conn, err := pgx.Connect(ctx, connString(addr, "fvsql", ""))
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(ctx)
			for j := 0; j < 50; j++ {
				var n int64
				var s string
				want := int64(i*1000 + j)
				if err := conn.QueryRow(ctx, "SELECT $1::int8, $2::text", want, "x").Scan(&n, &s); err != nil || n != want {
					errs <- fmt.Errorf("client %d: %v %d", i, err, n)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPgxProtocol32Negotiation(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "max_protocol_version=latest")
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n, new(string)); err != nil || n != 1 {
		t.Fatal(err)
	}
}

func TestPgxTLS(t *testing.T) {
	cert := selfSignedCert(t)
	_, addr := startServer(t, Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}, newTestHandler())
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://fvsql@%s/fvsql?sslmode=require", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("connection is %T, not TLS", conn.PgConn().Conn())
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT $1::int8, 'x'::text", 7).Scan(&n, new(string)); err != nil || n != 7 {
		t.Fatal(err)
	}
	// Plain connections are still accepted.
	plain := connectPgx(t, addr, "")
	if _, ok := plain.PgConn().Conn().(*tls.Conn); ok {
		t.Error("sslmode=disable connection is TLS")
	}
}

// TestPgxRequireTLS: with RequireTLS a plaintext StartupMessage is refused
// with FATAL 28000 before authentication, and TLS connections (require and
// prefer) are served. (A CancelRequest is served before that check is
// reached, but no test sends one over plaintext to a RequireTLS server yet.)
func TestPgxRequireTLS(t *testing.T) {
	cert := selfSignedCert(t)
	_, addr := startServer(t, Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, RequireTLS: true}, newTestHandler())
	ctx := testCtx(t)
	_, err := pgx.Connect(ctx, fmt.Sprintf("postgres://fvsql@%s/fvsql?sslmode=disable", addr))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" || pe.Severity != "FATAL" {
		t.Fatalf("plaintext connection: %v, want FATAL 28000", err)
	}
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://fvsql@%s/fvsql?sslmode=require", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("connection is %T, not TLS", conn.PgConn().Conn())
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT $1::int8", 7).Scan(&n); err != nil || n != 7 {
		t.Fatal(err)
	}
	// sslmode=prefer falls back to nothing: TLS is offered, so it is used.
	pref, err := pgx.Connect(ctx, fmt.Sprintf("postgres://fvsql@%s/fvsql?sslmode=prefer", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer pref.Close(ctx)
	if _, ok := pref.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("sslmode=prefer connection is %T, not TLS", pref.PgConn().Conn())
	}
}
