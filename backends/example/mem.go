package example

import (
	"bytes"
	"context"
	"hash/fnv"
	"maps"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// Step 1: register a factory under the URI scheme.
func init() {
	backends.Register("mem", func(_ context.Context, u *url.URL, _ backends.Env) (backends.Streamer, error) {
		if u.Host == "" {
			return nil, pgerror.New(pgerror.InvalidParameterValue, "mem: the URI must name a store: mem://name")
		}
		return &Streamer{st: storeNamed(u.Host)}, nil
	})
}

// store is the state of one mem://name, shared by its Streamers.
type store struct {
	mu        sync.Mutex
	streams   map[string]*stream
	changed   chan struct{} // closed and replaced on every Send
	nextShard int           // round-robin shard of unkeyed messages
}

type stream struct {
	shards    [][]backends.Message // index = Sequence
	groups    map[string]*group    // consumer groups by name
	positions map[string]int64     // SendAt's positions
}

var stores = struct {
	sync.Mutex
	m map[string]*store
}{m: map[string]*store{}}

func storeNamed(name string) *store {
	stores.Lock()
	defer stores.Unlock()
	s := stores.m[name]
	if s == nil {
		s = &store{streams: map[string]*stream{}, changed: make(chan struct{})}
		stores.m[name] = s
	}
	return s
}

// Streamer is one connection to a store.
type Streamer struct{ st *store }

// Step 2: the compile-time checks of every interface the backend offers.
var (
	_ backends.Streamer           = (*Streamer)(nil)
	_ backends.PositionedProducer = (*producer)(nil)
	_ backends.Consumer           = (*consumer)(nil)
	_ backends.Seeker             = (*consumer)(nil)
)

func (s *Streamer) get(name string) (*stream, error) {
	if st := s.st.streams[name]; st != nil {
		return st, nil
	}
	return nil, pgerror.New(pgerror.UndefinedTable, "mem: stream %q does not exist", name)
}

// CreateStream implements backends.Streamer.
func (s *Streamer) CreateStream(_ context.Context, spec backends.StreamSpec) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.streams[spec.Name] == nil {
		s.st.streams[spec.Name] = &stream{
			shards:    make([][]backends.Message, max(spec.Shards, 1)),
			groups:    map[string]*group{},
			positions: map[string]int64{},
		}
	}
	return nil
}

// DropStream implements backends.Streamer.
func (s *Streamer) DropStream(_ context.Context, name string) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	delete(s.st.streams, name)
	return nil
}

// Close implements backends.Streamer: the store stays.
func (s *Streamer) Close() error { return nil }

// Producer implements backends.Streamer.
func (s *Streamer) Producer(context.Context) (backends.Producer, error) {
	return &producer{s: s}, nil
}

type producer struct{ s *Streamer }

// Send implements backends.Producer: all or nothing, under the store lock.
func (p *producer) Send(ctx context.Context, msgs []backends.Message) error {
	return p.SendAt(ctx, msgs, nil)
}

// SendAt implements backends.PositionedProducer: the positions are stored
// with the messages in one critical section, which is this backend's
// "atomic step".
func (p *producer) SendAt(_ context.Context, msgs []backends.Message, positions map[string]int64) error {
	st := p.s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, m := range msgs { // validate first: nothing is written on error
		if _, err := p.s.get(m.Stream); err != nil {
			return err
		}
	}
	now := time.Now()
	touched := map[*stream]bool{}
	for _, m := range msgs {
		str := st.streams[m.Stream]
		touched[str] = true
		shard := 0
		if m.Key != nil {
			h := fnv.New32a()
			h.Write(m.Key)
			shard = int(h.Sum32() % uint32(len(str.shards)))
		} else {
			shard = st.nextShard % len(str.shards)
			st.nextShard++
		}
		ts := m.Timestamp
		if ts.IsZero() {
			ts = now
		}
		str.shards[shard] = append(str.shards[shard], backends.Message{
			Stream: m.Stream, Shard: int32(shard), Sequence: int64(len(str.shards[shard])), Timestamp: ts,
			Key: bytes.Clone(m.Key), Payload: bytes.Clone(m.Payload), // the caller may reuse its buffers
		})
	}
	for str := range touched {
		maps.Copy(str.positions, positions)
	}
	close(st.changed)
	st.changed = make(chan struct{})
	return nil
}

// Positions implements backends.PositionedProducer.
func (p *producer) Positions(_ context.Context, name string) (map[string]int64, error) {
	p.s.st.mu.Lock()
	defer p.s.st.mu.Unlock()
	out := map[string]int64{}
	if str := p.s.st.streams[name]; str != nil {
		maps.Copy(out, str.positions)
	}
	return out, nil
}

func (p *producer) Close() error { return nil }

// Scan implements backends.Streamer: a snapshot of each shard, in batches.
func (s *Streamer) Scan(ctx context.Context, name string, fn func(int32, []backends.Message) error) error {
	s.st.mu.Lock()
	str, err := s.get(name)
	var snap [][]backends.Message
	if err == nil {
		snap = make([][]backends.Message, len(str.shards))
		for i, sh := range str.shards {
			snap[i] = sh[:len(sh):len(sh)] // stored messages are never modified
		}
	}
	s.st.mu.Unlock()
	if err != nil {
		return err
	}
	for shard, msgs := range snap {
		for len(msgs) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(len(msgs), 1000)
			if err := fn(int32(shard), msgs[:n]); err != nil {
				return err
			}
			msgs = msgs[n:]
		}
	}
	return nil
}

// group is a consumer group: its members share one delivery cursor per
// shard (so each message goes to one member: load-balanced reading), and
// its position is, per shard, the sequence before which every message is
// acknowledged (so a crash loses nothing: at-least-once).
type group struct {
	next    []int64          // per shard: the next message to hand to a member
	done    []int64          // per shard: everything before is acknowledged
	acked   []map[int64]bool // per shard: acknowledged at or after done
	retry   [][]int64        // per shard: to hand out again (a member left without acknowledging them)
	members int              // consumers open
	has     bool             // something was acknowledged: the group has a position
}

func newGroup(shards int) *group {
	g := &group{next: make([]int64, shards), done: make([]int64, shards), acked: make([]map[int64]bool, shards), retry: make([][]int64, shards)}
	for i := range g.acked {
		g.acked[i] = map[int64]bool{}
	}
	return g
}

// consumer reads every shard of one stream; pos[shard] is the sequence of
// the next message to deliver (a group's members share their group's).
type consumer struct {
	s      *Streamer
	name   string
	pos    []int64
	end    []int64          // not following: where to stop
	g      *group           // nil without a group
	unack  []map[int64]bool // group: delivered to this member, not acknowledged, per shard
	closed bool
}

// Consumer implements backends.Streamer. Without a group, or for a group
// without a position, the consumer starts at Start — or at StartTime,
// which replaces it: each shard's first message stamped at or after it.
// A group with a position resumes there.
func (s *Streamer) Consumer(_ context.Context, name string, o backends.ConsumerOptions) (backends.Consumer, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	str, err := s.get(name)
	if err != nil {
		return nil, err
	}
	start := make([]int64, len(str.shards))
	for i, sh := range str.shards {
		switch {
		case !o.StartTime.IsZero():
			start[i] = firstAt(sh, o.StartTime)
		case o.Start == backends.Latest:
			start[i] = int64(len(sh))
		}
	}
	c := &consumer{s: s, name: name, pos: start}
	if o.Group != "" {
		g := str.groups[o.Group]
		if g == nil {
			g = newGroup(len(str.shards))
			str.groups[o.Group] = g
		}
		if g.members == 0 { // the group (re)starts: from its position, else from start
			if !g.has {
				copy(g.done, start)
			}
			copy(g.next, g.done)
			clear(g.retry)
		}
		g.members++
		c.g, c.pos = g, g.next // the cursor is the group's
		c.unack = make([]map[int64]bool, len(str.shards))
		for i := range c.unack {
			c.unack[i] = map[int64]bool{}
		}
	}
	if !o.Follow {
		for _, sh := range str.shards {
			c.end = append(c.end, int64(len(sh)))
		}
	}
	return c, nil
}

// firstAt is the sequence of a shard's first message stamped at or after
// t (timestamps need not increase), or the shard's end.
func firstAt(sh []backends.Message, t time.Time) int64 {
	for j, m := range sh {
		if !m.Timestamp.Before(t) {
			return int64(j)
		}
	}
	return int64(len(sh))
}

// Read implements backends.Consumer: round-robin over shards, copies out.
func (c *consumer) Read(ctx context.Context, max int) ([]backends.Message, error) {
	st := c.s.st
	for {
		st.mu.Lock()
		str, err := c.s.get(c.name)
		if err != nil {
			st.mu.Unlock()
			return nil, err
		}
		var out []backends.Message
		for progress := true; progress && len(out) < max; {
			progress = false
			for i, sh := range str.shards {
				if len(out) == max {
					break
				}
				limit := int64(len(sh))
				if c.end != nil {
					limit = min(limit, c.end[i])
				}
				m, ok := c.take(i, sh, limit)
				if !ok {
					continue
				}
				progress = true
				m.Key, m.Payload = bytes.Clone(m.Key), bytes.Clone(m.Payload)
				out = append(out, m)
				if c.g != nil {
					c.unack[i][m.Sequence] = true
				}
			}
		}
		wake := st.changed
		st.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		if c.end != nil { // nothing left before the end present at open
			return nil, backends.ErrEndOfStream
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// take returns shard i's next message for this consumer before limit: in
// a group, first one a member left unacknowledged, then the cursor's
// (skipping what the group acknowledged out of order). The store lock is
// held.
func (c *consumer) take(i int, sh []backends.Message, limit int64) (backends.Message, bool) {
	g := c.g
	if g != nil {
		for len(g.retry[i]) > 0 && g.retry[i][0] < limit {
			seq := g.retry[i][0]
			g.retry[i] = g.retry[i][1:]
			if seq >= g.done[i] && !g.acked[i][seq] {
				return sh[seq], true
			}
		}
	}
	for c.pos[i] < limit {
		m := sh[c.pos[i]]
		c.pos[i]++
		if g == nil || !g.acked[i][m.Sequence] {
			return m, true
		}
	}
	return backends.Message{}, false
}

// Ack implements backends.Consumer: a shard's group position moves past
// every message acknowledged without a gap (by any member), so an
// unacknowledged message is delivered again to the group.
func (c *consumer) Ack(_ context.Context, msgs []backends.Message) error {
	g := c.g
	if g == nil || len(msgs) == 0 {
		return nil
	}
	c.s.st.mu.Lock()
	defer c.s.st.mu.Unlock()
	for _, m := range msgs {
		i := int(m.Shard)
		if i < 0 || i >= len(g.done) {
			continue
		}
		delete(c.unack[i], m.Sequence)
		if m.Sequence >= g.done[i] {
			g.acked[i][m.Sequence] = true
		}
		g.has = true
	}
	for i := range g.done {
		for g.acked[i][g.done[i]] {
			delete(g.acked[i], g.done[i])
			g.done[i]++
		}
	}
	return nil
}

// Close implements backends.Consumer: what this member was handed and did
// not acknowledge goes to the group's other members; with none left, the
// group's next consumer starts again at its position.
func (c *consumer) Close() error {
	c.s.st.mu.Lock()
	defer c.s.st.mu.Unlock()
	if c.closed || c.g == nil {
		c.closed = true
		return nil
	}
	c.closed = true
	g := c.g
	g.members--
	if g.members > 0 {
		for i, un := range c.unack {
			for seq := range un {
				g.retry[i] = append(g.retry[i], seq)
			}
			slices.Sort(g.retry[i])
			g.retry[i] = slices.Compact(g.retry[i])
		}
	}
	c.unack = nil
	return nil
}

// Seek implements backends.Seeker (sequences are indexes here). In a
// group it moves the group: its cursor and its position, for every member.
func (c *consumer) Seek(_ context.Context, seq int64) error {
	c.s.st.mu.Lock()
	defer c.s.st.mu.Unlock()
	for i := range c.pos {
		c.pos[i] = max(seq, 0)
	}
	c.reset()
	return nil
}

// SeekTime implements backends.Seeker: timestamps need not increase, so
// each shard skips to its first message at or after t.
func (c *consumer) SeekTime(_ context.Context, t time.Time) error {
	c.s.st.mu.Lock()
	defer c.s.st.mu.Unlock()
	str, err := c.s.get(c.name)
	if err != nil {
		return err
	}
	for i, sh := range str.shards {
		c.pos[i] = firstAt(sh, t)
	}
	c.reset()
	return nil
}

// reset forgets deliveries before a seek: a group's position is where the
// seek went.
func (c *consumer) reset() {
	if g := c.g; g != nil {
		copy(g.done, g.next)
		for i := range c.unack {
			clear(c.unack[i])
			clear(g.acked[i])
			g.retry[i] = nil
		}
	}
}
