package planner_test

import (
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/types"
)

var recursiveCases = flag.Int("recursive-cases", 600, "cases of TestRecursiveDifferential")

// TestRecursiveDifferential: WITH RECURSIVE over random graphs (dv's rows
// are the edges v%n → (v+w+3)%n), against the same answers computed here:
// the nodes each node reaches (UNION: a graph's cycles end it), and the
// walks of each length up to a bound (UNION ALL: each walk is a row). A
// failure prints the case's seed, the query and the edges.
//
//	go test ./planner -run TestRecursiveDifferential -recursive-cases 600
func TestRecursiveDifferential(t *testing.T) {
	cases := *recursiveCases
	if testing.Short() {
		cases /= 10
	}
	db := newTestDB(t)
	dvStream(t, db)
	for c := 0; c < cases; c++ {
		seed := int64(41_000_017 + c)
		rng := rand.New(rand.NewSource(seed))
		nodes := 2 + rng.Intn(8)
		var rows []types.Row
		for i := rng.Intn(20); i >= 0; i-- {
			rows = append(rows, genViewRow(rng, int64(i)))
		}
		db.rows["dv"] = rows
		edges := map[int64][]int64{}
		for _, r := range rows {
			if !r[2].IsNull() {
				from := r[2].I % int64(nodes)
				edges[from] = append(edges[from], (r[2].I+r[3].I+3)%int64(nodes)) // w ≥ -3
			}
		}
		edge := fmt.Sprintf("(d.v + d.w + 3) %% %d", nodes)
		var q string
		var want []string
		if rng.Intn(2) == 0 {
			q = fmt.Sprintf("WITH RECURSIVE r(s, n) AS (SELECT v %% %d, %s FROM dv d WHERE v IS NOT NULL UNION SELECT r.s, %s FROM r JOIN dv d ON d.v %% %d = r.n) SELECT s, count(*) FROM r GROUP BY s",
				nodes, edge, edge, nodes)
			for s := range edges {
				seen := map[int64]bool{}
				next := append([]int64(nil), edges[s]...)
				for len(next) > 0 {
					n := next[0]
					next = next[1:]
					if !seen[n] {
						seen[n] = true
						next = append(next, edges[n]...)
					}
				}
				want = append(want, fmt.Sprintf("%d | %d", s, len(seen)))
			}
		} else {
			depth := 1 + rng.Intn(4)
			q = fmt.Sprintf("WITH RECURSIVE w(n, d) AS (SELECT v %% %d, 0 FROM dv WHERE v IS NOT NULL UNION ALL SELECT %s, w.d + 1 FROM w JOIN dv d ON d.v %% %d = w.n WHERE w.d < %d) SELECT d, count(*) FROM w GROUP BY d",
				nodes, edge, nodes, depth)
			walks := map[int64]int64{} // walks ending at each node, of the length reached
			for _, r := range rows {
				if !r[2].IsNull() {
					walks[r[2].I%int64(nodes)]++
				}
			}
			for d := 0; d <= depth; d++ {
				total := int64(0)
				next := map[int64]int64{}
				for n, c := range walks {
					total += c
					for _, m := range edges[n] {
						next[m] += c
					}
				}
				if total == 0 {
					break
				}
				want = append(want, fmt.Sprintf("%d | %d", d, total))
				walks = next
			}
		}
		sort.Strings(want)
		got, err := db.query(t, q)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s: %v", c, seed, q, err)
		}
		if sortedLines(got) != sortedLines(strings.Join(want, "\n")) {
			t.Fatalf("case %d (seed %d): %s\ngot:\n%s\nwant:\n%s\nedges: %v\nrows (k, id, v, w):\n%s", c, seed, q, sortedLines(got), strings.Join(want, "\n"), edges, rowLines(rows))
		}
	}
}
