package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/fvsql/fvsql/backends/kafka/embedded"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
	"github.com/twmb/franz-go/pkg/kgo"
)

// wmHeader marks a watermark control record on an internal topic; its
// value is "<source partition>:<watermark micros>".
const wmHeader = "fvsql-wm"

// wmDerivedHeader, after wmHeader, says the sender's watermark comes from
// its own upstream partitions (see sourceWM.derived).
const wmDerivedHeader = "fvsql-wm-derived"

// wmBehindHeader, after wmHeader, says the sender had records of its own
// input left to read when it sent the watermark (see sourceWM.behind).
const wmBehindHeader = "fvsql-wm-behind"

// worker is one consumer goroutine of a stage.
type worker struct {
	p     *pipeline
	stage *stageRun
	index int
	id    int

	in         map[string]types.Codec // by physical topic
	inMeta     map[string]bool        // the input's reads carry metadata columns
	inUpsert   map[string]bool        // the input is a view's table (Stream.Upsert)
	out        types.Codec            // output stream (changes: with the op column first)
	view       *types.JSONCodec       // a view's rows, for its table topic
	viewTypes  []types.Type           // their column types
	full       types.Row              // scratch: a change row with its op column
	encodedKey bool                   // output keyed by TableKey (a repartition topic)
	errOut     *types.JSONCodec
	stateful   bool // the stage keeps state
	ticks      bool // a step acts on the wall clock (plan.Step.Ticks): every owned partition is ticked
	broadcast  bool // the output is internal: send watermarks downstream
	fromCtl    bool // the input is internal: watermarks arrive as control records

	parts     map[partKey]*partition
	committed func(topic string, part int32) (int64, bool) // the group's committed offset at assignment
	revokedMu sync.Mutex
	revoked   []partKey // noted by group callbacks, applied by the worker
	ep        *epoch
	epochs    uint64 // epochs begun, the Env.Epoch of the partitions' steps
	produce   func(*kgo.Record)
	refused   refusedRecords // records the broker refused for good (oversize.go)
	// owned is the set of partitions the group gave the worker, by its
	// callbacks; a set, so that a callback repeating an assignment (a
	// rejoin under load) or coming after the worker's run ended never
	// counts a partition twice or below none
	ownedMu sync.Mutex
	owned   map[partKey]bool
	// fetched are the owned partitions whose committed offsets the
	// client has fetched (kgo.AdjustFetchOffsetsFn): until then, one
	// without a commit cannot be told from one whose commit is not known
	// yet (tickOwned)
	fetched  map[partKey]bool
	assigned atomic.Bool // has had partitions
	// pollMax is the most records a poll of this worker takes (0: the
	// configured batch size), cut when an epoch runs long (epochPace)
	pollMax int
}

// awaitSiblings holds a starting worker's first epoch until every local
// worker of its stage that can own a partition owns some (or
// Config.SiblingWait passed). The first worker to join a group is given every partition;
// each later join takes some away, which aborts the epoch the first one
// has open, so its work is done again, and while it ran alone its
// partitions' event time moved far ahead of those the others take over,
// which keeps the next stage's windows open that much longer. With real
// Kafka, group.initial.rebalance.delay.ms does the same for a new group.
func (w *worker) awaitSiblings() {
	t := time.NewTimer(w.p.e.cfg.SiblingWait)
	defer t.Stop()
	select {
	case <-w.stage.joined:
	case <-t.C:
	case <-w.p.ctx.Done():
	}
}

type partKey struct {
	topic string
	part  int32
}

// epoch accumulates one checkpoint interval's work until it commits.
type epoch struct {
	consumed, emitted, filtered, dropped, late int64
	produceErr                                 firstError
	failures                                   epochFailures // produces that failed for the record's sake
	matched                                    []uint64      // refusals this epoch reported as poison
	pending                                    sync.WaitGroup
	st                                         *state.Epoch // stateful stages
	tickAt                                     time.Time    // when the epoch's end ticked the clock (plan.Step.Ticks)
	ticked                                     []partKey    // the partitions it ticked
}

// firstError keeps the first error reported by concurrent callbacks.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
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

// partitioner spreads records by key, except watermark control records,
// which go to the partition they name.
type partitioner struct{ base kgo.Partitioner }

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return topicPartitioner{p.base.ForTopic(t)}
}

type topicPartitioner struct{ base kgo.TopicPartitioner }

func (t topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return isPlaced(r) || t.base.RequiresConsistency(r)
}

func (t topicPartitioner) Partition(r *kgo.Record, n int) int {
	if isPlaced(r) {
		return int(r.Partition)
	}
	return t.base.Partition(r, n)
}

// OnNewBatch passes the sticky partitioner's batch boundary through.
func (t topicPartitioner) OnNewBatch() {
	if nb, ok := t.base.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}

func isControl(r *kgo.Record) bool { return len(r.Headers) > 0 && r.Headers[0].Key == wmHeader }

// hasHeader reports whether a control record carries the mark key after
// its first header.
func hasHeader(r *kgo.Record, key string) bool {
	for _, h := range r.Headers[1:] {
		if h.Key == key {
			return true
		}
	}
	return false
}

// isPlaced reports whether a record names its own partition: watermark
// control records and state checkpoint records (state partition = input
// partition, so state moves with its partition).
func isPlaced(r *kgo.Record) bool {
	return len(r.Headers) > 0 && (r.Headers[0].Key == wmHeader || r.Headers[0].Key == stateHeader)
}

// seedHeader marks a seed marker: a record a pipeline's start writes to
// the one-partition internal topic read by an aggregate without GROUP BY
// (operators.Seeder), so that the view holds its group over no rows as
// soon as the stage has read the marker, and FLUSH waits for it as for
// any record.
const seedHeader = "fvsql-seed"

func isSeed(r *kgo.Record) bool { return len(r.Headers) > 0 && r.Headers[0].Key == seedHeader }

// stateHeader marks a state checkpoint record.
const stateHeader = "fvsql-state"

func (w *worker) clientOpts() []kgo.Opt {
	e := w.p.e
	reset := kgo.NewOffset().AtStart()
	if e.cfg.OffsetReset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	return append([]kgo.Opt{
		kgo.SeedBrokers(e.cfg.Brokers...),
		kgo.ConsumerGroup(e.group(w.p.id, w.stage.def.Name)),
		// Static membership: a restarted process takes its old members'
		// places, and their partitions, at once instead of waiting for
		// their session timeout and a rebalance (kept-state recovery).
		kgo.InstanceID(e.instanceID(w.p.id, w.stage.def.Name, w.index)),
		kgo.ConsumeTopics(w.stage.inputTopics(e)...),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Control records advance our position, so committed offsets
		// reach the end of a transactional input (FLUSH relies on it).
		kgo.KeepControlRecords(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(e.cfg.GroupSessionTimeout),
		// A member learns of a rebalance from its heartbeat (see
		// Config.GroupHeartbeat).
		kgo.HeartbeatInterval(e.cfg.GroupHeartbeat),
		kgo.RebalanceTimeout(30 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ProducerLinger(5 * time.Millisecond),
		// Batches as large as the topics fvsql creates accept
		// (MaxMessageBytes): a record up to recordLimit goes alone.
		kgo.ProducerBatchMaxBytes(MaxMessageBytes),
		// murmur2 of the key, like Java producers; sticky batches for unkeyed rows
		kgo.RecordPartitioner(partitioner{kgo.StickyKeyPartitioner(nil)}),
		// Callbacks run on franz-go's group goroutine: they only note
		// what moved; the worker drops revoked partitions' operators
		// itself, between polls. (A transactional epoch that lost a
		// partition aborts, which drops every partition's operators.)
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			w.adjustOwned(m, true)
			if len(m) > 0 && w.assigned.CompareAndSwap(false, true) {
				w.stage.noteAssigned()
			}
		}),
		kgo.AdjustFetchOffsetsFn(func(_ context.Context, m map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			w.noteFetched(m)
			return m, nil
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			w.noteRevoked(m)
			w.adjustOwned(m, false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			w.noteRevoked(m)
			w.adjustOwned(m, false)
		}),
	}, e.cfg.KafkaOpts...)
}

// adjustOwned adds the partitions of m to the worker's owned set (add)
// or takes them out, and the pipeline's count with it.
func (w *worker) adjustOwned(m map[string][]int32, add bool) {
	w.ownedMu.Lock()
	defer w.ownedMu.Unlock()
	if w.owned == nil {
		w.owned = map[partKey]bool{}
	}
	before := len(w.owned)
	for t, ps := range m {
		for _, p := range ps {
			if add {
				w.owned[partKey{t, p}] = true
			} else {
				delete(w.owned, partKey{t, p})
				delete(w.fetched, partKey{t, p})
			}
		}
	}
	w.p.partitions.Add(int64(len(w.owned) - before))
}

// disown empties the worker's owned set (its run ended).
func (w *worker) disown() {
	w.ownedMu.Lock()
	defer w.ownedMu.Unlock()
	w.p.partitions.Add(-int64(len(w.owned)))
	clear(w.owned)
	clear(w.fetched)
}

// noteFetched records the partitions whose committed offsets the client
// fetched (m: where each starts).
func (w *worker) noteFetched(m map[string]map[int32]kgo.Offset) {
	w.ownedMu.Lock()
	defer w.ownedMu.Unlock()
	if w.fetched == nil {
		w.fetched = map[partKey]bool{}
	}
	for t, ps := range m {
		for p := range ps {
			w.fetched[partKey{t, p}] = true
		}
	}
}

// resetParts drops every partition's operators; they are rebuilt from
// committed state when their partition next has records.
func (w *worker) resetParts() { w.parts = nil }

func (w *worker) noteRevoked(m map[string][]int32) {
	w.revokedMu.Lock()
	defer w.revokedMu.Unlock()
	for t, ps := range m {
		for _, p := range ps {
			w.revoked = append(w.revoked, partKey{t, p})
		}
	}
}

// dropRevoked forgets the operators of partitions this worker lost.
func (w *worker) dropRevoked() {
	w.revokedMu.Lock()
	gone := w.revoked
	w.revoked = nil
	w.revokedMu.Unlock()
	for _, k := range gone {
		delete(w.parts, k)
	}
}

func (w *worker) setup() error {
	e := w.p.e
	w.in = map[string]types.Codec{}
	w.inMeta = map[string]bool{}
	w.inUpsert = map[string]bool{}
	var extra []int
	if wm := w.stage.def.Watermark; wm != nil {
		extra = append(extra, wm.Col)
	}
	need := InputColumns(w.stage.def.Steps, extra)
	if w.p.internal[w.stage.output.Name] {
		need = nil // a repartition stage forwards whole rows
	}
	for _, d := range w.stage.inputs {
		c, err := types.NewCodec(d.Format, d.Columns, d.Types)
		if err != nil {
			return err
		}
		if j, ok := c.(*types.JSONCodec); ok {
			c = j.Borrowing() // fetched records are never modified
			if need != nil {
				c = j.Borrowing().Projecting(need)
			}
		}
		w.in[e.topic(d.Topic)] = c
		w.inMeta[e.topic(d.Topic)] = d.Meta && (need == nil || len(need) > len(d.Columns))
		w.inUpsert[e.topic(d.Topic)] = d.Upsert
	}
	o := w.stage.output
	var err error
	if w.out, err = types.NewCodec(o.Format, o.Columns, o.Types); err != nil {
		return err
	}
	if w.stage.def.Changes != nil {
		w.view = types.NewJSONCodec(o.Columns[1:], o.Types[1:])
		w.viewTypes = o.Types[1:]
	}
	w.errOut = types.NewJSONCodec(w.p.errors.Columns, w.p.errors.Types)
	w.refused.init()
	w.stateful, w.ticks = false, w.stage.def.Ticks()
	for _, st := range w.stage.def.Steps {
		w.stateful = w.stateful || !st.Stateless()
	}
	w.broadcast = w.p.internal[o.Name]
	// A repartition topic's key is the key encoding, unless the key has
	// a metadata column (GROUP BY _key): the next stage reads _key from
	// the internal record's key, which must then stay the source's text.
	w.encodedKey = w.broadcast && len(o.Key) > 0
	for _, k := range o.Key {
		w.encodedKey = w.encodedKey && k < len(o.Types)
	}
	w.fromCtl = false
	for _, d := range w.stage.inputs {
		w.fromCtl = w.fromCtl || w.p.internal[d.Name]
	}
	return nil
}

// run is one life of the consumer: connect, loop epochs, leave.
func (w *worker) run() error {
	if err := w.setup(); err != nil {
		return err
	}
	defer func() {
		w.disown()
		w.parts = nil
		w.p.setWatermark(w.id, math.MinInt64)
	}()
	if w.p.e.cfg.ExactlyOnce {
		return w.runTransactional()
	}
	return w.runAtLeastOnce()
}

func (w *worker) txnID() string {
	return w.p.e.instanceID(w.p.id, w.stage.def.Name, w.index)
}

// committedLookup reads the group's committed offsets as the client
// fetched them when partitions were assigned.
func committedLookup(cl *kgo.Client) func(string, int32) (int64, bool) {
	return func(topic string, part int32) (int64, bool) {
		o, ok := cl.CommittedOffsets()[topic][part]
		return o.Offset, ok && o.Offset >= 0
	}
}

// newEpoch starts an epoch and binds every partition's state to it.
func (w *worker) newEpoch(produce func(*kgo.Record, *epoch)) *epoch {
	ep := &epoch{}
	w.epochs++ // user functions replaced since the last epoch take effect now (expr.Env.Epoch)
	if w.stateful {
		ep.st = w.p.e.cfg.Store.NewEpoch()
	}
	w.ep = ep
	w.produce = func(r *kgo.Record) { produce(r, ep) }
	for _, pt := range w.parts {
		pt.bind(w)
	}
	return ep
}

// endEpoch checkpoints every partition into the epoch before it commits:
// operator state, watermarks, and watermarks sent downstream.
func (w *worker) endEpoch() error {
	if w.ticks {
		w.ep.tickAt = time.Now()
		if err := w.tickOwned(); err != nil {
			return err
		}
	}
	for _, pt := range w.parts {
		if err := pt.idleTick(w); err != nil {
			return err
		}
		if err := pt.checkpoint(w); err != nil {
			return err
		}
	}
	return w.shipState()
}

// tickOwned gives the clock's tick to every partition the worker owns,
// building (and restoring) those that have had no input since the worker
// started: a view's rows must leave when their time is up although no
// new row comes. A partition not yet built is built only once the client
// has fetched the group's committed offsets for it: before that,
// restoreState would take the local state for one without a commit
// behind it and void it. The epoch notes the partitions ticked (FLUSH
// waits for their ticks).
func (w *worker) tickOwned() error {
	w.ownedMu.Lock()
	keys := slices.Collect(maps.Keys(w.owned))
	fetched := maps.Clone(w.fetched)
	w.ownedMu.Unlock()
	for _, k := range keys {
		if _, built := w.parts[k]; !built && !fetched[k] {
			continue
		}
		pt, err := w.partition(k)
		if err != nil {
			return err
		}
		if err := pt.tick(); err != nil {
			return err
		}
		w.ep.ticked = append(w.ep.ticked, k)
	}
	return nil
}

// shipState writes the epoch's state changes to the stage's compacted
// state topic, in the epoch's transaction: key = state key within its
// partition, value = the state or a tombstone, state partition = input
// partition.
func (w *worker) shipState() error {
	if w.ep.st == nil || len(w.parts) == 0 {
		return nil
	}
	topic := w.p.e.topic(stateTopic(w.p.id, w.stage.def.Name))
	// One pass over the epoch's changes (a pass per partition read the
	// whole epoch once per partition), each change to its partition.
	parts := make([]*partition, 0, len(w.parts))
	for _, pt := range w.parts {
		parts = append(parts, pt)
	}
	return w.ep.st.Changes(state.StagePrefix(w.p.id, w.stage.def.Name), func(key, value []byte, deleted bool) error {
		var pt *partition
		for _, c := range parts {
			if bytes.HasPrefix(key, c.prefix) {
				pt = c
				break
			}
		}
		if pt == nil {
			return nil
		}
		r := &kgo.Record{
			Topic: topic, Partition: pt.key.part,
			Key:     append([]byte(nil), key[len(pt.prefix):]...),
			Headers: []kgo.RecordHeader{{Key: stateHeader}},
		}
		if !deleted {
			r.Value = append([]byte(nil), value...)
		}
		w.produce(r)
		return nil
	})
}

// finish applies the outcome of an epoch.
func (w *worker) finish(ep *epoch, committed bool) error {
	if ep.st != nil {
		if committed {
			w.p.checkpointBytes.Store(int64(ep.st.Size()))
			if err := ep.st.Commit(); err != nil {
				return err
			}
		} else {
			ep.st.Discard()
		}
	}
	if committed {
		w.refused.committed(ep)
		w.commitEpoch(ep)
		w.stage.ticks.set(ep.ticked, ep.tickAt)
	} else {
		// The next attempt reports the records the broker refused
		// instead of producing them again (oversize.go).
		w.refused.aborted(ep)
		w.resetParts() // operators restore from the last committed state
	}
	return nil
}

// runTransactional: each epoch's output, poison reports and input offsets
// commit in one transaction; a rebalance or a crash aborts the epoch and
// the client rewinds to the committed offsets.
func (w *worker) runTransactional() error {
	e := w.p.e
	opts := append(w.clientOpts(),
		kgo.TransactionalID(w.txnID()),
		kgo.TransactionTimeout(e.txnTimeout()),
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer w.closeBounded(sess.Close)
	// Initialise the producer now rather than at the first produce: that
	// fences a previous incarnation of this transactional id and aborts
	// its open transaction, whose pending group offsets would otherwise
	// keep the consumer from learning where to start (OffsetFetch answers
	// UNSTABLE_OFFSET_COMMIT) until the first empty epoch ended.
	initCtx, cancel := context.WithTimeout(w.p.ctx, 30*time.Second)
	defer cancel()
	pid, pepoch, err := sess.Client().ProducerID(initCtx)
	if err != nil {
		return err
	}
	if e.cfg.EmbeddedBroker {
		topics := append(w.p.stageWrites(w.stage), e.topic(w.p.errors.Topic))
		if err := embedded.AbortProducer(initCtx, e.admin, pid, pepoch, topics); err != nil {
			return err
		}
	}
	cancel()
	w.committed = committedLookup(sess.Client())
	w.awaitSiblings()
	produce := func(r *kgo.Record, ep *epoch) {
		ep.pending.Add(1)
		sess.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err != nil {
				w.produceFailed(ep, r, err)
			}
			ep.pending.Done()
		})
	}
	for {
		begun := time.Now()
		if err := sess.Begin(); err != nil {
			return err
		}
		ep := w.newEpoch(produce)
		workErr := w.collect(sess.PollRecords)
		if workErr == nil {
			workErr = w.endEpoch()
		}
		if workErr == nil {
			ctx, cancel := w.settleContext()
			workErr = settle(ctx, sess.Client(), ep)
			cancel()
		}
		shutdown := w.p.ctx.Err() != nil
		endCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		try := kgo.TryCommit
		if workErr != nil || ep.produceErr.get() != nil {
			try = kgo.TryAbort
		}
		seq := w.stage.committing.begin()
		committed, err := sess.End(endCtx, try)
		cancel()
		w.pollMax = epochPace(w.pollSize(), e.cfg.BatchSize, time.Since(begun), e.txnTimeout())
		if ferr := w.finish(ep, committed && err == nil); ferr != nil && err == nil {
			err = ferr
		}
		w.stage.committing.end(seq)
		if err != nil {
			return err
		}
		if workErr != nil {
			return workErr
		}
		if perr := ep.produceErr.get(); perr != nil {
			return perr
		}
		if shutdown {
			return nil
		}
		w.p.workerOK(w.id)
	}
}

// settle waits until every record of the epoch has been acknowledged or
// has failed, so that the epoch's produce error is final before it is
// decided whether to commit. End(TryCommit) flushes and commits what the
// brokers took: a record that failed only then (a broker's refusal comes
// back after the send) was left out of a committed epoch, lost and
// counted as emitted, instead of aborting it so that the next attempt
// reports it (oversize.go). ctx bounds the wait (settleContext).
func settle(ctx context.Context, cl *kgo.Client, ep *epoch) error {
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("engine: flush the epoch's records: %w", err)
	}
	ep.pending.Wait()
	return nil
}

// settleGrace is how long an epoch's records may still take to be
// acknowledged once the pipeline stops. Past it the epoch aborts, and the
// next run of the stage reads its input again, so that a slow broker
// cannot hold a shutdown past the supervisor's patience (a process is
// usually given 30 s after SIGTERM).
const settleGrace = 5 * time.Second

// settleContext bounds settle: 30 s, or settleGrace once the pipeline
// stops, whichever ends first.
func (w *worker) settleContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	stop := context.AfterFunc(w.p.ctx, func() { time.AfterFunc(settleGrace, cancel) })
	return ctx, func() {
		stop()
		cancel()
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
	defer w.closeBounded(cl.Close)
	w.committed = committedLookup(cl)
	w.awaitSiblings()
	produce := func(r *kgo.Record, ep *epoch) {
		ep.pending.Add(1)
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err != nil {
				w.produceFailed(ep, r, err)
			}
			ep.pending.Done()
		})
	}
	for {
		ep := w.newEpoch(produce)
		workErr := w.collect(cl.PollRecords)
		if workErr == nil {
			workErr = w.endEpoch()
		}
		ep.pending.Wait()
		if perr := ep.produceErr.get(); perr != nil && workErr == nil {
			workErr = perr
		}
		if workErr != nil {
			cl.AllowRebalance()
			w.finish(ep, false)
			return workErr
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// (No stage.committing here: a rebalance waits for AllowRebalance,
		// after the local commit, and holding it across a commit that
		// may wait for a rebalance could deadlock with a restoring
		// sibling that has not allowed its own.)
		err := cl.CommitUncommittedOffsets(ctx)
		cancel()
		if ferr := w.finish(ep, err == nil); ferr != nil && err == nil {
			err = ferr
		}
		cl.AllowRebalance()
		if err != nil {
			return err
		}
		if w.p.ctx.Err() != nil {
			return nil
		}
		w.p.workerOK(w.id)
	}
}

// collect polls and processes records for one checkpoint interval.
func (w *worker) collect(poll func(context.Context, int) kgo.Fetches) error {
	e := w.p.e
	deadline := time.Now().Add(e.cfg.CheckpointInterval)
	for {
		w.dropRevoked()
		ctx, cancel := context.WithDeadline(w.p.ctx, deadline)
		fs := poll(ctx, w.pollSize())
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
		var err error
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if err == nil && len(fp.Records) > 0 {
				err = w.processPartition(fp)
			}
		})
		if err != nil {
			return err
		}
		if w.p.ctx.Err() != nil || !time.Now().Before(deadline) || w.epochFull() {
			return nil
		}
		if fs.IsClientClosed() {
			return errors.New("client closed")
		}
	}
}

// pollSize is the most records the worker's next poll takes.
func (w *worker) pollSize() int {
	if w.pollMax > 0 {
		return w.pollMax
	}
	return w.p.e.cfg.BatchSize
}

// epochPace returns the records per poll after an epoch that took took
// with polls of size records: a quarter of them after an epoch that took
// the transaction timeout or more (the broker aborted it), half after
// one over half of it, twice as many (up to batch) after one within a
// quarter of it. An epoch processes every record of each poll it makes, so a
// poll's records bound its length past the checkpoint interval; one
// whose records make much output (a join's partners, a fan-out of
// thousands of rows each) could run past the transaction timeout, be
// aborted by the broker, and be tried again with the same records for
// ever. Smaller polls let it commit in steps.
func epochPace(size, batch int, took, txnTimeout time.Duration) int {
	switch {
	case took >= txnTimeout:
		return max(size/4, 1)
	case took > txnTimeout/2:
		return max(size/2, 1)
	case took <= txnTimeout/4:
		return min(size*2, batch)
	}
	return size
}

// epochFull says the current epoch has read enough to commit early: a
// stateless stage commits every Config.StatelessEpochRows records (a
// commit writes no state, so it costs only the transaction).

func (w *worker) epochFull() bool {
	return !w.stateful && w.ep.consumed >= int64(w.p.e.cfg.StatelessEpochRows)
}

// processPartition decodes a fetch's records, tracks event time and
// watermarks, and runs the rows through the partition's chain.
func (w *worker) processPartition(fp kgo.FetchTopicPartition) error {
	pt, err := w.partition(partKey{fp.Topic, fp.Partition})
	if err != nil {
		return err
	}
	ep := w.ep
	codec := w.in[fp.Topic]
	meta := w.inMeta[fp.Topic]
	upsert := w.inUpsert[fp.Topic]
	width := codec.Width()
	if meta {
		width += plan.MetaWidth
	}
	b := &operators.Batch{Rows: make([]types.Row, 0, len(fp.Records)), Source: make([]any, 0, len(fp.Records))}
	flat := make([]types.Value, len(fp.Records)*width)
	n := 0
	wmSpec := w.stage.def.Watermark
	seed := false
	if w.fromCtl && len(fp.Records) > 0 {
		pt.received(w.p.e.cfg.IdleTimeout)
	}
	for _, r := range fp.Records {
		pt.nextOffset = r.Offset + 1
		if r.Attrs.IsControl() {
			continue
		}
		pt.heard = true
		if w.fromCtl {
			pt.logTime(r.Timestamp.UnixMicro())
		}
		if isControl(r) {
			pt.sourceWatermark(string(r.Headers[0].Value), r.Timestamp.UnixMicro(), hasHeader(r, wmDerivedHeader), hasHeader(r, wmBehindHeader))
			continue
		}
		if isSeed(r) {
			seed = true
			continue
		}
		ep.consumed++
		row := types.Row(flat[n*width : (n+1)*width : (n+1)*width])
		if upsert && r.Value == nil {
			for j := range codec.Width() {
				row[j] = types.NullValue
			}
		} else if err := codec.Decode(r.Value, row[:codec.Width()]); err != nil {
			w.poison(r, "decode", err)
			continue
		}
		if meta {
			fillMeta(row, r.Key, r.Partition, r.Offset, r.Timestamp.UnixMicro())
		}
		if upsert {
			// a view's table: the key is bytes, and no value deletes it
			row[codec.Width()] = types.Value{K: types.Bytea, S: string(r.Key)}
			if b.Ops == nil {
				b.Ops = make([]operators.Op, 0, len(fp.Records))
			}
			op := operators.OpInsert
			if r.Value == nil {
				op = operators.OpDelete
			}
			b.Ops = append(b.Ops, op)
		}
		if wmSpec != nil {
			if t := row[wmSpec.Col]; !t.IsNull() && t.I > pt.maxEvent {
				pt.maxEvent = t.I
			}
		}
		n++
		b.Rows = append(b.Rows, row)
		b.Source = append(b.Source, r)
	}
	if len(b.Rows) > 0 {
		before := pt.filteredCount()
		if err := pt.chain.Push(b); err != nil {
			return err
		}
		ep.filtered += pt.filteredCount() - before
	}
	if seed {
		if err := pt.seed(); err != nil {
			return err
		}
	}
	pt.fetched(fp)
	if err := pt.advance(w); err != nil {
		return err
	}
	if pt.sinceSent += n; pt.sinceSent >= w.p.e.cfg.WatermarkEveryRows {
		pt.sendWatermark(w, false)
	}
	return nil
}

// poison reports a row that cannot be processed to the errors stream,
// inside the epoch's transaction, and counts it as dropped (or late).
// The report keeps the first MiB of the record (poisonReport); one the
// broker refused before is sent again without the payload.
func (w *worker) poison(r *kgo.Record, stage string, cause error) {
	if errors.Is(cause, operators.ErrLate) {
		w.ep.late++
	} else {
		w.ep.dropped++
	}
	topic := w.p.e.topic(w.p.errors.Topic)
	val := w.poisonReport(r, stage, cause.Error(), true)
	if why, ok := w.refused.match(w.ep, topic, nil, val); ok {
		val = w.poisonReport(r, stage, cause.Error()+" (report refused with its payload: "+why+")", false)
	}
	w.produce(&kgo.Record{Topic: topic, Value: val})
}

// emit writes output rows: to the output stream, and for a view's
// changelog also to its table topic (tombstones for deletes).
func (w *worker) emit(b *operators.Batch) error {
	out := w.stage.output
	topic := w.p.e.topic(out.Topic)
	ch := w.stage.def.Changes
	// One buffer for the batch's payloads and keys; each record's Key and
	// Value are slices of it (franz-go does not modify them).
	var buf []byte
	next := func(need int) {
		if cap(buf)-len(buf) < need {
			buf = make([]byte, 0, max(64<<10, 2*need))
		}
	}
	cut := func(start int) []byte { return buf[start:len(buf):len(buf)] }
	for i, row := range b.Rows {
		if ch == nil {
			next(256)
			rowStart := len(buf)
			var key []byte
			if w.encodedKey {
				// A repartition topic is keyed by the key encoding, so
				// that rows SQL groups together (1.0 and 1.00) land on
				// one partition; their texts would hash apart.
				start := len(buf)
				buf = TableKey(buf, row, out.Key, out.Types)
				key = cut(start)
			} else {
				key = types.RecordKey(row, out.Key)
			}
			start := len(buf)
			buf = w.out.Append(buf, row)
			val := cut(start)
			if why, bad := w.unwritable(topic, key, val); bad {
				w.dropOutput(b, i, why)
				buf = buf[:rowStart] // nothing refers to the row's bytes
				continue
			}
			w.ep.emitted++
			w.produce(&kgo.Record{Topic: topic, Key: key, Value: val})
			continue
		}
		op := operators.OpInsert
		if b.Ops != nil {
			op = b.Ops[i]
		}
		if ch.Sign != 0 && row[ch.Sign].I < 0 {
			op = operators.OpDelete
		}
		// The changes stream: the op column, then the row.
		w.full = append(append(w.full[:0], types.NewText(op.String())), row...)
		next(512)
		rowStart := len(buf)
		chKey := types.RecordKey(row, ch.Key)
		buf = w.out.Append(buf, w.full)
		chVal := cut(rowStart)
		if op == operators.OpUpdateBefore {
			// the old row of the update that follows: the changes stream
			// only (the table gets the update)
			if why, bad := w.unwritable(topic, chKey, chVal); bad {
				w.dropOutput(b, i, why)
				buf = buf[:rowStart]
				continue
			}
			w.produce(&kgo.Record{Topic: topic, Key: chKey, Value: chVal})
			continue
		}
		// The table topic: the row under its key, or a tombstone.
		table := w.p.e.topic(ch.Table)
		start := len(buf)
		buf = TableKey(buf, row, ch.Key, w.viewTypes)
		key := cut(start)
		var val []byte
		if op != operators.OpDelete {
			start = len(buf)
			buf = w.view.Append(buf, row)
			val = cut(start)
		}
		// Both records or neither: the changes and the table agree.
		why, bad := w.unwritable(topic, chKey, chVal)
		if !bad {
			why, bad = w.unwritable(table, key, val)
		}
		if bad {
			w.dropOutput(b, i, why)
			buf = buf[:rowStart]
			continue
		}
		w.ep.emitted++
		w.produce(&kgo.Record{Topic: topic, Key: chKey, Value: chVal})
		w.produce(&kgo.Record{Topic: table, Key: key, Value: val})
	}
	clear(w.full)
	return nil
}

// clientCloseTimeout bounds how long a worker waits for its Kafka client
// to close when it stops.
const clientCloseTimeout = 10 * time.Second

// closeBounded closes a worker's Kafka client, waiting at most
// clientCloseTimeout. Closing leaves the consumer group, and franz-go
// waits for the leave without bound: a leave stuck behind a rebalance
// (seen with the embedded broker while a DROP stopped a pipeline) held
// the pipeline's stop, and the server's shutdown, forever. The client
// left behind finishes or dies with the process; its transactional id
// is fenced by the next incarnation, so it cannot commit.
func (w *worker) closeBounded(closeClient func()) {
	done := make(chan struct{})
	go func() {
		closeClient()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(clientCloseTimeout):
		w.p.e.cfg.Logger.Warn("pipeline consumer's Kafka client did not close in time; left to close in the background",
			"pipeline", w.p.name, "stage", w.stage.def.Name, "consumer", w.index, "waited", clientCloseTimeout)
	}
}

// commitEpoch publishes a committed epoch's counters.
func (w *worker) commitEpoch(ep *epoch) {
	p := w.p
	if w.stage.first {
		p.consumed.Add(ep.consumed)
	}
	if w.stage.last {
		p.emitted.Add(ep.emitted)
		wm := int64(math.MinInt64)
		for _, pt := range w.parts {
			if pt.wm > math.MinInt64 && (wm == math.MinInt64 || pt.wm < wm) {
				wm = pt.wm
			}
		}
		p.setWatermark(w.id, wm)
	}
	p.filtered.Add(ep.filtered)
	p.dropped.Add(ep.dropped)
	p.late.Add(ep.late)
	if ep.consumed > 0 {
		p.epochs.Add(1)
		p.lastCheckpoint.Store(time.Now().UnixMicro())
	}
}

// printable renders a payload as valid UTF-8 text, cut at 4 KiB. NUL
// bytes become U+FFFD too: a text value cannot hold one (the errors
// stream's reader refuses \u0000 with 22021 and would skip the report),
// and the binary rows of internal topics (a late row behind a
// repartition) are full of them. The payload column keeps the bytes.
func printable(b []byte) string {
	const limit = 4 << 10
	cut := len(b) > limit
	if cut {
		b = b[:limit]
	}
	s := strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "\uFFFD")
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	if cut {
		s += "…"
	}
	return s
}
