package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/state"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config holds the STREAM_* settings and the Kafka connection.
type Config struct {
	Brokers     []string
	TopicPrefix string
	// NodeID distinguishes this process's transactional producers from
	// those of other processes sharing the pipelines; it must be stable
	// across restarts of the same process so a restart fences its own
	// unfinished transactions at once.
	NodeID string

	Consumers          int           // STREAM_CONSUMERS: consumer goroutines per stage
	BatchSize          int           // STREAM_BATCH_SIZE: records per poll
	CheckpointInterval time.Duration // STREAM_CHECKPOINT_INTERVAL: epoch length
	ExactlyOnce        bool          // STREAM_EXACTLY_ONCE
	OffsetReset        string        // STREAM_OFFSET_RESET: earliest or latest
	IdleTimeout        time.Duration // STREAM_IDLE_TIMEOUT: idle partitions stop holding watermarks
	// FlushGiveUp (STREAM_FLUSH_GIVE_UP) is how long a pipeline may have
	// been retrying before FLUSH stops waiting for it and reports it
	// instead. Default 60 s: longer than a broker restart or a failover
	// takes to heal, so a FLUSH right after one still waits; a pipeline
	// whose error can never pass (see hopeless) is reported at once.
	FlushGiveUp time.Duration
	Logger      *slog.Logger
	// Store holds operator state (a cache of the checkpoints in Kafka).
	Store *state.Store
	// EmbeddedBroker says the brokers are kfake hosted by this process.
	// A killed process's broker reloads its log and aborts the
	// transactions that were open, but writes no abort markers: a
	// read_committed reader then skips the producer's later records in
	// the same fetch and never sees the end of a partition whose tail
	// was aborted. So there each worker, once its producer is
	// initialised, writes abort markers for its producer id on every
	// partition it writes (a marker closes the aborted range).
	EmbeddedBroker bool
	// ViewLookup reads this process's copy of a materialized view by key,
	// for stream-table joins.
	ViewLookup operators.ViewLookup
	// Funcs resolves the user functions steps call (expr.Env.Funcs); a
	// replaced function takes effect in each worker at its next epoch.
	Funcs expr.UserFuncs
	// KafkaOpts are franz-go options every client the engine makes gets
	// besides the brokers: the SASL credentials of a cluster that
	// requires them (backends/kafka.SASL.Opts).
	KafkaOpts []kgo.Opt
	// GroupCacheBytes bounds the encoded state an unwindowed GROUP BY
	// keeps in memory per partition (--group-cache-mb; 0: the default,
	// operators.DefaultGroupCacheBytes), and the rows a view's hash join
	// keeps in memory per partition (join.rowCache). Past it, half the groups are
	// evicted and read back from Pebble (the state cache, the server's
	// --state-cache-mb) when they come again: raise it when a view's
	// groups per partition times ~45 bytes exceeds it and its rate
	// matters more than the process's memory.
	GroupCacheBytes int

	// The engine's internal knobs. They are not server flags; a zero
	// value takes the default (DefaultConfig). Each says its default,
	// what it interacts with, and when a change is worth it.

	// SiblingWait bounds how long a stage's starting worker holds its
	// first epoch until every local worker of the stage owns partitions.
	// Default 1 s. The first member of a new group gets every partition
	// and loses some at each later join, aborting its open epoch; longer
	// waits cost start-up latency, shorter ones wasted work on start.
	SiblingWait time.Duration
	// StatelessEpochRows ends a stateless stage's epoch early once it has
	// read this many records. Default 50,000. Catching up, a repartition
	// stage would otherwise hand the next stage minutes of event time per
	// checkpoint interval in one jump, holding its windows open (and in
	// state) that long. Lower it when downstream windows are small and
	// state-heavy; each early epoch costs one transaction.
	StatelessEpochRows int
	// WatermarkEveryRows is how many rows a repartitioning stage's
	// partition reads between the watermark records it sends downstream,
	// besides the one at each checkpoint. Default 2,000. Fewer rows: the
	// next stage's windows close sooner while catching up, at the cost of
	// one control record per downstream partition each time.
	WatermarkEveryRows int
	// RecordInterval is how often a pipeline refreshes its live record
	// (SHOW PIPELINES) and asks the Host whether it should still run.
	// Default 2 s; a dropped pipeline stops within it on other processes.
	RecordInterval time.Duration
	// HangingSweep is how often a pipeline looks for hanging transactions
	// on its topics (engine/hanging.go). Default 15 s; a transaction is
	// taken for hanging after max(1 min, 6 transaction timeouts), and the
	// transaction timeout is max(10 s, 3 checkpoint intervals).
	HangingSweep time.Duration
	// GroupHeartbeat is the consumers' heartbeat interval (franz-go's
	// HeartbeatInterval). Default 1 s: a member learns of a rebalance
	// from its heartbeat, so a stage's second worker joins that much
	// after the first. It must stay well below GroupSessionTimeout.
	GroupHeartbeat time.Duration
	// GroupSessionTimeout is how long the group coordinator waits for a
	// silent member before it moves its partitions (franz-go's
	// SessionTimeout). Default 10 s: failover after a kill -9 takes about
	// this long. The broker bounds it (group.min.session.timeout.ms).
	GroupSessionTimeout time.Duration
}

// MaxMessageBytes is the max.message.bytes of the topics fvsql creates
// and the producers' batch limit. A pipeline produces no record larger
// (recordLimit: an output row that would be is a poison row), and a
// poison-row report keeps at most the first MiB of the offending record
// (a ~1.4 MB report), so no record stalls a pipeline (oversize.go).
const MaxMessageBytes = 16 << 20

// DefaultConfig returns the default settings.
func DefaultConfig() Config {
	return Config{
		Consumers: 2, BatchSize: 10000, CheckpointInterval: time.Second, ExactlyOnce: true,
		OffsetReset: "earliest", IdleTimeout: 10 * time.Second, FlushGiveUp: time.Minute,
		SiblingWait: time.Second, StatelessEpochRows: 50_000, WatermarkEveryRows: 2000,
		RecordInterval: 2 * time.Second, HangingSweep: 15 * time.Second,
		GroupHeartbeat: time.Second, GroupSessionTimeout: 10 * time.Second,
	}
}

// withDefaults fills the internal knobs left zero.
func (c *Config) withDefaults() {
	d := DefaultConfig()
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&c.FlushGiveUp, d.FlushGiveUp}, {&c.SiblingWait, d.SiblingWait}, {&c.RecordInterval, d.RecordInterval}, {&c.HangingSweep, d.HangingSweep},
		{&c.GroupHeartbeat, d.GroupHeartbeat}, {&c.GroupSessionTimeout, d.GroupSessionTimeout}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.StatelessEpochRows == 0 {
		c.StatelessEpochRows = d.StatelessEpochRows
	}
	if c.WatermarkEveryRows == 0 {
		c.WatermarkEveryRows = d.WatermarkEveryRows
	}
}

// Validate fills the defaults of the internal knobs and rejects settings
// that cannot work.
func (c *Config) Validate() error {
	c.withDefaults()
	switch {
	case len(c.Brokers) == 0:
		return errors.New("engine: no Kafka brokers")
	case c.GroupCacheBytes < 0:
		return fmt.Errorf("engine: --group-cache-mb must not be negative")
	case c.Consumers < 1 || c.Consumers > 256:
		return fmt.Errorf("engine: STREAM_CONSUMERS must be 1..256, not %d", c.Consumers)
	case c.BatchSize < 1:
		return fmt.Errorf("engine: STREAM_BATCH_SIZE must be positive, not %d", c.BatchSize)
	case c.CheckpointInterval < 10*time.Millisecond || c.CheckpointInterval > 10*time.Minute:
		return fmt.Errorf("engine: STREAM_CHECKPOINT_INTERVAL must be 10ms..10m, not %s", c.CheckpointInterval)
	case c.OffsetReset != "earliest" && c.OffsetReset != "latest":
		return fmt.Errorf("engine: STREAM_OFFSET_RESET must be earliest or latest, not %q", c.OffsetReset)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("engine: STREAM_IDLE_TIMEOUT must be positive")
	case c.FlushGiveUp < 0:
		return errors.New("engine: STREAM_FLUSH_GIVE_UP must not be negative")
	case c.SiblingWait < 0 || c.RecordInterval < 0 || c.HangingSweep < 0 || c.StatelessEpochRows < 0 || c.WatermarkEveryRows < 0:
		return errors.New("engine: internal knobs must not be negative")
	case c.GroupHeartbeat < 0 || c.GroupSessionTimeout < 3*c.GroupHeartbeat:
		return fmt.Errorf("engine: the group session timeout (%s) must be at least 3 heartbeats (%s)", c.GroupSessionTimeout, c.GroupHeartbeat)
	case c.NodeID == "":
		return errors.New("engine: NodeID is required")
	case c.Store == nil:
		return errors.New("engine: a state store is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Engine runs the continuous pipelines of one process.
type Engine struct {
	cfg   Config
	host  Host
	admin *kadm.Client
	cl    *kgo.Client

	mu        sync.Mutex
	pipelines map[string]*pipeline
	order     []string // start order: a pipeline only reads what existed before it
	// removals are the pipelines a heartbeat found dropped, being
	// stopped off their heartbeat's goroutine; Close waits for them.
	removals sync.WaitGroup
}

// New makes an engine.
func New(cfg Config, host Host) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.KafkaOpts...)...)
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, host: host, cl: cl, admin: kadm.NewClient(cl), pipelines: map[string]*pipeline{}}, nil
}

// Close stops every pipeline gracefully.
func (e *Engine) Close() {
	e.mu.Lock()
	ps := make([]*pipeline, 0, len(e.pipelines))
	for _, p := range e.pipelines {
		ps = append(ps, p)
	}
	e.pipelines = map[string]*pipeline{}
	e.order = nil
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
	e.removals.Wait()
	e.cl.Close()
}

func (e *Engine) topic(name string) string { return e.cfg.TopicPrefix + name }

func (e *Engine) group(pipeline, stage string) string {
	return e.cfg.TopicPrefix + "fvsql." + pipeline + "." + stage
}

// instanceID names a consumer of this process in a stage's group, the
// same on every start of the process: its group instance id (static
// membership) and its transactional id.
func (e *Engine) instanceID(pipeline, stage string, index int) string {
	return e.group(pipeline, stage) + "." + e.cfg.NodeID + "." + strconv.Itoa(index)
}

// leaveGroups takes this process's static members out of a dropped
// pipeline's groups: a static member does not leave when its client
// closes, and a group with members cannot be deleted.
func (e *Engine) leaveGroups(ctx context.Context, pipeline string, stages []string) {
	for _, st := range stages {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = e.group(pipeline, st)
		for i := range max(e.cfg.Consumers, 1) {
			m := kmsg.NewLeaveGroupRequestMember()
			id := e.instanceID(pipeline, st, i)
			m.InstanceID = &id
			req.Members = append(req.Members, m)
		}
		if _, err := req.RequestWith(ctx, e.cl); err != nil {
			e.cfg.Logger.Warn("leaving a dropped pipeline's group failed", "pipeline", pipeline, "group", req.Group, "err", err)
		}
	}
}

// Start starts a pipeline: it fetches and validates the topology, creates
// the pipeline's internal topics, and starts the stages' consumers.
func (e *Engine) Start(ctx context.Context, name string) error {
	topo, err := e.host.Topology(ctx, name)
	if err != nil {
		return err
	}
	if e.host.Heartbeat(ctx, name) == Stop {
		return nil // dropped already: create none of its topics (checked again below)
	}
	// A pipeline of an earlier incarnation still running under the name
	// (its drop was not applied here) stops: the catalog holds this one.
	id := topo.Ident(name)
	e.stopIf(name, func(running string) bool { return running != id })
	if err := topo.Validate(); err != nil {
		return pgerror.WithCode(err, pgerror.InvalidObjectDefinition)
	}
	datasets := map[string]*plan.Stream{}
	for i := range topo.Internal {
		d := topo.Internal[i]
		datasets[d.Name] = &d
		if err := e.createTopic(ctx, d.Topic, d.Partitions); err != nil {
			return err
		}
	}
	resolve := func(n string) (*plan.Stream, error) {
		if d, ok := datasets[n]; ok {
			return d, nil
		}
		d, err := e.host.Stream(ctx, n)
		if err != nil {
			return nil, err
		}
		datasets[n] = d
		return d, nil
	}
	for _, s := range topo.Stages {
		if !stageStateful(&s) {
			continue
		}
		parts := 1
		for _, in := range s.Inputs {
			d, err := resolve(in)
			if err != nil {
				return err
			}
			parts = max(parts, d.Partitions)
		}
		if err := e.createStateTopic(ctx, stateTopic(id, s.Name), parts); err != nil {
			return err
		}
	}
	var stages []*stageRun
	for i := range topo.Stages {
		s := &topo.Stages[i]
		sr := &stageRun{def: s, first: true, last: i == len(topo.Stages)-1}
		for _, in := range s.Inputs {
			d, err := resolve(in)
			if err != nil {
				return err
			}
			sr.inputs = append(sr.inputs, d)
		}
		if sr.output, err = resolve(s.Output); err != nil {
			return err
		}
		stages = append(stages, sr)
	}
	// fed: the stages that read another stage's output
	fed := map[*stageRun]bool{}
	for _, sr := range stages {
		for _, up := range stages {
			if up != sr && slices.ContainsFunc(sr.inputs, func(d *plan.Stream) bool { return d.Name == up.def.Output }) {
				fed[sr] = true
			}
		}
	}
	for _, sr := range stages {
		for _, up := range stages {
			if up == sr {
				continue
			}
			if up.def.Changes != nil && slices.ContainsFunc(sr.inputs, func(d *plan.Stream) bool { return d.Topic == up.def.Changes.Table }) {
				// reads the table of a hidden view (a subquery's) that up
				// writes: its records carry no watermarks
				sr.first = false
			}
			if !slices.ContainsFunc(sr.inputs, func(d *plan.Stream) bool { return d.Name == up.def.Output }) {
				continue
			}
			sr.first = false // reads another stage's output, not the pipeline's input
			parts := 0
			for _, d := range up.inputs {
				parts = max(parts, d.Partitions)
			}
			sr.sources += parts
			if spec := up.def.Watermark; fed[up] && up.def.Changes == nil && (spec == nil || spec.Upstream) {
				// its watermark comes from upstream: each of its
				// partitions reports, in time (sourceWM.derived)
				if sr.derived == nil {
					sr.derived = map[int32]bool{}
				}
				for p := range int32(parts) {
					sr.derived[up.def.SourceBase+p] = true
				}
			}
		}
	}
	errs, err := resolve(topo.Errors)
	if err != nil {
		return err
	}
	if e.cfg.OffsetReset == "latest" || topo.StartTime != 0 {
		e.pinStart(ctx, id, stages, topo)
	}
	if err := e.seed(ctx, stages, topo); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.pipelines[name]; ok {
		return nil
	}
	// A catalog follow-up may start a pipeline that DROP has taken out of
	// the catalog and stopped meanwhile: it must not come back and read
	// topics that are being deleted. DROP takes the relation out of the
	// catalog before it stops the pipeline, so this check, under e.mu
	// with the insertion, leaves the pipeline to Stop or does not start it.
	if e.host.Heartbeat(ctx, name) == Stop {
		e.cfg.Logger.Info("pipeline not started: it was dropped", "pipeline", name)
		return nil
	}
	p := newPipeline(e, name, topo, stages, errs)
	e.pipelines[name] = p
	e.order = append(e.order, name)
	p.start()
	e.cfg.Logger.Info("pipeline started", "pipeline", name, "stages", len(stages), "exactly_once", e.cfg.ExactlyOnce)
	return nil
}

// pinStart gives each stage group of a new pipeline committed offsets
// where it is to start, when that is not its inputs' beginning: under
// STREAM_OFFSET_RESET=latest its inputs' current read_committed ends, and
// with a start time (Topology.StartTime) each user stream's first offsets
// stamped at or after it. "latest" means "from when the pipeline was
// created", and a group with no committed offsets leaves that point
// unknown to everyone but its consumers: FLUSH, which waits for the
// committed offsets to reach the inputs' ends, would wait until some new
// row made a consumer commit (and a consumer's reset offset cannot say "at
// a time" for one topic and "at the start" for another). A group that
// already has offsets (the pipeline ran before, here or on another
// process) is left alone, and so is one another process's consumers
// joined meanwhile (the broker refuses a commit from outside a non-empty
// group).
func (e *Engine) pinStart(ctx context.Context, name string, stages []*stageRun, topo *plan.Topology) {
	internal := map[string]bool{}
	for _, d := range topo.Internal {
		internal[d.Name] = true
	}
	for _, s := range stages {
		group := e.group(name, s.def.Name)
		committed, err := e.admin.FetchOffsets(ctx, group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			err = nil // a group that never existed has no offsets
		}
		if err != nil || len(committed) > 0 {
			continue
		}
		offsets, err := e.startOffsets(ctx, s, topo.StartTime, internal)
		if err != nil {
			e.cfg.Logger.Warn("pipeline start: could not list where its inputs start", "pipeline", name, "stage", s.def.Name, "err", err)
			continue
		}
		if len(offsets) == 0 {
			continue
		}
		resp, err := e.admin.CommitOffsets(ctx, group, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			e.cfg.Logger.Debug("pipeline start: the group's start was not pinned", "pipeline", name, "stage", s.def.Name, "err", err)
		}
	}
}

// startOffsets lists where a new stage group starts reading its inputs:
// at their ends under STREAM_OFFSET_RESET=latest, and, with a start time
// (µs), a user stream (not internal, not a view's table) at the first
// offset stamped at or after it, or its end when no record is that late.
// Inputs it leaves out start at their beginning.
func (e *Engine) startOffsets(ctx context.Context, s *stageRun, startTime int64, internal map[string]bool) (kadm.Offsets, error) {
	var byTime []string
	for _, d := range s.inputs {
		if startTime != 0 && !internal[d.Name] && !d.Upsert {
			byTime = append(byTime, e.topic(d.Topic))
		}
	}
	latest := e.cfg.OffsetReset == "latest"
	if !latest && len(byTime) == 0 {
		return nil, nil
	}
	ends, err := kafka.ListFresh(ctx, e.cl, e.admin.ListCommittedOffsets, s.inputTopics(e)...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, err
	}
	offsets := kadm.Offsets{}
	if latest {
		ends.Each(func(o kadm.ListedOffset) {
			offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		})
	}
	if len(byTime) > 0 {
		ms := (startTime + 999) / 1000 // Kafka stamps in ms: the first record at or after the µs
		at, err := e.admin.ListOffsetsAfterMilli(ctx, ms, byTime...)
		if err == nil {
			err = at.Error()
		}
		if err != nil {
			return nil, err
		}
		at.Each(func(o kadm.ListedOffset) {
			end, _ := ends.Lookup(o.Topic, o.Partition)
			off := o.Offset
			if off < 0 || off > end.Offset {
				off = end.Offset // no record that late (or one past the stable end): from the end
			}
			offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: off, LeaderEpoch: -1})
		})
	}
	return offsets, nil
}

func stageStateful(s *plan.Stage) bool {
	for _, st := range s.Steps {
		if !st.Stateless() {
			return true
		}
	}
	return false
}

// seed writes a seed marker to the input of each stage that gets one
// (Topology.Seeded: an aggregate without GROUP BY over a one-partition
// internal topic, as the planner makes it): the stage then emits the aggregate over no rows (count 0) before any
// row comes, and FLUSH waits for it. Each start writes one; a marker the
// state already answers changes nothing. An input that is not internal
// (a topology stored before seeding) gets none, as before.
func (e *Engine) seed(ctx context.Context, stages []*stageRun, topo *plan.Topology) error {
	var recs []*kgo.Record
	for _, sr := range stages {
		if topo.Seeded(sr.def) {
			recs = append(recs, &kgo.Record{Topic: e.topic(sr.inputs[0].Topic), Partition: 0, Headers: []kgo.RecordHeader{{Key: seedHeader}}})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	// A client of its own: a pipeline dropped and created again under its
	// name has internal topics of the same names and new topic IDs, and
	// a client that produced to the old ones keeps their IDs (franz-go
	// fails with UNKNOWN_TOPIC_ID until the topic is purged from it,
	// which would race with another start's seeding).
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...)}, e.cfg.KafkaOpts...)...)
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "starting a pipeline: a client for its seed marker")
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "starting a pipeline: writing its seed marker")
	}
	return nil
}

// createStateTopic makes a stage's compacted checkpoint topic.
func (e *Engine) createStateTopic(ctx context.Context, topic string, partitions int) error {
	compact, maxBytes := "compact", strconv.Itoa(MaxMessageBytes)
	if err := kafka.CreateTopic(ctx, e.cl, e.topic(topic), int32(partitions), map[string]*string{"cleanup.policy": &compact, "max.message.bytes": &maxBytes}); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "engine: create state topic %s", e.topic(topic))
	}
	return nil
}

// createTopic makes an internal topic. Its name is not the incarnation's
// (a view dropped and created again uses it again), so it must be the new
// topic to every consumer started after it: kafka.CreateTopic waits for
// its id.
func (e *Engine) createTopic(ctx context.Context, topic string, partitions int) error {
	maxBytes := strconv.Itoa(MaxMessageBytes)
	if err := kafka.CreateTopic(ctx, e.cl, e.topic(topic), int32(max(partitions, 1)), map[string]*string{"max.message.bytes": &maxBytes}); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "engine: create topic %s", e.topic(topic))
	}
	return nil
}

// Running reports whether the pipeline runs on this node.
func (e *Engine) Running(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.pipelines[name]
	return ok
}

// Stop stops a pipeline on this node in order: each consumer commits its
// current epoch and leaves the group.
func (e *Engine) Stop(name string) { e.stopIf(name, func(string) bool { return true }) }

// stopIf stops the pipeline running under name if its Ident passes
// match (Start stops one of an earlier incarnation, Forget only its own).
func (e *Engine) stopIf(name string, match func(id string) bool) {
	e.mu.Lock()
	p := e.pipelines[name]
	e.mu.Unlock()
	if p != nil && match(p.id) {
		e.remove(p)
	}
}

// remove takes p out of the running pipelines (unless a new pipeline of
// the same name has replaced it) and stops it.
func (e *Engine) remove(p *pipeline) {
	e.mu.Lock()
	if e.pipelines[p.name] == p {
		delete(e.pipelines, p.name)
		e.order = slices.DeleteFunc(e.order, func(n string) bool { return n == p.name })
	}
	e.mu.Unlock()
	p.stop()
}

// Drop stops a pipeline and deletes its consumer groups and internal topics.
func (e *Engine) Drop(ctx context.Context, name string, topo *plan.Topology) error {
	e.Stop(name)
	id := topo.Ident(name)
	var groups, stages []string
	for _, s := range topo.Stages {
		groups = append(groups, e.group(id, s.Name))
		stages = append(stages, s.Name)
	}
	e.leaveGroups(ctx, id, stages)
	if len(topo.Sinks) > 0 {
		groups = append(groups, e.group(id, "sink"))
	}
	if _, err := e.admin.DeleteGroups(ctx, groups...); err != nil {
		e.cfg.Logger.Warn("deleting consumer groups failed", "pipeline", name, "err", err)
	}
	var topics []string
	for _, d := range topo.Internal {
		topics = append(topics, e.topic(d.Topic))
	}
	for _, s := range topo.Stages {
		if stageStateful(&s) {
			topics = append(topics, e.topic(stateTopic(id, s.Name)))
		}
	}
	if len(topics) > 0 {
		if err := kafka.DeleteTopics(ctx, e.cl, topics...); err != nil {
			e.cfg.Logger.Warn("deleting internal topics failed", "pipeline", name, "err", err)
		}
	}
	return e.cfg.Store.DeletePrefix(state.PipelinePrefix(id))
}

// Forget stops a pipeline another process dropped and deletes this
// process's local state of it; the dropping process deleted its groups
// and topics. A topology without an incarnation keeps its local state:
// a pipeline created again under its name would have the same state
// keys, and its own restore voids state without a commit behind it.
func (e *Engine) Forget(name string, topo *plan.Topology) error {
	id := topo.Ident(name)
	e.stopIf(name, func(running string) bool { return running == id })
	if topo.Incarnation == "" {
		return nil
	}
	return e.cfg.Store.DeletePrefix(state.PipelinePrefix(id))
}

// Records returns the live record of every pipeline on this node.
func (e *Engine) Records() []Record {
	e.mu.Lock()
	ps := make([]*pipeline, 0, len(e.pipelines))
	for _, n := range e.order {
		ps = append(ps, e.pipelines[n])
	}
	e.mu.Unlock()
	out := make([]Record, len(ps))
	for i, p := range ps {
		out[i] = p.record()
	}
	return out
}

// Lag returns, per pipeline on this node, the number of input records of
// its first stage not yet committed.
func (e *Engine) Lag(ctx context.Context) map[string]int64 {
	e.mu.Lock()
	ps := make([]*pipeline, 0, len(e.pipelines))
	for _, p := range e.pipelines {
		ps = append(ps, p)
	}
	e.mu.Unlock()
	out := map[string]int64{}
	for _, p := range ps {
		var total int64
		for _, s := range p.stages {
			lag, err := e.stageLag(ctx, p.id, s)
			if err != nil {
				total = -1
				break
			}
			total += lag
		}
		out[p.name] = total
	}
	return out
}

func (e *Engine) stageLag(ctx context.Context, pipeline string, s *stageRun) (int64, error) {
	ends, err := kafka.ListFresh(ctx, e.cl, e.admin.ListCommittedOffsets, s.inputTopics(e)...)
	if err != nil {
		return 0, err
	}
	starts, err := kafka.ListFresh(ctx, e.cl, e.admin.ListStartOffsets, s.inputTopics(e)...)
	if err != nil {
		return 0, err
	}
	committed, err := e.admin.FetchOffsets(ctx, e.group(pipeline, s.def.Name))
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return 0, err
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		pos := int64(0)
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok {
			pos = st.Offset
		}
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.At > pos {
			pos = c.At
		}
		if o.Offset > pos {
			lag += o.Offset - pos
		}
	})
	return lag, nil
}

// Flush returns once every pipeline has processed (and committed)
// everything present in its inputs when Flush began. Stages are flushed
// in order, each after the ones feeding it, and pipelines in start order,
// so a pipeline reading another's output sees all of it.
//
// A pipeline that cannot make progress (see pipeline.stuck) does not hold
// FLUSH for the others: FLUSH goes on without it and returns one warning
// per such pipeline, naming it and its error.
func (e *Engine) Flush(ctx context.Context) (warnings []string, err error) {
	start := time.Now()
	e.mu.Lock()
	ps := make([]*pipeline, 0, len(e.order))
	for _, n := range e.order {
		ps = append(ps, e.pipelines[n])
	}
	e.mu.Unlock()
	for _, p := range ps {
		if e.host.Heartbeat(ctx, p.name) == Stop {
			continue // dropped: its topics may be gone, and it stops at its next heartbeat
		}
		err := e.flushPipeline(ctx, p, start)
		var st *stuckError
		if errors.As(err, &st) {
			warnings = append(warnings, st.Error())
			continue
		}
		if err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

// stuckError says FLUSH gave up on a pipeline that cannot make progress.
type stuckError struct{ pipeline, status, err string }

func (s *stuckError) Error() string {
	return fmt.Sprintf("FLUSH did not wait for pipeline %q: it is %s: %s", s.pipeline, s.status, s.err)
}

// flushPipeline flushes p's stages; one acting on the wall clock also
// ticks after start (flushTicks).
func (e *Engine) flushPipeline(ctx context.Context, p *pipeline, start time.Time) error {
	if err := p.waitIngest(ctx); err != nil {
		return err
	}
	for _, s := range p.stages {
		if err := e.flushStage(ctx, p, s); err != nil {
			return err
		}
		if err := e.flushTicks(ctx, p, s, start); err != nil {
			return err
		}
		// what the stage wrote is readable when FLUSH returns
		if _, err := e.flushTargets(ctx, append(p.queryWrites(s), e.topic(p.errors.Topic))); err != nil {
			return err
		}
	}
	for _, b := range p.topo.Sinks {
		topic := e.topic(p.internalTopic(b.Internal))
		if err := e.waitGroup(ctx, p, "sink", []string{topic}); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) flushStage(ctx context.Context, p *pipeline, s *stageRun) error {
	return e.waitGroup(ctx, p, s.def.Name, s.inputTopics(e))
}

// flushTicks waits, for a stage acting on the wall clock (a temporal
// filter), until each of its input partitions has had a tick at or after
// start commit, so that the rows whose time ended before FLUSH began have
// left the view. A partition this process does not tick (another one
// owns it) is given up on after flushTickWait; that one's owner ticks
// every checkpoint interval too, unless it is stuck.
func (e *Engine) flushTicks(ctx context.Context, p *pipeline, s *stageRun, start time.Time) error {
	if !s.def.Ticks() {
		return nil
	}
	var want []partKey
	for _, d := range s.inputs {
		topic := e.topic(d.Topic)
		for part := 0; part < d.Partitions; part++ {
			want = append(want, partKey{topic, int32(part)})
		}
	}
	// (measured from here: the stages flushed before may have taken long)
	giveUp := time.Now().Add(max(flushTickWait, 3*e.cfg.CheckpointInterval))
	for !s.ticks.since(want, start) && time.Now().Before(giveUp) {
		if msg, stuck := p.stuck(); stuck {
			return &stuckError{pipeline: p.name, status: p.record().Status, err: msg}
		}
		select {
		case <-ctx.Done():
			return pgerror.New(pgerror.QueryCanceled, "FLUSH: pipeline %q (%s) did not tick the clock: %s", p.name, s.def.Name, p.record().Status)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// flushTickWait bounds FLUSH's wait for a tick of a partition that may
// be another process's (flushTicks).
const flushTickWait = 10 * time.Second

// waitGroup waits until a pipeline group's committed offsets reach the
// read_committed end the topics have now.
func (e *Engine) waitGroup(ctx context.Context, p *pipeline, stage string, topics []string) error {
	want, err := e.flushTargets(ctx, topics)
	if err != nil {
		return err
	}
	group := e.group(p.id, stage)
	wait := 10 * time.Millisecond
	for {
		committed, err := e.admin.FetchOffsets(ctx, group)
		if err == nil {
			done := true
			for t, parts := range want {
				for part, end := range parts {
					if c, ok := committed.Lookup(t, part); !ok || c.At < end {
						done = false
					}
				}
			}
			if done {
				return nil
			}
		}
		if msg, ok := p.stuck(); ok {
			return &stuckError{pipeline: p.name, status: p.record().Status, err: msg}
		}
		select {
		case <-ctx.Done():
			return pgerror.New(pgerror.QueryCanceled, "FLUSH: pipeline %q (%s) did not catch up: %s", p.name, stage, p.record().Status)
		case <-time.After(wait):
		}
		wait = min(wait*2, 200*time.Millisecond)
	}
}

// flushTargets returns, per non-empty partition of the topics, the offset
// a reader must reach to have read everything committed there before
// the call: the last stable offset, once every transaction open at the
// call has ended.
//
// Until then the last stable offset stops at the first record of the
// oldest open transaction, and records committed after it are not
// readable yet, so taking it at once would end FLUSH short. Transactions
// open at the call end in three ways, each bounded:
//   - a live stage's epoch commits within a checkpoint interval;
//   - an epoch whose offsets commit is already visible in its group has
//     its markers on the output partitions a moment later (Apache Kafka
//     writes them after answering EndTxn);
//   - a killed process's epoch is aborted by the coordinator once it
//     times out (txnTimeout, then the coordinator's 10 s sweep); a
//     process restarted on a wiped data directory has a new
//     transactional id and does not fence it sooner.
//
// A transaction still open after resolveWait (an outside producer's, or
// a hanging one the pipeline aborts later) is left behind with a warning.
// A partition whose offsets could not be listed is asked again, never
// taken for empty.
func (e *Engine) flushTargets(ctx context.Context, topics []string) (map[string]map[int32]int64, error) {
	deadline := time.Now().Add(e.resolveWait())
	wait := 5 * time.Millisecond
	var begun map[string]map[int32]int64 // high watermarks at the first listing
	for {
		ends, err := kafka.ListFresh(ctx, e.cl, e.admin.ListCommittedOffsets, topics...)
		if err != nil {
			return nil, pgerror.Wrap(err, pgerror.IOError, "FLUSH")
		}
		highs, err := kafka.ListFresh(ctx, e.cl, e.admin.ListEndOffsets, topics...)
		if err != nil {
			return nil, pgerror.Wrap(err, pgerror.IOError, "FLUSH")
		}
		starts, err := kafka.ListFresh(ctx, e.cl, e.admin.ListStartOffsets, topics...)
		if err != nil {
			return nil, pgerror.Wrap(err, pgerror.IOError, "FLUSH")
		}
		var failed error
		want := map[string]map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) {
			st, sok := starts.Lookup(o.Topic, o.Partition)
			hw, hok := highs.Lookup(o.Topic, o.Partition)
			for _, x := range []kadm.ListedOffset{o, st, hw} {
				if x.Err != nil && failed == nil {
					failed = fmt.Errorf("%s[%d]: %w", x.Topic, x.Partition, x.Err)
				}
			}
			if !sok || !hok {
				failed = fmt.Errorf("%s[%d]: offsets not listed", o.Topic, o.Partition)
			}
			if st.Offset >= o.Offset {
				return // empty partition
			}
			if want[o.Topic] == nil {
				want[o.Topic] = map[int32]int64{}
			}
			want[o.Topic][o.Partition] = o.Offset
		})
		if failed == nil && begun == nil {
			begun = map[string]map[int32]int64{}
			highs.Each(func(h kadm.ListedOffset) {
				if begun[h.Topic] == nil {
					begun[h.Topic] = map[int32]int64{}
				}
				begun[h.Topic][h.Partition] = h.Offset
			})
		}
		var open []string
		if failed == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Offset < begun[o.Topic][o.Partition] {
					open = append(open, fmt.Sprintf("%s[%d]", o.Topic, o.Partition))
				}
			})
		}
		switch {
		case failed == nil && len(open) == 0:
			return want, nil
		case failed == nil && time.Now().After(deadline):
			e.cfg.Logger.Warn("FLUSH: transactions begun before it are still open; their records are left behind", "partitions", open, "waited", e.resolveWait())
			return want, nil
		case failed != nil && time.Now().After(deadline):
			return nil, pgerror.Wrap(failed, pgerror.IOError, "FLUSH")
		}
		select {
		case <-ctx.Done():
			return nil, pgerror.New(pgerror.QueryCanceled, "FLUSH: canceled while waiting for transactions to end")
		case <-time.After(wait):
		}
		wait = min(wait*2, 100*time.Millisecond)
	}
}

// resolveWait bounds how long FLUSH waits for the transactions open in a
// partition as it begins: a timed-out one is aborted within txnTimeout
// and the coordinator's 10 s sweep.
func (e *Engine) resolveWait() time.Duration {
	return e.txnTimeout() + 15*time.Second
}
