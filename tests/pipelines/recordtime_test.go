package pipelines

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecordTimestampWatermark: a stream whose event time is its records'
// own timestamps (WATERMARK FOR _timestamp), written by a Kafka producer
// that sets them, over two partitions (so the windows sit behind a
// repartition). A view and a stream emitting on window close count the
// rows by the windows of their record timestamps; the watermark is the
// smallest partition's largest timestamp minus the delay, and the windows
// it passed close; a record stamped behind it is late: counted and
// reported in <pipeline>_errors, and no window changes.
func TestRecordTimestampWatermark(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		exec(t, conn, `CREATE STREAM rt (id BIGINT, v BIGINT, WATERMARK FOR _timestamp AS _timestamp - INTERVAL '5' SECOND)
			WITH (partitions = 2)`)
		exec(t, conn, `CREATE MATERIALIZED VIEW rt_per_min AS SELECT window_start, count(*) AS n, sum(v) AS total
			FROM TUMBLE(rt, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end`)
		exec(t, conn, `CREATE STREAM rt_closed AS SELECT window_start, count(*) AS n, sum(v) AS total
			FROM TUMBLE(rt, _timestamp, INTERVAL '1' MINUTE) GROUP BY window_start, window_end EMIT ON WINDOW CLOSE`)

		// An hour-aligned base an hour back: inside any topic retention,
		// and the windows' bounds are the same in every run.
		base := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
		cl := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		rec := func(part int32, sec, id, v int) *kgo.Record {
			return &kgo.Record{Topic: c.topic("rt"), Partition: part, Timestamp: base.Add(time.Duration(sec) * time.Second),
				Value: []byte(fmt.Sprintf(`{"id":%d,"v":%d}`, id, v))}
		}
		// Each partition in time order; the watermark is min(200, 210) - 5 s.
		produce(t, cl, []*kgo.Record{
			rec(0, 10, 1, 1), rec(0, 50, 2, 2), rec(0, 125, 3, 3), rec(0, 200, 4, 4),
			rec(1, 30, 5, 10), rec(1, 59, 6, 20), rec(1, 70, 7, 30), rec(1, 210, 8, 40),
		})
		flush(t, srv, conn)

		at := func(sec int) string { return base.Add(time.Duration(sec) * time.Second).Format(time.RFC3339) }
		windows := func(rel string) string {
			ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
			defer cancel()
			rows, err := conn.Query(ctx, "SELECT window_start, n, total FROM "+rel+" ORDER BY window_start")
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var ws time.Time
				var n, total int64
				if err := rows.Scan(&ws, &n, &total); err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%s %d %d", ws.UTC().Format(time.RFC3339), n, total))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return strings.Join(out, ", ")
		}
		all := fmt.Sprintf("%s 4 33, %s 1 30, %s 1 3, %s 2 44", at(0), at(60), at(120), at(180))
		if got := windows("rt_per_min"); got != all {
			t.Fatalf("rt_per_min = %s\nwant %s (the windows of the records' own timestamps)", got, all)
		}
		// The watermark (195 s) closed the first three windows.
		closed := fmt.Sprintf("%s 4 33, %s 1 30, %s 1 3", at(0), at(60), at(120))
		deadline := time.Now().Add(40 * time.Second)
		got := ""
		for time.Now().Before(deadline) {
			if got = windows("rt_closed"); got == closed {
				break
			}
			time.Sleep(pollInterval)
		}
		if got != closed {
			st, _, _ := stats(conn, "rt_closed")
			t.Fatalf("rt_closed = %s\nwant the windows the watermark passed: %s; pipeline: %s", got, closed, st)
		}
		wantWM := base.Add(195 * time.Second).Format("2006-01-02 15:04:05")
		for _, p := range []string{"rt_closed", "rt_per_min"} {
			if wm := queryStrings(t, conn, "SELECT watermark::text FROM fvsql_catalog.pipelines WHERE name = '"+p+"'"); wm != wantWM {
				t.Errorf("%s's watermark %s, want %s (the smallest partition's largest record timestamp - 5 s)", p, wm, wantWM)
			}
		}

		// Stamped 20 s: behind the watermark, its window closed.
		produce(t, cl, []*kgo.Record{rec(0, 20, 9, 100)})
		flush(t, srv, conn)
		for _, p := range []string{"rt_closed", "rt_per_min"} {
			st := waitStats(t, conn, p, 30*time.Second, p+" counting the late row", func(s pipelineStats) bool { return s.Late > 0 })
			if st.Late != 1 || st.Dropped != 0 {
				t.Errorf("%s: late=%d dropped=%d, want 1 and 0", p, st.Late, st.Dropped)
			}
			if got := queryStrings(t, conn, "SELECT split_part(reason, ':', 1) FROM "+p+"_errors"); got != "late" {
				t.Errorf("%s_errors = %q, want the one late row", p, got)
				logErrorsStream(t, conn, p+"_errors")
			}
		}
		if got := windows("rt_per_min"); got != all {
			t.Errorf("rt_per_min after the late row = %s\nwant it unchanged: %s", got, all)
		}
		if got := windows("rt_closed"); got != closed {
			t.Errorf("rt_closed after the late row = %s\nwant it unchanged: %s", got, closed)
		}
	})
}
