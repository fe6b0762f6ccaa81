package planner_test

import (
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/types"
)

var temporalCases = flag.Int("temporal-cases", 600, "cases of TestTemporalViewDifferential")

// temporalBase is the clock's start in TestTemporalViewDifferential: rows'
// times and the clock move on a grid of whole seconds around it, so that
// a bound is often met exactly (strict and non-strict comparisons differ).
var temporalBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// TestTemporalViewDifferential: a random materialized view with a temporal
// filter (comparisons of now(), current_timestamp, localtimestamp or
// clock_timestamp(), plus or minus intervals, with the rows' timestamps,
// BETWEEN, current_date plus or minus days with the rows' dates, the
// clock crossing a midnight in some cases, alongside an ordinary
// condition), or an aggregate or DISTINCT
// over such a filter's rows, runs in memory on a clock the
// test moves; rows come in rounds, each round's end ticks the clock, and at
// random the operators restart from their state. After each round the view
// must equal its SELECT run bounded with the clock calls replaced by the
// clock's time as a literal.
//
//	go test ./planner -run TestTemporalViewDifferential -view-seed 19 -temporal-cases 5000
func TestTemporalViewDifferential(t *testing.T) {
	cases := *temporalCases
	if testing.Short() {
		cases /= 10
	}
	db := newTestDB(t)
	r := tvStream(t, db)
	for n := 0; n < cases; n++ {
		seed := *viewSeed*1_000_033 + int64(n)
		rng := rand.New(rand.NewSource(seed))
		q := genTemporalView(rng)
		text := "CREATE MATERIALIZED VIEW vt AS " + q
		c, err := db.plan(text)
		if err != nil {
			t.Fatalf("case %d (seed %d): %s\nrefused: %v", n, seed, text, err)
		}
		p := newMemPipeline(c, r)
		clock := temporalBase + int64(rng.Intn(20)-10)*1e6
		p.clock = func() int64 { return clock }
		db.rows["tv"] = nil
		in := &dvInput{offsets: make([]int64, r.Partitions)}
		for round := 0; round < 6; round++ {
			if rng.Intn(4) > 0 {
				rows := in.temporalRound(rng)
				db.rows["tv"] = append(db.rows["tv"], rows...)
				if err := p.feed(rng, rows, nil); err != nil {
					t.Fatalf("case %d (seed %d): %s\nround %d: %v", n, seed, q, round, err)
				}
			}
			if err := p.tick(); err != nil {
				t.Fatalf("case %d (seed %d): %s\nround %d: tick: %v", n, seed, q, round, err)
			}
			if err := p.checkpoint(rng); err != nil {
				t.Fatalf("case %d (seed %d): checkpoint: %v", n, seed, err)
			}
			bounded := atClock(q, clock)
			want, err := db.query(t, bounded)
			if err != nil {
				t.Fatalf("case %d (seed %d): bounded %s: %v", n, seed, bounded, err)
			}
			if got := p.contents(); sortedLines(got) != sortedLines(want) {
				t.Fatalf("case %d (seed %d), round %d, clock %s:\n%s\nview:\n%s\nbounded SELECT %s:\n%s\nrows (id, a, b, v):\n%s",
					n, seed, round, types.NewTimestamp(types.TimestampTZ, clock).Text(), text, got, bounded, sortedLines(want), rowLines(db.rows["tv"]))
			}
			// the clock moves on by 0 to 12 s (that it never goes back
			// is TestTemporalFilter's: each partition keeps its own)
			clock += int64(rng.Intn(13)) * 1e6
		}
	}
}

// atClock replaces the clock calls of a temporal view's query by the
// clock's time, as literals of their types.
func atClock(q string, now int64) string {
	tz := "'" + types.NewTimestamp(types.TimestampTZ, now).Text() + "'::timestamptz"
	ts := "'" + types.NewTimestamp(types.Timestamp, now).Text() + "'::timestamp"
	day := "'" + types.NewDate(floorDays(now)).Text() + "'::date"
	return strings.NewReplacer("now()", tz, "current_timestamp", tz, "clock_timestamp()", tz, "localtimestamp", ts, "current_date", day).Replace(q)
}

// floorDays is the day of a time in microseconds (days since the epoch).
func floorDays(us int64) int64 {
	d := us / types.MicrosPerDay
	if us%types.MicrosPerDay < 0 {
		d--
	}
	return d
}

// tvStream registers the stream the temporal differential reads, tv (id
// int8, a timestamptz, b timestamp, v int8, d date) over three partitions.
func tvStream(t *testing.T, db *testDB) *catalog.Relation {
	t.Helper()
	r := &catalog.Relation{Name: "tv", Kind: catalog.Stream, Topic: "tv", Format: "json", Partitions: 3,
		Columns: []catalog.Column{{Name: "id", Type: types.Int8}, {Name: "a", Type: types.TimestampTZ}, {Name: "b", Type: types.Timestamp}, {Name: "v", Type: types.Int8}, {Name: "d", Type: types.Date}}}
	b, err := catalog.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.cat.Apply(201, r.Name, b); err != nil {
		t.Fatal(err)
	}
	return r
}

// temporalRound is 1 to 12 rows of tv: times on whole seconds within a
// minute of the base (now and then NULL), as a read gives them.
func (in *dvInput) temporalRound(rng *rand.Rand) []types.Row {
	at := func(typ types.Type) types.Value {
		if rng.Intn(10) == 0 {
			return types.NullValue
		}
		return types.NewTimestamp(typ, temporalBase+int64(rng.Intn(121)-60)*1e6)
	}
	var rows []types.Row
	for i := 1 + rng.Intn(12); i > 0; i-- {
		in.id++
		part := rng.Intn(len(in.offsets))
		in.offsets[part]++
		day := types.NullValue
		if rng.Intn(10) > 0 { // the base's day, give or take two
			day = types.NewDate(floorDays(temporalBase) + int64(rng.Intn(5)-2))
		}
		row := types.Row{types.NewInt8(in.id), at(types.TimestampTZ), at(types.Timestamp), types.NewInt8(int64(rng.Intn(10))), day}
		rows = append(rows, append(row, types.NullValue, types.NewInt(types.Int4, int64(part)), types.NewInt8(in.offsets[part]), types.NullValue))
	}
	return rows
}

// genTemporalView makes a view's SELECT over tv with one to three
// temporal comparisons and, at times, an ordinary condition.
func genTemporalView(rng *rand.Rand) string {
	clock := func() string {
		c := pick(rng, "now()", "now()", "current_timestamp", "clock_timestamp()", "localtimestamp")
		switch rng.Intn(4) {
		case 0:
			c += fmt.Sprintf(" - INTERVAL '%d seconds'", rng.Intn(40))
		case 1:
			c += fmt.Sprintf(" + INTERVAL '%d seconds'", rng.Intn(40))
		case 2:
			c += fmt.Sprintf(" - INTERVAL '%d minutes %d seconds'", rng.Intn(2), rng.Intn(30))
		}
		return c
	}
	row := func() string {
		c := pick(rng, "a", "b")
		if rng.Intn(3) == 0 {
			c += fmt.Sprintf(" + INTERVAL '%d seconds'", rng.Intn(30))
		}
		return c
	}
	op := func() string { return pick(rng, "<", "<=", ">", ">=") }
	// current_date against the rows' days: the clock starts within 10 s
	// of a midnight and crosses it in some cases
	today := func() string {
		switch rng.Intn(3) {
		case 0:
			return fmt.Sprintf("current_date - %d", rng.Intn(3))
		case 1:
			return fmt.Sprintf("current_date + %d", rng.Intn(3))
		}
		return "current_date"
	}
	var conds []string
	for i := 1 + rng.Intn(3); i > 0; i-- {
		if rng.Intn(5) == 0 {
			d := pick(rng, "d", "d", "b::date", "(a + INTERVAL '30 seconds')::date")
			if rng.Intn(2) == 0 {
				conds = append(conds, d+" "+op()+" "+today())
			} else {
				conds = append(conds, today()+" "+op()+" "+d)
			}
			continue
		}
		switch rng.Intn(4) {
		case 0:
			conds = append(conds, clock()+" "+op()+" "+row())
		case 1:
			conds = append(conds, clock()+" BETWEEN "+row()+" AND "+row())
		default:
			conds = append(conds, row()+" "+op()+" "+clock())
		}
	}
	if rng.Intn(2) == 0 {
		conds = append(conds, pick(rng, "v > 3", "v <> 5", "id % 2 = 0"))
	}
	rng.Shuffle(len(conds), func(i, j int) { conds[i], conds[j] = conds[j], conds[i] })
	where := " FROM tv WHERE " + strings.Join(conds, " AND ")
	switch rng.Intn(6) {
	case 0: // an aggregate over the filter's rows (a hidden view of them)
		return "SELECT v % 3 AS g, count(*) AS n, sum(id) AS s, max(a) AS m" + where + " GROUP BY v % 3"
	case 1:
		return "SELECT count(*) AS n, min(id) AS lo" + where
	case 2:
		return "SELECT DISTINCT v" + where
	}
	return "SELECT " + pick(rng, "id, a, b, v", "id", "id, v * 2 AS v2", "*", "id, d") + where
}
