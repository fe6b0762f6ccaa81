package exactlyonce

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestFailover: two fvsql processes share the stateful pipelines w1
// (windowed aggregate) and t3 (top-3 view) over 8 partitions. b is killed
// with SIGKILL mid-stream, after it has checkpointed state; the survivor
// a takes b's partitions over and must rebuild their state from the
// compacted state topics (restored_keys > 0, "partition state restored
// from its checkpoint topic" in its log), and the final output is exact.
// In embedded mode a runs the broker.
func TestFailover(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		pipes := []string{"w1", "t3"}
		sd := seed(t)
		d := genData(sd, envInt(t, "FVSQL_EO_FAILOVER_ROWS", 60_000), 300)
		a := c.start(t, "a")
		b := c.start(t, "b")
		connA := connect(t, a)
		connB := connect(t, b)
		createPipelines(t, connA, pipes...)
		sharedPartitions(t, 90*time.Second, partitions, pipes, connA, connB)

		prod := startProducer(t, c, c.topic(inputStream), d.recs)
		prod.release(d.warm)
		prod.wait(t, 60*time.Second)
		flush(t, a, 2)
		stop := make(chan struct{})
		defer close(stop)
		// About 3000 rows/s: the stream goes on while b dies and a takes over.
		prod.pace(300, 100*time.Millisecond, d.data, stop)

		stB := waitAllStats(t, connB, 90*time.Second, "b to checkpoint state of both pipelines", func(m map[string]pipelineStats) bool {
			return m["w1"].Epochs >= 3 && m["t3"].Epochs >= 3 && m["w1"].Partitions > 0 && m["t3"].Partitions > 0 && prod.count() >= d.data/4
		})
		before, err := allStats(connA)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("SIGKILL b (owning w1 %d, t3 %d partitions) with %d of %d rows produced", stB["w1"].Partitions, stB["t3"].Partitions, prod.count(), d.data)
		b.Kill(t)

		waitAllStats(t, connA, 90*time.Second, "a to own every partition", func(m map[string]pipelineStats) bool {
			return m["w1"].Partitions == partitions*stagesOf["w1"] && m["t3"].Partitions == partitions*stagesOf["t3"]
		})
		st := waitAllStats(t, connA, 60*time.Second, "a to have restored b's partitions' state", func(m map[string]pipelineStats) bool {
			return m["w1"].RestoredKeys > before["w1"].RestoredKeys && m["t3"].RestoredKeys > before["t3"].RestoredKeys
		})
		restores := a.LogLines(func(l string) bool { return strings.Contains(l, "partition state restored from its checkpoint topic") })
		t.Logf("a restored w1 %d keys, t3 %d keys; its log has %d restore lines, e.g. %s",
			st["w1"].RestoredKeys, st["t3"].RestoredKeys, len(restores), strings.Join(restores[:min(2, len(restores))], " | "))
		if len(restores) == 0 {
			t.Errorf("a's log has no line \"partition state restored from its checkpoint topic\"")
		}

		prod.release(len(d.recs))
		prod.wait(t, 5*time.Minute)
		flush(t, a, 3)
		connA.Close(context.Background())
		checkAll(t, c, d, connect(t, a), pipes...)
	})
}
