package clients

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// copyColumns are the columns of the COPY round trips: every type fvsql
// stores, after an id to order by.
const copyColumns = `id BIGINT, b BOOLEAN, i2 SMALLINT, i4 INTEGER, i8 BIGINT, f4 REAL, f8 DOUBLE PRECISION,
	n NUMERIC, t TEXT, v VARCHAR, bt BYTEA, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, iv INTERVAL, j JSONB`

// copyStrings are the text values most likely to break a COPY format:
// its delimiters, quotes, escapes, null markers and line ends.
var copyStrings = []string{"", `\N`, `\.`, "NULL", "a\tb", "line\nbreak", "cr\rlf", `back\slash`, `"quoted"`,
	"comma,semi;colon", "'single'", "héllo wörld ✓", " lead and trail ", "\\x41", "\b\f\v"}

// randomCopyRows makes n seeded rows of Go values for copyColumns, a
// third of the values NULL.
func randomCopyRows(seed int64, n int) [][]any {
	rng := rand.New(rand.NewSource(seed))
	null := func() bool { return rng.Intn(3) == 0 }
	str := func() string {
		if rng.Intn(2) == 0 {
			return copyStrings[rng.Intn(len(copyStrings))]
		}
		b := make([]rune, rng.Intn(12))
		for i := range b {
			b[i] = rune(32 + rng.Intn(95))
		}
		return string(b)
	}
	rows := make([][]any, n)
	for r := range rows {
		vals := []any{
			rng.Intn(2) == 0,
			int16(rng.Intn(math.MaxUint16) - math.MaxInt16),
			int32(rng.Uint32()),
			int64(rng.Uint64()),
			float32(rng.NormFloat64() * 1e3),
			rng.NormFloat64() * math.Pow(10, float64(rng.Intn(20)-10)),
			pgtype.Numeric{Int: big.NewInt(rng.Int63n(1e12) - 5e11), Exp: int32(-rng.Intn(6)), Valid: true},
			str(),
			str(),
			func() []byte { b := make([]byte, rng.Intn(8)); rng.Read(b); return b }(),
			time.Date(1990+rng.Intn(60), time.Month(1+rng.Intn(12)), 1+rng.Intn(28), 0, 0, 0, 0, time.UTC),
			time.Date(1990+rng.Intn(60), 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int63n(365*24*3600)) * time.Second).Add(time.Duration(rng.Intn(1e6)) * time.Microsecond),
			time.Unix(rng.Int63n(2e9), int64(rng.Intn(1e6))*1000).UTC(),
			pgtype.Interval{Months: int32(rng.Intn(30)), Days: int32(rng.Intn(60) - 30), Microseconds: rng.Int63n(1e11), Valid: true},
			map[string]any{"k": str(), "n": float64(rng.Intn(100))},
		}
		row := []any{int64(r)}
		for _, v := range vals {
			if null() {
				v = nil
			}
			row = append(row, v)
		}
		rows[r] = row
	}
	return rows
}

// selectText returns every row of a stream, ordered by id, in the text
// format a simple query gets (what psql shows), NULL as "<null>".
func selectText(t *testing.T, ctx context.Context, conn *pgx.Conn, stream string) []string {
	t.Helper()
	res := conn.PgConn().Exec(ctx, "SELECT * FROM "+stream+" ORDER BY id")
	rs, err := res.ReadAll()
	if err != nil {
		t.Fatalf("SELECT %s: %v", stream, err)
	}
	var out []string
	for _, row := range rs[0].Rows {
		parts := make([]string, len(row))
		for i, v := range row {
			if v == nil {
				parts[i] = "<null>"
			} else {
				parts[i] = fmt.Sprintf("%q", v)
			}
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func equalRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d differs\ngot:  %s\nwant: %s", what, i, got[i], want[i])
		}
	}
}

// TestCopyRoundTrip is the differential check of COPY: seeded random rows
// of every type go in through INSERT; COPY TO in each format and back
// through COPY FROM into another stream gives the same rows; pgx's
// CopyFrom (binary, from Go values) gives them too; and COPY TO text/CSV
// is the text SELECT shows, in COPY's escaping.
func TestCopyRoundTrip(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names := []string{"src", "via_text", "via_csv", "via_binary", "via_pgx"}
	for _, n := range names {
		if _, err := conn.Exec(ctx, "CREATE STREAM "+n+" ("+copyColumns+")"); err != nil {
			t.Fatal(err)
		}
	}
	rows := randomCopyRows(17, 300)
	cols := []string{"id", "b", "i2", "i4", "i8", "f4", "f8", "n", "t", "v", "bt", "d", "ts", "tz", "iv", "j"}
	for start := 0; start < len(rows); start += 50 {
		var sb strings.Builder
		var args []any
		sb.WriteString("INSERT INTO src VALUES ")
		for r, row := range rows[start : start+50] {
			if r > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(")
			for i, v := range row {
				if i > 0 {
					sb.WriteString(", ")
				}
				args = append(args, v)
				fmt.Fprintf(&sb, "$%d", len(args))
			}
			sb.WriteString(")")
		}
		if _, err := conn.Exec(ctx, sb.String(), args...); err != nil {
			t.Fatal(err)
		}
	}
	want := selectText(t, ctx, conn, "src")
	if len(want) != len(rows) {
		t.Fatalf("src has %d rows", len(want))
	}

	for _, format := range []string{"text", "csv", "binary"} {
		var buf bytes.Buffer
		tag, err := conn.PgConn().CopyTo(ctx, &buf, "COPY src TO STDOUT WITH (FORMAT "+format+")")
		if err != nil {
			t.Fatalf("COPY TO %s: %v", format, err)
		}
		if tag.RowsAffected() != int64(len(rows)) {
			t.Fatalf("COPY TO %s: tag %s", format, tag)
		}
		if format == "binary" && !bytes.HasPrefix(buf.Bytes(), []byte("PGCOPY\n\xff\r\n\x00")) {
			t.Fatalf("binary COPY lacks the signature: %q", buf.Bytes()[:min(20, buf.Len())])
		}
		tag, err = conn.PgConn().CopyFrom(ctx, bytes.NewReader(buf.Bytes()), "COPY via_"+format+" FROM STDIN WITH (FORMAT "+format+")")
		if err != nil {
			t.Fatalf("COPY FROM %s: %v", format, err)
		}
		if tag.String() != fmt.Sprintf("COPY %d", len(rows)) {
			t.Fatalf("COPY FROM %s: tag %s", format, tag)
		}
		equalRows(t, "through "+format, selectText(t, ctx, conn, "via_"+format), want)
	}

	n, err := conn.CopyFrom(ctx, pgx.Identifier{"via_pgx"}, cols, pgx.CopyFromRows(rows))
	if err != nil || n != int64(len(rows)) {
		t.Fatalf("pgx CopyFrom: %d, %v", n, err)
	}
	equalRows(t, "pgx CopyFrom", selectText(t, ctx, conn, "via_pgx"), want)

	// COPY TO text is SELECT's text with COPY's escaping, CSV its quoting.
	var text, csv bytes.Buffer
	if _, err := conn.PgConn().CopyTo(ctx, &text, "COPY (SELECT * FROM src ORDER BY id) TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().CopyTo(ctx, &csv, "COPY (SELECT * FROM src ORDER BY id) TO STDOUT WITH CSV HEADER"); err != nil {
		t.Fatal(err)
	}
	res, err := conn.PgConn().Exec(ctx, "SELECT * FROM src ORDER BY id").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var wantText, wantCSV strings.Builder
	wantCSV.WriteString(strings.Join(cols, ",") + "\n")
	textEscaper := strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\b", `\b`, "\f", `\f`, "\v", `\v`)
	for _, row := range res[0].Rows {
		for i, v := range row {
			if i > 0 {
				wantText.WriteString("\t")
				wantCSV.WriteString(",")
			}
			if v == nil {
				wantText.WriteString(`\N`)
				continue
			}
			s := string(v)
			wantText.WriteString(textEscaper.Replace(s))
			if s == "" || s == `\.` || strings.ContainsAny(s, ",\"\n\r") {
				s = `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
			}
			wantCSV.WriteString(s)
		}
		wantText.WriteString("\n")
		wantCSV.WriteString("\n")
	}
	if text.String() != wantText.String() {
		t.Errorf("COPY TO text differs from SELECT\ngot:\n%.600s\nwant:\n%.600s", text.String(), wantText.String())
	}
	if csv.String() != wantCSV.String() {
		t.Errorf("COPY TO csv differs from SELECT\ngot:\n%.600s\nwant:\n%.600s", csv.String(), wantCSV.String())
	}
}

// TestCopyFromErrors: a bad row fails the whole COPY (no row lands) with
// PostgreSQL's SQLSTATE and the line in its CONTEXT; CopyFail is 57014;
// files and programs are 42501; HEADER MATCH checks the names.
func TestCopyFromErrors(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, "CREATE STREAM s (a INT NOT NULL, b INT, c TEXT)"); err != nil {
		t.Fatal(err)
	}
	pg := conn.PgConn()
	for _, c := range []struct {
		copy, data, code, where string
	}{
		{"COPY s FROM STDIN WITH (FORMAT csv)", "1,2,x\n2,3,y\n3,x,z\n4,5,w\n", "22P02", `COPY s, line 3, column b: "x"`},
		{"COPY s FROM STDIN", "1\t2\tx\n2\t3\n", "22P04", `COPY s, line 2: "2	3"`},
		{"COPY s FROM STDIN", "1\t2\tx\t9\n", "22P04", `COPY s, line 1: "1	2	x	9"`},
		{"COPY s FROM STDIN WITH (FORMAT csv, HEADER)", "a,b,c\n1,2,x\n,3,y\n", "23502", "COPY s, line 3"},
		{"COPY s FROM STDIN WITH (FORMAT csv)", "1,2,\"open\n", "22P04", "COPY s, line 1"},
		{"COPY s FROM STDIN WITH (FORMAT csv, HEADER match)", "a,c,b\n1,2,x\n", "22P04", "COPY s, line 1"},
		{"COPY s FROM STDIN WITH (FORMAT binary)", "not binary", "22P04", ""},
		{"COPY s FROM STDIN WITH (FORMAT csv)", "99999999999,1,x\n", "22003", `COPY s, line 1, column a: "99999999999"`},
		{"COPY s FROM '/etc/passwd'", "", "42501", ""},
		{"COPY s TO '/tmp/fvsql-copy'", "", "42501", ""},
		{"COPY s FROM PROGRAM 'true'", "", "42501", ""},
		{"COPY s FROM STDIN WITH (FORMAT xml)", "", "22023", ""},
		{"COPY s FROM STDIN WITH (FORMAT binary, HEADER)", "", "42601", ""},
		{"COPY s (a, nope) FROM STDIN", "", "42703", ""},
	} {
		_, err := pg.CopyFrom(ctx, strings.NewReader(c.data), c.copy)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || (c.where != "" && pe.Where != c.where) {
			t.Errorf("%s with %q: %v (code %v, where %q), want %s %q", c.copy, c.data, err, pgCode(err), pgWhere(err), c.code, c.where)
		}
	}
	// A reader that fails makes pgx send CopyFail.
	_, err := pg.CopyFrom(ctx, &failingReader{data: "1,2,x\n"}, "COPY s FROM STDIN WITH (FORMAT csv)")
	if pgCode(err) != "57014" {
		t.Errorf("CopyFail: %v", err)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM s").Scan(&n); err != nil || n != 0 {
		t.Fatalf("after the failed COPYs s holds %d rows (%v), want none", n, err)
	}
	// Then a good one, with a header that matches, lands whole.
	tag, err := pg.CopyFrom(ctx, strings.NewReader("a,b,c\n1,2,x\n2,,\"\"\n"), "COPY s FROM STDIN WITH (FORMAT csv, HEADER match)")
	if err != nil || tag.String() != "COPY 2" {
		t.Fatalf("good COPY: %v %v", tag, err)
	}
	var c2 *string
	if err := conn.QueryRow(ctx, "SELECT c FROM s WHERE a = 2").Scan(&c2); err != nil || c2 == nil || *c2 != "" {
		t.Fatalf("quoted empty CSV field: %v %v", c2, err)
	}
}

type failingReader struct{ data string }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errors.New("the client gave up")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func pgWhere(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Where
	}
	return ""
}

// TestCopySubscribe: COPY (SUBSCRIBE TO v) TO STDOUT streams a view's
// rows and changes as they arrive, until the client cancels it; the
// connection goes on.
func TestCopySubscribe(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, stmt := range []string{
		"CREATE STREAM ev (k TEXT, x BIGINT) WITH (key = 'k')",
		"CREATE MATERIALIZED VIEW tot AS SELECT k, sum(x) AS s FROM ev GROUP BY k",
		"INSERT INTO ev VALUES ('a', 1)",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	writer := p.Connect(t)
	lines := make(chan string, 100)
	copyCtx, stopCopy := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := conn.PgConn().CopyTo(copyCtx, &lineWriter{lines: lines}, "COPY (SUBSCRIBE TO tot) TO STDOUT")
		done <- err
	}()
	// The subscription starts when COPY runs: rows written after it show up.
	deadline := time.After(time.Minute)
	var got []string
	for i := 0; len(got) < 3; i++ {
		if _, err := writer.Exec(ctx, fmt.Sprintf("INSERT INTO ev VALUES ('k%d', %d)", i, i)); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatalf("COPY (SUBSCRIBE) gave %q in a minute", got)
		}
	}
	if got[0] != "insert\ta\t1" {
		t.Errorf("first line %q, want the view's current row", got[0])
	}
	for _, l := range got {
		if f := strings.Split(l, "\t"); len(f) != 3 || !slices.Contains([]string{"insert", "update_before", "update", "delete"}, f[0]) {
			t.Errorf("subscription line %q, want op\\tk\\ts", l)
		}
	}
	stopCopy()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled COPY (SUBSCRIBE) ended without an error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("COPY (SUBSCRIBE) did not end after the cancel")
	}
	var one int
	if err := writer.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// lineWriter sends each complete line written to it.
type lineWriter struct {
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}
