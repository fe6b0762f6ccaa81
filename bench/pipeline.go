package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fvsql/fvsql/engine"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// PipelineConfig configures the pipeline scenario.
type PipelineConfig struct {
	Rows       []int64  // stream lengths (default 500k and 2M)
	Partitions int      // of the input stream (default 8)
	Runs       int      // runs per variant (default 1; the median is reported)
	Variants   []string // raw, rawtxn, eos, alo (default all)
	// CatchupTimeout bounds one variant's catch-up (default 5m).
	CatchupTimeout time.Duration
}

// Pipeline targets.
const (
	PipelineRatioTarget   = 0.60    // fvsql ≥ 60% of the raw copy
	PipelinePerCoreTarget = 150_000 // rows/s per core
)

// pipelineSQL is the continuous query measured.
const pipelineSQL = "CREATE STREAM %s AS SELECT id, upper(sym) AS sym, price * 2 AS p FROM %s WHERE qty > 10"

// variantResult is one variant's measurement.
type variantResult struct {
	variant    string
	rows       int64
	durs       []time.Duration
	hostCPUs   []time.Duration
	procCPUs   []time.Duration
	brokerCPUs []time.Duration
	otherCPUs  []time.Duration
	hostCPU    time.Duration // medians over runs
	procCPU    time.Duration // the fvsql server's process, or the bench process for raw copies
	brokerCPU  time.Duration
	otherCPU   time.Duration
	peakRSS    int64 // highest over runs
	peakHeap   int64
	rssAt0     int64
	emitted    int64
	note       string
	checks     []string // failed output checks
}

func (v *variantResult) median() time.Duration { return Median(v.durs) }

// Pipeline runs the pipeline scenario.
func Pipeline(ctx context.Context, o Options, c PipelineConfig) error {
	orDefaults(&c.Rows, 500_000, 2_000_000)
	orDefault(&c.Partitions, 8)
	orDefault(&c.Runs, 1)
	orDefaults(&c.Variants, "raw", "rawtxn", "eos", "alo")
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	for _, v := range c.Variants {
		switch v {
		case "raw", "rawtxn", "eos", "alo":
		default:
			return fmt.Errorf("unknown variant %q (want raw, rawtxn, eos, alo)", v)
		}
	}
	h, ctx, err := newHarness(ctx, o, true)
	if err != nil {
		return err
	}
	defer h.close()

	// One fvsql server at a time, with the exactly-once setting of the
	// variant. The first defines the input streams; later ones (the other
	// setting) share the catalog through the broker. With --url there is
	// only the server's own setting.
	exactly := true
	use := func(exactlyOnce bool) error {
		if h.srv != nil && (h.o.URL != "" || exactly == exactlyOnce) {
			return nil
		}
		st := h.o.Stream
		st.ExactlyOnce = exactlyOnce
		if err := h.serve(ctx, serverSpec{stream: st}); err != nil {
			return err
		}
		exactly = exactlyOnce
		return nil
	}
	if err := use(true); err != nil {
		return err
	}
	h.header("pipeline",
		fmt.Sprintf("workload: M JSON rows (id, sym, price, qty, ts) loaded by franz-go into a %d-partition stream, then the time until everything is processed:", c.Partitions),
		"  raw     franz-go consumer group copying every record unchanged to another topic, at-least-once (commit after flush, every checkpoint interval)",
		"  rawtxn  the same with GroupTransactSession: one transaction per checkpoint interval holding the output and the offsets",
		"  eos     fvsql: "+fmt.Sprintf(pipelineSQL, "out", "s")+" (STREAM_EXACTLY_ONCE=on)",
		"  alo     the same with STREAM_EXACTLY_ONCE=off (at-least-once)",
		fmt.Sprintf("  raw copies use %d consumer goroutines (= STREAM_CONSUMERS), the same franz-go client options as fvsql's pipeline consumers, and the same checkpoint interval (%s)", h.o.Stream.Consumers, h.o.Stream.CheckpointInterval),
		"  done = all input committed: for raw copies the group's committed offsets reach the input's end offsets; for fvsql `consumed` in fvsql_catalog.pipelines reaches M (polled every 50 ms)",
	)

	var results [][]*variantResult // per M
	for _, m := range c.Rows {
		in := h.name("s_" + strconv.FormatInt(m, 10))
		if err := use(true); err != nil {
			return err
		}
		g := Gen{WithID: true}
		want := g.Expected(m, 0)
		if _, err := h.createStream(ctx, streamSpec{name: in, columns: "(id BIGINT, sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP)",
			partitions: c.Partitions, rows: m, row: g.AppendJSON}); err != nil {
			return err
		}
		adm, err := h.admin()
		if err != nil {
			return err
		}
		ends, err := endOffsets(ctx, adm, h.prefix+in)
		if err != nil {
			return err
		}
		var res []*variantResult
		for _, v := range c.Variants {
			vr := &variantResult{variant: v, rows: m, emitted: want.CountQtyOver10, peakRSS: -1, peakHeap: -1}
			for run := 0; run < c.Runs; run++ {
				tag := fmt.Sprintf("%s_%d_%d", v, m, run)
				var p *phase
				var err error
				switch v {
				case "raw", "rawtxn":
					p, err = measureRawCopy(ctx, h, h.prefix+in, ends, tag, v == "rawtxn", c)
				case "eos", "alo":
					exactlyOnce := v == "eos"
					if h.o.URL != "" && !exactlyOnce && contains(c.Variants, "eos") {
						vr.note = "skipped: --url runs only the server's own setting (reported as eos)"
						break
					}
					if err := use(exactlyOnce); err != nil {
						return err
					}
					p, err = measureFvsql(ctx, h, in, h.name("out_"+tag), want, c)
				}
				if err != nil {
					return fmt.Errorf("%s, M=%d: %w", v, m, err)
				}
				if p == nil {
					break
				}
				if p.check != "" {
					vr.checks = append(vr.checks, fmt.Sprintf("%s run %d: %s", v, run, p.check))
				}
				vr.durs = append(vr.durs, p.dur)
				vr.hostCPUs = append(vr.hostCPUs, p.hostCPU)
				vr.procCPUs = append(vr.procCPUs, p.srvCPU)
				vr.brokerCPUs = append(vr.brokerCPUs, p.brokerCPU)
				vr.otherCPUs = append(vr.otherCPUs, p.otherCPU)
				vr.hostCPU, vr.procCPU = Median(vr.hostCPUs), Median(vr.procCPUs)
				vr.brokerCPU, vr.otherCPU = Median(vr.brokerCPUs), Median(vr.otherCPUs)
				vr.peakRSS = max(vr.peakRSS, p.u1.PeakRSS)
				vr.peakHeap = max(vr.peakHeap, p.u1.PeakHeap)
				vr.rssAt0 = p.u0.RSS
			}
			res = append(res, vr)
		}
		results = append(results, res)
		if err := h.exec(ctx, "DROP STREAM "+in); err != nil {
			return err
		}
	}
	printPipeline(h, c, results)
	h.printProfiles()
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func printPipeline(h *harness, c PipelineConfig, results [][]*variantResult) {
	cores := float64(numCPU())
	for _, res := range results {
		if len(res) == 0 {
			continue
		}
		m := res[0].rows
		tb := Table{
			Title: fmt.Sprintf("pipeline: catch-up over M = %s rows (%d partitions; median of %d run(s))", Count(float64(m)), c.Partitions, c.Runs),
			Header: []string{"variant", "duration", "rows/s", "vs raw", "vs rawtxn", "rows/s/host-core", "proc cpu s", "rows/proc-cpu-s",
				"broker cpu s", "other cpu s", "RSS before", "peak RSS", "peak heap", "targets"},
		}
		var raw, rawtxn float64
		for _, v := range res {
			if len(v.durs) == 0 {
				continue
			}
			switch v.variant {
			case "raw":
				raw = Rate(v.rows, v.median())
			case "rawtxn":
				rawtxn = Rate(v.rows, v.median())
			}
		}
		for _, v := range res {
			if len(v.durs) == 0 {
				tb.Add(v.variant, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", v.note)
				continue
			}
			rate := Rate(v.rows, v.median())
			ratio := func(base float64) string {
				if base == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f%%", 100*rate/base)
			}
			target := ""
			if v.variant == "eos" || v.variant == "alo" {
				perCore := Rate(v.rows, v.procCPU) >= PipelinePerCoreTarget
				ratioOK := raw == 0 || rate/raw >= PipelineRatioTarget
				switch {
				case perCore && ratioOK:
					target = "met"
				case !perCore && !ratioOK:
					target = "MISSED both"
				case !perCore:
					target = "MISSED per-core"
				default:
					target = "MISSED vs raw"
				}
			}
			if len(v.checks) > 0 {
				target = "OUTPUT WRONG: see notes"
			}
			tb.Add(v.variant, Secs(v.median()), Count(rate), ratio(raw), ratio(rawtxn), Count(rate/cores),
				cpuSecs(v.procCPU), perCPU(v.rows, v.procCPU), cpuSecs(v.brokerCPU), cpuSecs(v.otherCPU),
				MiB(v.rssAt0), MiB(v.peakRSS), MiB(v.peakHeap), target)
		}
		tb.Notes = []string{
			fmt.Sprintf("rows/s/host-core = rows/s ÷ %d CPUs of the host", int(cores)),
			"proc = the fvsql server's process for eos/alo, the bench process (the copy's clients) for raw/rawtxn; either includes the embedded broker when it runs in that process (inproc mode; the bench process in child mode)",
			"broker cpu = a separate broker's (--broker-pid), or in child mode the bench process that hosts the embedded broker; other cpu = the rest of the host's busy CPU (the bench's polling when separate, other tenants)",
			"RSS before / peak RSS / peak heap: of that process, reset before each run; the fvsql rows show what the pipeline needs",
			fmt.Sprintf("fvsql output checked: SELECT count(*) = %s rows with qty > 10", Count(float64(res[0].emitted))),
			fmt.Sprintf("targets: fvsql ≥ %.0f%% of raw rows/s, and ≥ %s rows per CPU-second of the fvsql process (rows/proc-cpu-s)", 100*PipelineRatioTarget, Count(PipelinePerCoreTarget)),
		}
		for _, v := range res {
			tb.Notes = append(tb.Notes, v.checks...)
		}
		tb.Print(h.o.Out)
	}
	if len(results) > 1 {
		tb := Table{
			Title:  "pipeline: fvsql peak memory vs stream length (does it grow with M?)",
			Header: []string{"variant"},
		}
		for _, res := range results {
			if len(res) > 0 {
				tb.Header = append(tb.Header, "M="+Count(float64(res[0].rows))+" peak RSS", "peak heap")
			}
		}
		for _, v := range []string{"eos", "alo"} {
			row := []string{v}
			any := false
			for _, res := range results {
				for _, x := range res {
					if x.variant == v && len(x.durs) > 0 {
						row = append(row, MiB(x.peakRSS), MiB(x.peakHeap))
						any = true
					}
				}
			}
			if any {
				tb.Add(row...)
			}
		}
		tb.Print(h.o.Out)
	}
}

// measureFvsql creates the pipeline and waits until it has consumed every
// input row; then it checks the output and drops the pipeline.
func measureFvsql(ctx context.Context, h *harness, in, out string, want Expect, c PipelineConfig) (*phase, error) {
	var last pipeStat
	ph, err := h.measure(ctx, "pipeline-"+out, func() error {
		var err error
		last, err = h.catchUp(ctx, fmt.Sprintf(pipelineSQL, out, in), out, want.N, false, c.CatchupTimeout)
		return err
	})
	if err != nil {
		return nil, err
	}
	got, err := countRows(ctx, h.conn, out)
	if err != nil {
		return nil, err
	}
	if got != want.CountQtyOver10 {
		// Keep the figures; say what is wrong with the output.
		ph.check = fmt.Sprintf("OUTPUT CHECK FAILED: %s holds %d rows, want %d", out, got, want.CountQtyOver10)
		var distinct int64
		dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		if err := h.conn.QueryRow(dctx, "SELECT count(DISTINCT id) FROM "+out).Scan(&distinct); err == nil {
			ph.check += fmt.Sprintf(" (%d distinct ids: %d duplicates)", distinct, got-distinct)
		}
		// Where the duplicates come from: input partition (id % partitions)
		// and id range, so a whole repeated batch or transaction shows.
		rows, err := h.conn.Query(dctx, fmt.Sprintf("SELECT id %% %d AS part, count(*), min(id), max(id) FROM (SELECT id FROM %s GROUP BY id HAVING count(*) > 1) d GROUP BY 1 ORDER BY 1", c.Partitions, out))
		if err == nil {
			var parts []string
			for rows.Next() {
				var part, n, lo, hi int64
				if rows.Scan(&part, &n, &lo, &hi) == nil {
					parts = append(parts, fmt.Sprintf("input partition %d: %d duplicated ids in %d…%d", part, n, lo, hi))
				}
			}
			rows.Close()
			if len(parts) > 0 {
				ph.check += "; " + strings.Join(parts, ", ")
			}
		}
		cancel()
		ph.check += "; pipeline: " + last.String()
		fmt.Fprintln(os.Stderr, "bench:", ph.check)
	}
	if err := h.exec(ctx, "DROP STREAM "+out); err != nil {
		return nil, err
	}
	return ph, nil
}

// selfServer measures the bench process itself (for the raw copies).
type selfServer struct{ Server }

func (selfServer) PID() int              { return os.Getpid() }
func (selfServer) Usage() (Usage, error) { return SelfUsage(), nil }
func (selfServer) ResetPeaks() error     { return ResetSelfPeaks() }

// measureRawCopy copies the input topic to a new topic with a consumer
// group, as fvsql's pipeline consumers would without SQL, and measures it.
func measureRawCopy(ctx context.Context, h *harness, in string, ends map[int32]int64, tag string, txn bool, c PipelineConfig) (*phase, error) {
	out := h.prefix + "raw_" + tag
	group := h.prefix + "bench.raw." + h.id + "." + tag
	brokers := h.srv.Brokers()
	adm, err := h.admin()
	if err != nil {
		return nil, err
	}
	if err := createTopic(ctx, adm, out, c.Partitions); err != nil {
		return nil, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteGroups(dctx, group)
		_, _ = adm.DeleteTopics(dctx, out)
	}()
	cctx, cancel := context.WithTimeout(ctx, c.CatchupTimeout)
	defer cancel()
	wctx, stop := context.WithCancel(cctx)
	defer stop()
	st := h.o.Stream
	var wg sync.WaitGroup
	ph, err := h.measureOn(ctx, selfServer{}, "", func() error {
		var firstErr atomic.Value
		for i := 0; i < st.Consumers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if txn {
					err = rawTxnCopy(wctx, brokers, in, out, group, h.prefix+"bench.rawtxn."+h.id+"."+tag+"."+strconv.Itoa(i), st)
				} else {
					err = rawCopy(wctx, brokers, in, out, group, st)
				}
				if err != nil && wctx.Err() == nil {
					firstErr.CompareAndSwap(nil, err)
					stop()
				}
			}()
		}
		// Done when the group's committed offsets reach the input's end.
		for {
			if err, _ := firstErr.Load().(error); err != nil {
				return err
			}
			if committedAll(cctx, adm, group, in, ends) {
				return nil
			}
			select {
			case <-cctx.Done():
				return fmt.Errorf("raw copy did not finish within %s", c.CatchupTimeout)
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	stop()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	// The copy must hold at least every input record (at-least-once may
	// hold more; transactional offsets also count commit markers).
	oe, err := endOffsets(ctx, adm, out)
	if err != nil {
		return nil, err
	}
	var total, want int64
	for _, o := range oe {
		total += o
	}
	for _, o := range ends {
		want += o
	}
	if total < want {
		return nil, fmt.Errorf("raw copy %s holds %d offsets, want ≥ %d", out, total, want)
	}
	return ph, nil
}

func committedAll(ctx context.Context, adm *kadm.Client, group, topic string, ends map[int32]int64) bool {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(qctx, group)
	if err != nil {
		return false
	}
	for p, end := range ends {
		if end == 0 {
			continue
		}
		o, ok := offs.Lookup(topic, p)
		if !ok || o.Err != nil || o.At < end {
			return false
		}
	}
	return true
}

// rawClientOpts are fvsql's pipeline consumer options (engine's
// clientOpts) without SQL: the baseline differs from fvsql only in what
// happens to a record between poll and produce.
func rawClientOpts(brokers []string, in, group string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(10 * time.Second),
		kgo.RebalanceTimeout(30 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(4 << 20),
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
	}
}

func copyOf(r *kgo.Record, out string) *kgo.Record {
	return &kgo.Record{Topic: out, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
}

// rawCopy is one at-least-once copying consumer: poll for a checkpoint
// interval producing every record, flush, commit, repeat.
func rawCopy(ctx context.Context, brokers []string, in, out, group string, st engine.Config) error {
	cl, err := kgo.NewClient(append(rawClientOpts(brokers, in, group), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var prodErr atomic.Value
	cb := func(_ *kgo.Record, err error) {
		if err != nil {
			prodErr.CompareAndSwap(nil, err)
		}
	}
	for ctx.Err() == nil {
		deadline := time.Now().Add(st.CheckpointInterval)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			pctx, cancel := context.WithDeadline(ctx, deadline)
			fs := cl.PollRecords(pctx, st.BatchSize)
			cancel()
			if err := fetchError(fs); err != nil {
				cl.AllowRebalance()
				return err
			}
			fs.EachRecord(func(r *kgo.Record) {
				if !r.Attrs.IsControl() {
					cl.Produce(context.Background(), copyOf(r, out), cb)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			cl.AllowRebalance()
			return nil // cancelled
		}
		if err, _ := prodErr.Load().(error); err != nil {
			cl.AllowRebalance()
			return err
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.CommitUncommittedOffsets(cctx)
		cancel()
		cl.AllowRebalance()
		if err != nil {
			return err
		}
	}
	return nil
}

// rawTxnCopy is one transactional copying consumer: each checkpoint
// interval's output and offsets commit in one transaction.
func rawTxnCopy(ctx context.Context, brokers []string, in, out, group, txnID string, st engine.Config) error {
	sess, err := kgo.NewGroupTransactSession(append(rawClientOpts(brokers, in, group),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(max(10*time.Second, 3*st.CheckpointInterval)))...)
	if err != nil {
		return err
	}
	defer sess.Close()
	var prodErr atomic.Value
	cb := func(_ *kgo.Record, err error) {
		if err != nil {
			prodErr.CompareAndSwap(nil, err)
		}
	}
	for ctx.Err() == nil {
		if err := sess.Begin(); err != nil {
			return err
		}
		deadline := time.Now().Add(st.CheckpointInterval)
		var pollErr error
		for time.Now().Before(deadline) && ctx.Err() == nil {
			pctx, cancel := context.WithDeadline(ctx, deadline)
			fs := sess.PollRecords(pctx, st.BatchSize)
			cancel()
			if pollErr = fetchError(fs); pollErr != nil {
				break
			}
			fs.EachRecord(func(r *kgo.Record) {
				if !r.Attrs.IsControl() {
					sess.Produce(context.Background(), copyOf(r, out), cb)
				}
			})
		}
		try := kgo.TryCommit
		if pollErr != nil || prodErr.Load() != nil || ctx.Err() != nil {
			try = kgo.TryAbort
		}
		ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := sess.End(ectx, try)
		cancel()
		if err != nil {
			return err
		}
		if pollErr != nil {
			return pollErr
		}
		if err, _ := prodErr.Load().(error); err != nil {
			return err
		}
	}
	return nil
}

func fetchError(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if first == nil {
			first = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
		}
	})
	if first == nil && fs.IsClientClosed() {
		return errors.New("client closed")
	}
	return first
}

func numCPU() int {
	n := 0
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, _ := strconv.ParseFloat(f[0], 64)
			p, _ := strconv.ParseFloat(f[1], 64)
			if p > 0 {
				n = int(q/p + 0.5)
			}
		}
	}
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return n
}
