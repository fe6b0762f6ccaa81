package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// shardedConsumer reads a stream of several shard keys: one keyConsumer
// per shard, each read on a goroutine of its own while this consumer
// reads that shard, their batches merged into one channel.
//
// Without a group every shard is read. In a group each shard is read by
// one member at a time: a member holds a lease on the shards it reads
// (lease keys with an expiry, renewed every LeaseTTL/3), and takes as
// many as its fair share (the shard count over the live members, who
// announce themselves in a sorted set with expiry scores), releasing
// what it holds beyond that share when members join and taking over the
// shards whose owner's lease ran out (it died). A shard taken over has
// its pending entries claimed at once: the lease says nobody else reads
// it now.
type shardedConsumer struct {
	s      *Streamer
	stream string
	group  string
	member string
	follow bool
	subs   []*consumer
	ttl    time.Duration

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	out    chan shardRead

	mu      sync.Mutex
	readers map[int]*shardReader // shards being read now
	ended   map[int]bool         // not following: shards read to their end
	buf     []backends.Message
	balance chan struct{} // closed when the balancer has stopped; nil without a group
	closed  bool
}

type shardReader struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type shardRead struct {
	shard int
	msgs  []backends.Message
	err   error
}

var (
	_ backends.Consumer = (*shardedConsumer)(nil)
	_ backends.Seeker   = (*shardedConsumer)(nil)
	_ backends.Lagger   = (*shardedConsumer)(nil)
)

// Lease keys: one per group and shard, holding the member reading it;
// the members of a group in a sorted set scored by when they expire.
func (s *Streamer) leaseKey(stream, group string, shard int) string {
	return s.Key(stream) + ":fvsql:lease:" + group + ":" + strconv.Itoa(shard)
}

func (s *Streamer) membersKey(stream, group string) string {
	return s.Key(stream) + ":fvsql:members:" + group
}

// renewLease extends a lease the member holds; 0 when it holds it no more.
var renewLease = goredis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)

// dropLease deletes a lease the member holds.
var dropLease = goredis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (s *Streamer) shardedConsumer(ctx context.Context, stream string, shards int, o backends.ConsumerOptions) (backends.Consumer, error) {
	c := &shardedConsumer{
		s: s, stream: stream, group: o.Group, member: o.Member, follow: o.Follow, ttl: s.cfg.LeaseTTL,
		out: make(chan shardRead, shards), readers: map[int]*shardReader{}, ended: map[int]bool{},
	}
	for i := range shards {
		sub, err := s.keyConsumer(ctx, stream, s.ShardKey(stream, i, shards), int32(i), o)
		if err != nil {
			return nil, err
		}
		// A shard is read by its lease holder only: the entries pending
		// with others are ours, claimed when the lease is taken
		// (rebalance) and at every renewal while we hold it (a read the
		// last holder had in flight may take entries after the handover),
		// never our own (read ahead, not acknowledged yet).
		sub.others, sub.every = true, c.ttl/3
		c.subs = append(c.subs, sub)
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if c.group == "" {
		for i := range c.subs {
			c.startReader(i)
		}
		return c, nil
	}
	if err := c.rebalance(ctx); err != nil {
		c.cancel()
		return nil, err
	}
	c.balance = make(chan struct{})
	go c.balancer()
	return c, nil
}

// startReader reads shard i until its context ends (or, not following,
// its end); the caller holds c.mu or owns c alone.
func (c *shardedConsumer) startReader(i int) {
	if c.readers[i] != nil || c.ended[i] {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	r := &shardReader{cancel: cancel, done: make(chan struct{})}
	c.readers[i] = r
	sub := c.subs[i]
	go func() {
		defer close(r.done)
		for {
			msgs, err := sub.Read(ctx, pageSize)
			if ctx.Err() != nil {
				return
			}
			select {
			case c.out <- shardRead{shard: i, msgs: msgs, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// stopReader stops reading shard i and waits for its goroutine.
func (c *shardedConsumer) stopReader(i int) {
	r := c.readers[i]
	if r == nil {
		return
	}
	delete(c.readers, i)
	r.cancel()
	<-r.done
}

// Read implements backends.Consumer.
func (c *shardedConsumer) Read(ctx context.Context, max int) ([]backends.Message, error) {
	if c.closed {
		return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "redis: read of a closed consumer")
	}
	if max <= 0 {
		max = pageSize
	}
	for len(c.buf) == 0 {
		c.mu.Lock()
		allEnded := !c.follow && len(c.ended) == len(c.subs)
		idle := !c.follow && len(c.readers) == 0
		c.mu.Unlock()
		if allEnded || idle && len(c.out) == 0 {
			return nil, backends.ErrEndOfStream
		}
		select {
		case r := <-c.out:
			c.mu.Lock()
			if r.err != nil && c.readers[r.shard] != nil {
				delete(c.readers, r.shard) // its goroutine ends after an error
			}
			if errors.Is(r.err, backends.ErrEndOfStream) {
				c.ended[r.shard] = true
				c.mu.Unlock()
				continue
			}
			c.mu.Unlock()
			if r.err != nil {
				return nil, r.err
			}
			c.buf = append(c.buf, r.msgs...)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return take(&c.buf, max), nil
}

// Ack implements backends.Consumer: XACK per shard key.
func (c *shardedConsumer) Ack(ctx context.Context, msgs []backends.Message) error {
	if c.group == "" || len(msgs) == 0 {
		return nil
	}
	ids := make([][]string, len(c.subs))
	for i := range msgs {
		sh := int(msgs[i].Shard)
		if sh < 0 || sh >= len(c.subs) {
			return pgerror.New(pgerror.InvalidParameterValue, "redis: acknowledged message of shard %d; %s has %d", sh, c.stream, len(c.subs))
		}
		id := msgs[i].ID
		if id == "" {
			id = IDOf(msgs[i].Sequence)
		}
		ids[sh] = append(ids[sh], id)
	}
	for i, list := range ids {
		if len(list) > 0 {
			if err := c.subs[i].ack(ctx, list); err != nil {
				return err
			}
		}
	}
	return nil
}

// balancer renews the member's leases and rebalances every ttl/3.
func (c *shardedConsumer) balancer() {
	defer close(c.balance)
	// The first rebalance comes soon: members of one group usually open
	// together (every process starts a pipeline's bridges at once), and
	// the first of them took every shard before it saw the others.
	wait := min(500*time.Millisecond, c.ttl/3)
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = c.ttl / 3
		if err := c.rebalance(c.ctx); err != nil && c.ctx.Err() == nil {
			// Redis unreachable: keep reading what we hold; a lease
			// that ran out meanwhile is found lost at the next renewal.
			continue
		}
	}
}

// rebalance announces the member, renews its leases (dropping the shards
// whose lease it lost), and moves towards its fair share: releasing the
// shards beyond it, taking free ones below it.
func (c *shardedConsumer) rebalance(ctx context.Context) error {
	s := c.s
	now := time.Now()
	members := s.membersKey(c.stream, c.group)
	var live *goredis.IntCmd
	err := s.txPipelined(ctx, func(p goredis.Pipeliner) error {
		p.ZAdd(ctx, members, goredis.Z{Score: float64(now.Add(c.ttl).UnixMilli()), Member: c.member})
		p.ZRemRangeByScore(ctx, members, "-inf", strconv.FormatInt(now.UnixMilli(), 10))
		live = p.ZCard(ctx, members)
		p.PExpire(ctx, members, 3*c.ttl)
		return nil
	})
	if err != nil {
		return s.fail(ctx, err, "announce member %s of group %s", c.member, c.group)
	}
	n := len(c.subs)
	share := (n + int(max(live.Val(), 1)) - 1) / int(max(live.Val(), 1))
	ttlMs := strconv.FormatInt(c.ttl.Milliseconds(), 10)

	c.mu.Lock()
	held := make([]int, 0, len(c.readers))
	for i := range n {
		if c.readers[i] != nil || c.ended[i] {
			held = append(held, i)
		}
	}
	c.mu.Unlock()
	var keep []int
	for _, i := range held {
		ok, err := renewLease.Run(ctx, s.rdb, []string{s.leaseKey(c.stream, c.group, i)}, c.member, ttlMs).Int()
		if err != nil {
			return s.fail(ctx, err, "renew the lease of shard %d of %s", i, c.stream)
		}
		if ok == 1 {
			keep = append(keep, i)
		} else {
			c.release(ctx, i, false)
		}
	}
	for len(keep) > share { // members joined: hand the last ones over
		c.release(ctx, keep[len(keep)-1], true)
		keep = keep[:len(keep)-1]
	}
	for i := 0; i < n && len(keep) < share; i++ {
		c.mu.Lock()
		mine := c.readers[i] != nil || c.ended[i]
		c.mu.Unlock()
		if mine {
			continue
		}
		got, err := s.rdb.SetNX(ctx, s.leaseKey(c.stream, c.group, i), c.member, c.ttl).Result()
		if err != nil {
			return s.fail(ctx, err, "take the lease of shard %d of %s", i, c.stream)
		}
		if got {
			keep = append(keep, i)
			c.mu.Lock()
			sub := c.subs[i]
			sub.ownPending, sub.nextClaim = "0", time.Time{}
			c.startReader(i)
			c.mu.Unlock()
		}
	}
	return nil
}

// release stops reading shard i; drop also deletes its lease (handing it
// over now rather than when it runs out).
func (c *shardedConsumer) release(ctx context.Context, i int, drop bool) {
	c.mu.Lock()
	c.stopReader(i)
	delete(c.ended, i)
	c.mu.Unlock()
	if drop {
		_ = dropLease.Run(ctx, c.s.rdb, []string{c.s.leaseKey(c.stream, c.group, i)}, c.member).Err()
	}
}

// Seek implements backends.Seeker on every shard.
func (c *shardedConsumer) Seek(ctx context.Context, seq int64) error {
	return c.seekAll(ctx, func(sub *consumer) error { return sub.Seek(ctx, seq) })
}

// SeekTime implements backends.Seeker on every shard.
func (c *shardedConsumer) SeekTime(ctx context.Context, t time.Time) error {
	return c.seekAll(ctx, func(sub *consumer) error { return sub.SeekTime(ctx, t) })
}

// seekAll stops the readers, moves every shard (in a group: the group's
// position on every shard key, for all members) and reads again what
// this consumer read before.
func (c *shardedConsumer) seekAll(ctx context.Context, seek func(*consumer) error) error {
	if c.closed {
		return pgerror.New(pgerror.ObjectNotInPrerequisiteState, "redis: seek of a closed consumer")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var reading []int
	for i := range c.subs {
		if c.readers[i] != nil || c.ended[i] || c.group == "" {
			reading = append(reading, i)
		}
		c.stopReader(i)
	}
	for len(c.out) > 0 {
		<-c.out
	}
	c.buf, c.ended = nil, map[int]bool{}
	for _, sub := range c.subs {
		if err := seek(sub); err != nil {
			return err
		}
	}
	for _, i := range reading {
		c.startReader(i)
	}
	return nil
}

// Lag implements backends.Lagger: the group's lag over every shard.
func (c *shardedConsumer) Lag(ctx context.Context) (int64, error) {
	var sum int64
	for _, sub := range c.subs {
		n, err := sub.Lag(ctx)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// Close implements backends.Consumer: it stops the readers and, in a
// group, hands its shards over (deletes its leases and leaves the
// members' set), so the other members take them at their next
// rebalance. Unacknowledged entries stay pending, claimed by the next
// holder of their shard.
func (c *shardedConsumer) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.cancel()
	if c.balance != nil {
		<-c.balance
	}
	c.mu.Lock()
	for i := range c.subs {
		c.stopReader(i)
	}
	held := make([]int, 0, len(c.subs))
	for i := range c.subs {
		held = append(held, i)
	}
	c.mu.Unlock()
	for _, sub := range c.subs {
		_ = sub.Close()
	}
	if c.group == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, i := range held {
		_ = dropLease.Run(ctx, c.s.rdb, []string{c.s.leaseKey(c.stream, c.group, i)}, c.member).Err()
	}
	_ = c.s.rdb.ZRem(ctx, c.s.membersKey(c.stream, c.group), c.member).Err()
	return nil
}

func (c *shardedConsumer) String() string {
	if c.group != "" {
		return fmt.Sprintf("redis consumer %s/%s of %d shards of %s", c.group, c.member, len(c.subs), c.s.Key(c.stream))
	}
	return fmt.Sprintf("redis consumer of %d shards of %s", len(c.subs), c.s.Key(c.stream))
}
