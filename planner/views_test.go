package planner_test

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

var viewSeed = flag.Int64("view-seed", 19, "seed of TestViewDifferential")
var viewCases = flag.Int("view-cases", 2000, "cases of TestViewDifferential")

// TestViewDifferential: random materialized views over a three-partition
// stream (GROUP BY columns and expressions, by position and alias, keys
// left out of the select list, aggregates with FILTER and DISTINCT,
// HAVING, SELECT DISTINCT, ROW_NUMBER() top-N with and without its number
// or partition key, ORDER BY … LIMIT, filtered rows) are planned as the server plans them, and their
// topologies run here in memory: every stage's steps built as the engine
// builds them, rows spread over the input partitions in random batches,
// re-keyed between stages by the output key, state checkpointed and, at
// random, the operators rebuilt from their state between rounds. After
// each of three rounds of input the view (its change rows applied by key,
// hidden columns dropped) must equal the view's own SELECT run bounded
// over the same rows. A failure prints the case's number and seed, the
// query, and the rows.
//
//	go test ./planner -run TestViewDifferential -view-seed 19 -view-cases 3000
func TestViewDifferential(t *testing.T) {
	cases := *viewCases
	if testing.Short() {
		cases /= 10
	}
	db := newTestDB(t)
	r := dvStream(t, db)
	for n := 0; n < cases; n++ {
		seed := *viewSeed*1_000_003 + int64(n)
		rng := rand.New(rand.NewSource(seed))
		q := genView(rng)
		text := "CREATE MATERIALIZED VIEW vd AS " + q
		c, err := db.plan(text)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, text, err)
		}
		p := newMemPipeline(c, r)
		db.rows["dv"] = nil
		in := &dvInput{offsets: make([]int64, r.Partitions)}
		for round := 0; round < 3; round++ {
			rows := in.round(rng)
			db.rows["dv"] = append(db.rows["dv"], rows...)
			if err := p.feed(rng, rows, nil); err != nil {
				t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, q, round, err)
			}
			if err := p.checkpoint(rng); err != nil {
				t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
			}
			want, err := db.query(t, q)
			if err != nil {
				t.Fatalf("case %d (seed %d): bounded %s: %v", n, seed, q, err)
			}
			if got := p.contents(); sortedLines(got) != sortedLines(want) {
				t.Fatalf("case %d (seed %d), round %d:\n%s\nview:\n%s\nbounded SELECT:\n%s\nrows (k, id, v, w):\n%s",
					n, seed, round, text, got, sortedLines(want), rowLines(db.rows["dv"]))
			}
		}
	}
}

func rowLines(rows []types.Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %v\n", r)
	}
	return b.String()
}

// dvStream registers the stream the view differentials read, dv (k text,
// id, v, w int8) over three partitions.
func dvStream(t *testing.T, db *testDB) *catalog.Relation {
	t.Helper()
	r := &catalog.Relation{Name: "dv", Kind: catalog.Stream, Topic: "dv", Format: "json", Partitions: 3,
		Columns: []catalog.Column{{Name: "k", Type: types.Text}, {Name: "id", Type: types.Int8}, {Name: "v", Type: types.Int8}, {Name: "w", Type: types.Int8}}}
	b, err := catalog.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.cat.Apply(200, r.Name, b); err != nil {
		t.Fatal(err)
	}
	return r
}

// plan plans CREATE … AS text as the server does.
func (db *testDB) plan(text string) (*planner.Continuous, error) {
	stmts, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	return planner.PlanContinuous(db.cat, stmts[0].Stmt.(*sql.CreateAs))
}

// dvInput makes dv's input, round by round: ids go on, and each row gets
// the next offset of a random partition.
type dvInput struct {
	id      int64
	offsets []int64
}

// round is 5 to 29 rows as a read gives them: the columns, then _key,
// _partition, _offset, _timestamp.
func (in *dvInput) round(rng *rand.Rand) []types.Row {
	var rows []types.Row
	for i := 5 + rng.Intn(25); i > 0; i-- {
		in.id++
		part := rng.Intn(len(in.offsets))
		in.offsets[part]++
		rows = append(rows, append(genViewRow(rng, in.id), types.NullValue, types.NewInt(types.Int4, int64(part)), types.NewInt8(in.offsets[part]), types.NullValue))
	}
	return rows
}

func genViewRow(rng *rand.Rand, id int64) types.Row {
	ks := []string{"a", "b", "c", ""}
	k := types.NewText(ks[rng.Intn(len(ks))])
	if k.Text() == "" {
		k = types.NullValue
	}
	v := types.NullValue
	if rng.Intn(5) > 0 {
		v = types.NewInt8(int64(rng.Intn(10)))
	}
	return types.Row{k, types.NewInt8(id), v, types.NewInt8(int64(rng.Intn(7) - 3))}
}

func pick(rng *rand.Rand, xs ...string) string { return xs[rng.Intn(len(xs))] }

// genView makes one view's SELECT: an aggregation, a DISTINCT or a top-N.
func genView(rng *rand.Rand) string {
	where := ""
	if rng.Intn(3) == 0 {
		where = " WHERE " + pick(rng, "v > 2", "w <> 0", "k IS NOT NULL", "v IS NULL OR w > 0", "k <> 'b'")
	}
	if rng.Intn(10) == 0 { // DISTINCT ON: the first row per key, ties broken by id
		keys := pick(rng, "k", "w > 0", "k, v % 2", "v")
		return fmt.Sprintf("SELECT DISTINCT ON (%s) %s FROM dv%s ORDER BY %s, %s",
			keys, pick(rng, "k, v, id", "*", "id, k AS kk", "v, w > 0 AS p, id"), where, keys, pick(rng, "v DESC, id", "id", "w NULLS FIRST, id DESC", "v * w, id"))
	}
	switch rng.Intn(7) {
	case 2: // a view of rows, no aggregation
		var items []string
		for i := 1 + rng.Intn(3); i > 0; i-- {
			items = append(items, fmt.Sprintf("%s AS r%d", pick(rng, "k", "v", "id", "w * 2", "coalesce(k, 'none') || v", "v > w"), len(items)))
		}
		return "SELECT " + strings.Join(items, ", ") + " FROM dv" + where
	case 3: // ORDER BY … LIMIT
		items := pick(rng, "*", "id, v", "k, w AS ww", "v + w AS s, id")
		q := fmt.Sprintf("SELECT %s FROM dv%s ORDER BY %s LIMIT %d", items, where, pick(rng, "v DESC, id", "w, id DESC", "id", "k NULLS FIRST, id", "v * w DESC, id", "abs(w - 1), id", "coalesce(v, 0) + w, id DESC"), 1+rng.Intn(4))
		if rng.Intn(3) == 0 {
			q += fmt.Sprintf(" OFFSET %d", rng.Intn(4))
		}
		return q
	case 0:
		var items []string
		for i := 1 + rng.Intn(2); i > 0; i-- {
			items = append(items, fmt.Sprintf("%s AS d%d", pick(rng, "k", "v", "v % 3", "w > 0", "coalesce(k, 'none')", "abs(w)", "v / 4"), len(items)))
		}
		return "SELECT DISTINCT " + strings.Join(items, ", ") + " FROM dv" + where
	case 1:
		part := pick(rng, "", "PARTITION BY k ", "PARTITION BY w ", "PARTITION BY w % 2 ", "PARTITION BY coalesce(k, 'z'), w > 0 ")
		order := pick(rng, "v DESC, id", "w, id DESC", "id", "_offset DESC, _partition", "v * w DESC NULLS LAST, id", "abs(w), id DESC")
		var items []string
		for _, c := range []string{"k", "id", "v", "w", "_offset"} {
			if rng.Intn(2) == 0 {
				items = append(items, c)
			}
		}
		if len(items) == 0 || rng.Intn(3) == 0 {
			items = append(items, "rn")
		}
		bound := fmt.Sprintf("rn <= %d", 1+rng.Intn(3))
		if rng.Intn(3) == 0 { // a range of ranks
			bound = pick(rng, "rn BETWEEN 2 AND 3", "rn > 1 AND rn <= 4", "2 < rn AND rn < 5", "rn = 2")
		}
		return fmt.Sprintf("SELECT %s FROM (SELECT k, id, v, w, _offset, _partition, ROW_NUMBER() OVER (%sORDER BY %s) AS rn FROM dv%s) t WHERE %s",
			strings.Join(items, ", "), part, order, where, bound)
	}
	keyExprs := []string{"k", "v", "v % 3", "w > 0", "coalesce(k, 'none')", "abs(w)", "v / 4", "lower(k) || 'x'"}
	var items, groups, keys []string
	used := map[string]bool{}
	for i := rng.Intn(3); i > 0; i-- {
		e := pick(rng, keyExprs...)
		if used[e] {
			continue
		}
		used[e] = true
		keys = append(keys, e)
		alias := fmt.Sprintf("g%d", len(groups))
		switch {
		case rng.Intn(4) == 0: // not selected: a hidden key column
			groups = append(groups, e)
		default:
			items = append(items, e+" AS "+alias)
			switch rng.Intn(3) {
			case 0:
				groups = append(groups, fmt.Sprint(len(items)))
			case 1:
				groups = append(groups, alias)
			default:
				groups = append(groups, e)
			}
		}
	}
	aggs := []string{"count(*)", "sum(v)", "min(w)", "max(v)", "count(DISTINCT v)", "count(*) FILTER (WHERE w > 0)",
		"sum(w) FILTER (WHERE k = 'a')", "avg(w)", "max(k)", "bool_or(w > 2)", "max(_offset)", "count(DISTINCT _partition)",
		"string_agg(k, ',' ORDER BY id)", "array_agg(v ORDER BY id DESC)", "string_agg(DISTINCT k, '-' ORDER BY k)",
		"stddev(v)", "var_pop(w)", "variance(DISTINCT v)", "stddev_pop(w) FILTER (WHERE v > 1)",
		"percentile_cont(0.5) WITHIN GROUP (ORDER BY v)", "percentile_disc(0.3) WITHIN GROUP (ORDER BY w DESC)",
		"mode() WITHIN GROUP (ORDER BY k)", "percentile_cont(0.75) WITHIN GROUP (ORDER BY w) FILTER (WHERE k <> 'a')",
		"percentile_cont(ARRAY[0.25, 0.5]) WITHIN GROUP (ORDER BY v)", "percentile_disc(ARRAY[0.9, NULL, 0]) WITHIN GROUP (ORDER BY w DESC)",
		"round(corr(v, w)::numeric, 8)", "regr_count(w, id)", "round(regr_slope(v, id)::numeric, 8)",
		"round(CAST(covar_samp(w, v) FILTER (WHERE k <> 'b') AS numeric), 8)", "round(regr_intercept(DISTINCT v, w)::numeric, 8)"}
	for i := 1 + rng.Intn(3); i > 0; i-- {
		items = append(items, fmt.Sprintf("%s AS a%d", pick(rng, aggs...), i))
	}
	q := "SELECT " + strings.Join(items, ", ") + " FROM dv" + where
	if len(groups) > 0 {
		q += " GROUP BY " + strings.Join(groups, ", ")
	}
	if rng.Intn(2) == 0 {
		q += " HAVING " + pick(rng, fmt.Sprintf("count(*) > %d", rng.Intn(4)), fmt.Sprintf("sum(v) < %d", 5+rng.Intn(20)),
			"max(v) - min(w) >= 5", fmt.Sprintf("count(DISTINCT v) = %d", 1+rng.Intn(3)), "avg(w) > 0", "min(k) = 'a' OR count(*) = 2")
	}
	if rng.Intn(3) == 0 { // ORDER BY … LIMIT, by terms in the select list or not, then every key
		order := []string{pick(rng, "count(*) DESC", "sum(w)", "max(id) DESC", "min(k) NULLS FIRST", "a1", "1 DESC", "avg(v) + count(*)")}
		order = append(order, keys...)
		q += fmt.Sprintf(" ORDER BY %s LIMIT %d", strings.Join(order, ", "), 1+rng.Intn(3))
	}
	return q
}

// memPipeline runs a continuous query's topology in memory, as the
// engine's workers run it over Kafka: one operator chain per stage and
// input partition, re-keyed between stages by the output key, a view's
// change rows applied to its contents by key.
type memPipeline struct {
	c      *planner.Continuous
	in     *catalog.Relation
	chains map[string]*memChain // by stage and partition
	offset int64
	view   map[string]types.Row
	types  []types.Type // the view's column types
	err    error
	// table, when set, takes the records the view's table gets (a nil
	// row: a tombstone), as a view reading this one would read them.
	table func(key []byte, row types.Row)
	// started: the seed markers were delivered (start)
	started bool
	// clock, when set, is the operators' wall clock (temporal filters)
	clock func() int64
}

type memChain struct {
	chain *operators.Chain
	state []operators.Stateful
	kvs   []*operators.MemKV
	// ticked are the chain's Tickers and their step indices
	ticked []int
	ops    []operators.Operator
}

// tick gives every chain's Tickers the clock's tick, as the engine does
// at each epoch's end.
func (p *memPipeline) tick() error {
	for _, ch := range p.chains {
		for _, i := range ch.ticked {
			if err := ch.ops[i].(operators.Ticker).OnTick(ch.chain.EmitOf(i)); err != nil {
				return err
			}
		}
	}
	return p.err
}

// buildChain builds a stage's operators, binding the stateful ones to
// kvs (fresh ones when kvs is nil), as a partition's start or restart
// does.
func (p *memPipeline) buildChain(st *plan.Stage, ch *memChain, kvs []*operators.MemKV) error {
	ch.state, ch.ticked, ch.ops = nil, nil, nil
	fresh := kvs == nil
	for i := range st.Steps {
		op, err := engine.BuildStep(&st.Steps[i], &expr.Env{}, operators.AbortOnError, &operators.Resources{Ctx: context.Background(), Clock: p.clock})
		if err != nil {
			return err
		}
		engine.AskBefore(st, i, op)
		if s, ok := op.(operators.Stateful); ok {
			if fresh {
				kvs = append(kvs, operators.NewMemKV())
			}
			s.Bind(kvs[len(ch.state)])
			ch.state = append(ch.state, s)
		}
		if _, ok := op.(operators.Ticker); ok {
			ch.ticked = append(ch.ticked, i)
		}
		ch.ops = append(ch.ops, op)
	}
	ch.kvs = kvs
	ch.chain = operators.NewChain(func(b *operators.Batch) error { return p.emit(st, b) }, ch.ops...)
	return nil
}

func newMemPipeline(c *planner.Continuous, in *catalog.Relation) *memPipeline {
	p := &memPipeline{c: c, in: in, chains: map[string]*memChain{}, view: map[string]types.Row{}}
	for _, col := range c.Rel.Columns {
		p.types = append(p.types, col.Type)
	}
	return p
}

// feed pushes read rows to the partitions their _partition names, in
// random batches; ops, when set, are the rows' changes (a view's table
// read: tombstones are deletes).
func (p *memPipeline) feed(rng *rand.Rand, rows []types.Row, ops []operators.Op) error {
	return p.feedStream(rng, p.in, rows, ops)
}

// feedStream is feed for the input stream in (one of a join's).
func (p *memPipeline) feedStream(rng *rand.Rand, in *catalog.Relation, rows []types.Row, ops []operators.Op) error {
	byPart := make([][]types.Row, in.Partitions)
	opsOf := make([][]operators.Op, in.Partitions)
	for i, r := range rows {
		part := r[len(in.Columns)+1].I
		byPart[part] = append(byPart[part], r)
		if ops != nil {
			opsOf[part] = append(opsOf[part], ops[i])
		}
	}
	for {
		live := 0
		for part := range byPart {
			if len(byPart[part]) == 0 {
				continue
			}
			live++
			n := min(len(byPart[part]), 1+rng.Intn(6))
			b := &operators.Batch{Rows: byPart[part][:n]}
			if ops != nil {
				b.Ops, opsOf[part] = opsOf[part][:n], opsOf[part][n:]
			}
			if err := p.push(in.Name, int32(part), b); err != nil {
				return err
			}
			byPart[part] = byPart[part][n:]
		}
		if live == 0 {
			return p.err
		}
	}
}

// start delivers the seed marker the engine's start of a pipeline writes
// (engine.Engine.seed), before any row: to partition 0 of each stage that
// gets one (plan.Topology.Seeded), whose aggregate without GROUP BY
// emits its group over no rows.
func (p *memPipeline) start() error {
	if p.started {
		return nil
	}
	p.started = true
	for i := range p.c.Topology.Stages {
		st := &p.c.Topology.Stages[i]
		if !p.c.Topology.Seeded(st) {
			continue
		}
		at := slices.IndexFunc(st.Steps, func(s plan.Step) bool { return s.Seeds() })
		ch, err := p.chainOf(st, 0)
		if err != nil {
			return err
		}
		k := 0 // the operator's place among the chain's stateful ones
		for _, s := range st.Steps[:at] {
			if !s.Stateless() {
				k++
			}
		}
		if err := ch.state[k].(operators.Seeder).Seed(ch.chain.EmitOf(at)); err != nil {
			return err
		}
	}
	return p.err
}

// push runs a batch through every stage reading stream on partition part.
func (p *memPipeline) push(stream string, part int32, b *operators.Batch) error {
	if err := p.start(); err != nil {
		return err
	}
	for i := range p.c.Topology.Stages {
		st := &p.c.Topology.Stages[i]
		for _, in := range st.Inputs {
			if in != stream {
				continue
			}
			ch, err := p.chainOf(st, part)
			if err != nil {
				return err
			}
			if err := ch.chain.Push(b); err != nil {
				return err
			}
		}
	}
	return p.err
}

func (p *memPipeline) chainOf(st *plan.Stage, part int32) (*memChain, error) {
	id := fmt.Sprintf("%s/%d", st.Name, part)
	if ch, ok := p.chains[id]; ok {
		return ch, nil
	}
	ch := &memChain{}
	if err := p.buildChain(st, ch, nil); err != nil {
		return nil, err
	}
	p.chains[id] = ch
	return ch, nil
}

// emit takes a stage's output: into the next stage, re-keyed, or into
// the view.
func (p *memPipeline) emit(st *plan.Stage, b *operators.Batch) error {
	if ch := st.Changes; ch != nil && ch.Table != p.c.Rel.Topic {
		return p.emitTable(st, b)
	}
	if ch := st.Changes; ch != nil {
		for i, row := range b.Rows {
			key := string(engine.TableKey(nil, row, ch.Key, p.types))
			op := changeOf(ch, b, i)
			if op == operators.OpUpdateBefore {
				// the changes stream's old row of the update that follows:
				// what the view holds under the key
				held, ok := p.view[key]
				switch {
				case !ch.Before:
					p.err = fmt.Errorf("an update_before from a stage not asked for them: %v", row)
				case !ok || fmt.Sprint(held) != fmt.Sprint(row):
					p.err = fmt.Errorf("an update_before of %v, but the view holds %v under its key", row, held)
				case i+1 == len(b.Rows) || changeOf(ch, b, i+1) != operators.OpUpdate || string(engine.TableKey(nil, b.Rows[i+1], ch.Key, p.types)) != key:
					p.err = fmt.Errorf("an update_before of %v not followed by the update of its key", row)
				}
				continue
			}
			if op == operators.OpUpdate && ch.Before && (i == 0 || changeOf(ch, b, i-1) != operators.OpUpdateBefore) {
				p.err = fmt.Errorf("an update of %v without its update_before", row)
			}
			if p.table != nil {
				var r types.Row
				if op != operators.OpDelete {
					r = types.CloneRow(row[:len(p.types)])
				}
				p.table([]byte(key), r)
			}
			if op == operators.OpDelete {
				if _, ok := p.view[key]; !ok {
					p.err = fmt.Errorf("a delete of a row the view does not hold: %v", row)
				}
				delete(p.view, key)
				continue
			}
			if _, ok := p.view[key]; ok != (op == operators.OpUpdate) {
				p.err = fmt.Errorf("an %s of %v, but the view holding its key is %v", op, row, ok)
			}
			p.view[key] = types.CloneRow(row)
		}
		return nil
	}
	var out *plan.Stream
	for i := range p.c.Topology.Internal {
		if p.c.Topology.Internal[i].Name == st.Output {
			out = &p.c.Topology.Internal[i]
		}
	}
	if out == nil {
		return fmt.Errorf("stage %s writes %s, neither a view nor an internal stream", st.Name, st.Output)
	}
	key := st.OutputKey
	if len(key) == 0 {
		key = out.Key
	}
	byPart := map[int32][]types.Row{}
	for _, row := range b.Rows {
		part := keyPart(engine.TableKey(nil, row, key, out.Types), out.Partitions)
		r := append(types.Row(nil), row[:len(out.Columns)]...)
		if out.Meta {
			p.offset++
			r = append(r, types.NullValue, types.NewInt(types.Int4, int64(part)), types.NewInt8(p.offset), types.NullValue)
		}
		byPart[part] = append(byPart[part], r)
	}
	for part, rows := range byPart {
		if err := p.push(out.Name, part, &operators.Batch{Rows: rows}); err != nil {
			return err
		}
	}
	return nil
}

// emitTable takes the changes of a hidden view (a subquery's) into its
// internal table: upserts and tombstones spread over the table's
// partitions by key, to the stages reading it.
func (p *memPipeline) emitTable(st *plan.Stage, b *operators.Batch) error {
	ch := st.Changes
	var out *plan.Stream
	for i := range p.c.Topology.Internal {
		if d := &p.c.Topology.Internal[i]; d.Topic == ch.Table && d.Upsert {
			out = d
		}
	}
	if out == nil {
		return fmt.Errorf("stage %s writes the table %s, neither the view's nor an internal one", st.Name, ch.Table)
	}
	byPart := map[int32]*operators.Batch{}
	var parts []int32
	for i, row := range b.Rows {
		key := engine.TableKey(nil, row, ch.Key, out.Types)
		part := keyPart(key, out.Partitions)
		p.offset++
		var value types.Row
		switch changeOf(ch, b, i) {
		case operators.OpUpdateBefore:
			if !ch.Before {
				return fmt.Errorf("stage %s, not asked for them, emits update_before rows: %v", st.Name, row)
			}
			continue // the changes stream's alone (an EMIT CHANGES stream's)
		case operators.OpDelete:
		default:
			value = types.CloneRow(row[:len(out.Columns)])
		}
		rec, op := tableRecord(len(out.Columns), key, value, part, p.offset)
		if byPart[part] == nil {
			byPart[part] = &operators.Batch{}
			parts = append(parts, part)
		}
		byPart[part].Rows = append(byPart[part].Rows, rec)
		byPart[part].Ops = append(byPart[part].Ops, op)
	}
	for _, part := range parts {
		if err := p.push(out.Name, part, byPart[part]); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint writes every operator's state to its KV and, at random,
// rebuilds operators from it, as a restart would.
func (p *memPipeline) checkpoint(rng *rand.Rand) error {
	restart := rng.Intn(3) == 0
	for id, ch := range p.chains {
		for _, s := range ch.state {
			if err := s.OnCheckpoint(); err != nil {
				return err
			}
		}
		if !restart || len(ch.state) == 0 {
			continue
		}
		stage, _, _ := strings.Cut(id, "/")
		var st *plan.Stage
		for i := range p.c.Topology.Stages {
			if p.c.Topology.Stages[i].Name == stage {
				st = &p.c.Topology.Stages[i]
			}
		}
		if err := p.buildChain(st, ch, ch.kvs); err != nil {
			return err
		}
	}
	return nil
}

// contents are the view's visible columns, one sorted line per row, as
// the bounded query's are printed.
func (p *memPipeline) contents() string {
	if err := p.start(); err != nil && p.err == nil {
		p.err = err
	}
	var lines []string
	for _, row := range p.view {
		var cells []string
		for i, col := range p.c.Rel.Columns {
			if !col.Hidden {
				cells = append(cells, row[i].String())
			}
		}
		lines = append(lines, strings.Join(cells, " | "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestViewOverViewDifferential: a random view (as TestViewDifferential
// makes them) over the stream, and a random view over that view: its rows
// filtered and projected, grouped with count, sum and avg (FILTER, WHERE,
// HAVING, computed keys), or made DISTINCT. Both topologies run in memory;
// the second reads the first's table records (upserts and tombstones, by
// their keys' partitions, in order). After each round the second view
// must equal its SELECT run bounded over the first view's rows.
//
//	go test ./planner -run TestViewOverViewDifferential -view-seed 19 -view-cases 3000
func TestViewOverViewDifferential(t *testing.T) {
	cases := *viewCases / 2
	if testing.Short() {
		cases /= 10
	}
	viewsOverViews(t, cases, 2_000_003, genView, genViewOver)
}

// viewsOverViews runs cases of a view over a view, seeded from
// -view-seed times mul: gen1 makes the first view's SELECT over the
// stream dv, gen2 the second's over the first's columns. Both topologies
// run in memory; the second reads the first's table records (upserts and
// tombstones, by their keys' partitions, in order). After each of three
// rounds of input the second view must equal its SELECT run bounded over
// the first view's rows.
func viewsOverViews(t *testing.T, cases int, mul int64, gen1 func(*rand.Rand) string, gen2 func(*rand.Rand, []catalog.Column) string) {
	t.Helper()
	db := newTestDB(t)
	r := dvStream(t, db)
	for n := 0; n < cases; n++ {
		seed := *viewSeed*mul + int64(n)
		rng := rand.New(rand.NewSource(seed))
		q1 := gen1(rng)
		c1, err := db.plan("CREATE MATERIALIZED VIEW vd AS " + q1)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, q1, err)
		}
		view := *c1.Rel
		view.OID = 0
		vb, err := catalog.Encode(&view)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.cat.Apply(int64(300+2*n), view.Name, vb); err != nil {
			t.Fatal(err)
		}
		q2 := gen2(rng, view.Columns)
		text := "CREATE MATERIALIZED VIEW vv AS " + q2
		c2, err := db.plan(text)
		if err != nil {
			t.Fatalf("case %d (seed %d): over %s\n%s\nrefused: %v", n, seed, q1, text, err)
		}
		p1, p2 := newMemPipeline(c1, r), newMemPipeline(c2, &view)
		log := logTable(p1, &view)
		db.rows["dv"] = nil
		in := &dvInput{offsets: make([]int64, r.Partitions)}
		fed := 0
		for round := 0; round < 3; round++ {
			rows := in.round(rng)
			db.rows["dv"] = append(db.rows["dv"], rows...)
			log.recs, log.ops = nil, nil
			if err := p1.feed(rng, rows, nil); err != nil {
				t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, q1, round, err)
			}
			fed += len(log.recs)
			if err := p2.feed(rng, log.recs, log.ops); err != nil {
				t.Fatalf("case %d (seed %d): %s\nover %s\nround %d: %v", n, seed, q2, q1, round, err)
			}
			for _, p := range []*memPipeline{p1, p2} {
				if err := p.checkpoint(rng); err != nil {
					t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
				}
			}
			db.rows["vd"] = nil
			for _, row := range p1.view {
				db.rows["vd"] = append(db.rows["vd"], row[:len(view.Columns)])
			}
			want, err := db.query(t, q2)
			if err != nil {
				t.Fatalf("case %d (seed %d): bounded %s: %v", n, seed, q2, err)
			}
			got := p2.contents()
			if fed == 0 && got == "" && !strings.Contains(want, "\n") {
				// Not yet: an aggregate without GROUP BY shows its row
				// once its first input row comes (README).
				continue
			}
			if sortedLines(got) != sortedLines(want) {
				t.Fatalf("case %d (seed %d), round %d:\n%s\nover %s\nview:\n%s\nbounded SELECT:\n%s\nthe first view's rows:\n%s",
					n, seed, round, text, q1, got, sortedLines(want), rowLines(db.rows["vd"]))
			}
		}
		if _, err := db.cat.Apply(int64(301+2*n), view.Name, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// tableLog is what a view's pipeline writes to its table, as the records
// a reader of the view gets: [columns…, _key, _partition, _offset,
// _timestamp], a tombstone's columns NULL, with each record's change.
type tableLog struct {
	recs []types.Row
	ops  []operators.Op
}

// logTable makes p log the records of its table (the view's) into the
// returned log, spread over the view's partitions by key.
func logTable(p *memPipeline, view *catalog.Relation) *tableLog {
	log := &tableLog{}
	offsets := make([]int64, view.Partitions)
	p.table = func(key []byte, row types.Row) {
		part := keyPart(key, view.Partitions)
		offsets[part]++
		rec, op := tableRecord(len(view.Columns), key, row, part, offsets[part])
		log.recs = append(log.recs, rec)
		log.ops = append(log.ops, op)
	}
	return log
}

// changeOf is the change row i of a batch a view's stage writes is, as
// the engine's worker reads it: the batch's op, or a delete for a -1 row.
func changeOf(ch *plan.ChangesOutput, b *operators.Batch, i int) operators.Op {
	op := operators.OpInsert
	if b.Ops != nil {
		op = b.Ops[i]
	}
	if ch.Sign != 0 && b.Rows[i][ch.Sign].I < 0 {
		op = operators.OpDelete
	}
	return op
}

// keyPart is the partition of n that a record key goes to.
func keyPart(key []byte, n int) int32 {
	h := fnv.New32a()
	h.Write(key)
	return int32(h.Sum32() % uint32(n))
}

// tableRecord is a table record as a reader of the table gets it, the
// row (all NULL for a tombstone, row nil) then _key, _partition, _offset
// and _timestamp, with its change: an upsert or a delete.
func tableRecord(width int, key []byte, row types.Row, part int32, offset int64) (types.Row, operators.Op) {
	op := operators.OpInsert
	if row == nil {
		op = operators.OpDelete
		row = make(types.Row, width)
		for i := range row {
			row[i] = types.NullValue
		}
	}
	return append(row, types.Value{K: types.Bytea, S: string(key)}, types.NewInt(types.Int4, int64(part)), types.NewInt8(offset), types.NullValue), op
}

// genViewOver makes the SELECT of a view over a view with these columns:
// its rows, a DISTINCT, or an aggregation that can take rows back out.
func genViewOver(rng *rand.Rand, cols []catalog.Column) string {
	// Numeric values equal in value but not in scale (2.0 and 2.00) are
	// one group, shown as whichever came first, in the view as in the
	// bounded SELECT: the terms grouped on are not numeric.
	var all, nums, ints, terms []string
	for _, c := range cols {
		if c.Hidden {
			continue
		}
		all = append(all, c.Name)
		if c.Type.IsInteger() {
			ints = append(ints, c.Name)
		}
		if c.Type.IsInteger() || c.Type == types.Numeric {
			nums = append(nums, c.Name)
			terms = append(terms, c.Name+" > 1")
		}
		if c.Type.IsInteger() {
			terms = append(terms, c.Name+" % 3")
		}
		if c.Type != types.Numeric {
			terms = append(terms, c.Name)
		}
	}
	if len(terms) == 0 {
		terms = []string{"1"}
	}
	where := ""
	if rng.Intn(3) == 0 {
		conds := []string{all[rng.Intn(len(all))] + " IS NOT NULL"}
		for _, c := range nums {
			conds = append(conds, c+" > 1", c+" <= 2")
		}
		where = " WHERE " + pick(rng, conds...)
	}
	numeric := false
	for _, c := range cols {
		numeric = numeric || (!c.Hidden && c.Type == types.Numeric)
	}
	if !numeric && rng.Intn(5) == 0 {
		// A top-N, ordered by every column so that only equal rows tie
		// (numerics equal in value but not in scale would tie unseen).
		order := append([]string(nil), all...)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for i := range order {
			order[i] += pick(rng, "", " DESC", " NULLS FIRST", " DESC NULLS LAST")
		}
		n := 1 + rng.Intn(4)
		if rng.Intn(2) == 0 || len(all) < 2 {
			return fmt.Sprintf("SELECT %s FROM vd%s ORDER BY %s LIMIT %d", strings.Join(all[:1+rng.Intn(len(all))], ", "), where, strings.Join(order, ", "), n)
		}
		part := order[0][:strings.IndexByte(order[0]+" ", ' ')]
		return fmt.Sprintf("SELECT * FROM (SELECT %s, %s() OVER (PARTITION BY %s ORDER BY %s) AS rnk FROM vd%s) t WHERE rnk <= %d",
			strings.Join(all, ", "), pick(rng, "ROW_NUMBER", "RANK", "DENSE_RANK"), part, strings.Join(order[1:], ", "), where, n)
	}
	switch rng.Intn(4) {
	case 0: // its rows
		var items []string
		for i := 1 + rng.Intn(3); i > 0; i-- {
			items = append(items, fmt.Sprintf("%s AS r%d", pick(rng, append(terms, nums...)...), len(items)))
		}
		return "SELECT " + strings.Join(items, ", ") + " FROM vd" + where
	case 1:
		var items []string
		for i := 1 + rng.Intn(2); i > 0; i-- {
			items = append(items, fmt.Sprintf("%s AS d%d", pick(rng, terms...), len(items)))
		}
		return "SELECT DISTINCT " + strings.Join(items, ", ") + " FROM vd" + where
	}
	var items, groups, keys []string
	used := map[string]bool{}
	for i := rng.Intn(3); i > 0; i-- {
		e := pick(rng, terms...)
		if used[e] {
			continue
		}
		used[e] = true
		if strings.IndexFunc(e, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0 {
			keys = append(keys, "vd."+e) // the input's column, not an output column of its name
		} else {
			keys = append(keys, e)
		}
		if rng.Intn(4) == 0 {
			groups = append(groups, e) // not selected
			continue
		}
		items = append(items, fmt.Sprintf("%s AS g%d", e, len(items)))
		groups = append(groups, fmt.Sprint(len(items)))
	}
	aggs := []string{"count(*)"}
	for _, c := range all {
		aggs = append(aggs, "count("+c+")")
	}
	for i, c := range ints {
		// Over signed rows the sums run in another order: rounded, and
		// of integers, whose float sums are exact (a line of equal
		// inexact values may have a variance of 0 or of 1e-17, and a
		// correlation of NULL or of anything, depending on the order).
		y := ints[(i+1)%len(ints)]
		aggs = append(aggs, "round(corr("+y+", "+c+")::numeric, 8)", "regr_count("+c+", "+y+")", "round(regr_r2("+y+", "+c+")::numeric, 8)",
			"round(covar_pop("+c+", "+y+")::numeric, 8)", "round(regr_avgx("+y+", "+c+")::numeric, 8)")
	}
	for _, c := range nums {
		aggs = append(aggs, "sum("+c+")", "avg("+c+")", "count(*) FILTER (WHERE "+c+" > 1)", "sum("+c+") FILTER (WHERE "+c+" < 3)",
			"stddev("+c+")", "var_pop("+c+")")
	}
	for _, c := range cols { // those that keep the group's values (not over numerics: see above)
		if !c.Hidden && c.Type != types.Numeric {
			aggs = append(aggs, "min("+c.Name+")", "max("+c.Name+")", "count(DISTINCT "+c.Name+")")
		}
		if !c.Hidden && c.Type.IsInteger() {
			aggs = append(aggs, "sum(DISTINCT "+c.Name+")", "bool_or("+c.Name+" > 1)", "max("+c.Name+") FILTER (WHERE "+c.Name+" < 3)",
				"percentile_cont(0.5) WITHIN GROUP (ORDER BY "+c.Name+")", "mode() WITHIN GROUP (ORDER BY "+c.Name+" DESC)",
				"percentile_disc(ARRAY[0.5, 0.1]) WITHIN GROUP (ORDER BY "+c.Name+")")
		}
		if !c.Hidden && c.Type != types.Numeric { // in an order that ties only rows of equal values
			aggs = append(aggs, "string_agg("+c.Name+"::text, ',' ORDER BY "+strings.Join(all, " DESC, ")+" DESC)")
			if !c.Type.IsArray() {
				aggs = append(aggs, "array_agg("+c.Name+" ORDER BY "+strings.Join(all, ", ")+")")
			}
		}
	}
	for i := 1 + rng.Intn(3); i > 0; i-- {
		items = append(items, fmt.Sprintf("%s AS a%d", pick(rng, aggs...), i))
	}
	q := "SELECT " + strings.Join(items, ", ") + " FROM vd" + where
	if len(groups) > 0 {
		q += " GROUP BY " + strings.Join(groups, ", ")
	}
	if rng.Intn(2) == 0 {
		having := []string{fmt.Sprintf("count(*) > %d", rng.Intn(3))}
		for _, c := range nums {
			having = append(having, fmt.Sprintf("sum(%s) < %d", c, 3+rng.Intn(10)))
		}
		q += " HAVING " + pick(rng, having...)
	}
	if rng.Intn(3) == 0 { // ORDER BY … LIMIT, by an aggregate in the select list or not, then every key
		order := append([]string{pick(rng, aggs...) + pick(rng, "", " DESC")}, keys...)
		q += fmt.Sprintf(" ORDER BY %s LIMIT %d", strings.Join(order, ", "), 1+rng.Intn(3))
	}
	return q
}

// TestJoinViewDifferential: random materialized views over a join of two
// streams (inner, LEFT, RIGHT and FULL, on one or two equalities, with or
// without a further condition in ON, a WHERE over the joined rows; their
// rows, DISTINCT rows, or an aggregation with GROUP BY expressions,
// FILTER and HAVING: any aggregate over an inner join, count, sum and avg
// over an outer one) run in memory as the server plans them, both streams' rows
// arriving interleaved in random batches over their partitions, state
// checkpointed and at random rebuilt. After each of three rounds the view
// must equal its SELECT run bounded over both streams' rows.
//
//	go test ./planner -run TestJoinViewDifferential -view-seed 19 -view-cases 3000
func TestJoinViewDifferential(t *testing.T) {
	cases := *viewCases / 2
	if testing.Short() {
		cases /= 10
	}
	db := newTestDB(t)
	cols := []catalog.Column{{Name: "k", Type: types.Int8}, {Name: "id", Type: types.Int8}, {Name: "v", Type: types.Int8}}
	ja := &catalog.Relation{Name: "ja", Kind: catalog.Stream, Topic: "ja", Format: "json", Partitions: 3, Columns: cols}
	jb := &catalog.Relation{Name: "jb", Kind: catalog.Stream, Topic: "jb", Format: "json", Partitions: 2, Columns: cols}
	jc := &catalog.Relation{Name: "jc", Kind: catalog.Stream, Topic: "jc", Format: "json", Partitions: 2, Columns: cols}
	for i, r := range []*catalog.Relation{ja, jb, jc} {
		b, err := catalog.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.cat.Apply(int64(250+i), r.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	for n := 0; n < cases; n++ {
		seed := *viewSeed*3_000_017 + int64(n)
		rng := rand.New(rand.NewSource(seed))
		q := genJoinView(rng)
		// A third input may be a view over jc instead: its changes are the
		// join's signed input, so only aggregates that take a row back
		// out may be over it.
		var inner *planner.Continuous
		var jv catalog.Relation
		// (Not under a top-N: its order is by the input rows' ids, which
		// a view's rows need not keep apart.)
		if (strings.Contains(q, " jc ") || rng.Intn(4) == 0) && rng.Intn(2) == 0 && !strings.Contains(q, ") OVER (") {
			if strings.Contains(q, " jc ") {
				q = strings.ReplaceAll(q, " jc ", " jv ")
			} else {
				q = strings.ReplaceAll(q, " jb ", " jv ") // a join of a stream and a view
			}
			iq := pick(rng, "SELECT k, count(*) AS id, sum(v) AS v FROM jc GROUP BY k",
				"SELECT k, max(id) AS id, min(v) AS v FROM jc GROUP BY k",
				"SELECT k, id, v FROM jc WHERE v IS NULL OR v > 0",
				"SELECT v AS k, count(*) AS id, sum(k) AS v FROM jc GROUP BY v")
			if !strings.Contains(q, " jv p ") && rng.Intn(2) == 0 {
				// the view's query inlined, a subquery in the join
				q = joinedView.ReplaceAllString(q, " ("+iq+") $1$2")
				goto planned
			}
			stmts, err := sql.Parse("CREATE MATERIALIZED VIEW jv AS " + iq)
			if err != nil {
				t.Fatal(err)
			}
			if inner, err = planner.PlanContinuous(db.cat, stmts[0].Stmt.(*sql.CreateAs)); err != nil {
				t.Fatalf("case %d (seed %d): %s: %v", n, seed, iq, err)
			}
			jv = *inner.Rel
			jv.OID = 0
			vb, err := catalog.Encode(&jv)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.cat.Apply(int64(1_000_000+2*n), jv.Name, vb); err != nil {
				t.Fatal(err)
			}
			q = "/* jv: " + iq + " */ " + q
		}
	planned:
		text := "CREATE MATERIALIZED VIEW vj AS " + q
		stmts, err := sql.Parse(text)
		if err != nil {
			t.Fatalf("case %d (seed %d): parse %s: %v", n, seed, text, err)
		}
		c, err := planner.PlanContinuous(db.cat, stmts[0].Stmt.(*sql.CreateAs))
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, text, err)
		}
		p := newMemPipeline(c, ja)
		var pv *memPipeline // jv's
		var log *tableLog
		if inner != nil {
			pv = newMemPipeline(inner, jc)
			log = logTable(pv, &jv)
		}
		db.rows["ja"], db.rows["jb"], db.rows["jc"] = nil, nil, nil
		id := int64(0)
		offsets := map[string][]int64{"ja": make([]int64, ja.Partitions), "jb": make([]int64, jb.Partitions), "jc": make([]int64, jc.Partitions)}
		inputs := []*catalog.Relation{ja, jb}
		if strings.Contains(q, " jc ") || inner != nil {
			inputs = append(inputs, jc)
		}
		for round := 0; round < 3; round++ {
			for i := 2 + rng.Intn(8); i > 0; i-- {
				in := inputs[rng.Intn(len(inputs))]
				var rows []types.Row
				for j := 1 + rng.Intn(4); j > 0; j-- {
					id++
					part := rng.Intn(in.Partitions)
					offsets[in.Name][part]++
					k := types.NullValue
					if rng.Intn(8) > 0 {
						k = types.NewInt8(int64(rng.Intn(4)))
					}
					v := types.NullValue
					if rng.Intn(6) > 0 {
						v = types.NewInt8(int64(rng.Intn(5)))
					}
					rows = append(rows, types.Row{k, types.NewInt8(id), v, types.NullValue,
						types.NewInt(types.Int4, int64(part)), types.NewInt8(offsets[in.Name][part]), types.NullValue})
				}
				db.rows[in.Name] = append(db.rows[in.Name], rows...)
				if in == jc && inner != nil {
					log.recs, log.ops = nil, nil
					if err := pv.feed(rng, rows, nil); err != nil {
						t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, q, round, err)
					}
					if err := p.feedStream(rng, &jv, log.recs, log.ops); err != nil {
						t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, q, round, err)
					}
					continue
				}
				if err := p.feedStream(rng, in, rows, nil); err != nil {
					t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, q, round, err)
				}
			}
			if err := p.checkpoint(rng); err != nil {
				t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
			}
			if pv != nil {
				if err := pv.checkpoint(rng); err != nil {
					t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
				}
				db.rows["jv"] = nil
				for _, row := range pv.view {
					db.rows["jv"] = append(db.rows["jv"], row[:len(jv.Columns)])
				}
			}
			want, err := db.query(t, q)
			if err != nil {
				t.Fatalf("case %d (seed %d): bounded %s: %v", n, seed, q, err)
			}
			got := p.contents()
			if sortedLines(got) != sortedLines(want) {
				t.Fatalf("case %d (seed %d), round %d:\n%s\nview:\n%s\nbounded SELECT:\n%s\nja (k, id, v):\n%sjb (k, id, v):\n%sjc (k, id, v):\n%s",
					n, seed, round, text, got, sortedLines(want), rowLines(db.rows["ja"]), rowLines(db.rows["jb"]), rowLines(db.rows["jc"]))
			}
		}
		if inner != nil {
			if _, err := db.cat.Apply(int64(1_000_001+2*n), jv.Name, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// joinedView finds the view jv (and its alias) in a join.
var joinedView = regexp.MustCompile(` jv ([a-z])([ ,])`)

// genJoinView makes the SELECT of a view over a join of ja and jb, and
// says whether it is an aggregation without GROUP BY.
func genJoinView(rng *rand.Rand) string {
	kind := pick(rng, "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "INNER JOIN")
	on := "a.k = b.k"
	switch rng.Intn(5) {
	case 0:
		on += " AND a.v = b.v"
	case 1:
		on += " AND a.v < b.v"
	case 2:
		on += " AND b.id % 2 = 0"
	}
	items := []string{"a.id", "b.id AS bid", "a.v", "b.v AS bv", "a.k", "b.k AS bk", "a.v + b.v AS s", "coalesce(b.v, -1) AS cv", "a.id * 100 + b.id AS pair"}
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	list := strings.Join(items[:1+rng.Intn(4)], ", ")
	if rng.Intn(8) == 0 {
		list = "a.*, b.id AS bid"
	}
	var groups3 []string
	where := ""
	switch rng.Intn(6) {
	case 0:
		where = " WHERE a.v > 1"
	case 1:
		where = " WHERE b.id IS NULL OR b.v <> 2"
	case 2:
		where = " WHERE a.id % 3 <> 0"
	}
	from := " FROM ja a " + kind + " jb b ON " + on
	inner := kind == "JOIN" || kind == "INNER JOIN"
	// the same inner joins as a comma list
	comma, commaOn := " FROM ja a, jb b", on
	if rng.Intn(3) == 0 { // a third stream, joined to the first two or nested with the second
		kind3 := pick(rng, "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN")
		on3 := pick(rng, "c.k = a.k", "c.k = b.k", "c.v = b.v AND c.k = a.k", "c.k = b.v AND c.id % 2 = a.id % 2")
		if rng.Intn(3) == 0 {
			from = " FROM ja a " + kind + " (jb b " + kind3 + " jc c ON c.k = b.k) ON " + on
			inner = false
		} else {
			from += " " + kind3 + " jc c ON " + on3
			inner = inner && kind3 == "JOIN"
			comma, commaOn = pick(rng, " FROM ja a, jb b, jc c", " FROM jc c, ja a, jb b"), on+" AND "+on3
		}
		items = append(items, "c.id AS cid", "c.v AS cvv", "b.v + c.v AS bc")
		rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		list = strings.Join(items[:1+rng.Intn(4)], ", ")
		groups3 = []string{"c.k", "c.id IS NULL"}
	}
	if rng.Intn(4) == 0 { // a semi or anti join: [NOT] EXISTS, IN (SELECT …)
		probe := pick(rng, "EXISTS (SELECT 1 FROM jc p WHERE p.k = a.k)",
			"NOT EXISTS (SELECT 1 FROM jc p WHERE p.k = b.k AND p.v > a.v)",
			"a.v IN (SELECT v FROM jc p WHERE p.id % 2 = 0)",
			"NOT EXISTS (SELECT 1 FROM ja WHERE ja.k = b.k AND ja.v = b.v)",
			"EXISTS (SELECT 1 FROM jc p WHERE k = a.v AND v IS NOT NULL)",
			"EXISTS (SELECT 1 FROM jb p WHERE p.k = a.k AND p.id <> a.id)",
			"NOT EXISTS (SELECT 1 FROM ja p WHERE p.k = b.k AND p.id > b.id)",
			"a.v NOT IN (SELECT v FROM jc p WHERE p.id % 2 = 0)",
			"b.v NOT IN (SELECT p.v + 1 FROM jc p WHERE p.k = a.k)",
			"a.k NOT IN (SELECT k FROM jb)",
			"a.v IN (SELECT v FROM jc p GROUP BY v HAVING count(*) > 1)",
			"EXISTS (SELECT 1 FROM (SELECT k, max(v) AS m FROM jc p GROUP BY k) p2 WHERE p2.k = a.k AND p2.m > a.v)",
			"a.k IN (SELECT k FROM (SELECT k, v FROM jc p WHERE v > 1) p2)",
			"NOT EXISTS (SELECT 1 FROM (SELECT k FROM jb p WHERE v IS NOT NULL) p2 WHERE p2.k = b.k)",
			"b.v IN (SELECT max(v) FROM jc p GROUP BY k)",
			// NOT IN over groups: a hidden view of the subquery's rows
			"a.v NOT IN (SELECT v FROM jc p GROUP BY v HAVING count(*) > 1)",
			"b.v NOT IN (SELECT max(v) FROM jc p GROUP BY k)",
			"a.k NOT IN (SELECT DISTINCT k FROM jb p WHERE p.v > 1)",
			"a.v NOT IN (SELECT count(*) FROM jc p WHERE p.v IS NOT NULL)")
		if where == "" {
			where = " WHERE " + probe
		} else {
			where = " WHERE (" + where[len(" WHERE "):] + ") AND " + probe
		}
	}
	if inner && rng.Intn(2) == 0 {
		if where == "" {
			where = " WHERE " + commaOn
		} else {
			where = " WHERE " + commaOn + " AND (" + where[len(" WHERE "):] + ")"
		}
		from = comma
	}
	from += where
	switch rng.Intn(4) {
	case 0:
		return "SELECT " + list + from
	case 1:
		return "SELECT DISTINCT " + list + from
	case 2:
		if strings.Contains(list, "*") {
			return "SELECT " + list + from
		}
		// A top-N over the join, ordered by the ids of the rows each
		// joined row is made of, so that no two rows tie.
		order := "a.id" + pick(rng, "", " DESC") + ", b.id" + pick(rng, "", " DESC NULLS LAST", " NULLS FIRST")
		if strings.Contains(from, " jc c ") {
			order += ", c.id"
		}
		if rng.Intn(4) == 0 { // DISTINCT ON over the join: each key's first joined row
			// then by every output column: a view's id (jc's) is a
			// count, and may tie
			key := pick(rng, "a.k", "b.v", "a.v % 2")
			n := 1 // list is items[:n]
			for n < len(items) && strings.Join(items[:n], ", ") != list {
				n++
			}
			for i := 2; i <= n+1; i++ {
				order += fmt.Sprintf(", %d", i)
			}
			return fmt.Sprintf("SELECT DISTINCT ON (%s) %s AS dk, %s%s ORDER BY %s, %s", key, key, list, from, key, order)
		}
		if rng.Intn(3) == 0 { // the same as ORDER BY … LIMIT over the join
			// then by every output column (by position): a view's id
			// (jv's, standing for jc) is a count, and rows tying on
			// everything are the same row
			n := 1 // list is items[:n]
			for n < len(items) && strings.Join(items[:n], ", ") != list {
				n++
			}
			for i := 1; i <= n; i++ {
				order += fmt.Sprintf(", %d", i)
			}
			q := fmt.Sprintf("SELECT %s%s ORDER BY %s LIMIT %d", list, from, order, 1+rng.Intn(4))
			if rng.Intn(3) == 0 {
				q += fmt.Sprintf(" OFFSET %d", rng.Intn(3))
			}
			return q
		}
		return fmt.Sprintf("SELECT * FROM (SELECT %s, %s() OVER (%sORDER BY %s) AS rn%s) t WHERE rn <= %d",
			list, pick(rng, "ROW_NUMBER", "RANK", "DENSE_RANK"), pick(rng, "", "PARTITION BY a.k ", "PARTITION BY b.v "), order, from, 1+rng.Intn(3))
	}
	// An aggregation: over an outer join (whose rows are signed) as over
	// an inner one.
	aggs := []string{"count(*) AS n", "count(b.id) AS nb", "sum(a.v) AS sa", "avg(b.v) AS ab", "sum(a.v * b.v) AS p",
		"count(*) FILTER (WHERE b.v > 1) AS f", "sum(coalesce(b.v, 10)) AS sc",
		"min(b.v) AS mn", "max(a.id) AS mx", "count(DISTINCT b.v) AS dv", "bool_or(a.v = b.v) AS bo", "sum(DISTINCT a.v) AS sd",
		"array_agg(b.id ORDER BY a.id, b.id NULLS FIRST) AS aa", "string_agg(b.v::text, ',' ORDER BY a.id DESC, b.id, b.v) AS st",
		"stddev_pop(b.v) AS sp", "variance(a.v + b.v) AS va", "percentile_disc(0.5) WITHIN GROUP (ORDER BY b.v NULLS FIRST) AS pd",
		"round(corr(a.v, b.v)::numeric, 8) AS cr", "regr_count(b.id, a.id) AS rc", "round(regr_sxy(b.v, a.v + 1)::numeric, 8) AS rs"}
	rng.Shuffle(len(aggs), func(i, j int) { aggs[i], aggs[j] = aggs[j], aggs[i] })
	sel := aggs[:1+rng.Intn(3)]
	groups := append([]string{"a.k", "b.v", "a.v % 2", "coalesce(b.k, -1)", "b.id IS NULL"}, groups3...)
	rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	var keys []string
	for i, g := range groups[:rng.Intn(3)] {
		keys = append(keys, g)
		if rng.Intn(3) > 0 {
			sel = append([]string{g + " AS g" + fmt.Sprint(i)}, sel...)
		}
	}
	q := "SELECT " + strings.Join(sel, ", ") + from
	if len(keys) > 0 {
		q += " GROUP BY " + strings.Join(keys, ", ")
	}
	if rng.Intn(4) == 0 {
		q += " HAVING count(*) > 1"
	}
	return q
}

// TestSubqueryViewDifferential: a random view whose FROM clause is a
// subquery, the SELECT of a view over a view as TestViewOverViewDifferential
// makes them with the first view's query inlined (FROM (q1) vd), or a
// grouped or DISTINCT view with ORDER BY … LIMIT. The subquery runs as a
// hidden view inside the one topology, which runs in memory over the
// stream's rows; after each round the view must equal its SELECT run bounded.
//
//	go test ./planner -run TestSubqueryViewDifferential -view-seed 19 -view-cases 3000
func TestSubqueryViewDifferential(t *testing.T) {
	cases := *viewCases / 2
	if testing.Short() {
		cases /= 10
	}
	db := newTestDB(t)
	r := dvStream(t, db)
	nested := 0
	for n := 0; n < cases; n++ {
		seed := *viewSeed*4_000_037 + int64(n)
		rng := rand.New(rand.NewSource(seed))
		q1 := genView(rng)
		c1, err := db.plan("CREATE MATERIALIZED VIEW vd AS " + q1)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, q1, err)
		}
		var visible []string
		numeric := false
		for i, c := range c1.Rel.Columns {
			if !c.Hidden {
				visible = append(visible, fmt.Sprint(i+1)+pick(rng, "", " DESC", " NULLS FIRST"))
				numeric = numeric || c.Type == types.Numeric
			}
		}
		grouped := strings.Contains(q1, " AS a1") || (strings.HasPrefix(q1, "SELECT DISTINCT") && !strings.HasPrefix(q1, "SELECT DISTINCT ON")) // genView's aggregations
		var q string
		if grouped && !numeric && !strings.Contains(q1, "LIMIT") && rng.Intn(3) == 0 {
			q = fmt.Sprintf("%s ORDER BY %s LIMIT %d", q1, strings.Join(visible, ", "), 1+rng.Intn(3))
		} else {
			q2 := genViewOver(rng, c1.Rel.Columns)
			q = strings.Replace(q2, "FROM vd", "FROM ("+q1+") vd", 1)
		}
		text := "CREATE MATERIALIZED VIEW vs AS " + q
		c, err := db.plan(text)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, text, err)
		}
		if len(c.Topology.Stages) > len(c1.Topology.Stages) {
			nested++
		}
		p := newMemPipeline(c, r)
		db.rows["dv"] = nil
		in := &dvInput{offsets: make([]int64, r.Partitions)}
		fed := 0
		for round := 0; round < 3; round++ {
			rows := in.round(rng)
			db.rows["dv"] = append(db.rows["dv"], rows...)
			fed += len(rows)
			if err := p.feed(rng, rows, nil); err != nil {
				t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, text, round, err)
			}
			if err := p.checkpoint(rng); err != nil {
				t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
			}
			want, err := db.query(t, q)
			if err != nil {
				t.Fatalf("case %d (seed %d): bounded %s: %v", n, seed, q, err)
			}
			got := p.contents()
			if sortedLines(got) != sortedLines(want) {
				t.Fatalf("case %d (seed %d), round %d:\n%s\nview:\n%s\nbounded SELECT:\n%s\ninput (k, id, v, w):\n%s",
					n, seed, round, text, got, sortedLines(want), rowLines(db.rows["dv"]))
			}
		}
	}
	if nested < cases/2 {
		t.Fatalf("only %d of %d views nested a subquery", nested, cases)
	}
}
