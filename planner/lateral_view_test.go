package planner_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestLateralViewDifferential: views over dv and LATERAL functions of its
// rows (each row repeated by generate_series, doubled by unnest, or kept
// once padded by a LEFT JOIN LATERAL when the function gives nothing):
// aggregations, DISTINCT, DISTINCT ON, top-N and row views, each against
// its bounded SELECT.
func TestLateralViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vl", 9_000_011, *viewCases/2, genLateralView)
}

func genLateralView(rng *rand.Rand) string {
	if rng.Intn(5) == 0 { // the function's column as a key and an argument
		where := ""
		if rng.Intn(2) == 0 {
			where = " WHERE " + pick(rng, "g > 0", "v > 2 AND g <> 1", "k IS NOT NULL")
		}
		return fmt.Sprintf("SELECT g %% 2 AS p, k, count(*) AS n, sum(v * g) AS s, max(g) AS m FROM dv, LATERAL generate_series(0, w) g%s GROUP BY 1, 2", where)
	}
	for {
		q := genView(rng)
		// A ranking subquery over functions is not planned yet; * would
		// select the function's column too, and rows that differ only
		// there tie in ORDER BY id.
		if strings.Contains(q, "ROW_NUMBER") || strings.Contains(q, "* FROM") {
			continue
		}
		return fromDV.ReplaceAllString(q, " FROM dv"+pick(rng,
			", LATERAL generate_series(0, w) g",
			" CROSS JOIN LATERAL unnest(ARRAY[v, w]) u",
			" LEFT JOIN LATERAL generate_series(1, w) g ON true",
			", LATERAL unnest(ARRAY[v, w]) WITH ORDINALITY u(x, n)",
			" LEFT JOIN LATERAL generate_series(2, w) WITH ORDINALITY AS g(g, n) ON true",
			", generate_series(1, 2)"))
	}
}

// TestLateralOverViewDifferential: LATERAL functions of a view's rows (a
// grouped subquery of dv or du, whose rows change): the rows they make,
// filtered, grouped or made DISTINCT, and a LEFT JOIN LATERAL keeping
// the rows the function gives nothing for; each against its bounded
// SELECT, while the view's rows change under it.
func TestLateralOverViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vx", 23_000_009, *viewCases/4, func(rng *rand.Rand) string {
		sub := fmt.Sprintf("(SELECT k, count(*) AS c, array_agg(v) AS vs, max(w) AS mw FROM %s%s GROUP BY k) b",
			pick(rng, "dv", "du"), pick(rng, "", " WHERE v > 1", " WHERE w <> 0"))
		switch rng.Intn(7) {
		case 5: // two functions, the second of the first's rows
			return "SELECT b.k, g, h FROM " + sub + pick(rng,
				", LATERAL generate_series(1, b.c) g, LATERAL generate_series(g, 2) h",
				" CROSS JOIN LATERAL generate_series(1, b.c) g LEFT JOIN LATERAL generate_series(g + 1, b.mw) h ON true") +
				pick(rng, "", " WHERE g < 3")
		case 0:
			return "SELECT b.k, g FROM " + sub + ", LATERAL generate_series(1, b.c) g"
		case 1:
			return "SELECT b.k, e FROM " + sub + ", LATERAL unnest(b.vs) e WHERE " + pick(rng, "e > 1", "e IS NULL", "b.c > 1")
		case 2:
			return "SELECT e, count(*) AS n, max(b.k) AS m FROM " + sub + ", LATERAL unnest(b.vs) e GROUP BY e"
		case 3:
			return "SELECT b.k, b.mw, g FROM " + sub + " LEFT JOIN LATERAL generate_series(1, b.mw) g ON true"
		case 4:
			fn := " generate_series(b.mw, 2) WITH ORDINALITY AS s(g, n)"
			return "SELECT b.k, s.g * 10 + s.n AS gn FROM " + sub + pick(rng, ", LATERAL"+fn, " LEFT JOIN LATERAL"+fn+" ON true")
		}
		return "SELECT DISTINCT e FROM " + sub + " CROSS JOIN LATERAL unnest(b.vs) e"
	})
}
