package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// JoinsConfig configures the joins scenario.
type JoinsConfig struct {
	Rows       int64    // rows of the bids stream (default 2M), plus one sentinel per partition
	Auctions   int64    // rows of the auctions stream (default 1.9M: with the persons, q3's 2M input rows)
	Persons    int64    // rows of the persons stream (default 100k), also the bids' distinct bidders
	Partitions int      // of every stream (default 4)
	Variants   []string // q3, q4, q4-left, q4-nested, q4-key, q9, lateral, lateral-agg, lateral-domain, 3-way, union, rollup (default all)
	// CatchupTimeout bounds one variant's catch-up (default 5m).
	CatchupTimeout time.Duration
}

// The joins scenario's streams, Nexmark's person, auction and bid in
// PostgreSQL syntax, with generated rows (PersonGen, AuctionGen, BidGen).
const (
	personsColumns  = "(id BIGINT, name TEXT, state TEXT)"
	auctionsColumns = "(id BIGINT, seller BIGINT, category BIGINT)"
)

// joinsStates are the persons' states; q3 asks for the first three.
var joinsStates = []string{"OR", "ID", "CA", "WA", "NY", "TX"}

// PersonGen generates the persons rows: row i is person i, named "p<i>",
// in state joinsStates[mix(i) % 6].
type PersonGen struct{ N int64 }

// State is person i's state.
func (g PersonGen) State(i int64) string {
	return joinsStates[mix(uint64(i)^0x7f4a7c15)%uint64(len(joinsStates))]
}

// AppendJSON appends row i.
func (g PersonGen) AppendJSON(b []byte, i int64) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"name":"p`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `","state":"`...)
	b = append(b, g.State(i)...)
	return append(b, `"}`...)
}

// AuctionGen generates the auctions rows: row i is auction i, sold by
// person mix(i) % Persons, in category mix(i ^ salt) % 20.
type AuctionGen struct{ N, Persons int64 }

// Seller and Category are auction i's.
func (g AuctionGen) Seller(i int64) int64 {
	return int64(mix(uint64(i)^0x1b873593) % uint64(g.Persons))
}

func (g AuctionGen) Category(i int64) int64 { return int64(mix(uint64(i)^0xcc9e2d51) % 20) }

// AppendJSON appends row i.
func (g AuctionGen) AppendJSON(b []byte, i int64) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"seller":`...)
	b = strconv.AppendInt(b, g.Seller(i), 10)
	b = append(b, `,"category":`...)
	b = strconv.AppendInt(b, g.Category(i), 10)
	return append(b, '}')
}

// joinsVariant is one measured view of the joins scenario.
type joinsVariant struct {
	name, rel, shape string
	sql              string // CREATE … with %[1]s the view, %[2]s persons, %[3]s auctions, %[4]s bids
	inputs           []string
}

var joinsVariants = map[string]joinsVariant{
	"q3": {name: "q3", rel: "jq3", shape: "join view (Nexmark q3)", inputs: []string{"auctions", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.name, p.state, a.id FROM %[3]s a JOIN %[2]s p ON a.seller = p.id WHERE a.category = 10 AND p.state IN ('OR', 'ID', 'CA')"},
	"q4": {name: "q4", rel: "jq4", shape: "aggregate over a join", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.state, count(*) AS n, sum(b.price) AS total FROM %[4]s b JOIN %[2]s p ON b.bidder = p.id GROUP BY p.state"},
	"q4-left": {name: "q4-left", rel: "jq4l", shape: "aggregate over a LEFT JOIN", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.state, count(*) AS n, sum(b.price) AS total FROM %[4]s b LEFT JOIN %[2]s p ON b.bidder = p.id GROUP BY p.state"},
	"q4-nested": {name: "q4-nested", rel: "jq4n", shape: "aggregate over an aggregate over a join", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT s.state, count(*) AS n, sum(s.total) AS total FROM (SELECT b.bidder, p.state, sum(b.price) AS total FROM %[4]s b JOIN %[2]s p ON b.bidder = p.id GROUP BY b.bidder, p.state) s GROUP BY s.state"},
	"q4-key": {name: "q4-key", rel: "jq4k", shape: "aggregate over a join, grouped by its key", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT b.bidder, count(*) AS n, sum(b.price) AS total FROM %[4]s b JOIN %[2]s p ON b.bidder = p.id GROUP BY b.bidder"},
	"union": {name: "union", rel: "jun", shape: "UNION ALL of an aggregate over a join and a global aggregate", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.state, count(*) AS n, sum(b.price) AS total FROM %[4]s b JOIN %[2]s p ON b.bidder = p.id GROUP BY p.state UNION ALL SELECT 'all', count(*), sum(price) FROM %[4]s WHERE bidder >= 0"},
	"rollup": {name: "rollup", rel: "jru", shape: "GROUP BY ROLLUP (state, bidder % 10) over a join", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.state, b.bidder %% 10 AS m, count(*) AS n, sum(b.price) AS total FROM %[4]s b JOIN %[2]s p ON b.bidder = p.id GROUP BY ROLLUP (p.state, 2)"},
	"q9": {name: "q9", rel: "jq9", shape: "top-1 per auction over a join (Nexmark q9)", inputs: []string{"bids", "auctions"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT id, bidder, price FROM (SELECT a.id, b.bidder, b.price, ROW_NUMBER() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.bidder) AS rn FROM %[3]s a JOIN %[4]s b ON a.id = b.auction) t WHERE rn <= 1"},
	"lateral": {name: "lateral", rel: "jlat", shape: "top-1 per auction by a LATERAL subquery (q9's answer)", inputs: []string{"bids", "auctions"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT a.id, x.bidder, x.price FROM %[3]s a, LATERAL (SELECT b.bidder, b.price FROM %[4]s b WHERE b.auction = a.id ORDER BY b.price DESC, b.bidder LIMIT 1) x"},
	"lateral-agg": {name: "lateral-agg", rel: "jlag", shape: "count and sum per person by a LATERAL subquery (0 for none)", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.id, x.n, x.total FROM %[2]s p, LATERAL (SELECT count(*) AS n, sum(b.price) AS total FROM %[4]s b WHERE b.bidder = p.id) x"},
	"lateral-domain": {name: "lateral-domain", rel: "jldm", shape: "count and sum per person of bids over a bound from the person (a LATERAL subquery over its domain)", inputs: []string{"bids", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.id, x.n, x.total FROM %[2]s p, LATERAL (SELECT count(*) AS n, sum(b.price) AS total FROM %[4]s b WHERE b.bidder = p.id AND b.price > p.id %% 1000) x"},
	"3-way": {name: "3-way", rel: "j3w", shape: "aggregate over a three-way join", inputs: []string{"bids", "auctions", "persons"},
		sql: "CREATE MATERIALIZED VIEW %[1]s AS SELECT p.state, count(*) AS n, sum(b.price) AS total FROM %[4]s b JOIN %[3]s a ON b.auction = a.id JOIN %[2]s p ON a.seller = p.id GROUP BY p.state"},
}

type joinsResult struct {
	v      joinsVariant
	rows   int64 // input rows (both inputs)
	ph     *phase
	stat   pipeStat
	check  string
	checks string
}

// Joins runs the joins scenario: each variant is a materialized view over
// a join of two streams, built from the streams' beginning.
func Joins(ctx context.Context, o Options, c JoinsConfig) error {
	orDefault(&c.Rows, 2_000_000)
	orDefault(&c.Auctions, 1_900_000)
	orDefault(&c.Persons, 100_000)
	orDefault(&c.Partitions, 4)
	orDefaults(&c.Variants, "q3", "q4", "q4-left", "q4-nested", "q4-key", "q9", "lateral", "lateral-agg", "lateral-domain", "3-way", "union", "rollup")
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	for _, v := range c.Variants {
		if _, ok := joinsVariants[v]; !ok {
			return fmt.Errorf("unknown variant %q (want q3, q4, q4-left, q4-nested, q4-key, q9, lateral, lateral-agg, lateral-domain, 3-way, union, rollup)", v)
		}
	}
	h, ctx, err := openHarness(ctx, o, false)
	if err != nil {
		return err
	}
	defer h.close()
	pg, ag := PersonGen{N: c.Persons}, AuctionGen{N: c.Auctions, Persons: c.Persons}
	bg := BidGen{N: c.Rows, Partitions: c.Partitions, Auctions: c.Auctions, Bidders: c.Persons}
	names := map[string]string{"persons": h.name("persons"), "auctions": h.name("auctions"), "bids": h.name("bids")}
	rows := map[string]int64{"persons": pg.N, "auctions": ag.N, "bids": bg.Total()}
	lines := []string{
		fmt.Sprintf("workload: three streams WITH (partitions = %d), loaded by franz-go round-robin over the partitions:", c.Partitions),
		fmt.Sprintf("  persons %s: %s rows, person i in one of %s", personsColumns, Count(float64(pg.N)), strings.Join(joinsStates, ", ")),
		fmt.Sprintf("  auctions %s: %s rows, a pseudo-random seller among the persons and one of 20 categories", auctionsColumns, Count(float64(ag.N))),
		fmt.Sprintf("  bids %s: %s rows, bidder i %% %s (every person bids), and %d sentinels of bidder -1, who is nobody", bidsColumns, Count(float64(bg.N)), Count(float64(c.Persons)), c.Partitions),
		"  each variant is one materialized view over a join, built from its streams' beginning, one after the other on the same server:",
	}
	for _, v := range c.Variants {
		jv := joinsVariants[v]
		lines = append(lines, fmt.Sprintf("  %-8s %s", v, fmt.Sprintf(jv.sql, jv.rel, "persons", "auctions", "bids")))
	}
	lines = append(lines, "  done = `consumed` in fvsql_catalog.pipelines reaches all its inputs' rows and `lag` (every stage) is 0, polled every 50 ms")
	h.header("joins", lines...)
	need := map[string]bool{}
	for _, v := range c.Variants {
		for _, in := range joinsVariants[v].inputs {
			need[in] = true
		}
	}
	for _, s := range []struct {
		base string
		spec streamSpec
	}{
		{"persons", streamSpec{name: names["persons"], columns: personsColumns, partitions: c.Partitions, rows: pg.N, row: pg.AppendJSON}},
		{"auctions", streamSpec{name: names["auctions"], columns: auctionsColumns, partitions: c.Partitions, rows: ag.N, row: ag.AppendJSON}},
		{"bids", streamSpec{name: names["bids"], columns: bidsColumns, partitions: c.Partitions, rows: bg.Total(), row: bg.AppendJSON}},
	} {
		if !need[s.base] {
			continue
		}
		if _, err := h.createStream(ctx, s.spec); err != nil {
			return err
		}
	}
	fmt.Fprintln(h.o.Out)

	var results []*joinsResult
	for _, v := range c.Variants {
		jv := joinsVariants[v]
		jv.rel = h.name(jv.rel)
		var in int64
		for _, s := range jv.inputs {
			in += rows[s]
		}
		res, err := h.measureJoin(ctx, jv, in, names, pg, ag, bg, c.CatchupTimeout)
		if err != nil {
			return fmt.Errorf("%s: %w", v, err)
		}
		results = append(results, res)
	}
	printJoins(h, results)
	h.printProfiles()
	return nil
}

// measureJoin runs one variant: CREATE, wait until done, check, DROP.
func (h *harness) measureJoin(ctx context.Context, jv joinsVariant, in int64, names map[string]string, pg PersonGen, ag AuctionGen, bg BidGen, catchup time.Duration) (*joinsResult, error) {
	res := &joinsResult{v: jv, rows: in}
	var st pipeStat
	var werr error
	ph, err := h.measure(ctx, "joins-"+jv.name, func() error {
		if err := h.exec(ctx, fmt.Sprintf(jv.sql, jv.rel, names["persons"], names["auctions"], names["bids"])); err != nil {
			return err
		}
		st, werr = waitPipeline(ctx, h.conn, jv.rel, in, true, catchup)
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.ph, res.stat = ph, st
	if werr != nil {
		res.check = "DID NOT CATCH UP: " + werr.Error()
		fmt.Fprintln(os.Stderr, "bench:", res.check)
		return res, h.exec(ctx, "DROP MATERIALIZED VIEW "+jv.rel)
	}
	if err := flush(ctx, h.conn, 5*time.Minute); err != nil {
		return nil, err
	}
	var q string
	var exp []int64
	switch jv.name {
	case "q3":
		var n int64
		for i := int64(0); i < ag.N; i++ {
			if ag.Category(i) != 10 {
				continue
			}
			switch pg.State(ag.Seller(i)) {
			case "OR", "ID", "CA":
				n++
			}
		}
		q, exp = "SELECT count(*), count(DISTINCT id) FROM "+jv.rel, []int64{n, n}
	case "q4", "q4-left":
		var sum int64
		states := map[string]bool{}
		for i := int64(0); i < bg.N; i++ {
			sum += bg.Price(i)
		}
		for i := int64(0); i < pg.N; i++ {
			states[pg.State(i)] = true
		}
		q, exp = "SELECT count(*), sum(n), sum(total) FROM "+jv.rel+" WHERE state IS NOT NULL", []int64{int64(len(states)), bg.N, sum}
		if jv.name == "q4-left" {
			q = "SELECT count(*) FILTER (WHERE state IS NOT NULL), sum(n) FILTER (WHERE state IS NOT NULL), sum(total) FILTER (WHERE state IS NOT NULL), coalesce(sum(n) FILTER (WHERE state IS NULL), 0) FROM " + jv.rel
			exp = append(exp, int64(bg.Partitions)) // the sentinels, bidder -1, padded with NULLs
		}
	case "union", "rollup":
		// the finest groups' rows and the total's both hold every bid
		// (the sentinels, bidder -1, join no one and pass no WHERE)
		var sum int64
		for i := int64(0); i < bg.N; i++ {
			sum += bg.Price(i)
		}
		q = "SELECT sum(n) FILTER (WHERE state <> 'all'), sum(total) FILTER (WHERE state <> 'all'), sum(n) FILTER (WHERE state = 'all'), sum(total) FILTER (WHERE state = 'all') FROM " + jv.rel
		if jv.name == "rollup" {
			q = "SELECT sum(n) FILTER (WHERE m IS NOT NULL), sum(total) FILTER (WHERE m IS NOT NULL), sum(n) FILTER (WHERE state IS NULL), sum(total) FILTER (WHERE state IS NULL) FROM " + jv.rel
		}
		exp = []int64{bg.N, sum, bg.N, sum}
	case "q4-key":
		// a row per bidder who bid (the sentinels, bidder -1, join no one)
		var sum int64
		bidders := map[int64]bool{}
		for i := int64(0); i < bg.N; i++ {
			sum += bg.Price(i)
			bidders[bg.Bidder(i)] = true
		}
		q, exp = "SELECT count(*), sum(n), sum(total) FROM "+jv.rel, []int64{int64(len(bidders)), bg.N, sum}
	case "q4-nested":
		// per state, the bidders who bid (every person does) and their bids' total
		var sum int64
		bidders, states := map[int64]bool{}, map[string]bool{}
		for i := int64(0); i < bg.N; i++ {
			sum += bg.Price(i)
			bidders[bg.Bidder(i)] = true
			states[pg.State(bg.Bidder(i))] = true
		}
		q, exp = "SELECT count(*), sum(n), sum(total) FROM "+jv.rel, []int64{int64(len(states)), int64(len(bidders)), sum}
	case "lateral-agg":
		// a row per person (every person bids; the sentinels, bidder -1,
		// are nobody's)
		var n, sum int64
		for i := int64(0); i < bg.N; i++ {
			if b := bg.Bidder(i); b >= 0 && b < pg.N {
				n, sum = n+1, sum+bg.Price(i)
			}
		}
		q, exp = "SELECT count(*), sum(n), sum(total) FROM "+jv.rel, []int64{pg.N, n, sum}
	case "lateral-domain":
		// a row per person; the bids over the person's bound
		var n, sum int64
		for i := int64(0); i < bg.N; i++ {
			if b := bg.Bidder(i); b >= 0 && b < pg.N && bg.Price(i) > b%1000 {
				n, sum = n+1, sum+bg.Price(i)
			}
		}
		q, exp = "SELECT count(*), sum(n), sum(total) FROM "+jv.rel, []int64{pg.N, n, sum}
	case "q9", "lateral":
		// a row per auction with a bid, at its highest price
		top := map[int64]int64{}
		for i := int64(0); i < bg.N; i++ {
			if a := bg.Auction(i); a >= 0 && a < ag.N {
				if p, ok := top[a]; !ok || bg.Price(i) > p {
					top[a] = bg.Price(i)
				}
			}
		}
		var sum int64
		for _, p := range top {
			sum += p
		}
		q, exp = "SELECT count(*), sum(price) FROM "+jv.rel, []int64{int64(len(top)), sum}
	case "3-way":
		var n, sum int64
		states := map[string]bool{}
		for i := int64(0); i < bg.N; i++ {
			if a := bg.Auction(i); a >= 0 && a < ag.N {
				n, sum = n+1, sum+bg.Price(i)
				states[pg.State(ag.Seller(a))] = true
			}
		}
		q, exp = "SELECT count(*), sum(n), sum(total) FROM "+jv.rel, []int64{int64(len(states)), n, sum}
	}
	res.checks = fmt.Sprintf("%s: %s = %v", jv.name, q, exp)
	got, err := queryInts(ctx, h.conn, q)
	if err != nil {
		return nil, err
	}
	last, _ := pipelineStat(ctx, h.conn, jv.rel)
	if !equalInts(got, exp) {
		res.check = fmt.Sprintf("OUTPUT CHECK FAILED: %s: %s returned %v, want %v; pipeline: %s", jv.name, q, got, exp, last)
		fmt.Fprintln(os.Stderr, "bench:", res.check)
	}
	if last.StateBytes >= 0 {
		res.stat.StateBytes = last.StateBytes
	}
	return res, h.exec(ctx, "DROP MATERIALIZED VIEW "+jv.rel)
}

func printJoins(h *harness, results []*joinsResult) {
	tb := Table{
		Title: "joins: views over joins of two and three streams, built from their beginning",
		Header: []string{"variant", "shape", "input rows", "duration", "rows/s", "proc cpu s", "rows/proc-cpu-s", "broker cpu s",
			"peak RSS", "state", "state B/row", "check"},
	}
	var checked []string
	for _, res := range results {
		ph := res.ph
		state, per := "-", "-"
		if res.stat.StateBytes >= 0 {
			state = MiB(res.stat.StateBytes)
			per = strconv.FormatInt(res.stat.StateBytes/max(res.rows, 1), 10)
		}
		check := "ok"
		if res.check != "" {
			check = "FAILED: see notes"
		}
		tb.Add(res.v.name, res.v.shape, Count(float64(res.rows)), Secs(ph.dur), Count(Rate(res.rows, ph.dur)), cpuSecs(ph.srvCPU),
			perCPU(res.rows, ph.srvCPU), cpuSecs(ph.brokerCPU), MiB(ph.u1.PeakRSS), state, per, check)
		checked = append(checked, res.checks)
	}
	tb.Notes = []string{
		"duration = from CREATE until consumed = all its inputs' rows and lag = 0; rows/proc-cpu-s = input rows per CPU-second of the fvsql server's process",
		"state = state_bytes of fvsql_catalog.pipelines after the run (the join keeps every input row, so state grows with the inputs: state B/row = state / input rows)",
		"output checked after FLUSH: " + strings.Join(checked, "; "),
	}
	for _, res := range results {
		if res.check != "" {
			tb.Notes = append(tb.Notes, res.check)
		}
	}
	tb.Print(h.o.Out)
}
