package engine

import (
	"math"
	"testing"
	"time"
)

// TestSourceWatermarks: a report marked derived (a watermark from upstream)
// makes its source derived, never idle however long it is silent; an
// unmarked one goes idle after the timeout in both the input's time and
// wall-clock time, once the reader has read all its input holds, unless
// its sender said it had input left to read; the partition meta keeps both kinds (and a meta from
// before derived sources still reads).
func TestSourceWatermarks(t *testing.T) {
	const idle = time.Second
	pt := &partition{sources: map[int32]*sourceWM{}, logFirst: 0}
	pt.sourceWatermark("3:1000", 10, false, false)
	pt.sourceWatermark("7:2000", 10, true, false)
	pt.sourceWatermark("7:1500", 20, true, false) // a watermark never goes back
	if s := pt.sources[7]; s.wm != 2000 || !s.derived || pt.sources[3].derived {
		t.Fatalf("sources %+v %+v", *pt.sources[3], *pt.sources[7])
	}
	pt.logNow = 10 + 5*idle.Microseconds() // others wrote for 5 s of the input's time
	if pt.idle(pt.sources[3], idle) {
		t.Fatal("idle after a silence in the input's time only (the reader crossed it at once)")
	}
	for _, s := range pt.sources {
		s.updated = time.Now().Add(-2 * idle)
	}
	if pt.idle(pt.sources[3], idle) {
		t.Fatal("idle while the reader had records left to read (the source's report may be among them)")
	}
	pt.caughtUp = true
	if !pt.idle(pt.sources[3], idle) {
		t.Fatal("not idle after a silence in both times, the reader caught up")
	}
	// a source whose last report said its sender had input left to read
	// is slow, not idle, until a report says it caught up
	pt.sourceWatermark("3:1100", 10, false, true)
	pt.sources[3].updated = time.Now().Add(-2 * idle)
	if pt.idle(pt.sources[3], idle) {
		t.Fatal("a source whose sender was behind taken for idle")
	}
	pt.sourceWatermark("3:1200", 10, false, false)
	pt.sources[3].updated = time.Now().Add(-2 * idle)
	if !pt.idle(pt.sources[3], idle) {
		t.Fatal("a source whose sender caught up not idle after the silence")
	}
	if pt.idle(pt.sources[7], idle) {
		t.Fatal("a derived source taken for idle")
	}

	pt.nextOffset, pt.wm, pt.sentWM, pt.maxEvent = 42, 900, 900, math.MinInt64
	meta := pt.encodeMeta()
	back := &partition{sources: map[int32]*sourceWM{}}
	if err := back.decodeMeta(meta); err != nil {
		t.Fatal(err)
	}
	if back.nextOffset != 42 || back.wm != 900 || len(back.sources) != 2 || back.sources[3].derived || !back.sources[7].derived || back.sources[7].wm != 2000 {
		t.Fatalf("decoded %+v: %+v %+v", back, *back.sources[3], *back.sources[7])
	}
	// the meta as it was written before: no list of derived sources
	old := &partition{sources: map[int32]*sourceWM{}}
	cut := meta[:len(meta)-2] // the count 1 and source 7
	if err := old.decodeMeta(cut); err != nil || len(old.sources) != 2 || old.sources[7].derived {
		t.Fatalf("an older meta: %v, %d sources", err, len(old.sources))
	}
}
