package exactlyonce

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/planner"
)

// The query of TestBacklogSparseWatermarks: w2's aggregates over HOP
// windows of 10 s every 16 ms, so every row is in 625 windows and the
// window stage is far slower than the repartition stage in front of it.
const (
	hopSlide = 16 * time.Millisecond
	hopSize  = 10 * time.Second

	h2DDL = "CREATE STREAM h2 AS SELECT g, window_start, window_end, count(*) AS n, sum(v) AS s, max(v) AS m FROM HOP(ev, ts, INTERVAL '16 MILLISECOND', INTERVAL '10' SECOND) GROUP BY g, window_start, window_end"

	// backlogIdle is the idle timeout of the test's process: above the
	// time in which the repartition stage writes its watermark records
	// for the whole backlog (0.4 to 2.4 s on the embedded broker, the
	// rebalances of its 8 consumers included), well below the time the
	// window stage needs to reach the last of them (10 s and more).
	backlogIdle = "6s"
)

// TestBacklogSparseWatermarks: h2 (HOP windows behind a repartition
// stage) is created over a backlog of FVSQL_EO_BACKLOG_ROWS rows (default
// 100000) in all 8 partitions, on a process with --stream-idle-timeout 6s,
// 8 consumers per stage (one partition each, so no partition waits while
// its consumer works on others) and polls of 500 records. The
// repartition stage is through the backlog within a couple of seconds,
// so its watermark records are sparse in its output: each upstream
// partition reports once or twice, some only after most of the rows. The
// window stage, 625 windows per row, takes far longer than the idle
// timeout to work through that. No row may come late: every window exact,
// h2_errors empty, late = 0. The test logs where the watermark records
// are in each partition of the repartition topic.
//
// A regression test: an upstream partition was idle (left out of the
// watermark, or no longer waited for once others had reported) after
// the idle timeout in wall-clock time since the stage had processed its
// last watermark record, so a stage working slowly through a backlog
// took the upstream partitions whose records came late in it for idle,
// its watermark jumped ahead of their rows (at times to the far-future
// rows' watermark) and they were dropped as late: 18,151 and 32,573 of
// 100,000 rows in two runs here, 111,488 of 2M HOP rows with the default
// 10 s in fvsql-bench windows.
// Idleness is now judged in the input's own time (the records'
// timestamps), or in wall-clock time after a pause of the whole input.
func TestBacklogSparseWatermarks(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		sd := seed(t)
		d := genData(sd, envInt(t, "FVSQL_EO_BACKLOG_ROWS", 100_000), 300)
		// Later flags win: these override serverArgs' 1h idle timeout.
		a := c.start(t, "a", "--stream-idle-timeout", backlogIdle, "--stream-consumers", "8", "--stream-batch-size", "500")
		conn := connect(t, a)
		exec(t, conn, inputDDL)
		prod := startProducer(t, c, c.topic(inputStream), d.recs)
		prod.release(len(d.recs))
		prod.wait(t, 5*time.Minute)
		start := time.Now()
		exec(t, conn, h2DDL)
		flush(t, a, 3)
		t.Logf("h2 through the backlog in %s (idle timeout %s)", time.Since(start).Round(time.Millisecond), backlogIdle)

		results := map[string]bool{}
		st := waitAllStats(t, conn, 30*time.Second, "h2's stats", func(m map[string]pipelineStats) bool { _, ok := m["h2"]; return ok })
		if late := st["h2"].Late; late != 0 {
			t.Errorf("h2: %d rows late (none expected)", late)
		}
		results["late = 0"] = st["h2"].Late == 0
		results["h2"] = checkHopWindows(t, c, d, "h2", func(r evRow) int64 { return r.g })
		results["errors streams empty"] = checkNoErrors(t, c, "h2")
		t.Logf("RESULT %s: %v", t.Name(), results)
		logWatermarkRecords(t, c, "h2")
		if t.Failed() {
			diagnoseGroups(t, c, []string{"h2"})
		}
	})
}

// expectHop is every closed HOP window's aggregates by (key, window
// start), from the definition: the window starting at b*slide (size a
// multiple of slide) holds the rows whose slide bucket floor(ts/slide) is
// one of b … b+size/slide-1; so per key, per bucket, the rows' count, sum
// and max, and every window is the fold of its size/slide buckets, kept
// when it holds a row. Only data rows: the far-future rows' windows stay
// open.
func (d *dataset) expectHop(by func(evRow) int64, slide, size int64) map[winKey]agg {
	if size%slide != 0 {
		panic("expectHop: size must be a multiple of slide")
	}
	per := size / slide
	floor := func(a, b int64) int64 { return (a - ((a%b)+b)%b) / b }
	buckets := map[int64]map[int64]agg{} // key -> bucket -> aggregates
	for _, r := range d.rows[:d.data] {
		k := by(r)
		if buckets[k] == nil {
			buckets[k] = map[int64]agg{}
		}
		b := floor(r.ts, slide)
		a := buckets[k][b]
		a.n++
		a.s += r.v
		a.m = max(a.m, r.v)
		buckets[k][b] = a
	}
	out := map[winKey]agg{}
	for k, bs := range buckets {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for b := range bs {
			lo, hi = min(lo, b), max(hi, b)
		}
		dense := make([]agg, hi-lo+1)
		for b, a := range bs {
			dense[b-lo] = a
		}
		for first := lo - per + 1; first <= hi; first++ { // window start, in buckets
			var w agg
			for b := max(first, lo); b < first+per && b <= hi; b++ {
				a := dense[b-lo]
				w.n += a.n
				w.s += a.s
				w.m = max(w.m, a.m)
			}
			if w.n > 0 {
				out[winKey{k, first * slide}] = w
			}
		}
	}
	return out
}

// checkHopWindows compares a HOP-windowed stream's committed output with
// the expected windows: each exactly once, every aggregate right.
func checkHopWindows(t *testing.T, c *cluster, d *dataset, stream string, by func(evRow) int64) bool {
	t.Helper()
	slide, size := hopSlide.Microseconds(), hopSize.Microseconds()
	want := d.expectHop(by, slide, size)
	recs := c.readCommitted(t, c.topic(stream))
	p := newProblems(t, stream)
	seen := map[winKey]int{}
	for _, r := range recs {
		key, we, a, err := windowRow(r.Value, "g")
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		ws := key.ws
		seen[key]++
		w, ok := want[key]
		switch {
		case !ok:
			p.add("unexpected window", "%s %s", where(r), r.Value)
		case seen[key] > 1:
			p.add("duplicated window", "%s %s", where(r), r.Value)
		case we != ws+size || a != w:
			p.add("wrong aggregates", "%s %s, want n=%d s=%d m=%d", where(r), r.Value, w.n, w.s, w.m)
		}
	}
	var missing []winKey
	for key := range want {
		if seen[key] == 0 {
			missing = append(missing, key)
		}
	}
	sort.Slice(missing, func(i, j int) bool {
		if missing[i].ws != missing[j].ws {
			return missing[i].ws < missing[j].ws
		}
		return missing[i].key < missing[j].key
	})
	for _, key := range missing {
		w := want[key]
		p.add("missing window", "g=%d window %s (n=%d s=%d m=%d)", key.key, tsText(key.ws), w.n, w.s, w.m)
	}
	t.Logf("%s: %d committed records, %d expected windows: %s", stream, len(recs), len(want), p.summary())
	return p.ok()
}

// logWatermarkRecords logs, per partition of the pipeline's repartition
// topic that holds rows, where each upstream partition's watermark
// records are (offset, milliseconds after the topic's first record, and
// the watermark as event time after t0): how sparse they are in the
// backlog the window stage works through.
func logWatermarkRecords(t *testing.T, c *cluster, pipeline string) {
	t.Helper()
	recs := c.readCommitted(t, c.topic(planner.InternalTopic(pipeline, "repartition")))
	if len(recs) == 0 {
		return
	}
	first := recs[0].Timestamp
	for _, r := range recs {
		if r.Timestamp.Before(first) {
			first = r.Timestamp
		}
	}
	type part struct {
		data    int
		reports []string
	}
	parts := map[int32]*part{}
	for _, r := range recs {
		pt := parts[r.Partition]
		if pt == nil {
			pt = &part{}
			parts[r.Partition] = pt
		}
		// The engine's watermark records: header fvsql-wm = "source:watermark".
		if len(r.Headers) == 0 || r.Headers[0].Key != "fvsql-wm" {
			pt.data++
			continue
		}
		src, wm, _ := strings.Cut(string(r.Headers[0].Value), ":")
		us, _ := strconv.ParseInt(wm, 10, 64)
		at := "far"
		if us < t0+10_000_000*1_000_000-10_000_000 {
			at = fmt.Sprintf("%.1fs", float64(us-t0)/1e6)
		}
		pt.reports = append(pt.reports, fmt.Sprintf("%s@%d+%dms=%s", src, r.Offset, r.Timestamp.Sub(first).Milliseconds(), at))
	}
	ids := make([]int32, 0, len(parts))
	for id := range parts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		pt := parts[id]
		if pt.data == 0 {
			continue // watermark records only, the same as in the others
		}
		t.Logf("repartition p%d: %d rows; watermark records source@offset+ms=watermark: %s", id, pt.data, strings.Join(pt.reports, " "))
	}
}
