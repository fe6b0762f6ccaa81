package exactlyonce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/fvsql/fvsql/tests/testenv"
)

func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

const (
	seedEnv = "FVSQL_TEST_SEED"

	sqlTimeout   = 60 * time.Second
	flushTimeout = 150 * time.Second // the server bounds FLUSH at 2 min
	readTimeout  = 120 * time.Second // reading a topic to its committed end
	pollInterval = 200 * time.Millisecond
)

// serverArgs are the flags of every fvsql process: short epochs keep the
// tests fast. The idle timeout is long so that an input partition whose
// consumer is dead or restoring keeps holding the downstream watermark
// back (with the default 10 s, equal to the group session timeout, a
// repartition stage would leave a dead process's partitions out of the
// watermark and their rows would rightly come late: not what these tests
// are about).
// FVSQL_EO_LOG_LEVEL sets their log level (default info; debug logs
// every watermark move, which with FVSQL_TEST_LOG_DIR kept a failing
// run's story).
var serverArgs = []string{"--stream-checkpoint-interval", "200ms", "--stream-idle-timeout", "1h", "--log-level", cmp.Or(os.Getenv("FVSQL_EO_LOG_LEVEL"), "info")}

// seed returns the test's seed: FVSQL_TEST_SEED, or a random one; it is
// logged so a failing run can be repeated.
func seed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
		t.Logf("seed %d (from %s)", v, seedEnv)
		return v
	}
	v := rand.Uint64() % 1_000_000_000
	t.Logf("seed %d (repeat with %s=%d)", v, seedEnv, v)
	return v
}

// envInt reads a positive integer setting.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// cluster is the Kafka a test runs on and how fvsql processes reach it.
type cluster struct {
	mode   string // "embedded", "real" or "private"
	kafka  string // the real or private broker; empty in embedded mode
	prefix string
	host   *fvsqltest.Process // embedded: the process running the broker
	broker *fvsqltest.Kafka   // private: the broker the test controls
}

// eachBroker runs fn as the subtests "embedded" (the first fvsql process
// started runs the embedded broker and must never be killed) and "real"
// (FVSQL_TEST_KAFKA, each test under its own topic prefix).
func eachBroker(t *testing.T, fn func(t *testing.T, c *cluster)) {
	t.Run("embedded", func(t *testing.T) {
		start := time.Now()
		fn(t, &cluster{mode: "embedded"})
		t.Logf("TIMING %s: %s", t.Name(), time.Since(start).Round(time.Second))
	})
	t.Run("real", func(t *testing.T) {
		kafka := testenv.Kafka(t)
		prefix := testenv.UniqueName(strings.ReplaceAll(t.Name(), "/", "-")+"-") + "-"
		t.Logf("real Kafka %s, topic prefix %s", kafka, prefix)
		start := time.Now()
		fn(t, &cluster{mode: "real", kafka: kafka, prefix: prefix})
		t.Logf("TIMING %s: %s", t.Name(), time.Since(start).Round(time.Second))
	})
}

// start starts an fvsql process: in embedded mode the first one runs the
// broker and the others use it.
func (c *cluster) start(t *testing.T, name string, extra ...string) *fvsqltest.Process {
	t.Helper()
	cfg := fvsqltest.Config{Name: name, TopicPrefix: c.prefix, Args: append(append([]string{}, serverArgs...), extra...)}
	switch {
	case c.kafka != "":
		cfg.Kafka = c.kafka
	case c.host != nil:
		cfg.Kafka = c.host.KafkaBrokers()
		// fvsql exits when it cannot reach its Kafka at start.
		ctx, cancel := context.WithTimeout(context.Background(), fvsqltest.StartTimeout)
		err := c.host.WaitReady(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := fvsqltest.Start(t, cfg)
	if c.kafka == "" && c.host == nil {
		c.host = p
	}
	return p
}

func (c *cluster) brokers() []string {
	if c.kafka != "" {
		return strings.Split(c.kafka, ",")
	}
	return []string{c.host.KafkaBrokers()}
}

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

// connect opens a pgx connection (waiting up to fvsqltest.StartTimeout
// for the process), closed when the test ends.
func connect(t *testing.T, p *fvsqltest.Process) *pgx.Conn {
	t.Helper()
	return p.Connect(t)
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// ---------------------------------------------------------------- stats

// pipelineStats is a row of fvsql_catalog.pipelines.
type pipelineStats struct {
	Name, Status                               string
	Consumed, Emitted, Filtered, Dropped, Late int64
	Lag                                        *int64
	Partitions                                 int32
	Epochs                                     int64
	Restoring                                  int32
	RestoredKeys                               int64
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
	return fmt.Sprintf("%s %s consumed=%d emitted=%d filtered=%d dropped=%d late=%d lag=%s partitions=%d epochs=%d restoring=%d restored_keys=%d%s",
		s.Name, s.Status, s.Consumed, s.Emitted, s.Filtered, s.Dropped, s.Late, lag, s.Partitions, s.Epochs, s.Restoring, s.RestoredKeys, errText)
}

// allStats reads fvsql_catalog.pipelines on a server, by pipeline name.
func allStats(conn *pgx.Conn) (map[string]pipelineStats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT name, status, consumed, emitted, filtered, dropped, late, lag, partitions, epochs, restoring, restored_keys, error FROM fvsql_catalog.pipelines")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]pipelineStats{}
	for rows.Next() {
		var s pipelineStats
		if err := rows.Scan(&s.Name, &s.Status, &s.Consumed, &s.Emitted, &s.Filtered, &s.Dropped, &s.Late, &s.Lag, &s.Partitions, &s.Epochs, &s.Restoring, &s.RestoredKeys, &s.Error); err != nil {
			return nil, err
		}
		out[s.Name] = s
	}
	return out, rows.Err()
}

func renderStats(m map[string]pipelineStats) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = m[n].String()
	}
	return strings.Join(parts, "; ")
}

// waitAllStats polls a server's pipelines until cond holds (it fails the
// test after timeout, with the last rows seen).
func waitAllStats(t *testing.T, conn *pgx.Conn, timeout time.Duration, what string, cond func(map[string]pipelineStats) bool) map[string]pipelineStats {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	last := "(nothing yet)"
	for {
		m, err := allStats(conn)
		if err != nil {
			last = "error: " + err.Error()
		} else {
			last = renderStats(m)
			if cond(m) {
				t.Logf("%s after %s: %s", what, time.Since(start).Round(time.Millisecond), last)
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last fvsql_catalog.pipelines: %s", timeout, what, last)
		}
		time.Sleep(pollInterval)
	}
}

// sharedPartitions waits until the processes together own every
// partition of every stage of the named pipelines (parts per stage; see
// stagesOf), each owning some.
func sharedPartitions(t *testing.T, timeout time.Duration, parts int32, pipelines []string, conns ...*pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	for {
		var last []string
		ok := true
		sums := map[string]int32{}
		for i, conn := range conns {
			m, err := allStats(conn)
			if err != nil {
				ok = false
				last = append(last, fmt.Sprintf("process %d: %v", i, err))
				continue
			}
			last = append(last, fmt.Sprintf("process %d: %s", i, renderStats(m)))
			for _, p := range pipelines {
				s, found := m[p]
				if !found || s.Partitions == 0 {
					ok = false
				}
				sums[p] += s.Partitions
			}
		}
		for _, p := range pipelines {
			if sums[p] != parts*stagesOf[p] {
				ok = false
			}
		}
		if ok {
			t.Logf("partitions shared after %s: %s", time.Since(start).Round(time.Millisecond), strings.Join(last, " | "))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %s the processes did not share the %d partitions of %v: %s", timeout, parts, pipelines, strings.Join(last, " | "))
		}
		time.Sleep(pollInterval)
	}
}

// describeGroups logs the members (id, address, assigned partitions) of
// consumer groups and returns the largest member count.
// stageGroup names the consumer group of a pipeline's stage (fvsqltest.StageGroup).
func stageGroup(t *testing.T, c *cluster, pipeline, stage string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return fvsqltest.StageGroup(ctx, kadm.NewClient(c.client(t)), c.prefix, pipeline, stage)
}

func describeGroups(t *testing.T, c *cluster, groups ...string) int {
	t.Helper()
	adm := kadm.NewClient(c.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, groups...)
	if err != nil {
		t.Logf("describing groups: %v", err)
		return 0
	}
	most := 0
	for _, g := range groups {
		d, ok := described[g]
		if !ok {
			continue
		}
		var members []string
		for _, m := range d.Members {
			assigned := ""
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, tp := range a.Topics {
					assigned += fmt.Sprintf("%s%v", tp.Topic, tp.Partitions)
				}
			}
			members = append(members, fmt.Sprintf("%s@%s{%s}", m.MemberID, m.ClientHost, assigned))
		}
		t.Logf("group %s: state %s, %d members: %s", g, d.State, len(d.Members), strings.Join(members, " "))
		most = max(most, len(d.Members))
	}
	return most
}

// ---------------------------------------------------------------- FLUSH

// flush runs FLUSH on srv. FLUSH is bounded at 2 minutes by the server,
// and after many kills a backlog may take longer, so a FLUSH that timed out
// (57014) is retried, up to attempts times in all, as long as the
// pipelines' total lag on srv went down during the attempt. onFail runs
// before the test fails (diagnosis).
func flush(t *testing.T, srv *fvsqltest.Process, attempts int, onFail ...func()) {
	t.Helper()
	lag := func() (int64, string) {
		c2, err := pgx.Connect(context.Background(), srv.DSN())
		if err != nil {
			return -1, "(stats unavailable: " + err.Error() + ")"
		}
		defer c2.Close(context.Background())
		m, err := allStats(c2)
		if err != nil {
			return -1, "(stats unavailable: " + err.Error() + ")"
		}
		var sum int64
		for _, s := range m {
			if s.Lag != nil {
				sum += *s.Lag
			}
		}
		return sum, renderStats(m)
	}
	before, _ := lag()
	for i := 1; ; i++ {
		conn := srv.Connect(t)
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		start := time.Now()
		_, err := conn.Exec(ctx, "FLUSH")
		cancel()
		conn.Close(context.Background())
		took := time.Since(start).Round(time.Millisecond)
		if err == nil {
			t.Logf("FLUSH on %s took %s (attempt %d)", srv.Name(), took, i)
			return
		}
		after, st := lag()
		var pgErr *pgconn.PgError
		timedOut := errors.As(err, &pgErr) && pgErr.Code == "57014"
		if !srv.Running() {
			t.Fatalf("BUG?: fvsql %s died during FLUSH (after %s): %v", srv.Name(), took, err)
		}
		if i >= attempts || !timedOut || after < 0 || before >= 0 && after >= before {
			for _, f := range onFail {
				f()
			}
			t.Fatalf("FLUSH on %s failed after %s (attempt %d of %d; lag %d before, %d after): %v; pipelines: %s",
				srv.Name(), took, i, attempts, before, after, err, st)
		}
		t.Logf("FLUSH on %s timed out after %s (attempt %d of %d) while the lag went from %d to %d; retrying: %v; pipelines: %s",
			srv.Name(), took, i, attempts, before, after, err, st)
		before = after
	}
}

// ---------------------------------------------------------------- reading

// readCommitted returns every record of topic that a read_committed
// consumer sees, once no transaction is open on the topic (last stable
// offset = high watermark on every partition; a killed or paused process's
// transaction holds partitions back until it is fenced or times out).
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

// offsets lists a topic's last stable offsets and high watermarks.
func (c *cluster) offsets(t *testing.T, topic string) (lso, hwm map[int32]int64, err error) {
	t.Helper()
	adm := kadm.NewClient(c.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err1 := adm.ListCommittedOffsets(ctx, topic)
	h, err2 := adm.ListEndOffsets(ctx, topic)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	if err := errors.Join(l.Error(), h.Error()); err != nil {
		return nil, nil, err
	}
	lso, hwm = map[int32]int64{}, map[int32]int64{}
	l.Each(func(o kadm.ListedOffset) { lso[o.Partition] = o.Offset })
	h.Each(func(o kadm.ListedOffset) { hwm[o.Partition] = o.Offset })
	return lso, hwm, nil
}

// ---------------------------------------------------------------- producing

// producer writes the dataset's records into the input topic with a plain
// idempotent franz-go producer, in order, as far as the driver releases
// them (release), in the background.
type producer struct {
	t      *testing.T
	cl     *kgo.Client
	recs   []*kgo.Record
	ctx    context.Context // canceled by stop
	cancel context.CancelFunc

	mu       sync.Mutex
	cond     *sync.Cond
	released int
	produced int
	err      error
	stopped  bool
	done     chan struct{}
}

func startProducer(t *testing.T, c *cluster, topic string, recs []*kgo.Record) *producer {
	t.Helper()
	cl := c.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordDeliveryTimeout(5*time.Minute), kgo.MaxBufferedRecords(20000))
	p := &producer{t: t, cl: cl, recs: recs, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.cond = sync.NewCond(&p.mu)
	go p.run()
	t.Cleanup(p.stop)
	return p
}

func (p *producer) run() {
	defer close(p.done)
	const chunk = 2000
	for {
		p.mu.Lock()
		for p.produced >= p.released && !p.stopped {
			p.cond.Wait()
		}
		if p.stopped {
			p.mu.Unlock()
			return
		}
		from, to := p.produced, min(p.released, p.produced+chunk)
		p.mu.Unlock()
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Minute)
		err := p.cl.ProduceSync(ctx, p.recs[from:to]...).FirstErr()
		cancel()
		p.mu.Lock()
		if err != nil {
			p.err = fmt.Errorf("producing records %d..%d: %w", from, to-1, err)
			p.stopped = true
			p.cond.Broadcast()
			p.mu.Unlock()
			return
		}
		p.produced = to
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// release lets the producer write up to n records (in all).
func (p *producer) release(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.released = max(p.released, min(n, len(p.recs)))
	p.cond.Broadcast()
}

func (p *producer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produced
}

// wait waits until everything released is produced.
func (p *producer) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.produced < p.released && p.err == nil {
		if time.Now().After(deadline) {
			t.Fatalf("producer: %d of %d released records produced within %s", p.produced, p.released, timeout)
		}
		p.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		p.mu.Lock()
	}
	if p.err != nil {
		t.Fatalf("producer: %v", p.err)
	}
}

func (p *producer) stop() {
	p.cancel()
	p.mu.Lock()
	p.stopped = true
	p.cond.Broadcast()
	p.mu.Unlock()
	<-p.done
}

// pace releases the records in steps of step records every interval
// until all are released or stop is closed (in the background).
func (p *producer) pace(step int, interval time.Duration, upto int, stop <-chan struct{}) {
	go func() {
		n := p.count()
		for n < upto {
			n = min(n+step, upto)
			p.release(n)
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
}
