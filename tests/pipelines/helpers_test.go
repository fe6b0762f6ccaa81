package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/fvsql/fvsql/tests/testenv"
)

func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

const (
	sqlTimeout   = 60 * time.Second
	flushTimeout = 150 * time.Second // the server bounds FLUSH at 2 min
	readTimeout  = 90 * time.Second  // reading a topic to its committed end
	pollInterval = 200 * time.Millisecond
)

// serverArgs are the flags every fvsql process of these tests gets: short
// epochs keep the tests fast.
var serverArgs = []string{"--stream-checkpoint-interval", "200ms", "--log-level", "info"}

// cluster is the Kafka a test runs on and the fvsql processes it started.
type cluster struct {
	mode   string // "embedded" or "real"
	kafka  string // the real broker; empty in embedded mode
	prefix string // topic prefix of every process
	first  *fvsqltest.Process
}

// eachBroker runs fn as the subtests "embedded" (the first process started
// runs the embedded broker) and "real" (the broker of FVSQL_TEST_KAFKA; the
// subtest is skipped without it, or fails under CI).
func eachBroker(t *testing.T, fn func(t *testing.T, c *cluster)) {
	t.Run("embedded", func(t *testing.T) {
		fn(t, &cluster{mode: "embedded"})
	})
	t.Run("real", func(t *testing.T) {
		kafka := testenv.Kafka(t)
		prefix := testenv.UniqueName(strings.ReplaceAll(t.Name(), "/", "-")+"-") + "-"
		t.Logf("real Kafka %s, topic prefix %s", kafka, prefix)
		fn(t, &cluster{mode: "real", kafka: kafka, prefix: prefix})
	})
}

// start starts an fvsql process on the cluster's Kafka: in embedded mode
// the first process runs the broker and later ones point at it.
func (c *cluster) start(t *testing.T, name string, extra ...string) *fvsqltest.Process {
	t.Helper()
	cfg := fvsqltest.Config{Name: name, TopicPrefix: c.prefix, Args: append(append([]string{}, serverArgs...), extra...)}
	switch {
	case c.kafka != "":
		cfg.Kafka = c.kafka
	case c.first != nil:
		cfg.Kafka = c.first.KafkaBrokers()
	}
	p := fvsqltest.Start(t, cfg)
	if c.first == nil {
		c.first = p
	}
	return p
}

// brokers is the Kafka the test's own clients use.
func (c *cluster) brokers() []string {
	if c.kafka != "" {
		return strings.Split(c.kafka, ",")
	}
	return []string{c.first.KafkaBrokers()}
}

// topic is the physical topic of a stream.
func (c *cluster) topic(stream string) string { return c.prefix + stream }

// client returns a franz-go client on the cluster, closed when the test ends.
func (c *cluster) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokers()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produce writes records synchronously in chunks and fails the test on any
// error; kgo fills in each record's partition and offset.
func produce(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	const chunk = 500
	for i := 0; i < len(recs); i += chunk {
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		res := cl.ProduceSync(ctx, recs[i:min(i+chunk, len(recs))]...)
		cancel()
		if err := res.FirstErr(); err != nil {
			t.Fatalf("producing records %d..%d: %v", i, min(i+chunk, len(recs))-1, err)
		}
	}
}

// readCommitted returns every record of topic a read_committed consumer
// sees. It first waits (up to readTimeout) until no transaction is open on
// the topic (last stable offset = high watermark on every partition): a
// process that was killed mid-transaction holds its partitions back until
// the transaction is fenced or times out.
func (c *cluster) readCommitted(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	return c.readTopic(t, topic, true)
}

// readUncommitted returns every record of topic, also those of aborted
// and open transactions (for diagnosis).
func (c *cluster) readUncommitted(t *testing.T, topic string) []*kgo.Record {
	t.Helper()
	return c.readTopic(t, topic, false)
}

func (c *cluster) readTopic(t *testing.T, topic string, committed bool) []*kgo.Record {
	t.Helper()
	return fvsqltest.ReadTopic(t, c.brokers(), topic, committed, readTimeout)
}

// exec runs a statement that returns no rows.
func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// textRows runs q and returns its rows in PostgreSQL's text format, as
// sorted lines.
func textRows(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, q, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v != nil {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// flush runs FLUSH on srv: it returns when every pipeline of the server
// has processed and committed what its inputs held when FLUSH began.
func flush(t *testing.T, srv *fvsqltest.Process, conn *pgx.Conn) {
	t.Helper()
	flushWithin(t, srv, conn, flushTimeout)
}

// flushWithin is flush with a shorter bound; when FLUSH fails it says
// whether the server died (and how) or what its pipelines report.
func flushWithin(t *testing.T, srv *fvsqltest.Process, conn *pgx.Conn, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	_, err := conn.Exec(ctx, "FLUSH")
	took := time.Since(start).Round(time.Millisecond)
	if err == nil {
		t.Logf("FLUSH took %s", took)
		return
	}
	// A dropped connection may mean the server is dying: give it a moment.
	for end := time.Now().Add(3 * time.Second); srv.Running() && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if !srv.Running() {
		crash := srv.LogLines(func(l string) bool {
			return strings.HasPrefix(l, "panic") || strings.HasPrefix(l, "fatal error") || strings.Contains(l, "level=ERROR")
		})
		t.Fatalf("BUG: fvsql %s died during FLUSH (after %s; FLUSH: %v): %s", srv.Name(), took, err, strings.Join(crash, " | "))
	}
	var sts []string
	if c2, cerr := pgx.Connect(context.Background(), srv.DSN()); cerr == nil {
		defer c2.Close(context.Background())
		qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer qcancel()
		if rows, qerr := c2.Query(qctx, "SELECT name, status, consumed, emitted, filtered, dropped, late, lag, partitions, epochs, error FROM fvsql_catalog.pipelines"); qerr == nil {
			for rows.Next() {
				var s pipelineStats
				if rows.Scan(&s.Name, &s.Status, &s.Consumed, &s.Emitted, &s.Filtered, &s.Dropped, &s.Late, &s.Lag, &s.Partitions, &s.Epochs, &s.Error) == nil {
					sts = append(sts, s.String())
				}
			}
			rows.Close()
		}
	}
	t.Fatalf("FLUSH failed after %s (bound %s): %v; pipelines: %s", took, timeout, err, strings.Join(sts, "; "))
}

// pipelineStats is a row of fvsql_catalog.pipelines.
type pipelineStats struct {
	Name, Status                               string
	Consumed, Emitted, Filtered, Dropped, Late int64
	Lag                                        *int64
	Partitions                                 int32
	Epochs                                     int64
	Error                                      *string
}

func (s pipelineStats) String() string {
	lag, errText := "NULL", ""
	if s.Lag != nil {
		lag = strconv.FormatInt(*s.Lag, 10)
	}
	if s.Error != nil {
		errText = " error=" + strconv.Quote(*s.Error)
	}
	return fmt.Sprintf("%s %s consumed=%d emitted=%d filtered=%d dropped=%d late=%d lag=%s partitions=%d epochs=%d%s",
		s.Name, s.Status, s.Consumed, s.Emitted, s.Filtered, s.Dropped, s.Late, lag, s.Partitions, s.Epochs, errText)
}

// stats reads the pipeline's row of fvsql_catalog.pipelines on a server;
// ok is false when the server does not run it.
func stats(conn *pgx.Conn, name string) (st pipelineStats, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT name, status, consumed, emitted, filtered, dropped, late, lag, partitions, epochs, error FROM fvsql_catalog.pipelines")
	if err != nil {
		return st, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var s pipelineStats
		if err := rows.Scan(&s.Name, &s.Status, &s.Consumed, &s.Emitted, &s.Filtered, &s.Dropped, &s.Late, &s.Lag, &s.Partitions, &s.Epochs, &s.Error); err != nil {
			return st, false, err
		}
		if s.Name == name {
			st, ok = s, true
		}
	}
	return st, ok, rows.Err()
}

// waitStats polls the pipeline's stats on a server until cond holds, and
// fails the test after timeout with the last stats seen.
func waitStats(t *testing.T, conn *pgx.Conn, name string, timeout time.Duration, what string, cond func(pipelineStats) bool) pipelineStats {
	t.Helper()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	last := "(no row yet)"
	for {
		st, ok, err := stats(conn, name)
		switch {
		case err != nil:
			last = "error: " + err.Error()
		case !ok:
			last = "(pipeline not listed)"
		default:
			last = st.String()
			if cond(st) {
				t.Logf("%s after %s: %s", what, time.Since(start).Round(time.Millisecond), last)
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s: last fvsql_catalog.pipelines row: %s", timeout, what, last)
		}
		time.Sleep(pollInterval)
	}
}

// inserter keeps inserting rows (id, id*3) with unique increasing ids
// through fvsql's INSERT, in batches, reconnecting whenever the server goes
// away. A batch whose INSERT succeeded is acknowledged: each of its rows
// must reach the output. A batch whose INSERT failed (the server stopped or
// died under it) is uncertain: its rows may or may not have been written,
// but none more than once. Failed batches are never retried (a retry could
// write a row twice).
type inserter struct {
	t      *testing.T
	dsn    string
	stream string
	batch  int
	pace   time.Duration
	limit  int64 // stop inserting after this many ids

	mu        sync.Mutex
	next      int64
	acked     []int64
	uncertain []int64
	failures  int
	lastErr   string

	stop chan struct{}
	done chan struct{}
}

func startInserter(t *testing.T, dsn, stream string, batch int, pace time.Duration, limit int64) *inserter {
	in := &inserter{t: t, dsn: dsn, stream: stream, batch: batch, pace: pace, limit: limit, next: 1,
		stop: make(chan struct{}), done: make(chan struct{})}
	go in.run()
	t.Cleanup(in.halt)
	return in
}

func (in *inserter) sleep(d time.Duration) bool {
	select {
	case <-in.stop:
		return false
	case <-time.After(d):
		return true
	}
}

func (in *inserter) run() {
	defer close(in.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = conn.Close(ctx)
			cancel()
		}
	}()
	for {
		select {
		case <-in.stop:
			return
		default:
		}
		in.mu.Lock()
		first := in.next
		in.mu.Unlock()
		if first > in.limit {
			<-in.stop
			return
		}
		if conn == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			c, err := pgx.Connect(ctx, in.dsn)
			cancel()
			if err != nil {
				if !in.sleep(100 * time.Millisecond) {
					return
				}
				continue
			}
			conn = c
		}
		ids := make([]int64, in.batch)
		var sb strings.Builder
		sb.WriteString("INSERT INTO " + in.stream + " VALUES ")
		for i := range ids {
			ids[i] = first + int64(i)
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, %d)", ids[i], ids[i]*3)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := conn.Exec(ctx, sb.String())
		cancel()
		in.mu.Lock()
		in.next = first + int64(in.batch)
		if err == nil {
			in.acked = append(in.acked, ids...)
		} else {
			in.uncertain = append(in.uncertain, ids...)
			in.failures++
			in.lastErr = err.Error()
		}
		in.mu.Unlock()
		if err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = conn.Close(ctx)
			cancel()
			conn = nil
		}
		if !in.sleep(in.pace) {
			return
		}
	}
}

// ackedCount is the number of acknowledged rows so far.
func (in *inserter) ackedCount() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.acked)
}

// waitAcked waits until at least n more rows than now are acknowledged.
func (in *inserter) waitMore(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	target := in.ackedCount() + n
	deadline := time.Now().Add(timeout)
	for in.ackedCount() < target {
		if time.Now().After(deadline) {
			in.mu.Lock()
			defer in.mu.Unlock()
			t.Fatalf("inserter: %d rows acknowledged, want %d within %s (failed batches %d, last error %q)",
				len(in.acked), target, timeout, in.failures, in.lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (in *inserter) halt() {
	select {
	case <-in.stop:
	default:
		close(in.stop)
	}
	<-in.done
}

// finish stops inserting and returns the acknowledged and uncertain ids.
func (in *inserter) finish(t *testing.T) (acked, uncertain []int64) {
	in.halt()
	in.mu.Lock()
	defer in.mu.Unlock()
	t.Logf("inserter: %d rows acknowledged, %d uncertain in %d failed INSERTs (last error: %q)",
		len(in.acked), len(in.uncertain), in.failures, in.lastErr)
	return in.acked, in.uncertain
}

// idReport summarises how often each id occurs in a pipeline's output.
type idReport struct {
	missing     []int64 // acknowledged, not in the output
	duplicated  []int64 // more than once in the output
	unknown     []int64 // never inserted
	uncertainIn int     // uncertain ids that made it
}

func countIDs(out map[int64]int, acked, uncertain []int64) idReport {
	var r idReport
	known := make(map[int64]bool, len(acked)+len(uncertain))
	for _, id := range acked {
		known[id] = true
		if out[id] == 0 {
			r.missing = append(r.missing, id)
		}
	}
	for _, id := range uncertain {
		known[id] = true
		if out[id] > 0 {
			r.uncertainIn++
		}
	}
	for id, n := range out {
		if n > 1 {
			r.duplicated = append(r.duplicated, id)
		}
		if !known[id] {
			r.unknown = append(r.unknown, id)
		}
	}
	sort.Slice(r.missing, func(i, j int) bool { return r.missing[i] < r.missing[j] })
	sort.Slice(r.duplicated, func(i, j int) bool { return r.duplicated[i] < r.duplicated[j] })
	sort.Slice(r.unknown, func(i, j int) bool { return r.unknown[i] < r.unknown[j] })
	return r
}

// head renders at most n ids of a list.
func head(ids []int64, n int) string {
	s := fmt.Sprint(ids[:min(n, len(ids))])
	if len(ids) > n {
		s += fmt.Sprintf(" … (%d in all)", len(ids))
	}
	return s
}

// diagnoseMissing explains ids missing from a pipeline's output: are they
// in the input topic (read_committed)? Where is the pipeline's consumer
// group against the input's end offsets?
func diagnoseMissing(t *testing.T, c *cluster, input, pipeline string, missing []int64) {
	t.Helper()
	// Are they in the output topic, in aborted or open transactions?
	all := c.readUncommitted(t, c.topic(pipeline))
	miss := map[int64]bool{}
	for _, id := range missing {
		miss[id] = true
	}
	var inOut []string
	nOut := 0
	for _, r := range all {
		var row struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(r.Value, &row) == nil && miss[row.ID] {
			if nOut++; len(inOut) < 10 {
				inOut = append(inOut, fmt.Sprintf("%d at p%d@%d (producer %d epoch %d, ts %s)", row.ID, r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, r.Timestamp.Format("15:04:05.000")))
			}
		}
	}
	t.Logf("diagnosis: the output topic %s holds %d records read_uncommitted; %d records of missing ids are there (not committed), e.g. %v",
		c.topic(pipeline), len(all), nOut, inOut)
	in := c.readCommitted(t, c.topic(input))
	where := map[int64]string{}
	for _, r := range in {
		var row struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(r.Value, &row) == nil {
			where[row.ID] = fmt.Sprintf("p%d@%d", r.Partition, r.Offset)
		}
	}
	var inInput []string
	notInInput := 0
	for _, id := range missing {
		if w, ok := where[id]; ok {
			if len(inInput) < 10 {
				inInput = append(inInput, fmt.Sprintf("%d at %s", id, w))
			}
		} else {
			notInInput++
		}
	}
	t.Logf("diagnosis: of %d missing ids, %d are in the input topic %s (read_committed, %d records), e.g. %v; %d are not",
		len(missing), len(missing)-notInInput, c.topic(input), len(in), inInput, notInInput)
	adm := kadm.NewClient(c.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	group := fvsqltest.StageGroup(ctx, adm, c.prefix, pipeline, "s0")
	committed, err := adm.FetchOffsets(ctx, group)
	ends, err2 := adm.ListCommittedOffsets(ctx, c.topic(input))
	if err != nil || err2 != nil {
		t.Logf("diagnosis: offsets of group %s: %v %v", group, err, err2)
		return
	}
	var parts []string
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(-1)
		if cm, ok := committed.Lookup(o.Topic, o.Partition); ok {
			at = cm.At
		}
		parts = append(parts, fmt.Sprintf("p%d committed %d / end %d", o.Partition, at, o.Offset))
	})
	sort.Strings(parts)
	t.Logf("diagnosis: group %s: %s", group, strings.Join(parts, ", "))
}

// logDuplicates logs where the copies of a few duplicated ids are.
func logDuplicates(t *testing.T, recs []*kgo.Record, dups []int64, n int) {
	t.Helper()
	want := map[int64]bool{}
	for _, id := range dups[:min(n, len(dups))] {
		want[id] = true
	}
	at := map[int64][]string{}
	for _, r := range recs {
		var row struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(r.Value, &row) == nil && want[row.ID] {
			at[row.ID] = append(at[row.ID], fmt.Sprintf("p%d@%d(producer %d epoch %d, ts %s)", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, r.Timestamp.Format("15:04:05.000")))
		}
	}
	for _, id := range dups[:min(n, len(dups))] {
		t.Logf("duplicate id %d at %s", id, strings.Join(at[id], ", "))
	}
}
