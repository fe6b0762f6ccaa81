package planner_test

import (
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/types"
)

var fromWhereSeed = flag.Int64("fromwhere-seed", 23, "seed of TestFromWhereDifferential")
var fromWhereCases = flag.Int("fromwhere-cases", 1500, "cases of TestFromWhereDifferential")

// A comma FROM list with WHERE is planned as joins with the conditions
// pushed down and the items reordered (fromwhere.go); the same query
// with WHERE (…) IS TRUE, one condition that is no equality, keeps the
// plain cross product in FROM order, filtered. Both must give the same rows, in FROM order, for
// random data, FROM orders and conjunctions.
func TestFromWhereDifferential(t *testing.T) {
	rng := rand.New(rand.NewSource(*fromWhereSeed))
	conds := []string{
		"a.k = b.k", "b.k = c.k", "a.k = c.k", "a.v = c.v", "b.id = a.v", "a.v > 1", "c.v IS NULL",
		"b.v <> a.v", "a.id = c.id + 1", "true", "(a.v = 1 OR b.v = 2)", "c.k = 'x'",
		"coalesce(a.v, 0) = coalesce(b.v, 0)", "a.k = b.k AND b.v = c.v", "b.k IS NOT NULL",
		"a.id IN (SELECT id FROM c WHERE v > 0)", "a.id <= b.id",
	}
	keys := []string{"x", "y", ""}
	val := func() any {
		if rng.Intn(4) == 0 {
			return nil
		}
		return rng.Intn(4)
	}
	db := newTestDB(t)
	for _, name := range []string{"a", "b", "c"} {
		addStream(t, db, name, nil)
	}
	for n := 0; n < *fromWhereCases; n++ {
		for _, name := range []string{"a", "b", "c"} {
			var rows []types.Row
			for i := rng.Intn(5); i > 0; i-- {
				rows = append(rows, wrow(keys[rng.Intn(len(keys))], int64(rng.Intn(4)), val()))
			}
			db.rows[name] = rows
		}
		items := []string{"a", "b", "c"}
		rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		var where []string
		for i := 1 + rng.Intn(4); i > 0; i-- {
			where = append(where, conds[rng.Intn(len(conds))])
		}
		w := strings.Join(where, " AND ")
		cols := "a.k, a.id, a.v, b.k, b.id, b.v, c.k, c.id, c.v"
		order := " ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
		q := "SELECT " + cols + " FROM " + strings.Join(items, ", ") + " WHERE " + w + order
		// the oracle's one conjunct reads every item it names and is no
		// equality: plain cross joins in FROM order, filtered
		oracle := "SELECT " + cols + " FROM " + strings.Join(items, ", ") + " WHERE (" + w + ") IS TRUE" + order
		star := "SELECT * FROM " + strings.Join(items, ", ") + " WHERE " + w
		starOracle := "SELECT * FROM " + strings.Join(items, ", ") + " WHERE (" + w + ") IS TRUE"
		got, err := db.query(t, q)
		want, werr := db.query(t, oracle)
		if (err == nil) != (werr == nil) || got != want {
			t.Fatalf("case %d (seed %d):\n%s\n got %q, %v\n%s\nwant %q, %v\ndata: %v", n, *fromWhereSeed, q, got, err, oracle, want, werr, db.rows)
		}
		// SELECT * keeps the FROM order of columns (compared as sorted lines)
		g, err := db.query(t, star)
		o, werr := db.query(t, starOracle)
		if (err == nil) != (werr == nil) || sortedLines(g) != sortedLines(o) {
			t.Fatalf("case %d (seed %d):\n%s\n got %q, %v\nwant %q, %v", n, *fromWhereSeed, star, g, err, o, werr)
		}
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		for j := i + 1; j < len(lines); j++ {
			if lines[j] < lines[i] {
				lines[i], lines[j] = lines[j], lines[i]
			}
		}
	}
	return fmt.Sprint(lines)
}
