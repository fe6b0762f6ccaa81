package pipelines

import (
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The seed and view count of TestViewCompositionDifferential.
var viewDiffSeed, viewDiffCases = flag.Int64("view-diff-seed", 19, "seed of TestViewCompositionDifferential"),
	flag.Int("view-diff-cases", 24, "views of TestViewCompositionDifferential")

// TestViewCompositionDifferential: seeded random materialized views that
// compose (issue 19's correctness check, run by the engine on a broker
// rather than in memory as the planner's differential tests do): regular
// joins inner, left and three-way; aggregates with HAVING, DISTINCT and
// FILTER, over joins too; ROLLUP; top-N with and without its number;
// ORDER BY … LIMIT; DISTINCT; EXISTS, NOT EXISTS, IN and NOT IN;
// correlated scalar subqueries; window functions over partitions; UNION
// ALL; TUMBLE, HOP and SESSION. Each reads the three streams or views
// made before it, so that aggregates run over joins, joins over
// aggregates and views over views over views, and the changes of one
// view (updates, retractions) flow into the next through Kafka. Every
// view is created before any input; after each of three rounds of input
// and a FLUSH, each view must equal its query run bounded over the same
// streams, with every view it reads written out as a subquery (so a
// wrong view below cannot hide behind a view above reading it). A
// planner refusal fails the test: these are all queries a bounded SELECT
// answers. A failure prints the view, its query, the rows only on either
// side, and the seed; -view-diff-seed reproduces it, -view-diff-cases
// sets the count.
func TestViewCompositionDifferential(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		rng := rand.New(rand.NewSource(*viewDiffSeed))
		g := newViewGen(rng)
		for _, s := range g.streams {
			cols := strings.Join(s.cols, " BIGINT, ") + " BIGINT"
			for _, x := range s.extra {
				cols += ", " + x + " TIMESTAMP"
			}
			exec(t, conn, fmt.Sprintf("CREATE STREAM %s (%s) WITH (partitions = %d)", s.name, cols, s.partitions))
		}
		for i := 0; i < *viewDiffCases; i++ {
			v := g.view(fmt.Sprintf("vd%d", i))
			exec(t, conn, "CREATE MATERIALIZED VIEW "+v.name+" AS "+v.render(false))
			t.Logf("%s: %s", v.name, v.render(false))
		}
		for round := 0; round < 3; round++ {
			for _, s := range g.streams {
				exec(t, conn, "INSERT INTO "+s.name+" VALUES "+g.rows(s, round))
			}
			flush(t, srv, conn)
			failed := 0
			for _, v := range g.views {
				if !checkComposedView(t, conn, v, round) {
					failed++
				}
			}
			if failed > 0 {
				t.Fatalf("%d of %d views differ from their bounded SELECTs after round %d (seed %d)", failed, len(g.views), round, *viewDiffSeed)
			}
		}
		t.Logf("%d composed views equal their bounded SELECTs after each of 3 rounds (seed %d)", len(g.views), *viewDiffSeed)
	})
}

// checkComposedView compares a view's rows with its query's, run bounded
// with the views it reads inlined.
func checkComposedView(t *testing.T, conn *pgx.Conn, v *genRel, round int) bool {
	t.Helper()
	got := textRows(t, conn, "SELECT * FROM "+v.name)
	want := textRows(t, conn, v.render(true))
	onlyGot, onlyWant := diffSorted(got, want)
	if len(onlyGot) == 0 && len(onlyWant) == 0 {
		return true
	}
	st, _, _ := stats(conn, v.name)
	t.Errorf("round %d: %s AS %s\n%d rows, bounded %d; only in the view (%d): %s\nonly bounded (%d): %s\nbounded query: %s\npipeline: %s",
		round, v.name, v.render(false), len(got), len(want),
		len(onlyGot), strings.Join(onlyGot[:min(10, len(onlyGot))], "; "),
		len(onlyWant), strings.Join(onlyWant[:min(10, len(onlyWant))], "; "), v.render(true), st)
	return false
}

// genRel is a stream or a generated view: its integer columns, and
// for a view its query as parts, each either text or a relation it reads.
type genRel struct {
	name  string
	cols  []string
	extra []string // the timestamp columns after cols, which the queries only order by
	// joins counts the joins whose rows reach this relation's rows
	// unbounded: a join of joins of joins over small key domains makes
	// rows by the million, so the joins of a lineage are kept to two
	joins      int
	partitions int       // a stream's
	parts      []genPart // a view's query
}

// genPart is a piece of a view's query: text, or a relation read in FROM.
type genPart struct {
	text string
	rel  *genRel
}

// render writes the query: with inline, every view read is its own query
// as a subquery, down to the streams.
func (r *genRel) render(inline bool) string {
	var b strings.Builder
	for _, p := range r.parts {
		switch {
		case p.rel == nil:
			b.WriteString(p.text)
		case inline && p.rel.parts != nil:
			b.WriteString("(" + p.rel.render(true) + ")")
		default:
			b.WriteString(p.rel.name)
		}
	}
	return b.String()
}

// viewGen draws views over three streams (orders, customers, order
// lines; small key domains, so that joins match and groups hold several
// rows) and the views drawn before.
type viewGen struct {
	rng     *rand.Rand
	streams []*genRel
	views   []*genRel
	nextID  int64
}

func newViewGen(rng *rand.Rand) *viewGen {
	return &viewGen{rng: rng, streams: []*genRel{
		{name: "vdo", cols: []string{"id", "cust", "amt", "st"}, extra: []string{"ts"}, partitions: 3},
		{name: "vdc", cols: []string{"id", "region", "tier"}, partitions: 2},
		{name: "vdl", cols: []string{"oid", "prod", "qty"}, partitions: 2},
	}}
}

// rows is a round's VALUES for stream s: ids go on across rounds, the
// other columns are small and sometimes NULL.
func (g *viewGen) rows(s *genRel, round int) string {
	small := func(n int) string {
		if g.rng.Intn(12) == 0 {
			return "NULL"
		}
		return fmt.Sprint(g.rng.Intn(n))
	}
	var rows []string
	switch s.name {
	case "vdo":
		for i := 0; i < 40; i++ {
			g.nextID++
			// times out of order over ten minutes, which the rounds share
			ts := fmt.Sprintf("'2026-01-01 00:%02d:%02d'", g.rng.Intn(10), g.rng.Intn(60))
			rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s, %s)", g.nextID, small(8), small(50), small(3), ts))
		}
	case "vdc":
		for i := 0; i < 4; i++ { // a customer may come again: the stream holds both rows
			rows = append(rows, fmt.Sprintf("(%d, %s, %s)", 2*round+g.rng.Intn(6), small(3), small(4)))
		}
	case "vdl":
		for i := 0; i < 60; i++ {
			rows = append(rows, fmt.Sprintf("(%d, %s, %s)", 1+g.rng.Int63n(max(g.nextID, 1)), small(5), small(9)))
		}
	}
	return strings.Join(rows, ", ")
}

// input picks a relation to read: a stream, or more often a view already
// drawn.
func (g *viewGen) input() *genRel {
	if len(g.views) > 0 && g.rng.Intn(3) > 0 {
		return g.views[g.rng.Intn(len(g.views))]
	}
	return g.streams[g.rng.Intn(len(g.streams))]
}

// joinInputs picks n relations to join whose lineages hold at most
// maxJoins joins with the n-1 this one adds; a stream when no view fits.
func (g *viewGen) joinInputs(n int) []*genRel {
	const maxJoins = 2
	out := make([]*genRel, n)
	for {
		total := n - 1
		for i := range out {
			out[i] = g.input()
			total += out[i].joins
		}
		if total <= maxJoins {
			return out
		}
		for i := range out {
			if out[i].joins > 0 {
				out[i] = g.streams[g.rng.Intn(len(g.streams))]
			}
		}
		if n-1 <= maxJoins {
			return out
		}
	}
}

func (g *viewGen) col(r *genRel) string { return r.cols[g.rng.Intn(len(r.cols))] }

// view draws one view named name and keeps it for the next to read.
func (g *viewGen) view(name string) *genRel {
	v := &genRel{name: name}
	q := &queryBuilder{}
	shapes := []func(*queryBuilder, *genRel){
		g.filter, g.join, g.join, g.aggregate, g.aggregate, g.topN, g.orderLimit,
		g.semi, g.union, g.distinct, g.aggregateJoin, g.threeWay, g.window,
		g.overWindow, g.scalarSub, g.rollup, g.lateral,
	}
	shapes[g.rng.Intn(len(shapes))](q, v)
	v.parts = q.parts
	g.views = append(g.views, v)
	return v
}

// queryBuilder collects a view's query parts.
type queryBuilder struct{ parts []genPart }

func (q *queryBuilder) text(format string, args ...any) {
	q.parts = append(q.parts, genPart{text: fmt.Sprintf(format, args...)})
}

func (q *queryBuilder) from(r *genRel) { q.parts = append(q.parts, genPart{rel: r}) }

// where is an optional condition on x's column.
func (g *viewGen) where(x string, r *genRel) string {
	switch g.rng.Intn(3) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" WHERE %s.%s > %d", x, g.col(r), g.rng.Intn(5))
	default:
		return fmt.Sprintf(" WHERE %s.%s IS NOT NULL", x, g.col(r))
	}
}

// filter: some columns of a relation, one computed, some rows.
func (g *viewGen) filter(q *queryBuilder, v *genRel) {
	r := g.input()
	a, b := g.col(r), g.col(r)
	v.cols, v.joins = []string{"c0", "c1", "c2"}, r.joins
	q.text("SELECT x.%s AS c0, x.%s AS c1, x.%s + x.%s AS c2 FROM ", a, b, a, b)
	q.from(r)
	q.text(" x%s", g.where("x", r))
}

// join: two relations on one column each, inner or left.
func (g *viewGen) join(q *queryBuilder, v *genRel) {
	in := g.joinInputs(2)
	l, r := in[0], in[1]
	v.joins = l.joins + r.joins + 1
	kind := []string{"JOIN", "LEFT JOIN"}[g.rng.Intn(2)]
	v.cols = []string{"c0", "c1", "c2", "c3"}
	q.text("SELECT x.%s AS c0, x.%s AS c1, y.%s AS c2, y.%s AS c3 FROM ", g.col(l), g.col(l), g.col(r), g.col(r))
	q.from(l)
	q.text(" x %s ", kind)
	q.from(r)
	q.text(" y ON x.%s = y.%s", g.col(l), g.col(r))
	if w := g.where("x", l); w != "" && g.rng.Intn(2) == 0 {
		q.text("%s", w)
	}
}

// aggregate: a grouping (a column or an expression of one) with some of
// count, sum, min, max, count(DISTINCT), a FILTER, and perhaps HAVING.
func (g *viewGen) aggregate(q *queryBuilder, v *genRel) {
	r := g.input()
	key := "x." + g.col(r)
	if g.rng.Intn(3) == 0 {
		key = fmt.Sprintf("x.%s %% 3", g.col(r))
	}
	val := g.col(r)
	aggs := []string{"count(*)"}
	for _, a := range []string{
		"sum(x.%s)", "min(x.%s)", "max(x.%s)", "count(DISTINCT x.%s)", "count(*) FILTER (WHERE x.%s > 2)", "avg(x.%s)",
	} {
		if g.rng.Intn(2) == 0 {
			aggs = append(aggs, fmt.Sprintf(a, val))
		}
	}
	v.cols = []string{"c0"}
	sel := []string{key + " AS c0"}
	for i, a := range aggs {
		v.cols = append(v.cols, fmt.Sprintf("c%d", i+1))
		sel = append(sel, fmt.Sprintf("%s AS c%d", a, i+1))
	}
	q.text("SELECT %s FROM ", strings.Join(sel, ", "))
	q.from(r)
	q.text(" x%s GROUP BY %s", g.where("x", r), key)
	if g.rng.Intn(3) == 0 {
		q.text(" HAVING count(*) > %d", 1+g.rng.Intn(3))
	}
}

// order is an ORDER BY over every column of r, v's first, so that ties
// cannot make the kept rows depend on the order rows came in.
func order(x string, r *genRel, first string, desc bool) string {
	dir := ""
	if desc {
		dir = " DESC"
	}
	keys := []string{x + "." + first + dir}
	for _, c := range append(r.cols, r.extra...) {
		if c != first {
			keys = append(keys, x+"."+c)
		}
	}
	return strings.Join(keys, ", ")
}

// topN: the first rows of each group by a column, with or without the
// row number.
func (g *viewGen) topN(q *queryBuilder, v *genRel) {
	r := g.input()
	part, by := g.col(r), g.col(r)
	n := 1 + g.rng.Intn(3)
	cols := make([]string, len(r.cols))
	for i, c := range r.cols {
		cols[i] = "t." + c
	}
	v.cols = append([]string{}, r.cols...)
	rn := "rn_" + v.name // a view read may have a row number of its own
	if g.rng.Intn(2) == 0 {
		cols = append(cols, "t."+rn)
		v.cols = append(v.cols, rn)
	}
	q.text("SELECT %s FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.%s ORDER BY %s) AS %s FROM ", strings.Join(cols, ", "), part, order("x", r, by, g.rng.Intn(2) == 0), rn)
	q.from(r)
	q.text(" x) t WHERE t.%s <= %d", rn, n)
}

// orderLimit: ORDER BY … LIMIT over a relation's rows, or over its
// groups' sums.
func (g *viewGen) orderLimit(q *queryBuilder, v *genRel) {
	r := g.input()
	n := 2 + g.rng.Intn(4)
	if g.rng.Intn(2) == 0 {
		v.cols = append([]string{}, r.cols...)
		q.text("SELECT * FROM ")
		q.from(r)
		q.text(" x ORDER BY %s LIMIT %d", order("x", r, g.col(r), g.rng.Intn(2) == 0), n)
		return
	}
	k, s := g.col(r), g.col(r)
	v.cols = []string{"c0", "c1"}
	q.text("SELECT x.%s AS c0, sum(x.%s) AS c1 FROM ", k, s)
	q.from(r)
	q.text(" x GROUP BY x.%s ORDER BY c1 DESC, c0 LIMIT %d", k, n)
}

// semi: a relation's rows with or without a partner in another, by
// EXISTS or IN.
func (g *viewGen) semi(q *queryBuilder, v *genRel) {
	l, r := g.input(), g.input()
	a, b := g.col(l), g.col(r)
	v.cols, v.joins = append([]string{}, l.cols...), l.joins
	q.text("SELECT * FROM ")
	q.from(l)
	not := []string{"", "NOT "}[g.rng.Intn(2)]
	if g.rng.Intn(2) == 0 {
		q.text(" x WHERE %sEXISTS (SELECT 1 FROM ", not)
		q.from(r)
		q.text(" y WHERE y.%s = x.%s)", b, a)
		return
	}
	q.text(" x WHERE x.%s %sIN (SELECT y.%s FROM ", a, not, b)
	q.from(r)
	q.text(" y)")
}

// union: one column and a constant of each of two relations, UNION ALL.
func (g *viewGen) union(q *queryBuilder, v *genRel) {
	l, r := g.input(), g.input()
	v.cols, v.joins = []string{"c0", "c1"}, max(l.joins, r.joins)
	q.text("SELECT x.%s AS c0, 1 AS c1 FROM ", g.col(l))
	q.from(l)
	q.text(" x UNION ALL SELECT y.%s, 2 FROM ", g.col(r))
	q.from(r)
	q.text(" y")
}

// distinct: the distinct values of two columns of some rows.
func (g *viewGen) distinct(q *queryBuilder, v *genRel) {
	r := g.input()
	v.cols = []string{"c0", "c1"}
	q.text("SELECT DISTINCT x.%s AS c0, x.%s AS c1 FROM ", g.col(r), g.col(r))
	q.from(r)
	q.text(" x%s", g.where("x", r))
}

// aggregateJoin: a grouping of a join, in one query.
func (g *viewGen) aggregateJoin(q *queryBuilder, v *genRel) {
	in := g.joinInputs(2)
	l, r := in[0], in[1]
	kind := []string{"JOIN", "LEFT JOIN"}[g.rng.Intn(2)]
	v.cols = []string{"c0", "c1", "c2", "c3"}
	q.text("SELECT x.%s AS c0, count(*) AS c1, sum(y.%s) AS c2, count(y.%s) AS c3 FROM ", g.col(l), g.col(r), g.col(r))
	q.from(l)
	q.text(" x %s ", kind)
	q.from(r)
	q.text(" y ON x.%s = y.%s GROUP BY 1", g.col(l), g.col(r))
	if g.rng.Intn(2) == 0 {
		q.text(" HAVING count(*) > %d", g.rng.Intn(4))
	}
}

// threeWay: three relations joined in a chain, the last perhaps a left
// join.
func (g *viewGen) threeWay(q *queryBuilder, v *genRel) {
	in := g.joinInputs(3)
	a, b, c := in[0], in[1], in[2]
	v.joins = a.joins + b.joins + c.joins + 2
	v.cols = []string{"c0", "c1", "c2"}
	q.text("SELECT x.%s AS c0, y.%s AS c1, z.%s AS c2 FROM ", g.col(a), g.col(b), g.col(c))
	q.from(a)
	q.text(" x JOIN ")
	q.from(b)
	q.text(" y ON x.%s = y.%s %s ", g.col(a), g.col(b), []string{"JOIN", "LEFT JOIN"}[g.rng.Intn(2)])
	q.from(c)
	q.text(" z ON y.%s = z.%s", g.col(b), g.col(c))
}

// window: the orders' sessions or tumbling windows per customer. The
// stream declares no watermark, so no row is ever late: a view's window
// takes every row, whenever it comes, merging sessions it bridges.
func (g *viewGen) window(q *queryBuilder, v *genRel) {
	o := g.streams[0]
	v.cols, v.extra = []string{"c0", "c1", "c2"}, []string{"c3", "c4"}
	fn := []string{"SESSION", "TUMBLE", "HOP"}[g.rng.Intn(3)]
	q.text("SELECT cust AS c0, count(*) AS c1, sum(amt) AS c2, window_start AS c3, window_end AS c4 FROM %s(", fn)
	q.from(o)
	if fn == "HOP" {
		q.text(", ts, INTERVAL '20' SECOND, INTERVAL '60' SECOND) GROUP BY cust, window_start, window_end")
		return
	}
	q.text(", ts, INTERVAL '%d' SECOND) GROUP BY cust, window_start, window_end", []int{20, 45, 60}[g.rng.Intn(3)])
}

// overWindow: window functions over a partition of a relation's rows,
// every row kept.
func (g *viewGen) overWindow(q *queryBuilder, v *genRel) {
	r := g.input()
	p, x := g.col(r), g.col(r)
	v.cols, v.joins = []string{"c0", "c1", "c2", "c3"}, r.joins
	q.text("SELECT x.%s AS c0, x.%s AS c1, sum(x.%s) OVER (PARTITION BY x.%s) AS c2, count(*) OVER (PARTITION BY x.%s) AS c3 FROM ", p, x, x, p, p)
	q.from(r)
	q.text(" x%s", g.where("x", r))
}

// scalarSub: a count from another relation per row, by a correlated
// scalar subquery: by an equality, or a comparison too, plus a column of
// the row (the last two as a LEFT JOIN LATERAL over the subquery's
// domain); or per group, reading the GROUP BY column.
func (g *viewGen) scalarSub(q *queryBuilder, v *genRel) {
	l, r := g.input(), g.input()
	a := g.col(l)
	v.cols, v.joins = []string{"c0", "c1"}, l.joins
	plus, cond := "", ""
	if g.rng.Intn(2) == 0 {
		plus = " * 10 + x." + g.col(l)
	}
	if g.rng.Intn(2) == 0 {
		cond = fmt.Sprintf(" AND y.%s < x.%s", g.col(r), g.col(l))
	}
	grouped := g.rng.Intn(3) == 0 // the subquery reads the groups' column only
	if grouped {
		if plus != "" {
			plus = " * 10 + x." + a
		}
		cond = ""
		if g.rng.Intn(2) == 0 {
			cond = fmt.Sprintf(" AND y.%s < x.%s", g.col(r), a)
		}
	}
	q.text("SELECT x.%s AS c0, (SELECT count(*)%s FROM ", a, plus)
	q.from(r)
	q.text(" y WHERE y.%s = x.%s%s) AS c1 FROM ", g.col(r), a, cond)
	q.from(l)
	q.text(" x")
	if grouped {
		q.text(" GROUP BY x.%s", a)
	}
}

// rollup: counts by two columns, by the first, and in all.
func (g *viewGen) rollup(q *queryBuilder, v *genRel) {
	r := g.input()
	a, b := g.col(r), g.col(r)
	v.cols = []string{"c0", "c1", "c2"}
	q.text("SELECT x.%s AS c0, x.%s AS c1, count(*) AS c2 FROM ", a, b)
	q.from(r)
	q.text(" x GROUP BY ROLLUP (x.%s, x.%s)", a, b)
}

// lateral: a LATERAL subquery per row of a relation, correlated by an
// equality: another relation's first rows by an order, or its count and
// sum (one row per row, over no rows too), or its rows' values, DISTINCT
// or not; the count, the sum and the values under a condition other than
// an equality too, the count plus a column of the row; in a comma list,
// a CROSS JOIN or a LEFT JOIN … ON true.
func (g *viewGen) lateral(q *queryBuilder, v *genRel) {
	in := g.joinInputs(2)
	l, r := in[0], in[1]
	a, k := g.col(l), g.col(r)
	v.joins = l.joins + r.joins + 1
	join := []string{", LATERAL", " CROSS JOIN LATERAL", " LEFT JOIN LATERAL"}[g.rng.Intn(3)]
	on := ""
	if strings.HasPrefix(join, " LEFT") {
		on = " ON true"
	}
	q.text("SELECT x.%s AS c0, t.* FROM ", a)
	q.from(l)
	q.text(" x%s (SELECT ", join)
	switch g.rng.Intn(3) {
	case 0:
		v.cols = []string{"c0", "c1", "c2"}
		q.text("y.%s AS c1, y.%s AS c2 FROM ", g.col(r), g.col(r))
		q.from(r)
		q.text(" y WHERE y.%s = x.%s ORDER BY %s LIMIT %d) t%s", k, a, order("y", r, g.col(r), g.rng.Intn(2) == 0), 1+g.rng.Intn(3), on)
	case 1:
		// over the subquery's domain when it reads the row in its select
		// list or in a condition other than an equality
		v.cols = []string{"c0", "c1", "c2"}
		plus, cond := "", ""
		if g.rng.Intn(2) == 0 {
			plus = " + x." + a
		}
		if g.rng.Intn(2) == 0 {
			cond = fmt.Sprintf(" AND y.%s <= x.%s", g.col(r), g.col(l))
		}
		q.text("count(*)%s AS c1, sum(y.%s) AS c2 FROM ", plus, g.col(r))
		q.from(r)
		q.text(" y WHERE y.%s = x.%s%s) t%s", k, a, cond, on)
	default:
		v.cols = []string{"c0", "c1"}
		item := "y." + g.col(r)
		switch g.rng.Intn(3) {
		case 0:
			item = "DISTINCT " + item
		case 1: // computed from the row too
			item = fmt.Sprintf("coalesce(y.%s, 0) + x.%s", g.col(r), g.col(l))
		}
		q.text("%s AS c1 FROM ", item)
		q.from(r)
		cond := strings.Replace(g.where("y", r), " WHERE ", " AND ", 1)
		// a condition other than an equality: the join's, or under
		// DISTINCT over the subquery's domain
		if g.rng.Intn(2) == 0 {
			cond += fmt.Sprintf(" AND y.%s <= x.%s", g.col(r), g.col(l))
		}
		q.text(" y WHERE y.%s = x.%s%s) t%s", k, a, cond, on)
	}
}
