package pipelines

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOutsideProducersKeyedStream: streams declared WITH (partitions = 4,
// key = 'k') and written by ordinary Kafka clients, not by fvsql: without
// a record key, keyed with murmur2 (the Java client's and franz-go's
// default, what fvsql uses), and keyed with librdkafka's CRC32. A view, a
// top-N and an interval join over them must equal the same SELECT run
// bounded over the same rows: the planner used to trust the declared key
// to mean "each key in its murmur2 partition" and skip the repartition,
// and a GROUP BY k over such input counted a key in several groups.
func TestOutsideProducersKeyedStream(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		// Each producer below writes the whole two minutes of event time
		// after the one before it, so every partition sees its times out of
		// order: the watermarks allow five minutes, or the interval join
		// would (rightly) set rows aside as late, depending on how the
		// batches fell into epochs.
		exec(t, conn, "CREATE STREAM okev (k BIGINT, v BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE) WITH (partitions = 4, key = 'k')")
		exec(t, conn, "CREATE STREAM okev2 (k BIGINT, w BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE) WITH (partitions = 4, key = 'k')")
		exec(t, conn, "CREATE MATERIALIZED VIEW okagg AS SELECT k, count(*) AS n, sum(v) AS s FROM okev GROUP BY k")
		exec(t, conn, `CREATE MATERIALIZED VIEW oktop AS SELECT k, v, rn FROM
			(SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM okev) t WHERE rn = 1`)
		exec(t, conn, `CREATE STREAM okjoin AS SELECT a.k, a.v, b.w FROM okev a JOIN okev2 b
			ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL '1' SECOND AND a.ts + INTERVAL '1' SECOND`)

		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		unkeyed := c.client(t)
		murmur := c.client(t) // franz-go's default partitioner: murmur2 of the key
		crc := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		const rows, keys = 12_000, 37
		var recs [3][]*kgo.Record
		for i := 0; i < rows; i++ {
			k := i % keys
			ts := base.Add(time.Duration(i) * 10 * time.Millisecond).Format("2006-01-02T15:04:05.000")
			r := &kgo.Record{Topic: c.topic("okev"), Value: []byte(fmt.Sprintf(`{"k":%d,"v":%d,"ts":"%s"}`, k, i, ts))}
			switch i % 3 {
			case 0: // no key: spread over the partitions
			case 1:
				r.Key = []byte(strconv.Itoa(k))
			case 2:
				r.Key = []byte(strconv.Itoa(k))
				r.Partition = int32(crc32.ChecksumIEEE(r.Key) % 4)
			}
			recs[i%3] = append(recs[i%3], r)
		}
		produce(t, unkeyed, recs[0])
		produce(t, murmur, recs[1])
		produce(t, crc, recs[2])
		var side []*kgo.Record
		for i := 0; i < 400; i++ {
			k := i % keys
			ts := base.Add(time.Duration(i*300) * time.Millisecond).Format("2006-01-02T15:04:05.000")
			key := []byte(strconv.Itoa(k))
			side = append(side, &kgo.Record{Topic: c.topic("okev2"), Key: key, Partition: int32(crc32.ChecksumIEEE(key) % 4),
				Value: []byte(fmt.Sprintf(`{"k":%d,"w":%d,"ts":"%s"}`, k, i, ts))})
		}
		produce(t, crc, side)
		flush(t, srv, conn)

		for _, q := range []struct{ view, bounded string }{
			{"SELECT k || ':' || n || ':' || s FROM okagg ORDER BY k",
				"SELECT k || ':' || count(*) || ':' || sum(v) FROM okev GROUP BY k ORDER BY k"},
			{"SELECT k || ':' || v FROM oktop ORDER BY k",
				"SELECT k || ':' || max(v) FROM okev GROUP BY k ORDER BY k"},
			{"SELECT count(*) || ':' || sum(v * 1000 + w) FROM okjoin",
				`SELECT count(*) || ':' || sum(a.v * 1000 + b.w) FROM okev a JOIN okev2 b
					ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL '1' SECOND AND a.ts + INTERVAL '1' SECOND`},
		} {
			got, want := queryStrings(t, conn, q.view), queryStrings(t, conn, q.bounded)
			if got != want {
				t.Errorf("%s\n got  %.300s\n want %.300s (the bounded SELECT)", q.view, got, want)
			}
		}
		if got := queryStrings(t, conn, "SELECT count(*)::text FROM okjoin_errors"); got != "0" {
			t.Errorf("okjoin_errors holds %s rows, want 0", got)
			logErrorsStream(t, conn, "okjoin_errors")
		}
		if got := queryStrings(t, conn, "SELECT sum(n)::text FROM okagg"); got != strconv.Itoa(rows) {
			t.Errorf("sum(n) = %s, want %d", got, rows)
		}
	})
}
