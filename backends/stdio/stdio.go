package stdio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

func init() {
	backends.Register("stdio", func(_ context.Context, u *url.URL, _ backends.Env) (backends.Streamer, error) {
		opts, err := parseOptions(u)
		if err != nil {
			return nil, err
		}
		return &Streamer{h: stdHub(), opts: opts}, nil
	})
}

// Framing says how a producer writes lines.
type Framing int

// Framings.
const (
	Framed Framing = iota // "[timestamp | stream | sequence | shard] payload"
	Plain                 // the payload alone
)

// Options configure a Streamer; from a URI, its query ("stdio://?framing=plain").
type Options struct {
	Framing Framing
}

func (o Options) validate() error {
	if o.Framing != Framed && o.Framing != Plain {
		return pgerror.New(pgerror.InvalidParameterValue, "stdio: unknown framing %d", o.Framing)
	}
	return nil
}

func parseOptions(u *url.URL) (Options, error) {
	var o Options
	if u.Host != "" || u.Path != "" && u.Path != "/" || u.Opaque != "" {
		return o, pgerror.New(pgerror.InvalidParameterValue, "stdio: the URI has no host or path: stdio:// or stdio://?framing=plain, not %q", u.String())
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "framing":
			switch v {
			case "framed", "":
				o.Framing = Framed
			case "plain":
				o.Framing = Plain
			default:
				return o, pgerror.New(pgerror.InvalidParameterValue, "stdio: framing must be framed or plain, not %q", v)
			}
		default:
			return o, pgerror.New(pgerror.InvalidParameterValue, "stdio: unknown option %q (options: framing)", k)
		}
	}
	return o, o.validate()
}

// Streamer is a handle on a hub: the process's stdin and stdout, or the
// reader and writer given to New.
type Streamer struct {
	h      *hub
	opts   Options
	owns   bool // Close closes the hub (New), not the process's stdio hub
	closed atomic.Bool
}

var _ backends.Streamer = (*Streamer)(nil)

// New returns a Streamer reading lines from r and writing lines to w
// (tests, or pipes of the caller's own). Close stops delivering from r,
// but the goroutine reading r ends only when a Read of r returns.
func New(r io.Reader, w io.Writer, opts Options) (*Streamer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Streamer{h: newHub(r, w), opts: opts, owns: true}, nil
}

var stdHub = sync.OnceValue(func() *hub { return newHub(os.Stdin, os.Stdout) })

// CreateStream implements backends.Streamer: streams are only names here.
func (s *Streamer) CreateStream(context.Context, backends.StreamSpec) error { return nil }

// DropStream implements backends.Streamer: nothing to drop.
func (s *Streamer) DropStream(context.Context, string) error { return nil }

// Close implements backends.Streamer.
func (s *Streamer) Close() error {
	if s.closed.CompareAndSwap(false, true) && s.owns {
		s.h.close()
	}
	return nil
}

// Producer implements backends.Streamer.
func (s *Streamer) Producer(context.Context) (backends.Producer, error) {
	return &producer{s: s}, nil
}

type producer struct{ s *Streamer }

// Send writes one line per message and flushes; it returns when the
// lines are written to the output (which is all "durable" means here).
// Lines of one Send are not interleaved with other Sends of the process.
func (p *producer) Send(_ context.Context, msgs []backends.Message) error {
	framed := p.s.opts.Framing == Framed
	for i := range msgs {
		if bytes.IndexByte(msgs[i].Payload, '\n') >= 0 {
			return pgerror.New(pgerror.InvalidParameterValue, "stdio: a payload may not contain a newline (message %d)", i)
		}
		if framed && !validStreamKey(msgs[i].Stream) {
			return pgerror.New(pgerror.InvalidParameterValue, "stdio: stream name %q cannot be framed (letters, digits, '.', '_', '-')", msgs[i].Stream)
		}
	}
	h := p.s.h
	h.wmu.Lock()
	defer h.wmu.Unlock()
	now := time.Now()
	for i := range msgs {
		m := &msgs[i]
		h.line = h.line[:0]
		if framed {
			ts := m.Timestamp
			if ts.IsZero() {
				ts = now
			}
			seq := h.seqs[m.Stream]
			h.seqs[m.Stream] = seq + 1
			h.line = appendFrame(h.line, ts, m.Stream, seq, m.Shard, m.Payload)
		} else {
			h.line = append(h.line, m.Payload...)
		}
		h.line = append(h.line, '\n')
		if _, err := h.bw.Write(h.line); err != nil {
			return pgerror.Wrap(err, pgerror.IOError, "stdio: write")
		}
	}
	if err := h.bw.Flush(); err != nil {
		return pgerror.Wrap(err, pgerror.IOError, "stdio: write")
	}
	return nil
}

func (p *producer) Close() error { return nil }

// Consumer implements backends.Streamer: a consumer of the input's lines
// for stream (framed lines of other streams go to their consumers; lines
// without a stream key go to every stream). Consumers with the same
// stream and Group take lines in turn (round-robin); consumers of
// different groups each get every line. Start makes no difference: the
// input is live, lines are read once. Follow makes none either: the input
// ends only at EOF, where Read returns ErrEndOfStream. StartTime is
// refused (0A000, backends.ErrCannotSeek): nothing is stored to seek in.
func (s *Streamer) Consumer(_ context.Context, stream string, o backends.ConsumerOptions) (backends.Consumer, error) {
	if s.closed.Load() {
		return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "stdio: the Streamer is closed")
	}
	if !o.StartTime.IsZero() {
		return nil, pgerror.Wrap(backends.ErrCannotSeek, pgerror.FeatureNotSupported,
			"stdio: a consumer cannot start at a time (StartTime): the input is read live and nothing is stored")
	}
	return s.h.subscribe(stream, o.Group), nil
}

var scanGroups atomic.Int64

// Scan reads the input until EOF, delivering the stream's lines as a
// group of its own (so it sees every line of the stream).
func (s *Streamer) Scan(ctx context.Context, stream string, fn func(int32, []backends.Message) error) error {
	c := s.h.subscribe(stream, fmt.Sprintf("\x00scan-%d", scanGroups.Add(1)))
	defer c.Close()
	for {
		msgs, err := c.Read(ctx, 1024)
		if errors.Is(err, backends.ErrEndOfStream) {
			return nil
		}
		if err != nil {
			return err
		}
		for len(msgs) > 0 { // batches of one shard
			n := 1
			for n < len(msgs) && msgs[n].Shard == msgs[0].Shard {
				n++
			}
			if err := fn(msgs[0].Shard, msgs[:n]); err != nil {
				return err
			}
			msgs = msgs[n:]
		}
	}
}

// ---------------------------------------------------------------- the hub

// hub owns one input and one output. One goroutine (started with the
// first consumer) reads the input line by line and hands each line to the
// consumers it is for, round-robin within each (stream, group); it waits
// while the consumer whose turn it is has a full queue, and while no
// consumer exists at all (lines are not read before someone can take them).
type hub struct {
	r io.Reader

	wmu  sync.Mutex // the output
	bw   *bufio.Writer
	seqs map[string]int64
	line []byte

	mu        sync.Mutex
	cond      *sync.Cond // the reader waits for space or consumers
	started   bool
	rings     map[subKey]*ring
	consumers int
	done      bool  // EOF, error or closed: no more lines
	err       error // the input's error (not EOF)
	closed    bool
}

type subKey struct{ stream, group string }

type ring struct {
	members []*consumer
	next    int
}

const queueLimit = 4096 // lines waiting per consumer

func newHub(r io.Reader, w io.Writer) *hub {
	h := &hub{r: r, bw: bufio.NewWriterSize(w, 64<<10), seqs: map[string]int64{}, rings: map[subKey]*ring{}}
	h.cond = sync.NewCond(&h.mu)
	return h
}

func (h *hub) close() {
	h.mu.Lock()
	h.closed, h.done = true, true
	h.wakeAll()
	h.mu.Unlock()
}

// wakeAll wakes the reader and every consumer; h.mu is held.
func (h *hub) wakeAll() {
	h.cond.Broadcast()
	for _, r := range h.rings {
		for _, c := range r.members {
			c.wake()
		}
	}
}

func (h *hub) subscribe(stream, group string) *consumer {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := subKey{stream, group}
	c := &consumer{h: h, key: k, notify: make(chan struct{}, 1)}
	r := h.rings[k]
	if r == nil {
		r = &ring{}
		h.rings[k] = r
	}
	r.members = append(r.members, c)
	h.consumers++
	if !h.started {
		h.started = true
		go h.readLoop()
	}
	h.cond.Broadcast()
	return c
}

func (h *hub) readLoop() {
	br := bufio.NewReaderSize(h.r, 64<<10)
	var lineNo int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\r"))
			h.dispatch(line, lineNo)
		}
		if err != nil {
			h.mu.Lock()
			if !errors.Is(err, io.EOF) {
				h.err = err
			}
			h.done = true
			h.wakeAll()
			h.mu.Unlock()
			return
		}
	}
}

// dispatch delivers one input line.
func (h *hub) dispatch(line []byte, lineNo int64) {
	m, payload, framed := parseLine(line)
	if !framed && len(payload) == 0 {
		return // a blank plain line is no message
	}
	msg := backends.Message{Sequence: lineNo, Timestamp: time.Now().UTC(), Payload: payload}
	if framed {
		if !m.ts.IsZero() {
			msg.Timestamp = m.ts
		}
		if m.hasSeq {
			msg.Sequence = m.seq
		}
		msg.Shard = m.shard
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.consumers == 0 && !h.closed {
		h.cond.Wait()
	}
	delivered := 0
	for k, r := range h.rings {
		if m.stream != "" && k.stream != m.stream {
			continue
		}
		for len(r.members) > 0 && !h.closed {
			c := r.members[r.next%len(r.members)]
			if len(c.q) < queueLimit {
				msg.Stream = k.stream
				if delivered > 0 { // each group owns its copy
					msg.Payload = bytes.Clone(payload)
				}
				delivered++
				c.q = append(c.q, msg)
				r.next++
				c.wake()
				break
			}
			h.cond.Wait() // a reader makes room, or leaves
			if h.rings[k] != r {
				break // the ring went away meanwhile
			}
		}
	}
}

// consumer is one subscriber of a hub.
type consumer struct {
	h      *hub
	key    subKey
	q      []backends.Message
	notify chan struct{}
	closed bool
}

var _ backends.Consumer = (*consumer)(nil)

func (c *consumer) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Read implements backends.Consumer.
func (c *consumer) Read(ctx context.Context, max int) ([]backends.Message, error) {
	h := c.h
	for {
		h.mu.Lock()
		if c.closed {
			h.mu.Unlock()
			return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "stdio: consumer closed")
		}
		if len(c.q) > 0 {
			n := min(max, len(c.q))
			out := make([]backends.Message, n)
			copy(out, c.q)
			c.q = c.q[n:]
			if len(c.q) == 0 {
				c.q = nil
			}
			h.cond.Broadcast()
			h.mu.Unlock()
			return out, nil
		}
		if h.done {
			err := h.err
			h.mu.Unlock()
			if err != nil {
				return nil, pgerror.Wrap(err, pgerror.IOError, "stdio: read")
			}
			return nil, backends.ErrEndOfStream
		}
		h.mu.Unlock()
		select {
		case <-c.notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ack implements backends.Consumer: lines are delivered at most once;
// there is nothing to confirm.
func (c *consumer) Ack(context.Context, []backends.Message) error { return nil }

// Close implements backends.Consumer: lines already handed to this
// consumer and not read go to the others of its ring (else are lost).
func (c *consumer) Close() error {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	h.consumers--
	r := h.rings[c.key]
	for i, m := range r.members {
		if m == c {
			r.members = append(r.members[:i], r.members[i+1:]...)
			break
		}
	}
	if len(r.members) == 0 {
		delete(h.rings, c.key)
	} else {
		for _, msg := range c.q {
			o := r.members[r.next%len(r.members)]
			o.q = append(o.q, msg)
			r.next++
			o.wake()
		}
	}
	c.q = nil
	h.cond.Broadcast()
	return nil
}
