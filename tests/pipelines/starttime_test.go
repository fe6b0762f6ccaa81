package pipelines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/tests/testenv"
)

// TestStartTime: WITH (start_time = …) starts a pipeline's stream inputs
// at their first record stamped at or after the time — a stream on the
// server's Kafka (its stage groups' offsets pinned by timestamp), a Redis
// stream (the ingest bridge's group starts at the entry ID of the time) —
// and SUBSCRIBE TO a stream WITH (start_time = …) starts there too.
// Records written after the pipeline started are read whatever their
// stamp: the time says where reading starts, it is not a filter. A text
// file, whose lines have no times, is refused at CREATE with 0A000, and
// so is a real-time pipeline.
func TestStartTime(t *testing.T) {
	redisAddr := testenv.Redis(t)
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql", "--log-level", "debug")
		conn := srv.Connect(t)
		defer func() {
			if t.Failed() {
				for _, l := range srv.LogLines(func(l string) bool {
					return strings.Contains(l, "start") || strings.Contains(l, "WARN") || strings.Contains(l, "ERROR")
				}) {
					t.Log(l)
				}
			}
		}()
		// Recent stamps: the broker's retention (7 days) would delete
		// older records at its next check.
		base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
		const rows, from = 300, 200 // record i is stamped base + i s; the pipelines start at record 200's time
		at := base.Add(from * time.Second).Format(time.RFC3339)

		exec(t, conn, "CREATE STREAM stev (id BIGINT) WITH (partitions = 3)")
		cl := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for i := 0; i < rows; i++ {
			recs = append(recs, &kgo.Record{Topic: c.topic("stev"), Partition: int32(i % 3), Timestamp: base.Add(time.Duration(i) * time.Second),
				Value: []byte(fmt.Sprintf(`{"id":%d}`, i))})
		}
		produce(t, cl, recs)

		key := testenv.UniqueName("strd")
		full := c.topic(key) // fvsql prefixes Redis keys too
		rdb := goredis.NewClient(&goredis.Options{Addr: redisAddr})
		defer rdb.Close()
		defer rdb.Del(context.Background(), full)
		for i := 0; i < rows; i++ {
			id := fmt.Sprintf("%d-0", base.Add(time.Duration(i)*time.Second).UnixMilli())
			if err := rdb.XAdd(context.Background(), &goredis.XAddArgs{Stream: full, ID: id, Values: []any{"v", fmt.Sprintf(`{"id":%d}`, i)}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		exec(t, conn, fmt.Sprintf("CREATE STREAM strd (id BIGINT) WITH (backend = 'redis://%s', key = '%s')", redisAddr, key))

		exec(t, conn, fmt.Sprintf("CREATE MATERIALIZED VIEW stv WITH (start_time = '%s') AS SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM stev", at))
		exec(t, conn, fmt.Sprintf("CREATE STREAM sts AS SELECT id FROM stev WHERE id %% 2 = 0 WITH (start_time = '%s')", at))
		exec(t, conn, fmt.Sprintf("CREATE MATERIALIZED VIEW strdv WITH (start_time = '%s') AS SELECT count(*) AS n, min(id) AS lo FROM strd", at))
		exec(t, conn, "CREATE MATERIALIZED VIEW stall AS SELECT count(*) AS n FROM stev") // no start time: everything
		flush(t, srv, conn)
		check := func(q, want string) {
			t.Helper()
			if got := queryStrings(t, conn, q); got != want {
				t.Errorf("%s = %s, want %s", q, got, want)
			}
		}
		check("SELECT n || ':' || lo || ':' || hi FROM stv", fmt.Sprintf("%d:%d:%d", rows-from, from, rows-1))
		check("SELECT count(*) FROM sts", fmt.Sprint((rows-from)/2))
		check("SELECT n || ':' || lo FROM strdv", fmt.Sprintf("%d:%d", rows-from, from))
		check("SELECT n FROM stall", fmt.Sprint(rows))

		// A record stamped before the time, written now, is read: the
		// groups start where they were pinned and go on from there.
		produce(t, cl, []*kgo.Record{{Topic: c.topic("stev"), Partition: 1, Timestamp: base, Value: []byte(`{"id":1000}`)}})
		flush(t, srv, conn)
		check("SELECT n || ':' || hi FROM stv", fmt.Sprintf("%d:1000", rows-from+1))

		// SUBSCRIBE from the time: the stream's records from record 200 on.
		got := subscribeIDs(t, conn, fmt.Sprintf("SUBSCRIBE TO stev WITH (start_time = '%s')", at), rows-from+1)
		want := []int64{}
		for i := from; i < rows; i++ {
			want = append(want, int64(i))
		}
		want = append(want, 1000)
		if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
			t.Errorf("SUBSCRIBE from %s: got %d ids %.200s, want %d %.200s", at, len(got), g, len(want), w)
		}

		// Refusals, before anything is created.
		if err := os.MkdirAll(filepath.Join(srv.DataDir(), "files"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(srv.DataDir(), "files", "stlines.jsonl"), []byte(`{"id":1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		exec(t, conn, "CREATE STREAM stlines (id BIGINT) WITH (backend = 'file://', topic = 'stlines.jsonl')")
		for _, r := range []struct{ sql, code string }{
			{fmt.Sprintf("CREATE STREAM stl AS SELECT id FROM stlines WITH (start_time = '%s')", at), "0A000"},
			{"CREATE STREAM str WITH (mode = 'realtime') AS SELECT id FROM stev", "0A000"},
			{"SUBSCRIBE TO stv WITH (start_time = '2026-01-01')", "0A000"},
			{"SUBSCRIBE TO stev WITH (snapshot = false)", "22023"},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
			_, err := conn.Exec(ctx, r.sql)
			cancel()
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != r.code {
				t.Errorf("%s: got %v, want SQLSTATE %s", r.sql, err, r.code)
			}
		}
		if got := queryStrings(t, conn, "SELECT count(*) FROM pg_class WHERE relname IN ('stl', 'stl_errors', 'str')"); got != "0" {
			t.Errorf("a refused CREATE left %s relations behind", got)
		}
	})
}

// subscribeIDs runs a SUBSCRIBE in a cursor and fetches until it has n
// ids (or 60 s pass), returning them sorted.
func subscribeIDs(t *testing.T, conn *pgx.Conn, subscribe string, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "DECLARE stc CURSOR FOR "+subscribe); err != nil {
		t.Fatalf("DECLARE … %s: %v", subscribe, err)
	}
	var ids []int64
	for len(ids) < n && ctx.Err() == nil {
		rows, err := tx.Query(ctx, "FETCH 1000 stc")
		if err != nil {
			t.Fatalf("FETCH: %v (after %d ids)", err, len(ids))
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil && !strings.Contains(err.Error(), "context") {
			t.Fatal(err)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
