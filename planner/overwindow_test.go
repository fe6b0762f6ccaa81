package planner_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestOverWindowViewDifferential: views with window functions the
// overWindow operator runs (lag, lead, first/last/nth_value, rankings,
// ntile, cume_dist, aggregates over ROWS, RANGE and GROUPS frames), of
// one or several OVER clauses, over dv's rows, over a grouped subquery
// (whose rows change) and over a subquery joining dv and du, each
// against its bounded SELECT. Functions whose values depend on the order
// of peers get an order that ends in a unique column: which of two peers
// comes first is the arrival's in the view and the scan's in the SELECT.
func TestOverWindowViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vo", 13_000_019, *viewCases/4, genOverWindowView)
}

func genOverWindowView(rng *rand.Rand) string {
	type source struct {
		from, where      string
		tail             string   // GROUP BY, HAVING
		id               string   // a column unique per row
		items            string   // the select list's first items, when not id
		num, other, part []string // numeric columns, other columns, partition terms
	}
	sources := []source{
		{from: "dv", id: "id", num: []string{"v", "w"}, other: []string{"k"}, part: []string{"k", "v % 2", "w > 0, k"},
			where: pick(rng, "", "", " WHERE v > 2", " WHERE w <> 0 OR k IS NULL")},
		{from: "(SELECT k, count(*) AS n, sum(v) AS s, max(w) AS m FROM dv GROUP BY k) t", id: "k",
			num: []string{"n", "s", "m"}, other: []string{"k"}, part: []string{"n > 1", "s % 2"}},
		{from: "(SELECT d.id, u.id AS uid, d.v, u.w, d.k FROM dv d JOIN du u ON d.k = u.k) t", id: "id, uid",
			num: []string{"v", "w"}, other: []string{"k"}, part: []string{"k", "w > 0"}},
		// windows over a grouped query or a join in the same SELECT
		{from: "dv", id: "k", num: []string{"count(*)", "sum(v)", "max(w)"}, other: []string{"k"}, part: []string{"count(*) > 1", "sum(v) % 2"},
			where: pick(rng, "", " WHERE v > 2"), tail: pick(rng, " GROUP BY k", " GROUP BY 1", " GROUP BY k HAVING count(*) > 1")},
		{from: "dv d JOIN du u ON d.k = u.k", id: "d.id, u.id", items: "d.id, u.id AS uid",
			num: []string{"d.v", "u.w"}, other: []string{"d.k"}, part: []string{"d.k", "u.w > 0"}, where: pick(rng, "", " WHERE d.v > 2")},
	}
	src := sources[rng.Intn(len(sources))]
	if rng.Intn(2) == 0 {
		src = sources[0]
	}
	num := func() string { return src.num[rng.Intn(len(src.num))] }
	col := func() string {
		all := append(append([]string{}, src.num...), src.other...)
		return all[rng.Intn(len(all))]
	}
	dir := func() string { return pick(rng, "", " DESC", " NULLS FIRST", " DESC NULLS LAST") }
	over := func(total bool, frame string) string {
		var terms []string
		for i := rng.Intn(3); i > 0; i-- {
			terms = append(terms, col()+dir())
		}
		if total {
			for _, c := range strings.Split(src.id, ", ") {
				terms = append(terms, c+pick(rng, "", " DESC"))
			}
		} else if len(terms) == 0 {
			terms = append(terms, col()+dir())
		}
		var parts []string
		if rng.Intn(3) > 0 {
			parts = append(parts, "PARTITION BY "+src.part[rng.Intn(len(src.part))])
		}
		parts = append(parts, "ORDER BY "+strings.Join(terms, ", "))
		if frame != "" {
			parts = append(parts, frame)
		}
		return "OVER (" + strings.Join(parts, " ") + ")"
	}
	call := func() string {
		// the values of these depend on which peer comes first
		switch rng.Intn(16) {
		case 0:
			return "lag(" + num() + ") " + over(true, "")
		case 1:
			return "lead(" + num() + ", 2, -1) " + over(true, "")
		case 2:
			return "first_value(" + col() + ") " + over(true, "")
		case 3:
			return "last_value(" + num() + ") " + over(true, pick(rng, "", "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"))
		case 4:
			return "nth_value(" + num() + ", 2) " + over(true, "")
		case 5:
			return "row_number() " + over(true, "")
		case 6:
			return "ntile(3) " + over(true, "")
		case 13: // these in the frame's order
			return pick(rng, "string_agg("+num()+"::text, '/') ", "array_agg("+num()+") ") + over(true, pick(rng, "",
				"ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"))
		case 7:
			return pick(rng, "sum(", "avg(", "max(", "count(") + num() + ") " + over(true, pick(rng,
				"ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "ROWS 2 PRECEDING", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"))
		// and these do not: peers share them
		case 14: // statistics of two variables, rounded: the same sums in another order may differ in the last bit
			f := "round(" + pick(rng, "corr(", "regr_slope(", "covar_pop(") + num() + ", " + num() + ") "
			if rng.Intn(2) == 0 {
				return f + over(true, "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW") + "::numeric, 8)"
			}
			return f + over(false, "") + "::numeric, 8)"
		case 8:
			return "rank() " + over(false, "")
		case 9:
			return "dense_rank() " + over(false, "")
		case 10:
			return "cume_dist() " + over(false, "")
		case 11:
			return "percent_rank() " + over(false, "")
		case 12:
			return pick(rng, "count(*) ", "min("+num()+") ") + over(false, pick(rng, "", "GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW",
				"RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"))
		}
		return "sum(" + num() + ") " + over(false, pick(rng, "", "GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING"))
	}
	// an aggregate's FILTER
	filtered := func(c string) string {
		for _, agg := range []string{"sum(", "avg(", "max(", "min(", "count(", "string_agg("} {
			if strings.HasPrefix(c, agg) && rng.Intn(4) == 0 {
				return strings.Replace(c, " OVER (", " FILTER (WHERE "+num()+" > 1) OVER (", 1)
			}
		}
		return c
	}
	items := strings.Split(src.id, ", ")
	if src.items != "" {
		items = strings.Split(src.items, ", ")
	}
	for i := 1 + rng.Intn(3); i > 0; i-- {
		c := filtered(call())
		if rng.Intn(4) == 0 && !strings.Contains(c, "_value(k") && !strings.Contains(c, "_value(d.k") && !strings.HasPrefix(c, "cume_dist") && !strings.HasPrefix(c, "percent_rank") && !strings.HasPrefix(c, "avg") &&
			!strings.HasPrefix(c, "string_agg") && !strings.HasPrefix(c, "array_agg") {
			c = num() + " - " + c
		}
		items = append(items, fmt.Sprintf("%s AS x%d", c, i))
	}
	q := "SELECT " + strings.Join(items, ", ") + " FROM " + src.from + src.where + src.tail
	if src.from == "dv" && rng.Intn(10) == 0 { // the records' metadata, through layers
		return "SELECT id, lag(v) OVER (PARTITION BY _partition ORDER BY _offset) AS x1, rank() OVER (ORDER BY v) AS x2, _offset - " +
			"first_value(_offset) OVER (PARTITION BY _partition ORDER BY _offset) AS x3 FROM dv" + src.where
	}
	if src.from == "dv" && rng.Intn(6) == 0 {
		// a ranked subquery bounded by its reader: a top-N when the rank
		// is its one window function and it carries columns only, a
		// window view read by a row view otherwise
		extra := pick(rng, "", ", v * 2 AS v2", ", lag(v) OVER (PARTITION BY k ORDER BY id) AS l")
		return fmt.Sprintf("SELECT * FROM (SELECT id, k, v%s, row_number() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM dv%s) t WHERE rn <= %d",
			extra, src.where, 1+rng.Intn(3))
	}
	switch rng.Intn(8) {
	case 0, 1: // a view over it
		q = "SELECT x1, count(*) AS c FROM (" + q + ") o GROUP BY x1"
	case 2: // a top-N of it (ties broken by the ids)
		ids := src.id
		if src.items != "" {
			ids = "id, uid"
		}
		first := "x1 DESC"
		if rng.Intn(2) == 0 {
			first = num() + " DESC" // maybe a term outside the select list
		}
		q += fmt.Sprintf(" ORDER BY %s, %s LIMIT %d", first, ids, 1+rng.Intn(4))
	}
	return q
}
