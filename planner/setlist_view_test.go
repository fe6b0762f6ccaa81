package planner_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestSetListViewDifferential: views whose select list calls
// set-returning functions (SELECT k, generate_series(0, w) FROM dv): of
// a stream's rows, of a grouped subquery's and of a join's (rows that
// change), one function or several side by side (the shorter padded
// with NULLs), in an expression, then made DISTINCT, DISTINCT ON, a
// top-N or grouped by an enclosing query; each against its bounded
// SELECT.
func TestSetListViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vs", 31_000_003, *viewCases/3, genSetListView)
}

func genSetListView(rng *rand.Rand) string {
	from, cols, sets := "dv", []string{"k", "id", "v", "w"},
		[]string{"generate_series(0, w)", "unnest(ARRAY[v, w])", "generate_series(1, v)", "unnest(ARRAY[w])"}
	if rng.Intn(3) == 0 { // the rows of a grouped subquery: they change
		from = fmt.Sprintf("(SELECT k, count(*) AS c, max(v) AS mv, min(w) AS mw FROM %s%s GROUP BY k) b",
			pick(rng, "dv", "du"), pick(rng, "", " WHERE v > 1", " WHERE w <> 0"))
		cols = []string{"k", "c", "mv", "mw"}
		sets = []string{"generate_series(1, c)", "generate_series(mw, 2)", "unnest(ARRAY[mv, c])", "generate_series(0, mv)"}
	}
	if rng.Intn(4) == 0 { // the rows of a join: they change as either side's come
		from = "dv d JOIN du u ON d.k = u.k"
		cols = []string{"d.k", "d.id", "u.v", "u.w"}
		sets = []string{"generate_series(0, u.w)", "unnest(ARRAY[d.v, u.w])", "generate_series(1, d.v)", "unnest(ARRAY[u.id])"}
	}
	key := cols[0]
	where := ""
	if rng.Intn(3) == 0 {
		where = " WHERE " + pick(rng, cols[2]+" > 1", cols[3]+" <> 0", key+" IS NOT NULL")
	}
	// the select list: columns and one or two functions, one maybe in
	// an expression
	var items []string
	for _, i := range rng.Perm(len(cols))[:rng.Intn(3)] {
		if i != 0 { // DISTINCT ON's key comes first
			items = append(items, cols[i])
		}
	}
	nsets := 1 + rng.Intn(2)
	for i := 0; i < nsets; i++ {
		f := pick(rng, sets...)
		if rng.Intn(4) == 0 {
			f = pick(rng, "10 * ", key+" || ", cols[1]+" - ") + f
		}
		items = append(items, fmt.Sprintf("%s AS f%d", f, i+1))
	}
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	list := strings.Join(items, ", ")
	all := make([]string, len(items))
	for i := range items {
		all[i] = fmt.Sprint(i + 1)
	}
	switch rng.Intn(6) {
	case 0:
		return fmt.Sprintf("SELECT DISTINCT %s FROM %s%s", list, from, where)
	case 1: // the first row per key: every column orders, so ties are equal rows
		keyed := make([]string, len(items))
		for i := range items {
			keyed[i] = fmt.Sprint(i + 2)
		}
		return fmt.Sprintf("SELECT DISTINCT ON (%s) %s, %s FROM %s%s ORDER BY 1, %s", key, key, list, from, where,
			strings.Join(keyed, pick(rng, ", ", " DESC, ")))
	case 2: // a top-N of the functions' rows: ties are equal rows
		return fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s LIMIT %d", list, from, where,
			strings.Join(all, " DESC, ")+" DESC", 1+rng.Intn(6))
	case 3: // grouped by the functions' values
		return fmt.Sprintf("SELECT f1, count(*) AS n, max(kk) AS m FROM (SELECT %s FROM %s%s) s GROUP BY f1", list+", "+key+" AS kk", from, where)
	}
	return fmt.Sprintf("SELECT %s FROM %s%s", list, from, where)
}
