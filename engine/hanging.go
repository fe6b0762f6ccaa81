package engine

import (
	"context"
	"strings"
	"time"

	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
)

// A hanging transaction is one a partition holds open while its
// transaction coordinator no longer does: the partition never gets the
// commit or abort marker, its last stable offset stays where the
// transaction began, and every read_committed reader of the partition
// (the next stage, a view, a user's consumer) waits for ever. A broker
// stopped while a producer registered a partition in a transaction can
// leave one behind (we saw it after a SIGTERM of a real broker). Kafka's
// remedy is an administrator's `kafka-transactions.sh find-hanging` and
// `abort`; the pipeline does the same on its own topics: a transaction
// open in a partition for hangAfter, which its coordinator does not know
// as ongoing in that partition with that producer epoch, is aborted with
// a WriteTxnMarkers request (KIP-664). fvsql's transactions time out
// after 3 checkpoint intervals (at least 10 s) and the coordinator aborts
// timed-out ones within its 10 s sweep, so no live transaction is that old.

// hangAfter is how long a transaction must have been open in a
// partition before it is taken for hanging.
func (e *Engine) hangAfter() time.Duration {
	return max(time.Minute, 6*e.txnTimeout())
}

// txnTimeout is the transaction timeout of the pipelines' producers.
func (e *Engine) txnTimeout() time.Duration {
	return max(10*time.Second, 3*e.cfg.CheckpointInterval)
}

// openTxn is a transaction a partition holds open.
type openTxn struct {
	topic     string
	partition int32
	producer  int64
	epoch     int16
	start     int64 // offset of its first record
}

// topics lists the topics the pipeline reads or writes.
func (p *pipeline) topics() []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, s := range p.stages {
		for _, t := range s.inputTopics(p.e) {
			add(t)
		}
		for _, t := range p.stageWrites(s) {
			add(t)
		}
	}
	return out
}

// stageWrites lists the topics a stage's transactions write besides the
// pipeline's errors stream: what queries read, and its state topic.
func (p *pipeline) stageWrites(s *stageRun) []string {
	out := p.queryWrites(s)
	if stageStateful(s.def) {
		out = append(out, p.e.topic(stateTopic(p.id, s.def.Name)))
	}
	return out
}

// queryWrites lists the topics of a stage's output that queries read: its
// output stream and its view's table topic.
func (p *pipeline) queryWrites(s *stageRun) []string {
	var out []string
	if s.output != nil {
		out = append(out, p.e.topic(s.output.Topic))
	}
	if s.def.Changes != nil {
		out = append(out, p.e.topic(s.def.Changes.Table))
	}
	return out
}

// abortHanging looks for hanging transactions on the pipeline's topics
// every Config.HangingSweep until the pipeline stops.
func (p *pipeline) abortHanging() {
	seen := map[openTxn]time.Time{}
	p.every(p.e.cfg.HangingSweep, func() bool {
		ctx, cancel := context.WithTimeout(p.ctx, p.e.cfg.HangingSweep)
		defer cancel()
		p.checkHanging(ctx, seen)
		return true
	})
}

// checkHanging notes the transactions open in partitions whose last
// stable offset trails their end, and aborts those open for hangAfter
// that their coordinators do not know as ongoing there.
func (p *pipeline) checkHanging(ctx context.Context, seen map[openTxn]time.Time) {
	adm := p.e.admin
	behind := kadm.TopicsSet{}
	if !p.behind(ctx, behind, p.topics()...) {
		return
	}
	// The group offsets a transaction committed wait in the group
	// coordinator for its marker too, and while they wait, a consumer
	// assigned those partitions cannot learn where to start (OffsetFetch
	// answers UNSTABLE_OFFSET_COMMIT): the same hanging transaction
	// stalls the stage's input. The embedded broker has no such topic.
	p.behind(ctx, behind, groupOffsetsTopic)
	now := time.Now()
	open := map[openTxn]int32{} // the coordinator epoch of its last write
	if len(behind) > 0 {
		described, err := adm.DescribeProducers(ctx, behind)
		if err != nil {
			return
		}
		described.EachProducer(func(d kadm.DescribedProducer) {
			if d.CurrentTxnStartOffset < 0 {
				return
			}
			open[openTxn{d.Topic, d.Partition, d.ProducerID, d.ProducerEpoch, d.CurrentTxnStartOffset}] = d.CoordinatorEpoch
		})
	}
	var old []openTxn
	for o := range open {
		first, ok := seen[o]
		if !ok {
			seen[o] = now
		} else if now.Sub(first) >= p.e.hangAfter() {
			old = append(old, o)
		}
	}
	for o := range seen {
		if _, ok := open[o]; !ok {
			delete(seen, o)
		}
	}
	if len(old) == 0 {
		return
	}
	// Producers with a transaction open on the pipeline's own topics are
	// taken for the pipeline's; on the group offsets topic, which every
	// application shares, only those are aborted.
	ours := map[int64]bool{}
	for o := range open {
		if o.topic != groupOffsetsTopic {
			ours[o.producer] = true
		}
	}
	for _, o := range old {
		holds, owner := p.coordinatorHolds(ctx, o)
		if holds || o.topic == groupOffsetsTopic && !ours[o.producer] && !strings.HasPrefix(owner, p.e.group(p.id, "")) {
			continue
		}
		resp, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{
			ProducerID: o.producer, ProducerEpoch: o.epoch, CoordinatorEpoch: open[o],
			Topics: txnPartitions([]openTxn{o}),
		})
		if err == nil {
			resp.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
				if r.Err != nil {
					err = r.Err
				}
			})
		}
		if err != nil {
			p.e.cfg.Logger.Warn("aborting a hanging transaction failed", "pipeline", p.name, "topic", o.topic, "partition", o.partition, "producer_id", o.producer, "err", err)
			continue
		}
		delete(seen, o)
		p.e.cfg.Logger.Warn("aborted a hanging transaction: its coordinator no longer knew it, and read_committed readers of the partition were stuck at its first offset",
			"pipeline", p.name, "topic", o.topic, "partition", o.partition, "producer_id", o.producer, "epoch", o.epoch, "start_offset", o.start)
	}
}

// coordinatorHolds reports whether a transaction coordinator has the
// producer's transaction ongoing in the partition with the same epoch
// (or cannot tell: then the transaction is left alone), and the
// transactional id the producer id belongs to now, if any.
func (p *pipeline) coordinatorHolds(ctx context.Context, o openTxn) (holds bool, owner string) {
	listed, err := p.e.admin.ListTransactions(ctx, []int64{o.producer}, nil)
	if err != nil {
		return true, ""
	}
	var ids []string
	for id, l := range listed {
		if l.ProducerID == o.producer {
			ids = append(ids, id)
			owner = id
		}
	}
	if len(ids) == 0 {
		return false, ""
	}
	described, err := p.e.admin.DescribeTransactions(ctx, ids...)
	if err != nil {
		return true, owner
	}
	for _, d := range described {
		if d.Err != nil {
			return true, owner
		}
		if d.ProducerID != o.producer || d.ProducerEpoch != o.epoch {
			continue
		}
		switch d.State {
		case "Ongoing", "PrepareCommit", "PrepareAbort":
			if _, in := d.Topics[o.topic][o.partition]; in {
				return true, owner
			}
		}
	}
	return false, owner
}

// groupOffsetsTopic is where Kafka keeps groups' committed offsets.
const groupOffsetsTopic = "__consumer_offsets"

// behind adds to set the partitions of topics whose last stable offset
// trails their end; it reports whether the offsets could be listed.
func (p *pipeline) behind(ctx context.Context, set kadm.TopicsSet, topics ...string) bool {
	ends, err := kafka.ListFresh(ctx, p.e.cl, p.e.admin.ListEndOffsets, topics...)
	if err != nil {
		return false
	}
	stable, err := kafka.ListFresh(ctx, p.e.cl, p.e.admin.ListCommittedOffsets, topics...)
	if err != nil {
		return false
	}
	stable.Each(func(o kadm.ListedOffset) {
		if end, ok := ends.Lookup(o.Topic, o.Partition); ok && o.Err == nil && end.Err == nil && o.Offset < end.Offset {
			set.Add(o.Topic, o.Partition)
		}
	})
	return true
}

func txnPartitions(txns []openTxn) kadm.TopicsSet {
	s := kadm.TopicsSet{}
	for _, o := range txns {
		s.Add(o.topic, o.partition)
	}
	return s
}
