package engine

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partition is the work of one input partition inside a worker: its
// operator chain, its state keyspace, and its watermark.
type partition struct {
	key     partKey
	chain   *operators.Chain
	filters []*operators.Filter
	// stateful are the chain's stateful steps, in chain order (a stage
	// holds several where the planner fused a stage into the one before
	// it, plan.Stage): each with its own state keyspace.
	stateful []statefulStep
	prefix   []byte // state keyspace: pipeline, stage, topic, partition

	nextOffset int64 // offset after the last record processed (what the epoch commits)
	maxEvent   int64 // largest event time seen (data-derived watermarks)
	wm         int64 // watermark applied to the operators
	sentWM     int64 // watermark last sent downstream
	sinceSent  int   // input rows read since
	// heard: a record (a row, or an upstream partition's watermark)
	// arrived since the watermark was last sent (see sendWatermark)
	heard   bool
	sources map[int32]*sourceWM
	created time.Time
	// Idleness of upstream partitions is judged in the input's own time
	// (its records' timestamps), so that a stage working through a
	// backlog does not take a source whose watermarks are sparse in it
	// for idle, and in wall-clock time too (see idle): logNow is the latest record timestamp seen, logFirst the
	// first (microseconds). quiet says the latest records came after a
	// wall-clock pause longer than the idle timeout during which the
	// partition was caught up (nothing was arriving; a pause spent working
	// through a backlog does not count).
	logNow, logFirst int64
	lastRecv         time.Time
	caughtUp         bool // the last fetch left nothing behind it
	quiet            bool
}

// statefulStep is one stateful operator of a partition's chain and the
// rest of the chain after it: what the operator emits on a watermark or
// a seed goes through it.
type statefulStep struct {
	op   operators.Stateful
	emit operators.Emit
}

// sourceWM is the watermark an upstream partition reported.
type sourceWM struct {
	wm      int64
	updated time.Time // wall clock of its last report
	logTS   int64     // record timestamp of its last report (MinInt64: restored, not heard since)
	// derived: its watermark comes from its own upstream partitions (it
	// said so: its reports carry wmDerivedHeader), so it is never taken
	// for idle.
	// Its silence says that its input has not come yet (a slower stage's
	// output, committed at that stage's checkpoints), not that there is
	// none; an idle input is found where it enters the pipeline, at the
	// stages that read streams, and their watermark, moving again, comes
	// through it.
	derived bool
	// behind: its last report said its sender had records of its own
	// input left to read (wmBehindHeader). Its silence then says the
	// sender is slow (starved of CPU, working through a backlog), not that
	// its input is idle, and it is not taken for idle until a report says
	// it caught up.
	behind bool
}

// partition returns (building on first use) a partition's work.
func (w *worker) partition(k partKey) (*partition, error) {
	if pt, ok := w.parts[k]; ok {
		return pt, nil
	}
	pt := &partition{key: k, maxEvent: math.MinInt64, wm: math.MinInt64, sentWM: math.MinInt64, sources: map[int32]*sourceWM{}, created: time.Now(),
		logNow: math.MinInt64, logFirst: math.MinInt64}
	pt.prefix = state.PartitionPrefix(w.p.id, w.stage.def.Name, k.topic, k.part)
	onErr := func(b *operators.Batch, i int, err error) error {
		var r *kgo.Record
		if b.Source != nil && i < len(b.Source) {
			r, _ = b.Source[i].(*kgo.Record)
		}
		w.poison(r, w.stage.def.Name, err)
		return nil
	}
	var ops []operators.Operator
	var statefulAt []int
	for i := range w.stage.def.Steps {
		env := &expr.Env{Funcs: w.p.e.cfg.Funcs, Epoch: &w.epochs}
		op, err := BuildStep(&w.stage.def.Steps[i], env, onErr, &operators.Resources{Ctx: w.p.ctx, ViewLookup: w.p.e.cfg.ViewLookup, GroupCacheBytes: w.p.e.cfg.GroupCacheBytes})
		if err != nil {
			return nil, err
		}
		if f, ok := op.(*operators.Filter); ok && len(pt.stateful) == 0 {
			// input rows a WHERE drops; a HAVING after the stateful
			// step drops groups, which the counters do not mix in
			pt.filters = append(pt.filters, f)
		}
		if s, ok := op.(operators.Stateful); ok {
			pt.stateful = append(pt.stateful, statefulStep{op: s})
			statefulAt = append(statefulAt, i)
		}
		AskBefore(w.stage.def, i, op)
		ops = append(ops, op)
	}
	pt.chain = operators.NewChain(w.emit, ops...)
	for k, i := range statefulAt {
		pt.stateful[k].emit = pt.chain.EmitOf(i)
	}
	if w.parts == nil {
		w.parts = map[partKey]*partition{}
	}
	w.parts[k] = pt
	if err := w.restoreState(pt); err != nil {
		delete(w.parts, k)
		return nil, err
	}
	if err := pt.restore(w); err != nil {
		return nil, err
	}
	if w.ep == nil || w.ep.st == nil {
		w.recoverSources(pt) // no state: the reports are in the input
	}
	return pt, nil
}

// table is one of the partition's state tables (an operator's or its
// meta) in the worker's current epoch.
func (pt *partition) table(w *worker, suffix []byte) *state.Table {
	return w.ep.st.Table(append(pt.prefix[:len(pt.prefix):len(pt.prefix)], suffix...))
}

// bind points the partition's state at the worker's current epoch.
func (pt *partition) bind(w *worker) {
	if w.ep.st == nil {
		return
	}
	for k, s := range pt.stateful {
		s.op.Bind(pt.table(w, state.OperatorKeyspace(k)))
	}
}

// restore binds a new partition and reloads its watermarks from the
// committed state, so windows closed before a restart stay closed.
func (pt *partition) restore(w *worker) error {
	pt.bind(w)
	if w.ep == nil || w.ep.st == nil {
		return nil
	}
	meta := pt.table(w, state.MetaSuffix)
	v, ok, err := meta.Get(state.MetaKey)
	if err != nil || !ok {
		return err
	}
	if err := pt.decodeMeta(v); err != nil {
		return err
	}
	if pt.wm == math.MinInt64 {
		return nil
	}
	for _, s := range pt.stateful {
		// Windows at or below the watermark were closed and deleted
		// before; this only re-arms the operator's late-row check.
		if err := operators.Rearm(s.op, pt.wm, func(*operators.Batch) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

// tick hands the wall clock's tick to the chain's Tickers, in chain
// order.
func (pt *partition) tick() error {
	for _, s := range pt.stateful {
		if t, ok := s.op.(operators.Ticker); ok {
			if err := t.OnTick(s.emit); err != nil {
				return err
			}
		}
	}
	return nil
}

// seed hands a seed marker to the chain's Seeders (an aggregate without
// GROUP BY emits its group over no rows), in chain order.
func (pt *partition) seed() error {
	for _, s := range pt.stateful {
		if sd, ok := s.op.(operators.Seeder); ok {
			if err := sd.Seed(s.emit); err != nil {
				return err
			}
		}
	}
	return nil
}

func (pt *partition) filteredCount() int64 {
	var n int64
	for _, f := range pt.filters {
		n += f.Filtered
	}
	return n
}

// received notes the arrival of a fetch's records: the wall-clock pause
// before it, against the idle timeout, if nothing was left to read.
func (pt *partition) received(idle time.Duration) {
	now := time.Now()
	pt.quiet = pt.caughtUp && !pt.lastRecv.IsZero() && now.Sub(pt.lastRecv) > idle
	pt.lastRecv = now
}

// idleTick, at each epoch's end, lets the watermark of a partition fed
// by upstream partitions move when its input has gone quiet: caught up,
// with nothing received for the idle timeout of wall-clock time. Without
// it the watermark was only recomputed when records arrived, so after a
// burst whose rows all sat in some upstream partitions the ones that never
// reported (they never held data) held it back for ever, and the last
// windows never closed.
func (pt *partition) idleTick(w *worker) error {
	if !w.fromCtl || !pt.caughtUp || pt.lastRecv.IsZero() || pt.quiet {
		return nil
	}
	if time.Since(pt.lastRecv) <= w.p.e.cfg.IdleTimeout+2*w.p.e.cfg.CheckpointInterval {
		return nil
	}
	pt.quiet = true
	return pt.advance(w)
}

// fetched notes whether a fetch's records reached the partition's end.
func (pt *partition) fetched(fp kgo.FetchTopicPartition) {
	end := fp.LastStableOffset
	if end <= 0 {
		end = fp.HighWatermark
	}
	pt.caughtUp = pt.nextOffset >= end
}

// logTime advances the input's own clock to a record's timestamp.
func (pt *partition) logTime(ts int64) {
	if pt.logFirst == math.MinInt64 {
		pt.logFirst = ts
	}
	pt.logNow = max(pt.logNow, ts)
}

// sourceWatermark records a watermark control record from upstream,
// written at ts (the record's timestamp, microseconds); derived: its
// source's watermark comes from upstream (sourceWM.derived).
func (pt *partition) sourceWatermark(v string, ts int64, derived, behind bool) {
	src, wm, ok := strings.Cut(v, ":")
	if !ok {
		return
	}
	s, err1 := strconv.ParseInt(src, 10, 32)
	m, err2 := strconv.ParseInt(wm, 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	cur := pt.sources[int32(s)]
	if cur == nil {
		cur = &sourceWM{wm: math.MinInt64}
		pt.sources[int32(s)] = cur
	}
	cur.logTS = ts
	cur.updated = time.Now()
	cur.derived = derived
	cur.behind = behind
	if m > cur.wm {
		cur.wm = m
	}
}

// idle says whether an upstream partition has reported nothing for the
// idle timeout: in the input's time (other records kept coming) and in
// wall-clock time, or in wall-clock time after a pause of the whole
// input. The input's time alone is no evidence: while a stage reads a
// backlog, an upstream partition that paused (its consumer joining its
// group, a slower stage's output) looks silent for as long as the others
// wrote meanwhile, which the reader may cross in a fraction of that, and
// its rows, once they come, would be late.
//
// And only once the reader is caught up: while its own input holds records
// it has not read, the silent source's next report may be among them. A
// stage starved of CPU (or a slower one upstream, committing late) falls
// seconds behind in wall-clock time while the sources' reports wait in
// its input; taking one of them for idle then made its rows late
// (TestJoinOfJoinsBacklog under load: 500 to 10,000 of 89,686).
func (pt *partition) idle(s *sourceWM, idle time.Duration) bool {
	if s.derived || s.behind || !pt.caughtUp {
		return false
	}
	ts := s.logTS
	if ts == math.MinInt64 { // restored from a checkpoint: as of the first record since
		ts = pt.logFirst
	}
	silent := time.Since(s.updated) > idle
	if pt.logNow-ts > idle.Microseconds() && silent {
		return true
	}
	return pt.quiet && silent
}

// watermark computes the partition's current watermark: from its own
// data, or the minimum over the upstream partitions, once every one has
// reported (or the input's time moved on by the idle timeout), leaving
// out those idle longer than the idle timeout (unless all are).
func (pt *partition) watermark(w *worker) int64 {
	spec := w.stage.def.Watermark
	if spec != nil && !spec.Upstream {
		if pt.maxEvent == math.MinInt64 {
			return math.MinInt64
		}
		return pt.maxEvent - spec.Delay
	}
	wm := pt.upstreamWatermark(w)
	if spec != nil && wm != math.MinInt64 {
		wm -= spec.Delay
	}
	return wm
}

// upstreamWatermark is the slowest of the watermarks the upstream
// partitions sent, leaving out idle ones.
func (pt *partition) upstreamWatermark(w *worker) int64 {
	if !w.fromCtl || len(pt.sources) == 0 {
		return math.MinInt64
	}
	// Upstream partitions report once per epoch: in the input's time, a
	// live one's reports are up to a checkpoint interval apart (two, with
	// a retried epoch), so that much is added to the idle timeout.
	idle := w.p.e.cfg.IdleTimeout + 2*w.p.e.cfg.CheckpointInterval
	// a derived source that never reported is waited for, however long;
	// another, as long as the idle timeout in both times, and until the
	// reader has read all its input holds (see idle)
	for id := range w.stage.derived {
		if pt.sources[id] == nil {
			return math.MinInt64
		}
	}
	if len(pt.sources) < w.stage.sources && (!pt.caughtUp ||
		(pt.logNow-pt.logFirst <= idle.Microseconds() || time.Since(pt.created) <= idle) && !(pt.quiet && time.Since(pt.created) > idle)) {
		return math.MinInt64
	}
	active, all := int64(math.MaxInt64), int64(math.MaxInt64)
	sawActive := false
	for _, s := range pt.sources {
		all = min(all, s.wm)
		if !pt.idle(s, idle) {
			active = min(active, s.wm)
			sawActive = true
		}
	}
	if sawActive {
		return active
	}
	return all
}

// advance moves the operators to the current watermark.
func (pt *partition) advance(w *worker) error {
	wm := pt.watermark(w)
	if wm <= pt.wm {
		return nil
	}
	pt.wm = wm
	w.p.e.cfg.Logger.Debug("watermark", "pipeline", w.p.name, "stage", w.stage.def.Name, "topic", pt.key.topic, "partition", pt.key.part, "wm", types.NewTimestamp(types.Timestamp, wm).Text())
	// in chain order: what one emits on the watermark reaches the next
	// before the next hears of it
	for _, s := range pt.stateful {
		if err := s.op.OnWatermark(wm, s.emit); err != nil {
			return err
		}
	}
	return nil
}

// sendWatermark sends the partition's watermark downstream, as a control
// record on every partition of the stage's output, when it moved; with
// beat (at a checkpoint), also when it did not but a record arrived
// since it was last sent, even before there is one (math.MinInt64) if
// the stage takes its watermark from upstream (one from its own rows'
// times may never come: every time NULL). Downstream, an upstream
// partition that has reported nothing for the idle timeout is left out
// of the watermark, unless its watermark comes from upstream
// (wmDerivedHeader, sourceWM.derived); without the beat and that mark, a partition whose
// watermark stood still because its own input was behind (a join's side
// that reads a slower stage: a hidden stream of the pipeline) looked
// idle to a stage whose other input ran ahead, which then counted that
// side's rows as late.
func (pt *partition) sendWatermark(w *worker, beat bool) {
	if !w.broadcast {
		return
	}
	spec := w.stage.def.Watermark
	beat = beat && pt.heard && (pt.wm > math.MinInt64 || spec != nil && spec.Upstream)
	if pt.wm <= pt.sentWM && !beat {
		return
	}
	parts := w.stage.output.Partitions
	val := []byte(strconv.Itoa(int(w.stage.def.SourceBase+pt.key.part)) + ":" + strconv.FormatInt(pt.wm, 10))
	headers := []kgo.RecordHeader{{Key: wmHeader, Value: val}}
	if spec == nil || spec.Upstream {
		// a watermark from upstream (sourceWM.derived); in a header of
		// its own, which a process from before it ignores
		headers = append(headers, kgo.RecordHeader{Key: wmDerivedHeader})
	} else if !pt.caughtUp {
		// records of its input still to read (sourceWM.behind)
		headers = append(headers, kgo.RecordHeader{Key: wmBehindHeader})
	}
	topic := w.p.e.topic(w.stage.output.Topic)
	w.p.e.cfg.Logger.Debug("watermark sent", "pipeline", w.p.name, "stage", w.stage.def.Name, "partition", pt.key.part, "wm", pt.wm, "to", topic, "partitions", parts)
	for j := 0; j < parts; j++ {
		w.produce(&kgo.Record{Topic: topic, Partition: int32(j), Headers: headers})
	}
	pt.sentWM = pt.wm
	pt.sinceSent = 0
	pt.heard = false
}

// checkpoint writes the partition's state into the epoch and sends its
// watermark downstream when it moved.
func (pt *partition) checkpoint(w *worker) error {
	pt.sendWatermark(w, true)
	if w.ep.st == nil {
		return nil
	}
	for _, s := range pt.stateful {
		if err := s.op.OnCheckpoint(); err != nil {
			return err
		}
	}
	return pt.table(w, state.MetaSuffix).Set(state.MetaKey, pt.encodeMeta())
}

func (pt *partition) encodeMeta() []byte {
	b := binary.AppendVarint(nil, pt.nextOffset)
	b = binary.AppendVarint(b, pt.maxEvent)
	b = binary.AppendVarint(b, pt.wm)
	b = binary.AppendVarint(b, pt.sentWM)
	b = binary.AppendUvarint(b, uint64(len(pt.sources)))
	for s, v := range pt.sources {
		b = binary.AppendVarint(b, int64(s))
		b = binary.AppendVarint(b, v.wm)
	}
	// then the derived sources (a later addition: older metas end before)
	var derived []int32
	for s, v := range pt.sources {
		if v.derived {
			derived = append(derived, s)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(derived)))
	for _, s := range derived {
		b = binary.AppendVarint(b, int64(s))
	}
	return b
}

var errBadMeta = errors.New("engine: malformed partition state")

// metaNextOffset is the input offset an encoded partition meta says is
// the next to read (-1: no meta, or a malformed one).
func metaNextOffset(v []byte) int64 {
	probe := &partition{sources: map[int32]*sourceWM{}}
	if v == nil || probe.decodeMeta(v) != nil {
		return -1
	}
	return probe.nextOffset
}

func (pt *partition) decodeMeta(b []byte) error {
	read := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	pt.nextOffset, pt.maxEvent, pt.wm, pt.sentWM = read(), read(), read(), read()
	n, m := binary.Uvarint(b)
	if m <= 0 {
		return errBadMeta
	}
	b = b[m:]
	for i := uint64(0); i < n; i++ {
		s, wm := read(), read()
		if b == nil {
			return errBadMeta
		}
		pt.sources[int32(s)] = &sourceWM{wm: wm, updated: time.Now(), logTS: math.MinInt64}
	}
	if len(b) == 0 {
		return nil // a meta from before derived sources
	}
	n, m = binary.Uvarint(b)
	if m <= 0 {
		return errBadMeta
	}
	b = b[m:]
	for i := uint64(0); i < n; i++ {
		s := read()
		src := pt.sources[int32(s)]
		if b == nil || src == nil {
			return errBadMeta
		}
		src.derived = true
	}
	return nil
}
