package operators

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// sessionCase is the input of one TestSessionAssignRandom case: rows of
// (k int or NULL, t timestamp or NULL, v int, k2 int), the gap, and
// whether k2 is a key too.
type sessionCase struct {
	gap  int64
	rows []types.Row
	two  bool
}

func (c sessionCase) String() string {
	return fmt.Sprintf("gap %d, keys k%s: %s", c.gap, map[bool]string{true: " and k2"}[c.two], show(c.rows))
}

// keyOf is a row's key as the sessions' names show it.
func (c sessionCase) keyOf(r types.Row) string {
	if c.two {
		return r[0].String() + "/" + r[3].String()
	}
	return r[0].String()
}

// groupBy is the case's key columns.
func (c sessionCase) groupBy() []*expr.Expr {
	keys := []*expr.Expr{expr.Col(0, types.Int8, "k")}
	if c.two {
		keys = append(keys, expr.Col(3, types.Int8, "k2"))
	}
	return keys
}

// TestSessionAssignRandom checks the bounded SESSION step three ways, over
// thousands of seeded random inputs (keys and times from small ranges, so
// rows share times and sit exactly a gap apart; NULL keys and times): its
// sessions, counted and summed per (k, start, end), must equal those of a
// direct reading of the definition (each key's times in order, split
// where neighbours are more than the gap apart) and those the continuous
// query's SessionAggregate ends with over the same rows, fed in a random
// order and batches. A failing case is shrunk to a minimal one and printed.
func TestSessionAssignRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(19))
	for i := 0; i < 3000; i++ {
		c := sessionCase{gap: 1 + rng.Int63n(6), two: rng.Intn(3) == 0}
		n, span := rng.Intn(14), int64(40)
		if i%100 == 99 { // more rows than one output batch
			n, span = 1500+rng.Intn(1500), 4000
		}
		for ; n > 0; n-- {
			k, ts := types.NewInt(types.Int8, rng.Int63n(3)), types.NewTimestamp(types.Timestamp, rng.Int63n(span))
			if rng.Intn(8) == 0 {
				k = types.NullValue
			}
			if rng.Intn(12) == 0 {
				ts = types.NullValue
			}
			c.rows = append(c.rows, types.Row{k, ts, types.NewInt(types.Int8, rng.Int63n(100)), types.NewInt(types.Int8, rng.Int63n(2))})
		}
		fails := func(c sessionCase) string {
			got := assignSessions(t, c, rng)
			if want := definedSessions(c); got != want {
				return fmt.Sprintf("SessionAssign %s, by definition %s", got, want)
			}
			if want := aggregatedSessions(t, c, rng); got != want {
				return fmt.Sprintf("SessionAssign %s, SessionAggregate %s", got, want)
			}
			return ""
		}
		if fails(c) == "" {
			continue
		}
		// shrink: drop rows while it still fails
		for shrunk := true; shrunk; {
			shrunk = false
			for j := range c.rows {
				smaller := sessionCase{gap: c.gap, two: c.two, rows: slices.Delete(slices.Clone(c.rows), j, j+1)}
				if fails(smaller) != "" {
					c, shrunk = smaller, true
					break
				}
			}
		}
		t.Fatalf("case %d, minimal input %s: %s", i, c, fails(c))
	}
}

// sessionSummary renders sessions as sorted "k[start,end)=count/sum".
func sessionSummary(sessions map[string][2]int64) string {
	var parts []string
	for s, cs := range sessions {
		parts = append(parts, fmt.Sprintf("%s=%d/%d", s, cs[0], cs[1]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func sessionName(k string, start, end int64) string {
	return fmt.Sprintf("%s[%d,%d)", k, start, end)
}

// assignSessions runs the rows through SessionAssign in random batches.
func assignSessions(t *testing.T, c sessionCase, rng *rand.Rand) string {
	t.Helper()
	op, err := Build(&plan.Step{Op: plan.OpSessionAssign, Window: &plan.WindowSpec{Kind: "session", Gap: c.gap}, TimeCol: 1, TimeType: types.Timestamp,
		GroupBy: c.groupBy(), Width: 4}, nil, AbortOnError)
	if err != nil {
		t.Fatal(err)
	}
	var out []types.Row
	for rest := c.rows; len(rest) > 0; {
		n := 1 + rng.Intn(len(rest))
		if err := op.Process(&Batch{Rows: rest[:n]}, collect(&out, nil)); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if len(out) > 0 {
		t.Fatalf("SessionAssign emitted before Finish: %s", show(out))
	}
	if err := op.Finish(collect(&out, nil)); err != nil {
		t.Fatal(err)
	}
	sessions := map[string][2]int64{}
	for _, r := range out {
		if len(r) != 6 || !slices.Equal(r[:4], rowWith(c.rows, r[:4])) {
			t.Fatalf("SessionAssign row %s is not an input row with its window", show([]types.Row{r}))
		}
		name := sessionName(c.keyOf(r), r[4].I, r[5].I)
		sessions[name] = [2]int64{sessions[name][0] + 1, sessions[name][1] + r[2].I}
	}
	return sessionSummary(sessions)
}

// rowWith returns the input row equal to r, or nil.
func rowWith(rows []types.Row, r types.Row) types.Row {
	for _, in := range rows {
		if slices.Equal(in, r) {
			return in
		}
	}
	return nil
}

// definedSessions reads the definition: per key (NULLs one key), the
// times in order, a new session wherever the step exceeds the gap.
func definedSessions(c sessionCase) string {
	byKey := map[string][]types.Row{}
	for _, r := range c.rows {
		if !r[1].IsNull() {
			byKey[c.keyOf(r)] = append(byKey[c.keyOf(r)], r)
		}
	}
	sessions := map[string][2]int64{}
	for _, rows := range byKey {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i][1].I < rows[j][1].I })
		for first := 0; first < len(rows); {
			last := first
			count, sum := int64(1), rows[first][2].I
			for last+1 < len(rows) && rows[last+1][1].I <= rows[last][1].I+c.gap {
				last++
				count, sum = count+1, sum+rows[last][2].I
			}
			sessions[sessionName(c.keyOf(rows[first]), rows[first][1].I, rows[last][1].I+c.gap)] = [2]int64{count, sum}
			first = last + 1
		}
	}
	return sessionSummary(sessions)
}

// aggregatedSessions runs the rows, shuffled, through the continuous
// query's SessionAggregate (no watermark: no row is late) with count(*)
// and sum(v).
func aggregatedSessions(t *testing.T, c sessionCase, rng *rand.Rand) string {
	t.Helper()
	op, err := Build(&plan.Step{Op: plan.OpSession, Window: &plan.WindowSpec{Kind: "session", Gap: c.gap}, TimeCol: 1, TimeType: types.Timestamp,
		GroupBy: c.groupBy(),
		Aggs:    []plan.AggSpec{{Name: "count", Star: true}, {Name: "sum", Arg: expr.Col(2, types.Int8, "v")}}},
		nil, func(*Batch, int, error) error { return nil }) // NULL times are set aside
	if err != nil {
		t.Fatal(err)
	}
	rows := slices.Clone(c.rows)
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	var out []types.Row
	for len(rows) > 0 {
		n := 1 + rng.Intn(len(rows))
		if err := op.Process(&Batch{Rows: rows[:n]}, collect(&out, nil)); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
	if err := op.Finish(collect(&out, nil)); err != nil {
		t.Fatal(err)
	}
	sessions := map[string][2]int64{}
	for _, r := range out { // k[, k2], window_start, window_end, count, sum
		key, w := r[0].String(), r[1:]
		if c.two {
			key, w = key+"/"+r[1].String(), r[2:]
		}
		sessions[sessionName(key, w[0].I, w[1].I)] = [2]int64{w[2].I, int64(types.AsFloat(w[3]))}
	}
	return sessionSummary(sessions)
}

// TestSessionAssignBudget: the rows SessionAssign holds are charged to
// the query's budget, which stops a query past its limit (53200), and
// given back when it ends.
func TestSessionAssignBudget(t *testing.T) {
	step := &plan.Step{Op: plan.OpSessionAssign, Window: &plan.WindowSpec{Kind: "session", Gap: 10}, TimeCol: 1, TimeType: types.Timestamp,
		GroupBy: []*expr.Expr{expr.Col(0, types.Int8, "k")}, Width: 2}
	rows := func(n int) []types.Row {
		var out []types.Row
		for i := 0; i < n; i++ {
			out = append(out, types.Row{types.NewInt(types.Int8, int64(i%7)), types.NewTimestamp(types.Timestamp, int64(i))})
		}
		return out
	}
	budget := NewBudget(context.Background(), 64<<10, "query_memory")
	op, err := BuildWith(step, nil, AbortOnError, &Resources{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Process(&Batch{Rows: rows(100)}, nil); err != nil {
		t.Fatalf("100 rows within 64 KiB: %v", err)
	}
	if budget.Used() == 0 {
		t.Fatal("held rows are not charged")
	}
	var out []types.Row
	if err := op.Finish(collect(&out, nil)); err != nil || len(out) != 100 {
		t.Fatalf("Finish: %v, %d rows", err, len(out))
	}
	if budget.Used() != 0 {
		t.Fatalf("%d bytes still charged after Finish", budget.Used())
	}
	op, _ = BuildWith(step, nil, AbortOnError, &Resources{Budget: budget})
	err = op.Process(&Batch{Rows: rows(10000)}, nil)
	if pgerror.CodeOf(err) != pgerror.OutOfMemory {
		t.Fatalf("10,000 rows over 64 KiB: %v, want 53200", err)
	}
}
