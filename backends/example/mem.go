package example

import (
	"bytes"
	"context"
	"hash/fnv"
	"maps"
	"net/url"
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
	shards    [][]backends.Message       // index = Sequence
	groups    map[string]map[int32]int64 // group → shard → next sequence to deliver
	positions map[string]int64           // SendAt's positions
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
			groups:    map[string]map[int32]int64{},
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

// consumer reads every shard of one stream; pos[shard] is the sequence of
// the next message to deliver.
type consumer struct {
	s     *Streamer
	name  string
	o     backends.ConsumerOptions
	pos   []int64
	end   []int64          // not following: where to stop
	unack [][]int64        // group: delivered, not yet acknowledged, per shard (in order)
	acked []map[int64]bool // group: acknowledged out of order
}

// Consumer implements backends.Streamer.
func (s *Streamer) Consumer(_ context.Context, name string, o backends.ConsumerOptions) (backends.Consumer, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	str, err := s.get(name)
	if err != nil {
		return nil, err
	}
	c := &consumer{s: s, name: name, o: o, pos: make([]int64, len(str.shards))}
	stored := str.groups[o.Group]
	for i, sh := range str.shards {
		switch {
		case o.Group != "" && stored != nil:
			c.pos[i] = stored[int32(i)]
		case o.Start == backends.Latest:
			c.pos[i] = int64(len(sh))
		}
		if !o.Follow {
			c.end = append(c.end, int64(len(sh)))
		}
	}
	if o.Group != "" {
		c.unack = make([][]int64, len(str.shards))
		c.acked = make([]map[int64]bool, len(str.shards))
		for i := range c.acked {
			c.acked[i] = map[int64]bool{}
		}
	}
	return c, nil
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
		atEnd := true
		for progress := true; progress && len(out) < max; {
			progress = false
			for i, sh := range str.shards {
				limit := int64(len(sh))
				if c.end != nil {
					limit = min(limit, c.end[i])
				}
				if c.pos[i] >= limit {
					continue
				}
				atEnd = false
				if len(out) == max {
					break
				}
				m := sh[c.pos[i]]
				c.pos[i]++
				progress = true
				m.Key, m.Payload = bytes.Clone(m.Key), bytes.Clone(m.Payload)
				out = append(out, m)
				if c.unack != nil {
					c.unack[i] = append(c.unack[i], m.Sequence)
				}
			}
		}
		wake := st.changed
		st.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		if c.end != nil && atEnd {
			return nil, backends.ErrEndOfStream
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ack implements backends.Consumer: a shard's group position moves past
// every message acknowledged without a gap, so an unacknowledged message
// is delivered again to the group's next consumer.
func (c *consumer) Ack(_ context.Context, msgs []backends.Message) error {
	if c.unack == nil {
		return nil
	}
	st := c.s.st
	st.mu.Lock()
	defer st.mu.Unlock()
	str, err := c.s.get(c.name)
	if err != nil {
		return err
	}
	if str.groups[c.o.Group] == nil {
		str.groups[c.o.Group] = map[int32]int64{}
	}
	for _, m := range msgs {
		c.acked[m.Shard][m.Sequence] = true
	}
	for i := range c.unack {
		q := c.unack[i]
		for len(q) > 0 && c.acked[i][q[0]] {
			delete(c.acked[i], q[0])
			str.groups[c.o.Group][int32(i)] = q[0] + 1
			q = q[1:]
		}
		c.unack[i] = q
	}
	return nil
}

func (c *consumer) Close() error { return nil }

// Seek implements backends.Seeker (sequences are indexes here).
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
		c.pos[i] = int64(len(sh))
		for j, m := range sh {
			if !m.Timestamp.Before(t) {
				c.pos[i] = int64(j)
				break
			}
		}
	}
	c.reset()
	return nil
}

// reset forgets deliveries before a seek: they are no longer in order.
func (c *consumer) reset() {
	for i := range c.unack {
		c.unack[i] = nil
		clear(c.acked[i])
	}
}
