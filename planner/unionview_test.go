package planner_test

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// TestUnionOfViewsDifferential: random materialized views that are set
// operations whose branches are more than rows of streams: UNION ALL of
// aggregates, DISTINCTs, joins, global aggregates and any view
// TestViewDifferential draws (a subquery of the branch), beside plain
// rows of dv and du; UNIONs, INTERSECTs and EXCEPTs inside a UNION ALL
// and around one; a union under a grouping, a DISTINCT or a filter.
// Each runs in memory as twoStreamDifferential runs views; after each of
// three rounds the view must equal its SELECT run bounded over the same
// rows.
//
//	go test ./planner -run TestUnionOfViewsDifferential -view-seed 19 -view-cases 3000
func TestUnionOfViewsDifferential(t *testing.T) {
	twoStreamDifferentialDB(t, "vb", 17_000_023, *viewCases/3, genUnionOfViews)
}

// genUnionOfViews draws a set operation over two or three branches of two
// text columns, x and y.
func genUnionOfViews(rng *rand.Rand, db *testDB) string {
	var branches []string
	for i := 2 + rng.Intn(2); i > 0; i-- {
		branches = append(branches, genUnionBranch(rng, db))
	}
	op := func() string {
		return pick(rng, " UNION ALL ", " UNION ALL ", " UNION ALL ", " UNION ", " INTERSECT ", " EXCEPT ")
	}
	q := branches[0] + op() + branches[1]
	if len(branches) == 3 {
		if rng.Intn(2) == 0 {
			q = branches[0] + op() + "(" + branches[1] + op() + branches[2] + ")"
		} else {
			q += op() + branches[2]
		}
	}
	switch rng.Intn(5) {
	case 0:
		return "SELECT x, count(*) AS n, max(y) AS m FROM (" + q + ") u GROUP BY x"
	case 1:
		return "SELECT DISTINCT y FROM (" + q + ") u"
	case 2:
		return "SELECT y, x FROM (" + q + ") u WHERE x IS NOT NULL"
	}
	return q
}

// genUnionBranch draws one branch: rows of the stream, an aggregate, a
// DISTINCT, a join, or a random view of TestViewDifferential's in a
// subquery, its first and last visible columns as text.
func genUnionBranch(rng *rand.Rand, db *testDB) string {
	where := ""
	if rng.Intn(3) == 0 {
		where = " WHERE " + pick(rng, "v > 2", "w <> 0", "k IS NOT NULL", "k <> 'b'")
	}
	from := pick(rng, "dv", "du")
	switch rng.Intn(6) {
	case 0:
		return "SELECT k AS x, CAST(v AS text) AS y FROM " + from + where
	case 1:
		return "SELECT k AS x, CAST(count(*) AS text) AS y FROM " + from + where + " GROUP BY k"
	case 2:
		return "SELECT DISTINCT CAST(w AS text) AS x, k AS y FROM " + from + where
	case 3:
		return "SELECT a.k AS x, CAST(b.id AS text) AS y FROM dv a JOIN du b ON a.v = b.w" + strings.ReplaceAll(where, "WHERE ", "WHERE a.")
	case 4:
		return "SELECT CAST(sum(v) AS text) AS x, CAST(count(*) AS text) AS y FROM " + from + where
	}
	sub := genView(rng)
	c, err := db.plan("CREATE MATERIALIZED VIEW vd AS " + sub)
	if err != nil {
		return sub // refused again, with the query, when the test plans it
	}
	var visible []string
	for _, col := range c.Rel.Columns {
		if !col.Hidden {
			visible = append(visible, strconv.Quote(col.Name))
		}
	}
	return fmt.Sprintf("SELECT CAST(b.%s AS text) AS x, CAST(b.%s AS text) AS y FROM (%s) b", visible[0], visible[len(visible)-1], sub)
}
