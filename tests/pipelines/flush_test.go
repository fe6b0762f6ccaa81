package pipelines

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFlushWaitsForOpenTransactions: a transaction open on a stream's
// topic when FLUSH begins holds back every record after its first one
// (read_committed readers stop at it). FLUSH must wait until it ends and
// return with those records in the output, not stop at the last stable
// offset it saw first. The same holds for the epoch of a killed process,
// which stays open on the next stage's input until it times out.
func TestFlushWaitsForOpenTransactions(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM tin (k BIGINT, v BIGINT) WITH (partitions = 1)")
		exec(t, conn, "CREATE STREAM tout AS SELECT k, v * 10 AS v10 FROM tin")
		exec(t, conn, "INSERT INTO tin VALUES (1, 1)")
		flush(t, srv, conn)

		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		txn := c.client(t, kgo.TransactionalID(c.prefix+"flush-test"), kgo.DefaultProduceTopic(c.topic("tin")))
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"k":2,"v":2}`)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
		plain := c.client(t, kgo.DefaultProduceTopic(c.topic("tin")))
		produce(t, plain, []*kgo.Record{{Value: []byte(`{"k":3,"v":3}`)}})

		const open = 3 * time.Second
		flushed := make(chan time.Duration, 1)
		fconn := srv.Connect(t)
		start := time.Now()
		go func() {
			fctx, fcancel := context.WithTimeout(context.Background(), flushTimeout)
			defer fcancel()
			if _, err := fconn.Exec(fctx, "FLUSH"); err != nil {
				t.Errorf("FLUSH: %v", err)
			}
			flushed <- time.Since(start)
		}()
		time.Sleep(open)
		select {
		case took := <-flushed:
			t.Fatalf("FLUSH returned after %s, while a transaction begun before it was open", took.Round(time.Millisecond))
		default:
		}
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("committing: %v", err)
		}
		took := <-flushed
		t.Logf("FLUSH returned %s after it began, %s after the commit", took.Round(time.Millisecond), (took - open).Round(time.Millisecond))

		got := map[int64]int64{}
		rows, err := conn.Query(ctx, "SELECT k, v10 FROM tout")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, v int64
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			got[k] = v
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{1: 10, 2: 20, 3: 30}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tout right after FLUSH: %v, want %v", got, want)
		}
	})
}
