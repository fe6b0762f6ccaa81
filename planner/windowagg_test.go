package planner_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestWindowAggViewDifferential: views with aggregates over whole
// partitions (agg(…) OVER (PARTITION BY …), OVER ()) of dv's rows, of a
// join of dv and du, running aggregates (OVER (… ORDER BY x[, y …])) of dv's
// rows, and views over such a view, each against its bounded SELECT.
func TestWindowAggViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vw", 11_000_027, *viewCases/6, genWindowAggView)
}

func genWindowAggView(rng *rand.Rand) string {
	window := func() string {
		agg := pick(rng, "sum(v)", "count(*)", "max(w)", "min(v)", "avg(w)", "count(v)",
			"min(w)", "sum(dv.v)")
		part := pick(rng, "", "PARTITION BY k", "PARTITION BY w > 0", "PARTITION BY k, v % 2", "PARTITION BY v", "PARTITION BY dv.k")
		if rng.Intn(3) == 0 { // a running aggregate: up to the row and its peers
			part = strings.TrimSpace(part + pick(rng, " ORDER BY v", " ORDER BY id DESC", " ORDER BY w NULLS FIRST", " ORDER BY k DESC NULLS LAST", " ORDER BY v % 3",
				" ORDER BY k, v", " ORDER BY w DESC, v NULLS FIRST", " ORDER BY v % 3, k DESC, w"))
		}
		return fmt.Sprintf("%s OVER (%s)", agg, part)
	}
	where := ""
	if rng.Intn(3) == 0 {
		where = " WHERE " + pick(rng, "v > 2", "w <> 0", "k IS NOT NULL", "v IS NULL OR w > 0", "k <> 'b'")
	}
	if rng.Intn(5) == 0 { // over a join of both streams
		joined := []string{"count(*) OVER (PARTITION BY d.k)", "sum(d.v) OVER (PARTITION BY u.w > 0)", "max(u.v) OVER ()",
			"avg(d.w) OVER (PARTITION BY d.v, u.v)", "min(d.v) OVER (PARTITION BY u.v)"}
		items := []string{"d.id", "u.id AS uid", pick(rng, joined...) + " AS x1"}
		if rng.Intn(2) == 0 {
			items = append(items, "u.w - "+pick(rng, joined...)+" AS x2")
		}
		return "SELECT " + strings.Join(items, ", ") + " FROM dv d JOIN du u ON d.k = u.k" + strings.NewReplacer("v ", "d.v ", "w ", "u.w ", "k ", "d.k ").Replace(where)
	}
	items := []string{pick(rng, "id", "id, k", "id, v, w", "*")}
	if rng.Intn(4) == 0 {
		items = append(items, "max(k) OVER (PARTITION BY w) AS mk")
	}
	for i := 1 + rng.Intn(2); i > 0; i-- {
		w := window()
		if rng.Intn(3) == 0 {
			w = "v - " + w
		}
		items = append(items, fmt.Sprintf("%s AS x%d", w, i))
	}
	q := "SELECT " + strings.Join(items, ", ") + " FROM dv" + where
	if rng.Intn(4) == 0 { // a view over it
		// (grouped by a fixed scale: equal numerics of several scales in
		// one group show the scale of whichever row came first)
		q = fmt.Sprintf("SELECT round(x1::numeric, 3) AS r, count(*) AS n, max(id) AS top FROM (%s) t GROUP BY 1", q)
	}
	return q
}
