package planner_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// addStream adds a stream of (k text, id bigint, v bigint) rows to db.
func addStream(t *testing.T, db *testDB, name string, rows []types.Row) {
	t.Helper()
	r := &catalog.Relation{Name: name, Kind: catalog.Stream, Topic: name, Format: "json", Partitions: 1,
		Columns: []catalog.Column{{Name: "k", Type: types.Text}, {Name: "id", Type: types.Int8}, {Name: "v", Type: types.Int8}}}
	b, err := catalog.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.cat.Apply(int64(100+len(db.rows)), r.Name, b); err != nil {
		t.Fatal(err)
	}
	db.rows[name] = rows
}

func wrow(k string, id int64, v any) types.Row {
	kv := types.NewText(k)
	if k == "" {
		kv = types.NullValue
	}
	vv := types.NullValue
	if x, ok := v.(int); ok {
		vv = types.NewInt8(int64(x))
	}
	return types.Row{kv, types.NewInt8(id), vv}
}

func TestWindowQueries(t *testing.T) {
	db := newTestDB(t)
	addStream(t, db, "w", []types.Row{
		wrow("a", 1, 10), wrow("a", 2, 20), wrow("a", 3, 20), wrow("a", 4, nil),
		wrow("b", 5, 5), wrow("b", 6, 7), wrow("", 7, 1),
	})
	for _, c := range []struct{ sql, want string }{
		{`SELECT id, row_number() OVER (ORDER BY id) FROM w ORDER BY id`, "1 | 1\n2 | 2\n3 | 3\n4 | 4\n5 | 5\n6 | 6\n7 | 7"},
		{`SELECT id, rank() OVER (PARTITION BY k ORDER BY v), dense_rank() OVER (PARTITION BY k ORDER BY v DESC), sum(v) OVER (PARTITION BY k ORDER BY v) FROM w ORDER BY id`,
			"1 | 1 | 3 | 10\n2 | 2 | 2 | 50\n3 | 2 | 2 | 50\n4 | 4 | 1 | 50\n5 | 1 | 2 | 5\n6 | 2 | 1 | 12\n7 | 1 | 1 | 1"},
		{`SELECT k, sum(v), rank() OVER (ORDER BY sum(v) DESC) FROM w GROUP BY k ORDER BY 3, 1`, "a | 50 | 1\nb | 12 | 2\nNULL | 1 | 3"},
		{`SELECT id, lag(v) OVER w, lead(v, 2, -1) OVER w FROM w WINDOW w AS (ORDER BY id) ORDER BY id LIMIT 3`, "1 | NULL | 20\n2 | 10 | NULL\n3 | 20 | 5"},
		{`SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM w ORDER BY id`, "1 | 30\n2 | 50\n3 | 40\n4 | 25\n5 | 12\n6 | 13\n7 | 8"},
	} {
		got, err := db.query(t, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.sql, got, c.want)
		}
	}
}

var windowSeed = flag.Int64("window-seed", 17, "seed of TestWindowDifferential")
var windowCases = flag.Int("window-cases", 2500, "cases of TestWindowDifferential")

// wcase is one case of the differential test: rows of (k, id, v) and a
// window query, with what the reference needs to compute it.
type wcase struct {
	fn     string // function name
	fnArgs []int64
	nargs  int    // arguments written (lag/lead: 1 to 3)
	part   string // "", "k", "v"
	order  []wkey
	frame  *wframe
	filter bool // WHERE id % 3 <> 0
	// aggFilter is an aggregate's FILTER (WHERE v > 2) (max(v) over groups)
	aggFilter bool
	grouped   bool // SELECT over GROUP BY id (each row its own group): the window runs over the aggregation
}

type wkey struct {
	col        string // "k", "v", "id"
	desc       bool
	nullsFirst *bool
}

type wframe struct {
	mode       string
	start, end wbound
}

type wbound struct {
	kind string // "up", "p", "cr", "f", "uf"
	n    int64
}

func (b wbound) sql() string {
	switch b.kind {
	case "up":
		return "UNBOUNDED PRECEDING"
	case "p":
		return fmt.Sprintf("%d PRECEDING", b.n)
	case "cr":
		return "CURRENT ROW"
	case "f":
		return fmt.Sprintf("%d FOLLOWING", b.n)
	}
	return "UNBOUNDED FOLLOWING"
}

func (c *wcase) sql() string {
	var args []string
	val := "v"
	if c.grouped {
		val = "max(v)"
	}
	switch c.fn {
	case "count*":
		args = []string{"*"}
	case "ntile":
		args = []string{fmt.Sprint(c.fnArgs[0])}
	case "lag", "lead":
		args = []string{val}
		for i := 1; i < c.nargs; i++ {
			args = append(args, fmt.Sprint(c.fnArgs[i-1]))
		}
	case "nth_value":
		args = []string{val, fmt.Sprint(c.fnArgs[0])}
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist":
	case "string_agg":
		args = []string{val + "::text", "'/'"}
	default:
		args = []string{val}
	}
	name := strings.TrimSuffix(c.fn, "*")
	var spec []string
	col := func(s string) string {
		if c.grouped && s != "id" {
			return "max(" + s + ")"
		}
		return s
	}
	if c.part != "" {
		spec = append(spec, "PARTITION BY "+col(c.part))
	}
	if len(c.order) > 0 {
		var ks []string
		for _, k := range c.order {
			s := col(k.col)
			if k.desc {
				s += " DESC"
			}
			if k.nullsFirst != nil {
				if *k.nullsFirst {
					s += " NULLS FIRST"
				} else {
					s += " NULLS LAST"
				}
			}
			ks = append(ks, s)
		}
		spec = append(spec, "ORDER BY "+strings.Join(ks, ", "))
	}
	if c.frame != nil {
		spec = append(spec, fmt.Sprintf("%s BETWEEN %s AND %s", strings.ToUpper(c.frame.mode), c.frame.start.sql(), c.frame.end.sql()))
	}
	filter := ""
	if c.aggFilter {
		filter = " FILTER (WHERE " + col("v") + " > 2)"
	}
	q := fmt.Sprintf("SELECT id, %s(%s)%s OVER (%s) FROM wd", name, strings.Join(args, ", "), filter, strings.Join(spec, " "))
	if c.filter {
		q += " WHERE id % 3 <> 0"
	}
	if c.grouped {
		q += " GROUP BY id"
	}
	return q
}

func genWindowCase(r *rand.Rand) *wcase {
	fns := []string{"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
		"first_value", "last_value", "nth_value", "count*", "count", "sum", "min", "max", "avg", "var_pop", "stddev",
		"string_agg", "array_agg"}
	c := &wcase{fn: fns[r.Intn(len(fns))], filter: r.Intn(4) == 0, grouped: r.Intn(6) == 0}
	c.part = []string{"", "", "k", "v"}[r.Intn(4)]
	for _, col := range []string{"v", "k"} {
		if r.Intn(2) == 0 {
			k := wkey{col: col, desc: r.Intn(2) == 0}
			if r.Intn(3) == 0 {
				nf := r.Intn(2) == 0
				k.nullsFirst = &nf
			}
			c.order = append(c.order, k)
		}
	}
	r.Shuffle(len(c.order), func(i, j int) { c.order[i], c.order[j] = c.order[j], c.order[i] })
	listed := c.fn == "string_agg" || c.fn == "array_agg" // in the frame's order
	aggregate := c.fn == "count*" || c.fn == "count" || c.fn == "sum" || c.fn == "min" || c.fn == "max" || c.fn == "avg" ||
		c.fn == "var_pop" || c.fn == "stddev" || listed
	framed := aggregate || c.fn == "first_value" || c.fn == "last_value" || c.fn == "nth_value"
	if framed && r.Intn(3) > 0 {
		c.frame = genFrame(r, len(c.order) > 0)
	}
	c.aggFilter = aggregate && c.fn != "array_agg" && r.Intn(4) == 0 // array_agg's FILTER over a window is 0A000
	switch c.fn {
	case "ntile":
		c.fnArgs = []int64{int64(1 + r.Intn(5))}
	case "lag", "lead":
		c.nargs = 1 + r.Intn(3)
		c.fnArgs = []int64{int64(r.Intn(4)), int64(r.Intn(3)) - 1}
	case "nth_value":
		c.fnArgs = []int64{int64(1 + r.Intn(3))}
	}
	// Functions that see the order within peers, and ROWS frames, need a
	// total order to have one answer: id breaks the ties.
	rowsFrame := framed && (c.frame == nil && len(c.order) == 0 && !aggregate || c.frame != nil && c.frame.mode == "rows")
	if !aggregate && c.fn != "rank" && c.fn != "dense_rank" && c.fn != "percent_rank" && c.fn != "cume_dist" || rowsFrame || listed {
		c.order = append(c.order, wkey{col: "id", desc: r.Intn(2) == 0})
	}
	if c.frame != nil && c.frame.mode == "groups" && len(c.order) == 0 {
		c.frame.mode = "rows"
		c.order = append(c.order, wkey{col: "id"})
	}
	return c
}

func genFrame(r *rand.Rand, ordered bool) *wframe {
	modes := []string{"rows", "range"}
	if ordered {
		modes = append(modes, "groups")
	}
	f := &wframe{mode: modes[r.Intn(len(modes))]}
	kinds := []string{"up", "p", "cr", "f", "uf"}
	for {
		f.start = wbound{kind: kinds[r.Intn(4)], n: int64(r.Intn(4))}
		f.end = wbound{kind: kinds[1+r.Intn(4)], n: int64(r.Intn(4))}
		if f.mode == "range" {
			for _, b := range []*wbound{&f.start, &f.end} {
				if b.kind == "p" || b.kind == "f" {
					b.kind = "cr"
				}
			}
		}
		rank := map[string]int{"up": 0, "p": 1, "cr": 2, "f": 3, "uf": 4}
		if rank[f.start.kind] <= rank[f.end.kind] && !(f.start.kind == "f" && f.end.kind == "cr") {
			return f
		}
	}
}

// wref computes a case by the definitions, O(n²): each row's partition,
// sorted; its peers; its frame as the rows that satisfy both bounds.
func wref(c *wcase, rows []types.Row) map[int64]string {
	type rec struct {
		k, v types.Value
		id   int64
	}
	var recs []rec
	for _, r := range rows {
		if c.filter && r[1].I%3 == 0 {
			continue
		}
		recs = append(recs, rec{r[0], r[2], r[1].I})
	}
	get := func(x rec, col string) types.Value {
		switch col {
		case "k":
			return x.k
		case "v":
			return x.v
		}
		return types.NewInt8(x.id)
	}
	cmpKey := func(a, b rec) int {
		for _, k := range c.order {
			x, y := get(a, k.col), get(b, k.col)
			nf := k.desc
			if k.nullsFirst != nil {
				nf = *k.nullsFirst
			}
			xn, yn := x.K == types.Null, y.K == types.Null
			switch {
			case xn && yn:
				continue
			case xn || yn:
				if xn == nf {
					return -1
				}
				return 1
			}
			d := types.Compare(x, y)
			if k.desc {
				d = -d
			}
			if d != 0 {
				return d
			}
		}
		return 0
	}
	samePart := func(a, b rec) bool {
		if c.part == "" {
			return true
		}
		x, y := get(a, c.part), get(b, c.part)
		if x.K == types.Null || y.K == types.Null {
			return x.K == y.K
		}
		return types.Compare(x, y) == 0
	}
	out := map[int64]string{}
	for _, cur := range recs {
		var p []rec
		for _, x := range recs {
			if samePart(cur, x) {
				p = append(p, x)
			}
		}
		sort.SliceStable(p, func(i, j int) bool { return cmpKey(p[i], p[j]) < 0 })
		n := len(p)
		i := 0
		for j := range p {
			if p[j].id == cur.id {
				i = j
			}
		}
		// group index: distinct keys before
		group := func(j int) int {
			g := 0
			for m := 1; m <= j; m++ {
				if cmpKey(p[m-1], p[m]) != 0 {
					g++
				}
			}
			return g
		}
		less, lessEq := 0, 0
		for j := range p {
			if d := cmpKey(p[j], cur); d < 0 {
				less++
				lessEq++
			} else if d == 0 {
				lessEq++
			}
		}
		inFrame := func(j int) bool {
			f := c.frame
			if f == nil {
				if len(c.order) == 0 {
					return true
				}
				return cmpKey(p[j], cur) <= 0
			}
			pos := func(x int) int64 {
				if f.mode == "rows" {
					return int64(x)
				}
				return int64(group(x))
			}
			pj, pi := pos(j), pos(i)
			ok := true
			switch f.start.kind {
			case "p":
				ok = pj >= pi-f.start.n
			case "cr":
				ok = pj >= pi
			case "f":
				ok = pj >= pi+f.start.n
			}
			switch f.end.kind {
			case "p":
				ok = ok && pj <= pi-f.end.n
			case "cr":
				ok = ok && pj <= pi
			case "f":
				ok = ok && pj <= pi+f.end.n
			}
			return ok
		}
		var frame []rec
		for j := range p {
			if inFrame(j) {
				frame = append(frame, p[j])
			}
		}
		val := func(x rec) string { return x.v.String() }
		var s string
		switch c.fn {
		case "row_number":
			s = fmt.Sprint(i + 1)
		case "rank":
			s = fmt.Sprint(less + 1)
		case "dense_rank":
			s = fmt.Sprint(group(i) + 1)
		case "percent_rank":
			pr := 0.0
			if n > 1 {
				pr = float64(less) / float64(n-1)
			}
			s = fmt.Sprint(pr)
		case "cume_dist":
			s = fmt.Sprint(float64(lessEq) / float64(n))
		case "ntile":
			k := int(c.fnArgs[0])
			q, rem := n/k, n%k
			if i < rem*(q+1) {
				s = fmt.Sprint(i/(q+1) + 1)
			} else {
				s = fmt.Sprint(rem + (i-rem*(q+1))/q + 1)
			}
		case "lag", "lead":
			off := int64(1)
			if c.nargs > 1 {
				off = c.fnArgs[0]
			}
			if c.fn == "lag" {
				off = -off
			}
			t := int64(i) + off
			switch {
			case t >= 0 && t < int64(n):
				s = val(p[t])
			case c.nargs > 2:
				s = fmt.Sprint(c.fnArgs[1])
			default:
				s = "NULL"
			}
		case "first_value", "last_value", "nth_value":
			t := 0
			switch c.fn {
			case "last_value":
				t = len(frame) - 1
			case "nth_value":
				t = int(c.fnArgs[0]) - 1
			}
			s = "NULL"
			if t >= 0 && t < len(frame) {
				s = val(frame[t])
			}
		case "count*":
			n := 0
			for _, x := range frame {
				if !c.aggFilter || x.v.K != types.Null && x.v.I > 2 {
					n++
				}
			}
			s = fmt.Sprint(n)
		case "string_agg", "array_agg":
			var parts []string // string_agg skips NULLs, array_agg keeps them
			for _, x := range frame {
				switch {
				case c.aggFilter && (x.v.K == types.Null || x.v.I <= 2):
				case x.v.K != types.Null:
					parts = append(parts, fmt.Sprint(x.v.I))
				case c.fn == "array_agg":
					parts = append(parts, "NULL")
				}
			}
			switch {
			case len(parts) == 0:
				s = "NULL"
			case c.fn == "string_agg":
				s = strings.Join(parts, "/")
			default:
				s = "{" + strings.Join(parts, ",") + "}"
			}
		default:
			var vals []int64
			for _, x := range frame {
				if c.aggFilter && (x.v.K == types.Null || x.v.I <= 2) {
					continue
				}
				if x.v.K != types.Null {
					vals = append(vals, x.v.I)
				}
			}
			if c.fn == "count" {
				s = fmt.Sprint(len(vals))
				break
			}
			if len(vals) == 0 {
				s = "NULL"
				break
			}
			sum, lo, hi := int64(0), vals[0], vals[0]
			for _, v := range vals {
				sum += v
				lo, hi = min(lo, v), max(hi, v)
			}
			switch c.fn {
			case "sum":
				s = fmt.Sprint(sum)
			case "min":
				s = fmt.Sprint(lo)
			case "max":
				s = fmt.Sprint(hi)
			case "avg":
				s = fmt.Sprint(float64(sum) / float64(len(vals)))
			case "var_pop", "stddev":
				mean, ss := float64(sum)/float64(len(vals)), 0.0
				for _, v := range vals {
					ss += (float64(v) - mean) * (float64(v) - mean)
				}
				switch {
				case c.fn == "var_pop":
					s = fmt.Sprint(ss / float64(len(vals)))
				case len(vals) < 2:
					s = "NULL"
				default:
					s = fmt.Sprint(math.Sqrt(ss / float64(len(vals)-1)))
				}
			}
		}
		out[cur.id] = s
	}
	return out
}

func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && math.Abs(x-y) < 1e-9
}

// TestWindowDifferential runs seeded random window queries over random
// rows (ties, NULLs, a few partitions) through the parser, planner and
// RunBounded, and compares each row's value with wref's. A failure is
// shrunk to the fewest rows that still fail. Reproduce with
// -window-seed; -window-cases sets the count.
func TestWindowDifferential(t *testing.T) {
	db := newTestDB(t)
	addStream(t, db, "wd", nil)
	r := rand.New(rand.NewSource(*windowSeed))
	check := func(c *wcase, rows []types.Row) string {
		db.rows["wd"] = rows
		got, err := db.query(t, c.sql())
		if err != nil {
			return "error: " + err.Error()
		}
		want := wref(c, rows)
		lines := strings.Split(got, "\n")
		if got == "" {
			lines = nil
		}
		if len(lines) != len(want) {
			return fmt.Sprintf("%d rows, want %d:\n%s", len(lines), len(want), got)
		}
		for _, l := range lines {
			id, v, _ := strings.Cut(l, " | ")
			n, _ := strconv.ParseInt(id, 10, 64)
			if w, ok := want[n]; !ok || !sameValue(v, w) {
				return fmt.Sprintf("id %d: got %s, want %s", n, v, w)
			}
		}
		return ""
	}
	for i := 0; i < *windowCases; i++ {
		c := genWindowCase(r)
		n := r.Intn(16)
		if r.Intn(10) == 0 {
			n = 20 + r.Intn(40)
		}
		var rows []types.Row
		for id := 1; id <= n; id++ {
			k := []string{"a", "b", "c", ""}[r.Intn(4)]
			var v any
			if r.Intn(5) > 0 {
				v = r.Intn(5)
			}
			rows = append(rows, wrow(k, int64(id), v))
		}
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		msg := check(c, rows)
		if msg == "" {
			continue
		}
		// Shrink: drop rows while the case still fails.
		for shrunk := true; shrunk; {
			shrunk = false
			for j := range rows {
				less := append(append([]types.Row(nil), rows[:j]...), rows[j+1:]...)
				if m := check(c, less); m != "" {
					rows, msg, shrunk = less, m, true
					break
				}
			}
		}
		var vals []string
		for _, row := range rows {
			vals = append(vals, fmt.Sprintf("(%s, %s, %s)", row[0], row[1], row[2]))
		}
		t.Fatalf("seed %d case %d:\n  rows (k, id, v): %s\n  query: %s\n  %s", *windowSeed, i, strings.Join(vals, ", "), c.sql(), msg)
	}
}

// TestWindowLimits: the window operator charges the rows it holds to the
// query's memory budget (53200 past it) and stops once the query's
// context has ended.
func TestWindowLimits(t *testing.T) {
	db := newTestDB(t)
	var rows []types.Row
	for i := 0; i < 20000; i++ {
		rows = append(rows, wrow("a", int64(i), i%7))
	}
	addStream(t, db, "wl", rows)
	stmts, err := sql.Parse(`SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) FROM wl`)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.PlanQuery(db.cat, stmts[0].Stmt.(*sql.Query), nil)
	if err != nil {
		t.Fatal(err)
	}
	onErr := func(_ *operators.Batch, _ int, err error) error { return err }
	n := 0
	err = engine.RunBoundedLimits(context.Background(), plan.Root, db, nil, onErr, engine.Limits{MemoryBytes: 1 << 20}, func(b *operators.Batch) error {
		n += len(b.Rows)
		return nil
	})
	if pgerror.CodeOf(err) != pgerror.OutOfMemory || n != 0 {
		t.Fatalf("1 MB limit: %d rows, err %v; want 53200 before any row", n, err)
	}
	if err := engine.RunBoundedLimits(context.Background(), plan.Root, db, nil, onErr, engine.Limits{MemoryBytes: 64 << 20}, func(b *operators.Batch) error {
		n += len(b.Rows)
		return nil
	}); err != nil || n != len(rows) {
		t.Fatalf("64 MB limit: %d rows, err %v", n, err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
	cancel(stop)
	err = engine.RunBounded(ctx, plan.Root, db, nil, onErr, func(*operators.Batch) error { return nil })
	if !errors.Is(err, stop) {
		t.Fatalf("cancelled: err %v", err)
	}
}
