package pipelines

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

// seedEnv overrides the seed of the random kill moments.
const seedEnv = "FVSQL_TEST_SEED"

const (
	restartPipeline = "CREATE STREAM doubled AS SELECT id, v * 2 AS v2 FROM events"
	restartInput    = "CREATE STREAM events (id BIGINT, v BIGINT) WITH (partitions = 8, key = 'id')"
)

// TestPipelineGracefulRestart: while rows keep arriving, the server is
// stopped with SIGTERM (each pipeline consumer commits its epoch and
// leaves the group) and restarted on the same data directory, twice. No
// row is lost, none is duplicated.
func TestPipelineGracefulRestart(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		setupRestartPipeline(t, srv)
		in := startInserter(t, srv.DSN(), "events", 50, 20*time.Millisecond, 40000)
		for round := 1; round <= 2; round++ {
			in.waitMore(t, 1500, 60*time.Second)
			t.Logf("round %d: %d rows acknowledged; SIGTERM", round, in.ackedCount())
			srv.Stop(t)
			srv.Restart(t)
			waitReady(t, srv)
			conn := srv.Connect(t)
			waitStats(t, conn, "doubled", 60*time.Second, "the restarted pipeline to run", func(s pipelineStats) bool {
				return s.Status == "RUNNING" && s.Partitions > 0
			})
			conn.Close(context.Background())
			in.waitMore(t, 1500, 60*time.Second)
		}
		acked, uncertain := in.finish(t)
		conn := srv.Connect(t)
		flush(t, srv, conn)
		checkOutput(t, c, acked, uncertain, true, "")
	})
}

// TestPipelineKillRestart: while rows keep arriving, the server is killed
// with SIGKILL at random moments (seeded; FVSQL_TEST_SEED overrides the
// seed) three times and restarted on the same data directory each time. No
// acknowledged row may be missing from the output, and since exactly-once
// is on, no row may be there twice.
//
// KNOWN BUG (embedded broker; fails at commit 3683582, passes on the
// real broker): SIGKILL kills the embedded broker (kfake) with the server.
// On restart kfake "implicitly aborts" the transactions that were open
// (kfake persist.go, loadPartitionFullReplay: an aborted-transaction index
// entry, but no ABORT control record in the partition). Read-committed
// consumers then either see the open transaction's records committed by
// the same producer's next COMMIT marker (duplicates), or drop the same
// producer's later committed records until its next ABORT marker (rows
// lost while the pipeline's offsets are committed past them).
func TestPipelineKillRestart(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		seed := uint64(4242)
		if s := os.Getenv(seedEnv); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", seedEnv, s, err)
			}
			seed = v
		}
		t.Logf("kill moments from seed %d (%s)", seed, seedEnv)
		rng := rand.New(rand.NewPCG(seed, 7))

		srv := c.start(t, "fvsql")
		setupRestartPipeline(t, srv)
		in := startInserter(t, srv.DSN(), "events", 40, 40*time.Millisecond, 60000)
		for kill := 1; kill <= 3; kill++ {
			in.waitMore(t, 400, 60*time.Second)
			// A random moment while rows flow and epochs are open.
			time.Sleep(time.Duration(200+rng.IntN(2300)) * time.Millisecond)
			t.Logf("kill %d: %d rows acknowledged; SIGKILL", kill, in.ackedCount())
			srv.Kill(t)
			srv.Restart(t)
			waitReady(t, srv)
			conn := srv.Connect(t)
			// Back to owning every partition: the dead consumers' group
			// sessions have expired and the pipeline runs again.
			waitStats(t, conn, "doubled", 90*time.Second, "the restarted pipeline to own all 8 partitions", func(s pipelineStats) bool {
				return s.Partitions == 8
			})
			conn.Close(context.Background())
		}
		in.waitMore(t, 400, 60*time.Second)
		acked, uncertain := in.finish(t)
		conn := srv.Connect(t)
		flush(t, srv, conn)
		checkOutput(t, c, acked, uncertain, true,
			"BUG (exactly-once): with --stream-exactly-once on (the default), SIGKILL and restart must not duplicate output rows")
	})
}

// TestPipelineSurvivesRestartDefinition: a pipeline created before a
// restart is RUNNING again after it without any manual action, and new
// rows flow through it (and old ones are not processed again).
func TestPipelineSurvivesRestartDefinition(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM src (id BIGINT, name TEXT) WITH (partitions = 2)")
		exec(t, conn, "CREATE STREAM names AS SELECT id, upper(name) AS name FROM src WHERE id > 0")
		exec(t, conn, "INSERT INTO src VALUES (1, 'ann'), (2, 'bob'), (-1, 'neg')")
		flush(t, srv, conn)
		checkNames(t, conn, map[int64]string{1: "ANN", 2: "BOB"})
		conn.Close(context.Background())

		srv.Stop(t)
		srv.Restart(t)
		conn = srv.Connect(t)
		deadline := time.Now().Add(60 * time.Second)
		for {
			status, err := fvsqltest.ShowPipelineStatus(conn, "names")
			if err == nil && status == "RUNNING" {
				t.Logf("SHOW PIPELINES after the restart: names %s", status)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("SHOW PIPELINES after the restart: pipeline names status %q (err %v), want RUNNING within 60s", status, err)
			}
			time.Sleep(pollInterval)
		}
		exec(t, conn, "INSERT INTO src VALUES (3, 'cy'), (4, 'di'), (-2, 'neg')")
		flush(t, srv, conn)
		checkNames(t, conn, map[int64]string{1: "ANN", 2: "BOB", 3: "CY", 4: "DI"})
	})
}

func setupRestartPipeline(t *testing.T, srv *fvsqltest.Process) {
	t.Helper()
	conn := srv.Connect(t)
	exec(t, conn, restartInput)
	exec(t, conn, restartPipeline)
	waitStats(t, conn, "doubled", 60*time.Second, "the pipeline to run", func(s pipelineStats) bool {
		return s.Status == "RUNNING" && s.Partitions > 0
	})
	conn.Close(context.Background())
}

func waitReady(t *testing.T, srv *fvsqltest.Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fvsqltest.StartTimeout)
	defer cancel()
	start := time.Now()
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted fvsql accepts connections after %s", time.Since(start).Round(time.Millisecond))
}

// checkOutput reads the doubled stream's topic read_committed and checks
// it against what the inserter wrote: every acknowledged id at least once,
// uncertain ids at most once, no other id, v2 = 2 * v = 6 * id, and, when
// exactlyOnce, no id twice (dupNote prefixes that error).
func checkOutput(t *testing.T, c *cluster, acked, uncertain []int64, exactlyOnce bool, dupNote string) {
	t.Helper()
	recs := c.readCommitted(t, c.topic("doubled"))
	out := decodeDoubled(t, recs)
	r := countIDs(out, acked, uncertain)
	t.Logf("output: %d records, %d distinct ids; %d of %d uncertain ids made it", len(recs), len(out), r.uncertainIn, len(uncertain))
	if len(r.missing) > 0 {
		t.Errorf("%d acknowledged ids are missing from the output: %s", len(r.missing), head(r.missing, 30))
		diagnoseMissing(t, c, "events", "doubled", r.missing)
	}
	if len(r.unknown) > 0 {
		t.Errorf("%d ids in the output were never inserted: %s", len(r.unknown), head(r.unknown, 30))
	}
	if len(r.duplicated) > 0 {
		msg := "ids in the output more than once"
		if dupNote != "" {
			msg = dupNote + ": " + msg
		}
		if exactlyOnce {
			t.Errorf("%s: %d ids, %d extra records: %s", msg, len(r.duplicated), len(recs)-len(out), head(r.duplicated, 30))
			logDuplicates(t, recs, r.duplicated, 6)
		} else {
			t.Logf("%s (allowed): %d", msg, len(r.duplicated))
		}
	}
}

// decodeDoubled counts the ids of the doubled stream's records and checks
// each record's value.
func decodeDoubled(t *testing.T, recs []*kgo.Record) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	bad := 0
	for _, r := range recs {
		var row struct {
			ID *int64 `json:"id"`
			V2 *int64 `json:"v2"`
		}
		if err := json.Unmarshal(r.Value, &row); err != nil || row.ID == nil || row.V2 == nil || *row.V2 != *row.ID*6 {
			if bad++; bad <= 10 {
				t.Errorf("output record p%d@%d is not {id, v2 = 6*id}: %q (%v)", r.Partition, r.Offset, r.Value, err)
			}
			continue
		}
		out[*row.ID]++
	}
	return out
}

func checkNames(t *testing.T, conn *pgx.Conn, want map[int64]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT id, name FROM names")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	n := 0
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		got[id] = name
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) || len(got) != len(want) {
		t.Errorf("names has %d rows (%v), want %v", n, got, want)
		return
	}
	for id, name := range want {
		if got[id] != name {
			t.Errorf("names: id %d = %q, want %q (all: %v)", id, got[id], name, got)
		}
	}
}
