package pipelines

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPipelineScaleOut: two fvsql processes on one Kafka share the catalog
// (B learns of the pipeline A creates) and the pipeline's partitions
// (through its consumer group). B is killed with SIGKILL while rows
// arrive; A takes all 8 partitions over and every input row reaches the
// output. In embedded mode A runs the broker and B uses it, so B is the
// one killed; on the real broker B is killed too (A created the pipeline).
func TestPipelineScaleOut(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		a := c.start(t, "a")
		connA := a.Connect(t)
		b := c.start(t, "b")
		connB := b.Connect(t)
		exec(t, connA, "CREATE STREAM clicks (id BIGINT, v BIGINT) WITH (partitions = 8, key = 'id')")
		exec(t, connA, "CREATE STREAM clicks_out AS SELECT id, v + 1 AS v1 FROM clicks")

		// B runs the pipeline A created, and they split the partitions.
		deadline := time.Now().Add(90 * time.Second)
		for {
			sa, okA, errA := stats(connA, "clicks_out")
			sb, okB, errB := stats(connB, "clicks_out")
			if okA && okB && sa.Partitions > 0 && sb.Partitions > 0 && sa.Partitions+sb.Partitions == 8 {
				t.Logf("partitions shared: a owns %d, b owns %d", sa.Partitions, sb.Partitions)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("within 90s the two processes did not share the 8 partitions: a %v %v (%v), b %v %v (%v)", okA, sa, errA, okB, sb, errB)
			}
			time.Sleep(pollInterval)
		}

		// A plain Kafka producer writes rows while B dies.
		const total, batch = 12000, 100
		cl := c.client(t, kgo.DefaultProduceTopic(c.topic("clicks")))
		var produced atomic.Int64
		var prodErr error
		var wg sync.WaitGroup
		stop := make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-stop:
			default:
				close(stop)
			}
			wg.Wait()
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := int64(1); id <= total; id += batch {
				recs := make([]*kgo.Record, 0, batch)
				for i := id; i < id+batch && i <= total; i++ {
					recs = append(recs, &kgo.Record{
						Key:   []byte(strconv.FormatInt(i, 10)),
						Value: []byte(`{"id":` + strconv.FormatInt(i, 10) + `,"v":` + strconv.FormatInt(i*5, 10) + `}`),
					})
				}
				ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
				err := cl.ProduceSync(ctx, recs...).FirstErr()
				cancel()
				if err != nil {
					prodErr = err
					return
				}
				produced.Add(int64(len(recs)))
				select {
				case <-stop:
					return
				case <-time.After(25 * time.Millisecond):
				}
			}
		}()

		// Kill B once it has processed some rows.
		waitStats(t, connB, "clicks_out", 60*time.Second, "b to process rows", func(s pipelineStats) bool {
			return s.Consumed > 0 && produced.Load() >= total/3
		})
		t.Logf("%d rows produced; SIGKILL b", produced.Load())
		b.Kill(t)
		wg.Wait()
		if prodErr != nil {
			t.Fatalf("producing: %v (after %d rows)", prodErr, produced.Load())
		}
		t.Logf("produced all %d rows", produced.Load())

		flush(t, a, connA)
		st := waitStats(t, connA, "clicks_out", 60*time.Second, "the survivor to own all 8 partitions", func(s pipelineStats) bool {
			return s.Partitions == 8
		})
		if st.Status != "RUNNING" {
			t.Errorf("survivor's pipeline: %s, want RUNNING", st)
		}

		recs := c.readCommitted(t, c.topic("clicks_out"))
		seen := map[int64]int{}
		bad := 0
		for _, r := range recs {
			var row struct {
				ID *int64 `json:"id"`
				V1 *int64 `json:"v1"`
			}
			if err := json.Unmarshal(r.Value, &row); err != nil || row.ID == nil || row.V1 == nil || *row.V1 != *row.ID*5+1 {
				if bad++; bad <= 10 {
					t.Errorf("output record p%d@%d is not {id, v1 = 5*id+1}: %q (%v)", r.Partition, r.Offset, r.Value, err)
				}
				continue
			}
			seen[*row.ID]++
		}
		var missing, dup []int64
		for id := int64(1); id <= total; id++ {
			switch n := seen[id]; {
			case n == 0:
				missing = append(missing, id)
			case n > 1:
				dup = append(dup, id)
			}
		}
		t.Logf("output: %d records, %d distinct ids of %d", len(recs), len(seen), total)
		if len(missing) > 0 {
			t.Errorf("%d input rows are missing from the output: %s", len(missing), head(missing, 30))
			diagnoseMissingScaleOut(t, c, missing)
		}
		if len(seen) > total {
			t.Errorf("the output has %d distinct ids, more than the %d produced", len(seen), total)
		}
		if len(dup) > 0 {
			// At least once is what this test requires; exactly-once
			// would have none, so say so.
			t.Logf("note: %d ids are in the output more than once (exactly-once is on): %s", len(dup), head(dup, 20))
			logDuplicates(t, recs, dup, 4)
		}
	})
}

func diagnoseMissingScaleOut(t *testing.T, c *cluster, missing []int64) {
	t.Helper()
	diagnoseMissing(t, c, "clicks", "clicks_out", missing)
}
