package engine

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A stateless stage (a repartition, a filter) keeps no state, so the
// partition's watermarks from upstream lived only in memory: a partition
// built anew (after a restart, a rebalance, an aborted epoch) started with
// none, at the group's committed offset, past the reports its previous
// owner had read. A derived source is waited for however long (see
// upstreamWatermark), so once the input had gone quiet, a source whose
// last report lay behind the committed offset held the partition's
// watermark, and every stage after it, for good: a window top-N behind a
// repartition lost its last windows after a rebalance
// (TestCrashRestartWiped, k11). The input log itself holds those reports:
// recoverSources reads them back from the tail before the committed
// offset.

// recoverWindows are how many records before the committed offset the
// successive reads of recoverSources reach back, until every source
// has been heard from.
var recoverWindows = []int64{4 << 10, 64 << 10, 1 << 20}

// recoverTimeout bounds the reads of one partition's recovery.
const recoverTimeout = 5 * time.Second

// recoverSources fills a new partition of a stateless stage fed by
// stages that take their watermark from upstream (the sources waited for
// however long, stageRun.derived) with the latest watermark each
// upstream partition reported before the committed offset (the highest,
// with the flags of its last report), reading back until each of those
// has been found. A recovery cut short (a source silent further back than
// the reads reach, the broker slow to answer) leaves the partition
// waiting for those sources' next reports, as before. (It runs in an
// open epoch, so it is bounded well inside the transaction timeout.)
func (w *worker) recoverSources(pt *partition) {
	if len(w.stage.derived) == 0 || w.committed == nil {
		return // other sources are left out once idle (a stream's empty partition never reports)
	}
	to, ok := w.committed(pt.key.topic, pt.key.part)
	if !ok || to <= 0 {
		return
	}
	e := w.p.e
	ctx, cancel := context.WithTimeout(w.p.ctx, recoverTimeout)
	defer cancel()
	start := time.Now()
	found := map[int32]*sourceWM{}
	read := int64(0)
	var err error
	for _, back := range recoverWindows {
		from := max(to-back, 0)
		var pass map[int32]*sourceWM
		var n int64
		if pass, n, err = readReports(ctx, e.cfg.Brokers, e.cfg.KafkaOpts, pt.key.topic, pt.key.part, from, to); err != nil {
			break
		}
		read += n
		mergeReports(found, pass) // a later pass reads further back
		if from == 0 || !missing(w.stage.derived, found) {
			break
		}
		to = from
	}
	mergeReports(pt.sources, found)
	level := e.cfg.Logger.Debug
	if err != nil || missing(w.stage.derived, found) {
		level = e.cfg.Logger.Info
	}
	level("upstream watermarks recovered from the input", "pipeline", w.p.name, "stage", w.stage.def.Name,
		"topic", pt.key.topic, "partition", pt.key.part, "sources", len(found), "of", w.stage.sources,
		"records", read, "took", time.Since(start).Round(time.Millisecond), "err", err)
}

// mergeReports adds older reports to into: a source it lacks as it was
// reported, a source it has only its higher watermark (the flags of the
// later report stay).
func mergeReports(into, older map[int32]*sourceWM) {
	for s, v := range older {
		if cur, ok := into[s]; !ok {
			into[s] = v
		} else if v.wm > cur.wm {
			cur.wm = v.wm
		}
	}
}

// missing says whether a source of want is not in found.
func missing(want map[int32]bool, found map[int32]*sourceWM) bool {
	for s := range want {
		if found[s] == nil {
			return true
		}
	}
	return false
}

// readReports reads the watermark reports in [from, to) of one partition,
// read_committed, and returns per source the highest watermark and the
// flags of its last report, and how many records it read.
func readReports(ctx context.Context, brokers []string, auth []kgo.Opt, topic string, part int32, from, to int64) (map[int32]*sourceWM, int64, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // the record at to-1 may be a marker
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, auth...)...)
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	pt := &partition{sources: map[int32]*sourceWM{}}
	var n int64
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, n, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, n, ferr
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			for _, r := range fp.Records {
				if r.Offset >= to {
					done = true
					return
				}
				n++
				done = r.Offset >= to-1
				if !r.Attrs.IsControl() && isControl(r) {
					pt.sourceWatermark(string(r.Headers[0].Value), r.Timestamp.UnixMicro(), hasHeader(r, wmDerivedHeader), hasHeader(r, wmBehindHeader))
				}
			}
			if fp.HighWatermark <= to && len(fp.Records) > 0 && fp.Records[len(fp.Records)-1].Offset >= fp.HighWatermark-1 {
				done = true // nothing more to read below to
			}
		})
	}
	return pt.sources, n, nil
}
