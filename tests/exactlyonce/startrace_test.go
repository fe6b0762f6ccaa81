package exactlyonce

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

// TestPipelineCreatedDuringStart: every fvsql process runs every
// pipeline, also one another process creates while this one is starting.
// Process a creates pipelines one after another while process b starts
// (a few rounds, b restarted each time); afterwards b must run every
// pipeline a runs.
//
// A regression test: server.Open replays the catalog topic, lists the
// catalog to start views and pipelines, and only then follows changes; a
// change applied between that list and following used to be applied to
// the catalog without starting its pipeline (b never ran it until it
// restarted). The changes applied meanwhile are now kept and followed
// when the process goes live.
func TestPipelineCreatedDuringStart(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		a := c.start(t, "a", "--stream-consumers", "1")
		conn := connect(t, a)
		exec(t, conn, "CREATE STREAM race_in (id BIGINT, v BIGINT) WITH (partitions = 2, key = 'id')")
		n := 0
		create := func(conn *pgx.Conn) error {
			n++
			ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
			defer cancel()
			var sql string
			if n%3 == 0 {
				sql = fmt.Sprintf("CREATE MATERIALIZED VIEW race_v%d AS SELECT id, count(*) AS n FROM race_in GROUP BY id", n)
			} else {
				sql = fmt.Sprintf("CREATE STREAM race_s%d AS SELECT id, v + %d AS w FROM race_in", n, n)
			}
			_, err := conn.Exec(ctx, sql)
			return err
		}
		// Pipelines that exist before b starts make its start longer.
		for i := 0; i < 6; i++ {
			if err := create(conn); err != nil {
				t.Fatal(err)
			}
		}
		var b *fvsqltest.Process
		const rounds = 4
		for round := 1; round <= rounds; round++ {
			if b == nil {
				b = c.start(t, "b", "--stream-consumers", "1")
			} else {
				b.Stop(t)
				b.Restart(t)
			}
			// Create pipelines on a until b accepts connections, and two more.
			ready := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), fvsqltest.StartTimeout)
				defer cancel()
				ready <- b.WaitReady(ctx)
			}()
			created, after := 0, -1
			for after != 0 {
				if err := create(conn); err != nil {
					t.Fatal(err)
				}
				created++
				if after > 0 {
					after--
				}
				select {
				case err := <-ready:
					if err != nil {
						t.Fatal(err)
					}
					after = 2
				default:
				}
			}
			want := pipelineNames(t, conn)
			connB := connect(t, b)
			var missing []string
			deadline := time.Now().Add(30 * time.Second)
			for {
				got := map[string]bool{}
				for _, name := range pipelineNames(t, connB) {
					got[name] = true
				}
				missing = missing[:0]
				for _, name := range want {
					if !got[name] {
						missing = append(missing, name)
					}
				}
				if len(missing) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(pollInterval)
			}
			connB.Close(context.Background())
			t.Logf("round %d: %d pipelines created while b started; a runs %d, b misses %d: %v", round, created, len(want), len(missing), missing)
			if len(missing) > 0 {
				lines := b.LogLines(func(l string) bool {
					return strings.Contains(l, "fvsql ready") || strings.Contains(l, "=== fvsqltest")
				})
				t.Errorf("BUG: b does not run %v 30s after they were created (created on a while b was starting; b's starts: %s)",
					missing, strings.Join(lines, " | "))
				return
			}
		}
	})
}

// pipelineNames lists the pipelines a server runs.
func pipelineNames(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	m, err := allStats(conn)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
