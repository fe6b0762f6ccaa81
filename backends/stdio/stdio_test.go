package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	"github.com/fvsql/fvsql/backends/stdio"
	"github.com/fvsql/fvsql/pgerror"
)

// pipe is an in-memory, unbounded, blocking pipe: what a Streamer writes
// to stdout, its stdin reads back (so produce-then-consume works in one
// process). Close ends the reader with EOF.
type pipe struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    bytes.Buffer
	closed bool
}

func newPipe() *pipe {
	p := &pipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && !p.closed {
		p.cond.Wait()
	}
	if p.buf.Len() == 0 {
		return 0, io.EOF
	}
	return p.buf.Read(b)
}

func (p *pipe) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	return nil
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) backends.Streamer {
		p := newPipe()
		t.Cleanup(func() { p.Close() })
		st, err := stdio.New(p, p, stdio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, conformance.Caps{
		Timestamps: true, Latest: true, RefusesStartTime: true, SharedGroups: true,
		ThroughputN: 100_000,
	})
}

func read(t *testing.T, c backends.Consumer, n int) []backends.Message {
	t.Helper()
	var out []backends.Message
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(out) < n {
		msgs, err := c.Read(ctx, n-len(out))
		if err != nil {
			t.Fatalf("Read after %d of %d: %v", len(out), n, err)
		}
		out = append(out, msgs...)
	}
	return out
}

func TestFramingRoundTrip(t *testing.T) {
	var out bytes.Buffer
	st, _ := stdio.New(strings.NewReader(""), &out, stdio.Options{})
	p, _ := st.Producer(context.Background())
	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	err := p.Send(context.Background(), []backends.Message{
		{Stream: "clicks", Shard: 2, Timestamp: ts, Payload: []byte(`{"a":1}`)},
		{Stream: "clicks", Timestamp: ts, Payload: []byte(`{"a":2}`)},
		{Stream: "other", Timestamp: ts, Payload: []byte(``)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[2026-01-02T02:04:05.123456Z | clicks | 0 | 2] {\"a\":1}\n" +
		"[2026-01-02T02:04:05.123456Z | clicks | 1 | 0] {\"a\":2}\n" +
		"[2026-01-02T02:04:05.123456Z | other | 0 | 0] \n"
	if out.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", out.String(), want)
	}
	// Read back: stream, sequence, shard and timestamp (µs) survive.
	in, _ := stdio.New(strings.NewReader(want), io.Discard, stdio.Options{})
	c, _ := in.Consumer(context.Background(), "clicks", backends.ConsumerOptions{})
	got := read(t, c, 2)
	if got[0].Sequence != 0 || got[0].Shard != 2 || !got[0].Timestamp.Equal(ts.Truncate(time.Microsecond)) || string(got[0].Payload) != `{"a":1}` || got[0].Stream != "clicks" {
		t.Fatalf("read back %+v", got[0])
	}
	if _, err := c.Read(context.Background(), 10); !errors.Is(err, backends.ErrEndOfStream) {
		t.Fatalf("at EOF: %v", err)
	}

	// framing=plain through the registry's option parsing.
	if _, err := backends.Open(context.Background(), "stdio://?framing=nope", backends.Env{}); code(err) != pgerror.InvalidParameterValue.String() {
		t.Fatalf("bad framing: %v", err)
	}
	if _, err := backends.Open(context.Background(), "stdio://?framing=plain", backends.Env{}); err != nil {
		t.Fatalf("framing=plain: %v", err)
	}
	out.Reset()
	plain, _ := stdio.New(strings.NewReader(""), &out, stdio.Options{Framing: stdio.Plain})
	pp, _ := plain.Producer(context.Background())
	pp.Send(context.Background(), []backends.Message{{Stream: "any name", Payload: []byte("x")}, {Payload: []byte("y")}})
	if out.String() != "x\ny\n" {
		t.Fatalf("plain wrote %q", out.String())
	}
	if err := pp.Send(context.Background(), []backends.Message{{Payload: []byte("a\nb")}}); code(err) != pgerror.InvalidParameterValue.String() {
		t.Fatalf("payload with a newline: %v", err)
	}
	if err := p.Send(context.Background(), []backends.Message{{Stream: "bad name", Payload: []byte("a")}}); code(err) != pgerror.InvalidParameterValue.String() {
		t.Fatalf("unframeable stream name: %v", err)
	}
}

func code(err error) string {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return pe.Code.String()
	}
	return ""
}

func TestParseInput(t *testing.T) {
	input := strings.Join([]string{
		"a plain, raw message",
		`[2022-01-01T00:00:00] { "payload": "anything" }`,
		`[2022-01-01T00:00:00.123 | s] "a string payload"`,
		`[2022-01-01T00:00:00 | s | 123] ["array", "of", "values"]`,
		`[2022-01-01T00:00:00+02:00 | s | 123 | 4] { "payload": "anything" }`,
		`[s] a string payload`,
		`[s | 124] x`,
		`["array", "of", "values"]`,
		"",
		"crlf line\r",
		`[other] not for s`,
		`[Jan 1, 2022] not a frame`,
	}, "\n")
	st, _ := stdio.New(strings.NewReader(input), io.Discard, stdio.Options{})
	c, _ := st.Consumer(context.Background(), "s", backends.ConsumerOptions{})
	var got []string
	for {
		msgs, err := c.Read(context.Background(), 100)
		if errors.Is(err, backends.ErrEndOfStream) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got = append(got, fmt.Sprintf("%d|%d|%s|%s|%s", m.Sequence, m.Shard, m.Timestamp.Format(time.RFC3339Nano), m.Stream, m.Payload))
		}
	}
	now := "NOW"
	want := []string{
		"1|0|NOW|s|a plain, raw message",
		`2|0|2022-01-01T00:00:00Z|s|{ "payload": "anything" }`,
		`3|0|2022-01-01T00:00:00.123Z|s|"a string payload"`,
		`123|0|2022-01-01T00:00:00Z|s|["array", "of", "values"]`,
		`123|4|2021-12-31T22:00:00Z|s|{ "payload": "anything" }`,
		"6|0|NOW|s|a string payload",
		"124|0|NOW|s|x",
		`8|0|NOW|s|["array", "of", "values"]`,
		"10|0|NOW|s|crlf line",
		"12|0|NOW|s|[Jan 1, 2022] not a frame",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d messages:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i := range got {
		g := strings.Split(got[i], "|")
		w := strings.Split(want[i], "|")
		if w[2] == now {
			g[2] = now // arrival time
		}
		if strings.Join(g, "|") != want[i] {
			t.Errorf("line %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

// TestRoundRobin: consumers of one stream and group take lines in turn;
// another group gets every line; Scan reads to EOF.
func TestRoundRobin(t *testing.T) {
	p := newPipe()
	st, _ := stdio.New(p, io.Discard, stdio.Options{})
	ctx := context.Background()
	var cs []backends.Consumer
	for range 3 {
		c, _ := st.Consumer(ctx, "s", backends.ConsumerOptions{})
		cs = append(cs, c)
	}
	other, _ := st.Consumer(ctx, "s", backends.ConsumerOptions{Group: "audit"})
	for i := range 30 {
		fmt.Fprintf(p, "line %02d\n", i)
	}
	for i, c := range cs {
		got := read(t, c, 10)
		for j, m := range got {
			if want := fmt.Sprintf("line %02d", i+3*j); string(m.Payload) != want {
				t.Fatalf("consumer %d message %d: %q, want %q", i, j, m.Payload, want)
			}
		}
	}
	if got := read(t, other, 30); string(got[29].Payload) != "line 29" {
		t.Fatalf("other group: %q", got[29].Payload)
	}
	// A consumer that leaves hands its unread lines to the others.
	fmt.Fprintf(p, "a\nb\nc\n")
	time.Sleep(100 * time.Millisecond)
	cs[0].Close()
	// a went to cs[0], b to cs[1], c to cs[2]; cs[0]'s unread a moves on.
	got := append(read(t, cs[1], 1), read(t, cs[2], 2)...)
	var ps []string
	for _, m := range got {
		ps = append(ps, string(m.Payload))
	}
	if strings.Join(ps, "") != "bca" {
		t.Fatalf("after Close: %q, want b, c, a", ps)
	}
	read(t, other, 3)
	// With no consumer left, lines wait for the next one: Scan.
	cs[1].Close()
	cs[2].Close()
	other.Close()
	fmt.Fprintf(p, "tail 1\ntail 2\n")
	p.Close()
	var scanned []string
	err := st.Scan(ctx, "s", func(_ int32, b []backends.Message) error {
		for _, m := range b {
			scanned = append(scanned, string(m.Payload))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(scanned, ",") != "tail 1,tail 2" {
		t.Fatalf("Scan: %q", scanned)
	}
	last, _ := st.Consumer(ctx, "s", backends.ConsumerOptions{})
	if _, err := last.Read(ctx, 10); !errors.Is(err, backends.ErrEndOfStream) {
		t.Fatalf("after EOF: %v", err)
	}
}
