package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/tests/testenv"
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

// syncBuffer is a bytes.Buffer a Pipe writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines are the complete lines written so far.
func (s *syncBuffer) lines() []string {
	text := s.String()
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		return strings.Split(text[:i], "\n")
	}
	return nil
}

// runningPipe is a Pipe on a goroutine of its own.
type runningPipe struct {
	out, errs syncBuffer
	cancel    context.CancelFunc
	done      chan error
}

func startPipe(t *testing.T, query string, cfg PipeConfig) *runningPipe {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	p := &runningPipe{cancel: cancel, done: make(chan error, 1)}
	cfg.Errors = &p.errs
	go func() { p.done <- Pipe(ctx, query, cfg, strings.NewReader(""), &p.out) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// wait returns the Pipe's error once it ends by itself.
func (p *runningPipe) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // stop and later waits see it too
		return err
	case <-time.After(within):
		t.Fatalf("the pipe did not end within %v; it wrote:\n%s", within, p.out.String())
		return nil
	}
}

// stop ends a following Pipe; it must end with the cancellation.
func (p *runningPipe) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("pipe: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("the pipe did not stop within 15s of its cancellation")
	}
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pipeRow is one output row of the scenario queries.
type pipeRow struct {
	ID int64 `json:"id"`
}

// ids decodes output lines {"id":…} into their ids, failing on others.
func ids(t *testing.T, lines []string) []int64 {
	t.Helper()
	out := make([]int64, 0, len(lines))
	for _, l := range lines {
		var r pipeRow
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		out = append(out, r.ID)
	}
	return out
}

// exactlyOnce fails unless got holds each of 0..n-1 once.
func exactlyOnce(t *testing.T, got []int64, n int) {
	t.Helper()
	seen := map[int64]int{}
	for _, id := range got {
		seen[id]++
	}
	var missing, dup []int64
	for i := range int64(n) {
		switch seen[i] {
		case 0:
			missing = append(missing, i)
		case 1:
		default:
			dup = append(dup, i)
		}
	}
	if len(missing) > 0 || len(dup) > 0 || len(got) != n {
		t.Fatalf("%d rows for %d ids; missing %v, more than once %v", len(got), n, missing, dup)
	}
}

// sendRows writes the rows {"id":from} … {"id":to-1} into stream, keyed
// by id, stamped at at(id) when at is not nil.
func sendRows(t *testing.T, st backends.Streamer, stream string, from, to int, at func(int) time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := st.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []backends.Message
	for i := from; i < to; i++ {
		m := backends.Message{Stream: stream, Key: []byte(strconv.Itoa(i)), Payload: fmt.Appendf(nil, `{"id":%d}`, i)}
		if at != nil {
			m.Timestamp = at(i)
		}
		msgs = append(msgs, m)
	}
	if err := p.Send(ctx, msgs); err != nil {
		t.Fatal(err)
	}
}

// pipeBackend is one backend the scenarios run on.
type pipeBackend struct {
	uri    string
	env    backends.Env
	create func(t *testing.T, stream string, shards int) // makes the stream
	st     backends.Streamer                             // the test's own connection
}

func (b *pipeBackend) cfg(stream string) PipeConfig {
	return PipeConfig{Source: b.uri, Stream: stream, Format: "json", Columns: "id BIGINT", Env: b.env}
}

func kfakeBackend(t *testing.T) *pipeBackend {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return openPipeBackend(t, "kafka://"+strings.Join(c.ListenAddrs(), ","), backends.Env{})
}

func fileBackend(t *testing.T) *pipeBackend {
	root := t.TempDir()
	return openPipeBackend(t, "file://"+root+"/", backends.Env{FileRoot: root})
}

func openPipeBackend(t *testing.T, uri string, env backends.Env) *pipeBackend {
	ctx := context.Background()
	st, err := backends.Open(ctx, uri, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &pipeBackend{uri: uri, env: env, st: st}
	b.create = func(t *testing.T, stream string, shards int) {
		if err := st.CreateStream(ctx, backends.StreamSpec{Name: stream, Shards: shards}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// testPipeRealtime: two realtime pipes each see every row, those written
// before they start and those written while they follow.
func testPipeRealtime(t *testing.T, b *pipeBackend, stream string) {
	b.create(t, stream, 3)
	sendRows(t, b.st, stream, 0, 50, nil)
	q := `SELECT id FROM "` + stream + `" WHERE id >= 0`
	p1, p2 := startPipe(t, q, b.cfg(stream)), startPipe(t, q, b.cfg(stream))
	waitFor(t, 20*time.Second, "the first 50 rows in both pipes", func() bool {
		return len(p1.out.lines()) >= 50 && len(p2.out.lines()) >= 50
	})
	sendRows(t, b.st, stream, 50, 100, nil)
	waitFor(t, 20*time.Second, "100 rows in both pipes", func() bool {
		return len(p1.out.lines()) >= 100 && len(p2.out.lines()) >= 100
	})
	p1.stop(t)
	p2.stop(t)
	exactlyOnce(t, ids(t, p1.out.lines()), 100)
	exactlyOnce(t, ids(t, p2.out.lines()), 100)
}

// testPipeFrom: --from starts at the first row stamped at or after the
// time; the rows are stamped a second apart.
func testPipeFrom(t *testing.T, b *pipeBackend, stream string) {
	b.create(t, stream, 2)
	// Recent stamps: a real broker's retention (7 days) deletes older
	// records at its next check.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	sendRows(t, b.st, stream, 0, 20, func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) })
	cfg := b.cfg(stream)
	cfg.UntilEnd = true
	cfg.From = base.Add(12*time.Second - time.Millisecond) // rounded up to the backend's precision: row 12
	p := startPipe(t, `SELECT id FROM "`+stream+`" ORDER BY id`, cfg)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := int64(12); i < 20; i++ {
		want = append(want, i)
	}
	if got := ids(t, p.out.lines()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("--from: got ids %v, want %v", got, want)
	}
}

// testPipeUntilEnd: an aggregate over --until-end writes its result and
// the pipe ends; undecodable payloads are reported and counted.
func testPipeUntilEnd(t *testing.T, b *pipeBackend, stream string) {
	b.create(t, stream, 1)
	sendRows(t, b.st, stream, 0, 10, nil)
	ctx := context.Background()
	p, err := b.st.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctx, []backends.Message{{Stream: stream, Payload: []byte("not json")}}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	cfg := b.cfg(stream)
	cfg.UntilEnd = true
	run := startPipe(t, `SELECT count(*) AS n, sum(id) AS s FROM "`+stream+`"`, cfg)
	if err := run.wait(t, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := run.out.String(), "{\"n\":10,\"s\":45}\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if report := run.errs.String(); !strings.Contains(report, "1 of 11 messages could not be decoded") {
		t.Fatalf("the undecodable payload was not reported: %q", report)
	}
}

// testPipeLoadBalanced: two pipes of one group over a stream of two
// shards share it: together they write every row once, each some; a
// later pipe of the group finds nothing left (all was acknowledged).
func testPipeLoadBalanced(t *testing.T, b *pipeBackend, stream string, ready func(t *testing.T, group string)) {
	b.create(t, stream, 2)
	group := "g-" + stream
	cfg := b.cfg(stream)
	cfg.Group = group
	q := `SELECT id FROM "` + stream + `"`
	p1, p2 := startPipe(t, q, cfg), startPipe(t, q, cfg)
	ready(t, group)
	const n = 200
	for i := 0; i < n; i += 20 {
		sendRows(t, b.st, stream, i, i+20, nil)
	}
	waitFor(t, 30*time.Second, "every row from the two pipes", func() bool {
		return len(p1.out.lines())+len(p2.out.lines()) >= n
	})
	time.Sleep(200 * time.Millisecond) // a duplicate would show now
	p1.stop(t)
	p2.stop(t)
	a, c := ids(t, p1.out.lines()), ids(t, p2.out.lines())
	t.Logf("the pipes wrote %d and %d rows", len(a), len(c))
	if len(a) == 0 || len(c) == 0 {
		t.Errorf("one pipe of the group got no row: %d and %d", len(a), len(c))
	}
	exactlyOnce(t, append(a, c...), n)

	cfg.UntilEnd = true
	rest := startPipe(t, `SELECT count(*) AS n FROM "`+stream+`"`, cfg)
	if err := rest.wait(t, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := rest.out.String(); got != "{\"n\":0}\n" {
		t.Fatalf("after the group read everything, another member found %q", got)
	}
}

// testPipeLoadBalancedUntilEnd: two pipes of one group reading to the
// end both end (a Kafka member never hears of the end of partitions it
// was not assigned: the group's lag says it), and together they wrote
// every row, at least once (a rebalance while both join may hand a
// partition's unacknowledged rows to the other).
func testPipeLoadBalancedUntilEnd(t *testing.T, b *pipeBackend, stream string) {
	b.create(t, stream, 2)
	const n = 300
	sendRows(t, b.st, stream, 0, n, nil)
	cfg := b.cfg(stream)
	cfg.Group, cfg.UntilEnd = "g-"+stream, true
	q := `SELECT id FROM "` + stream + `"`
	p1, p2 := startPipe(t, q, cfg), startPipe(t, q, cfg)
	for _, p := range []*runningPipe{p1, p2} {
		if err := p.wait(t, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int64]bool{}
	for _, id := range append(ids(t, p1.out.lines()), ids(t, p2.out.lines())...) {
		seen[id] = true
	}
	for i := range int64(n) {
		if !seen[i] {
			t.Fatalf("row %d is in neither pipe's output", i)
		}
	}
}

// kafkaGroupReady waits until the Kafka group has two members with a
// partition each, so that no rebalance moves a partition mid-test.
func kafkaGroupReady(brokers []string) func(t *testing.T, group string) {
	return func(t *testing.T, group string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		waitFor(t, 45*time.Second, "two members with partitions in group "+group, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			gs, err := adm.DescribeGroups(ctx, group)
			if err != nil {
				return false
			}
			g, ok := gs[group]
			if !ok || g.State != "Stable" || len(g.Members) != 2 {
				return false
			}
			for _, m := range g.Members {
				if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) == 0 || len(a.Topics[0].Partitions) == 0 {
					return false
				}
			}
			return true
		})
	}
}

func TestPipeSourceKafka(t *testing.T) {
	b := kfakeBackend(t)
	brokers := strings.Split(strings.TrimPrefix(b.uri, "kafka://"), ",")
	t.Run("realtime", func(t *testing.T) { testPipeRealtime(t, b, "clicks.realtime") })
	t.Run("from", func(t *testing.T) { testPipeFrom(t, b, "clicks-from") })
	t.Run("until_end", func(t *testing.T) { testPipeUntilEnd(t, b, "clicks_until") })
	t.Run("load_balanced", func(t *testing.T) { testPipeLoadBalanced(t, b, "clicks_lb", kafkaGroupReady(brokers)) })
	t.Run("load_balanced_until_end", func(t *testing.T) { testPipeLoadBalancedUntilEnd(t, b, "clicks_lbe") })
}

func TestPipeSourceFile(t *testing.T) {
	b := fileBackend(t)
	t.Run("realtime", func(t *testing.T) { testPipeRealtime(t, b, "clicks.log") })
	t.Run("from", func(t *testing.T) { testPipeFrom(t, b, "from.log") })
	t.Run("until_end", func(t *testing.T) { testPipeUntilEnd(t, b, "until.log") })
	// A file's group is a stored position with one reader at a time: a
	// pipe of the group reads what the group has not acknowledged.
	t.Run("group_position", func(t *testing.T) {
		b.create(t, "grouped.log", 1)
		sendRows(t, b.st, "grouped.log", 0, 30, nil)
		cfg := b.cfg("grouped.log")
		cfg.Group, cfg.UntilEnd = "g", true
		for _, want := range []string{"{\"n\":30}\n", "{\"n\":0}\n"} {
			p := startPipe(t, `SELECT count(*) AS n FROM "grouped.log"`, cfg)
			if err := p.wait(t, 20*time.Second); err != nil {
				t.Fatal(err)
			}
			if got := p.out.String(); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
		sendRows(t, b.st, "grouped.log", 30, 35, nil)
		p := startPipe(t, `SELECT id FROM "grouped.log"`, cfg) // stateless: acknowledged batch by batch
		if err := p.wait(t, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		exactlyOnceFrom(t, ids(t, p.out.lines()), 30, 35)
	})
	// A text file has no times: --from is refused with 0A000.
	t.Run("text_from", func(t *testing.T) {
		path := filepath.Join(b.env.FileRoot, "plain.txt")
		if err := os.WriteFile(path, []byte("{\"id\":1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := b.cfg("plain.txt")
		cfg.From, cfg.UntilEnd = time.Now().Add(-time.Hour), true
		err := Pipe(context.Background(), `SELECT id FROM "plain.txt"`, cfg, strings.NewReader(""), io.Discard)
		if !errors.Is(err, backends.ErrCannotSeek) || pgerror.CodeOf(err) != pgerror.FeatureNotSupported {
			t.Fatalf("--from on a text file: %v (SQLSTATE %s), want ErrCannotSeek with 0A000", err, pgerror.CodeOf(err))
		}
	})
}

func exactlyOnceFrom(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	shifted := make([]int64, len(got))
	for i, id := range got {
		shifted[i] = id - from
	}
	exactlyOnce(t, shifted, int(to-from))
}

// Standard input cannot seek or share: --from and load_balanced fail with
// 0A000; conflicting settings with 22023.
func TestPipeSourceRefusals(t *testing.T) {
	err := Pipe(context.Background(), "SELECT line FROM stdin", PipeConfig{From: time.Now().Add(-time.Minute)}, strings.NewReader("x\n"), io.Discard)
	if !errors.Is(err, backends.ErrCannotSeek) || pgerror.CodeOf(err) != pgerror.FeatureNotSupported {
		t.Fatalf("--from over stdin: %v (SQLSTATE %s), want ErrCannotSeek with 0A000", err, pgerror.CodeOf(err))
	}
	for _, c := range []struct {
		name string
		cfg  PipeConfig
		code pgerror.Code
	}{
		{"group over stdin", PipeConfig{Group: "g"}, pgerror.FeatureNotSupported},
		{"load_balanced over stdio", PipeConfig{Source: "stdio://", Mode: "load_balanced", Group: "g"}, pgerror.FeatureNotSupported},
		{"load_balanced without group", PipeConfig{Source: "file:///", Stream: "x", Mode: "load_balanced"}, pgerror.InvalidParameterValue},
		{"realtime with group", PipeConfig{Source: "file:///", Stream: "x", Mode: "realtime", Group: "g"}, pgerror.InvalidParameterValue},
		{"unknown mode", PipeConfig{Source: "file:///", Stream: "x", Mode: "fast"}, pgerror.InvalidParameterValue},
		{"source without stream", PipeConfig{Source: "file:///"}, pgerror.InvalidParameterValue},
		{"unknown scheme", PipeConfig{Source: "nats://h", Stream: "x"}, pgerror.InvalidParameterValue},
	} {
		err := Pipe(context.Background(), "SELECT * FROM x", c.cfg, strings.NewReader(""), io.Discard)
		if pgerror.CodeOf(err) != c.code {
			t.Errorf("%s: %v (SQLSTATE %s), want %s", c.name, err, pgerror.CodeOf(err), c.code)
		}
	}
}

func TestPipeParseTime(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-01-02T03:04:05Z":   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		"2026-01-02 03:04:05+02": time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC),
		"2026-01-02":             time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"-15m":                   now.Add(-15 * time.Minute),
		"-1h30m":                 now.Add(-90 * time.Minute),
		"-1 hour":                now.Add(-time.Hour),
		"2 days ago":             now.Add(-48 * time.Hour),
	} {
		got, err := ParsePipeTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParsePipeTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"15m", "yesterday-ish", "1 hour", ""} {
		if _, err := ParsePipeTime(in, now); pgerror.CodeOf(err) != pgerror.InvalidParameterValue {
			t.Errorf("ParsePipeTime(%q): %v, want 22023", in, err)
		}
	}
}

// TestPipeSourceRealKafka and TestPipeSourceRedis run the scenarios on the
// Apache Kafka broker and the Redis server of ./scripts/test.sh.
func TestPipeSourceRealKafka(t *testing.T) {
	addr := testenv.Kafka(t)
	b := openPipeBackend(t, "kafka://"+addr, backends.Env{})
	name := func(what string) string { return testenv.UniqueName("pipe-" + what + "-") }
	t.Run("realtime", func(t *testing.T) { testPipeRealtime(t, b, name("realtime")) })
	t.Run("from", func(t *testing.T) { testPipeFrom(t, b, name("from")) })
	t.Run("until_end", func(t *testing.T) { testPipeUntilEnd(t, b, name("until")) })
	t.Run("load_balanced", func(t *testing.T) {
		testPipeLoadBalanced(t, b, name("lb"), kafkaGroupReady(strings.Split(addr, ",")))
	})
	t.Run("load_balanced_until_end", func(t *testing.T) { testPipeLoadBalancedUntilEnd(t, b, name("lbe")) })
}

func TestPipeSourceRedis(t *testing.T) {
	addr := testenv.Redis(t)
	// Short leases: a member joining gets its share of the shards within
	// a second.
	b := openPipeBackend(t, "redis://"+addr+"?lease=900ms", backends.Env{})
	name := func(what string) string { return testenv.UniqueName("pipe-" + what + "-") }
	t.Run("realtime", func(t *testing.T) { testPipeRealtime(t, b, name("realtime")) })
	t.Run("from", func(t *testing.T) { testPipeFromRedis(t, b, name("from")) })
	t.Run("until_end", func(t *testing.T) { testPipeUntilEnd(t, b, name("until")) })
	t.Run("load_balanced", func(t *testing.T) { testPipeLoadBalanced(t, b, name("lb"), redisGroupReady(t, addr)) })
	t.Run("load_balanced_until_end", func(t *testing.T) { testPipeLoadBalancedUntilEnd(t, b, name("lbe")) })
}

// testPipeFromRedis: Redis stamps entries itself (their IDs), so the rows
// are written in two rounds with the start time between them.
func testPipeFromRedis(t *testing.T, b *pipeBackend, stream string) {
	b.create(t, stream, 2)
	sendRows(t, b.st, stream, 0, 10, nil)
	time.Sleep(20 * time.Millisecond)
	from := time.Now()
	time.Sleep(20 * time.Millisecond)
	sendRows(t, b.st, stream, 10, 20, nil)
	cfg := b.cfg(stream)
	cfg.UntilEnd, cfg.From = true, from
	p := startPipe(t, `SELECT id FROM "`+stream+`" ORDER BY id`, cfg)
	if err := p.wait(t, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := int64(10); i < 20; i++ {
		want = append(want, i)
	}
	if got := ids(t, p.out.lines()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("--from: got ids %v, want %v", got, want)
	}
}

// redisGroupReady waits until each of the two members of the group
// holds one of the stream's two shards (their leases).
func redisGroupReady(t *testing.T, addr string) func(t *testing.T, group string) {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	return func(t *testing.T, group string) {
		stream := strings.TrimPrefix(group, "g-")
		waitFor(t, 30*time.Second, "a shard for each member of group "+group, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			a, err1 := rdb.Get(ctx, stream+":fvsql:lease:"+group+":0").Result()
			c, err2 := rdb.Get(ctx, stream+":fvsql:lease:"+group+":1").Result()
			return err1 == nil && err2 == nil && a != c
		})
	}
}
