package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// WindowsConfig configures the windows scenario.
type WindowsConfig struct {
	Rows       int64    // rows of the bids stream (default 2M), plus one sentinel per partition
	Partitions int      // of the bids stream (default 4)
	Auctions   int64    // distinct auctions (default 10k)
	Bidders    int64    // distinct bidders, the high-cardinality key (default 1M)
	Variants   []string // tumble, tumble-keyed, tumble-cte, ijoin, ijoin3, distinct, first, over, overrange, hop, hc, hc-spill, lc (default all; hc-spill runs last)
	// CatchupTimeout bounds one variant's catch-up (default 5m).
	CatchupTimeout time.Duration
}

// Windows targets.
const (
	WindowsTumblePerCoreTarget = 100_000 // TUMBLE rows per CPU-second of the fvsql process
	// WindowsGracefulRatio is the bench's reading of "falling gracefully,
	// not collapsing": the 1M-key view whose state is beyond every cache
	// (hc-spill) keeps at least this fraction of the rate of the same
	// view with its state in memory (hc). (The issue gives no number.)
	WindowsGracefulRatio = 0.5
	// WindowsSpillStateCacheMB and WindowsSpillGroupCacheMB are the
	// caches of the server hc-spill runs on: an 8 MiB Pebble block cache
	// and 1 MiB of GROUP BY state per partition, where the 1M-key state
	// is ~20-70 MiB in Pebble and ~11 MiB per partition encoded.
	WindowsSpillStateCacheMB = 8
	WindowsSpillGroupCacheMB = 1
)

// windowsVariant is one measured continuous query of the windows scenario.
type windowsVariant struct {
	name, kind, rel string // variant, STREAM or MATERIALIZED VIEW, relation name
	sql             string // CREATE … with %[1]s the relation, %[2]s the input
	keys            string // what the state is keyed by
	phase           string // profile name (default windows-<name>)
	keyed           bool   // over the stream keyed by auction (re-keyed all the same: fvsql trusts no partitioning it did not write)
	spill           bool   // on a server of its own with small caches (runs last)
}

var windowsVariants = map[string]windowsVariant{
	"tumble": {name: "tumble", kind: "STREAM", rel: "t", keys: "auction × 10 s window",
		sql: "CREATE STREAM %[1]s AS SELECT auction, window_start, window_end, count(*) AS bids, max(price) AS top FROM TUMBLE(%[2]s, ts, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end"},
	"tumble-keyed": {name: "tumble-keyed", kind: "STREAM", rel: "tk", keys: "auction × 10 s window", keyed: true,
		sql: "CREATE STREAM %[1]s AS SELECT auction, window_start, window_end, count(*) AS bids, max(price) AS top FROM TUMBLE(%[2]s, ts, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end"},
	// tumble over a WITH query: the same windows behind a hidden stream
	// (one more stage and topic hop), whose watermark the window takes
	// from its writer
	"tumble-cte": {name: "tumble-cte", kind: "STREAM", rel: "tc", keys: "auction × 10 s window, over a WITH query",
		sql: "CREATE STREAM %[1]s AS WITH f AS (SELECT auction, price, ts FROM %[2]s WHERE price >= 0) SELECT auction, window_start, window_end, count(*) AS bids, max(price) AS top FROM TUMBLE(f, ts, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end"},
	// interval joins of bids with the same auction's next bids (within
	// JoinBound): two inputs, and three written as one join (its first
	// join a hidden stream the second reads)
	"ijoin": {name: "ijoin", kind: "STREAM", rel: "ij", keys: "auction, rows for 2 s",
		sql: "CREATE STREAM %[1]s AS SELECT a.auction, a.price, b.price AS next_price FROM %[2]s a JOIN %[2]s b ON a.auction = b.auction AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '2' SECOND"},
	"ijoin3": {name: "ijoin3", kind: "STREAM", rel: "ij3", keys: "auction, rows for 2 s, two joins",
		sql: "CREATE STREAM %[1]s AS SELECT a.auction, a.price, c.price AS third_price FROM %[2]s a JOIN %[2]s b ON a.auction = b.auction AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '2' SECOND JOIN %[2]s c ON c.auction = b.auction AND c.ts BETWEEN b.ts AND b.ts + INTERVAL '2' SECOND"},
	// a stream's DISTINCT (each pair once, when first seen) and its
	// top-N in event time (each auction's first bid, once the watermark
	// passes it): both drop most rows
	"distinct": {name: "distinct", kind: "STREAM", rel: "dd", keys: "auction × price band, for good",
		sql: "CREATE STREAM %[1]s AS SELECT DISTINCT auction, price / 1000 AS band FROM %[2]s"},
	"first": {name: "first", kind: "STREAM", rel: "fb", keys: "auction, for good; rows until the watermark passes",
		sql: "CREATE STREAM %[1]s AS SELECT auction, price, ts FROM (SELECT auction, price, ts, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY ts, price) AS rn FROM %[2]s) t WHERE rn = 1"},
	// a stream's window functions in event time (Flink's OVER
	// aggregation): each bid with the count and top price of its
	// auction's last ten bids, once the watermark passes it
	"over": {name: "over", kind: "STREAM", rel: "ov", keys: "auction: last 10 rows; rows until the watermark passes",
		sql: "CREATE STREAM %[1]s AS SELECT auction, price, ts, count(*) OVER w AS n, max(price) OVER w AS top FROM %[2]s WINDOW w AS (PARTITION BY auction ORDER BY ts, price ROWS BETWEEN 9 PRECEDING AND CURRENT ROW)"},
	// the same over a RANGE frame in event time: each bid with the count
	// and price sum of its auction's bids of the minute up to it
	"overrange": {name: "overrange", kind: "STREAM", rel: "ovr", keys: "auction: its last minute of rows; rows until the watermark passes",
		sql: "CREATE STREAM %[1]s AS SELECT auction, price, ts, count(*) OVER w AS n, sum(price) OVER w AS total FROM %[2]s WINDOW w AS (PARTITION BY auction ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW)"},
	"hop": {name: "hop", kind: "STREAM", rel: "h", keys: "auction × 2 s pane",
		sql: "CREATE STREAM %[1]s AS SELECT auction, window_start, window_end, count(*) AS n FROM HOP(%[2]s, ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end"},
	"hc": {name: "hc", kind: "MATERIALIZED VIEW", rel: "hc", keys: "bidder",
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT bidder, count(*) AS n, sum(price) AS total FROM %[2]s GROUP BY bidder"},
	"hc-spill": {name: "hc-spill", kind: "MATERIALIZED VIEW", rel: "hcs", keys: "bidder, state beyond every cache", spill: true,
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT bidder, count(*) AS n, sum(price) AS total FROM %[2]s GROUP BY bidder"},
	"lc": {name: "lc", kind: "MATERIALIZED VIEW", rel: "lc", keys: "auction",
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT auction, count(*) AS n, sum(price) AS total FROM %[2]s GROUP BY auction"},
}

// windowsResult is one variant's measurement.
type windowsResult struct {
	v      windowsVariant
	ph     *phase
	stat   pipeStat
	check  string // a failed output check
	checks string // what was checked
	// unfinished says why the variant did not catch up within its
	// timeout; its figures are then those at the timeout.
	unfinished string
}

// Windows runs the windows scenario.
func Windows(ctx context.Context, o Options, c WindowsConfig) error {
	orDefault(&c.Rows, 2_000_000)
	orDefault(&c.Partitions, 4)
	orDefault(&c.Auctions, 10_000)
	orDefault(&c.Bidders, 1_000_000)
	orDefaults(&c.Variants, "tumble", "tumble-keyed", "tumble-cte", "ijoin", "ijoin3", "distinct", "first", "over", "overrange", "hop", "hc", "hc-spill", "lc")
	// hc-spill restarts the server with small caches: it runs last.
	slices.SortStableFunc(c.Variants, func(a, b string) int {
		return cmp.Compare(b2i(windowsVariants[a].spill), b2i(windowsVariants[b].spill))
	})
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	for _, v := range c.Variants {
		if _, ok := windowsVariants[v]; !ok {
			return fmt.Errorf("unknown variant %q (want tumble, tumble-keyed, tumble-cte, ijoin, ijoin3, distinct, first, hop, hc, hc-spill, lc)", v)
		}
		if windowsVariants[v].spill && o.URL != "" {
			return fmt.Errorf("variant %s starts a server of its own: not with --url", v)
		}
	}
	// hc-spill restarts the server: the bench then hosts the broker.
	spill := false
	for _, v := range c.Variants {
		spill = spill || windowsVariants[v].spill
	}
	h, ctx, err := openHarness(ctx, o, spill)
	if err != nil {
		return err
	}
	defer h.close()
	g := BidGen{N: c.Rows, Partitions: c.Partitions, Auctions: c.Auctions, Bidders: c.Bidders}
	in := h.name("bids")
	lines := []string{
		fmt.Sprintf("workload: CREATE STREAM bids %s WITH (partitions = %d), loaded by franz-go with %s JSON rows round-robin over the partitions:", bidsColumns, c.Partitions, Count(float64(c.Rows))),
		fmt.Sprintf("  %s distinct auctions (pseudo-random), %s distinct bidders, event time 1 ms apart, one row in 8 up to 1.5 s early (within the 4 s delay: none late);", Count(float64(c.Auctions)), Count(float64(min(c.Bidders, c.Rows)))),
		"  then one sentinel row per partition (auction -1, an hour later) so the watermark closes every window of the real rows; checks leave it out (auction >= 0)",
		"  each variant is one continuous query over that same input, started from its beginning, one after the other on the same server:",
	}
	if spill {
		lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], ":")
		lines = append(lines, fmt.Sprintf("  (hc-spill last, on a server of its own with the same broker, --state-cache-mb %d and --group-cache-mb %d: hc's query with its state beyond every cache):", WindowsSpillStateCacheMB, WindowsSpillGroupCacheMB))
	}
	for _, v := range c.Variants {
		wv := windowsVariants[v]
		lines = append(lines, fmt.Sprintf("  %-12s %s", v, fmt.Sprintf(wv.sql, wv.rel, "bids")))
	}
	if contains(c.Variants, "tumble-keyed") {
		lines = append(lines, fmt.Sprintf("  tumble-keyed runs over bids_k: the same rows in a stream declared WITH (partitions = %d, key = 'auction'), loaded keyed (murmur2); it is re-keyed all the same (fvsql trusts no partitioning it did not write), so it measures the repartition over keyed input", c.Partitions))
	}
	lines = append(lines, "  done = `consumed` in fvsql_catalog.pipelines reaches the input's rows and `lag` (every stage, the repartition stage's internal topic included) is 0, polled every 50 ms")
	h.header("windows", lines...)

	t0 := time.Now()
	want := g.Expected(10*time.Second, 2*time.Second)
	fmt.Fprintf(h.o.Out, "expected results computed in %s: %s TUMBLE rows, %s HOP rows, %s auctions, %s bidders\n",
		Secs(time.Since(t0)), Count(float64(want.TumbleRows)), Count(float64(want.HopRows)), Count(float64(want.Auctions)), Count(float64(want.Bidders)))
	if _, err := h.createStream(ctx, streamSpec{name: in, columns: bidsColumns, partitions: c.Partitions, rows: g.Total(), row: g.AppendJSON}); err != nil {
		return err
	}
	inKeyed, gk := h.name("bids_k"), g.KeyedSentinels()
	if contains(c.Variants, "tumble-keyed") {
		if _, err := h.createStream(ctx, streamSpec{name: inKeyed, columns: bidsColumns, partitions: c.Partitions, key: "auction", keyOf: gk.Key,
			rows: gk.Total(), row: gk.AppendJSON}); err != nil {
			return err
		}
	}
	fmt.Fprintln(h.o.Out)

	var results []*windowsResult
	onSpill := false
	for _, v := range c.Variants {
		wv := windowsVariants[v]
		wv.rel = h.name(wv.rel)
		if wv.spill && !onSpill {
			// The other variants' views are dropped: the new server
			// starts no pipeline of theirs.
			if err := h.serve(ctx, serverSpec{stream: h.o.Stream, stateMB: WindowsSpillStateCacheMB, groupMB: WindowsSpillGroupCacheMB}); err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
			onSpill = true
		}
		src, sg := in, g
		if wv.keyed {
			src, sg = inKeyed, gk
		}
		res, err := h.measureWindowed(ctx, wv, src, sg, want, c.CatchupTimeout)
		if err != nil {
			return fmt.Errorf("%s: %w", v, err)
		}
		results = append(results, res)
	}
	printWindows(h, c, g, results)
	h.printProfiles()
	return nil
}

// measureWindowed runs one variant: CREATE, wait until done, check the
// output, DROP.
func (h *harness) measureWindowed(ctx context.Context, wv windowsVariant, in string, g BidGen, want BidExpect, catchup time.Duration) (*windowsResult, error) {
	res := &windowsResult{v: wv}
	if wv.phase == "" {
		wv.phase = "windows-" + wv.name
	}
	var st pipeStat
	var err error // the catch-up's: a variant that does not catch up is reported, not fatal
	ph, perr := h.measure(ctx, wv.phase, func() error {
		if err := h.exec(ctx, fmt.Sprintf(wv.sql, wv.rel, in)); err != nil {
			return err
		}
		st, err = waitPipeline(ctx, h.conn, wv.rel, g.Total(), true, catchup)
		return nil
	})
	if perr != nil {
		return nil, perr
	}
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	res.ph, res.stat = ph, st
	conn := h.conn
	if err != nil {
		// Keep going with the other variants: this one is reported as
		// not caught up, with its last record.
		res.unfinished = err.Error()
		fmt.Fprintln(os.Stderr, "bench:", res.unfinished)
		if st.Late > 0 || st.Dropped > 0 {
			res.unfinished += "; " + errorSamples(ctx, conn, wv.rel+"_errors")
		}
		return res, h.exec(ctx, "DROP "+wv.kind+" "+wv.rel)
	}
	if err := flush(ctx, conn, 5*time.Minute); err != nil {
		return nil, err
	}
	var q string
	var exp []int64
	switch wv.name {
	case "tumble", "tumble-keyed", "tumble-cte":
		q = "SELECT count(*), sum(bids), sum(top) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.TumbleRows, want.Rows, want.TumbleTopSum}
	case "ijoin":
		q = "SELECT count(*), sum(price), sum(next_price) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.PairRows, want.PairPriceSum, want.PairNextSum}
	case "ijoin3":
		q = "SELECT count(*), sum(third_price) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.TripleRows, want.TriplePriceSum}
	case "distinct":
		q = "SELECT count(*), sum(band) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.BandRows, want.BandSum}
	case "first":
		q = "SELECT count(*), count(DISTINCT auction), sum(price) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.Auctions, want.Auctions, want.FirstPriceSum}
	case "over":
		q = "SELECT count(*), sum(n), sum(top) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.Rows, want.LastTenCountSum, want.LastTenTopSum}
	case "overrange":
		q = "SELECT count(*), sum(n), sum(total) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.Rows, want.MinuteCountSum, want.MinuteSumSum}
	case "hop":
		q = "SELECT count(*), sum(n) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.HopRows, want.HopCountSum}
	case "hc", "hc-spill":
		q = "SELECT count(*), sum(n), sum(total) FROM " + wv.rel + " WHERE bidder >= 0"
		exp = []int64{want.Bidders, want.Rows, want.PriceSum}
	case "lc":
		q = "SELECT count(*), sum(n), sum(total) FROM " + wv.rel + " WHERE auction >= 0"
		exp = []int64{want.Auctions, want.Rows, want.PriceSum}
	}
	res.checks = fmt.Sprintf("%s: %s = %v", wv.name, q, exp)
	// Windows close when the sentinels' watermark arrives; give a slow
	// close a few seconds before calling the output wrong.
	var got []int64
	for try := 0; ; try++ {
		if got, err = queryInts(ctx, conn, q); err != nil {
			return nil, err
		}
		if equalInts(got, exp) || try == 10 {
			break
		}
		time.Sleep(time.Second)
		_ = flush(ctx, conn, time.Minute)
	}
	last, _ := pipelineStat(ctx, conn, wv.rel)
	if !equalInts(got, exp) {
		res.check = fmt.Sprintf("OUTPUT CHECK FAILED: %s: %s returned %v, want %v; pipeline: %s", wv.name, q, got, exp, last)
	} else if last.Late > 0 || last.Dropped > 0 {
		res.check = fmt.Sprintf("OUTPUT CHECK FAILED: %s: %d rows late and %d dropped, want none; pipeline: %s", wv.name, last.Late, last.Dropped, last)
	}
	if res.check != "" && (last.Late > 0 || last.Dropped > 0) {
		res.check += "; " + errorSamples(ctx, conn, wv.rel+"_errors")
	}
	if res.check != "" {
		fmt.Fprintln(os.Stderr, "bench:", res.check)
	}
	res.stat.Late, res.stat.Dropped = last.Late, last.Dropped
	if last.StateBytes >= 0 {
		res.stat.StateBytes = last.StateBytes
	}
	if err := h.exec(ctx, "DROP "+wv.kind+" "+wv.rel); err != nil {
		return nil, err
	}
	return res, nil
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func printWindows(h *harness, c WindowsConfig, g BidGen, results []*windowsResult) {
	tb := Table{
		Title: fmt.Sprintf("windows: catch-up over %s rows (%d partitions)", Count(float64(g.Total())), c.Partitions),
		Header: []string{"variant", "state keyed by", "duration", "rows/s", "proc cpu s", "rows/proc-cpu-s", "broker cpu s", "other cpu s",
			"RSS before", "peak RSS", "peak heap", "state", "late", "targets"},
	}
	rates := map[string]float64{}
	for _, res := range results {
		rates[res.v.name] = Rate(g.Total(), res.ph.dur)
		if res.unfinished != "" {
			rates[res.v.name] = Rate(res.stat.Consumed, res.ph.dur)
		}
	}
	for _, res := range results {
		ph := res.ph
		rate := rates[res.v.name]
		target := "-"
		switch res.v.name {
		case "tumble", "tumble-keyed":
			target = verdict(Rate(g.Total(), ph.srvCPU) >= WindowsTumblePerCoreTarget) + " (per-core)"
		case "hc-spill":
			if hc, ok := rates["hc"]; ok && hc > 0 {
				ratio := rate / hc
				if ratio >= WindowsGracefulRatio {
					target = fmt.Sprintf("met: %.0f%% of hc", 100*ratio)
				} else {
					target = fmt.Sprintf("MISSED: %.0f%% of hc", 100*ratio)
				}
			}
		}
		if res.check != "" {
			target = "OUTPUT WRONG: see notes"
		}
		dur := Secs(ph.dur)
		if res.unfinished != "" {
			target, dur = "MISSED: did not catch up, see notes", "> "+Secs(ph.dur)
		}
		state := "-"
		if res.stat.StateBytes >= 0 {
			state = MiB(res.stat.StateBytes)
		}
		tb.Add(res.v.name, res.v.keys, dur, Count(rate), cpuSecs(ph.srvCPU), perCPU(g.Total(), ph.srvCPU),
			cpuSecs(ph.brokerCPU), cpuSecs(ph.otherCPU), MiB(ph.u0.RSS), MiB(ph.u1.PeakRSS), MiB(ph.u1.PeakHeap), state,
			Count(float64(res.stat.Late)), target)
	}
	tb.Notes = []string{
		"duration = from CREATE until consumed = the input's rows and lag = 0 (so it includes the pipeline's start: consumer-group joins, the first epoch)",
		"proc = the fvsql server's process (in-process mode: also the embedded broker and the bench); rows/proc-cpu-s = input rows per CPU-second of it",
		"broker cpu = a separate broker's (--broker-pid), or in child mode the bench process that hosts the embedded broker; other cpu = the rest of the host's busy CPU",
		"RSS before / peak RSS / peak heap: of the server's process, reset before each variant; state = state_bytes of fvsql_catalog.pipelines after the run (- when the server has no such column)",
		fmt.Sprintf("targets: tumble and tumble-keyed ≥ %s rows per CPU-second of the fvsql process; hc-spill (%s keys, state beyond every cache) ≥ %.0f%% of hc's rate (the same query, its state in memory), the bench's reading of \"falling gracefully, not collapsing\"",
			Count(WindowsTumblePerCoreTarget), Count(float64(min(c.Bidders, c.Rows))), 100*WindowsGracefulRatio),
	}
	if hc, hs := rates["hc"], rates["hc-spill"]; hc > 0 && hs > 0 {
		tb.Notes = append(tb.Notes, fmt.Sprintf("state beyond the caches: hc-spill %s rows/s vs hc %s rows/s: ratio %.2f", Count(hs), Count(hc), hs/hc))
	}
	if hc, lc := rates["hc"], rates["lc"]; hc > 0 && lc > 0 {
		tb.Notes = append(tb.Notes, fmt.Sprintf("high vs low cardinality (no target: nearly every hc row is a change of the view, its table topic and its copy, where lc's %s keys coalesce within an epoch): hc %s rows/s vs lc %s rows/s: ratio %.2f",
			Count(float64(c.Auctions)), Count(hc), Count(lc), hc/lc))
	}
	var checked []string
	for _, res := range results {
		checked = append(checked, res.checks)
	}
	tb.Notes = append(tb.Notes, "output checked (closed windows of the real rows; view rows from the local copy after FLUSH): "+strings.Join(checked, "; "))
	for _, res := range results {
		if res.check != "" {
			tb.Notes = append(tb.Notes, res.check)
		}
		if res.unfinished != "" {
			tb.Notes = append(tb.Notes, res.v.name+": "+res.unfinished+" (rows/s: its first stage's committed input over the timeout)")
		}
	}
	tb.Print(h.o.Out)
}

// errorSamples describes what a pipeline's errors stream holds: rows per
// stage and input partition, and the first reasons.
func errorSamples(ctx context.Context, conn *pgx.Conn, errs string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var parts []string
	rows, err := conn.Query(ctx, "SELECT stage, source_partition, count(*) FROM "+errs+" GROUP BY stage, source_partition ORDER BY stage, source_partition")
	if err != nil {
		return errs + ": " + err.Error()
	}
	for rows.Next() {
		var stage string
		var part, n int64
		if rows.Scan(&stage, &part, &n) == nil {
			parts = append(parts, fmt.Sprintf("stage %s partition %d: %d", stage, part, n))
		}
	}
	rows.Close()
	var reasons []string
	rows, err = conn.Query(ctx, "SELECT reason FROM "+errs+" LIMIT 3")
	if err == nil {
		for rows.Next() {
			var reason string
			if rows.Scan(&reason) == nil {
				reasons = append(reasons, reason)
			}
		}
		rows.Close()
	}
	return fmt.Sprintf("%s: %s; e.g. %s", errs, strings.Join(parts, ", "), strings.Join(reasons, " | "))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
