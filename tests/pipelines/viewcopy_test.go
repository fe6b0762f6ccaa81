package pipelines

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestViewCopyAppliesWholeFetch: a process's local copy of a view (what
// pull queries read) applies a fetch of the view's table topic as one
// write batch that does not read its own writes, each row stored under
// its record key (no read of a key index). A row set and deleted
// (or deleted and set again) within one fetch must come out as in the
// topic. The records are written straight into the table topic, in one
// transaction, so that they arrive in one fetch; the view's own pipeline
// has no input.
func TestViewCopyAppliesWholeFetch(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "a")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM vsrc (k BIGINT, v BIGINT) WITH (partitions = 1)")
		exec(t, conn, "CREATE MATERIALIZED VIEW vc AS SELECT k, count(*) AS n FROM vsrc GROUP BY k")

		cl := c.client(t, kgo.TransactionalID(c.prefix+"viewcopy-test"), kgo.DefaultProduceTopic(c.topic("vc")))
		// The table topic's keys are the rows' key encoding, as the
		// view's pipeline writes them.
		key := func(k int) []byte {
			return engine.TableKey(nil, types.Row{types.NewInt8(int64(k))}, []int{0}, []types.Type{types.Int8})
		}
		row := func(k, n int) *kgo.Record {
			return &kgo.Record{Key: key(k), Value: fmt.Appendf(nil, `{"k":%d,"n":%d}`, k, n)}
		}
		tomb := func(k int) *kgo.Record { return &kgo.Record{Key: key(k)} }
		txn := func(recs ...*kgo.Record) {
			t.Helper()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			produce(t, cl, recs)
			if err := cl.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
		// 1: set, then deleted. 2: set, deleted in the next transaction.
		// 3: set, deleted, set again. 4: set, updated.
		txn(row(1, 10), row(2, 20), tomb(1), row(3, 30), tomb(3), row(3, 31), row(4, 40), row(4, 41))
		txn(tomb(2), tomb(5)) // 5 was never set
		flush(t, srv, conn)

		rows, err := conn.Query(context.Background(), "SELECT k, n FROM vc ORDER BY k")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var k, n int64
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d:%d", k, n))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if g, want := strings.Join(got, " "), "3:31 4:41"; g != want {
			t.Fatalf("view copy holds %q, want %q", g, want)
		}
	})
}
