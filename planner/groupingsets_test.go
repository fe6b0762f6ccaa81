package planner_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

// gsElem is one grouping element the generator draws: its expressions
// (several for (a, b)) and their types, for the NULLs of the spelled-out
// union.
type gsElem struct{ exprs, types []string }

var gsPool = []gsElem{
	{[]string{"k"}, []string{"text"}},
	{[]string{"v % 3"}, []string{"int8"}},
	{[]string{"w > 0"}, []string{"bool"}},
	{[]string{"k", "v % 3"}, []string{"text", "int8"}},
}

// gsQuery is a random grouping-sets query and the UNION ALL of plain
// groupings it means, spelled out by the test (its own expansion of
// ROLLUP, CUBE and GROUPING SETS).
type gsQuery struct{ query, spelled string }

func genGroupingSets(rng *rand.Rand) gsQuery {
	pickElems := func(n int) []gsElem {
		var es []gsElem
		for _, i := range rng.Perm(len(gsPool))[:n] {
			es = append(es, gsPool[i])
		}
		return es
	}
	var prefix []gsElem // plain GROUP BY items before the construct
	if rng.Intn(3) == 0 {
		prefix = []gsElem{{[]string{"id % 2"}, []string{"int8"}}}
	}
	var construct string
	var sets [][]gsElem
	switch rng.Intn(3) {
	case 0:
		es := pickElems(1 + rng.Intn(3))
		construct = "ROLLUP (" + elemItems(es) + ")"
		for n := len(es); n >= 0; n-- {
			sets = append(sets, es[:n])
		}
	case 1:
		es := pickElems(1 + rng.Intn(2))
		construct = "CUBE (" + elemItems(es) + ")"
		for mask := 0; mask < 1<<len(es); mask++ {
			var s []gsElem
			for i, e := range es {
				if mask&(1<<i) != 0 {
					s = append(s, e)
				}
			}
			sets = append(sets, s)
		}
	default:
		var texts []string
		for i := 1 + rng.Intn(3); i > 0; i-- {
			es := pickElems(rng.Intn(3))
			sets = append(sets, es)
			texts = append(texts, "("+elemList(es)+")")
		}
		construct = "GROUPING SETS (" + strings.Join(texts, ", ") + ")"
	}
	// every expression any set groups by, once
	var all []string
	types := map[string]string{}
	for _, s := range append([][]gsElem{prefix}, sets...) {
		for _, e := range s {
			for i, x := range e.exprs {
				if types[x] == "" {
					all = append(all, x)
					types[x] = e.types[i]
				}
			}
		}
	}
	if len(all) == 0 { // GROUPING SETS ((), …) only: draw again
		return genGroupingSets(rng)
	}
	where := ""
	if rng.Intn(3) == 0 {
		where = " WHERE " + pick(rng, "v > 2", "w <> 0", "k IS NOT NULL")
	}
	having := ""
	if rng.Intn(4) == 0 {
		having = " HAVING count(*) > 1"
	}
	items := func(set []gsElem) string {
		in := map[string]bool{}
		for _, e := range set {
			for _, x := range e.exprs {
				in[x] = true
			}
		}
		var its []string
		mask := 0
		for i, x := range all {
			if set == nil || in[x] {
				its = append(its, fmt.Sprintf("%s AS g%d", x, i))
			} else {
				its = append(its, fmt.Sprintf("CAST(NULL AS %s) AS g%d", types[x], i))
				mask |= 1 << (len(all) - 1 - i)
			}
		}
		gm := fmt.Sprint(mask)
		if set == nil {
			gm = "grouping(" + strings.Join(all, ", ") + ")"
		}
		return strings.Join(its, ", ") + ", " + gm + " AS gm, count(*) AS n, sum(v) AS s, max(id) AS m"
	}
	groupBy := construct
	if len(prefix) > 0 {
		groupBy = elemList(prefix) + ", " + construct
	}
	q := gsQuery{query: "SELECT " + items(nil) + " FROM dv" + where + " GROUP BY " + groupBy + having}
	var branches []string
	for _, s := range sets {
		set := append(append([]gsElem(nil), prefix...), s...)
		b := "SELECT " + items(append(set, gsElem{})) + " FROM dv" + where
		if len(set) > 0 {
			b += " GROUP BY " + elemList(set)
		}
		branches = append(branches, b+having)
	}
	q.spelled = strings.Join(branches, " UNION ALL ")
	if rng.Intn(3) == 0 {
		// ORDER BY … LIMIT, first by a term in the select list or not,
		// then by every output column a row's grouping tells apart
		term := pick(rng, "min(w)", "sum(w) DESC", "count(*) DESC", "max(id)", "sum(v) + count(*)")
		by := strings.TrimSuffix(term, " DESC")
		order := []string{term}
		var cols []string
		for i := range all {
			cols = append(cols, fmt.Sprintf("g%d", i))
		}
		cols = append(cols, "gm")
		order = append(order, cols...)
		n := 1 + rng.Intn(4)
		q.query += fmt.Sprintf(" ORDER BY %s LIMIT %d", strings.Join(order, ", "), n)
		order[0] = strings.Replace(term, by, "_ord", 1)
		q.spelled = fmt.Sprintf("SELECT %s, n, s, m FROM (%s) u ORDER BY %s LIMIT %d", strings.Join(cols, ", "),
			strings.ReplaceAll(q.spelled, " AS m FROM", " AS m, "+by+" AS _ord FROM"), strings.Join(order, ", "), n)
	}
	return q
}

// elemItems lists elements as ROLLUP and CUBE take them: one of several
// expressions in parentheses.
func elemItems(es []gsElem) string {
	var parts []string
	for _, e := range es {
		if len(e.exprs) > 1 {
			parts = append(parts, "("+strings.Join(e.exprs, ", ")+")")
		} else {
			parts = append(parts, e.exprs[0])
		}
	}
	return strings.Join(parts, ", ")
}

// elemList lists elements' expressions, as a plain GROUP BY does.
func elemList(es []gsElem) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, strings.Join(e.exprs, ", "))
	}
	return strings.Join(parts, ", ")
}

// TestGroupingSetsDifferential: random GROUP BY ROLLUP, CUBE and
// GROUPING SETS queries (with a plain GROUP BY item before them, WHERE,
// HAVING, GROUPING(…) of every grouping expression) over dv and du. Run
// bounded, each must equal the UNION ALL of plain groupings the test
// spells out on its own; as a materialized view, after each of three
// rounds, its SELECT run bounded.
//
//	go test ./planner -run TestGroupingSetsDifferential -view-seed 19 -view-cases 3000
func TestGroupingSetsDifferential(t *testing.T) {
	twoStreamDifferentialDB(t, "vg", 19_000_039, *viewCases/6, func(rng *rand.Rand, db *testDB) string {
		q := genGroupingSets(rng)
		// over a subquery or a join, which the groupings share
		if from := pick(rng, "", "", "(SELECT k, id, v, w FROM dv WHERE w <> 1) dv",
			"dv JOIN (SELECT k AS k2, count(*) AS c FROM du GROUP BY k) x ON x.k2 = dv.k"); from != "" {
			q.query = strings.ReplaceAll(q.query, "FROM dv", "FROM "+from)
			q.spelled = strings.ReplaceAll(q.spelled, "FROM dv", "FROM "+from)
		}
		for _, from := range []string{"dv", "du"} {
			if from == "du" && strings.Contains(q.query, " JOIN ") {
				continue // a join reads both already
			}
			got, err := db.query(t, strings.ReplaceAll(q.query, "FROM dv", "FROM "+from))
			if err != nil {
				t.Fatalf("%s: %v", q.query, err)
			}
			want, err := db.query(t, strings.ReplaceAll(q.spelled, "FROM dv", "FROM "+from))
			if err != nil {
				t.Fatalf("%s: %v", q.spelled, err)
			}
			if sortedLines(got) != sortedLines(want) {
				t.Fatalf("over %s:\n%s\ngot:\n%s\nspelled out:\n%s\nwant:\n%s", from, q.query, sortedLines(got), q.spelled, sortedLines(want))
			}
		}
		return q.query
	})
}

// TestGroupingSetsRefusals: what the rewrites refuse, with its SQLSTATE,
// rather than recurse forever, panic at run time or answer wrong.
func TestGroupingSetsRefusals(t *testing.T) {
	db := newTestDB(t)
	dvStream(t, db)
	for _, c := range []struct{ q, code string }{
		// GROUPING inside an aggregate (it once recursed without end)
		{"SELECT k, sum(grouping(k)) FROM dv GROUP BY k", "42803"},
		{"SELECT k, count(*) FILTER (WHERE grouping(k) = 0) FROM dv GROUP BY ROLLUP (k)", "42803"},
		{"SELECT k, grouping(v) FROM dv GROUP BY ROLLUP (k)", "42803"},
		{"SELECT DISTINCT ON (k) k, count(*) FROM dv GROUP BY ROLLUP (k, v)", "0A000"},
		{"SELECT k, rank() OVER (ORDER BY count(*)) FROM dv GROUP BY CUBE (k)", "0A000"},
		{"SELECT count(*) FROM dv GROUP BY CUBE (k, v, w, id, k || 'x', v + 1, w + 1)", "54000"},
	} {
		_, err := db.query(t, c.q)
		if pgerror.CodeOf(err).String() != c.code {
			t.Errorf("%s: %v, want %s", c.q, err, c.code)
		}
		_, err = db.plan("CREATE MATERIALIZED VIEW vr AS " + c.q)
		if pgerror.CodeOf(err).String() != c.code {
			t.Errorf("view %s: %v, want %s", c.q, err, c.code)
		}
	}
	for _, c := range []struct{ q, code string }{
		// a scalar function in FROM beside LATERAL functions of a view's
		// rows replaced the read's columns (it once panicked at run time)
		{"SELECT b.k, g, u FROM (SELECT k, count(*) AS c FROM dv GROUP BY k) b, LATERAL generate_series(1, b.c) g, LATERAL upper(b.k) u", "0A000"},
		// NOT IN whose x is a column of a subquery in FROM (it once
		// resolved to the subquery's own table)
		{"SELECT id, v FROM (SELECT id, k, v FROM dv) d WHERE v NOT IN (SELECT w FROM dv x WHERE x.k = d.k)", "0A000"},
	} {
		if _, err := db.plan("CREATE MATERIALIZED VIEW vr AS " + c.q); pgerror.CodeOf(err).String() != c.code {
			t.Errorf("view %s: %v, want %s", c.q, err, c.code)
		}
	}
}
