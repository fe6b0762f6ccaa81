package planner_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/types"
)

// scanCounter is a testDB that counts the scans of each dataset.
type scanCounter struct {
	*testDB
	mu    sync.Mutex
	scans map[string]int
}

func (s *scanCounter) Dataset(ctx context.Context, name string) (engine.Dataset, error) {
	s.mu.Lock()
	s.scans[name]++
	s.mu.Unlock()
	return s.testDB.Dataset(ctx, name)
}

// TestCorrelatedSubqueryRunsPerOuterValue: a bounded query's correlated
// subquery runs once per distinct value of the outer columns it reads,
// not once per row, and an uncorrelated subquery inside it once per
// query; the answers stay those of running it per row. (A NOT EXISTS
// over a join over an EXISTS, three hundred rows deep, took 74 s run per
// row, each run scanning its streams again.) Values equal but written
// differently (1.0 and 1.00) are different outer values.
func TestCorrelatedSubqueryRunsPerOuterValue(t *testing.T) {
	db := newTestDB(t)
	var rows []types.Row
	syms := []string{"ACME", "INIT", "ZED"}
	for i := 0; i < 300; i++ {
		rows = append(rows, types.Row{types.NewText(syms[i%3]), types.NullValue, types.NewInt8(int64(i))})
	}
	db.rows["trades"] = rows
	counts := map[string]int{}
	sums := map[string]int64{}
	for _, r := range rows {
		counts[r[0].S]++
		if r[2].I*2 > 299 { // above avg(qty), 149.5
			sums[r[0].S] += r[2].I
		}
	}
	for _, c := range []struct {
		name, sql string
		want      func() string
		scans     int // of trades
	}{
		{"count per sym", `SELECT sym, qty, (SELECT count(*) FROM trades u WHERE u.sym = t.sym) FROM trades t ORDER BY qty`,
			func() string {
				var out []string
				for _, r := range rows {
					out = append(out, fmt.Sprintf("%s | %d | %d", r[0].S, r[2].I, counts[r[0].S]))
				}
				return strings.Join(out, "\n")
			}, 1 + 3},
		{"uncorrelated inside correlated", `SELECT DISTINCT sym, (SELECT sum(qty) FROM trades u WHERE u.sym = t.sym AND u.qty > (SELECT avg(qty) FROM trades)) FROM trades t ORDER BY sym`,
			func() string {
				var out []string
				for _, s := range syms {
					out = append(out, fmt.Sprintf("%s | %d", s, sums[s]))
				}
				return strings.Join(out, "\n")
			}, 1 + 3 + 1},
		{"volatile: per row", `SELECT count(DISTINCT r) FROM (SELECT (SELECT random() + count(*) FROM trades u WHERE u.sym = t.sym) AS r FROM trades t) x`,
			func() string { return "300" }, 1 + 300},
		{"EXISTS per row value", `SELECT count(*) FROM trades t WHERE EXISTS (SELECT 1 FROM trades u WHERE u.qty = t.qty + 1)`,
			func() string { return "299" }, 1 + 300},
	} {
		sc := &scanCounter{testDB: db, scans: map[string]int{}}
		got, err := db.queryOn(t, sc, c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := c.want(); got != want {
			t.Fatalf("%s: %s\ngot:\n%s\nwant:\n%s", c.name, c.sql, head(got), head(want))
		}
		if n := sc.scans["rel:trades"]; n != c.scans {
			t.Errorf("%s: trades scanned %d times, want %d", c.name, n, c.scans)
		}
	}
	got, err := db.query(t, `SELECT (SELECT x::text) FROM (VALUES (1.0::numeric), (1.00::numeric), ('NaN'::numeric), (1.0), (-0::float8::numeric)) v(x)`)
	if want := "1.0\n1.00\nNaN\n1.0\n0"; err != nil || got != want {
		t.Fatalf("outer values written differently: got %q (%v), want %q", got, err, want)
	}
}

// head is the first lines of s.
func head(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	return strings.Join(lines[:min(5, len(lines))], "\n")
}
