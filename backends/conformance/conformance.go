package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// Caps says which parts of the contract a backend provides; the suite
// skips (and names) the subtests of abilities a backend lacks.
type Caps struct {
	// Shards: CreateStream honours StreamSpec.Shards > 1 and every keyed
	// message of one key lands in one shard. Without it the suite creates
	// one-shard streams and checks the global send order.
	Shards bool
	// Keys: Message.Key comes back byte for byte (stdio lines carry none).
	Keys bool
	// BinaryPayloads: payloads may hold any byte, '\n' and invalid UTF-8
	// included (line-framed backends cannot carry '\n').
	BinaryPayloads bool
	// Timestamps: a Timestamp set by the producer (whole milliseconds, the
	// coarsest precision of the backends: Kafka's) comes back equal.
	Timestamps bool
	// Bounded: a consumer that does not Follow stops with ErrEndOfStream at
	// the end present when it opened, and Scan returns once it has read
	// what the stream held when Scan began. stdio's input ends only at EOF,
	// so it is false there and the suite reads exact counts instead.
	Bounded bool
	// Replay: reading does not consume: a second consumer without a group
	// (and Scan) reads the same messages again from the start.
	Replay bool
	// Durable: messages, group positions and SendAt positions survive
	// closing the Streamer and opening a new one with the same open func.
	Durable bool
	// ExactEnd: a consumer that does not Follow delivers nothing produced
	// after it opened, whatever max its Reads ask for (Bounded promises
	// only that it stops; without ExactEnd the EndAtOpen subtest logs the
	// extra messages as a known deviation).
	ExactEnd bool
	// Latest: a consumer with Start: Latest sees only messages produced
	// after it opened.
	Latest bool
	// Groups: a consumer group remembers what it acknowledged: a new
	// consumer of the group resumes after it, a consumer of another group
	// starts from its Start.
	Groups bool
	// CrashRedelivery: messages a group consumer read but did not
	// acknowledge before it went away (closed without Ack: the "crash")
	// are delivered again to the next consumer of the group — and the
	// acknowledged ones are not. Needs Groups.
	CrashRedelivery bool
	// PartialAck: Ack(msgs) confirms exactly msgs. Kafka's consumer
	// commits everything read so far on any Ack, so there the crash test
	// acknowledges whole Read batches instead of a part of one.
	PartialAck bool
	// Seek: consumers implement backends.Seeker (by sequence and by time).
	Seek bool
	// StartTime: ConsumerOptions.StartTime is honoured: a consumer without
	// a group, or of a group without a position, begins at the first
	// message with Timestamp >= StartTime (whatever Start says); a group
	// with a position resumes there and ignores it.
	StartTime bool
	// RefusesStartTime: the backend cannot start a consumer at a time and
	// says so: Consumer with StartTime set fails with an error wrapping
	// backends.ErrCannotSeek, SQLSTATE 0A000 (stdio://: nothing is
	// stored). A backend with neither StartTime nor RefusesStartTime
	// skips the StartTime subtest.
	RefusesStartTime bool
	// Realtime (reading mode "realtime"): consumers without a group each
	// read every message of the stream. stdio:// is false: there,
	// consumers without a group take lines in turn like the members of one
	// group (the seed's behaviour), and only separate groups each get
	// every line.
	Realtime bool
	// SharedGroups (reading mode "load-balanced"): the members of one
	// group share the stream's messages: together they read every message
	// exactly once. file:// is false: a group there is a remembered
	// position with one consumer at a time.
	SharedGroups bool
	// Positioned: producers implement backends.PositionedProducer.
	Positioned bool
	// ThroughputN is the message count of the throughput subtest (100-byte
	// payloads, produced, then consumed); 0 skips it.
	ThroughputN int
	// ThroughputBatch is the number of messages per Send there (default 1000).
	ThroughputBatch int
}

// Run runs the suite against the Streamers open returns. open is called
// once per subtest (and again where the suite checks durability across
// reopening); the suite closes what it opens.
func Run(t *testing.T, open func(t *testing.T) backends.Streamer, caps Caps) {
	if caps.CrashRedelivery && !caps.Groups {
		t.Fatal("conformance: CrashRedelivery needs Groups")
	}
	if caps.StartTime && caps.RefusesStartTime {
		t.Fatal("conformance: StartTime and RefusesStartTime exclude each other")
	}
	s := &suite{open: open, caps: caps}
	t.Run("OpenClose", s.openClose)
	t.Run("RoundTrip", s.roundTrip)
	t.Run("OrderedPerShard", s.ordered)
	t.Run("Follow", s.follow)
	t.Run("EndAtOpen", s.endAtOpen)
	t.Run("Replay", s.replay)
	t.Run("GroupResume", s.groupResume)
	t.Run("CrashRedelivery", s.crashRedelivery)
	t.Run("Seek", s.seek)
	t.Run("StartTime", s.startTime)
	t.Run("Modes", func(t *testing.T) {
		t.Run("Realtime", s.realtime)
		t.Run("LoadBalanced", s.loadBalanced)
	})
	t.Run("Positioned", s.positioned)
	t.Run("Throughput", s.throughput)
}

type suite struct {
	open func(t *testing.T) backends.Streamer
	caps Caps
}

// need skips the test unless every named capability is present.
func need(t *testing.T, have bool, name string) {
	t.Helper()
	if !have {
		t.Skipf("backend lacks capability %s", name)
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// streamName is a fresh stream name for one subtest.
func streamName(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.ToLower(t.Name())
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return "conf-" + name + "-" + hex.EncodeToString(b[:])
}

// openStreamer opens a Streamer closed when the test ends (Close twice is
// avoided: closeNow marks it closed).
type handle struct {
	backends.Streamer
	closed bool
}

func (s *suite) openStreamer(t *testing.T) *handle {
	t.Helper()
	st := s.open(t)
	if st == nil {
		t.Fatal("open returned a nil Streamer")
	}
	h := &handle{Streamer: st}
	t.Cleanup(func() {
		if !h.closed {
			_ = h.Close()
		}
	})
	return h
}

func (h *handle) closeNow(t *testing.T) {
	t.Helper()
	h.closed = true
	if err := h.Close(); err != nil {
		t.Fatalf("Streamer.Close: %v", err)
	}
}

// create makes a stream dropped when the test ends.
func (s *suite) create(t *testing.T, st *handle, shards int) string {
	t.Helper()
	name := streamName(t)
	ctx := ctxFor(t, 60*time.Second)
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: name, Shards: shards}); err != nil {
		t.Fatalf("CreateStream(%s): %v", name, err)
	}
	t.Cleanup(func() {
		var dropper backends.Streamer = st
		if st.closed { // reopened meanwhile
			dropper = s.open(t)
			defer dropper.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropper.DropStream(ctx, name); err != nil {
			t.Errorf("DropStream(%s): %v", name, err)
		}
	})
	return name
}

func producer(t *testing.T, ctx context.Context, st backends.Streamer) backends.Producer {
	t.Helper()
	p, err := st.Producer(ctx)
	if err != nil {
		t.Fatalf("Producer: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func send(t *testing.T, ctx context.Context, p backends.Producer, msgs []backends.Message) {
	t.Helper()
	if err := p.Send(ctx, msgs); err != nil {
		t.Fatalf("Send of %d messages: %v", len(msgs), err)
	}
}

func consumer(t *testing.T, ctx context.Context, st backends.Streamer, stream string, o backends.ConsumerOptions) backends.Consumer {
	t.Helper()
	c, err := st.Consumer(ctx, stream, o)
	if err != nil {
		t.Fatalf("Consumer(%s, %+v): %v", stream, o, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readN reads until at least n messages arrived (it may return more).
func readN(t *testing.T, ctx context.Context, c backends.Consumer, n, max int) []backends.Message {
	t.Helper()
	var out []backends.Message
	for len(out) < n {
		msgs, err := c.Read(ctx, max)
		if err != nil {
			t.Fatalf("Read after %d of %d messages: %v", len(out), n, err)
		}
		if len(msgs) > max {
			t.Fatalf("Read(max=%d) returned %d messages", max, len(msgs))
		}
		out = append(out, msgs...)
	}
	return out
}

// readToEnd reads until ErrEndOfStream (bounded backends only).
func readToEnd(t *testing.T, ctx context.Context, c backends.Consumer, max int) []backends.Message {
	t.Helper()
	var out []backends.Message
	for {
		msgs, err := c.Read(ctx, max)
		if errors.Is(err, backends.ErrEndOfStream) {
			if len(msgs) != 0 {
				t.Fatalf("Read returned %d messages with ErrEndOfStream", len(msgs))
			}
			return out
		}
		if err != nil {
			t.Fatalf("Read after %d messages: %v", len(out), err)
		}
		if len(msgs) > max {
			t.Fatalf("Read(max=%d) returned %d messages", max, len(msgs))
		}
		out = append(out, msgs...)
	}
}

// readAll reads the n messages a stream holds: to ErrEndOfStream (and
// checks the count) where the backend is bounded, else exactly n.
func (s *suite) readAll(t *testing.T, ctx context.Context, c backends.Consumer, n int) []backends.Message {
	t.Helper()
	var out []backends.Message
	if s.caps.Bounded {
		out = readToEnd(t, ctx, c, 1000)
	} else {
		out = readN(t, ctx, c, n, 1000)
	}
	if len(out) != n {
		t.Fatalf("read %d messages, want %d", len(out), n)
	}
	return out
}

// expectQuiet checks that no message arrives within d (or the consumer
// says the stream ended).
func expectQuiet(t *testing.T, c backends.Consumer, d time.Duration, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	msgs, err := c.Read(ctx, 100)
	if len(msgs) > 0 {
		t.Fatalf("%s: got %d unexpected messages, first %q", what, len(msgs), msgs[0].Payload)
	}
	if err == nil {
		t.Fatalf("%s: Read returned no messages and no error", what)
	}
	if !errors.Is(err, backends.ErrEndOfStream) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: Read: %v", what, err)
	}
}

func scanAll(t *testing.T, ctx context.Context, st backends.Streamer, stream string) map[int32][]backends.Message {
	t.Helper()
	out := map[int32][]backends.Message{}
	var mu sync.Mutex // calls for different shards may run concurrently
	err := st.Scan(ctx, stream, func(shard int32, batch []backends.Message) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range batch {
			if m.Shard != shard {
				return fmt.Errorf("message of shard %d in a batch of shard %d", m.Shard, shard)
			}
			// Messages are valid only during the call: keep copies.
			m.Key = bytes.Clone(m.Key)
			m.Payload = bytes.Clone(m.Payload)
			out[shard] = append(out[shard], m)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%s): %v", stream, err)
	}
	return out
}

// payloads returns the payloads as strings.
func payloads(msgs []backends.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Payload)
	}
	return out
}

func textMsgs(stream string, prefix string, from, to int) []backends.Message {
	var out []backends.Message
	for i := from; i < to; i++ {
		out = append(out, backends.Message{Stream: stream, Payload: fmt.Appendf(nil, "%s-%06d", prefix, i)})
	}
	return out
}

func wantPayloads(t *testing.T, got []backends.Message, prefix string, from, to int) {
	t.Helper()
	if len(got) != to-from {
		t.Fatalf("got %d messages, want %d (%s %d..%d): %q", len(got), to-from, prefix, from, to, head(payloads(got)))
	}
	for i, m := range got {
		if want := fmt.Sprintf("%s-%06d", prefix, from+i); string(m.Payload) != want {
			t.Fatalf("message %d: payload %q, want %q", i, m.Payload, want)
		}
	}
}

func head(s []string) []string {
	if len(s) > 8 {
		return append(s[:8:8], "…")
	}
	return s
}

// checkSequences checks that sequences increase within each shard.
func checkSequences(t *testing.T, msgs []backends.Message) {
	t.Helper()
	last := map[int32]int64{}
	for i, m := range msgs {
		if prev, ok := last[m.Shard]; ok && m.Sequence <= prev {
			t.Fatalf("message %d (shard %d): sequence %d after %d", i, m.Shard, m.Sequence, prev)
		}
		last[m.Shard] = m.Sequence
	}
}

// ---------------------------------------------------------------- subtests

func (s *suite) openClose(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	st := s.openStreamer(t)
	name := streamName(t)
	spec := backends.StreamSpec{Name: name, Shards: 1}
	if err := st.CreateStream(ctx, spec); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	if err := st.CreateStream(ctx, spec); err != nil {
		t.Fatalf("CreateStream of an existing stream: %v", err)
	}
	if err := st.DropStream(ctx, streamName(t)); err != nil {
		t.Fatalf("DropStream of a missing stream: %v", err)
	}
	p, err := st.Producer(ctx)
	if err != nil {
		t.Fatalf("Producer: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Producer.Close: %v", err)
	}
	if err := st.DropStream(ctx, name); err != nil {
		t.Fatalf("DropStream: %v", err)
	}
	if err := st.DropStream(ctx, name); err != nil {
		t.Fatalf("DropStream twice: %v", err)
	}
	st.closeNow(t)
}

func (s *suite) roundTrip(t *testing.T) {
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(678 * time.Millisecond)
	big := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // spans several file blocks
	msgs := []backends.Message{
		{Payload: []byte(`{"a":1}`)},
		{Key: []byte("k1"), Payload: []byte(`{"a":2,"s":"ünïcödé"}`)},
		{Key: []byte("k2"), Payload: []byte{}},
		{Key: []byte("k with spaces | and ]"), Payload: []byte("plain text [x] | y")},
		{Payload: big},
		{Key: []byte("k1"), Payload: []byte(`{"a":3}`)},
	}
	if s.caps.BinaryPayloads {
		bin := make([]byte, 256)
		for i := range bin {
			bin[i] = byte(i)
		}
		msgs = append(msgs,
			backends.Message{Key: []byte{0, 1, 2, 0xff}, Payload: bin},
			backends.Message{Payload: []byte("two\nlines\r\n")})
	}
	for i := range msgs {
		msgs[i].Stream = name
		msgs[i].Timestamp = base.Add(time.Duration(i) * time.Second)
	}
	p := producer(t, ctx, st)
	send(t, ctx, p, msgs)

	check := func(what string, got []backends.Message) {
		t.Helper()
		if len(got) != len(msgs) {
			t.Fatalf("%s: %d messages, want %d", what, len(got), len(msgs))
		}
		for i, m := range got {
			w := msgs[i]
			if m.Stream != name {
				t.Errorf("%s: message %d: Stream %q, want %q", what, i, m.Stream, name)
			}
			if m.Shard != 0 {
				t.Errorf("%s: message %d: Shard %d in a one-shard stream", what, i, m.Shard)
			}
			if !bytes.Equal(m.Payload, w.Payload) {
				t.Errorf("%s: message %d: payload %q (%d bytes), want %q (%d bytes)", what, i, trunc(m.Payload), len(m.Payload), trunc(w.Payload), len(w.Payload))
			}
			if s.caps.Keys && !bytes.Equal(m.Key, w.Key) {
				t.Errorf("%s: message %d: key %q, want %q", what, i, m.Key, w.Key)
			}
			if s.caps.Timestamps && !m.Timestamp.Equal(w.Timestamp) {
				t.Errorf("%s: message %d: timestamp %s, want %s", what, i, m.Timestamp.UTC().Format(time.RFC3339Nano), w.Timestamp.Format(time.RFC3339Nano))
			}
			if !s.caps.Timestamps && m.Timestamp.IsZero() {
				t.Errorf("%s: message %d: zero timestamp", what, i)
			}
		}
		checkSequences(t, got)
	}

	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	got := s.readAll(t, ctx, c, len(msgs))
	// The caller owns returned messages: scribbling on them must not
	// change anything the backend returns later (checked by Scan below).
	check("Consumer", got)
	for _, m := range got {
		for i := range m.Payload {
			m.Payload[i] = 'X'
		}
	}
	if s.caps.Bounded {
		sc := scanAll(t, ctx, st, name)
		check("Scan", sc[0])
	}
	if s.caps.Replay {
		c2 := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
		check("second Consumer", s.readAll(t, ctx, c2, len(msgs)))
	}
}

func trunc(b []byte) []byte {
	if len(b) > 40 {
		return append(b[:40:40], "…"...)
	}
	return b
}

func (s *suite) ordered(t *testing.T) {
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	shards := 1
	if s.caps.Shards {
		shards = 4
	}
	name := s.create(t, st, shards)
	p := producer(t, ctx, st)
	const keys, sends, perSend = 8, 4, 250
	next := make([]int, keys)
	var sent []string
	for range sends {
		var batch []backends.Message
		for i := range perSend {
			k := (i*5 + i/7) % keys
			batch = append(batch, backends.Message{
				Stream: name, Key: fmt.Appendf(nil, "key-%d", k),
				Payload: fmt.Appendf(nil, "key-%d:%06d", k, next[k]),
			})
			sent = append(sent, string(batch[len(batch)-1].Payload))
			next[k]++
		}
		send(t, ctx, p, batch)
	}
	total := sends * perSend

	check := func(what string, got []backends.Message) {
		t.Helper()
		if len(got) != total {
			t.Fatalf("%s: %d messages, want %d", what, len(got), total)
		}
		checkSequences(t, got)
		shardOf := map[string]int32{}
		seen := map[string]int{}
		for i, m := range got {
			k, n, ok := strings.Cut(string(m.Payload), ":")
			if !ok {
				t.Fatalf("%s: message %d: payload %q", what, i, m.Payload)
			}
			if m.Shard < 0 || int(m.Shard) >= shards {
				t.Fatalf("%s: message %d: shard %d of a %d-shard stream", what, i, m.Shard, shards)
			}
			if sh, ok := shardOf[k]; ok && sh != m.Shard {
				t.Fatalf("%s: key %s in shards %d and %d", what, k, sh, m.Shard)
			}
			shardOf[k] = m.Shard
			idx, _ := strconv.Atoi(n)
			if idx != seen[k] {
				t.Fatalf("%s: key %s: message %d arrived where %d was due (per-key order broken)", what, k, idx, seen[k])
			}
			seen[k]++
		}
		if shards == 1 {
			if g := payloads(got); !equalStrings(g, sent) {
				t.Fatalf("%s: one-shard order differs from the send order", what)
			}
		}
	}
	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	got := s.readAll(t, ctx, c, total)
	check("Consumer", got)
	if s.caps.Bounded {
		sc := scanAll(t, ctx, st, name)
		var all []backends.Message
		for sh := range int32(shards) {
			all = append(all, sc[sh]...)
		}
		// Per shard the Scan order must be the consumer's order.
		byShard := map[int32][]string{}
		for _, m := range got {
			byShard[m.Shard] = append(byShard[m.Shard], string(m.Payload))
		}
		for sh, ms := range sc {
			if !equalStrings(payloads(ms), byShard[sh]) {
				t.Fatalf("Scan: shard %d order differs from the consumer's", sh)
			}
		}
		check("Scan", all)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s *suite) follow(t *testing.T) {
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	p := producer(t, ctx, st)
	send(t, ctx, p, textMsgs(name, "f", 0, 10))
	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest, Follow: true})
	wantPayloads(t, readN(t, ctx, c, 10, 100), "f", 0, 10)
	// Following: at the end Read waits (no ErrEndOfStream)…
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	msgs, err := c.Read(short, 100)
	cancel()
	if len(msgs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("following consumer at the end: Read = %d messages, %v; want none and context.DeadlineExceeded", len(msgs), err)
	}
	// …and gets what is produced while it waits.
	done := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		done <- p.Send(ctx, textMsgs(name, "f", 10, 20))
	}()
	wantPayloads(t, readN(t, ctx, c, 10, 100), "f", 10, 20)
	if err := <-done; err != nil {
		t.Fatalf("Send while following: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Consumer.Close: %v", err)
	}

	if !s.caps.Latest {
		t.Log("skipping Start: Latest (backend lacks capability Latest)")
		return
	}
	cl := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Latest, Follow: true})
	expectQuiet(t, cl, 500*time.Millisecond, "Start: Latest before new messages")
	send(t, ctx, p, textMsgs(name, "f", 20, 25))
	wantPayloads(t, readN(t, ctx, cl, 5, 100), "f", 20, 25)
}

func (s *suite) endAtOpen(t *testing.T) {
	need(t, s.caps.Bounded, "Bounded")
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	empty := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	if msgs, err := empty.Read(ctx, 10); len(msgs) != 0 || !errors.Is(err, backends.ErrEndOfStream) {
		t.Fatalf("non-following consumer of an empty stream: %d messages, %v; want ErrEndOfStream", len(msgs), err)
	}
	p := producer(t, ctx, st)
	send(t, ctx, p, textMsgs(name, "e", 0, 10))
	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	send(t, ctx, p, textMsgs(name, "e", 10, 15)) // after open: not part of this read
	got := readToEnd(t, ctx, c, 3)
	if s.caps.ExactEnd {
		wantPayloads(t, got, "e", 0, 10)
	} else {
		if len(got) < 10 {
			t.Fatalf("read %d messages before the end, want at least the 10 present at open", len(got))
		}
		wantPayloads(t, got[:10], "e", 0, 10)
		if len(got) > 10 {
			t.Logf("known deviation (ExactEnd false): %d messages produced after open were delivered", len(got)-10)
		}
	}
	if _, err := c.Read(ctx, 10); !errors.Is(err, backends.ErrEndOfStream) {
		t.Fatalf("Read after the end: %v, want ErrEndOfStream again", err)
	}
	sc := scanAll(t, ctx, st, name)
	wantPayloads(t, sc[0], "e", 0, 15)
}

func (s *suite) replay(t *testing.T) {
	need(t, s.caps.Replay, "Replay")
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	p := producer(t, ctx, st)
	send(t, ctx, p, textMsgs(name, "r", 0, 100))
	// A consumer without a group reads part, then goes away (stores no
	// position): the next one reads everything again.
	c1 := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	readN(t, ctx, c1, 30, 30)
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	first := s.readAll(t, ctx, c2, 100)
	wantPayloads(t, first, "r", 0, 100)
	if s.caps.Bounded {
		wantPayloads(t, scanAll(t, ctx, st, name)[0], "r", 0, 100)
	}
	if !s.caps.Durable {
		return
	}
	st.closeNow(t)
	st2 := s.openStreamer(t)
	c3 := consumer(t, ctx, st2, name, backends.ConsumerOptions{Start: backends.Earliest})
	again := s.readAll(t, ctx, c3, 100)
	wantPayloads(t, again, "r", 0, 100)
	for i := range again {
		if again[i].Sequence != first[i].Sequence {
			t.Fatalf("after reopening: message %d has sequence %d, was %d", i, again[i].Sequence, first[i].Sequence)
		}
	}
}

func (s *suite) groupResume(t *testing.T) {
	need(t, s.caps.Groups, "Groups")
	ctx := ctxFor(t, 180*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	group := streamName(t)
	p := producer(t, ctx, st)
	send(t, ctx, p, textMsgs(name, "g", 0, 40))
	c1 := consumer(t, ctx, st, name, backends.ConsumerOptions{Group: group, Member: "m1", Start: backends.Earliest})
	got := readN(t, ctx, c1, 10, 10)
	wantPayloads(t, got, "g", 0, len(got))
	if err := c1.Ack(ctx, got); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	if s.caps.Durable {
		st.closeNow(t)
		st = s.openStreamer(t)
	}
	c2 := consumer(t, ctx, st, name, backends.ConsumerOptions{Group: group, Member: "m2", Start: backends.Earliest})
	rest := s.readAll(t, ctx, c2, 40-len(got))
	wantPayloads(t, rest, "g", len(got), 40)
	// Another group starts from its Start.
	other := consumer(t, ctx, st, name, backends.ConsumerOptions{Group: group + "-other", Member: "m1", Start: backends.Earliest})
	wantPayloads(t, s.readAll(t, ctx, other, 40), "g", 0, 40)
}

func (s *suite) crashRedelivery(t *testing.T) {
	need(t, s.caps.CrashRedelivery, "CrashRedelivery")
	ctx := ctxFor(t, 180*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	group := streamName(t)
	p := producer(t, ctx, st)
	const n = 100
	send(t, ctx, p, textMsgs(name, "c", 0, n))

	c1 := consumer(t, ctx, st, name, backends.ConsumerOptions{Group: group, Member: "m1", Start: backends.Earliest})
	var read, acked []backends.Message
	for len(read) < 30 {
		msgs, err := c1.Read(ctx, 10)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		read = append(read, msgs...)
		if len(read) < 30 {
			// Whole Read batches acknowledged…
			if err := c1.Ack(ctx, msgs); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			acked = append(acked, msgs...)
		} else if s.caps.PartialAck && len(msgs) > 1 {
			// …and, where Ack is exact, the first half of the last one.
			half := msgs[:len(msgs)/2]
			if err := c1.Ack(ctx, half); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			acked = append(acked, half...)
		}
	}
	// The crash: the consumer goes away without acknowledging the rest.
	if err := c1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantPayloads(t, read, "c", 0, len(read))
	c2 := consumer(t, ctx, st, name, backends.ConsumerOptions{Group: group, Member: "m2", Start: backends.Earliest})
	again := s.readAll(t, ctx, c2, n-len(acked))
	// Every unacknowledged message again, in order, and no acknowledged one.
	wantPayloads(t, again, "c", len(acked), n)
	t.Logf("read %d, acknowledged %d, redelivered %d", len(read), len(acked), len(again))
	if err := c2.Ack(ctx, again); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	c3 := consumer(t, ctx, st, name, backends.ConsumerOptions{Group: group, Member: "m3", Start: backends.Earliest})
	expectQuiet(t, c3, 3*time.Second, "group consumer after everything was acknowledged")
}

func (s *suite) seek(t *testing.T) {
	need(t, s.caps.Seek, "Seek")
	ctx := ctxFor(t, 180*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	p := producer(t, ctx, st)
	const n = 2000
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var msgs []backends.Message
	for i := range n {
		msgs = append(msgs, backends.Message{
			Stream: name, Timestamp: base.Add(time.Duration(i) * 10 * time.Millisecond),
			Payload: fmt.Appendf(nil, "s-%06d-%s", i, strings.Repeat("x", 80)),
		})
	}
	for i := 0; i < n; i += 250 {
		send(t, ctx, p, msgs[i:i+250])
	}
	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	all := s.readAll(t, ctx, c, n)
	seqs := make([]int64, n)
	for i, m := range all {
		seqs[i] = m.Sequence
	}
	sk, ok := c.(backends.Seeker)
	if !ok {
		t.Fatalf("consumer %T does not implement backends.Seeker", c)
	}
	index := func(m backends.Message) int {
		i, err := strconv.Atoi(string(m.Payload[2:8]))
		if err != nil {
			t.Fatalf("payload %q", m.Payload)
		}
		return i
	}
	expectAt := func(what string, want int) {
		t.Helper()
		msgs, err := c.Read(ctx, 5)
		if want == n {
			if s.caps.Bounded && !errors.Is(err, backends.ErrEndOfStream) {
				t.Fatalf("%s: Read = %d messages, %v; want ErrEndOfStream", what, len(msgs), err)
			}
			return
		}
		if err != nil || len(msgs) == 0 {
			t.Fatalf("%s: Read = %d messages, %v", what, len(msgs), err)
		}
		if got := index(msgs[0]); got != want {
			t.Fatalf("%s: first message %d, want %d", what, got, want)
		}
		for j, m := range msgs {
			if index(m) != want+j {
				t.Fatalf("%s: message %d after the seek is %d, want %d", what, j, index(m), want+j)
			}
		}
	}
	for _, i := range []int{1234, 0, 1, n - 1, 999, 17, 1500} {
		if err := sk.Seek(ctx, seqs[i]); err != nil {
			t.Fatalf("Seek(%d): %v", seqs[i], err)
		}
		expectAt(fmt.Sprintf("Seek(seq of %d)", i), i)
	}
	if err := sk.Seek(ctx, seqs[n-1]+1); err != nil {
		t.Fatalf("Seek past the end: %v", err)
	}
	expectAt("Seek past the end", n)
	if err := sk.Seek(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectAt("Seek(0)", 0)
	// Expectations come from the timestamps read back (a backend may
	// assign its own, and several messages may share one): SeekTime(t)
	// moves to the first message, in stream order, with Timestamp >= t.
	firstAt := func(ts time.Time) int {
		for j, m := range all {
			if !m.Timestamp.Before(ts) {
				return j
			}
		}
		return n
	}
	for _, i := range []int{777, 0, n - 1, 1, 1999, 640} {
		for _, d := range []time.Duration{0, 5 * time.Millisecond} {
			ts := all[i].Timestamp.Add(d)
			if err := sk.SeekTime(ctx, ts); err != nil {
				t.Fatalf("SeekTime: %v", err)
			}
			expectAt(fmt.Sprintf("SeekTime(time of %d + %s)", i, d), firstAt(ts))
		}
	}
	if err := sk.SeekTime(ctx, all[0].Timestamp.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	expectAt("SeekTime(before the first)", 0)
	if err := sk.SeekTime(ctx, all[n-1].Timestamp.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	expectAt("SeekTime(after the last)", n)
	// Replay from the start after a seek reads everything in order.
	if err := sk.Seek(ctx, seqs[0]); err != nil {
		t.Fatal(err)
	}
	if s.caps.Bounded {
		got := readToEnd(t, ctx, c, 500)
		if len(got) != n || index(got[0]) != 0 || index(got[n-1]) != n-1 {
			t.Fatalf("replay after Seek: %d messages", len(got))
		}
	}
}

// bursts produces two bursts of messages into a fresh stream of the given
// shards: n1 "a-…" then n2 "b-…" (keyed over 16 keys where there are
// several shards). With Caps.Timestamps they carry explicit timestamps,
// the second burst five minutes after the first; else the backend stamps
// them and the bursts are 100 ms apart. mid lies between the bursts;
// first2 is the second burst's first timestamp and last the greatest.
type burstStream struct {
	name              string
	mid, first2, last time.Time
	explicit          bool
}

func (s *suite) bursts(t *testing.T, ctx context.Context, st *handle, p backends.Producer, shards, n1, n2 int) burstStream {
	t.Helper()
	b := burstStream{name: s.create(t, st, shards), explicit: s.caps.Timestamps}
	mk := func(prefix string, n int, at time.Time) []backends.Message {
		msgs := textMsgs(b.name, prefix, 0, n)
		for i := range msgs {
			if shards > 1 {
				msgs[i].Key = fmt.Appendf(nil, "k%d", i%16)
			}
			if b.explicit {
				msgs[i].Timestamp = at.Add(time.Duration(i) * 10 * time.Millisecond)
			}
		}
		return msgs
	}
	if b.explicit {
		base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
		b.mid, b.first2 = base.Add(2*time.Minute), base.Add(5*time.Minute)
		b.last = b.first2.Add(time.Duration(n2-1) * 10 * time.Millisecond)
		send(t, ctx, p, mk("a", n1, base))
		send(t, ctx, p, mk("b", n2, b.first2))
		return b
	}
	send(t, ctx, p, mk("a", n1, time.Time{}))
	time.Sleep(50 * time.Millisecond)
	b.mid = time.Now()
	time.Sleep(50 * time.Millisecond)
	send(t, ctx, p, mk("b", n2, time.Time{}))
	b.last = time.Now()
	return b
}

// sortedPayloads returns the payloads sorted (for streams of several
// shards, where only the order within a shard is defined).
func sortedPayloads(msgs []backends.Message) []string {
	out := payloads(msgs)
	slices.Sort(out)
	return out
}

func wantSet(t *testing.T, what string, got []backends.Message, prefix string, from, to int) {
	t.Helper()
	checkSequences(t, got)
	var want []string
	for i := from; i < to; i++ {
		want = append(want, fmt.Sprintf("%s-%06d", prefix, i))
	}
	if g := sortedPayloads(got); !equalStrings(g, want) {
		t.Fatalf("%s: got %d messages %q, want %s-%06d..%06d (%d)", what, len(g), head(g), prefix, from, to-1, to-from)
	}
}

func (s *suite) startTime(t *testing.T) {
	if s.caps.RefusesStartTime {
		s.startTimeRefused(t)
		return
	}
	need(t, s.caps.StartTime, "StartTime")
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	p := producer(t, ctx, st)
	const n1, n2 = 30, 20
	b := s.bursts(t, ctx, st, p, 1, n1, n2)
	// StartTime replaces Start (Latest here): the second burst, in order.
	c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{Start: backends.Latest, StartTime: b.mid})
	wantPayloads(t, s.readAll(t, ctx, c, n2), "b", 0, n2)
	if b.explicit {
		// At or after: a message stamped exactly StartTime is the first.
		c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: b.first2})
		wantPayloads(t, s.readAll(t, ctx, c, n2), "b", 0, n2)
		c = consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: b.first2.Add(time.Millisecond)})
		wantPayloads(t, s.readAll(t, ctx, c, n2-1), "b", 1, n2)
	}
	before := consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: b.mid.Add(-time.Hour)})
	got := s.readAll(t, ctx, before, n1+n2)
	wantPayloads(t, got[:n1], "a", 0, n1)
	wantPayloads(t, got[n1:], "b", 0, n2)
	after := b.last.Add(10 * time.Minute) // Kafka refuses timestamps over an hour ahead
	if s.caps.Bounded {
		c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: after})
		if got := readToEnd(t, ctx, c, 100); len(got) != 0 {
			t.Fatalf("StartTime after the last message: %d messages, first %q", len(got), got[0].Payload)
		}
	}

	if s.caps.Groups {
		// A fresh group starts at StartTime…
		g1 := streamName(t)
		c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{Group: g1, Member: "m1", StartTime: b.mid})
		got := s.readAll(t, ctx, c, n2)
		wantPayloads(t, got, "b", 0, n2)
		if err := c.Ack(ctx, got); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		// …a group with a position resumes there and ignores StartTime.
		if s.caps.Bounded {
			c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{Group: g1, Member: "m2", StartTime: b.mid.Add(-time.Hour)})
			if got := readToEnd(t, ctx, c, 100); len(got) != 0 {
				t.Fatalf("group with a position, StartTime before it: got %q, want nothing of the bursts", head(payloads(got)))
			}
			_ = c.Close()
		}
		g2 := streamName(t)
		c = consumer(t, ctx, st, b.name, backends.ConsumerOptions{Group: g2, Member: "m1", Start: backends.Earliest})
		part := readN(t, ctx, c, 5, 5)
		wantPayloads(t, part, "a", 0, len(part))
		if err := c.Ack(ctx, part); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c = consumer(t, ctx, st, b.name, backends.ConsumerOptions{Group: g2, Member: "m2", StartTime: b.mid})
		rest := readN(t, ctx, c, n1+n2-len(part), 100)
		wantPayloads(t, rest[:n1-len(part)], "a", len(part), n1)
		wantPayloads(t, rest[n1-len(part):n1+n2-len(part)], "b", 0, n2)
	}
	if b.explicit { // last: it appends to the stream
		// Following from a time after the end: nothing old, then what
		// arrives stamped later.
		c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: after, Follow: true})
		expectQuiet(t, c, 300*time.Millisecond, "following from StartTime after the last message")
		later := textMsgs(b.name, "c", 0, 5)
		for i := range later {
			later[i].Timestamp = after.Add(time.Minute)
		}
		send(t, ctx, p, later)
		wantPayloads(t, readN(t, ctx, c, 5, 100), "c", 0, 5)
	}

	if s.caps.Shards {
		// Several shards: some get no message of the second burst; a
		// bounded read still ends, with exactly the second burst.
		b := s.bursts(t, ctx, st, p, 4, 64, 3)
		c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: b.mid})
		wantSet(t, "4 shards, StartTime between the bursts", s.readAll(t, ctx, c, 3), "b", 0, 3)
		if s.caps.Bounded {
			c := consumer(t, ctx, st, b.name, backends.ConsumerOptions{StartTime: b.last.Add(time.Hour)})
			if got := readToEnd(t, ctx, c, 100); len(got) != 0 {
				t.Fatalf("4 shards, StartTime after the last message: %d messages", len(got))
			}
		}
	}
}

// startTimeRefused: a backend that cannot start at a time says so, with
// or without a group.
func (s *suite) startTimeRefused(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	for _, o := range []backends.ConsumerOptions{
		{StartTime: time.Now().Add(-time.Minute)},
		{StartTime: time.Now(), Group: streamName(t), Member: "m1", Follow: true},
	} {
		c, err := st.Consumer(ctx, name, o)
		if err == nil {
			_ = c.Close()
			t.Fatalf("Consumer(%+v) succeeded; want ErrCannotSeek (RefusesStartTime)", o)
		}
		if !errors.Is(err, backends.ErrCannotSeek) || pgerror.CodeOf(err) != pgerror.FeatureNotSupported {
			t.Fatalf("Consumer with StartTime: %v (SQLSTATE %s); want ErrCannotSeek with 0A000", err, pgerror.CodeOf(err))
		}
	}
	// Without StartTime the same consumer opens.
	c := consumer(t, ctx, st, name, backends.ConsumerOptions{})
	_ = c.Close()
}

// modeShards is the shard count of the reading-mode streams: a group
// shares a stream by shards on some backends (Kafka), so there must be
// several to share.
func (s *suite) modeShards() int {
	if s.caps.Shards {
		return 4
	}
	return 1
}

func keyedMsgs(stream, prefix string, from, to int) []backends.Message {
	msgs := textMsgs(stream, prefix, from, to)
	for i := range msgs {
		msgs[i].Key = fmt.Appendf(nil, "k%d", (from+i)%32)
	}
	return msgs
}

// realtime: two consumers without a group, opened before the messages
// are produced, each read every message exactly once.
func (s *suite) realtime(t *testing.T) {
	need(t, s.caps.Realtime, "Realtime")
	ctx := ctxFor(t, 60*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, s.modeShards())
	const n = 300
	var cs []backends.Consumer
	for range 2 {
		cs = append(cs, consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest, Follow: true}))
	}
	p := producer(t, ctx, st)
	send(t, ctx, p, keyedMsgs(name, "rt", 0, n))
	for i, c := range cs {
		wantSet(t, fmt.Sprintf("consumer %d without a group", i+1), readN(t, ctx, c, n, 100), "rt", 0, n)
	}
	for i, c := range cs {
		expectQuiet(t, c, 200*time.Millisecond, fmt.Sprintf("consumer %d after every message", i+1))
	}
}

// loadBalanced: two members of one group, reading concurrently and
// acknowledging what they read, together read every message exactly
// once. First probe messages are sent until both members have received
// some (the group has shared the stream: on Kafka, the rebalance that
// gives the second member its partitions is over); then the counted ones.
func (s *suite) loadBalanced(t *testing.T) {
	need(t, s.caps.SharedGroups, "SharedGroups")
	ctx := ctxFor(t, 60*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, s.modeShards())
	group := streamName(t)
	const n = 400
	var (
		mu     sync.Mutex
		probes [2]int
		counts = map[string]int{}
		by     [2]int
		errs   []string
	)
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }() // before the consumers close
	for i := range 2 {
		c := consumer(t, ctx, st, name, backends.ConsumerOptions{
			Group: group, Member: fmt.Sprintf("m%d", i+1), Start: backends.Earliest, Follow: true,
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rctx.Err() == nil {
				msgs, err := c.Read(rctx, 10)
				if err != nil {
					if rctx.Err() == nil {
						mu.Lock()
						errs = append(errs, fmt.Sprintf("member %d: Read: %v", i+1, err))
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				for _, m := range msgs {
					if bytes.HasPrefix(m.Payload, []byte("probe-")) {
						probes[i]++
					} else {
						counts[string(m.Payload)]++
						by[i]++
					}
				}
				mu.Unlock()
				if err := c.Ack(rctx, msgs); err != nil && rctx.Err() == nil {
					t.Logf("member %d: Ack: %v", i+1, err) // a rebalance may refuse it; duplicates would show
				}
				// Processing a batch takes a moment, in which the other
				// member's Read gets its turn (where members compete for
				// messages, rather than own shards, a member reading in a
				// tight loop could take them all).
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	finish := func() {
		stop()
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(strings.Join(errs, "; "))
		}
	}
	p := producer(t, ctx, st)
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for round := 0; ; round++ {
		mu.Lock()
		both, failed := probes[0] > 0 && probes[1] > 0, len(errs) > 0
		got := probes
		mu.Unlock()
		if both || failed {
			break
		}
		if time.Now().After(deadline) {
			finish()
			t.Fatalf("after %s the members of one group had received %d and %d probe messages: the group does not share the stream", time.Since(start).Round(time.Millisecond), got[0], got[1])
		}
		send(t, ctx, p, keyedMsgs(name, fmt.Sprintf("probe-%03d", round), 0, 32))
		time.Sleep(100 * time.Millisecond)
	}
	shared := time.Since(start)
	send(t, ctx, p, keyedMsgs(name, "lb", 0, n))
	for {
		mu.Lock()
		have, failed := len(counts), len(errs) > 0
		mu.Unlock()
		if have >= n || failed || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // room for a duplicate to show
	finish()
	var missing, twice []string
	for i := range n {
		switch k := fmt.Sprintf("lb-%06d", i); counts[k] {
		case 0:
			missing = append(missing, k)
		case 1:
		default:
			twice = append(twice, k)
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		t.Fatalf("group of two members: %d of %d messages never read (%q), %d read more than once (%q) by %v after %s", len(missing), n, head(missing), len(twice), head(twice), by, shared)
	}
	t.Logf("the group shared the stream after %s; members read %d and %d of %d messages", shared.Round(time.Millisecond), by[0], by[1], n)
}

func (s *suite) positioned(t *testing.T) {
	need(t, s.caps.Positioned, "Positioned")
	ctx := ctxFor(t, 120*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	other := s.create(t, st, 1)
	pp := positionedProducer(t, ctx, st)
	pos, err := pp.Positions(ctx, name)
	if err != nil || len(pos) != 0 {
		t.Fatalf("Positions of a fresh stream = %v, %v; want empty", pos, err)
	}
	// A writer copies source "in/0" (30 messages) in batches of 10, recording
	// after each batch how far it got; it crashes after two batches.
	source := textMsgs(name, "p", 0, 30)
	if err := pp.SendAt(ctx, source[0:10], map[string]int64{"in/0": 10, "in/1": 3}); err != nil {
		t.Fatalf("SendAt: %v", err)
	}
	if err := pp.SendAt(ctx, source[10:20], map[string]int64{"in/0": 20}); err != nil {
		t.Fatalf("SendAt: %v", err)
	}
	want := map[string]int64{"in/0": 20, "in/1": 3}
	if pos, err := pp.Positions(ctx, name); err != nil || !maps.Equal(pos, want) {
		t.Fatalf("Positions = %v, %v; want %v", pos, err, want)
	}
	if pos, err := pp.Positions(ctx, other); err != nil || len(pos) != 0 {
		t.Fatalf("Positions of another stream = %v, %v; want empty", pos, err)
	}
	if s.caps.Durable {
		st.closeNow(t)
		st = s.openStreamer(t)
		pp = positionedProducer(t, ctx, st)
		if pos, err := pp.Positions(ctx, name); err != nil || !maps.Equal(pos, want) {
			t.Fatalf("Positions after reopening = %v, %v; want %v", pos, err, want)
		}
	}
	// The restarted writer replays the source from its start; it skips
	// what Positions says is written, so nothing is duplicated.
	pos, err = pp.Positions(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for from := 0; from < 30; from += 10 {
		if int64(from+10) <= pos["in/0"] {
			continue
		}
		if err := pp.SendAt(ctx, source[from:from+10], map[string]int64{"in/0": int64(from + 10)}); err != nil {
			t.Fatalf("SendAt: %v", err)
		}
	}
	want["in/0"] = 30
	if pos, err := pp.Positions(ctx, name); err != nil || !maps.Equal(pos, want) {
		t.Fatalf("Positions = %v, %v; want %v", pos, err, want)
	}
	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	wantPayloads(t, s.readAll(t, ctx, c, 30), "p", 0, 30)
}

func positionedProducer(t *testing.T, ctx context.Context, st backends.Streamer) backends.PositionedProducer {
	t.Helper()
	p := producer(t, ctx, st)
	pp, ok := p.(backends.PositionedProducer)
	if !ok {
		t.Fatalf("producer %T does not implement backends.PositionedProducer", p)
	}
	return pp
}

func (s *suite) throughput(t *testing.T) {
	n := s.caps.ThroughputN
	need(t, n > 0, "ThroughputN")
	batch := s.caps.ThroughputBatch
	if batch <= 0 {
		batch = 1000
	}
	ctx := ctxFor(t, 600*time.Second)
	st := s.openStreamer(t)
	name := s.create(t, st, 1)
	p := producer(t, ctx, st)
	// 100-byte JSON payloads carrying their index.
	payload := func(i int) []byte {
		b := fmt.Appendf(make([]byte, 0, 100), `{"i":%010d,"pad":"`, i)
		for len(b) < 98 {
			b = append(b, 'x')
		}
		return append(b, '"', '}')
	}
	msgs := make([]backends.Message, 0, batch)
	start := time.Now()
	for i := 0; i < n; {
		msgs = msgs[:0]
		for ; len(msgs) < batch && i < n; i++ {
			msgs = append(msgs, backends.Message{Stream: name, Payload: payload(i)})
		}
		send(t, ctx, p, msgs)
	}
	prod := time.Since(start)

	c := consumer(t, ctx, st, name, backends.ConsumerOptions{Start: backends.Earliest})
	seen := make([]bool, n)
	count := 0
	start = time.Now()
	for count < n {
		got, err := c.Read(ctx, 10000)
		if err != nil {
			t.Fatalf("Read after %d of %d: %v", count, n, err)
		}
		for _, m := range got {
			if len(m.Payload) != 100 {
				t.Fatalf("payload of %d bytes", len(m.Payload))
			}
			i, err := strconv.Atoi(string(m.Payload[5:15]))
			if err != nil || i < 0 || i >= n {
				t.Fatalf("payload %q", m.Payload)
			}
			if seen[i] {
				t.Fatalf("message %d delivered twice", i)
			}
			seen[i] = true
			count++
		}
	}
	cons := time.Since(start)
	if s.caps.Bounded {
		if msgs, err := c.Read(ctx, 10); !errors.Is(err, backends.ErrEndOfStream) {
			t.Fatalf("after %d messages: %d more, %v; want ErrEndOfStream", n, len(msgs), err)
		}
	}
	t.Logf("throughput: %d messages of 100 bytes, %d per Send: produce %.0f msgs/s (%s), consume %.0f msgs/s (%s)",
		n, batch, float64(n)/prod.Seconds(), prod.Round(time.Millisecond), float64(n)/cons.Seconds(), cons.Round(time.Millisecond))
}
