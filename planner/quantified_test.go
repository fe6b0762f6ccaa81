package planner_test

import (
	"math/rand"
	"testing"
)

// TestQuantifiedViewDifferential: random materialized views whose WHERE
// compares with ANY, SOME or ALL over a subquery (of its own or
// correlated with the outer row, by an equality or not; plain, over an
// expression, or grouped), alone or under AND and OR, in views of rows
// and grouped views. The view runs the comparisons as comparisons with
// the subquery's min, max and counts (quantifiedAsScalars); after each
// of three rounds of both streams' rows it must equal its SELECT run
// bounded, which runs the quantified comparison itself.
//
//	go test ./planner -run TestQuantifiedViewDifferential -view-seed 19 -view-cases 3000
func TestQuantifiedViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vqa", 8_000_009, *viewCases/15, genQuantifiedView)
}

func genQuantifiedView(rng *rand.Rand) string {
	sub := func() string {
		col := pick(rng, "x.v", "x.w", "x.w * 2 - 3", "x.v + x.w")
		q := "(SELECT " + col + " FROM " + pick(rng, "dv", "du") + " x"
		switch rng.Intn(4) {
		case 0: // of its own
			if rng.Intn(2) == 0 {
				q += " WHERE " + pick(rng, "x.k = 'a'", "x.w > 0", "x.v IS NOT NULL")
			}
		case 1: // grouped, of its own
			q = "(SELECT " + pick(rng, "max(x.v)", "min(x.w)", "count(*)", "sum(x.v)") + " FROM " + pick(rng, "dv", "du") + " x GROUP BY x.k"
		default: // correlated
			q += " WHERE " + pick(rng, "x.k = dv.k", "x.k = dv.k AND x.id <> dv.id", "x.w = dv.w", "x.k = dv.k AND x.v IS NOT NULL")
		}
		return q + ")"
	}
	// = ANY is IN, which a view runs as a join where it is a conjunct of
	// WHERE only; <> ALL is NOT IN, left to its own tests
	quant := func(conjunct bool) string {
		op, q := pick(rng, ">", ">=", "<", "<=", "<>", "="), pick(rng, "ANY", "SOME", "ALL", "ALL")
		for !conjunct && op == "=" && q != "ALL" || op == "<>" && q == "ALL" {
			op, q = pick(rng, ">", ">=", "<", "<=", "<>", "="), pick(rng, "ANY", "SOME", "ALL", "ALL")
		}
		return pick(rng, "v", "w", "v - w") + " " + op + " " + q + " " + sub()
	}
	var where string
	switch rng.Intn(4) {
	case 0:
		where = quant(true) + " AND " + pick(rng, "k IS NOT NULL", "w > 0", quant(true))
	case 1:
		where = "(" + quant(false) + " OR " + pick(rng, "w = 0", "k = 'b'", quant(false)) + ")"
	default:
		where = quant(true)
	}
	if rng.Intn(3) == 0 {
		return "SELECT k, count(*) AS n, sum(v) AS s FROM dv WHERE " + where + " GROUP BY k"
	}
	return "SELECT " + pick(rng, "id, v", "*", "id, k, w") + " FROM dv WHERE " + where
}
