package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fvsql/fvsql/tests/testenv"
)

// TestPipelineSurvivesRedisRestart: a pipeline reading a Redis stream
// (ingest bridge) and a sink writing one (sink bridge) go RETRYING with
// the error while their Redis server is down, resume by themselves when it
// returns, and lose nothing: every id written before, during and after the
// outage reaches the Kafka output (at least once) and the Redis sink
// (exactly once: the sink stores its source positions with its entries).
//
// The test runs its own redis-server (it must restart it), with an
// append-only file so the server's data survives the restart as a
// production Redis's would.
func TestPipelineSurvivesRedisRestart(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		rs := startRedis(t)
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		url := "redis://" + rs.addr
		exec(t, conn, fmt.Sprintf("CREATE STREAM ev (id BIGINT, v TEXT) WITH (backend = '%s', key = 'ev')", url))
		exec(t, conn, "CREATE STREAM copied AS SELECT id, upper(v) AS v FROM ev")
		exec(t, conn, "CREATE STREAM nums (id BIGINT) WITH (partitions = 2, key = 'id')")
		exec(t, conn, fmt.Sprintf("CREATE SINK back AS SELECT id, id * 2 AS twice FROM nums WITH (backend = '%s', key = 'back')", url))

		const perPhase = 300
		insertIDs := func(stream string, from, to int) {
			t.Helper()
			for lo := from; lo <= to; lo += 100 {
				var vals []string
				for id := lo; id < lo+100 && id <= to; id++ {
					if stream == "ev" {
						vals = append(vals, fmt.Sprintf("(%d, 'v%d')", id, id))
					} else {
						vals = append(vals, fmt.Sprintf("(%d)", id))
					}
				}
				exec(t, conn, "INSERT INTO "+stream+" VALUES "+strings.Join(vals, ", "))
			}
		}
		// Before the outage.
		insertIDs("ev", 1, perPhase)
		insertIDs("nums", 1, perPhase)
		flush(t, srv, conn)

		// The outage: the sink has rows to write and cannot; the ingest
		// bridge cannot read.
		rs.stop(t)
		insertIDs("nums", perPhase+1, 2*perPhase)
		for _, name := range []string{"back", "copied"} {
			st := waitStats(t, conn, name, 60*time.Second, name+" RETRYING while Redis is down", func(s pipelineStats) bool {
				return s.Status == "RETRYING" && s.Error != nil && *s.Error != ""
			})
			t.Logf("%s during the outage: %s", name, *st.Error)
		}

		// Redis returns; both pipelines resume without help.
		rs.start(t)
		insertIDs("ev", perPhase+1, 2*perPhase)
		insertIDs("nums", 2*perPhase+1, 3*perPhase)
		for _, name := range []string{"back", "copied"} {
			waitStats(t, conn, name, 90*time.Second, name+" RUNNING after Redis returned", func(s pipelineStats) bool {
				return s.Status == "RUNNING"
			})
		}
		flush(t, srv, conn)

		// Redis in, Kafka out: every id, at least once, with its value.
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		rows, err := conn.Query(ctx, "SELECT id, v FROM copied")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int64]int{}
		total := 0
		for rows.Next() {
			var id int64
			var v string
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			if v != fmt.Sprintf("V%d", id) {
				t.Errorf("copied: id %d has v %q, want %q", id, v, fmt.Sprintf("V%d", id))
			}
			seen[id]++
			total++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		missing := missingIDs(seen, 2*perPhase)
		if len(missing) > 0 {
			t.Errorf("copied lost %d of %d ids across the Redis restart: %s", len(missing), 2*perPhase, head(missing, 20))
		}
		t.Logf("copied: %d rows, %d distinct ids (Redis sources are at-least-once: %d redelivered)", total, len(seen), total-len(seen))

		// Kafka in, Redis out: every id exactly once.
		rdb := goredis.NewClient(&goredis.Options{Addr: rs.addr})
		defer rdb.Close()
		entries, err := rdb.XRange(ctx, c.prefix+"back", "-", "+").Result() // fvsql prefixes Redis keys too
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]int{}
		for _, e := range entries {
			raw, _ := e.Values["v"].(string)
			var row struct{ ID, Twice int64 }
			if err := json.Unmarshal([]byte(raw), &row); err != nil {
				t.Fatalf("sink entry %s: %q: %v", e.ID, raw, err)
			}
			if row.Twice != 2*row.ID {
				t.Errorf("sink entry %s: %q: twice is not 2 × id", e.ID, raw)
			}
			got[row.ID]++
		}
		if missing := missingIDs(got, 3*perPhase); len(missing) > 0 {
			t.Errorf("the Redis sink lost %d of %d ids across the restart: %s", len(missing), 3*perPhase, head(missing, 20))
		}
		var dups []int64
		for id, n := range got {
			if n > 1 {
				dups = append(dups, id)
			}
		}
		if len(dups) > 0 {
			t.Errorf("the Redis sink wrote %d ids more than once across the restart: %s", len(dups), head(dups, 20))
		}
		t.Logf("sink: %d entries for %d ids", len(entries), len(got))
	})
}

// missingIDs lists the ids in 1..n that seen lacks.
func missingIDs(seen map[int64]int, n int) []int64 {
	var out []int64
	for id := int64(1); id <= int64(n); id++ {
		if seen[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// redisServer is a redis-server process the test owns.
type redisServer struct {
	addr, dir string
	port      int
	cmd       *osexec.Cmd
}

// startRedis starts a private redis-server on a free loopback port with an
// append-only file (the shared FVSQL_TEST_REDIS cannot be restarted).
// Without the binary the test is skipped, or fails under CI or when the
// test command started a Redis (it installs redis-server).
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	if _, err := osexec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("FVSQL_TEST_REDIS") != "" {
			t.Fatal("redis-server is not installed (./scripts/test.sh installs it)")
		}
		t.Skip("redis-server is not installed; ./scripts/test.sh installs it")
	}
	port := testenv.FreePort(t)
	rs := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, dir: t.TempDir()}
	rs.start(t)
	t.Cleanup(func() {
		if rs.cmd != nil {
			_ = rs.cmd.Process.Kill()
			_ = rs.cmd.Wait()
		}
	})
	return rs
}

func (rs *redisServer) start(t *testing.T) {
	t.Helper()
	cmd := osexec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(rs.port),
		"--dir", rs.dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "")
	logf, err := os.OpenFile(filepath.Join(rs.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	rs.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", rs.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(rs.dir, "redis.log"))
			t.Fatalf("redis-server on %s did not start within 20s: %s", rs.addr, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop shuts Redis down (SIGTERM: it finishes its append-only file) and
// waits for it to exit.
func (rs *redisServer) stop(t *testing.T) {
	t.Helper()
	if err := rs.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rs.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = rs.cmd.Process.Kill()
		<-done
	}
	rs.cmd = nil
	t.Logf("redis-server on %s stopped", rs.addr)
}
