package planner_test

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// TestHeldRowsLimits: the bounded steps that hold rows while they run, a
// recursive query's work table and seen rows and a set operation's
// counts, charge the query's memory account: one that never ends (a
// recursion without a stop) or holds too much (INTERSECT of 20,000 rows
// under 256 kB) fails with 53200, and gives back what it held, so the
// same plan runs under a larger limit. (A recursion whose work table
// stays small runs until its statement_timeout, as in PostgreSQL.)
func TestHeldRowsLimits(t *testing.T) {
	db := newTestDB(t)
	var rows []types.Row
	for i := 0; i < 20000; i++ {
		rows = append(rows, wrow("a", int64(i), i%7))
	}
	addStream(t, db, "hl", rows)
	onErr := func(_ *operators.Batch, _ int, err error) error { return err }
	run := func(q string, limit int64) (int, error) {
		t.Helper()
		stmts, err := sql.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		p, err := planner.PlanQuery(db.cat, stmts[0].Stmt.(*sql.Query), nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		err = engine.RunBoundedLimits(context.Background(), p.Root, db, nil, onErr, engine.Limits{MemoryBytes: limit}, func(b *operators.Batch) error {
			n += len(b.Rows)
			return nil
		})
		return n, err
	}
	for _, q := range []string{
		// the work table doubles with each run
		"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + x FROM t, (VALUES (1), (2)) v(x)) SELECT count(*) FROM t",
		"WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t) SELECT max(n) FROM t",
	} {
		if _, err := run(q, 1<<20); pgerror.CodeOf(err) != pgerror.OutOfMemory {
			t.Fatalf("%s under 1 MB: %v, want 53200", q, err)
		}
	}
	const q = "SELECT id, v FROM hl INTERSECT SELECT id, v FROM hl WHERE v > 0"
	if _, err := run(q, 256<<10); pgerror.CodeOf(err) != pgerror.OutOfMemory {
		t.Fatalf("%s under 256 kB: %v, want 53200", q, err)
	}
	if n, err := run(q, 64<<20); err != nil || n != 20000-20000/7-1 {
		t.Fatalf("%s under 64 MB: %d rows, %v", q, n, err)
	}
}
