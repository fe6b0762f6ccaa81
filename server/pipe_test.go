package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/pgerror"
)

func TestPipeFilters(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader("hello\nerror: disk\nok\nerror: net\n")
	err := Pipe(context.Background(), "SELECT upper(line) AS l FROM stdin WHERE line LIKE 'error%'", PipeConfig{}, in, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"l\":\"ERROR: DISK\"}\n{\"l\":\"ERROR: NET\"}\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestPipeAggregatesJSON(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader("{\"id\":1,\"msg\":\"a\"}\n{\"id\":2,\"msg\":\"b\"}\nnot json\n{\"id\":3,\"msg\":\"a\"}\n")
	err := Pipe(context.Background(), "SELECT msg, count(*), sum(id) FROM stdin GROUP BY msg ORDER BY msg",
		PipeConfig{Format: "json", Columns: "id BIGINT, msg TEXT", Errors: io.Discard}, in, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"msg\":\"a\",\"count\":2,\"sum\":4}\n{\"msg\":\"b\",\"count\":1,\"sum\":2}\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// A stateless query writes each row while its input is still open, so
// `tail -f log | fvsql pipe …` works.
func TestPipeStreamsWhileInputOpen(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Pipe(context.Background(), "SELECT line FROM stdin WHERE line <> 'skip'", PipeConfig{}, inR, outW)
		outW.Close()
	}()
	lines := bufio.NewReader(outR)
	for _, l := range []string{"one", "skip", "two"} {
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
		if l == "skip" {
			continue
		}
		got := make(chan string, 1)
		go func() { s, _ := lines.ReadString('\n'); got <- s }()
		select {
		case s := <-got:
			if s != "{\"line\":\""+l+"\"}\n" {
				t.Fatalf("got %q for %q", s, l)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no output for %q while the input is open", l)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestPipeErrors(t *testing.T) {
	for _, c := range []struct {
		q    string
		cfg  PipeConfig
		code string
	}{
		{"SELEC 1", PipeConfig{}, pgerror.SyntaxError.String()},
		{"SELECT * FROM other", PipeConfig{}, pgerror.UndefinedTable.String()},
		{"SELECT nope FROM stdin", PipeConfig{}, pgerror.UndefinedColumn.String()},
		{"SELECT * FROM stdin", PipeConfig{Format: "json"}, pgerror.InvalidParameterValue.String()},
	} {
		err := Pipe(context.Background(), c.q, c.cfg, strings.NewReader(""), io.Discard)
		if pgerror.CodeOf(err).String() != c.code {
			t.Errorf("%q: got %v (%s), want %s", c.q, err, pgerror.CodeOf(err).String(), c.code)
		}
	}
}

// Framed lines ([timestamp | stream_key | sequence | shard] payload, the
// stdio framing) are stripped before decoding, their parts become the
// metadata columns; plain lines keep theirs (NULL key, partition 0, line
// number, arrival time); partial frames fill what they give.
func TestPipeFramedLines(t *testing.T) {
	in := strings.NewReader(strings.Join([]string{
		`[2026-01-02T03:04:05.123456Z | clicks | 42 | 3] {"id":1,"msg":"a"}`,
		`{"id":2,"msg":"b"}`,
		`[2026-01-02T03:04:06Z] {"id":3,"msg":"c"}`,
		`[orders | 7] {"id":4,"msg":"d"}`,
	}, "\n") + "\n")
	var out, errs bytes.Buffer
	err := Pipe(context.Background(),
		"SELECT id, msg, _key, _partition, _offset, _timestamp >= '2026-01-02'::timestamptz AND _timestamp < '2026-01-03'::timestamptz AS framed_day, "+
			"to_char(_timestamp, 'HH24:MI:SS.US') AS t FROM stdin",
		PipeConfig{Format: "json", Columns: "id BIGINT, msg TEXT", Errors: &errs}, in, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d rows, want 4:\n%s", len(lines), out.String())
	}
	wantPrefix := []string{
		`{"id":1,"msg":"a","_key":"clicks","_partition":3,"_offset":42,"framed_day":true,"t":"03:04:05.123456"}`,
		`{"id":2,"msg":"b","_key":null,"_partition":0,"_offset":1,"framed_day":false,`,
		`{"id":3,"msg":"c","_key":null,"_partition":0,"_offset":2,"framed_day":true,"t":"03:04:06.000000"}`,
		`{"id":4,"msg":"d","_key":"orders","_partition":0,"_offset":7,"framed_day":false,`,
	}
	for i, w := range wantPrefix {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("row %d:\n got %s\nwant %s…", i, lines[i], w)
		}
	}
	if errs.Len() != 0 {
		t.Errorf("no line was bad, yet the errors say %q", errs.String())
	}
}

// A line that cannot be decoded is reported with its line number and
// counted at the end; the lines after it are processed.
func TestPipeReportsBadLines(t *testing.T) {
	in := strings.NewReader("{\"id\":1}\n[2026-01-02T03:04:05Z | s | 1 | 0] not json\n\n{\"id\":2}\n{\"id\":\"x\"}\n{\"id\":3}\n")
	var out, errs bytes.Buffer
	err := Pipe(context.Background(), "SELECT sum(id) AS s, count(*) AS n FROM stdin",
		PipeConfig{Format: "json", Columns: "id BIGINT", Errors: &errs}, in, &out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "{\"s\":6,\"n\":3}\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	report := errs.String()
	for _, w := range []string{"fvsql pipe: line 2: ", "fvsql pipe: line 5: ", "fvsql pipe: 2 of 5 lines could not be decoded"} {
		if !strings.Contains(report, w) {
			t.Errorf("the errors lack %q:\n%s", w, report)
		}
	}
	if strings.Contains(report, "line 3:") {
		t.Errorf("a blank line of json input was reported:\n%s", report)
	}
}

// The framing's time is the rows' time: per-minute counts over _timestamp
// (TUMBLE windows are for continuous queries, not pipe's bounded run).
func TestPipeWindowOverFrameTime(t *testing.T) {
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, "[2026-01-02T03:0%d:30Z | s | %d | 0] {\"v\":%d}\n", i/2, i, i)
	}
	var out bytes.Buffer
	err := Pipe(context.Background(),
		"SELECT date_trunc('minute', _timestamp) AS window_start, count(*) AS n, sum(v) AS s FROM stdin GROUP BY 1 ORDER BY 1",
		PipeConfig{Format: "json", Columns: "v BIGINT"}, strings.NewReader(b.String()), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"window_start":"2026-01-02T03:00:00Z","n":2,"s":1}` + "\n" +
		`{"window_start":"2026-01-02T03:01:00Z","n":2,"s":5}` + "\n" +
		`{"window_start":"2026-01-02T03:02:00Z","n":2,"s":9}` + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
