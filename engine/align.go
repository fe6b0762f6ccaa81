package engine

import (
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Watermark alignment. The stage after a repartition takes its watermark
// as the minimum over every upstream partition, so one partition that
// runs ahead in event time (its worker started a moment earlier, or got
// more CPU) keeps that stage's windows open for as long as it leads: each
// open window is written to Pebble and the state topic at every
// checkpoint it is touched in, instead of once. Catching up on a backlog,
// a one-second head start is minutes of event time.
//
// So a repartitioning stage's workers in one process share an aligner:
// the event time of each local partition that still has records to read.
// A worker pauses fetching a partition that is more than the allowed
// drift ahead of the slowest of them and resumes it once it is not. A
// partition with nothing left to read holds nothing back (it is idle, not
// slow), and the slowest one is never paused, so the stage always
// progresses. A partition not heard of for alignStale holds nothing back
// either (a fetch that returned only records of aborted transactions
// says nothing, and must not leave a stale time that pauses the others
// for good). Like Flink's watermark alignment, without its coordination
// across processes: each process aligns its own partitions.
type aligner struct {
	drift  int64 // microseconds
	mu     sync.Mutex
	behind map[partKey]aligned // local partitions with records left to read
}

// aligned is a partition's largest event time, as of a fetch at a time.
type aligned struct {
	maxEvent int64
	at       time.Time
}

// alignStale is how long a partition's last fetch counts.
const alignStale = 2 * time.Second

func newAligner(drift time.Duration) *aligner {
	return &aligner{drift: drift.Microseconds(), behind: map[partKey]aligned{}}
}

// note records a partition's event time after a fetch, and whether the
// fetch left records behind it.
func (a *aligner) note(k partKey, maxEvent int64, caughtUp bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if caughtUp || maxEvent == math.MinInt64 {
		delete(a.behind, k)
		return
	}
	a.behind[k] = aligned{maxEvent, time.Now()}
}

// forget drops a partition the worker no longer owns or no longer knows.
func (a *aligner) forget(k partKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.behind, k)
}

// limit is the largest event time a partition may have and still be
// fetched (MaxInt64 when no local partition is behind).
func (a *aligner) limit() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	floor := int64(math.MaxInt64)
	now := time.Now()
	for k, e := range a.behind {
		if now.Sub(e.at) > alignStale {
			delete(a.behind, k)
			continue
		}
		floor = min(floor, e.maxEvent)
	}
	if floor == math.MaxInt64 || floor > math.MaxInt64-a.drift {
		return math.MaxInt64
	}
	return floor + a.drift
}

// alignFetches pauses the worker's partitions that ran too far ahead and
// resumes those that no longer are (or that it no longer tracks).
func (w *worker) alignFetches(cl *kgo.Client) {
	a := w.stage.align
	if a == nil {
		return
	}
	limit := a.limit()
	var pause, resume map[string][]int32
	add := func(m *map[string][]int32, k partKey) {
		if *m == nil {
			*m = map[string][]int32{}
		}
		(*m)[k.topic] = append((*m)[k.topic], k.part)
	}
	for k := range w.paused {
		if pt, ok := w.parts[k]; !ok || pt.maxEvent <= limit {
			delete(w.paused, k)
			add(&resume, k)
		}
	}
	for k, pt := range w.parts {
		if pt.maxEvent > limit && !w.paused[k] {
			if w.paused == nil {
				w.paused = map[partKey]bool{}
			}
			w.paused[k] = true
			add(&pause, k)
		}
	}
	if resume != nil {
		cl.ResumeFetchPartitions(resume)
	}
	if pause != nil {
		cl.PauseFetchPartitions(pause)
		w.p.e.cfg.Logger.Debug("fetch paused for watermark alignment", "pipeline", w.p.name, "stage", w.stage.def.Name, "partitions", pause, "limit", limit)
	}
}

// noteAligned tells the stage's aligner where a partition is after a fetch.
func (w *worker) noteAligned(pt *partition, fp kgo.FetchTopicPartition) {
	if w.stage.align == nil {
		return
	}
	end := fp.LastStableOffset
	if end <= 0 {
		end = fp.HighWatermark
	}
	w.stage.align.note(pt.key, pt.maxEvent, pt.nextOffset >= end)
}

// unalign forgets the worker's partitions in the stage's aligner (it is
// stopping, or it dropped them).
func (w *worker) unalign(keys ...partKey) {
	if w.stage.align == nil {
		return
	}
	for _, k := range keys {
		w.stage.align.forget(k)
	}
}
