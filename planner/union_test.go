package planner_test

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
)

// fromDV is a view query's reading of the stream dv, for
// TestUnionViewDifferential to put a union there.
var fromDV = regexp.MustCompile(` FROM dv\b`)

// TestUnionViewDifferential: random materialized views over a UNION ALL
// of two streams (and of one stream with itself), as TestViewDifferential
// makes them over one stream (aggregations, DISTINCT, top-N, ORDER BY …
// LIMIT), with the union as their FROM subquery; and views that are a
// union themselves: UNION ALL, UNION (its duplicates removed), ORDER BY …
// LIMIT over either. They run in memory as the server plans them (the
// union a hidden stream of the pipeline), both streams' rows arriving in
// random batches over their partitions, state checkpointed and at random
// rebuilt; after each of three rounds the view must equal its SELECT run
// bounded over both streams' rows.
//
//	go test ./planner -run TestUnionViewDifferential -view-seed 19 -view-cases 3000
func TestUnionViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vu", 5_000_011, *viewCases/2, genUnionView)
}

// TestSetOpViewDifferential: views that are an INTERSECT or an EXCEPT
// of selects over dv and du (either side possibly a UNION of two), over
// few distinct values so that both sides share rows, NULLs among them.
func TestSetOpViewDifferential(t *testing.T) {
	twoStreamDifferential(t, "vs", 7_000_003, *viewCases/2, genSetOpView)
}

func genSetOpView(rng *rand.Rand) string {
	cols := pick(rng, "k", "k, v % 3 AS m", "v, w", "w > 0 AS p, k", "k, v")
	side := func() string {
		q := "SELECT " + cols + " FROM " + pick(rng, "dv", "du")
		if rng.Intn(2) == 0 {
			q += " WHERE " + pick(rng, "v > 2", "w <> 0", "k IS NOT NULL", "v IS NULL OR w > 0", "k <> 'b'")
		}
		if rng.Intn(4) == 0 {
			q = "(" + q + " " + pick(rng, "UNION", "UNION ALL") + " SELECT " + cols + " FROM " + pick(rng, "dv", "du") + ")"
		}
		return q
	}
	q := side() + " " + pick(rng, "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL") + " " + side()
	if rng.Intn(3) == 0 {
		q += pick(rng, " ORDER BY 1 LIMIT 2", " ORDER BY 1 DESC NULLS LAST LIMIT 3")
		if strings.Contains(cols, ",") {
			q = strings.Replace(q, "ORDER BY 1", "ORDER BY 1, 2", 1)
		}
	}
	return q
}

// twoStreamDifferential runs cases random views over the streams dv
// (three partitions) and du (two, the same columns), made by gen from a
// seeded rng: each planned as the server plans it and run in memory,
// both streams' rows arriving in random batches over their partitions
// (which stream first, at random), state checkpointed and at random
// rebuilt; after each of three rounds the view must equal its SELECT run
// bounded over both streams' rows. A failure prints the case, its seed
// (view-seed × mult + case), the query and the rows.
func twoStreamDifferential(t *testing.T, name string, mult int64, cases int, gen func(*rand.Rand) string) {
	twoStreamDifferentialDB(t, name, mult, cases, func(rng *rand.Rand, _ *testDB) string { return gen(rng) })
}

// twoStreamDifferentialDB is twoStreamDifferential for a generator that
// plans parts of its query (to learn their columns) in the test's catalog.
func twoStreamDifferentialDB(t *testing.T, name string, mult int64, cases int, gen func(*rand.Rand, *testDB) string) {
	if testing.Short() {
		cases /= 10
	}
	db := newTestDB(t)
	dv := dvStream(t, db)
	du := &catalog.Relation{Name: "du", Kind: catalog.Stream, Topic: "du", Format: "json", Partitions: 2, Columns: dv.Columns}
	b, err := catalog.Encode(du)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.cat.Apply(201, du.Name, b); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < cases; n++ {
		seed := *viewSeed*mult + int64(n)
		rng := rand.New(rand.NewSource(seed))
		q := gen(rng, db)
		text := "CREATE MATERIALIZED VIEW " + name + " AS " + q
		c, err := db.plan(text)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, text, err)
		}
		p := newMemPipeline(c, dv)
		db.rows["dv"], db.rows["du"] = nil, nil
		inV := &dvInput{offsets: make([]int64, dv.Partitions)}
		inU := &dvInput{offsets: make([]int64, du.Partitions)}
		for round := 0; round < 3; round++ {
			rv := inV.round(rng)
			inU.id = inV.id // ids stay distinct over both streams
			ru := inU.round(rng)
			inV.id = inU.id
			db.rows["dv"] = append(db.rows["dv"], rv...)
			db.rows["du"] = append(db.rows["du"], ru...)
			first, second := func() error { return p.feedStream(rng, dv, rv, nil) }, func() error { return p.feedStream(rng, du, ru, nil) }
			if rng.Intn(2) == 0 {
				first, second = second, first
			}
			if err := first(); err != nil {
				t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, text, round, err)
			}
			if err := second(); err != nil {
				t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, text, round, err)
			}
			if err := p.checkpoint(rng); err != nil {
				t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
			}
			want, err := db.query(t, q)
			if err != nil {
				t.Fatalf("case %d (seed %d): bounded %s: %v", n, seed, q, err)
			}
			if got := p.contents(); sortedLines(got) != sortedLines(want) {
				t.Fatalf("case %d (seed %d), round %d:\n%s\nview:\n%s\nbounded SELECT:\n%s\nrows of dv (k, id, v, w):\n%s\nrows of du:\n%s",
					n, seed, round, text, got, sortedLines(want), rowLines(db.rows["dv"]), rowLines(db.rows["du"]))
			}
		}
	}
}

// genUnionView makes a view's query over a union of dv and du.
func genUnionView(rng *rand.Rand) string {
	branch := func(from string) string {
		cols := "k, id, v, w"
		if from == "du" && rng.Intn(3) == 0 {
			cols = "k, id, w AS v, v AS w" // a branch's columns need not be its input's
		}
		where := ""
		if rng.Intn(2) == 0 {
			where = " WHERE " + pick(rng, "v > 2", "w <> 0", "k IS NOT NULL", "v IS NULL OR w > 0", "k <> 'b'")
		}
		return "SELECT " + cols + " FROM " + from + where
	}
	union := func(op string) string {
		q := branch("dv") + " " + op + " " + branch("du")
		if rng.Intn(4) == 0 {
			q += " " + op + " " + branch("dv") // dv's rows twice
		}
		return q
	}
	if rng.Intn(3) == 0 {
		// the view is the union
		q := union(pick(rng, "UNION ALL", "UNION"))
		if rng.Intn(3) == 0 {
			q += pick(rng, " ORDER BY v DESC, id, w LIMIT 3", " ORDER BY id LIMIT 5", " ORDER BY 1 NULLS FIRST, 2 LIMIT 4")
		}
		return q
	}
	for {
		q := genView(rng)
		if strings.Contains(q, "_offset") || strings.Contains(q, "_partition") {
			continue // the union's rows have no offsets or partitions of their input's
		}
		return fromDV.ReplaceAllString(q, " FROM ("+union("UNION ALL")+") dv")
	}
}
