package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumer reads one topic, in a consumer group when one is named
// (acknowledging = committing offsets), else directly from the start or
// end of each partition.
type consumer struct {
	s        *Streamer
	stream   string
	group    string
	cl       *kgo.Client
	follow   bool
	ends     map[int32]int64 // not following: where to stop
	finished map[int32]bool  // not following: partitions read to their end
}

var _ backends.Consumer = (*consumer)(nil)

// Consumer implements backends.Streamer.
func (s *Streamer) Consumer(ctx context.Context, stream string, o backends.ConsumerOptions) (backends.Consumer, error) {
	topic := s.Topic(stream)
	start := kgo.NewOffset().AtStart()
	if o.Start == backends.Latest {
		start = kgo.NewOffset().AtEnd()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(start),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	opts = append(opts, s.auth...)
	if o.Group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	} else {
		opts = append(opts, kgo.ConsumeTopics(topic))
	}
	c := &consumer{s: s, stream: stream, group: o.Group, follow: o.Follow, finished: map[int32]bool{}}
	if !o.Follow {
		ends, err := s.admin.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("kafka: %w: %v", backends.ErrNotConnected, err)
		}
		c.ends = map[int32]int64{}
		ends.Each(func(lo kadm.ListedOffset) { c.ends[lo.Partition] = lo.Offset })
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	c.cl = cl
	return c, nil
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
	topic := c.s.Topic(c.stream)
	next := map[int32]kgo.EpochOffset{}
	for _, m := range msgs {
		if o, ok := next[m.Shard]; !ok || m.Sequence+1 > o.Offset {
			next[m.Shard] = kgo.EpochOffset{Epoch: -1, Offset: m.Sequence + 1}
		}
	}
	var commitErr error
	c.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: next}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
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

// Lag implements backends.Lagger: records present now beyond the group's
// committed offsets.
func (c *consumer) Lag(ctx context.Context) (int64, error) {
	if c.group == "" {
		return 0, nil
	}
	topic := c.s.Topic(c.stream)
	ends, err := c.s.admin.ListCommittedOffsets(ctx, topic)
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
		if cm, ok := committed.Lookup(topic, o.Partition); ok && cm.At > 0 {
			at = cm.At
		}
		if o.Offset > at {
			lag += o.Offset - at
		}
	})
	return lag, nil
}

var _ backends.Lagger = (*consumer)(nil)
