package pipelines

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	windowDiffSeed  = flag.Int64("window-diff-seed", 217, "seed of TestWindowStreamDifferential")
	windowDiffCases = flag.Int("window-diff-cases", 24, "cases of TestWindowStreamDifferential")
)

// TestWindowStreamDifferential: seeded random window streams, each
// checked against its own SELECT run bounded over the same rows (TUMBLE
// and HOP run bounded by assigning each row its windows, no watermark
// involved). The streams window a stream, a WITH query filtering one, a
// subquery of a window (filtered), a window's rows again (cascading
// windows), an interval join (inner or left), a union of both inputs;
// join the two inputs' window rows (a window join, inner or left); rank
// a window's groups or rows (a window's top-N); join two windowed
// aggregations on their window; keep the distinct rows of a stream, a
// join or a union that holds rows twice (DISTINCT, or GROUP BY without
// aggregates), and window them; keep each key's first rows in event
// time (a top-N ordered by the time, deduplication), and window them. The rows come out of order within the
// inputs' WATERMARK delay, and the pipelines start after all of them are
// written, so they read a backlog whose partitions move at their own
// pace: a window over a hidden stream must take its writer's watermark,
// not one computed from the rows it reads, or it counts rows as late
// that its bounded SELECT keeps. Rows of keys 90 and up, far later,
// close every window of the data (one reaches every partition); the
// comparison leaves out the windows they open. Reproduce a failure with
// -window-diff-seed; -window-diff-cases sets the count.
func TestWindowStreamDifferential(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		rng := rand.New(rand.NewSource(*windowDiffSeed))
		pa, pb := 2+rng.Intn(3), 1+rng.Intn(3)
		exec(t, conn, fmt.Sprintf(`CREATE STREAM wda (k INT, v INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (partitions = %d, key = 'k')`, pa))
		exec(t, conn, fmt.Sprintf(`CREATE STREAM wdb (k INT, w INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (partitions = %d, key = 'k')`, pb))
		insertWindowRows(t, conn, rng, "wda", 1500, time.Second)
		insertWindowRows(t, conn, rng, "wdb", 750, 2*time.Second)
		for _, s := range []string{"wda", "wdb"} {
			var rows []string
			for k := 90; k < 130; k++ {
				rows = append(rows, fmt.Sprintf("(%d, 1, '2026-01-01 02:00:00')", k))
			}
			exec(t, conn, "INSERT INTO "+s+" VALUES "+strings.Join(rows, ", "))
		}
		for s, parts := range map[string]int{"wda": pa, "wdb": pb} {
			if got := queryStrings(t, conn, "SELECT count(DISTINCT _partition) FROM "+s+" WHERE k >= 90"); got != fmt.Sprint(parts) {
				t.Fatalf("the closing rows of %s reach %s of its %d partitions: windows would stay open", s, got, parts)
			}
		}
		const batch = 6
		failed := 0
		for first := 0; first < *windowDiffCases; first += batch {
			var cases []windowCase
			for i := first; i < min(first+batch, *windowDiffCases); i++ {
				wc := genWindowCase(rng)
				wc.name = fmt.Sprintf("wd%d", i)
				exec(t, conn, "CREATE "+wc.kind()+" "+wc.name+" AS "+wc.query)
				cases = append(cases, wc)
			}
			flush(t, srv, conn)
			for _, wc := range cases {
				if !checkWindowCase(t, conn, wc) {
					failed++
				}
				exec(t, conn, "DROP "+wc.kind()+" "+wc.name)
			}
			if failed > 0 {
				t.Fatalf("%d cases failed (seed %d)", failed, *windowDiffSeed)
			}
		}
		t.Logf("%d window streams over %d+%d partitions equal their bounded SELECTs (seed %d)", *windowDiffCases, pa, pb, *windowDiffSeed)
	})
}

// windowCase is a stream's query (a materialized view's, with view) and
// the output column holding each row's window start ("": none, every row
// is compared).
type windowCase struct {
	name, query, start string
	view               bool
}

func (wc windowCase) kind() string {
	if wc.view {
		return "MATERIALIZED VIEW"
	}
	return "STREAM"
}

// before is the condition that leaves out the rows of the windows the
// closing rows open.
func (wc windowCase) before() string {
	if wc.start == "" {
		return "true"
	}
	return wc.start + " < " + closedBefore
}

// closedBefore: the windows the closing rows (at 02:00) open start after
// it; every window of the data (which ends by 00:31) has closed.
const closedBefore = "'2026-01-01 01:30:00'"

// insertWindowRows writes n rows one step apart from midnight, each up
// to 4 s early (within the 5 s delay), keys 1 to 6, some values NULL.
func insertWindowRows(t *testing.T, conn *pgx.Conn, rng *rand.Rand, stream string, n int, step time.Duration) {
	t.Helper()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows []string
	for i := 0; i < n; i++ {
		at := base.Add(time.Duration(i) * step).Add(-time.Duration(rng.Intn(4000)) * time.Millisecond)
		if at.Before(base) {
			at = base
		}
		v := fmt.Sprint(rng.Intn(26) - 5)
		if rng.Intn(15) == 0 {
			v = "NULL"
		}
		rows = append(rows, fmt.Sprintf("(%d, %s, '%s')", 1+rng.Intn(6), v, at.Format("2006-01-02 15:04:05.000")))
		if len(rows) == 500 || i == n-1 {
			exec(t, conn, "INSERT INTO "+stream+" VALUES "+strings.Join(rows, ", "))
			rows = rows[:0]
		}
	}
}

// checkWindowCase compares a stream's rows with its bounded SELECT's
// (the windows the closing rows opened left out), waiting for the last
// windows to arrive: FLUSH covers the rows, and the watermarks that close
// windows may trail them by a checkpoint per stage.
func checkWindowCase(t *testing.T, conn *pgx.Conn, wc windowCase) bool {
	t.Helper()
	want := windowRows(t, conn, "SELECT * FROM ("+wc.query+") q WHERE "+wc.before())
	var got []string
	for deadline := time.Now().Add(60 * time.Second); ; {
		got = windowRows(t, conn, "SELECT * FROM "+wc.name+" WHERE "+wc.before())
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(pollInterval)
	}
	onlyGot, onlyWant := diffSorted(got, want)
	if len(onlyGot) == 0 && len(onlyWant) == 0 {
		return true
	}
	st, _, _ := stats(conn, wc.name)
	t.Errorf("%s AS %s\n%d rows, bounded %d; only in the stream (%d): %s\nonly bounded (%d): %s\npipeline: %s", wc.name, wc.query,
		len(got), len(want), len(onlyGot), strings.Join(onlyGot[:min(10, len(onlyGot))], "; "),
		len(onlyWant), strings.Join(onlyWant[:min(10, len(onlyWant))], "; "), st)
	return false
}

// windowRows runs q and returns its rows as sorted text lines.
func windowRows(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC().Format("15:04:05.000")
			}
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// genWindowCase makes one random window stream.
func genWindowCase(rng *rand.Rand) windowCase {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	sizes := []int{10, 20, 30, 60, 120}
	size := sizes[rng.Intn(len(sizes))]
	window := func(src string) string {
		if rng.Intn(3) == 0 { // HOP, slide dividing size
			slide := size / (1 + rng.Intn(2)) / (1 + rng.Intn(2))
			return fmt.Sprintf("HOP(%s, ts, INTERVAL '%d' SECOND, INTERVAL '%d' SECOND)", src, slide, size)
		}
		return fmt.Sprintf("TUMBLE(%s, ts, INTERVAL '%d' SECOND)", src, size)
	}
	aggs := func(col string) string {
		n := 1 + rng.Intn(3)
		var out []string
		for i := 0; i < n; i++ {
			f := pick("count(*)", "sum(%s)", "min(%s)", "max(%s)", "count(%s)")
			if strings.Contains(f, "%s") {
				f = fmt.Sprintf(f, col)
			}
			out = append(out, fmt.Sprintf("%s AS a%d", f, i))
		}
		return strings.Join(out, ", ")
	}
	byK := rng.Intn(2) == 0
	keyed := func(sel, group string) (string, string) {
		if byK {
			return "k, " + sel, group + ", k"
		}
		return sel, group
	}
	where := ""
	if rng.Intn(2) == 0 {
		where = fmt.Sprintf(" WHERE v > %d", rng.Intn(10)-2)
	}
	bound := func(l, r string) string { // r's time within a few seconds of l's
		lo := rng.Intn(6) - 3
		return fmt.Sprintf("%[2]s.ts BETWEEN %[1]s.ts + INTERVAL '%[3]d' SECOND AND %[1]s.ts + INTERVAL '%[4]d' SECOND", l, r, lo, lo+rng.Intn(8))
	}
	// a join of three inputs, left-deep or right-nested; with byA, the
	// second join bounds c by a's time (a window over the join's a.ts
	// needs it: fvsql follows a join's time columns, not the others)
	threeWay := func(cols string, byA bool) string {
		j1, j2 := pick("JOIN", "LEFT JOIN"), pick("JOIN", "LEFT JOIN")
		if rng.Intn(3) == 0 {
			return fmt.Sprintf("SELECT %s FROM wda a %s (wdb b %s wda c ON c.k = b.k AND %s) ON a.k = b.k AND %s", cols, j1, j2, bound("b", "c"), bound("a", "b"))
		}
		by := pick("a", "b")
		if byA {
			by = "a"
		}
		return fmt.Sprintf("SELECT %s FROM wda a %s wdb b ON a.k = b.k AND %s %s wda c ON c.k = %s.k AND %s", cols, j1, bound("a", "b"), j2, by, bound(by, "c"))
	}
	// rows of wda, some twice (DISTINCT has duplicates to drop)
	twice := fmt.Sprintf("SELECT k, v, ts FROM wda UNION ALL SELECT k, v, ts FROM wda WHERE v > %d", rng.Intn(10)-2)
	// each (k, v)'s first rows in event time, as a top-N in event time
	// puts them out
	first := func(src, cols string) string {
		rank, bound := pick("ROW_NUMBER", "RANK", "DENSE_RANK"), pick("rn = 1", "rn <= 2")
		if rank == "ROW_NUMBER" && rng.Intn(2) == 0 {
			bound = "rn BETWEEN 2 AND 3"
		}
		return fmt.Sprintf("SELECT %s FROM (SELECT *, %s() OVER (PARTITION BY k, v ORDER BY ts) AS rn FROM %s) t WHERE %s", cols, rank, src, bound)
	}
	// window functions of one OVER clause ordered by the event time t
	// first: ties on t share their values (RANGE, also with offsets), or
	// the order goes on to then, and rows tied on all of it are the same
	// row
	over := func(src, part, cols, t, then string) string {
		order, frame := t, pick("", " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", " RANGE BETWEEN CURRENT ROW AND CURRENT ROW")
		funcs := []string{"rank()", "dense_rank()", "count(*)", "sum(v)", "min(v)", "max(v)", "count(v)", "avg(v)"}
		if rng.Intn(3) == 0 { // RANGE frames with offsets on the time alone
			frame = pick(fmt.Sprintf(" RANGE BETWEEN INTERVAL '%d' SECOND PRECEDING AND CURRENT ROW", 1+rng.Intn(20)),
				fmt.Sprintf(" RANGE BETWEEN INTERVAL '%d' SECOND PRECEDING AND INTERVAL '%d' SECOND PRECEDING", 5+rng.Intn(15), rng.Intn(5)))
		} else if rng.Intn(2) == 0 {
			order = t + ", " + then
			frame = pick(frame, fmt.Sprintf(" ROWS BETWEEN %d PRECEDING AND CURRENT ROW", rng.Intn(5)), " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING",
				fmt.Sprintf(" ROWS BETWEEN %d PRECEDING AND 1 PRECEDING", 1+rng.Intn(4)))
			funcs = append(funcs, "row_number()", "lag(v)", fmt.Sprintf("lag(v, %d, -100)", rng.Intn(4)), "first_value(v)", "last_value(v)", "nth_value(v, 2)")
		}
		var fs []string
		for i := 1 + rng.Intn(3); i > 0; i-- {
			fs = append(fs, fmt.Sprintf("%s OVER w AS f%d", funcs[rng.Intn(len(funcs))], i))
		}
		return fmt.Sprintf("SELECT %s, %s FROM %s WINDOW w AS (%sORDER BY %s%s)", cols, strings.Join(fs, ", "), src, part, order, frame)
	}
	switch rng.Intn(19) {
	case 18: // sessions of a stream or of a WITH query, into a stream or a view
		src := "wda"
		with := ""
		if rng.Intn(3) == 0 {
			with, src = fmt.Sprintf("WITH f AS (SELECT k, v * 2 AS v, ts FROM wda WHERE v > %d) ", rng.Intn(10)), "f"
		}
		key := pick("k, ", "v, ", "k, v % 3 AS r, ", "")
		group := strings.ReplaceAll(strings.ReplaceAll(key, " AS r", ""), "v % 3", "r")
		having := ""
		if rng.Intn(3) == 0 {
			having = " HAVING count(*) > 1"
		}
		w := ""
		if src == "wda" {
			w = where
		}
		gap := pick("3", "8", "20", "45")
		if key == "" {
			gap = pick("1", "2") // all rows are one key: short gaps keep sessions apart
		}
		return windowCase{query: fmt.Sprintf("%sSELECT %swindow_start, window_end, count(*) AS n, %s FROM SESSION(%s, ts, INTERVAL '%s' SECOND)%s GROUP BY %swindow_start, window_end%s",
			with, key, aggs("v"), src, gap, w, group, having), start: "window_start", view: rng.Intn(2) == 0}
	case 16: // a stream's window functions in event time
		return windowCase{query: over("wda"+where, pick("PARTITION BY k ", "PARTITION BY v ", ""), "k, v, ts", "ts", pick("v, k", "v DESC, k")), start: "ts"}
	case 17: // over a window's aggregation: running totals of its counts
		q := fmt.Sprintf("SELECT window_start, k, count(*) AS n, sum(v) AS v FROM %s%s GROUP BY window_start, k", window("wda"), where)
		return windowCase{query: over("("+q+") t", pick("PARTITION BY k ", ""), "window_start, k, n", "window_start", "k"), start: "window_start"}
	case 14: // a stream's top-N in event time: each key's first rows (deduplication)
		return windowCase{query: first("wda", pick("k, v, ts, rn", "k, ts")), start: "ts"}
	case 15: // a window over each key's first rows
		sel, group := keyed("window_start, count(*) AS n, "+aggs("v"), "window_start")
		return windowCase{query: fmt.Sprintf("WITH d AS (%s) SELECT %s FROM %s GROUP BY %s", first("wda", "k, v, ts"), sel, window("d"), group), start: "window_start"}
	case 12: // a stream's DISTINCT: each distinct row once, as it is first seen
		q := pick(
			"SELECT DISTINCT k, v FROM wda"+where,
			"SELECT DISTINCT v % 4 AS x, k FROM wda"+where+" GROUP BY 1, 2",
			"SELECT DISTINCT * FROM ("+twice+") u",
			fmt.Sprintf("SELECT DISTINCT a.k, b.w FROM wda a JOIN wdb b ON a.k = b.k AND %s", bound("a", "b")),
		)
		if strings.Contains(q, "GROUP BY") { // GROUP BY without aggregates, the same
			q = strings.Replace(q, "DISTINCT ", "", 1)
		}
		return windowCase{query: q}
	case 13: // a window over a DISTINCT of rows some of which come twice
		sel, group := keyed("window_start, count(*) AS n, "+aggs("v"), "window_start")
		return windowCase{query: fmt.Sprintf("WITH d AS (SELECT DISTINCT k, v, ts FROM (%s) u) SELECT %s FROM %s GROUP BY %s", twice, sel, window("d"), group), start: "window_start"}
	case 10: // a join of three inputs
		q := threeWay("a.k, a.v, b.w, c.v AS cv, a.ts", false)
		if where != "" {
			q += " WHERE a.v > " + where[len(" WHERE v > "):]
		}
		return windowCase{query: q, start: "ts"}
	case 11: // a window over a join of three inputs
		sel, group := keyed("window_start, count(*) AS n, count(cv) AS matched, "+aggs("w"), "window_start")
		return windowCase{query: fmt.Sprintf("WITH j AS (%s) SELECT %s FROM %s GROUP BY %s", threeWay("a.k, a.ts, b.w, c.v AS cv", true), sel, window("j"), group), start: "window_start"}
	case 8: // a window's top-N over its aggregation
		rank := pick("ROW_NUMBER", "RANK", "DENSE_RANK")
		return windowCase{query: fmt.Sprintf("SELECT * FROM (SELECT window_start, window_end, k, n, top, %s() OVER (PARTITION BY window_start, window_end ORDER BY n %s, top, k) AS rn FROM (SELECT window_start, window_end, k, count(*) AS n, max(v) AS top FROM %s%s GROUP BY window_start, window_end, k) w) t WHERE rn <= %d",
			rank, pick("DESC", "ASC"), window("wda"), where, 1+rng.Intn(3)), start: "window_start"}
	case 9: // a top-N of a window's rows (the first rows of each key and window)
		return windowCase{query: fmt.Sprintf("SELECT window_start, k, w, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, k ORDER BY ts, w) AS rn FROM %s) t WHERE rn <= %d",
			window("wdb"), 1+rng.Intn(2)), start: "window_start"}
	case 7: // a window join of the windows' rows, inner or left; the left over a WITH query
		w := window("%[1]s")
		left := "wda"
		with := ""
		if rng.Intn(2) == 0 {
			with, left = "WITH f AS (SELECT k, v, ts, v * 2 AS v2 FROM wda WHERE v > 0) ", "f"
		}
		return windowCase{query: with + fmt.Sprintf("SELECT l.k, l.v, r.w, l.window_start FROM "+fmt.Sprintf(w, left)+" l %s "+fmt.Sprintf(w, "wdb")+" r ON l.k = r.k AND l.window_start = r.window_start AND r.w > %d WHERE l.v > %d",
			pick("JOIN", "LEFT JOIN"), rng.Intn(12), rng.Intn(12)), start: "window_start"}
	case 6: // over a union of both streams
		sel, group := keyed("window_start, window_end, "+aggs("x"), "window_start, window_end")
		return windowCase{query: "WITH u AS (SELECT k, v AS x, ts FROM wda" + where + " UNION ALL SELECT k, w, ts FROM wdb) SELECT " + sel + " FROM " + window("u") + " GROUP BY " + group, start: "window_start"}
	case 0: // a window over a stream
		sel, group := keyed("window_start, window_end, "+aggs("v"), "window_start, window_end")
		return windowCase{query: "SELECT " + sel + " FROM " + window("wda") + where + " GROUP BY " + group, start: "window_start"}
	case 1: // over a WITH query that filters and computes
		sel, group := keyed("window_start, "+aggs("x"), "window_start")
		return windowCase{query: "WITH f AS (SELECT k, v * 2 + 1 AS x, ts FROM wda" + where + ") SELECT " + sel + " FROM " + window("f") + " GROUP BY " + group, start: "window_start"}
	case 2: // a filter over a window's subquery
		sel, group := keyed("window_start, window_end, count(*) AS n, "+aggs("v"), "window_start, window_end")
		return windowCase{query: fmt.Sprintf("SELECT * FROM (SELECT %s FROM %s GROUP BY %s) t WHERE n > %d", sel, window("wda"), group, rng.Intn(4)), start: "window_start"}
	case 3: // cascading: windows over windows' ends
		inner := sizes[rng.Intn(3)]
		outer := inner * (2 + rng.Intn(3))
		sel, group := keyed("window_start, sum(n) AS n, max(top) AS top, count(*) AS windows", "window_start")
		return windowCase{query: fmt.Sprintf("WITH m AS (SELECT k, window_end AS ts, count(*) AS n, max(v) AS top FROM TUMBLE(wda, ts, INTERVAL '%d' SECOND)%s GROUP BY k, window_end) SELECT %s FROM TUMBLE(m, ts, INTERVAL '%d' SECOND) GROUP BY %s", inner, where, sel, outer, group), start: "window_start"}
	case 4: // a window join
		return windowCase{query: fmt.Sprintf("SELECT x.k, x.window_start, x.n, y.m, y.top FROM (SELECT k, window_start, count(*) AS n FROM %s%s GROUP BY k, window_start) x JOIN (SELECT k, window_start, count(*) AS m, max(w) AS top FROM TUMBLE(wdb, ts, INTERVAL '%d' SECOND) GROUP BY k, window_start) y ON x.k = y.k AND x.window_start = y.window_start",
			fmt.Sprintf("TUMBLE(wda, ts, INTERVAL '%d' SECOND)", size), where, size), start: "window_start"}
	default: // a window over an interval join, inner or left
		lo := rng.Intn(6) - 3
		hi := lo + rng.Intn(10)
		join := pick("JOIN", "LEFT JOIN")
		sel, group := keyed("window_start, count(*) AS n, count(w) AS matched, "+aggs("w"), "window_start")
		return windowCase{query: fmt.Sprintf("WITH j AS (SELECT a.k, a.ts, a.v, b.w FROM wda a %s wdb b ON a.k = b.k AND b.ts BETWEEN a.ts + INTERVAL '%d' SECOND AND a.ts + INTERVAL '%d' SECOND) SELECT %s FROM %s GROUP BY %s",
			join, lo, hi, sel, window("j"), group), start: "window_start"}
	}
}
