package server

import (
	"bufio"
	"bytes"
	"context"
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
		PipeConfig{Format: "json", Columns: "id BIGINT, msg TEXT"}, in, &out)
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
