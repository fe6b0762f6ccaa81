package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// EOSConfig configures the eos scenario.
type EOSConfig struct {
	Rows       int64           // rows of the bids stream (default 2M)
	Partitions int             // of the bids stream (default 4)
	Auctions   int64           // distinct auctions (default 10k)
	Intervals  []time.Duration // checkpoint intervals (default 100ms, 1s, 10s)
	// LatencyIntervals are the intervals at which end-to-end latency is
	// measured (default 100ms and 1s; each must be in Intervals).
	LatencyIntervals []time.Duration
	LatencyRate      int // rows/s of the latency producer (default 5000)
	// Keyed runs the TUMBLE catch-up over the bids stream keyed by auction
	// (the windows scenario's tumble-keyed) instead of unkeyed.
	Keyed           bool
	LatencyDuration time.Duration // how long it produces (default 20s)
	// CatchupTimeout bounds one catch-up (default 5m).
	CatchupTimeout time.Duration
}

// EOSLossTarget is the largest share of the at-least-once rate that
// exactly-once may lose at a 1 s checkpoint interval.
const EOSLossTarget = 0.10

// eosRun is one (interval, mode) server's figures.
type eosRun struct {
	interval time.Duration
	eos      bool
	res      *windowsResult
	lat      *latencyResult
}

// EOS runs the eos scenario: the TUMBLE catch-up and the end-to-end
// latency of a stateless pipeline, with exactly-once on and off, at
// several checkpoint intervals. Each setting is its own server, one at a
// time, against one broker.
func EOS(ctx context.Context, o Options, c EOSConfig) error {
	orDefault(&c.Rows, 2_000_000)
	orDefault(&c.Partitions, 4)
	orDefault(&c.Auctions, 10_000)
	orDefaults(&c.Intervals, 100*time.Millisecond, time.Second, 10*time.Second)
	if c.LatencyIntervals == nil {
		c.LatencyIntervals = []time.Duration{100 * time.Millisecond, time.Second}
	}
	orDefault(&c.LatencyRate, 5000)
	orDefault(&c.LatencyDuration, 20*time.Second)
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	if o.URL != "" {
		return errors.New("eos starts servers with different settings: it cannot use --url")
	}
	h, ctx, err := newHarness(ctx, o, true)
	if err != nil {
		return err
	}
	defer h.close()

	// One server per (interval, setting), one at a time.
	use := func(interval time.Duration, eos bool) error {
		st := h.o.Stream
		st.CheckpointInterval, st.ExactlyOnce = interval, eos
		return h.serve(ctx, serverSpec{stream: st})
	}
	if err := use(c.Intervals[0], true); err != nil {
		return err
	}
	g := BidGen{N: c.Rows, Partitions: c.Partitions, Auctions: c.Auctions, Bidders: 1_000_000}
	bids := streamSpec{name: "bids", columns: bidsColumns, partitions: c.Partitions}
	keyDesc := "unkeyed: a repartition stage, then the aggregation"
	if c.Keyed {
		g = g.KeyedSentinels()
		bids.name, bids.key, bids.keyOf, keyDesc = "bids_k", "auction", g.Key, "keyed by auction: one stage"
	}
	bids.rows, bids.row = g.Total(), g.AppendJSON
	in := bids.name
	tumble := windowsVariants["tumble"]
	var ivs []string
	for _, iv := range c.Intervals {
		ivs = append(ivs, iv.String())
	}
	var livs []string
	for _, iv := range c.LatencyIntervals {
		livs = append(livs, iv.String())
	}
	h.header("eos",
		fmt.Sprintf("workload: the windows scenario's bids stream (%d partitions, %s rows + sentinels; %s) and its TUMBLE query:", c.Partitions, Count(float64(c.Rows)), keyDesc),
		"  "+fmt.Sprintf(tumble.sql, "t", in),
		fmt.Sprintf("  caught up from the start with STREAM_EXACTLY_ONCE on (eos) and off (alo) at checkpoint intervals %s: one server per setting, one at a time, one broker", strings.Join(ivs, ", ")),
		fmt.Sprintf("latency:  at %s, a stateless pipeline CREATE STREAM o AS SELECT id, sent FROM lat WHERE v >= 0 over a fresh %d-partition stream; a franz-go producer writes %d rows/s for %s,",
			strings.Join(livs, ", "), c.Partitions, c.LatencyRate, c.LatencyDuration),
		"  each carrying its send time (Unix ns); a read_committed franz-go consumer of o's topic records receive time − send time",
	)
	want := g.Expected(10*time.Second, 2*time.Second)
	if _, err := h.createStream(ctx, bids); err != nil {
		return err
	}
	fmt.Fprintln(h.o.Out)

	var runs []*eosRun
	first := true
	for _, iv := range c.Intervals {
		for _, eos := range []bool{true, false} {
			if !first {
				if err := use(iv, eos); err != nil {
					return err
				}
			}
			first = false
			mode := map[bool]string{true: "eos", false: "alo"}[eos]
			tag := mode + "_" + durTag(iv)
			wv := tumble
			wv.rel, wv.phase = "t_"+tag, "eos-tumble-"+tag
			res, err := h.measureWindowed(ctx, wv, in, g, want, c.CatchupTimeout)
			if err != nil {
				return fmt.Errorf("%s at %s: %w", mode, iv, err)
			}
			er := &eosRun{interval: iv, eos: eos, res: res}
			for _, liv := range c.LatencyIntervals {
				if liv == iv {
					if er.lat, err = measureLatency(ctx, h, tag, iv, c); err != nil {
						return fmt.Errorf("latency, %s at %s: %w", mode, iv, err)
					}
				}
			}
			runs = append(runs, er)
		}
	}
	printEOS(h, c, g, runs)
	h.printProfiles()
	return nil
}

// durTag renders a duration for a relation name: 100ms, 1s, 1500ms.
func durTag(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

func printEOS(h *harness, c EOSConfig, g BidGen, runs []*eosRun) {
	tb := Table{
		Title: fmt.Sprintf("eos: TUMBLE catch-up over %s rows, exactly-once (eos) vs at-least-once (alo)", Count(float64(g.Total()))),
		Header: []string{"interval", "eos duration", "eos rows/s", "alo duration", "alo rows/s", "eos/alo", "eos cpu s", "alo cpu s",
			"eos rows/cpu-s", "alo rows/cpu-s", "eos/alo per cpu", "eos other cpu s", "alo other cpu s", "eos peak RSS", "alo peak RSS", "targets"},
	}
	var notes []string
	for _, iv := range c.Intervals {
		var e, a *windowsResult
		for _, x := range runs {
			if x.interval == iv {
				if x.eos {
					e = x.res
				} else {
					a = x.res
				}
			}
		}
		if e == nil || a == nil {
			continue
		}
		er, ar := Rate(g.Total(), e.ph.dur), Rate(g.Total(), a.ph.dur)
		ratio := er / ar
		target := "-"
		if iv == time.Second {
			target = verdict(ratio >= 1-EOSLossTarget)
		}
		for _, x := range []*windowsResult{e, a} {
			if x.check != "" {
				target = "OUTPUT WRONG: see notes"
				notes = append(notes, x.v.rel+": "+x.check)
			}
			if x.unfinished != "" {
				target = "MISSED: did not catch up, see notes"
				notes = append(notes, x.v.rel+": "+x.unfinished)
			}
		}
		cpuRatio := "-"
		if e.ph.srvCPU > 0 && a.ph.srvCPU > 0 {
			cpuRatio = fmt.Sprintf("%.2f", a.ph.srvCPU.Seconds()/e.ph.srvCPU.Seconds())
		}
		tb.Add(iv.String(), Secs(e.ph.dur), Count(er), Secs(a.ph.dur), Count(ar), fmt.Sprintf("%.2f", ratio),
			cpuSecs(e.ph.srvCPU), cpuSecs(a.ph.srvCPU), perCPU(g.Total(), e.ph.srvCPU), perCPU(g.Total(), a.ph.srvCPU), cpuRatio,
			cpuSecs(e.ph.otherCPU), cpuSecs(a.ph.otherCPU), MiB(e.ph.u1.PeakRSS), MiB(a.ph.u1.PeakRSS), target)
	}
	tb.Notes = append([]string{
		"duration = from CREATE until consumed = the input's rows and lag = 0; epochs commit every interval, so durations are quantised by it (at 10 s, by whole epochs)",
		"cpu = the fvsql server's process (in-process mode: also the embedded broker); eos/alo per cpu = rows per CPU-second of eos ÷ those of alo (the cost on a busy host, where wall-clock rates follow the other tenants); other cpu = the host's busy CPU used by neither the server nor the bench (other tenants); peak RSS = the server's VmHWM during the catch-up",
		fmt.Sprintf("target: at 1 s, eos loses < %.0f%% of alo's rate (eos/alo ≥ %.2f, wall clock); anchor: Kafka Streams loses 15-30%% at 100 ms", 100*EOSLossTarget, 1-EOSLossTarget),
		"output checked as in the windows scenario (closed windows of the real rows: count, sum(bids), sum(top))",
	}, notes...)
	tb.Print(h.o.Out)

	lt := Table{
		Title:  fmt.Sprintf("eos: end-to-end latency, produce → visible to a read_committed consumer of the output (%d rows/s for %s)", c.LatencyRate, c.LatencyDuration),
		Header: []string{"interval", "mode", "rows sent", "received", "missing", "duplicates", "p50 ms", "p99 ms", "max ms"},
	}
	for _, x := range runs {
		if x.lat == nil {
			continue
		}
		l := x.lat
		lt.Add(x.interval.String(), map[bool]string{true: "eos", false: "alo"}[x.eos], Count(float64(l.sent)), Count(float64(l.received)),
			Count(float64(l.missing)), Count(float64(l.dups)), Ms(Percentile(l.lat, 50)), Ms(Percentile(l.lat, 99)), Ms(Percentile(l.lat, 100)))
	}
	lt.Notes = []string{
		"latency = the consumer's receive time − the send time the row carries (same clock); it includes the producer's linger (1 ms) and the consumer's fetch wait (at most 25 ms)",
		"the pipeline owns its partitions and has delivered a warm-up row per partition before the measured rows are sent",
		"missing = rows not received within 2 intervals + 10 s after the last was sent; duplicates = rows received more than once (at-least-once may repeat)",
	}
	if len(lt.Rows) > 0 {
		lt.Print(h.o.Out)
	}
}

// latencyResult is one latency run's figures.
type latencyResult struct {
	sent, received, missing, dups int64
	lat                           []time.Duration
}

// measureLatency runs a stateless pipeline over a fresh stream and
// measures produce → read_committed visibility of its output.
func measureLatency(ctx context.Context, h *harness, tag string, interval time.Duration, c EOSConfig) (*latencyResult, error) {
	in, out := h.name("lat_"+tag), h.name("lato_"+tag)
	if err := h.execf(ctx, "CREATE STREAM %s (id BIGINT, sent BIGINT, v BIGINT) WITH (partitions = %d)", in, c.Partitions); err != nil {
		return nil, err
	}
	if err := h.execf(ctx, "CREATE STREAM %s AS SELECT id, sent FROM %s WHERE v >= 0", out, in); err != nil {
		return nil, err
	}
	defer func() {
		_ = h.exec(ctx, "DROP STREAM "+out)
		_ = h.exec(ctx, "DROP STREAM "+in)
	}()
	srv, conn := h.srv, h.conn
	n := int64(c.LatencyRate) * int64(c.LatencyDuration/time.Millisecond) / 1000
	seen := make([]uint8, n)
	res := &latencyResult{lat: make([]time.Duration, 0, n)}
	var warm atomic.Int64
	var mu sync.Mutex
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(srv.Brokers()...),
		kgo.ConsumeTopics(h.prefix+out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(25*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	cctx, stopCons := context.WithCancel(ctx)
	consDone := make(chan struct{})
	go func() {
		defer close(consDone)
		var row struct {
			ID   int64 `json:"id"`
			Sent int64 `json:"sent"`
		}
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			now := time.Now().UnixNano()
			fs.EachRecord(func(rec *kgo.Record) {
				if json.Unmarshal(rec.Value, &row) != nil {
					return
				}
				if row.ID < 0 {
					warm.Add(1)
					return
				}
				if row.ID >= n {
					return
				}
				mu.Lock()
				seen[row.ID]++
				if seen[row.ID] == 1 {
					res.received++
					res.lat = append(res.lat, time.Duration(now-row.Sent))
				} else {
					res.dups++
				}
				mu.Unlock()
			})
		}
	}()
	defer func() { stopCons(); <-consDone }()

	prod, err := kgo.NewClient(
		kgo.SeedBrokers(srv.Brokers()...),
		kgo.DefaultProduceTopic(h.prefix+in),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	var prodErr atomic.Value
	send := func(id int64) {
		v := fmt.Appendf(nil, `{"id":%d,"sent":%d,"v":1}`, id, time.Now().UnixNano())
		part := id % int64(c.Partitions)
		if part < 0 {
			part = -part
		}
		prod.Produce(ctx, &kgo.Record{Partition: int32(part), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				prodErr.CompareAndSwap(nil, err)
			}
		})
	}
	// Warm up: the pipeline owns its partitions and delivers a row of each.
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	for j := int64(1); j <= int64(c.Partitions); j++ {
		send(-j)
	}
	for warm.Load() < int64(c.Partitions) {
		select {
		case <-wctx.Done():
			st, _ := pipelineStat(ctx, conn, out)
			return nil, fmt.Errorf("warm-up rows did not come through within 2m: %s", st)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Steady rate: a tick every 10 ms sends the rows due by then.
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	var id int64
	for id < n {
		select {
		case <-ctx.Done():
			tick.Stop()
			return nil, ctx.Err()
		case <-tick.C:
		}
		due := min(n, int64(time.Since(start).Seconds()*float64(c.LatencyRate)))
		for ; id < due; id++ {
			send(id)
		}
	}
	tick.Stop()
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	if err, _ := prodErr.Load().(error); err != nil {
		return nil, err
	}
	res.sent = n
	wait := time.Now().Add(2*interval + 10*time.Second)
	for time.Now().Before(wait) {
		mu.Lock()
		done := res.received >= n
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopCons()
	<-consDone
	mu.Lock()
	res.missing = n - res.received
	mu.Unlock()
	return res, nil
}
