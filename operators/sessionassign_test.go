package operators

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// sessionCase is the input of one TestSessionAssignRandom case: rows of
// (k int or NULL, t timestamp or NULL, v int), and the gap.
type sessionCase struct {
	gap  int64
	rows []types.Row
}

func (c sessionCase) String() string {
	return fmt.Sprintf("gap %d: %s", c.gap, show(c.rows))
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
		c := sessionCase{gap: 1 + rng.Int63n(6)}
		for n := rng.Intn(14); n > 0; n-- {
			k, ts := types.NewInt(types.Int8, rng.Int63n(3)), types.NewTimestamp(types.Timestamp, rng.Int63n(40))
			if rng.Intn(8) == 0 {
				k = types.NullValue
			}
			if rng.Intn(12) == 0 {
				ts = types.NullValue
			}
			c.rows = append(c.rows, types.Row{k, ts, types.NewInt(types.Int8, rng.Int63n(100))})
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
				smaller := sessionCase{gap: c.gap, rows: slices.Delete(slices.Clone(c.rows), j, j+1)}
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

func sessionName(k types.Value, start, end int64) string {
	return fmt.Sprintf("%s[%d,%d)", k, start, end)
}

// assignSessions runs the rows through SessionAssign in random batches.
func assignSessions(t *testing.T, c sessionCase, rng *rand.Rand) string {
	t.Helper()
	op, err := Build(&plan.Step{Op: plan.OpSessionAssign, Window: &plan.WindowSpec{Kind: "session", Gap: c.gap}, TimeCol: 1, TimeType: types.Timestamp,
		GroupBy: []*expr.Expr{expr.Col(0, types.Int8, "k")}, Width: 3}, nil, AbortOnError)
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
		if len(r) != 5 || !slices.Equal(r[:3], rowWith(c.rows, r[:3])) {
			t.Fatalf("SessionAssign row %s is not an input row with its window", show([]types.Row{r}))
		}
		s := sessions[sessionName(r[0], r[3].I, r[4].I)]
		sessions[sessionName(r[0], r[3].I, r[4].I)] = [2]int64{s[0] + 1, s[1] + r[2].I}
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
			byKey[r[0].String()] = append(byKey[r[0].String()], r)
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
			sessions[sessionName(rows[first][0], rows[first][1].I, rows[last][1].I+c.gap)] = [2]int64{count, sum}
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
		GroupBy: []*expr.Expr{expr.Col(0, types.Int8, "k")},
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
	for _, r := range out { // k, window_start, window_end, count, sum
		sessions[sessionName(r[0], r[1].I, r[2].I)] = [2]int64{r[3].I, int64(types.AsFloat(r[4]))}
	}
	return sessionSummary(sessions)
}
