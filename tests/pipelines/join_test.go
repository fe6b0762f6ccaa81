package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStreamJoinKillRestart: a LEFT interval join of orders and payments,
// fed by a plain Kafka producer in event-time order, while the server is
// killed with SIGKILL three times at seeded random moments and restarted.
// The read_committed output must be exactly the join a nested loop
// computes over all the input: every matched pair once, every order
// without a payment in its 5 s bound once with a NULL amount. That holds
// only if the join's state (rows waiting for partners, matched flags) and
// its watermarks come back exactly as committed after each kill.
func TestStreamJoinKillRestart(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		rng := rand.New(rand.NewPCG(20261129, 11))
		srv := c.start(t, "fvsql", "--stream-idle-timeout", "1h")
		conn := srv.Connect(t)
		const orderParts, payParts = 4, 3
		exec(t, conn, fmt.Sprintf("CREATE STREAM orders (oid BIGINT, cust BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (partitions = %d, key = 'oid')", orderParts))
		exec(t, conn, fmt.Sprintf("CREATE STREAM payments (oid BIGINT, amount BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (partitions = %d, key = 'oid')", payParts))
		exec(t, conn, `CREATE STREAM paid AS SELECT o.oid, o.cust, p.amount FROM orders o LEFT JOIN payments p
			ON o.oid = p.oid AND p.ts BETWEEN o.ts AND o.ts + INTERVAL '5' SECOND`)
		conn.Close(context.Background())

		// The input, in event-time order: orders 10 ms apart; 0-2
		// payments each, 0-8 s after their order (beyond 5 s: no match).
		type event struct {
			order     bool
			oid, v    int64
			ts        time.Time
			partition int32
		}
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		const orders = 3000
		var events []event
		var want []string
		for oid := int64(1); oid <= orders; oid++ {
			ots := base.Add(time.Duration(oid) * 10 * time.Millisecond)
			cust := oid % 37
			events = append(events, event{order: true, oid: oid, v: cust, ts: ots, partition: int32(oid % orderParts)})
			matched := 0
			for k := rng.IntN(3); k > 0; k-- {
				after := time.Duration(rng.IntN(8000)) * time.Millisecond
				amount := int64(rng.IntN(1000))
				events = append(events, event{oid: oid, v: amount, ts: ots.Add(after), partition: int32(oid % payParts)})
				if after <= 5*time.Second {
					want = append(want, fmt.Sprintf("%d|%d|%d", oid, cust, amount))
					matched++
				}
			}
			if matched == 0 {
				want = append(want, fmt.Sprintf("%d|%d|NULL", oid, cust))
			}
		}
		slices.SortStableFunc(events, func(a, b event) int { return a.ts.Compare(b.ts) })
		// Rows an hour later in every partition of both inputs move every
		// watermark past every bound; their own orders wait unmatched.
		end := base.Add(time.Hour)
		for p := int32(0); p < orderParts; p++ {
			events = append(events, event{order: true, oid: -1 - int64(p), v: 0, ts: end, partition: p})
		}
		for p := int32(0); p < payParts; p++ {
			events = append(events, event{oid: -100 - int64(p), v: 0, ts: end, partition: p})
		}
		recs := make([]*kgo.Record, len(events))
		for i, e := range events {
			topic, val := c.topic("payments"), fmt.Sprintf(`{"oid":%d,"amount":%d,"ts":%q}`, e.oid, e.v, e.ts.Format("2006-01-02 15:04:05.000"))
			if e.order {
				topic, val = c.topic("orders"), fmt.Sprintf(`{"oid":%d,"cust":%d,"ts":%q}`, e.oid, e.v, e.ts.Format("2006-01-02 15:04:05.000"))
			}
			recs[i] = &kgo.Record{Topic: topic, Partition: e.partition, Key: []byte(fmt.Sprint(e.oid)), Value: []byte(val)}
		}
		cl := c.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))

		// Produce in slices, killing the server at seeded moments.
		slice := len(recs)/4 + 1
		for k := 0; k < 4; k++ {
			produce(t, cl, recs[k*slice:min((k+1)*slice, len(recs))])
			if k == 3 {
				break
			}
			time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
			t.Logf("kill %d after %d of %d input records", k+1, min((k+1)*slice, len(recs)), len(recs))
			srv.Kill(t)
			srv.Restart(t)
			waitReady(t, srv)
		}
		conn = srv.Connect(t)
		flush(t, srv, conn)

		var got []string
		for _, r := range c.readCommitted(t, c.topic("paid")) {
			var row struct {
				Oid, Cust int64
				Amount    *int64
			}
			if err := json.Unmarshal(r.Value, &row); err != nil {
				t.Fatalf("output record %q: %v", r.Value, err)
			}
			if row.Oid < 0 {
				t.Fatalf("output has the closing order %d: its bound had not passed", row.Oid)
			}
			amount := "NULL"
			if row.Amount != nil {
				amount = fmt.Sprint(*row.Amount)
			}
			got = append(got, fmt.Sprintf("%d|%d|%s", row.Oid, row.Cust, amount))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			missing, extra := diffSorted(want, got)
			t.Fatalf("the join's output differs from the nested-loop join: %d rows, want %d; missing %d %s; extra %d %s",
				len(got), len(want), len(missing), strings.Join(missing[:min(20, len(missing))], " "), len(extra), strings.Join(extra[:min(20, len(extra))], " "))
		}
		t.Logf("output: %d rows, exactly the nested-loop join", len(got))
	})
}

// diffSorted returns what is in a but not b and in b but not a, as
// multisets of sorted slices.
func diffSorted(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}
