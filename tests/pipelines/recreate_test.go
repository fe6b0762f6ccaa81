package pipelines

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRecreateViewSameName: a view dropped and created again at once
// under the same name, with another query, four times, on process A.
// Process B follows the catalog: each time it must stop the old pipeline
// and the old copy of the view before it starts the new ones (a Stop
// that came after the new Start left B without the pipeline; a copy
// that resumed from the old table's offsets, or whose rows the old
// copy's cleanup deleted, answered pull queries wrongly). After each
// round B runs the new pipeline, and its pull query equals the bounded
// SELECT of the new query.
func TestRecreateViewSameName(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		a := c.start(t, "a")
		connA := a.Connect(t)
		b := c.start(t, "b")
		connB := b.Connect(t)
		exec(t, connA, "CREATE STREAM rsrc (k BIGINT, v BIGINT) WITH (partitions = 2)")
		var vals []string
		for i := range 40 {
			vals = append(vals, fmt.Sprintf("(%d, %d)", i%5, i*7%13))
		}
		exec(t, connA, "INSERT INTO rsrc VALUES "+strings.Join(vals, ", "))
		for round, agg := range []string{"count(*)", "sum(v)", "max(v)", "min(v) + 100"} {
			if round > 0 {
				exec(t, connA, "DROP MATERIALIZED VIEW rv")
			}
			exec(t, connA, "CREATE MATERIALIZED VIEW rv AS SELECT k, "+agg+" AS x FROM rsrc GROUP BY k")
			waitStats(t, connB, "rv", 60*time.Second, fmt.Sprintf("round %d: b runs rv", round), func(s pipelineStats) bool {
				return s.Status == "RUNNING"
			})
			flush(t, b, connB)
			// A round number in the text keeps pgx from reusing the
			// statement it prepared for the earlier view, whose x had
			// another type.
			want := showAll(t, connB, fmt.Sprintf("SELECT k, %s, %d AS round FROM rsrc GROUP BY k ORDER BY k", agg, round))
			deadline := time.Now().Add(30 * time.Second)
			for {
				got := showAll(t, connB, fmt.Sprintf("SELECT k, x, %d AS round FROM rv ORDER BY k", round))
				if got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d (%s): b's rv is\n%s\nits SELECT:\n%s", round, agg, got, want)
				}
				time.Sleep(pollInterval)
			}
		}
	})
}
