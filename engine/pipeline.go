package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

// pipeline is one running continuous query on this node.
type pipeline struct {
	e        *Engine
	name     string
	id       string // topo.Ident(name): what its groups and state are named after
	topo     *plan.Topology
	stages   []*stageRun
	errors   *plan.Stream
	internal map[string]bool // names of the pipeline's internal streams

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	consumed, emitted, filtered, dropped, late, epochs atomic.Int64
	partitions                                         atomic.Int64
	lastCheckpoint                                     atomic.Int64 // unix micros
	checkpointBytes                                    atomic.Int64 // state bytes of the last epoch
	restoring, restoredKeys, restoresLocal             atomic.Int64
	stateBytes, stateSizedAt                           atomic.Int64 // gauge and when it was measured

	mu      sync.Mutex
	status  string
	lastErr string
	failing map[int]bool // workers currently retrying
	// retryingSince is when the pipeline last went from RUNNING to
	// RETRYING; hopeless says its latest error can never pass by
	// retrying (a plan the engine cannot run), see stuck.
	retryingSince time.Time
	hopeless      bool
	ingesting     map[string]backends.Consumer // live ingest consumers, for FLUSH
	started       time.Time
	wms           map[int]int64 // per worker of the last stage: its partitions' lowest watermark
}

// stageRun is a stage with its datasets resolved.
type stageRun struct {
	def    *plan.Stage
	inputs []*plan.Stream
	output *plan.Stream
	// first: the stage reads the pipeline's inputs (no other stage
	// writes them), so its records count as consumed; a join has two.
	// last: its output is the pipeline's.
	first, last bool
	// sources is how many upstream partitions write watermarks into
	// this stage's internal input (0: the input is not internal): a
	// partition's watermark waits until each has reported, or the idle
	// timeout passed since the partition started, so that the first
	// upstream partition to report does not make the others' rows late.
	sources int
	// derived are the sources among them whose watermark comes from
	// their own upstream partitions: a partition's watermark waits for
	// each of them however long (see sourceWM.derived)
	derived map[int32]bool
	// assigned counts the stage's local workers that have had partitions;
	// joined closes when all that can have some do (see awaitSiblings).
	assigned atomic.Int32
	want     int32
	joined   chan struct{}
	// committing counts the local workers' epochs between the start of
	// their commit to Kafka and their landing in Pebble; restoring a
	// partition first waits for those in flight. A partition that moves
	// between two workers of this process is readable by the new owner
	// (its offsets fetch returns) as soon as the old owner's commit
	// reached Kafka, and without the wait the new owner could read the
	// old owner's local state before that epoch landed in it.
	committing commitsInFlight
	// ticks holds, per input partition, the wall-clock time of its last
	// tick that committed here (a stage whose steps act on the clock):
	// FLUSH waits for a tick after its start (Engine.flushTicks).
	ticks tickTimes
}

// tickTimes is the time of the last committed tick of each input
// partition the stage's local workers ticked.
type tickTimes struct {
	mu sync.Mutex
	at map[partKey]time.Time
}

func (t *tickTimes) set(parts []partKey, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at == nil {
		t.at = map[partKey]time.Time{}
	}
	for _, k := range parts {
		t.at[k] = at
	}
}

// since says whether every partition of want has a committed tick at or
// after start.
func (t *tickTimes) since(want []partKey, start time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range want {
		if at, ok := t.at[k]; !ok || at.Before(start) {
			return false
		}
	}
	return true
}

// commitsInFlight tracks the epochs a stage's local workers are
// committing. wait returns once every commit begun before it was called
// has ended; commits begun later do not hold it (a busy stage cannot
// starve a restore).
type commitsInFlight struct {
	mu   sync.Mutex
	cond *sync.Cond
	next uint64              // sequence number of the next commit to begin
	open map[uint64]struct{} // commits begun and not ended
}

// begin records a commit starting; end(seq) records it landed.
func (c *commitsInFlight) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[uint64]struct{}{}
		c.cond = sync.NewCond(&c.mu)
	}
	seq := c.next
	c.next++
	c.open[seq] = struct{}{}
	return seq
}

func (c *commitsInFlight) end(seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.open, seq)
	c.cond.Broadcast()
}

// wait blocks until every commit begun before the call has ended.
func (c *commitsInFlight) wait() { c.waitFor(c.mark()) }

// mark is the sequence number the next commit to begin will get.
func (c *commitsInFlight) mark() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// waitFor blocks until every commit numbered below upto has ended.
func (c *commitsInFlight) waitFor(upto uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.openBefore(upto) {
		c.cond.Wait()
	}
}

func (c *commitsInFlight) openBefore(upto uint64) bool {
	for seq := range c.open {
		if seq < upto {
			return true
		}
	}
	return false
}

// noteAssigned counts a worker's first assignment.
func (s *stageRun) noteAssigned() {
	if s.assigned.Add(1) == s.want {
		close(s.joined)
	}
}

func (s *stageRun) inputTopics(e *Engine) []string {
	out := make([]string, len(s.inputs))
	for i, d := range s.inputs {
		out[i] = e.topic(d.Topic)
	}
	return out
}

func newPipeline(e *Engine, name string, topo *plan.Topology, stages []*stageRun, errs *plan.Stream) *pipeline {
	ctx, cancel := context.WithCancel(context.Background())
	internal := map[string]bool{}
	for _, d := range topo.Internal {
		internal[d.Name] = true
	}
	return &pipeline{e: e, name: name, id: topo.Ident(name), topo: topo, stages: stages, errors: errs, internal: internal, ctx: ctx, cancel: cancel,
		status: StatusStarting, failing: map[int]bool{}, started: time.Now()}
}

// start starts the pipeline's goroutines. A pipeline that looks rows up
// in views first waits for those views to catch up (awaitViews); its
// record says STARTING meanwhile.
func (p *pipeline) start() {
	p.wg.Add(2)
	go p.heartbeat()
	go p.abortHanging()
	views := p.lookupViews()
	if len(views) == 0 {
		p.startWorkers()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if p.awaitViews(views) == nil {
			p.startWorkers()
		}
	}()
}

// lookupViews lists the views the pipeline's lookup joins read.
func (p *pipeline) lookupViews() []string {
	var out []string
	for _, s := range p.stages {
		for _, st := range s.def.Steps {
			if st.Op == plan.OpLookupJoin && st.Lookup != nil && !slices.Contains(out, st.Lookup.View) {
				out = append(out, st.Lookup.View)
			}
		}
	}
	return out
}

// awaitViews waits until each view the pipeline looks rows up in has
// caught up: its own pipeline has processed what its inputs hold now
// (as FLUSH does), and this process's copy holds what that wrote. So a
// stream-view join created right after its view, over data already in
// both, sees the view as it is after that data, like ksqlDB's and Kafka
// Streams' table bootstrapping; later rows see the view as it is when
// they are processed. A view whose pipeline cannot make progress is not
// waited for past STREAM_FLUSH_GIVE_UP. It returns an error only when the
// pipeline stops meanwhile.
func (p *pipeline) awaitViews(views []string) error {
	for _, v := range views {
		p.setStatus(StatusStarting, fmt.Sprintf("waiting for view %q to catch up", v))
		p.e.host.PutRecord(p.record())
		p.e.mu.Lock()
		vp := p.e.pipelines[v]
		p.e.mu.Unlock()
		if vp != nil {
			err := p.e.flushPipeline(p.ctx, vp, time.Now())
			if p.ctx.Err() != nil {
				return p.ctx.Err()
			}
			if err != nil {
				p.e.cfg.Logger.Warn("pipeline start: not waiting for a view any longer", "pipeline", p.name, "view", v, "err", err)
			}
		}
		if err := p.e.host.AwaitView(p.ctx, v); err != nil {
			if p.ctx.Err() != nil {
				return p.ctx.Err()
			}
			p.e.cfg.Logger.Warn("pipeline start: the view's copy did not catch up", "pipeline", p.name, "view", v, "err", err)
		}
	}
	p.setStatus(StatusStarting, "")
	return nil
}

// startWorkers starts every stage's consumer goroutines and the bridges.
func (p *pipeline) startWorkers() {
	id := 0
	for _, s := range p.stages {
		parts := 0
		for _, in := range s.inputs {
			parts += in.Partitions
		}
		s.want = int32(max(1, min(p.e.cfg.Consumers, parts)))
		s.joined = make(chan struct{})
		for i := 0; i < p.e.cfg.Consumers; i++ {
			w := &worker{p: p, stage: s, index: i, id: id}
			id++
			p.wg.Add(1)
			go w.supervise()
		}
	}
	p.runBridges()
}

func (p *pipeline) stop() {
	p.cancel()
	p.wg.Wait()
	p.setStatus(StatusStopped, "")
	p.e.host.PutRecord(p.record())
}

func (p *pipeline) heartbeat() {
	p.every(p.e.cfg.RecordInterval, func() bool {
		if p.e.host.Heartbeat(p.ctx, p.name) == Stop {
			// dropped elsewhere: leave the running set too, or FLUSH
			// would wait on it and a new pipeline of its name would not
			// start (remove waits for this goroutine, so not inline)
			p.e.removals.Add(1)
			go func() {
				defer p.e.removals.Done()
				p.e.remove(p)
			}()
			return false
		}
		p.e.host.PutRecord(p.record())
		return true
	})
}

// every calls fn every interval until the pipeline stops or fn returns
// false; it is one of the pipeline's goroutines (p.wg).
func (p *pipeline) every(interval time.Duration, fn func() bool) {
	defer p.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			if !fn() {
				return
			}
		}
	}
}

// setWatermark records a last-stage worker's watermark (MinInt64: none).
func (p *pipeline) setWatermark(worker int, wm int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wm == math.MinInt64 {
		delete(p.wms, worker)
		return
	}
	if p.wms == nil {
		p.wms = map[int]int64{}
	}
	p.wms[worker] = wm
}

func (p *pipeline) setStatus(status, errText string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.lastErr = status, errText
}

// workerFailed and workerOK keep the status: RETRYING while any worker is
// retrying, RUNNING otherwise.
func (p *pipeline) workerFailed(id int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failing) == 0 {
		p.retryingSince = time.Now()
	}
	p.failing[id] = true
	p.status, p.lastErr = StatusRetrying, err.Error()
	p.hopeless = hopeless(err)
}

// hopeless says an error of a pipeline's work can never pass by retrying:
// a feature the plan needs and the engine lacks, or a plan that does not
// bind. The planner refuses such plans at CREATE; this covers pipelines
// created by an earlier version.
func hopeless(err error) bool {
	switch pgerror.CodeOf(err) {
	case pgerror.FeatureNotSupported, pgerror.UndefinedFunction, pgerror.UndefinedColumn,
		pgerror.DatatypeMismatch, pgerror.InvalidObjectDefinition:
		return true
	}
	return false
}

// stuck returns the pipeline's error when FLUSH should not wait for it:
// it has been retrying for Config.FlushGiveUp, or its error is hopeless.
func (p *pipeline) stuck() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != StatusRetrying && p.status != StatusFailed {
		return "", false
	}
	return p.lastErr, p.hopeless || time.Since(p.retryingSince) >= p.e.cfg.FlushGiveUp
}

func (p *pipeline) workerOK(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failing, id)
	if len(p.failing) == 0 {
		p.status, p.lastErr = StatusRunning, ""
	}
}

func (p *pipeline) record() Record {
	p.mu.Lock()
	status, lastErr := p.status, p.lastErr
	var wm int64 = math.MinInt64
	for _, w := range p.wms {
		if wm == math.MinInt64 || w < wm {
			wm = w
		}
	}
	p.mu.Unlock()
	r := Record{
		Pipeline: p.name, Status: status, Error: lastErr,
		Consumed: p.consumed.Load(), Emitted: p.emitted.Load(), Filtered: p.filtered.Load(),
		Dropped: p.dropped.Load(), Late: p.late.Load(), Epochs: p.epochs.Load(),
		Partitions: int(p.partitions.Load()), Started: p.started, CheckpointBytes: p.checkpointBytes.Load(),
		Restoring: int(p.restoring.Load()), RestoredKeys: p.restoredKeys.Load(), LocalRestores: p.restoresLocal.Load(),
	}
	if us := p.lastCheckpoint.Load(); us > 0 {
		r.LastCheckpoint = time.UnixMicro(us)
	}
	r.StateBytes = p.stateSize()
	if wm > math.MinInt64 {
		r.Watermark = time.UnixMicro(wm).UTC()
	}
	return r
}

// stateSizeEvery bounds how often a large state gauge is measured again;
// states under stateSizeFresh are measured on every read (a cheap scan).
const (
	stateSizeEvery = 10 * time.Second
	stateSizeFresh = 1 << 20
)

// stateSize returns the bytes of the pipeline's local state.
func (p *pipeline) stateSize() int64 {
	now := time.Now().UnixNano()
	at, last := p.stateSizedAt.Load(), p.stateBytes.Load()
	if p.e.cfg.Store == nil {
		return 0
	}
	if last >= stateSizeFresh && (now-at < int64(stateSizeEvery) || !p.stateSizedAt.CompareAndSwap(at, now)) {
		return last
	}
	p.stateSizedAt.Store(now)
	n, err := p.e.cfg.Store.Size(state.PipelinePrefix(p.id))
	if err != nil {
		p.e.cfg.Logger.Warn("measuring state size failed", "pipeline", p.name, "err", err)
		return p.stateBytes.Load()
	}
	p.stateBytes.Store(n)
	return n
}

// ErrorsColumns is the schema of a pipeline's errors stream.
var ErrorsColumns = []string{"pipeline", "stage", "reason", "source_partition", "source_offset", "payload", "payload_text", "at"}

// ErrorsTypes are the types of ErrorsColumns.
var ErrorsTypes = []types.Type{types.Text, types.Text, types.Text, types.Int4, types.Int8, types.Bytea, types.Text, types.TimestampTZ}

// TableKey is the record key of a row in a materialized view's table
// topic: the key encoding (types.AppendKey) of its key columns, each as
// the column's type. A view's local copy stores the row under that key
// as it comes, and a lookup by key builds the same bytes. Unlike
// types.RecordKey's text, it is never empty (a NULL key is a key: compaction
// needs one) and two keys are equal exactly when SQL's GROUP BY makes
// them one group (1.0 and 1.00, -0 and 0).
func TableKey(buf []byte, row types.Row, keyCols []int, colTypes []types.Type) []byte {
	for _, c := range keyCols {
		v := row[c]
		if v.K != colTypes[c] && !v.IsNull() {
			if cv, err := types.Cast(v, colTypes[c]); err == nil {
				v = cv
			}
		}
		buf = types.AppendKey(buf, v)
	}
	return buf
}
