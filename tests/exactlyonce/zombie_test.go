package exactlyonce

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// zombieInterval is the zombie's checkpoint interval: its transactions
// stay open that long (10 s of input in one transaction), and its
// transaction timeout is 3 times that (fvsql: max(10 s, 3 intervals)), so
// the broker does not abort the paused process's transaction before the
// group has moved its partitions (10 s session timeout) and the process
// is resumed: what fences it is the group generation (KIP-447), not the
// transaction timeout.
const zombieInterval = "10s"

// TestZombieFencing: processes p and q share s1 (stateless) and w1
// (windowed aggregate). p is frozen with SIGSTOP while its transaction
// holds output (checked: an output partition's last stable offset stays
// below its end, and the records there are p's), so its group session
// expires and q takes p's partitions and redoes their work. Then p is
// resumed with SIGCONT: it must not commit what it had (its transaction
// aborts: the group generation moved on), and the final read_committed
// output is exact: no duplicates, nothing lost, none of p's pending
// records in it. In embedded mode q runs the broker.
func TestZombieFencing(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		pipes := []string{"s1", "w1"}
		sd := seed(t)
		d := genData(sd, envInt(t, "FVSQL_EO_ZOMBIE_ROWS", 60_000), 300)
		q := c.start(t, "q")
		p := c.start(t, "p", "--stream-checkpoint-interval", zombieInterval)
		connQ := connect(t, q)
		connP := connect(t, p)
		createPipelines(t, connQ, pipes...)
		sharedPartitions(t, 90*time.Second, partitions, pipes, connQ, connP)

		prod := startProducer(t, c, c.topic(inputStream), d.recs)
		prod.release(d.warm)
		prod.wait(t, 60*time.Second)
		flush(t, q, 2)
		stop := make(chan struct{})
		defer close(stop)
		prod.pace(200, 100*time.Millisecond, d.data, stop) // about 2000 rows/s

		// Freeze p 3 s into one of its 10 s epochs, once it has
		// committed one with input: its open transaction holds 3 s of
		// output.
		st := waitAllStats(t, connP, 90*time.Second, "p to commit an epoch with input", func(m map[string]pipelineStats) bool {
			return m["s1"].Epochs > 0 && m["s1"].Partitions > 0
		})
		waitAllStats(t, connP, 30*time.Second, "p to begin a new epoch", func(m map[string]pipelineStats) bool {
			return m["s1"].Epochs > st["s1"].Epochs
		})
		time.Sleep(3 * time.Second)
		p.Pause(t)
		pausedAt := time.Now()
		z := findOpenTxn(t, c, c.topic("s1"))
		t.Logf("p paused with an open transaction: %s", z)

		// q takes p's partitions over (after the 10 s session timeout)
		// and catches up on them.
		waitAllStats(t, connQ, 90*time.Second, "q to own every partition", func(m map[string]pipelineStats) bool {
			return m["s1"].Partitions == partitions && m["w1"].Partitions == partitions*stagesOf["w1"]
		})
		flush(t, q, 2)
		stillOpen := z.open(t, c)
		t.Logf("q owns all partitions and caught up %s after the pause; p's transaction still open: %v", time.Since(pausedAt).Round(time.Millisecond), stillOpen)
		if !stillOpen {
			t.Logf("note: p's transaction ended before p was resumed (transaction timeout): it is fenced by its producer epoch, not by the group generation")
		}

		fenceLine := func(l string) bool {
			return strings.Contains(l, "pipeline consumer failed") &&
				(strings.Contains(l, "UNKNOWN_MEMBER_ID") || strings.Contains(l, "ILLEGAL_GENERATION") || strings.Contains(l, "FENCED") || strings.Contains(l, "fenced"))
		}
		fencedBefore := len(p.LogLines(fenceLine))
		resumedAt := time.Now()
		p.Resume(t)
		deadline := time.Now().Add(90 * time.Second)
		for z.open(t, c) {
			if time.Now().After(deadline) {
				t.Fatalf("p's transaction still open 90s after SIGCONT: %s", z)
			}
			time.Sleep(pollInterval)
		}
		t.Logf("p's transaction ended %s after SIGCONT", time.Since(resumedAt).Round(time.Millisecond))
		waitAllStats(t, connect(t, p), 90*time.Second, "the resumed p to run its pipelines again", func(m map[string]pipelineStats) bool {
			return m["s1"].Status == "RUNNING" && m["w1"].Status == "RUNNING"
		})

		prod.release(len(d.recs))
		prod.wait(t, 5*time.Minute)
		flush(t, q, 3)

		// None of p's pending records may be committed.
		recs := c.readCommitted(t, c.topic("s1"))
		var leaked []string
		for _, r := range recs {
			if z.pending[pk{r.Partition, r.Offset}] {
				leaked = append(leaked, where(r)+" "+string(r.Value))
			}
		}
		if len(leaked) > 0 {
			t.Errorf("BUG: the zombie's records were committed: %d, e.g. %s", len(leaked), strings.Join(leaked[:min(5, len(leaked))], "; "))
		} else {
			t.Logf("none of p's %d pending records is in the committed output", len(z.pending))
		}
		fenced := p.LogLines(fenceLine)[fencedBefore:]
		t.Logf("p's log after SIGCONT: %d consumers failed because the group moved on (generation fencing), e.g. %s",
			len(fenced), strings.Join(fenced[:min(2, len(fenced))], " | "))
		checkAll(t, c, d, connect(t, q), pipes...)
	})
}

type pk struct {
	part int32
	off  int64
}

type prodEpoch struct {
	pid   int64
	epoch int16
}

// openTxn is what a paused process left open on a topic: per partition
// held back, the producer (one per consumer) whose record sits at the
// last stable offset, and those producers' records from there on.
type openTxn struct {
	topic      string
	lso        map[int32]int64     // partition -> the open transaction's first offset there
	producer   map[int32]prodEpoch // partition -> the producer holding it back
	pending    map[pk]bool
	firstShown []string
}

func (z *openTxn) String() string {
	parts := make([]string, 0, len(z.lso))
	for p, o := range z.lso {
		parts = append(parts, fmt.Sprintf("p%d from %d by producer %d epoch %d", p, o, z.producer[p].pid, z.producer[p].epoch))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d records pending on %s (%s), e.g. %s",
		len(z.pending), z.topic, strings.Join(parts, ", "), strings.Join(z.firstShown, "; "))
}

// open reports whether the transaction still holds a partition back.
func (z *openTxn) open(t *testing.T, c *cluster) bool {
	t.Helper()
	lso, _, err := c.offsets(t, z.topic)
	if err != nil {
		t.Logf("offsets of %s: %v", z.topic, err)
		return true
	}
	for p, o := range z.lso {
		if lso[p] <= o {
			return true
		}
	}
	return false
}

// findOpenTxn finds, right after a process was paused, the transactions
// it left open on topic: partitions whose last stable offset stays below
// the high watermark for 2 s (the other process's transactions last
// 200 ms), and the records there of the producer whose record sits at
// the last stable offset. It fails the test if there is none: then the
// paused process had no uncommitted output, and the test proves nothing.
func findOpenTxn(t *testing.T, c *cluster, topic string) *openTxn {
	t.Helper()
	lso1, hwm1, err := c.offsets(t, topic)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	lso2, _, err := c.offsets(t, topic)
	if err != nil {
		t.Fatal(err)
	}
	stuck := map[int32]int64{}
	for p, l := range lso1 {
		if l < hwm1[p] && lso2[p] == l {
			stuck[p] = l
		}
	}
	if len(stuck) == 0 {
		t.Fatalf("precondition: the paused process has no open transaction with records on %s (lso %v, hwm %v, lso 2 s later %v)", topic, lso1, hwm1, lso2)
	}
	z := &openTxn{topic: topic, lso: map[int32]int64{}, producer: map[int32]prodEpoch{}, pending: map[pk]bool{}}
	recs := c.readUncommitted(t, topic)
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	for _, r := range recs {
		l, ok := stuck[r.Partition]
		if !ok || r.Offset < l {
			continue
		}
		if r.Offset == l {
			z.lso[r.Partition] = l
			z.producer[r.Partition] = prodEpoch{r.ProducerID, r.ProducerEpoch}
		}
		if pe, ok := z.producer[r.Partition]; !ok || pe != (prodEpoch{r.ProducerID, r.ProducerEpoch}) {
			continue
		}
		z.pending[pk{r.Partition, r.Offset}] = true
		if len(z.firstShown) < 3 {
			z.firstShown = append(z.firstShown, where(r)+" "+string(r.Value))
		}
	}
	if len(z.pending) == 0 {
		t.Fatalf("no record at the last stable offsets %v of %s", stuck, topic)
	}
	return z
}
