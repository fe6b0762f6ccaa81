package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// consumer reads one stream key: in a consumer group when one is named
// (XREADGROUP, XACK, XAUTOCLAIM), else by ID (XRANGE, XREAD).
//
// Read runs each Redis call on a goroutine of its own and waits for it or
// for ctx, so a cancelled Read returns at once even while a blocking
// XREAD is in progress; what that call still returns is kept for the next
// Read. Only the fetch goroutine touches the read state while a call is
// in flight (c.inflight != nil); the channel hands it back.
type consumer struct {
	s       *Streamer
	stream  string
	key     string
	shard   int32 // the shard key reads, its messages' Shard
	group   string
	member  string
	follow  bool
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	minIdle time.Duration // XAUTOCLAIM min-idle-time
	every   time.Duration // how often to look for claimable entries
	// others: claim every entry pending with another member, whatever
	// its idle time, and none of our own (a shard's lease holder: see
	// claimFromOthers), instead of XAUTOCLAIM's idle entries of anyone.
	others bool

	hasEnd bool     // not following: the stream had entries at open
	end    streamID // not following: its last entry then
	done   bool     // not following: the end is reached

	last streamID // without group: last ID read (the next read is after it)

	ownPending  string // group: where to read our own pending entries from ("" = done)
	claimCursor string // group: XAUTOCLAIM scan in progress ("" = none)
	nextClaim   time.Time

	buf      []backends.Message // read but not yet returned
	inflight chan fetched
	closed   bool
}

type fetched struct {
	msgs []backends.Message
	err  error
}

var (
	_ backends.Consumer = (*consumer)(nil)
	_ backends.Seeker   = (*consumer)(nil)
)

// Consumer opens a consumer of one stream (see the package doc). With a
// group, the group is created when missing (XGROUP CREATE … MKSTREAM,
// from "0" for Earliest or "$" for Latest; an existing group keeps its
// position). Not following, the end is the last entry present now.
func (s *Streamer) Consumer(ctx context.Context, stream string, o backends.ConsumerOptions) (backends.Consumer, error) {
	shards, err := s.shards(ctx, stream)
	if err != nil {
		return nil, err
	}
	if o.Group != "" && o.Member == "" {
		host, _ := os.Hostname()
		o.Member = "fvsql-" + host + "-" + strconv.Itoa(os.Getpid()) + "-" + randomHex(4)
	}
	if shards > 1 {
		return s.shardedConsumer(ctx, stream, shards, o)
	}
	return s.keyConsumer(ctx, stream, s.Key(stream), 0, o)
}

// startID is the exclusive "last seen" ID before the first entry stamped
// at or after t (its milliseconds rounded up).
func startID(t time.Time) streamID {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return streamID{ms: uint64(max(ms, 0))}.prev()
}

// keyConsumer opens a consumer of one shard's key.
func (s *Streamer) keyConsumer(ctx context.Context, stream, key string, shard int32, o backends.ConsumerOptions) (*consumer, error) {
	c := &consumer{s: s, stream: stream, key: key, shard: shard, group: o.Group, follow: o.Follow}
	if o.Group != "" {
		start := "0"
		if o.Start == backends.Latest {
			start = "$"
		}
		if !o.StartTime.IsZero() {
			start = startID(o.StartTime).String()
		}
		err := s.rdb.XGroupCreateMkStream(ctx, key, o.Group, start).Err()
		if err != nil && !goredis.HasErrorPrefix(err, "BUSYGROUP") {
			return nil, s.fail(ctx, err, "create consumer group %s of %s", o.Group, key)
		}
		c.member = o.Member
		c.ownPending = "0"
		c.minIdle = max(s.cfg.ClaimIdle, 0)
		c.every = max(s.cfg.ClaimIdle/2, 100*time.Millisecond)
	}
	latest := o.Group == "" && o.Start == backends.Latest && o.StartTime.IsZero()
	if !o.Follow || latest {
		last, ok, err := s.lastID(ctx, key)
		if err != nil {
			return nil, err
		}
		if !o.Follow {
			c.end, c.hasEnd = last, ok
		}
		if latest {
			c.last = last // zero (before everything) when empty
		}
	}
	if o.Group == "" && !o.StartTime.IsZero() {
		c.last = startID(o.StartTime)
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return c, nil
}

// Read implements backends.Consumer.
func (c *consumer) Read(ctx context.Context, max int) ([]backends.Message, error) {
	if c.closed {
		return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "redis: read of a closed consumer")
	}
	if max <= 0 {
		max = pageSize
	}
	for {
		if len(c.buf) > 0 {
			return take(&c.buf, max), nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.inflight == nil {
			ch := make(chan fetched, 1)
			c.inflight = ch
			go func() {
				msgs, err := c.fetch(c.ctx, max)
				ch <- fetched{msgs, err}
			}()
		}
		select {
		case r := <-c.inflight:
			c.inflight = nil
			c.buf = append(c.buf, r.msgs...)
			if r.err != nil && len(c.buf) == 0 {
				return nil, r.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fetch makes one step of reading; it returns no messages and no error
// when the step found nothing (Read then makes the next one).
func (c *consumer) fetch(ctx context.Context, max int) ([]backends.Message, error) {
	if c.group != "" {
		return c.fetchGroup(ctx, max)
	}
	if !c.follow {
		if c.done || !c.hasEnd || !c.last.less(c.end) {
			c.done = true
			return nil, backends.ErrEndOfStream
		}
		from, _ := c.last.next()
		xs, err := c.s.rdb.XRangeN(ctx, c.key, from.String(), c.end.String(), int64(max)).Result()
		if err != nil {
			return nil, c.s.fail(ctx, err, "read %s", c.key)
		}
		if len(xs) == 0 {
			c.done = true
			return nil, backends.ErrEndOfStream
		}
		c.last, _ = parseID(xs[len(xs)-1].ID)
		return c.s.convert(c.stream, c.shard, xs, nil)
	}
	res, err := c.s.rdb.XRead(ctx, &goredis.XReadArgs{
		Streams: []string{c.key, c.last.String()}, Count: int64(max), Block: blockFor,
	}).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, c.s.fail(ctx, err, "read %s", c.key)
	}
	xs := entries(res)
	if len(xs) == 0 {
		return nil, nil
	}
	c.last, _ = parseID(xs[len(xs)-1].ID)
	return c.s.convert(c.stream, c.shard, xs, nil)
}

// fetchGroup reads in the group: first this member's own pending entries
// (left by an earlier run under the same member name), then entries of
// other members idle for at least the claim time (XAUTOCLAIM; again every
// c.every), then new entries (">").
func (c *consumer) fetchGroup(ctx context.Context, max int) ([]backends.Message, error) {
	s := c.s
	if c.ownPending != "" {
		res, err := s.rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{
			Group: c.group, Consumer: c.member, Streams: []string{c.key, c.ownPending}, Count: int64(max), Block: -1,
		}).Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, s.fail(ctx, err, "read pending entries of %s in %s", c.member, c.key)
		}
		xs := entries(res)
		if len(xs) == 0 {
			c.ownPending = ""
			return nil, nil
		}
		c.ownPending = xs[len(xs)-1].ID
		return c.deliver(ctx, xs)
	}
	if c.others && !time.Now().Before(c.nextClaim) {
		xs, more, err := c.claimFromOthers(ctx, max)
		if err != nil {
			return nil, err
		}
		if !more {
			c.nextClaim = time.Now().Add(c.every)
		}
		if len(xs) > 0 {
			return c.deliver(ctx, xs)
		}
	}
	if !c.others && (c.claimCursor != "" || !time.Now().Before(c.nextClaim)) {
		start := c.claimCursor
		if start == "" {
			start = "0-0"
		}
		xs, next, err := s.rdb.XAutoClaim(ctx, &goredis.XAutoClaimArgs{
			Stream: c.key, Group: c.group, Consumer: c.member, MinIdle: c.minIdle, Start: start, Count: int64(max),
		}).Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, s.fail(ctx, err, "claim pending entries of %s", c.key)
		}
		if next == "" || next == "0-0" {
			c.claimCursor = ""
			c.nextClaim = time.Now().Add(c.every)
		} else {
			c.claimCursor = next
		}
		if len(xs) > 0 {
			return c.deliver(ctx, xs)
		}
		if c.claimCursor != "" {
			return nil, nil
		}
	}
	if !c.follow && (c.done || !c.hasEnd) {
		c.done = true
		return nil, backends.ErrEndOfStream
	}
	args := &goredis.XReadGroupArgs{
		Group: c.group, Consumer: c.member, Streams: []string{c.key, ">"}, Count: int64(max), Block: -1,
	}
	if c.follow {
		args.Block = blockFor
	}
	res, err := s.rdb.XReadGroup(ctx, args).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, s.fail(ctx, err, "read %s in group %s", c.key, c.group)
	}
	xs := entries(res)
	if len(xs) == 0 {
		if !c.follow {
			c.done = true
			return nil, backends.ErrEndOfStream
		}
		return nil, nil
	}
	return c.deliver(ctx, xs)
}

// claimFromOthers claims up to max entries pending with members other
// than this one, whatever their idle time; more reports that there may
// be others left. It is for a shard's lease holder, the one member
// reading the shard: an entry pending with another member is one that
// member read while it held the lease (and dropped when it let the shard
// go), or one a read of it still blocking at the handover took after it
// (XREADGROUP … BLOCK, answered up to blockFor later). Both are ours to
// deliver, and nobody else will: so they are claimed at the take and
// again every c.every while the lease is held. Our own pending entries
// are left alone (they are read ahead and not yet acknowledged, and
// claiming them would deliver them twice).
func (c *consumer) claimFromOthers(ctx context.Context, max int) ([]goredis.XMessage, bool, error) {
	s := c.s
	sum, err := s.rdb.XPending(ctx, c.key, c.group).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, false, s.fail(ctx, err, "list pending entries of %s", c.key)
	}
	if sum == nil {
		return nil, false, nil
	}
	for member, n := range sum.Consumers {
		if member == c.member || n == 0 {
			continue
		}
		pending, err := s.rdb.XPendingExt(ctx, &goredis.XPendingExtArgs{
			Stream: c.key, Group: c.group, Start: "-", End: "+", Count: int64(max), Consumer: member,
		}).Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, false, s.fail(ctx, err, "list pending entries of %s in %s", member, c.key)
		}
		if len(pending) == 0 {
			continue
		}
		ids := make([]string, len(pending))
		for i, p := range pending {
			ids[i] = p.ID
		}
		xs, err := s.rdb.XClaim(ctx, &goredis.XClaimArgs{
			Stream: c.key, Group: c.group, Consumer: c.member, Messages: ids,
		}).Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, false, s.fail(ctx, err, "claim pending entries of %s in %s", member, c.key)
		}
		return xs, true, nil
	}
	return nil, false, nil
}

// deliver converts entries read in the group. Deleted entries (trimmed
// while pending) are acknowledged and dropped. Not following, entries
// after the end stay pending (with this member, claimable by others) and
// the end is reached.
func (c *consumer) deliver(ctx context.Context, xs []goredis.XMessage) ([]backends.Message, error) {
	var deleted []string
	msgs, err := c.s.convert(c.stream, c.shard, xs, &deleted)
	if err != nil {
		return nil, err
	}
	if len(deleted) > 0 {
		if err := c.ack(ctx, deleted); err != nil {
			return nil, err
		}
	}
	if !c.follow {
		for i := range msgs {
			if id, _ := parseID(msgs[i].ID); !c.hasEnd || c.end.less(id) {
				c.done = true
				msgs = msgs[:i]
				break
			}
		}
	}
	return msgs, nil
}

func entries(res []goredis.XStream) []goredis.XMessage {
	if len(res) == 0 {
		return nil
	}
	return res[0].Messages
}

// Ack implements backends.Consumer: XACK of the messages' IDs (one
// pipelined round trip). Without a group there is nothing to acknowledge.
func (c *consumer) Ack(ctx context.Context, msgs []backends.Message) error {
	if c.group == "" || len(msgs) == 0 {
		return nil
	}
	ids := make([]string, len(msgs))
	for i := range msgs {
		if ids[i] = msgs[i].ID; ids[i] == "" {
			ids[i] = IDOf(msgs[i].Sequence)
		}
	}
	return c.ack(ctx, ids)
}

func (c *consumer) ack(ctx context.Context, ids []string) error {
	const chunk = 1000
	_, err := c.s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for len(ids) > 0 {
			n := min(chunk, len(ids))
			p.XAck(ctx, c.key, c.group, ids[:n]...)
			ids = ids[n:]
		}
		return nil
	})
	if err != nil {
		return c.s.fail(ctx, err, "acknowledge entries of %s in group %s", c.key, c.group)
	}
	return nil
}

// Seek implements backends.Seeker: the next Read starts at the first entry
// with Sequence >= seq. In a group it moves the group's last-delivered ID
// (XGROUP SETID), for every member.
func (c *consumer) Seek(ctx context.Context, seq int64) error {
	return c.seek(ctx, idOfSequence(seq))
}

// SeekTime implements backends.Seeker: from the entry IDs <ms>-0 on.
func (c *consumer) SeekTime(ctx context.Context, t time.Time) error {
	return c.seek(ctx, streamID{ms: uint64(max(t.UnixMilli(), 0))})
}

func (c *consumer) seek(ctx context.Context, to streamID) error {
	if c.closed {
		return pgerror.New(pgerror.ObjectNotInPrerequisiteState, "redis: seek of a closed consumer")
	}
	if c.inflight != nil { // let the running call end; its result is dropped
		select {
		case <-c.inflight:
			c.inflight = nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.buf = nil
	c.done = false
	prev := to.prev()
	if c.group == "" {
		c.last = prev
		return nil
	}
	if err := c.s.rdb.XGroupSetID(ctx, c.key, c.group, prev.String()).Err(); err != nil {
		return c.s.fail(ctx, err, "move group %s of %s to %s", c.group, c.key, to)
	}
	c.ownPending, c.claimCursor = "", ""
	c.nextClaim = time.Now().Add(c.every)
	return nil
}

// Close implements backends.Consumer. A group member's unacknowledged
// entries stay pending: the member reads them again when it reopens under
// the same name, other members claim them after the claim idle time.
func (c *consumer) Close() error {
	if !c.closed {
		c.closed = true
		c.cancel()
	}
	return nil
}

func (c *consumer) String() string {
	if c.group != "" {
		return fmt.Sprintf("redis consumer %s/%s of %s", c.group, c.member, c.key)
	}
	return "redis consumer of " + c.key
}

// Lag implements backends.Lagger for group consumers: entries the group
// has not been delivered yet plus those delivered but not acknowledged
// (XINFO GROUPS: lag and pending; Redis 7 reports lag).
func (c *consumer) Lag(ctx context.Context) (int64, error) {
	if c.group == "" {
		return 0, nil
	}
	groups, err := c.s.rdb.XInfoGroups(ctx, c.key).Result()
	if err != nil {
		return 0, c.s.fail(ctx, err, "redis: lag of %s", c.key)
	}
	for _, g := range groups {
		if g.Name == c.group {
			lag := g.Lag
			if lag < 0 {
				lag = 0
			}
			return lag + g.Pending, nil
		}
	}
	return 0, nil
}

var _ backends.Lagger = (*consumer)(nil)

// take removes and returns up to max messages from the front of *buf
// (capped, so appending to the result never writes into *buf), dropping
// the buffer once it is empty.
func take(buf *[]backends.Message, max int) []backends.Message {
	n := min(max, len(*buf))
	out := (*buf)[:n:n]
	*buf = (*buf)[n:]
	if len(*buf) == 0 {
		*buf = nil
	}
	return out
}
