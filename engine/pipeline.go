package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pipeline is one running continuous query on this node.
type pipeline struct {
	e      *Engine
	name   string
	topo   *Topology
	stages []*stageRun
	errors *Stream

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	consumed, emitted, filtered, dropped, late, epochs atomic.Int64
	partitions                                         atomic.Int64
	lastCheckpoint                                     atomic.Int64 // unix micros

	mu      sync.Mutex
	status  string
	lastErr string
	failing map[int]bool // workers currently retrying
	started time.Time
}

// stageRun is a stage with its datasets resolved.
type stageRun struct {
	def         *Stage
	inputs      []*Stream
	output      *Stream
	first, last bool
}

func (s *stageRun) inputTopics(e *Engine) []string {
	out := make([]string, len(s.inputs))
	for i, d := range s.inputs {
		out[i] = e.topic(d.Topic)
	}
	return out
}

func newPipeline(e *Engine, name string, topo *Topology, stages []*stageRun, errs *Stream) *pipeline {
	ctx, cancel := context.WithCancel(context.Background())
	return &pipeline{e: e, name: name, topo: topo, stages: stages, errors: errs, ctx: ctx, cancel: cancel,
		status: StatusStarting, failing: map[int]bool{}, started: time.Now()}
}

func (p *pipeline) start() {
	id := 0
	for _, s := range p.stages {
		for i := 0; i < p.e.cfg.Consumers; i++ {
			w := &worker{p: p, stage: s, index: i, id: id}
			id++
			p.wg.Add(1)
			go w.supervise()
		}
	}
	p.wg.Add(1)
	go p.heartbeat()
}

func (p *pipeline) stop() {
	p.cancel()
	p.wg.Wait()
	p.setStatus(StatusStopped, "")
	p.e.host.PutRecord(p.record())
}

func (p *pipeline) heartbeat() {
	defer p.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			if p.e.host.Heartbeat(p.ctx, p.name) == Stop {
				p.cancel()
				return
			}
			p.e.host.PutRecord(p.record())
		}
	}
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
	p.failing[id] = true
	p.status, p.lastErr = StatusRetrying, err.Error()
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
	p.mu.Unlock()
	r := Record{
		Pipeline: p.name, Status: status, Error: lastErr,
		Consumed: p.consumed.Load(), Emitted: p.emitted.Load(), Filtered: p.filtered.Load(),
		Dropped: p.dropped.Load(), Late: p.late.Load(), Epochs: p.epochs.Load(),
		Partitions: int(p.partitions.Load()), Started: p.started,
	}
	if us := p.lastCheckpoint.Load(); us > 0 {
		r.LastCheckpoint = time.UnixMicro(us)
	}
	return r
}

// worker is one consumer goroutine of a stage.
type worker struct {
	p     *pipeline
	stage *stageRun
	index int
	id    int

	in     map[string]*types.JSONCodec // by physical topic
	out    *types.JSONCodec
	errOut *types.JSONCodec
	chains map[int32]*partChain // per input partition (topics share nothing here: key by topic+partition)
	owned  atomic.Int64
}

// partChain is the operator chain of one input partition.
type partChain struct {
	chain   *operators.Chain
	filters []*operators.Filter
	boundTo *epoch
	err     error
}

// epoch accumulates one checkpoint interval's work until it commits.
type epoch struct {
	consumed, emitted, filtered, dropped int64
	produceErr                           atomic.Value // error
	pending                              sync.WaitGroup
}

// supervise runs the worker, restarting it after errors with backoff.
func (w *worker) supervise() {
	defer w.p.wg.Done()
	backoff := 500 * time.Millisecond
	for {
		err := w.run()
		if w.p.ctx.Err() != nil {
			return
		}
		if err == nil {
			continue
		}
		w.p.workerFailed(w.id, err)
		w.p.e.cfg.Logger.Warn("pipeline consumer failed; retrying", "pipeline", w.p.name, "stage", w.stage.def.Name, "consumer", w.index, "err", err, "backoff", backoff)
		select {
		case <-w.p.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (w *worker) clientOpts() []kgo.Opt {
	e := w.p.e
	reset := kgo.NewOffset().AtStart()
	if e.cfg.OffsetReset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	return []kgo.Opt{
		kgo.SeedBrokers(e.cfg.Brokers...),
		kgo.ConsumerGroup(e.group(w.p.name, w.stage.def.Name)),
		kgo.ConsumeTopics(w.stage.inputTopics(e)...),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Control records advance our position, so committed offsets
		// reach the end of a transactional input (FLUSH relies on it).
		kgo.KeepControlRecords(),
		kgo.RequireStableFetchOffsets(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(10 * time.Second),
		kgo.RebalanceTimeout(30 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProducerBatchMaxBytes(4 << 20),
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			w.resetChains()
			w.adjustOwned(m, 1)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			w.resetChains()
			w.adjustOwned(m, -1)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			w.resetChains()
			w.adjustOwned(m, -1)
		}),
	}
}

func (w *worker) adjustOwned(m map[string][]int32, sign int64) {
	var n int64
	for _, ps := range m {
		n += int64(len(ps))
	}
	w.owned.Add(sign * n)
	w.p.partitions.Add(sign * n)
}

func (w *worker) resetChains() { w.chains = nil }

func (w *worker) setup() {
	e := w.p.e
	w.in = map[string]*types.JSONCodec{}
	for _, d := range w.stage.inputs {
		w.in[e.topic(d.Topic)] = types.NewJSONCodec(d.Columns, d.Types)
	}
	o := w.stage.output
	w.out = types.NewJSONCodec(o.Columns, o.Types)
	w.errOut = types.NewJSONCodec(w.p.errors.Columns, w.p.errors.Types)
}

// run is one life of the consumer: connect, loop epochs, leave.
func (w *worker) run() error {
	w.setup()
	defer func() {
		w.p.partitions.Add(-w.owned.Swap(0))
		w.chains = nil
	}()
	if w.p.e.cfg.ExactlyOnce {
		return w.runTransactional()
	}
	return w.runAtLeastOnce()
}

func (w *worker) txnID() string {
	e := w.p.e
	return e.cfg.TopicPrefix + "fvsql." + w.p.name + "." + w.stage.def.Name + "." + e.cfg.NodeID + "." + strconv.Itoa(w.index)
}

// runTransactional: each epoch's output, poison reports and input offsets
// commit in one transaction; a rebalance or a crash aborts the epoch and
// the client rewinds to the committed offsets.
func (w *worker) runTransactional() error {
	e := w.p.e
	opts := append(w.clientOpts(),
		kgo.TransactionalID(w.txnID()),
		kgo.TransactionTimeout(max(10*time.Second, 3*e.cfg.CheckpointInterval)),
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	produce := func(r *kgo.Record, ep *epoch) {
		ep.pending.Add(1)
		sess.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			if err != nil {
				ep.produceErr.CompareAndSwap(nil, err)
			}
			ep.pending.Done()
		})
	}
	for {
		if err := sess.Begin(); err != nil {
			return err
		}
		ep := &epoch{}
		pollErr := w.collect(sess.PollRecords, ep, produce)
		shutdown := w.p.ctx.Err() != nil
		endCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		try := kgo.TryCommit
		if pollErr != nil || ep.produceErr.Load() != nil {
			try = kgo.TryAbort
		}
		committed, err := sess.End(endCtx, try)
		cancel()
		if err != nil {
			return err
		}
		if committed {
			w.commitEpoch(ep)
		} else {
			w.resetChains() // stateful operators will restore from the last checkpoint
		}
		if pollErr != nil {
			return pollErr
		}
		if perr, _ := ep.produceErr.Load().(error); perr != nil {
			return perr
		}
		if shutdown {
			return nil
		}
		w.p.workerOK(w.id)
	}
}

// runAtLeastOnce: output is flushed, then offsets are committed; a
// rebalance waits for the batch in flight (BlockRebalanceOnPoll).
func (w *worker) runAtLeastOnce() error {
	opts := append(w.clientOpts(), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	produce := func(r *kgo.Record, ep *epoch) {
		ep.pending.Add(1)
		cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			if err != nil {
				ep.produceErr.CompareAndSwap(nil, err)
			}
			ep.pending.Done()
		})
	}
	for {
		ep := &epoch{}
		pollErr := w.collect(cl.PollRecords, ep, produce)
		ep.pending.Wait()
		if perr, _ := ep.produceErr.Load().(error); perr != nil {
			cl.AllowRebalance()
			return perr
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.CommitUncommittedOffsets(ctx)
		cancel()
		cl.AllowRebalance()
		if err != nil {
			return err
		}
		w.commitEpoch(ep)
		if pollErr != nil {
			return pollErr
		}
		if w.p.ctx.Err() != nil {
			return nil
		}
		w.p.workerOK(w.id)
	}
}

// collect polls and processes records for one checkpoint interval.
func (w *worker) collect(poll func(context.Context, int) kgo.Fetches, ep *epoch, produce func(*kgo.Record, *epoch)) error {
	e := w.p.e
	deadline := time.Now().Add(e.cfg.CheckpointInterval)
	for {
		ctx, cancel := context.WithDeadline(w.p.ctx, deadline)
		fs := poll(ctx, e.cfg.BatchSize)
		cancel()
		var fetchErr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return fetchErr
		}
		if err := w.process(fs, ep, produce); err != nil {
			return err
		}
		if w.p.ctx.Err() != nil || !time.Now().Before(deadline) {
			return nil
		}
		if fs.IsClientClosed() {
			return errors.New("client closed")
		}
	}
}

// process runs a poll's records through the per-partition chains.
func (w *worker) process(fs kgo.Fetches, ep *epoch, produce func(*kgo.Record, *epoch)) error {
	var err error
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if err != nil || len(fp.Records) == 0 {
			return
		}
		err = w.processPartition(fp, ep, produce)
	})
	return err
}

func (w *worker) processPartition(fp kgo.FetchTopicPartition, ep *epoch, produce func(*kgo.Record, *epoch)) error {
	codec := w.in[fp.Topic]
	width := codec.Width()
	b := &operators.Batch{Rows: make([]types.Row, 0, len(fp.Records)), Source: make([]any, 0, len(fp.Records))}
	flat := make([]types.Value, len(fp.Records)*width)
	n := 0
	for _, r := range fp.Records {
		if r.Attrs.IsControl() {
			continue
		}
		ep.consumed++
		row := types.Row(flat[n*width : (n+1)*width : (n+1)*width])
		if err := codec.Decode(r.Value, row); err != nil {
			w.poison(r, "decode", err, ep, produce)
			continue
		}
		n++
		b.Rows = append(b.Rows, row)
		b.Source = append(b.Source, r)
	}
	if len(b.Rows) == 0 {
		return nil
	}
	pc, err := w.chain(fp.Partition, ep, produce)
	if err != nil {
		return err
	}
	before := pc.filteredCount()
	if err := pc.chain.Push(b); err != nil {
		return err
	}
	ep.filtered += pc.filteredCount() - before
	return nil
}

func (pc *partChain) filteredCount() int64 {
	var n int64
	for _, f := range pc.filters {
		n += f.Filtered
	}
	return n
}

func (w *worker) chain(part int32, ep *epoch, produce func(*kgo.Record, *epoch)) (*partChain, error) {
	if pc, ok := w.chains[part]; ok {
		pc.bind(w, ep, produce)
		return pc, nil
	}
	pc := &partChain{}
	pc.bind(w, ep, produce)
	if w.chains == nil {
		w.chains = map[int32]*partChain{}
	}
	w.chains[part] = pc
	return pc, pc.err
}

// bind (re)builds the chain so that its sink and error policy write into
// the current epoch. Building is cheap next to a poll.
func (pc *partChain) bind(w *worker, ep *epoch, produce func(*kgo.Record, *epoch)) {
	if pc.chain != nil && pc.boundTo == ep {
		return
	}
	var ops []operators.Operator
	pc.filters = nil
	onErr := func(b *operators.Batch, i int, err error) error {
		if b.Source != nil && i < len(b.Source) {
			if r, ok := b.Source[i].(*kgo.Record); ok {
				w.poison(r, w.stage.def.Name, err, ep, produce)
				return nil
			}
		}
		w.poison(nil, w.stage.def.Name, err, ep, produce)
		return nil
	}
	for i := range w.stage.def.Steps {
		op, err := operators.Build(&w.stage.def.Steps[i], nil, onErr)
		if err != nil {
			pc.err = err
			return
		}
		if f, ok := op.(*operators.Filter); ok {
			pc.filters = append(pc.filters, f)
		}
		ops = append(ops, op)
	}
	out := w.stage.output
	topic := w.p.e.topic(out.Topic)
	sink := func(b *operators.Batch) error {
		for _, row := range b.Rows {
			val := w.out.Append(make([]byte, 0, 128), row)
			produce(&kgo.Record{Topic: topic, Key: RecordKey(row, out.Key), Value: val}, ep)
			ep.emitted++
		}
		return nil
	}
	pc.chain = operators.NewChain(sink, ops...)
	pc.boundTo = ep
}

// poison reports a row that cannot be processed to the errors dataset,
// inside the epoch's transaction, and counts it as dropped.
func (w *worker) poison(r *kgo.Record, stage string, cause error, ep *epoch, produce func(*kgo.Record, *epoch)) {
	ep.dropped++
	row := types.Row{
		types.NewText(w.p.name), types.NewText(stage), types.NewText(cause.Error()),
		types.NullValue, types.NullValue, types.NullValue, types.NullValue, types.NewTimestamp(types.TimestampTZ, time.Now().UnixMicro()),
	}
	if r != nil {
		row[3] = types.NewInt(types.Int4, int64(r.Partition))
		row[4] = types.NewInt8(r.Offset)
		row[5] = types.NewBytea(r.Value)
		row[6] = types.NewText(printable(r.Value))
	}
	val := w.errOut.Append(make([]byte, 0, 256), row)
	produce(&kgo.Record{Topic: w.p.e.topic(w.p.errors.Topic), Value: val}, ep)
}

// printable renders a payload as valid UTF-8 text, cut at 4 KiB.
func printable(b []byte) string {
	const limit = 4 << 10
	cut := len(b) > limit
	if cut {
		b = b[:limit]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	if cut {
		s += "…"
	}
	return s
}

// commitEpoch publishes a committed epoch's counters.
func (w *worker) commitEpoch(ep *epoch) {
	p := w.p
	if w.stage.first {
		p.consumed.Add(ep.consumed)
	}
	if w.stage.last {
		p.emitted.Add(ep.emitted)
	}
	p.filtered.Add(ep.filtered)
	p.dropped.Add(ep.dropped)
	if ep.consumed > 0 {
		p.epochs.Add(1)
		p.lastCheckpoint.Store(time.Now().UnixMicro())
	}
}

// ErrorsColumns is the schema of a pipeline's errors stream.
var ErrorsColumns = []string{"pipeline", "stage", "reason", "source_partition", "source_offset", "payload", "payload_text", "at"}

// ErrorsTypes are the types of ErrorsColumns.
var ErrorsTypes = []types.Type{types.Text, types.Text, types.Text, types.Int4, types.Int8, types.Bytea, types.Text, types.TimestampTZ}

// RecordKey is the Kafka record key of a row: the text of its key column,
// or a JSON array of the key columns' values when there are several.
func RecordKey(row types.Row, keyCols []int) []byte {
	switch len(keyCols) {
	case 0:
		return nil
	case 1:
		v := row[keyCols[0]]
		if v.IsNull() {
			return nil
		}
		return []byte(v.Text())
	}
	buf := []byte{'['}
	for i, c := range keyCols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = types.AppendJSONValue(buf, row[c])
	}
	return append(buf, ']')
}
