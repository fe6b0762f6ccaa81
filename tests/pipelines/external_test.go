package pipelines

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPipelineExternalProducer: a plain Kafka producer (not fvsql) writes
// JSON records straight into a stream's topic; the continuous query's
// output holds exactly the filtered, projected rows and the counters add
// up.
func TestPipelineExternalProducer(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		srv := c.start(t, "fvsql")
		conn := srv.Connect(t)
		exec(t, conn, "CREATE STREAM orders (id BIGINT, customer TEXT, amount NUMERIC) WITH (partitions = 4)")
		exec(t, conn, "CREATE STREAM big AS SELECT id, upper(customer) AS customer, amount * 2 AS twice FROM orders WHERE amount > 100")

		const total = 5000
		type row struct {
			customer string
			twice    *big.Rat
		}
		want := map[int64]row{}
		rng := rand.New(rand.NewPCG(20260101, 1))
		recs := make([]*kgo.Record, 0, total)
		for id := int64(1); id <= total; id++ {
			customer := fmt.Sprintf("cust-%c%d", 'a'+rune(id%26), id%97)
			var amount string // JSON number text; empty: field absent (NULL)
			switch {
			case id%100 == 0:
				// no amount: NULL > 100 is not true, the row is filtered
			case id%100 == 1:
				amount = []string{"100", "100.00", "100.01", "99.99", "1.5e2", "-250"}[int(id/100)%6]
			default:
				amount = strconv.FormatFloat(float64(rng.IntN(40000))/100, 'f', 2, 64) // 0.00 .. 399.99
			}
			value := fmt.Sprintf(`{"id":%d,"customer":%q`, id, customer)
			if amount != "" {
				value += `,"amount":` + amount
			}
			value += "}"
			recs = append(recs, &kgo.Record{Topic: c.topic("orders"), Key: []byte(strconv.FormatInt(id, 10)), Value: []byte(value)})
			if amount == "" {
				continue
			}
			a, ok := new(big.Rat).SetString(amount)
			if !ok {
				t.Fatalf("bad test amount %q", amount)
			}
			if a.Cmp(big.NewRat(100, 1)) > 0 {
				want[id] = row{customer: upperASCII(customer), twice: new(big.Rat).Mul(a, big.NewRat(2, 1))}
			}
		}
		produce(t, c.client(t, kgo.DefaultProduceTopic(c.topic("orders"))), recs)
		t.Logf("produced %d records straight into %s; %d pass the filter", total, c.topic("orders"), len(want))

		flush(t, srv, conn)

		// The output, read through fvsql right after FLUSH.
		ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
		defer cancel()
		rows, err := conn.Query(ctx, "SELECT id, customer, twice FROM big")
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]int{}
		bad := 0
		for rows.Next() {
			var (
				id       int64
				customer string
				twice    pgtype.Numeric
			)
			if err := rows.Scan(&id, &customer, &twice); err != nil {
				t.Fatal(err)
			}
			got[id]++
			w, ok := want[id]
			if !ok {
				if bad++; bad <= 10 {
					t.Errorf("output has id %d, which the filter should have dropped (customer %q twice %s)", id, customer, numericString(twice))
				}
				continue
			}
			if customer != w.customer || numericRat(twice) == nil || numericRat(twice).Cmp(w.twice) != 0 {
				if bad++; bad <= 10 {
					t.Errorf("id %d: got (%q, %s), want (%q, %s)", id, customer, numericString(twice), w.customer, w.twice.FloatString(2))
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		var missing, dup []int64
		for id := range want {
			if got[id] == 0 {
				missing = append(missing, id)
			}
		}
		for id, n := range got {
			if n > 1 {
				dup = append(dup, id)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d of %d expected rows are missing from the output after FLUSH: ids %s", len(missing), len(want), head(sortIDs(missing), 20))
		}
		if len(dup) > 0 {
			t.Errorf("%d ids are in the output more than once: %s", len(dup), head(sortIDs(dup), 20))
		}
		if t.Failed() {
			logErrorsStream(t, conn, "big_errors")
		}

		// The counters: every record consumed, each either emitted,
		// filtered or dropped. They are published when an epoch commits,
		// which may be a moment after FLUSH saw the offsets.
		st := waitStats(t, conn, "big", 20*time.Second, "counters to reach the 5000 records", func(s pipelineStats) bool {
			return s.Consumed >= total
		})
		if st.Consumed != total {
			t.Errorf("consumed = %d, want %d", st.Consumed, total)
		}
		if st.Emitted+st.Filtered+st.Dropped != st.Consumed {
			t.Errorf("emitted %d + filtered %d + dropped %d != consumed %d", st.Emitted, st.Filtered, st.Dropped, st.Consumed)
		}
		if st.Emitted != int64(len(want)) || st.Filtered != int64(total-len(want)) || st.Dropped != 0 {
			t.Errorf("emitted/filtered/dropped = %d/%d/%d, want %d/%d/0", st.Emitted, st.Filtered, st.Dropped, len(want), total-len(want))
		}
		if st.Status != "RUNNING" {
			t.Errorf("status %s, want RUNNING", st.Status)
		}
		if st.Lag == nil || *st.Lag != 0 {
			t.Errorf("lag after FLUSH: %s, want 0", st)
		}
		// The only process owns every partition of the input.
		waitStats(t, conn, "big", 30*time.Second, "the process to own all 4 input partitions", func(s pipelineStats) bool {
			return s.Partitions == 4
		})
	})
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// numericRat is the exact value of a finite NUMERIC, nil otherwise.
func numericRat(n pgtype.Numeric) *big.Rat {
	if !n.Valid || n.NaN || n.InfinityModifier != pgtype.Finite || n.Int == nil {
		return nil
	}
	r := new(big.Rat).SetInt(n.Int)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(n.Exp))), nil)
	if n.Exp >= 0 {
		return r.Mul(r, new(big.Rat).SetInt(scale))
	}
	return r.Quo(r, new(big.Rat).SetInt(scale))
}

func numericString(n pgtype.Numeric) string {
	if r := numericRat(n); r != nil {
		return r.FloatString(4)
	}
	return fmt.Sprintf("%+v", n)
}

func abs(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

func sortIDs(ids []int64) []int64 {
	out := append([]int64(nil), ids...)
	slices.Sort(out)
	return out
}

// logErrorsStream logs what a pipeline set aside, to explain a failure.
func logErrorsStream(t *testing.T, conn *pgx.Conn, stream string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT stage, reason, source_partition, source_offset, payload_text FROM "+stream+" LIMIT 10")
	if err != nil {
		t.Logf("reading %s: %v", stream, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var stage, reason string
		var part *int32
		var off *int64
		var text *string
		if err := rows.Scan(&stage, &reason, &part, &off, &text); err != nil {
			t.Logf("reading %s: %v", stream, err)
			return
		}
		t.Logf("%s: stage %s partition %v offset %v reason %q payload %q", stream, stage, deref(part), deref(off), reason, deref(text))
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
