package exactlyonce

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/fvsql/fvsql/udf/wasmgen"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The input stream and the continuous queries of the tests. ev has the
// columns of the issue plus g = v % 7, precomputed by the producer (a
// column, as it was before continuous queries took computed GROUP BY
// keys): grouping by a column other than the input's key is what forces
// the repartition stage of w2.
const (
	inputStream = "ev"
	inputDDL    = "CREATE STREAM ev (k BIGINT, v BIGINT, g BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (partitions = 8, key = 'k')"
	partitions  = 8

	// s1 doubles v with a user function: a wasm module (x * 2, from
	// udf/wasmgen) every process compiles from the catalog log, called
	// in batches (functionDDL).
	s1DDL = "CREATE STREAM s1 AS SELECT k, dbl(v) AS v2, ts FROM ev WHERE v % 3 <> 0"
	w1DDL = "CREATE STREAM w1 AS SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s, max(v) AS m FROM TUMBLE(ev, ts, INTERVAL '10' SECOND) GROUP BY k, window_start, window_end"
	w2DDL = "CREATE STREAM w2 AS SELECT g, window_start, window_end, count(*) AS n, sum(v) AS s, max(v) AS m FROM TUMBLE(ev, ts, INTERVAL '10' SECOND) GROUP BY g, window_start, window_end"
	t3DDL = "CREATE MATERIALIZED VIEW t3 AS SELECT * FROM (SELECT k, v, ts, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM ev) t WHERE rn <= 3"
	// v4 is a view over the view t3 (created after it): every change of
	// a top-3 row takes the old row back out of its bucket's count and
	// sum and puts the new one in.
	v4DDL     = "CREATE MATERIALIZED VIEW v4 AS SELECT k % 16 AS b, count(*) AS n, sum(v) AS s FROM t3 GROUP BY 1"
	v4Buckets = 16
	// dim is a second input, one row per key (d = k % 5), produced apart
	// from ev: the even keys first, the odd ones halfway through the
	// kills, so that j5's rows of odd keys are NULL-padded first and
	// taken back out when their dim row comes.
	dimStream = "dim"
	dimDDL    = "CREATE STREAM dim (k BIGINT, d BIGINT) WITH (partitions = 8, key = 'k')"
	// j5 aggregates a LEFT JOIN of ev with dim; j6 is a view of the rows
	// of an inner join of the two.
	j5DDL = "CREATE MATERIALIZED VIEW j5 AS SELECT m.d, count(*) AS n, count(m.k) AS matched, sum(e.v) AS s FROM ev e LEFT JOIN dim m ON e.k = m.k GROUP BY m.d"
	j6DDL = "CREATE MATERIALIZED VIEW j6 AS SELECT e.k, e.v, m.d FROM ev e JOIN dim m ON e.k = m.k WHERE e.v % 100 = 0"
	// j7 aggregates an anti join per key: the count and sum of the rows
	// of ev with v % 100 = 1 whose key has no dim row of d < 3; an odd
	// key's rows are in until its dim row comes, and then leave (and its
	// group with them) if its d is below 3. Grouped by the join key, the
	// aggregate runs in the join's stage (two stateful operators in one
	// stage, the planner's stage fusion).
	j7DDL = "CREATE MATERIALIZED VIEW j7 AS SELECT e.k, count(*) AS n, sum(e.v) AS s FROM ev e WHERE e.v % 100 = 1 AND NOT EXISTS (SELECT 1 FROM dim m WHERE m.k = e.k AND m.d < 3) GROUP BY e.k"

	// n8 aggregates a subquery's aggregate: per key its count and sum of
	// v (a hidden view inside the pipeline), then per bucket count % 16
	// of those rows; as a key's count grows, its row leaves one bucket
	// and enters the next.
	n8DDL = "CREATE MATERIALIZED VIEW n8 AS SELECT c % 16 AS b, count(*) AS n, sum(s) AS s FROM (SELECT k, count(*) AS c, sum(v) AS s FROM ev GROUP BY k) t GROUP BY 1"

	// o9 is a window view: each row of ev with v % 100 = 2 and how far v
	// moved from the key's row before it in event time (lag), which
	// changes when a row comes between them.
	o9DDL = "CREATE MATERIALIZED VIEW o9 AS SELECT v, k, v - lag(v) OVER (PARTITION BY k ORDER BY ts) AS d FROM ev WHERE v % 100 = 2"

	// c10 is w2 over a WITH query: the filter is a hidden stream of the
	// pipeline, inlined into the stage that reads it (planner
	// inlineStreams: the stage runs the filter's steps on ev's rows), so
	// two stages, as w2.
	c10DDL = "CREATE STREAM c10 AS WITH f AS (SELECT g, v, ts FROM ev WHERE v > 0) SELECT g, window_start, window_end, count(*) AS n, sum(v) AS s, max(v) AS m FROM TUMBLE(f, ts, INTERVAL '10' SECOND) GROUP BY g, window_start, window_end"

	// k11 is a window's top-N: the two groups g of most rows in each
	// window (ties by g), each window's rows put out once, when the
	// watermark passes it (a finalTopN over a hidden stream of w2's rows).
	k11DDL = "CREATE STREAM k11 AS SELECT * FROM (SELECT g, window_start, window_end, n, s, m, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY n DESC, g) AS rn FROM (SELECT g, window_start, window_end, count(*) AS n, sum(v) AS s, max(v) AS m FROM TUMBLE(ev, ts, INTERVAL '10' SECOND) GROUP BY g, window_start, window_end) w) t WHERE rn <= 2"

	// i12 is a join of three inputs written as one join (ev three times):
	// each row of v % 50 = 4, the same key's rows up to 300 ms after it,
	// and theirs up to 300 ms after those. The first join is a hidden
	// stream of the pipeline that the top join reads on one side, ev
	// itself on the other (planner hideJoin). v is unique, so (av, bv,
	// cv) names a row.
	i12DDL   = "CREATE STREAM i12 AS SELECT a.k, a.v AS av, b.v AS bv, c.v AS cv FROM ev a JOIN ev b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '0.3' SECOND JOIN ev c ON c.k = b.k AND c.ts BETWEEN b.ts AND b.ts + INTERVAL '0.3' SECOND WHERE a.v % 50 = 4"
	i12Bound = int64(300 * time.Millisecond / time.Microsecond)

	// d13 is a stream's DISTINCT: each (k % 4, v / 100) pair once, put
	// out when its first row comes (a grouping that emits each group
	// once, behind a repartition by the computed pair). v is a random
	// permutation, so a pair's rows come all through the run, and all
	// but its first are dropped.
	d13DDL = "CREATE STREAM d13 AS SELECT DISTINCT k % 4 AS r, v / 100 AS b FROM ev"

	// f14 is a stream's top-N in event time: of each pair of rows v / 2
	// (a subquery's computed column), the first in ts, once the
	// watermark passes it; the other is dropped, whether it comes before
	// or after. v is a random permutation, so pairs end all through the
	// run.
	f14DDL = "CREATE STREAM f14 AS SELECT k, v, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY b ORDER BY ts) AS rn FROM (SELECT k, v, ts, v / 2 AS b FROM ev) x) t WHERE rn = 1"

	// r15 is a stream's window functions in event time: per key, the
	// running count and sum of its rows with v % 10 = 3 and the v of the
	// one before, in (ts, v) order, each row once, when the watermark
	// passes it (a partition keeps its accumulators and last row across
	// checkpoints and restarts).
	r15DDL = "CREATE STREAM r15 AS SELECT k, v, count(*) OVER w AS n, sum(v) OVER w AS s, coalesce(lag(v) OVER w, -1) AS p FROM ev WHERE v % 10 = 3 WINDOW w AS (PARTITION BY k ORDER BY ts, v)"

	// r16 is the same over a span of event time: per key, the count
	// and sum of its rows with v % 10 = 7 of the second up to each one
	// (a RANGE frame: a partition keeps its rows of the span across
	// checkpoints and restarts), and the v of the one before.
	r16DDL = "CREATE STREAM r16 AS SELECT k, v, count(*) OVER w AS n, sum(v) OVER w AS s, coalesce(lag(v) OVER w, -1) AS p FROM ev WHERE v % 10 = 7 WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW)"

	windowMicros = int64(10 * time.Second / time.Microsecond)
)

// ddlOf maps the pipelines to their statements.
var ddlOf = map[string]string{"s1": s1DDL, "w1": w1DDL, "w2": w2DDL, "t3": t3DDL, "v4": v4DDL, "j5": j5DDL, "j6": j6DDL, "j7": j7DDL, "n8": n8DDL, "o9": o9DDL, "c10": c10DDL, "k11": k11DDL, "i12": i12DDL, "d13": d13DDL, "f14": f14DDL, "r15": r15DDL, "r16": r16DDL}

// t0 is the event time of the first row: 2026-01-01 00:00:00 UTC (on a
// window boundary).
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// evRow is one input row.
type evRow struct {
	k, v, g, ts int64 // ts: microseconds since the Unix epoch
}

// dataset is the input of a test and the records that carry it.
type dataset struct {
	rows []evRow // in production order: data rows, then one far-future row per partition
	data int     // rows[:data] are data rows
	recs []*kgo.Record
	warm int // rows[:warm]: one row per partition at the very start
	// dimRecs are dim's records, k = 0..dimKeys-1: the even keys, then
	// the odd ones.
	dimRecs []*kgo.Record
	dimKeys int64
}

// genData builds n data rows over keys keys: the first rows, one per
// partition, are the warm-up rows; row i has event time t0 + i ms (so
// event time is monotonic in every partition, as the watermark requires);
// v is a permutation of 1..n (unique: no ties in the top-N), g = v % 7.
// After them comes one row per partition with an event time 10^7 s later,
// which moves every partition's watermark past every data window so all
// of them close.
func genData(seed uint64, n, keys int) *dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	part := kgo.StickyKeyPartitioner(nil).ForTopic(inputStream)
	partOf := func(k int64) int32 {
		return int32(part.Partition(&kgo.Record{Key: []byte(strconv.FormatInt(k, 10))}, partitions))
	}
	var first [partitions]int64
	found := 0
	for i := range first {
		first[i] = -1
	}
	for k := int64(0); found < partitions; k++ {
		if p := partOf(k); first[p] < 0 {
			first[p] = k
			found++
		}
	}
	perm := rng.Perm(n)
	d := &dataset{data: n, warm: partitions}
	d.rows = make([]evRow, 0, n+partitions)
	for i := 0; i < n; i++ {
		k := int64(rng.IntN(keys))
		if i < partitions {
			k = first[i]
		}
		v := int64(perm[i] + 1)
		d.rows = append(d.rows, evRow{k: k, v: v, g: v % 7, ts: t0 + int64(i)*1000})
	}
	far := t0 + 10_000_000*1_000_000
	for p := 0; p < partitions; p++ {
		v := int64(n + 1 + p)
		d.rows = append(d.rows, evRow{k: first[p], v: v, g: v % 7, ts: far + int64(p)*1000})
	}
	d.recs = make([]*kgo.Record, len(d.rows))
	for i, r := range d.rows {
		val := fmt.Appendf(nil, `{"k":%d,"v":%d,"g":%d,"ts":"%s"}`, r.k, r.v, r.g, tsText(r.ts))
		d.recs[i] = &kgo.Record{Key: []byte(strconv.FormatInt(r.k, 10)), Value: val}
		d.dimKeys = max(d.dimKeys, r.k+1)
	}
	for odd := int64(0); odd < 2; odd++ {
		for k := odd; k < d.dimKeys; k += 2 {
			val := fmt.Appendf(nil, `{"k":%d,"d":%d}`, k, k%5)
			d.dimRecs = append(d.dimRecs, &kgo.Record{Key: []byte(strconv.FormatInt(k, 10)), Value: val})
		}
	}
	return d
}

// expectJ5 is the view j5 once every dim row is in: per d, the count
// and the sum of v of the rows of ev whose k has it (every row matched).
func (d *dataset) expectJ5() map[int64][3]int64 {
	out := map[int64][3]int64{}
	for _, r := range d.rows {
		a := out[r.k%5]
		out[r.k%5] = [3]int64{a[0] + 1, a[1] + 1, a[2] + r.v}
	}
	return out
}

// expectJ6 is the view j6: the rows of ev with v % 100 = 0, by v, with
// their k and its d.
func (d *dataset) expectJ6() map[int64][2]int64 {
	out := map[int64][2]int64{}
	for _, r := range d.rows {
		if r.v%100 == 0 {
			out[r.v] = [2]int64{r.k, r.k % 5}
		}
	}
	return out
}

// expectO9 is the view o9: the rows of ev with v % 100 = 2, by v, with
// their k and v minus the v of the key's row before them in event time
// (nil for a key's first).
func (d *dataset) expectO9() map[int64]o9Row {
	out := map[int64]o9Row{}
	last := map[int64]*int64{}
	for _, r := range d.rows { // in event time order
		if r.v%100 != 2 {
			continue
		}
		row := o9Row{k: r.k}
		if prev := last[r.k]; prev != nil {
			dv := r.v - *prev
			row.d = &dv
		}
		v := r.v
		last[r.k] = &v
		out[r.v] = row
	}
	return out
}

type o9Row struct {
	k int64
	d *int64
}

// checkO9 compares the window view o9 with its expected rows, by SELECT.
func checkO9(t *testing.T, d *dataset, conn *pgx.Conn) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	p := newProblems(t, "o9 (SELECT)")
	rows, err := conn.Query(ctx, "SELECT v, k, d FROM o9")
	if err != nil {
		t.Errorf("SELECT FROM o9: %v", err)
		return false
	}
	got := map[int64]o9Row{}
	for rows.Next() {
		var v int64
		var r o9Row
		if err := rows.Scan(&v, &r.k, &r.d); err != nil {
			t.Errorf("SELECT FROM o9: %v", err)
			return false
		}
		if _, dup := got[v]; dup {
			p.add("two rows for one v", "v=%d", v)
		}
		got[v] = r
	}
	if err := rows.Err(); err != nil {
		t.Errorf("SELECT FROM o9: %v", err)
		return false
	}
	show := func(r o9Row) string {
		if r.d == nil {
			return fmt.Sprintf("k=%d d=NULL", r.k)
		}
		return fmt.Sprintf("k=%d d=%d", r.k, *r.d)
	}
	want := d.expectO9()
	for v, w := range want {
		g, ok := got[v]
		switch {
		case !ok:
			p.add("missing row", "v=%d %s", v, show(w))
		case show(g) != show(w):
			p.add("wrong row", "v=%d: got %s, want %s", v, show(g), show(w))
		}
	}
	for v, g := range got {
		if _, ok := want[v]; !ok {
			p.add("unexpected row", "v=%d %s", v, show(g))
		}
	}
	t.Logf("o9: %d rows, %d expected: %s", len(got), len(want), p.summary())
	return p.ok()
}

// expectJ7 is the view j7 once every dim row is in: per key k with k % 5
// (its d) at least 3, the count and sum of its rows of ev with
// v % 100 = 1.
func (d *dataset) expectJ7() map[int64][2]int64 {
	out := map[int64][2]int64{}
	for _, r := range d.rows {
		if r.v%100 == 1 && r.k%5 >= 3 {
			g := out[r.k]
			out[r.k] = [2]int64{g[0] + 1, g[1] + r.v}
		}
	}
	return out
}

func tsText(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000")
}

// parseTS reads a timestamp as fvsql writes it (ISO 8601, with or without
// fraction and zone).
func parseTS(s string) (int64, error) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("timestamp %q", s)
}

// ---------------------------------------------------------------- expected

type agg struct{ n, s, m int64 }

type winKey struct{ key, ws int64 }

type topRow struct{ v, ts int64 }

func windowStart(ts int64) int64 { return ts - ((ts%windowMicros)+windowMicros)%windowMicros }

// expectS1 is s1's rows by v (unique): v*2 and the row.
func (d *dataset) expectS1() map[int64]evRow {
	out := map[int64]evRow{}
	for _, r := range d.rows {
		if r.v%3 != 0 {
			out[r.v] = r
		}
	}
	return out
}

// expectWindows is every closed window's aggregates: every window of the
// data rows (the far-future rows' windows stay open).
func (d *dataset) expectWindows(by func(evRow) int64) map[winKey]agg {
	out := map[winKey]agg{}
	for _, r := range d.rows[:d.data] {
		k := winKey{by(r), windowStart(r.ts)}
		a := out[k]
		a.n++
		a.s += r.v
		a.m = max(a.m, r.v)
		out[k] = a
	}
	return out
}

// expectTop3 is the view t3: per k the three rows with the largest v.
func (d *dataset) expectTop3() map[[2]int64]topRow {
	per := map[int64][]evRow{}
	for _, r := range d.rows {
		per[r.k] = append(per[r.k], r)
	}
	out := map[[2]int64]topRow{}
	for k, rs := range per {
		sort.Slice(rs, func(i, j int) bool { return rs[i].v > rs[j].v })
		for i := 0; i < len(rs) && i < 3; i++ {
			out[[2]int64{k, int64(i + 1)}] = topRow{rs[i].v, rs[i].ts}
		}
	}
	return out
}

// expectV4 is the view v4: per bucket k % 16 of t3's rows, their count
// and the sum of their v.
func (d *dataset) expectV4() map[int64][2]int64 {
	out := map[int64][2]int64{}
	for k, r := range d.expectTop3() {
		b := k[0] % v4Buckets
		a := out[b]
		out[b] = [2]int64{a[0] + 1, a[1] + r.v}
	}
	return out
}

// expectN8 is the view n8: per bucket c % 16 of the keys' counts c, the
// number of keys and the sum of their rows' v.
func (d *dataset) expectN8() map[int64][2]int64 {
	type agg struct{ c, s int64 }
	per := map[int64]agg{}
	for _, r := range d.rows {
		a := per[r.k]
		per[r.k] = agg{a.c + 1, a.s + r.v}
	}
	out := map[int64][2]int64{}
	for _, a := range per {
		b := a.c % v4Buckets
		o := out[b]
		out[b] = [2]int64{o[0] + 1, o[1] + a.s}
	}
	return out
}

// ---------------------------------------------------------------- checking

// problems collects mismatches, printing the first few of each kind.
type problems struct {
	t     *testing.T
	what  string
	kinds map[string]int
	order []string
}

func newProblems(t *testing.T, what string) *problems {
	return &problems{t: t, what: what, kinds: map[string]int{}}
}

func (p *problems) add(kind, format string, args ...any) {
	if p.kinds[kind] == 0 {
		p.order = append(p.order, kind)
	}
	p.kinds[kind]++
	if p.kinds[kind] <= 12 {
		p.t.Errorf("%s: %s: %s", p.what, kind, fmt.Sprintf(format, args...))
	}
}

func (p *problems) ok() bool { return len(p.order) == 0 }

func (p *problems) summary() string {
	if p.ok() {
		return "exact"
	}
	var parts []string
	for _, k := range p.order {
		parts = append(parts, fmt.Sprintf("%s: %d", k, p.kinds[k]))
	}
	return strings.Join(parts, ", ")
}

// jsonRow decodes an output record's JSON object with numbers kept exact.
func jsonRow(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// intField reads an integer column, written as a JSON number or string
// (a NUMERIC sum may be either), with or without a zero fraction.
func intField(m map[string]any, name string) (int64, error) {
	var s string
	switch v := m[name].(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, fmt.Errorf("column %s: %T %v", name, m[name], m[name])
	}
	whole, frac, dot := strings.Cut(s, ".")
	if dot && strings.Trim(frac, "0") != "" {
		return 0, fmt.Errorf("column %s: %s is not an integer", name, s)
	}
	return strconv.ParseInt(whole, 10, 64)
}

func tsField(m map[string]any, name string) (int64, error) {
	s, ok := m[name].(string)
	if !ok {
		return 0, fmt.Errorf("column %s: %T %v", name, m[name], m[name])
	}
	return parseTS(s)
}

func where(r *kgo.Record) string {
	return fmt.Sprintf("p%d@%d (producer %d epoch %d, %s)", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, r.Timestamp.Format("15:04:05.000"))
}

// checkS1 compares s1's committed output with the expected rows: every
// row exactly once, with the right values.
func checkS1(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	want := d.expectS1()
	recs := c.readCommitted(t, c.topic("s1"))
	p := newProblems(t, "s1")
	seen := map[int64][]*kgo.Record{}
	for _, r := range recs {
		m, err := jsonRow(r.Value)
		var k, v2, ts int64
		if err == nil {
			k, err = intField(m, "k")
		}
		if err == nil {
			v2, err = intField(m, "v2")
		}
		if err == nil {
			ts, err = tsField(m, "ts")
		}
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		v := v2 / 2
		w, ok := want[v]
		if !ok || v2%2 != 0 {
			p.add("unexpected row", "%s %s", where(r), r.Value)
			continue
		}
		if w.k != k || w.ts != ts {
			p.add("wrong values", "%s %s, want k=%d ts=%s", where(r), r.Value, w.k, tsText(w.ts))
		}
		seen[v] = append(seen[v], r)
	}
	var missing []int64
	for v := range want {
		switch rs := seen[v]; {
		case len(rs) == 0:
			missing = append(missing, v)
		case len(rs) > 1:
			at := make([]string, len(rs))
			for i, r := range rs {
				at[i] = where(r)
			}
			p.add("duplicated row", "v=%d k=%d %d times: %s", v, want[v].k, len(rs), strings.Join(at, ", "))
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	for _, v := range missing {
		r := want[v]
		p.add("missing row", "k=%d v=%d ts=%s (input %s)", r.k, r.v, tsText(r.ts), d.inputOf(v))
	}
	t.Logf("s1: %d committed records, %d expected rows: %s", len(recs), len(want), p.summary())
	return p.ok()
}

// checkD13 compares d13's committed rows with the distinct (k % 4, v /
// 100) pairs of the input: each exactly once.
func checkD13(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	want := map[[2]int64]bool{}
	for _, r := range d.rows {
		want[[2]int64{r.k % 4, r.v / 100}] = true
	}
	recs := c.readCommitted(t, c.topic("d13"))
	p := newProblems(t, "d13")
	seen := map[[2]int64][]*kgo.Record{}
	for _, r := range recs {
		m, err := jsonRow(r.Value)
		var pair [2]int64
		if err == nil {
			pair[0], err = intField(m, "r")
		}
		if err == nil {
			pair[1], err = intField(m, "b")
		}
		switch {
		case err != nil:
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
		case !want[pair]:
			p.add("unexpected row", "%s %s", where(r), r.Value)
		default:
			seen[pair] = append(seen[pair], r)
		}
	}
	for pair := range want {
		switch rs := seen[pair]; {
		case len(rs) == 0:
			p.add("missing row", "r=%d b=%d", pair[0], pair[1])
		case len(rs) > 1:
			at := make([]string, len(rs))
			for i, r := range rs {
				at[i] = where(r)
			}
			p.add("duplicated row", "r=%d b=%d %d times: %s", pair[0], pair[1], len(rs), strings.Join(at, ", "))
		}
	}
	t.Logf("d13: %d committed records, %d expected rows: %s", len(recs), len(want), p.summary())
	return p.ok()
}

// checkF14 compares f14's committed rows with the first row in ts of
// each pair v / 2 of the input (but the far-future rows): each exactly
// once, with its k and ts.
func checkF14(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	first := map[int64]evRow{}
	for _, r := range d.rows {
		if f, ok := first[r.v/2]; !ok || r.ts < f.ts {
			first[r.v/2] = r
		}
	}
	// the far-future rows close the data's windows; no watermark passes
	// them
	for _, r := range d.rows[d.data:] {
		if first[r.v/2].v == r.v {
			delete(first, r.v/2)
		}
	}
	recs := c.readCommitted(t, c.topic("f14"))
	p := newProblems(t, "f14")
	seen := map[int64][]*kgo.Record{}
	for _, r := range recs {
		m, err := jsonRow(r.Value)
		var k, v, ts int64
		if err == nil {
			k, err = intField(m, "k")
		}
		if err == nil {
			v, err = intField(m, "v")
		}
		if err == nil {
			ts, err = tsField(m, "ts")
		}
		switch w, ok := first[v/2]; {
		case err != nil:
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
		case !ok || w.v != v:
			p.add("unexpected row", "%s %s", where(r), r.Value)
		case w.k != k || w.ts != ts:
			p.add("wrong values", "%s %s, want k=%d ts=%s", where(r), r.Value, w.k, tsText(w.ts))
		default:
			seen[v] = append(seen[v], r)
		}
	}
	for _, w := range first {
		switch rs := seen[w.v]; {
		case len(rs) == 0:
			p.add("missing row", "k=%d v=%d ts=%s (input %s)", w.k, w.v, tsText(w.ts), d.inputOf(w.v))
		case len(rs) > 1:
			at := make([]string, len(rs))
			for i, r := range rs {
				at[i] = where(r)
			}
			p.add("duplicated row", "v=%d %d times: %s", w.v, len(rs), strings.Join(at, ", "))
		}
	}
	t.Logf("f14: %d committed records, %d expected rows: %s", len(recs), len(first), p.summary())
	return p.ok()
}

// overRow is a row of r15 or r16: its key, count, sum and the v before.
type overRow struct{ k, n, s, p int64 }

// checkR15 compares r15's committed rows with each key's rows of v % 10
// = 3 in (ts, v) order (but the far-future rows), numbered, summed and
// with the v before: each exactly once.
func checkR15(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	want := map[int64]overRow{}
	for k, rows := range d.perKeyOf(3) {
		var sum int64
		prev := int64(-1)
		for i, r := range rows {
			sum += r.v
			want[r.v] = overRow{k, int64(i + 1), sum, prev}
			prev = r.v
		}
	}
	return checkOver(t, c, d, "r15", want)
}

// checkR16 compares r16's committed rows with each key's rows of v % 10
// = 7 (but the far-future rows), each with the count and sum of those of
// the second up to its time (a scan of them all) and the v before: each
// exactly once.
func checkR16(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	want := map[int64]overRow{}
	for k, rows := range d.perKeyOf(7) {
		for i, r := range rows {
			w := overRow{k: k, p: -1}
			if i > 0 {
				w.p = rows[i-1].v
			}
			for _, o := range rows {
				if o.ts <= r.ts && o.ts >= r.ts-int64(time.Second/time.Microsecond) {
					w.n++
					w.s += o.v
				}
			}
			want[r.v] = w
		}
	}
	return checkOver(t, c, d, "r16", want)
}

// perKeyOf is each key's data rows with v % 10 = rem, in (ts, v) order.
func (d *dataset) perKeyOf(rem int64) map[int64][]evRow {
	perKey := map[int64][]evRow{}
	for _, r := range d.rows[:d.data] {
		if r.v%10 == rem {
			perKey[r.k] = append(perKey[r.k], r)
		}
	}
	for _, rows := range perKey {
		slices.SortFunc(rows, func(a, b evRow) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.v, b.v)) })
	}
	return perKey
}

// checkOver compares the committed rows of a stream of window functions
// (k, v, n, s, p) with want, by v: each exactly once.
func checkOver(t *testing.T, c *cluster, d *dataset, name string, want map[int64]overRow) bool {
	t.Helper()
	recs := c.readCommitted(t, c.topic(name))
	p := newProblems(t, name)
	seen := map[int64][]*kgo.Record{}
	for _, r := range recs {
		m, err := jsonRow(r.Value)
		var got overRow
		var v int64
		for _, f := range []struct {
			name string
			to   *int64
		}{{"v", &v}, {"k", &got.k}, {"n", &got.n}, {"s", &got.s}, {"p", &got.p}} {
			if err == nil {
				*f.to, err = intField(m, f.name)
			}
		}
		switch w, ok := want[v]; {
		case err != nil:
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
		case !ok:
			p.add("unexpected row", "%s %s", where(r), r.Value)
		case w != got:
			p.add("wrong values", "%s %s, want k=%d n=%d s=%d p=%d", where(r), r.Value, w.k, w.n, w.s, w.p)
		default:
			seen[v] = append(seen[v], r)
		}
	}
	for v, w := range want {
		switch rs := seen[v]; {
		case len(rs) == 0:
			p.add("missing row", "k=%d v=%d (input %s)", w.k, v, d.inputOf(v))
		case len(rs) > 1:
			at := make([]string, len(rs))
			for i, r := range rs {
				at[i] = where(r)
			}
			p.add("duplicated row", "v=%d %d times: %s", v, len(rs), strings.Join(at, ", "))
		}
	}
	t.Logf("%s: %d committed records, %d expected rows: %s", name, len(recs), len(want), p.summary())
	return p.ok()
}

// inputOf says where the input row with value v was produced.
func (d *dataset) inputOf(v int64) string {
	for i, r := range d.rows {
		if r.v == v {
			if rec := d.recs[i]; rec.Offset >= 0 && rec.Partition >= 0 {
				return fmt.Sprintf("row %d at ev p%d@%d", i, rec.Partition, rec.Offset)
			}
			return fmt.Sprintf("row %d", i)
		}
	}
	return "?"
}

// checkWindows compares a windowed stream's committed output with the
// expected windows: each exactly once, every aggregate right.
func checkWindows(t *testing.T, c *cluster, d *dataset, stream, keyCol string, by func(evRow) int64) bool {
	t.Helper()
	want := d.expectWindows(by)
	recs := c.readCommitted(t, c.topic(stream))
	p := newProblems(t, stream)
	seen := map[winKey][]*kgo.Record{}
	for _, r := range recs {
		key, we, a, err := windowRow(r.Value, keyCol)
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		ws := key.ws
		w, ok := want[key]
		if !ok {
			p.add("unexpected window", "%s %s", where(r), r.Value)
			continue
		}
		if we != ws+windowMicros || a != w {
			p.add("wrong aggregates", "%s %s, want n=%d s=%d m=%d", where(r), r.Value, w.n, w.s, w.m)
		}
		seen[key] = append(seen[key], r)
	}
	var missing []winKey
	for key := range want {
		switch rs := seen[key]; {
		case len(rs) == 0:
			missing = append(missing, key)
		case len(rs) > 1:
			at := make([]string, len(rs))
			for i, r := range rs {
				at[i] = where(r) + " " + string(r.Value)
			}
			p.add("duplicated window", "%s=%d window %s: %d times: %s", keyCol, key.key, tsText(key.ws), len(rs), strings.Join(at, ", "))
		}
	}
	sort.Slice(missing, func(i, j int) bool {
		if missing[i].ws != missing[j].ws {
			return missing[i].ws < missing[j].ws
		}
		return missing[i].key < missing[j].key
	})
	for _, key := range missing {
		w := want[key]
		p.add("missing window", "%s=%d window %s (n=%d s=%d m=%d)", keyCol, key.key, tsText(key.ws), w.n, w.s, w.m)
	}
	t.Logf("%s: %d committed records, %d expected windows: %s", stream, len(recs), len(want), p.summary())
	return p.ok()
}

// checkTopWindows compares k11's committed rows with the two groups g
// of most rows in each window (ties by g): each exactly once, numbered,
// with the window's aggregates.
func checkTopWindows(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	wins := d.expectWindows(func(r evRow) int64 { return r.g })
	byStart := map[int64][]winKey{}
	for k := range wins {
		byStart[k.ws] = append(byStart[k.ws], k)
	}
	want := map[winKey]int64{} // the row number of each group shown
	for _, ks := range byStart {
		sort.Slice(ks, func(i, j int) bool {
			if a, b := wins[ks[i]], wins[ks[j]]; a.n != b.n {
				return a.n > b.n
			}
			return ks[i].key < ks[j].key
		})
		for i := 0; i < len(ks) && i < 2; i++ {
			want[ks[i]] = int64(i + 1)
		}
	}
	recs := c.readCommitted(t, c.topic("k11"))
	p := newProblems(t, "k11")
	seen := map[winKey]int{}
	for _, r := range recs {
		key, we, a, err := windowRow(r.Value, "g")
		var rn int64
		if err == nil {
			var m map[string]any
			if m, err = jsonRow(r.Value); err == nil {
				rn, err = intField(m, "rn")
			}
		}
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		w, ok := want[key]
		switch {
		case !ok:
			p.add("unexpected row", "%s %s", where(r), r.Value)
		case rn != w || a != wins[key] || we != key.ws+windowMicros:
			a := wins[key]
			p.add("wrong row", "%s %s, want rn=%d n=%d s=%d m=%d", where(r), r.Value, w, a.n, a.s, a.m)
		}
		seen[key]++
	}
	var lost []string
	for key := range want {
		switch seen[key] {
		case 0:
			p.add("missing row", "g=%d window %s", key.key, tsText(key.ws))
			if s := tsText(key.ws); !slices.Contains(lost, s) {
				lost = append(lost, s)
			}
		case 1:
		default:
			p.add("duplicated row", "g=%d window %s: %d times", key.key, tsText(key.ws), seen[key])
		}
	}
	t.Logf("k11: %d committed records, %d expected rows: %s", len(recs), len(want), p.summary())
	if len(lost) > 0 {
		traceWindows(t, c, "k11", lost)
	}
	return p.ok()
}

// checkTop3 compares the view t3 with the expected top 3 per key: the
// final table folded from its compacted topic (read_committed; the last
// record of a key wins, a tombstone deletes it) and SELECT * FROM t3.
func checkTop3(t *testing.T, c *cluster, d *dataset, conn *pgx.Conn) bool {
	t.Helper()
	want := d.expectTop3()
	recs := c.readCommitted(t, c.topic("t3"))
	table := map[string]*kgo.Record{}
	for _, r := range recs { // in offset order per partition; a key has one partition
		if r.Value == nil {
			delete(table, string(r.Key))
		} else {
			table[string(r.Key)] = r
		}
	}
	p := newProblems(t, "t3 (compacted topic)")
	got := map[[2]int64]topRow{}
	for _, r := range table {
		m, err := jsonRow(r.Value)
		var k, v, ts, rn int64
		if err == nil {
			k, err = intField(m, "k")
		}
		if err == nil {
			v, err = intField(m, "v")
		}
		if err == nil {
			ts, err = tsField(m, "ts")
		}
		if err == nil {
			rn, err = intField(m, "rn")
		}
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		key := [2]int64{k, rn}
		if _, dup := got[key]; dup {
			p.add("two records for one (k, rn)", "%s key %s: %s", where(r), r.Key, r.Value)
		}
		got[key] = topRow{v, ts}
	}
	compareTop(p, got, want)
	t.Logf("t3 table topic: %d committed records, %d keys, %d expected rows: %s", len(recs), len(table), len(want), p.summary())
	ok := p.ok()

	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT k, v, ts, rn FROM t3")
	if err != nil {
		t.Errorf("SELECT FROM t3: %v", err)
		return false
	}
	q := newProblems(t, "t3 (SELECT)")
	sel := map[[2]int64]topRow{}
	n := 0
	for rows.Next() {
		var k, v, rn int64
		var ts time.Time
		if err := rows.Scan(&k, &v, &ts, &rn); err != nil {
			t.Errorf("SELECT FROM t3: %v", err)
			return false
		}
		n++
		if _, dup := sel[[2]int64{k, rn}]; dup {
			q.add("two rows for one (k, rn)", "k=%d rn=%d", k, rn)
		}
		sel[[2]int64{k, rn}] = topRow{v, ts.UnixMicro()}
	}
	if err := rows.Err(); err != nil {
		t.Errorf("SELECT FROM t3: %v", err)
		return false
	}
	compareTop(q, sel, want)
	t.Logf("SELECT * FROM t3: %d rows: %s", n, q.summary())
	return ok && q.ok()
}

// checkBuckets compares a view of buckets (v4, n8) with its expected ones, from its
// compacted topic folded by key and from SELECT.
func checkBuckets(t *testing.T, c *cluster, conn *pgx.Conn, view string, want map[int64][2]int64) bool {
	t.Helper()
	recs := c.readCommitted(t, c.topic(view))
	table := map[string]*kgo.Record{}
	for _, r := range recs {
		if r.Value == nil {
			delete(table, string(r.Key))
		} else {
			table[string(r.Key)] = r
		}
	}
	p := newProblems(t, view+" (compacted topic)")
	got := map[int64][2]int64{}
	for _, r := range table {
		m, err := jsonRow(r.Value)
		var b, n, s int64
		if err == nil {
			b, err = intField(m, "b")
		}
		if err == nil {
			n, err = intField(m, "n")
		}
		if err == nil {
			s, err = intField(m, "s")
		}
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		if _, dup := got[b]; dup {
			p.add("two records for one bucket", "%s key %s: %s", where(r), r.Key, r.Value)
		}
		got[b] = [2]int64{n, s}
	}
	compareBuckets(p, got, want)
	t.Logf("%s table topic: %d committed records, %d keys, %d expected rows: %s", view, len(recs), len(table), len(want), p.summary())
	ok := p.ok()

	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT b, n, s FROM "+view)
	if err != nil {
		t.Errorf("SELECT FROM %s: %v", view, err)
		return false
	}
	q := newProblems(t, view+" (SELECT)")
	sel := map[int64][2]int64{}
	for rows.Next() {
		var b, n, s int64
		if err := rows.Scan(&b, &n, &s); err != nil {
			t.Errorf("SELECT FROM %s: %v", view, err)
			return false
		}
		if _, dup := sel[b]; dup {
			q.add("two rows for one bucket", "b=%d", b)
		}
		sel[b] = [2]int64{n, s}
	}
	if err := rows.Err(); err != nil {
		t.Errorf("SELECT FROM %s: %v", view, err)
		return false
	}
	compareBuckets(q, sel, want)
	t.Logf("SELECT * FROM %s: %d rows: %s", view, len(sel), q.summary())
	return ok && q.ok()
}

func compareBuckets(p *problems, got, want map[int64][2]int64) {
	for b := int64(0); b < v4Buckets; b++ {
		g, gok := got[b]
		w, wok := want[b]
		switch {
		case gok && !wok:
			p.add("unexpected row", "b=%d n=%d s=%d", b, g[0], g[1])
		case wok && !gok:
			p.add("missing row", "b=%d, want n=%d s=%d", b, w[0], w[1])
		case g != w:
			p.add("wrong row", "b=%d: n=%d s=%d, want n=%d s=%d", b, g[0], g[1], w[0], w[1])
		}
	}
	for b := range got {
		if b < 0 || b >= v4Buckets {
			p.add("unexpected row", "b=%d", b)
		}
	}
}

// checkJoins compares the join views j5, j6 and j7 with their expected rows,
// by SELECT (their table topics are folded the same way as t3's and v4's
// by the view copy SELECT reads).
func checkJoins(t *testing.T, d *dataset, conn *pgx.Conn, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	p := newProblems(t, name+" (SELECT)")
	var rows pgx.Rows
	var err error
	// j6's rows by v (with k and d), j7's by k (with n and s)
	what := [3]string{"v", "k", "d"}
	switch name {
	case "j5":
		rows, err = conn.Query(ctx, "SELECT d, n, matched, s FROM j5")
	case "j7":
		what = [3]string{"k", "n", "s"}
		rows, err = conn.Query(ctx, "SELECT k, n, s FROM j7")
	default:
		rows, err = conn.Query(ctx, "SELECT v, k, d FROM "+name)
	}
	if err != nil {
		t.Errorf("SELECT FROM %s: %v", name, err)
		return false
	}
	got5, got6 := map[int64][3]int64{}, map[int64][2]int64{}
	n := 0
	for rows.Next() {
		n++
		if name == "j5" {
			var dv *int64
			var a [3]int64
			if err := rows.Scan(&dv, &a[0], &a[1], &a[2]); err != nil {
				t.Errorf("SELECT FROM j5: %v", err)
				return false
			}
			if dv == nil {
				p.add("a group of rows without a dim row", "n=%d matched=%d s=%d", a[0], a[1], a[2])
				continue
			}
			if _, dup := got5[*dv]; dup {
				p.add("two rows for one d", "d=%d", *dv)
			}
			got5[*dv] = a
			continue
		}
		var v int64
		var a [2]int64
		if err := rows.Scan(&v, &a[0], &a[1]); err != nil {
			t.Errorf("SELECT FROM %s: %v", name, err)
			return false
		}
		if _, dup := got6[v]; dup {
			p.add("two rows for one "+what[0], "%s=%d", what[0], v)
		}
		got6[v] = a
	}
	if err := rows.Err(); err != nil {
		t.Errorf("SELECT FROM %s: %v", name, err)
		return false
	}
	if name == "j5" {
		want := d.expectJ5()
		for k, w := range want {
			if g, ok := got5[k]; !ok {
				p.add("missing row", "d=%d, want %v", k, w)
			} else if g != w {
				p.add("wrong row", "d=%d: n, matched, s = %v, want %v", k, g, w)
			}
		}
		for k, g := range got5 {
			if _, ok := want[k]; !ok {
				p.add("unexpected row", "d=%d %v", k, g)
			}
		}
	} else {
		want := d.expectJ6()
		if name == "j7" {
			want = d.expectJ7()
		}
		for v, w := range want {
			if g, ok := got6[v]; !ok {
				p.add("missing row", "%s=%d, want %s, %s = %v", what[0], v, what[1], what[2], w)
			} else if g != w {
				p.add("wrong row", "%s=%d: %s, %s = %v, want %v", what[0], v, what[1], what[2], g, w)
			}
		}
		for v, g := range got6 {
			if _, ok := want[v]; !ok {
				p.add("unexpected row", "%s=%d %v", what[0], v, g)
			}
		}
	}
	t.Logf("SELECT * FROM %s: %d rows: %s", name, n, p.summary())
	return p.ok()
}

func compareTop(p *problems, got, want map[[2]int64]topRow) {
	keys := make([][2]int64, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			p.add("missing row", "k=%d rn=%d, want v=%d ts=%s", k[0], k[1], w.v, tsText(w.ts))
		case !wok:
			p.add("unexpected row", "k=%d rn=%d v=%d ts=%s", k[0], k[1], g.v, tsText(g.ts))
		case g != w:
			p.add("wrong row", "k=%d rn=%d: v=%d ts=%s, want v=%d ts=%s", k[0], k[1], g.v, tsText(g.ts), w.v, tsText(w.ts))
		}
	}
}

// checkNoErrors reports what the pipelines' errors streams hold: poison
// or late rows, none expected.
func checkNoErrors(t *testing.T, c *cluster, pipelines ...string) bool {
	t.Helper()
	ok := true
	for _, p := range pipelines {
		recs := c.readCommitted(t, c.topic(p+"_errors"))
		if len(recs) == 0 {
			continue
		}
		ok = false
		reasons := map[string]int{}
		for _, r := range recs {
			m, err := jsonRow(r.Value)
			reason := "?"
			if err == nil {
				reason, _ = m["reason"].(string)
				reason, _, _ = strings.Cut(reason, ":")
			}
			reasons[reason]++
		}
		t.Errorf("%s_errors holds %d records (none expected): reasons %v; first: %s", p, len(recs), reasons, recs[0].Value)
	}
	return ok
}

// checkAll checks the outputs of the named pipelines.
func checkAll(t *testing.T, c *cluster, d *dataset, conn *pgx.Conn, pipelines ...string) {
	t.Helper()
	start := time.Now()
	results := map[string]bool{}
	for _, p := range pipelines {
		switch p {
		case "s1":
			results[p] = checkS1(t, c, d)
		case "w1":
			results[p] = checkWindows(t, c, d, "w1", "k", func(r evRow) int64 { return r.k })
		case "w2", "c10":
			results[p] = checkWindows(t, c, d, p, "g", func(r evRow) int64 { return r.g })
		case "k11":
			results[p] = checkTopWindows(t, c, d)
		case "t3":
			results[p] = checkTop3(t, c, d, conn)
		case "v4":
			results[p] = checkBuckets(t, c, conn, "v4", d.expectV4())
		case "n8":
			results[p] = checkBuckets(t, c, conn, "n8", d.expectN8())
		case "j5", "j6", "j7":
			results[p] = checkJoins(t, d, conn, p)
		case "o9":
			results[p] = checkO9(t, d, conn)
		case "i12":
			results[p] = checkI12(t, c, d)
		case "d13":
			results[p] = checkD13(t, c, d)
		case "f14":
			results[p] = checkF14(t, c, d)
		case "r15":
			results[p] = checkR15(t, c, d)
		case "r16":
			results[p] = checkR16(t, c, d)
		}
	}
	results["errors streams empty"] = checkNoErrors(t, c, pipelines...)
	t.Logf("RESULT %s: %v (checked in %s)", t.Name(), results, time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		diagnoseGroups(t, c, pipelines)
	}
}

// diagnoseGroups logs, for a failed check, where each pipeline's first
// stage group is against the input's end.
func diagnoseGroups(t *testing.T, c *cluster, pipelines []string) {
	t.Helper()
	adm := kadm.NewClient(c.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListCommittedOffsets(ctx, c.topic(inputStream))
	if err != nil {
		t.Logf("diagnosis: %v", err)
		return
	}
	for _, p := range pipelines {
		group := fvsqltest.StageGroup(ctx, adm, c.prefix, p, "s0")
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Logf("diagnosis: group %s: %v", group, err)
			continue
		}
		var parts []string
		ends.Each(func(o kadm.ListedOffset) {
			at := int64(-1)
			if cm, ok := committed.Lookup(o.Topic, o.Partition); ok {
				at = cm.At
			}
			parts = append(parts, fmt.Sprintf("p%d %d/%d", o.Partition, at, o.Offset))
		})
		sort.Strings(parts)
		t.Logf("diagnosis: group %s committed/end: %s", group, strings.Join(parts, ", "))
	}
	diagnoseTransactions(t, c, adm, append([]string{inputStream}, pipelines...))
}

// diagnoseTransactions logs the transactions open in the streams'
// partitions and what their coordinators say of them.
func diagnoseTransactions(t *testing.T, c *cluster, adm *kadm.Client, streams []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var topics []string
	for _, s := range streams {
		topics = append(topics, c.topic(s))
	}
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{})
	if err != nil {
		t.Logf("diagnosis: describe producers: %v", err)
		return
	}
	pids := map[int64]bool{}
	for _, d := range described.SortedProducers() {
		if d.CurrentTxnStartOffset >= 0 && slices.Contains(topics, d.Topic) {
			t.Logf("diagnosis: open transaction in %s p%d: producer %d epoch %d from offset %d (coordinator epoch %d, last write %s)",
				d.Topic, d.Partition, d.ProducerID, d.ProducerEpoch, d.CurrentTxnStartOffset, d.CoordinatorEpoch, time.UnixMilli(d.LastTimestamp).Format("15:04:05.000"))
			pids[d.ProducerID] = true
		}
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Logf("diagnosis: list transactions: %v", err)
		return
	}
	var ids []string
	for id, l := range listed {
		if pids[l.ProducerID] || strings.HasPrefix(id, c.prefix) {
			ids = append(ids, id)
		}
	}
	txns, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		t.Logf("diagnosis: describe transactions: %v", err)
		return
	}
	for _, d := range txns.Sorted() {
		t.Logf("diagnosis: transactional id %s: producer %d epoch %d, %s, partitions %v (err %v)", d.TxnID, d.ProducerID, d.ProducerEpoch, d.State, d.Topics, d.Err)
	}
}

// functionDDL creates s1's user function dbl(x) = x * 2.
var functionDDL = "CREATE FUNCTION dbl(x BIGINT) RETURNS BIGINT LANGUAGE wasm AS decode('" +
	base64.StdEncoding.EncodeToString(wasmgen.Scale(2)) + "', 'base64') WITH (export = 'f')"

// createPipelines creates the input stream, s1's function and the named
// pipelines.
func createPipelines(t *testing.T, conn *pgx.Conn, pipelines ...string) {
	t.Helper()
	exec(t, conn, inputDDL)
	exec(t, conn, dimDDL)
	exec(t, conn, functionDDL)
	for _, p := range pipelines {
		exec(t, conn, ddlOf[p])
	}
}

// running waits until a server runs every named pipeline with some
// partitions (RUNNING).
func running(t *testing.T, conn *pgx.Conn, timeout time.Duration, pipelines ...string) {
	t.Helper()
	waitAllStats(t, conn, timeout, fmt.Sprintf("pipelines %v to run", pipelines), func(m map[string]pipelineStats) bool {
		for _, p := range pipelines {
			if s, ok := m[p]; !ok || s.Status != "RUNNING" {
				return false
			}
		}
		return true
	})
}

// windowRow decodes a windowed aggregate's output row: {keyCol,
// window_start, window_end, n, s, m}.
func windowRow(v []byte, keyCol string) (key winKey, end int64, a agg, err error) {
	m, err := jsonRow(v)
	if err == nil {
		key.key, err = intField(m, keyCol)
	}
	if err == nil {
		key.ws, err = tsField(m, "window_start")
	}
	if err == nil {
		end, err = tsField(m, "window_end")
	}
	if err == nil {
		a.n, err = intField(m, "n")
	}
	if err == nil {
		a.s, err = intField(m, "s")
	}
	if err == nil {
		a.m, err = intField(m, "m")
	}
	return key, end, a, err
}

// expectI12 is i12's rows by the definition: for each row a of v % 50
// = 4, each row b of a's key with a.ts ≤ b.ts ≤ a.ts + 300 ms (a
// itself too), and each c of that key with b.ts ≤ c.ts ≤ b.ts + 300 ms;
// every row of ev, the far-future ones too (an inner join's pairs come
// as their rows do, whatever the watermark). The key is (av, bv, cv),
// the value the row's k.
func (d *dataset) expectI12() map[[3]int64]int64 {
	byKey := map[int64][]evRow{}
	for _, r := range d.rows {
		byKey[r.k] = append(byKey[r.k], r)
	}
	want := map[[3]int64]int64{}
	for k, rows := range byKey {
		// a key's rows are in event-time order (production order): the
		// rows within the bound after row i are rows[lo:hi], from its
		// first tie
		after := func(i int) (lo, hi int) {
			lo, hi = i, i
			for lo > 0 && rows[lo-1].ts == rows[i].ts {
				lo--
			}
			for hi < len(rows) && rows[hi].ts <= rows[i].ts+i12Bound {
				hi++
			}
			return lo, hi
		}
		for i, a := range rows {
			if a.v%50 != 4 {
				continue
			}
			blo, bhi := after(i)
			for j := blo; j < bhi; j++ {
				clo, chi := after(j)
				for _, c := range rows[clo:chi] {
					want[[3]int64{a.v, rows[j].v, c.v}] = k
				}
			}
		}
	}
	return want
}

// checkI12 compares i12's committed rows with expectI12: each exactly
// once.
func checkI12(t *testing.T, c *cluster, d *dataset) bool {
	t.Helper()
	want := d.expectI12()
	recs := c.readCommitted(t, c.topic("i12"))
	p := newProblems(t, "i12")
	seen := map[[3]int64]int{}
	for _, r := range recs {
		m, err := jsonRow(r.Value)
		var row [3]int64
		var k int64
		if err == nil {
			k, err = intField(m, "k")
		}
		for i, f := range []string{"av", "bv", "cv"} {
			if err == nil {
				row[i], err = intField(m, f)
			}
		}
		if err != nil {
			p.add("undecodable", "%s %q: %v", where(r), r.Value, err)
			continue
		}
		wk, ok := want[row]
		if !ok || wk != k {
			p.add("unexpected row", "%s %s", where(r), r.Value)
			continue
		}
		if seen[row]++; seen[row] == 2 {
			p.add("duplicated row", "%s %s", where(r), r.Value)
		}
	}
	missing := 0
	for row, k := range want {
		if seen[row] == 0 {
			where := "" // finding the input row is slow: for the first few
			if missing++; missing <= 20 {
				where = " (input " + d.inputOf(row[0]) + ")"
			}
			p.add("missing row", "k=%d av=%d%s bv=%d cv=%d", k, row[0], where, row[1], row[2])
		}
	}
	t.Logf("i12: %d committed records, %d expected rows, %d missing: %s", len(recs), len(want), missing, p.summary())
	return p.ok()
}

// traceWindows, for a failed check, follows the rows of the given
// windows (their window_start text) through every topic of pipeline p
// (its internal topics, state topics and output): how many committed
// and how many uncommitted records of each topic name each window, and
// each stage group's committed offsets against its topics' ends, so a
// lost row shows the hop where it went.
func traceWindows(t *testing.T, c *cluster, p string, starts []string) {
	t.Helper()
	adm := kadm.NewClient(c.client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Logf("trace: %v", err)
		return
	}
	for _, name := range topics.Names() {
		if !strings.Contains(name, "."+p+".") && name != c.topic(p) {
			continue
		}
		for _, committed := range []bool{true, false} {
			recs := c.readTopic(t, name, committed)
			var found []string
			for _, r := range recs {
				for _, s := range starts {
					s = s[:min(len(s), 19)] // to the second: with a T or a space
					if bytes.Contains(r.Value, []byte(s)) || bytes.Contains(r.Value, []byte(strings.Replace(s, "T", " ", 1))) {
						found = append(found, fmt.Sprintf("p%d@%d %q", r.Partition, r.Offset, r.Value))
						break
					}
				}
			}
			if len(found) > 12 {
				found = append(found[:12], "…")
			}
			t.Logf("trace %s (committed %v): %d records, %d of the windows: %s", name, committed, len(recs), len(found), strings.Join(found, "; "))
		}
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Logf("trace: %v", err)
		return
	}
	for _, g := range groups.Groups() {
		if !strings.Contains(g, "."+p+".") {
			continue
		}
		offs, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Logf("trace: group %s: %v", g, err)
			continue
		}
		var parts []string
		offs.Each(func(o kadm.OffsetResponse) {
			parts = append(parts, fmt.Sprintf("%s[%d]=%d", o.Topic, o.Partition, o.At))
		})
		sort.Strings(parts)
		t.Logf("trace: group %s committed: %s", g, strings.Join(parts, " "))
	}
}
