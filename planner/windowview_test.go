package planner_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
)

// TestWindowOverViewDifferential: TUMBLE and HOP over a view whose rows
// change: a view of dv's rows with a time computed from them (rows only
// come), a key's latest row (DISTINCT ON: a row is replaced, its time
// moves), or a key's aggregates with a time from their sum (each round
// moves it, and the row moves between windows). Over it, a view grouping
// the windows (by window_start or window_end, some by another column too;
// count, sum, min, max; WHERE, HAVING) or holding the window rows, with an
// alias and qualified names. After each round the window view must equal
// its SELECT run bounded over the first view's rows, where TUMBLE and HOP
// assign each row its windows.
//
//	go test ./planner -run TestWindowOverViewDifferential -view-seed 19 -view-cases 3000
func TestWindowOverViewDifferential(t *testing.T) {
	cases := *viewCases / 4
	if testing.Short() {
		cases /= 10
	}
	viewsOverViews(t, cases, 3_000_017, genTimedView, genWindowOverView)
}

// TestSessionOverViewDifferential: SESSION over a view whose rows change
// (genTimedView's), in a view: by a key, a computed key or none, with an
// alias, WHERE and HAVING. A row that moves or leaves splits or merges
// sessions. After each round the session view must equal its SELECT run
// bounded over the first view's rows (the bounded SESSION step).
func TestSessionOverViewDifferential(t *testing.T) {
	cases := *viewCases / 6
	if testing.Short() {
		cases /= 10
	}
	viewsOverViews(t, cases, 4_000_037, genTimedView, genSessionOverView)
}

// genSessionOverView makes a SESSION query over the view vd.
func genSessionOverView(rng *rand.Rand, cols []catalog.Column) string {
	alias, q := "", ""
	if rng.Intn(3) == 0 {
		alias, q = " x", "x."
	}
	key := pick(rng, q+"k, ", "", "v % 2 AS r, ", q+"k, "+q+"v > 3 AS big, ")
	group := pick(rng, q+"window_start", q+"window_start, window_end")
	switch key {
	case "v % 2 AS r, ":
		group = pick(rng, "r, ", "v % 2, ", "1, ") + group
		if group[:2] == "1," {
			group = "1, 2" + group[len("1, "+q+"window_start"):]
		}
	case "":
	default:
		group = key[:len(key)-2] + ", " + group
		group = strings.ReplaceAll(group, " AS big", "")
	}
	where := pick(rng, "", " WHERE "+q+"v > 2", " WHERE "+q+"k <> 'b'")
	having := pick(rng, "", "", " HAVING count(*) > 1")
	win := "window_start"
	if strings.HasSuffix(group, "window_end") {
		win += ", window_end"
	}
	return fmt.Sprintf("SELECT %s%s, count(*) AS n, %s FROM SESSION(vd, ts, INTERVAL '%d' SECOND)%s%s GROUP BY %s%s",
		key, win, pick(rng, "sum(v)", "min(ts), max(v)", "count(DISTINCT k) AS keys"), []int{3, 10, 30, 60}[rng.Intn(4)], alias, where, group, having)
}

// genTimedView makes a view over dv with a timestamp column ts.
func genTimedView(rng *rand.Rand) string {
	ts := pick(rng, "TIMESTAMP '2026-01-01 00:00:00'", "TIMESTAMPTZ '2026-01-01 00:00:00+00'")
	switch rng.Intn(3) {
	case 0: // rows
		return fmt.Sprintf("SELECT k, id, v, w, %s + (id * 7 + coalesce(v, 0)) * INTERVAL '1 second' AS ts FROM dv%s", ts,
			pick(rng, "", " WHERE v > 2", " WHERE w <> 0"))
	case 1: // each key's latest row (its time moves, NULL with v)
		return fmt.Sprintf("SELECT DISTINCT ON (k) k, id, v, %s + (id * 5 + v) * INTERVAL '1 second' AS ts FROM dv ORDER BY k, id DESC", ts)
	}
	// each key's aggregates: the time moves with the sum, every round
	return fmt.Sprintf("SELECT k, count(*) AS n, max(v) AS v, %s + sum(w) * INTERVAL '13 seconds' + count(*) * INTERVAL '%d seconds' AS ts FROM dv GROUP BY k", ts, 1+rng.Intn(9))
}

// genWindowOverView makes a window query over the view vd (of cols).
func genWindowOverView(rng *rand.Rand, cols []catalog.Column) string {
	sizes := []int{5, 10, 30, 60}
	size := sizes[rng.Intn(len(sizes))]
	window := fmt.Sprintf("TUMBLE(vd, ts, INTERVAL '%d' SECOND)", size)
	if rng.Intn(2) == 0 { // HOP, its slide dividing the size or not
		slide := pick(rng, fmt.Sprint(size/2), fmt.Sprint(max(1, size/3)), fmt.Sprint(size), fmt.Sprint(size*2/5))
		if slide == "0" {
			slide = "1"
		}
		window = fmt.Sprintf("HOP(vd, ts, INTERVAL '%s' SECOND, INTERVAL '%d' SECOND)", slide, size)
	}
	alias, q := "", ""
	if rng.Intn(3) == 0 {
		alias, q = " x", "x."
	}
	where := pick(rng, "", " WHERE "+q+"v > 3", " WHERE "+q+"k <> 'b'")
	if rng.Intn(4) == 0 { // the window rows
		return fmt.Sprintf("SELECT %[1]sk, %[1]sv, %[1]sts, %[1]swindow_start, window_end FROM %s%s%s", q, window, alias, where)
	}
	by := pick(rng, q+"window_start", q+"window_end", q+"window_start, "+q+"window_end")
	sel := by
	if rng.Intn(2) == 0 {
		by += ", " + q + "k"
		sel += ", " + q + "k"
	}
	aggs := pick(rng, "count(*)", "count(*), sum(v)", "min(v), max(ts)", "count(v), sum(v) FILTER (WHERE v > 4)")
	having := pick(rng, "", "", " HAVING count(*) > 1")
	return fmt.Sprintf("SELECT %s, %s FROM %s%s%s GROUP BY %s%s", sel, aggs, window, alias, where, by, having)
}
