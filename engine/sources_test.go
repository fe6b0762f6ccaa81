package engine

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/fvsql/fvsql/plan"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecoverSources: a partition of a stateless stage built anew finds
// in its input's tail, before the committed offset, the watermark each
// upstream partition last reported (the highest, with its last report's
// flags), reading further back until every source is found; reports at
// or past the committed offset, and aborted ones, are not taken. Without
// it, a repartition stage's partition moved to another process after the
// input went quiet never had a watermark again.
func TestRecoverSources(t *testing.T) {
	const topic = "internal"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("up"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := context.Background()
	var offset int64
	// send produces records in one transaction, committed or aborted: a
	// watermark report "source:wm" (with flags) or a data row ("").
	send := func(commit bool, reports ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range reports {
			r := &kgo.Record{Value: []byte(`{"x":1}`)}
			if v != "" {
				r = &kgo.Record{Headers: []kgo.RecordHeader{{Key: wmHeader, Value: []byte(v)}, {Key: wmDerivedHeader}}}
			}
			res := cl.ProduceSync(ctx, r)
			if err := res.FirstErr(); err != nil {
				t.Fatal(err)
			}
			offset = res[0].Record.Offset
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		offset++ // the marker
	}
	send(true, "2:500", "", "", "")         // source 2, far back
	send(true, "0:100", "1:100", "", "")    //
	send(false, "0:9000", "1:9000", "3:90") // aborted: not taken
	for i := range 10 {                     // the window of the first read
		send(true, "", "0:"+strconv.Itoa(200+i), "")
	}
	send(true, "1:300", "1:250", "") // a watermark never goes back
	committed := offset
	send(true, "0:7000", "1:7000", "2:7000") // past the committed offset

	recoverWindows = []int64{8, 64, 1 << 20}
	t.Cleanup(func() { recoverWindows = []int64{4 << 10, 64 << 10, 1 << 20} })
	pctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &worker{
		fromCtl:   true,
		committed: func(string, int32) (int64, bool) { return committed, true },
		p:         &pipeline{e: &Engine{cfg: Config{Brokers: brokers, Logger: slog.Default()}}, ctx: pctx, name: "p"},
		stage:     &stageRun{def: &plan.Stage{Name: "s1"}, sources: 3, derived: map[int32]bool{0: true, 1: true, 2: true}},
	}
	pt := &partition{key: partKey{topic, 0}, sources: map[int32]*sourceWM{}}
	start := time.Now()
	w.recoverSources(pt)
	want := map[int32]int64{0: 209, 1: 300, 2: 500}
	if len(pt.sources) != len(want) {
		t.Fatalf("recovered %d sources, want %d: %v", len(pt.sources), len(want), pt.sources)
	}
	for s, wm := range want {
		got := pt.sources[s]
		if got == nil || got.wm != wm || !got.derived {
			t.Fatalf("source %d: %+v, want watermark %d, derived", s, got, wm)
		}
	}
	t.Logf("recovered in %s", time.Since(start).Round(time.Millisecond))

	// a source never heard from is left to its next report
	pt = &partition{key: partKey{topic, 0}, sources: map[int32]*sourceWM{}}
	w.stage.sources, w.stage.derived[3] = 5, true
	w.recoverSources(pt)
	if len(pt.sources) != 3 || pt.sources[3] != nil {
		t.Fatalf("sources %v", pt.sources)
	}
	if wm := pt.upstreamWatermark(w); wm != math.MinInt64 {
		t.Fatalf("watermark %d with a derived source missing", wm)
	}
}
