package pipelines

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFlushOffsetResetLatest: under STREAM_OFFSET_RESET=latest a new
// pipeline starts from its inputs' ends when it is created. FLUSH right
// after the CREATE must return (it hung until its 2-minute bound, its
// groups having no committed offsets until some new row arrived), rows
// present before the CREATE stay out, and rows after it come through,
// also across the repartition stage of a view, whose internal topic the
// next stage must read from its start.
func TestFlushOffsetResetLatest(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql", "--stream-offset-reset", "latest")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM lin (k BIGINT, g BIGINT) WITH (partitions = 2)")
		exec(t, conn, "INSERT INTO lin VALUES (1, 1), (2, 2), (3, 1)")
		exec(t, conn, "CREATE STREAM lout AS SELECT k, g FROM lin WHERE k > 0")
		exec(t, conn, "CREATE MATERIALIZED VIEW lagg AS SELECT g, count(*) AS n FROM lin GROUP BY g")
		flushWithin(t, srv, conn, 30*time.Second)
		exec(t, conn, "INSERT INTO lin VALUES (4, 1), (5, 2), (6, 2)")
		flushWithin(t, srv, conn, 30*time.Second)
		if got := queryStrings(t, conn, "SELECT k FROM lout ORDER BY k"); got != "4 5 6" {
			t.Errorf("lout holds k = %s, want 4 5 6 (the rows inserted after the CREATE)", got)
		}
		if got := queryStrings(t, conn, "SELECT g || ':' || n FROM lagg ORDER BY g"); got != "1:1 2:2" {
			t.Errorf("lagg = %s, want 1:1 2:2 (counts of the rows after the CREATE)", got)
		}
	})
}

// TestFlushGoesOnWithoutAStuckPipeline: a pipeline that cannot make
// progress (a sink whose Redis is gone) must not hold FLUSH for the
// others: after STREAM_FLUSH_GIVE_UP FLUSH returns, every other pipeline
// flushed, with a notice naming the stuck one.
func TestFlushGoesOnWithoutAStuckPipeline(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		rs := startRedis(t)
		srv := c.start(t, "fvsql", "--stream-flush-give-up", "3s")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM fin (k BIGINT) WITH (partitions = 2)")
		exec(t, conn, "CREATE STREAM fout AS SELECT k * 10 AS k10 FROM fin")
		exec(t, conn, fmt.Sprintf("CREATE SINK fsink AS SELECT k FROM fin WITH (backend = 'redis://%s', key = 'fsink')", rs.addr))
		exec(t, conn, "INSERT INTO fin VALUES (1), (2)")
		flush(t, srv, conn)
		rs.stop(t)
		exec(t, conn, "INSERT INTO fin VALUES (3), (4)")
		waitStats(t, conn, "fsink", 60*time.Second, "fsink RETRYING without its Redis", func(s pipelineStats) bool {
			return s.Status == "RETRYING"
		})

		var mu sync.Mutex
		var notices []string
		cfg, err := pgx.ParseConfig(srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			notices = append(notices, n.Message)
			mu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		nconn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer nconn.Close(context.Background())
		start := time.Now()
		if _, err := nconn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatalf("FLUSH with a stuck sink: %v", err)
		}
		took := time.Since(start)
		t.Logf("FLUSH returned after %s; notices: %q", took.Round(time.Millisecond), notices)
		if took > 45*time.Second {
			t.Errorf("FLUSH took %s with a 3 s give-up", took)
		}
		mu.Lock()
		named := len(notices) == 1 && strings.Contains(notices[0], `"fsink"`)
		mu.Unlock()
		if !named {
			t.Errorf("FLUSH notices %q: want one naming pipeline \"fsink\"", notices)
		}
		if got := queryStrings(t, conn, "SELECT k10 FROM fout ORDER BY k10"); got != "10 20 30 40" {
			t.Errorf("fout = %s after FLUSH, want 10 20 30 40: the healthy pipeline must be flushed", got)
		}
	})
}

// queryStrings runs a one-column query and joins its values with spaces.
func queryStrings(t *testing.T, conn *pgx.Conn, q string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals[0]))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, " ")
}

// TestWindowsCloseWhenRowsSitInOnePartition: a 4-partition stream whose
// rows all sit in one partition (one key), then goes quiet. The window
// stage behind the repartition hears watermarks from that one upstream
// partition only; the three that never held data must not hold its
// watermark back past the idle timeout, so the windows the watermark
// passed close without any further row (they stayed open for ever: the
// watermark was only recomputed when records arrived).
func TestWindowsCloseWhenRowsSitInOnePartition(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql", "--stream-idle-timeout", "2s")
		conn := srv.Connect(t)
		exec(t, conn, `CREATE STREAM one (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
			WITH (partitions = 4, key = 'k')`)
		exec(t, conn, `CREATE STREAM per10 AS SELECT window_start, count(*) AS n
			FROM TUMBLE(one, ts, INTERVAL '10' SECOND) GROUP BY window_start, window_end`)
		exec(t, conn, `INSERT INTO one VALUES ('a', '2026-01-01 00:00:01'), ('a', '2026-01-01 00:00:05'),
			('a', '2026-01-01 00:00:12'), ('a', '2026-01-01 00:00:25')`)
		deadline := time.Now().Add(40 * time.Second)
		got := ""
		for time.Now().Before(deadline) {
			if got = queryStrings(t, conn, "SELECT n FROM per10 ORDER BY window_start"); got == "2 1" {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if got != "2 1" {
			st, _, _ := stats(conn, "per10")
			t.Fatalf("per10 = %q 40 s after the input went quiet, want the two windows the watermark passed (2 1); pipeline: %s", got, st)
		}
	})
}

// TestLookupJoinRightAfterItsView: a stream-view join created right after
// its view, over data already in both streams, must see the view as it is
// after that data (it saw an empty view and joined 0 of 2 rows: its
// pipeline started before the view's had caught up).
func TestLookupJoinRightAfterItsView(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM person (id BIGINT, name TEXT, ts TIMESTAMP) WITH (partitions = 2, key = 'id')")
		exec(t, conn, "CREATE STREAM auction (id BIGINT, seller BIGINT) WITH (partitions = 2)")
		// Enough people that the view's pipeline needs a while to catch up.
		const people = 200_000
		recs := make([]*kgo.Record, 0, people)
		for i := 1; i <= people; i++ {
			recs = append(recs, &kgo.Record{Topic: c.topic("person"), Key: []byte(fmt.Sprint(i)),
				Value: []byte(fmt.Sprintf(`{"id":%d,"name":"p%d","ts":"2026-01-01T00:00:00"}`, i, i))})
		}
		produce(t, c.client(t), recs)
		exec(t, conn, fmt.Sprintf("INSERT INTO auction VALUES (1, 7), (2, %d)", people-1))
		exec(t, conn, `CREATE MATERIALIZED VIEW person_latest AS SELECT id, name, rn FROM
			(SELECT *, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts DESC) AS rn FROM person) t WHERE rn = 1`)
		exec(t, conn, "CREATE STREAM q AS SELECT a.id, p.name FROM auction a JOIN person_latest p ON a.seller = p.id")
		flush(t, srv, conn)
		if got, want := queryStrings(t, conn, "SELECT name FROM q ORDER BY id"), fmt.Sprintf("p7 p%d", people-1); got != want {
			t.Fatalf("q = %q, want %s: the join must see the view after the rows already in person", got, want)
		}
	})
}
