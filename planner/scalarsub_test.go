package planner_test

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestScalarSubqueryViewDifferential: random materialized views with
// scalar subqueries (aggregates without GROUP BY, over the same stream or
// another, filtered, with HAVING that may leave them without their row,
// or correlated with the outer row, by equalities or not) in WHERE, in the select
// list, in grouped and global aggregations, and in HAVING (uncorrelated,
// with an IN (SELECT …) beside them at times).
// They run in memory as the server plans them (each subquery a hidden
// view joined to every row), both streams' rows arriving in random
// batches, state checkpointed and at random rebuilt; after each of three
// rounds the view must equal its SELECT run bounded, which runs the
// subqueries as subqueries.
//
//	go test ./planner -run TestScalarSubqueryViewDifferential -view-seed 19 -view-cases 3000
func TestScalarSubqueryViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vq", 7_000_003, *viewCases/3, genScalarView)
}

// genScalarView makes a view's query with scalar subqueries: of their
// own, or correlated by equalities with the outer row (not in a grouped
// select list, where the planner refuses them).
func genScalarView(rng *rand.Rand) string {
	own := func() string {
		q := fmt.Sprintf("(SELECT %s FROM %s", pick(rng, "avg(v)", "max(w)", "min(v)", "count(*)", "sum(w)", "count(DISTINCT k)", "max(w) - min(w)", "sum(v) + count(*)"), pick(rng, "dv", "du"))
		if rng.Intn(3) == 0 {
			q += " WHERE " + pick(rng, "k = 'a'", "w > 0", "v IS NOT NULL")
		}
		if rng.Intn(4) == 0 {
			q += fmt.Sprintf(" HAVING count(*) > %d", 3+rng.Intn(10)) // none while it has few rows: NULL
		}
		return q + ")"
	}
	corr := func() string {
		q := fmt.Sprintf("(SELECT %s FROM %s x WHERE %s", pick(rng, "max(x.w)", "count(*)", "sum(x.v)", "min(v)", "count(x.v)", "avg(x.w)",
			"count(*) * 10 + coalesce(max(x.v), -1)", "sum(x.w) - min(x.v)", "coalesce(avg(x.v), 0) / 2"),
			pick(rng, "dv", "du"), pick(rng, "x.k = dv.k", "dv.k = x.k", "x.w = dv.w", "x.k = dv.k AND x.w = dv.w % 3",
				// correlated otherwise than by equalities: per outer row
				"x.k = dv.k AND x.v > dv.v", "x.w < dv.v", "x.id < dv.id", "x.k = dv.k AND x.id <> dv.id"))
		if rng.Intn(3) == 0 {
			q += " AND " + pick(rng, "x.v > 2", "x.v IS NOT NULL", "x.w <> 0")
		}
		return q + ")"
	}
	sub := own
	anySub := func() string {
		if rng.Intn(2) == 0 {
			return corr()
		}
		return own()
	}
	cond := func() string {
		s := anySub
		return pick(rng, "v > "+s(), "w <= "+s(), "v * 2 >= "+s()+" - 3", s()+" IS NULL", "coalesce("+s()+", 0) < 4 + w")
	}
	where := " WHERE " + cond()
	if rng.Intn(3) == 0 {
		where += pick(rng, " AND k IS NOT NULL", " OR w = 0", " AND "+cond())
	}
	switch rng.Intn(5) {
	case 0: // rows, the value in the select list too
		items := pick(rng, "id, v", "*", "id, k, v - "+anySub()+" AS d", "id, "+anySub()+" AS s")
		if rng.Intn(3) == 0 {
			where = ""
		}
		return "SELECT " + items + " FROM dv" + where
	case 1: // grouped, the value a column of each group
		return "SELECT k, count(*) AS n, sum(v) AS s, " + sub() + " AS m FROM dv" + where + " GROUP BY k"
	case 2: // global
		return "SELECT count(*) AS n, max(v) AS mv FROM dv" + where
	case 3: // HAVING against a subquery's value (own: the group's columns are not in its scope)
		if rng.Intn(2) == 0 {
			where = ""
		}
		having := pick(rng, "count(*) > "+own(), "sum(v) >= coalesce("+own()+", 0)", "max(w) - min(v) < "+own(), own()+" IS NULL OR count(*) = 2")
		if rng.Intn(3) == 0 {
			having = "(" + having + ") AND k IN (SELECT k FROM du" + pick(rng, "", " WHERE w > 0") + ")"
		}
		return "SELECT k, count(*) AS n, sum(v) AS s FROM dv" + where + pick(rng, " GROUP BY k", " GROUP BY 1") + " HAVING " + having
	}
	return "SELECT k, max(w) AS mw FROM dv" + where + " GROUP BY k HAVING count(*) > 1"
}
