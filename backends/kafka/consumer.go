package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumer reads one topic, in a consumer group when one is named
// (acknowledging = committing offsets), else directly from the start or
// end of each partition, or from a time.
type consumer struct {
	s        *Streamer
	stream   string
	topic    string
	group    string
	reset    kgo.Offset // where a partition without a position starts
	cl       *kgo.Client
	follow   bool
	ends     map[int32]int64 // not following: where to stop
	finished map[int32]bool  // not following: partitions read to their end
	minOff   map[int32]int64 // after a Seek past a partition's end: offsets below are not delivered

	// Group membership, kept by franz-go's callbacks (other goroutines).
	mu      sync.Mutex
	owned   map[int32]bool  // partitions assigned to this member now
	joined  bool            // it was assigned partitions once
	pending map[int32]int64 // a seek made before the first assignment: applied to it
}

var (
	_ backends.Consumer = (*consumer)(nil)
	_ backends.Seeker   = (*consumer)(nil)
	_ backends.Lagger   = (*consumer)(nil)
)

// ceilMilli is t in unix milliseconds, Kafka's timestamp precision,
// rounded up: the first record at or after t is the first stamped at or
// after ceilMilli(t).
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// Consumer implements backends.Streamer. A partition without a committed
// offset (every partition, without a group) starts at Start, or at the
// first record stamped at or after StartTime, which replaces Start
// (Kafka's ListOffsets by timestamp: kgo.NewOffset().AfterMilli).
func (s *Streamer) Consumer(ctx context.Context, stream string, o backends.ConsumerOptions) (backends.Consumer, error) {
	topic := s.Topic(stream)
	c := &consumer{
		s: s, stream: stream, topic: topic, group: o.Group, follow: o.Follow,
		reset: kgo.NewOffset().AtStart(), finished: map[int32]bool{}, minOff: map[int32]int64{}, owned: map[int32]bool{},
	}
	switch {
	case !o.StartTime.IsZero():
		c.reset = kgo.NewOffset().AfterMilli(ceilMilli(o.StartTime))
	case o.Start == backends.Latest:
		c.reset = kgo.NewOffset().AtEnd()
	}
	if !o.Follow {
		ends, err := s.admin.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("kafka: %w: %v", backends.ErrNotConnected, err)
		}
		c.ends = map[int32]int64{}
		ends.Each(func(lo kadm.ListedOffset) { c.ends[lo.Partition] = lo.Offset })
		c.markStarts(ctx, o)
	}
	opts := c.opts()
	if o.Group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(c.assigned), kgo.OnPartitionsRevoked(c.revoked), kgo.OnPartitionsLost(c.revoked),
			kgo.AdjustFetchOffsetsFn(c.adjust))
	} else {
		opts = append(opts, kgo.ConsumeTopics(topic))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	c.cl = cl
	return c, nil
}

// opts are the client options of every client of the consumer.
func (c *consumer) opts() []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(c.s.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(c.reset),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, c.s.auth...)
}

// markStarts marks, for a consumer that does not follow, the partitions
// that start at their end (a group's committed offset there, Start:
// Latest, a StartTime after the last record): nothing is read from them,
// so no record would ever say they are finished. What cannot be listed is
// left to the records.
func (c *consumer) markStarts(ctx context.Context, o backends.ConsumerOptions) {
	starts := map[int32]int64{}
	if o.Group != "" {
		committed, err := c.s.admin.FetchOffsets(ctx, o.Group)
		if err != nil {
			return
		}
		committed.Each(func(r kadm.OffsetResponse) {
			if r.Topic == c.topic && r.Err == nil && r.At >= 0 {
				starts[r.Partition] = r.At
			}
		})
	}
	var byTime kadm.ListedOffsets
	if !o.StartTime.IsZero() {
		var err error
		byTime, err = c.s.admin.ListOffsetsAfterMilli(ctx, ceilMilli(o.StartTime), c.topic)
		if err != nil {
			return
		}
	}
	for p, end := range c.ends {
		if _, ok := starts[p]; ok {
			continue
		}
		switch {
		case byTime != nil:
			if lo, ok := byTime.Lookup(c.topic, p); ok && lo.Err == nil && lo.Offset >= 0 {
				starts[p] = lo.Offset // the end when no record is that late
			}
		case o.Start == backends.Latest:
			starts[p] = end
		}
	}
	for p, at := range starts {
		if at >= c.ends[p] {
			c.finished[p] = true
		}
	}
}

// Read implements backends.Consumer.
func (c *consumer) Read(ctx context.Context, max int) ([]backends.Message, error) {
	for {
		if !c.follow && c.atEnd() {
			return nil, backends.ErrEndOfStream
		}
		fs := c.cl.PollRecords(ctx, max)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, fmt.Errorf("kafka: %w: %v", backends.ErrNotConnected, ferr)
		}
		var out []backends.Message
		fs.EachRecord(func(r *kgo.Record) {
			if min, ok := c.minOff[r.Partition]; ok {
				if r.Offset < min {
					return // before where a Seek past the end asked to be
				}
				delete(c.minOff, r.Partition)
			}
			if !c.follow {
				end, ok := c.ends[r.Partition]
				if !ok || r.Offset >= end {
					return // past the end present at open
				}
				if r.Offset+1 >= end {
					c.finished[r.Partition] = true
				}
			}
			out = append(out, backends.Message{
				Stream: c.stream, Shard: r.Partition, Sequence: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Payload: r.Value,
			})
		})
		if len(out) > 0 {
			return out, nil
		}
	}
}

func (c *consumer) atEnd() bool {
	for p, end := range c.ends {
		if end > 0 && !c.finished[p] {
			return false
		}
	}
	return true
}

// Ack implements backends.Consumer: commits, per partition, the offset
// after the last of msgs (exactly these messages, not all read so far).
func (c *consumer) Ack(ctx context.Context, msgs []backends.Message) error {
	if len(msgs) == 0 || c.group == "" {
		return nil
	}
	next := map[int32]kgo.EpochOffset{}
	for _, m := range msgs {
		if o, ok := next[m.Shard]; !ok || m.Sequence+1 > o.Offset {
			next[m.Shard] = kgo.EpochOffset{Epoch: -1, Offset: m.Sequence + 1}
		}
	}
	var commitErr error
	c.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{c.topic: next}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && commitErr == nil {
					commitErr = err
				}
			}
		}
	})
	if commitErr != nil {
		return fmt.Errorf("kafka: %w: commit: %v", backends.ErrNotConnected, commitErr)
	}
	return nil
}

// Close implements backends.Consumer.
func (c *consumer) Close() error {
	c.cl.Close()
	return nil
}

// Seek implements backends.Seeker: every partition the consumer reads
// moves to its first offset >= seq (offsets are per partition, so on a
// topic of several partitions that is a position in each). seq before a
// partition's log start means its start; past its end, the end, and
// records before seq that arrive later are skipped.
func (c *consumer) Seek(ctx context.Context, seq int64) error {
	starts, err := ListFresh(ctx, c.s.client, c.s.admin.ListStartOffsets, c.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s", c.topic)
	}
	ends, err := ListFresh(ctx, c.s.client, c.s.admin.ListEndOffsets, c.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s", c.topic)
	}
	to := map[int32]int64{}
	minOff := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		at := max(seq, 0)
		if st, ok := starts.Lookup(c.topic, e.Partition); ok {
			at = max(at, st.Offset)
		}
		if at > e.Offset {
			at, minOff[e.Partition] = e.Offset, seq
		}
		to[e.Partition] = at
	})
	return c.moveTo(ctx, to, minOff)
}

// SeekTime implements backends.Seeker: every partition the consumer reads
// moves to its first record stamped at or after t (Kafka's ListOffsets by
// timestamp, exact when timestamps do not increase), or to its end when
// there is none.
func (c *consumer) SeekTime(ctx context.Context, t time.Time) error {
	ms := ceilMilli(t)
	listed, err := ListFresh(ctx, c.s.client, func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
		return c.s.admin.ListOffsetsAfterMilli(ctx, ms, topics...)
	}, c.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s by time", c.topic)
	}
	to := map[int32]int64{}
	listed.Each(func(lo kadm.ListedOffset) {
		if lo.Offset >= 0 {
			to[lo.Partition] = lo.Offset
		}
	})
	return c.moveTo(ctx, to, nil)
}

// moveTo moves the consumer's partitions to offsets. Without a group the
// client is replaced by one that consumes exactly these partitions from
// these offsets (franz-go's SetOffsets skips partitions whose first
// offsets are still loading). In a group, only the partitions this member
// owns move (SetOffsets), and the group's committed offsets move when the
// records read from there are acknowledged; a seek before the member's
// first assignment applies to that assignment.
func (c *consumer) moveTo(ctx context.Context, to, minOff map[int32]int64) error {
	clear(c.minOff)
	for p, at := range to {
		if m, ok := minOff[p]; ok {
			c.minOff[p] = m
		}
		if c.ends != nil {
			c.finished[p] = at >= c.ends[p]
		}
	}
	if c.group == "" {
		offsets := make(map[int32]kgo.Offset, len(to))
		for p, at := range to {
			offsets[p] = kgo.NewOffset().At(at)
		}
		cl, err := kgo.NewClient(append(c.opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: offsets}))...)
		if err != nil {
			return pgerror.Wrap(err, pgerror.IOError, "kafka: consumer of %s", c.topic)
		}
		c.cl.Close()
		c.cl = cl
		return nil
	}
	set := map[int32]kgo.EpochOffset{}
	c.mu.Lock()
	if !c.joined {
		c.pending = to
	} else {
		for p, at := range to {
			if c.owned[p] {
				set[p] = kgo.EpochOffset{Epoch: -1, Offset: at}
			}
		}
	}
	c.mu.Unlock()
	if len(set) > 0 {
		c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{c.topic: set})
	}
	return nil
}

// assigned, revoked and adjust are the group callbacks (franz-go's
// goroutines): they keep the partitions the member owns and apply a seek
// made before the first assignment.
func (c *consumer) assigned(_ context.Context, _ *kgo.Client, got map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range got[c.topic] {
		c.owned[p] = true
	}
	c.joined = true
}

func (c *consumer) revoked(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range lost[c.topic] {
		delete(c.owned, p)
	}
}

func (c *consumer) adjust(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range offsets[c.topic] {
		if at, ok := c.pending[p]; ok {
			offsets[c.topic][p] = kgo.NewOffset().At(at)
			delete(c.pending, p)
		}
	}
	return offsets, nil
}

// Lag implements backends.Lagger: records present now beyond the group's
// committed offsets.
func (c *consumer) Lag(ctx context.Context) (int64, error) {
	if c.group == "" {
		return 0, nil
	}
	ends, err := c.s.admin.ListCommittedOffsets(ctx, c.topic)
	if err != nil {
		return 0, err
	}
	committed, err := c.s.admin.FetchOffsets(ctx, c.group)
	if err != nil {
		return 0, err
	}
	var lag int64
	ends.Each(func(o kadm.ListedOffset) {
		at := int64(0)
		if cm, ok := committed.Lookup(c.topic, o.Partition); ok && cm.At > 0 {
			at = cm.At
		}
		if o.Offset > at {
			lag += o.Offset - at
		}
	})
	return lag, nil
}
