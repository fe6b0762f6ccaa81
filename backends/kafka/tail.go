package kafka

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// What the server needs of the cluster beyond the backends contract: the
// catalog log (a one-partition compacted topic appended to and tailed),
// views' local copies (a compacted table topic read from stored
// positions) and SUBSCRIBE (a stream tailed from the offsets it had when
// a snapshot was read). All of it through this file, so that no package
// above reaches for the franz-go client.

// AtStart, as a Tail position, is a partition's first offset.
const AtStart int64 = -2

// StableEnds returns, per partition of the stream's topic, its
// read_committed end now: the last stable offset (the offset after the
// last record of a committed or aborted transaction, or of a plain
// produce, with no open transaction before it).
func (s *Streamer) StableEnds(ctx context.Context, stream string) (map[int32]int64, error) {
	topic := s.Topic(stream)
	ends, err := ListFresh(ctx, s.client, s.admin.ListCommittedOffsets, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s", topic)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// OffsetsAt returns, per partition of the stream, the offset of the first
// record stamped at or after t (rounded up to Kafka's milliseconds), or
// the stable end where none is that late (or the first such record is
// past it): where a reader that starts at t begins.
func (s *Streamer) OffsetsAt(ctx context.Context, stream string, t time.Time) (map[int32]int64, error) {
	ends, err := s.StableEnds(ctx, stream)
	if err != nil {
		return nil, err
	}
	topic := s.Topic(stream)
	at, err := s.admin.ListOffsetsAfterMilli(ctx, max(ceilMilli(t), 0), topic) // a negative time means the end to Kafka
	if err == nil {
		err = at.Error()
	}
	if err != nil {
		return nil, pgerror.Wrap(err, pgerror.IOError, "kafka: list offsets of %s by time", topic)
	}
	at.Each(func(o kadm.ListedOffset) {
		if end, ok := ends[o.Partition]; ok && o.Offset >= 0 && o.Offset < end {
			ends[o.Partition] = o.Offset
		}
	})
	return ends, nil
}

// Append produces one message and waits for it to be stored; it returns
// the offset the record got. It is for writers that need that offset
// (the catalog log, whose offsets order DDL and give OIDs); Producer is
// the batch path.
func (s *Streamer) Append(ctx context.Context, m backends.Message) (int64, error) {
	r := &kgo.Record{Topic: s.Topic(m.Stream), Key: m.Key, Value: m.Payload}
	if !m.Timestamp.IsZero() {
		r.Timestamp = m.Timestamp
	}
	got, err := s.client.ProduceSync(ctx, r).First()
	if err != nil {
		return 0, pgerror.Wrap(err, pgerror.IOError, "kafka: produce to %s", r.Topic)
	}
	return got.Offset, nil
}

// TailOptions configure a Tail.
type TailOptions struct {
	// MaxWait is how long the broker may hold a fetch open waiting for
	// data (default 100 ms): the latency of a new record reaching the
	// tail when the topic is quiet.
	MaxWait time.Duration
}

// Tail reads given partitions of one topic from given offsets, for ever,
// read_committed. It is not a group member: it commits nothing, and
// every Tail sees every record. A Tail is used by one goroutine.
type Tail struct {
	stream string
	cl     *kgo.Client
	// newClient makes a client reading from offsets; at is where each
	// partition's next read starts, to make one again from.
	newClient func(offsets map[int32]kgo.Offset) (*kgo.Client, error)
	at        map[int32]kgo.Offset
	// staleSince is when fetches began to fail with UNKNOWN_TOPIC_ID
	staleSince time.Time
}

// staleTopicGrace is how long a Tail's fetches may fail with
// UNKNOWN_TOPIC_ID before it starts a new client: a topic dropped and
// created again under its name has a new id, and a client that took the
// old one from its first metadata (a broker still deleting the old
// topic) kept failing (a view's copy never caught up, and FLUSH hung).
const staleTopicGrace = time.Second

// TailBatch is what one Poll read.
type TailBatch struct {
	// Messages are the data records, in offset order per partition
	// (Shard: partition, Sequence: offset; a tombstone has a nil
	// Payload). Commit markers are not among them.
	Messages []backends.Message
	// Next is, per partition polled, the offset after the last record
	// read, commit markers included: a reader that stores Next and starts
	// from it again skips nothing and reads nothing twice, and a reader
	// caught up has Next equal to StableEnds.
	Next map[int32]int64
}

// Tail starts reading the stream's partitions from the offsets in from
// (an offset, or AtStart).
func (s *Streamer) Tail(stream string, from map[int32]int64, o TailOptions) (*Tail, error) {
	if o.MaxWait <= 0 {
		o.MaxWait = 100 * time.Millisecond
	}
	offsets := make(map[int32]kgo.Offset, len(from))
	for p, off := range from {
		if off == AtStart {
			offsets[p] = kgo.NewOffset().AtStart()
		} else {
			offsets[p] = kgo.NewOffset().At(off)
		}
	}
	newClient := func(offsets map[int32]kgo.Offset) (*kgo.Client, error) {
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(s.cfg.Brokers...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.Topic(stream): offsets}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(),
			kgo.FetchMaxWait(o.MaxWait),
		}, s.auth...)...)
		if err != nil {
			return nil, pgerror.Wrap(err, pgerror.IOError, "kafka: tail of %s", s.Topic(stream))
		}
		return cl, nil
	}
	cl, err := newClient(offsets)
	if err != nil {
		return nil, err
	}
	return &Tail{stream: stream, cl: cl, newClient: newClient, at: maps.Clone(offsets)}, nil
}

// Poll waits for records and returns them. It returns ctx's error once
// ctx is done. A fetch error comes back with the records the other
// partitions gave: the tail goes on if the caller polls again (franz-go
// retries the partition), or the caller may stop.
func (t *Tail) Poll(ctx context.Context) (TailBatch, error) {
	fs := t.cl.PollFetches(ctx)
	if err := ctx.Err(); err != nil {
		return TailBatch{}, err
	}
	var ferr error
	stale := false
	fs.EachError(func(topic string, p int32, err error) {
		stale = stale || errors.Is(err, kerr.UnknownTopicID)
		if ferr == nil && !errors.Is(err, context.Canceled) {
			ferr = pgerror.Wrap(err, pgerror.IOError, "kafka: read %s[%d]", topic, p)
		}
	})
	b := TailBatch{Next: map[int32]int64{}}
	fs.EachRecord(func(r *kgo.Record) {
		b.Next[r.Partition] = r.Offset + 1
		t.at[r.Partition] = kgo.NewOffset().At(r.Offset + 1)
		if r.Attrs.IsControl() {
			return
		}
		b.Messages = append(b.Messages, backends.Message{
			Stream: t.stream, Shard: r.Partition, Sequence: r.Offset,
			Timestamp: r.Timestamp, Key: r.Key, Payload: r.Value,
		})
	})
	switch {
	case !stale:
		t.staleSince = time.Time{}
	case t.staleSince.IsZero():
		t.staleSince = time.Now()
	case time.Since(t.staleSince) > staleTopicGrace:
		// a client of fresh metadata, from where this one got to
		if cl, err := t.newClient(maps.Clone(t.at)); err == nil {
			t.cl.Close()
			t.cl, t.staleSince = cl, time.Time{}
		}
	}
	return b, ferr
}

// Close stops the tail.
func (t *Tail) Close() { t.cl.Close() }

// ListFresh lists offsets of topics with list (one of kadm's List*Offsets
// methods on a client of cl). A topic dropped and created again under its
// name, by this process or another, has a new id and maybe fewer
// partitions, which cl's cached metadata does not know: the broker then
// answers UNKNOWN_TOPIC_OR_PARTITION (or UNKNOWN_TOPIC_ID) for partitions
// that exist. ListFresh then makes cl forget the topics and lists once
// more. Other errors come back as list returned them.
func ListFresh(ctx context.Context, cl *kgo.Client, list func(context.Context, ...string) (kadm.ListedOffsets, error), topics ...string) (kadm.ListedOffsets, error) {
	res, err := list(ctx, topics...)
	if staleMetadata(res, err) {
		cl.PurgeTopicsFromClient(topics...)
		res, err = list(ctx, topics...)
	}
	return res, err
}

func staleMetadata(res kadm.ListedOffsets, err error) bool {
	stale := func(err error) bool {
		return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
	}
	if stale(err) {
		return true
	}
	found := false
	res.Each(func(o kadm.ListedOffset) { found = found || stale(o.Err) })
	return found
}
