package planner_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

var (
	lateralSeed  = flag.Int64("lateral-seed", 41, "seed of TestLateralRewriteDifferential")
	lateralCases = flag.Int("lateral-cases", 3000, "cases of TestLateralRewriteDifferential")
)

// TestLateralRewriteDifferential checks the rewrite of LATERAL subqueries
// into joins (lateralRewrite, which bounded queries use where it applies
// and views always) against running each subquery per row of the items
// before it (plan.Apply), as PostgreSQL does: random subqueries
// correlated by equalities or other comparisons (their rows, DISTINCT,
// groups with HAVING, first rows by an order with OFFSET, an aggregate's
// one row over no rows too, ranked groups, columns computed from the
// row: the last ones over the subquery's domain), joined by comma, CROSS
// JOIN, [LEFT] JOIN … ON, over random rows with NULLs in every column,
// must give the same rows both ways. A failure prints the query and the
// rows.
func TestLateralRewriteDifferential(t *testing.T) {
	cat := newCatalog(t)
	for i, r := range []*catalog.Relation{
		{Name: "l", Kind: catalog.Stream, Topic: "l", Format: "json", Partitions: 1,
			Columns: []catalog.Column{{Name: "k", Type: types.Int8}, {Name: "a", Type: types.Int8}}},
		{Name: "r", Kind: catalog.Stream, Topic: "r", Format: "json", Partitions: 1,
			Columns: []catalog.Column{{Name: "k", Type: types.Int8}, {Name: "b", Type: types.Int8}, {Name: "c", Type: types.Int8}}},
	} {
		b, err := catalog.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Apply(int64(i), r.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(*lateralSeed))
	db := &testDB{cat: cat, rows: map[string][]types.Row{}}
	small := func(n int) types.Value {
		if rng.Intn(8) == 0 {
			return types.NullValue
		}
		return types.NewInt8(int64(rng.Intn(n)))
	}
	rewritten := 0
	for i := 0; i < *lateralCases; i++ {
		if i%50 == 0 { // new rows now and then
			db.rows["l"], db.rows["r"] = nil, nil
			for j := 0; j < 4+rng.Intn(10); j++ {
				db.rows["l"] = append(db.rows["l"], types.Row{small(5), small(5)})
			}
			for j := 0; j < rng.Intn(30); j++ {
				db.rows["r"] = append(db.rows["r"], types.Row{small(5), small(6), small(4)})
			}
		}
		q, must := lateralQuery(rng)
		want, err := runLateral(db, q, planner.PlanQueryApplied)
		if err != nil {
			t.Fatalf("case %d: %s: per row: %v", i, q, err)
		}
		got, err := runLateral(db, q, planner.PlanQuery)
		if err != nil {
			t.Fatalf("case %d: %s: rewritten: %v", i, q, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("case %d (seed %d): %s\nl: %v\nr: %v\nrewritten:\n  %s\nper row:\n  %s", i, *lateralSeed, q,
				db.rows["l"], db.rows["r"], strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		ok, err := lateralRewritten(db, q)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			rewritten++
		} else if must {
			t.Fatalf("case %d: %s: runs per row; a join was expected", i, q)
		}
	}
	t.Logf("%d LATERAL queries (%d rewritten as joins) gave the same rows both ways (seed %d)", *lateralCases, rewritten, *lateralSeed)
}

// lateralQuery draws a query over l x and a LATERAL subquery t over r y
// with columns v and w, and says whether the rewrite must take it (a
// correlation by equalities, or any for a subquery of rows only).
func lateralQuery(rng *rand.Rand) (string, bool) {
	ci := rng.Intn(8)
	corr := []string{"y.k = x.k", "y.k = x.a", "y.k = x.k AND y.c = x.a", "x.a = y.b + 1",
		"y.k = x.k AND y.b < x.a", "y.b <= x.a", "y.c + x.k > 3",
		"y.k = x.k AND y.b <= coalesce(x.a, 2)"}[ci]
	// every correlation but the last leaves no rows where a left column
	// it reads is NULL: the rewrite must take it, over its domain when
	// not by equalities
	must := ci != 7
	if rng.Intn(3) == 0 {
		corr += fmt.Sprintf(" AND y.b > %d", rng.Intn(4))
	}
	dir := []string{"", " DESC", " NULLS FIRST", " DESC NULLS LAST"}[rng.Intn(4)]
	var sub string
	oneRow := false
	switch rng.Intn(11) {
	case 0:
		sub = "SELECT y.b AS v, y.c AS w FROM r y WHERE " + corr
		must = true
	case 7: // a column computed from the row too
		sub = "SELECT y.b + x.a AS v, coalesce(y.c, x.k) AS w FROM r y WHERE " + corr
		must = true
	case 1:
		sub = "SELECT DISTINCT y.b AS v, y.c % 2 AS w FROM r y WHERE " + corr
	case 2:
		sub = "SELECT y.b AS v, count(*) AS w FROM r y WHERE " + corr + " GROUP BY y.b"
		if rng.Intn(2) == 0 {
			sub += " HAVING count(*) > 1"
		}
	case 3:
		// ORDER BY columns, output positions, or an output name that an
		// input column has too (the output's wins, as in PostgreSQL)
		sub = fmt.Sprintf([]string{
			"SELECT y.b AS v, y.c AS w FROM r y WHERE %s ORDER BY y.b%s, y.c LIMIT %d",
			"SELECT y.c AS v, y.b AS w FROM r y WHERE %s ORDER BY 2%s, 1 LIMIT %d",
			"SELECT y.c AS v, y.b AS w, y.c AS b FROM r y WHERE %s ORDER BY b%s, w LIMIT %d",
		}[rng.Intn(3)], corr, dir, 1+rng.Intn(3))
		if rng.Intn(3) == 0 {
			sub += fmt.Sprintf(" OFFSET %d", rng.Intn(3))
		}
	case 4:
		sub = "SELECT count(*) AS v, sum(y.b) AS w FROM r y WHERE " + corr
		oneRow = true
	case 5:
		sub = "SELECT max(y.c) AS v, coalesce(sum(y.b), 0) + count(y.c) AS w FROM r y WHERE " + corr
		oneRow = true
	case 8, 9: // groups, or an aggregate's one row, computed from the row too
		sub = "SELECT y.b AS v, count(*) + x.a - x.k AS w FROM r y WHERE " + corr + " GROUP BY y.b"
		if oneRow = rng.Intn(2) == 0; oneRow {
			sub = "SELECT count(*) + x.a AS v, max(y.c) - x.k AS w FROM r y WHERE " + corr
		}
	case 10: // an aggregate of the row's column: over the domain, which needs it compared
		sub = "SELECT y.c AS v, sum(y.b + x.a) AS w FROM r y WHERE " + corr + " GROUP BY y.c"
		if oneRow = rng.Intn(2) == 0; oneRow {
			sub = "SELECT count(*) AS v, sum(y.b + x.a) AS w FROM r y WHERE " + corr
		}
		must = ci >= 1 && ci <= 5
	default:
		sub = fmt.Sprintf("SELECT y.b AS v, count(*) AS w FROM r y WHERE %s GROUP BY y.b ORDER BY count(*) DESC, y.b%s LIMIT 2", corr, dir)
	}
	left := []string{"l x", "(SELECT DISTINCT k, a FROM l) x"}[rng.Intn(2)]
	join := []string{", LATERAL (%s) t", " CROSS JOIN LATERAL (%s) t", " LEFT JOIN LATERAL (%s) t ON true",
		" JOIN LATERAL (%s) t ON t.v > 1", " LEFT JOIN LATERAL (%s) t ON t.w IS NOT NULL"}
	j := join[rng.Intn(len(join))]
	if oneRow && strings.Contains(j, "ON t.") && rng.Intn(2) == 0 {
		j = join[rng.Intn(3)] // sometimes ON a condition: run per row (the rewrite takes none)
	}
	if oneRow && strings.Contains(j, "ON t.") {
		must = false
	}
	from := left + fmt.Sprintf(j, sub)
	if rng.Intn(6) == 0 { // a second LATERAL subquery, reading the first
		from += fmt.Sprintf(", LATERAL (SELECT count(*) AS n2, max(z.b) - t.w AS m2 FROM r z WHERE z.k = t.%s) u", []string{"v", "w"}[rng.Intn(2)])
	}
	switch rng.Intn(4) {
	case 0:
		return "SELECT * FROM " + from, must
	case 1:
		return "SELECT t.v, count(*), sum(x.k) FROM " + from + " GROUP BY t.v", must
	case 2:
		return "SELECT x.k, v, t.w FROM " + from + " WHERE t.w IS DISTINCT FROM 2", must
	}
	return "SELECT x.a, t.* FROM " + from, must
}

// runLateral plans q with plan and runs it over db's rows: the rows as
// text, sorted.
func runLateral(db *testDB, q string, plan func(planner.Catalog, *sql.Query, []types.Type) (*planner.Query, error)) ([]string, error) {
	stmts, err := sql.Parse(q)
	if err != nil {
		return nil, err
	}
	p, err := plan(db.cat, stmts[0].Stmt.(*sql.Query), nil)
	if err != nil {
		return nil, err
	}
	var out []string
	err = engine.RunBounded(context.Background(), p.Root, db, nil, func(_ *operators.Batch, _ int, err error) error { return err },
		func(b *operators.Batch) error {
			for _, row := range b.Rows {
				cells := make([]string, len(p.Columns))
				for i := range p.Columns {
					cells[i] = row[i].String()
				}
				out = append(out, strings.Join(cells, " | "))
			}
			return nil
		})
	slices.Sort(out)
	return out, err
}

// lateralRewritten says whether q's plan (PlanQuery's) ran its LATERAL
// subquery as a join: it has no plan.Apply left.
func lateralRewritten(db *testDB, q string) (bool, error) {
	stmts, err := sql.Parse(q)
	if err != nil {
		return false, err
	}
	p, err := planner.PlanQuery(db.cat, stmts[0].Stmt.(*sql.Query), nil)
	if err != nil {
		return false, err
	}
	return !hasApply(p.Root), nil
}

func hasApply(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Apply:
		return true
	case *plan.Chain:
		for _, sq := range n.Subqueries {
			if hasApply(sq.Plan) {
				return true
			}
		}
		return hasApply(n.Input)
	case *plan.Join:
		return hasApply(n.Left) || hasApply(n.Right)
	case *plan.UnionAll:
		return slices.ContainsFunc(n.Inputs, hasApply)
	case *plan.SetOp:
		return hasApply(n.Left) || hasApply(n.Right)
	}
	return false
}

// TestOuterReferenceInAggregates checks that a correlated subquery that
// aggregates may read the enclosing row outside its aggregates, one
// value for every group, as PostgreSQL allows (it was 42P01).
func TestOuterReferenceInAggregates(t *testing.T) {
	db := newTestDB(t)
	for _, c := range []struct{ sql, want string }{
		{`SELECT sym, (SELECT count(*) + t.qty FROM trades u WHERE u.sym = t.sym) FROM trades t ORDER BY sym`,
			"ACME | 101\nINIT | 6\nZED | 8"},
		{`SELECT t.sym, x.n FROM trades t, LATERAL (SELECT max(u.qty) * 2 - t.qty AS n FROM trades u WHERE u.qty >= t.qty) x ORDER BY 1`,
			"ACME | 100\nINIT | 195\nZED | 193"},
		{`SELECT t.sym, x.k, x.n FROM trades t, LATERAL (SELECT u.sym = t.sym AS k, count(*) + t.qty AS n FROM trades u GROUP BY u.sym HAVING u.sym >= t.sym) x ORDER BY 1, 2`,
			"ACME | f | 101\nACME | f | 101\nACME | t | 101\nINIT | f | 6\nINIT | t | 6\nZED | t | 8"},
	} {
		got, err := db.query(t, c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.sql, got, c.want)
		}
	}
}
