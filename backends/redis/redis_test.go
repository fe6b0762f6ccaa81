package redis_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fvsql/fvsql/backends"
	fvredis "github.com/fvsql/fvsql/backends/redis"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/tests/testenv"
)

// env is one test's view of the real Redis: a key prefix of its own and a
// Streamer opened through the registry like fvsql opens it.
type env struct {
	t      *testing.T
	addr   string
	prefix string
	st     *fvredis.Streamer
}

func newEnv(t *testing.T, query string) *env {
	t.Helper()
	addr := testenv.Redis(t)
	e := &env{t: t, addr: addr, prefix: testenv.UniqueName("fvsqltest-") + ":"}
	e.st = e.open(query)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rdb := e.st.Client()
		var keys []string
		iter := rdb.Scan(ctx, 0, e.prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			_ = rdb.Del(ctx, keys...).Err()
		}
		_ = e.st.Close()
	})
	return e
}

// open opens another Streamer with the same prefix (another "process").
func (e *env) open(query string) *fvredis.Streamer {
	e.t.Helper()
	uri := "redis://" + e.addr + "/0"
	if query != "" {
		uri += "?" + query
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := backends.Open(ctx, uri, backends.Env{TopicPrefix: e.prefix})
	if err != nil {
		e.t.Fatalf("open %s: %v", uri, err)
	}
	rs, ok := st.(*fvredis.Streamer)
	if !ok {
		e.t.Fatalf("open %s gave %T", uri, st)
	}
	if e.st != nil {
		e.t.Cleanup(func() { _ = rs.Close() })
	}
	return rs
}

func (e *env) stream(name string, opts map[string]string) string {
	e.t.Helper()
	if err := e.st.CreateStream(ctxT(e.t), backends.StreamSpec{Name: name, Options: opts}); err != nil {
		e.t.Fatalf("CreateStream %s: %v", name, err)
	}
	return name
}

func (e *env) send(stream string, from, n int) {
	e.t.Helper()
	p, err := e.st.Producer(ctxT(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	msgs := make([]backends.Message, n)
	for i := range msgs {
		msgs[i] = backends.Message{Stream: stream, Key: []byte("k" + strconv.Itoa(from+i)), Payload: payload(from + i)}
	}
	if err := p.Send(ctxT(e.t), msgs); err != nil {
		e.t.Fatalf("Send: %v", err)
	}
}

func payload(i int) []byte { return []byte(fmt.Sprintf(`{"i":%d}`, i)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func consumer(t *testing.T, st backends.Streamer, stream string, o backends.ConsumerOptions) backends.Consumer {
	t.Helper()
	c, err := st.Consumer(ctxT(t), stream, o)
	if err != nil {
		t.Fatalf("Consumer(%s, %+v): %v", stream, o, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readToEnd reads a consumer that does not follow until ErrEndOfStream.
func readToEnd(t *testing.T, c backends.Consumer, max int) []backends.Message {
	t.Helper()
	var out []backends.Message
	for {
		msgs, err := c.Read(ctxT(t), max)
		if errors.Is(err, backends.ErrEndOfStream) {
			return out
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(msgs) == 0 || len(msgs) > max {
			t.Fatalf("Read(%d) returned %d messages", max, len(msgs))
		}
		out = append(out, msgs...)
	}
}

// readN reads a following consumer until it has n messages.
func readN(t *testing.T, c backends.Consumer, n, max int, timeout time.Duration) []backends.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []backends.Message
	for len(out) < n {
		msgs, err := c.Read(ctx, max)
		if err != nil {
			t.Fatalf("Read after %d of %d messages: %v", len(out), n, err)
		}
		out = append(out, msgs...)
	}
	return out
}

func indexes(t *testing.T, msgs []backends.Message) []int {
	t.Helper()
	out := make([]int, len(msgs))
	for i, m := range msgs {
		var n int
		if _, err := fmt.Sscanf(string(m.Payload), `{"i":%d}`, &n); err != nil {
			t.Fatalf("payload %q: %v", m.Payload, err)
		}
		out[i] = n
	}
	return out
}

func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func wantCode(t *testing.T, err error, code pgerror.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want SQLSTATE %s", code)
	}
	if got := pgerror.CodeOf(err); got != code {
		t.Fatalf("error %v has SQLSTATE %s, want %s", err, got, code)
	}
}

func TestRoundTrip(t *testing.T) {
	e := newEnv(t, "")
	ctx := ctxT(t)
	s := e.stream("rt", nil)
	e.stream("rt", nil) // existing: fine

	before := time.Now().Add(-time.Second)
	bin := []byte{0, 1, 2, 0xff, '\r', '\n', 0}
	in := []backends.Message{
		{Stream: s, Key: []byte("a"), Payload: []byte(`{"x":1}`)},
		{Stream: s, Key: nil, Payload: []byte(`{"x":2}`)},
		{Stream: s, Key: []byte{}, Payload: bin},
		{Stream: s, Key: bin, Payload: nil},
	}
	p, err := e.st.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctx, in); err != nil {
		t.Fatalf("Send: %v", err)
	}
	check := func(what string, got []backends.Message) {
		t.Helper()
		if len(got) != len(in) {
			t.Fatalf("%s: %d messages, want %d", what, len(got), len(in))
		}
		var prev int64 = -1
		for i, m := range got {
			if m.Stream != s || m.Shard != 0 {
				t.Errorf("%s %d: stream %q shard %d", what, i, m.Stream, m.Shard)
			}
			if m.Sequence <= prev {
				t.Errorf("%s %d: sequence %d not above %d", what, i, m.Sequence, prev)
			}
			prev = m.Sequence
			if fvredis.IDOf(m.Sequence) != m.ID {
				t.Errorf("%s %d: ID %s, sequence %d encodes %s", what, i, m.ID, m.Sequence, fvredis.IDOf(m.Sequence))
			}
			if m.Timestamp.Before(before) || m.Timestamp.After(time.Now().Add(time.Second)) {
				t.Errorf("%s %d: timestamp %v", what, i, m.Timestamp)
			}
			if !bytes.Equal(m.Payload, in[i].Payload) || !bytes.Equal(m.Key, in[i].Key) || (m.Key == nil) != (in[i].Key == nil) {
				t.Errorf("%s %d: key %q payload %q, want key %q payload %q", what, i, m.Key, m.Payload, in[i].Key, in[i].Payload)
			}
		}
	}

	var scanned []backends.Message
	if err := e.st.Scan(ctx, s, func(shard int32, batch []backends.Message) error {
		if shard != 0 {
			t.Errorf("Scan shard %d", shard)
		}
		scanned = append(scanned, batch...)
		return nil
	}); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	check("Scan", scanned)
	check("Consumer", readToEnd(t, consumer(t, e.st, s, backends.ConsumerOptions{}), 3))
	check("group Consumer", readToEnd(t, consumer(t, e.st, s, backends.ConsumerOptions{Group: "g", Member: "m"}), 2))

	// The raw entry layout: fields k (when a key is set) and v.
	raw, err := e.st.Client().XRange(ctx, e.prefix+s, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := raw[1].Values["k"]; ok || raw[0].Values["k"] != "a" || raw[0].Values["v"] != `{"x":1}` {
		t.Errorf("raw entries %v", raw[:2])
	}

	// Scan of a missing stream: nothing. Scan's fn error comes back.
	if err := e.st.Scan(ctx, "missing", func(int32, []backends.Message) error { t.Error("fn called"); return nil }); err != nil {
		t.Errorf("Scan of a missing stream: %v", err)
	}
	boom := errors.New("boom")
	if err := e.st.Scan(ctx, s, func(int32, []backends.Message) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Scan with a failing fn: %v", err)
	}

	if err := e.st.DropStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := e.st.DropStream(ctx, s); err != nil {
		t.Fatalf("DropStream of a missing stream: %v", err)
	}
	if n, _ := e.st.Client().Exists(ctx, e.prefix+s).Result(); n != 0 {
		t.Errorf("key still exists after DropStream")
	}
}

func TestCreateStreamEmptyAndWrongType(t *testing.T) {
	e := newEnv(t, "")
	ctx := ctxT(t)
	s := e.stream("empty", nil)
	rdb := e.st.Client()
	if typ, _ := rdb.Type(ctx, e.prefix+s).Result(); typ != "stream" {
		t.Fatalf("after CreateStream the key is a %q", typ)
	}
	if n, _ := rdb.XLen(ctx, e.prefix+s).Result(); n != 0 {
		t.Errorf("new stream has %d entries", n)
	}
	if groups, _ := rdb.XInfoGroups(ctx, e.prefix+s).Result(); len(groups) != 0 {
		t.Errorf("new stream has groups %v", groups)
	}
	if err := rdb.Set(ctx, e.prefix+"str", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.st.CreateStream(ctx, backends.StreamSpec{Name: "str"}), pgerror.WrongObjectType)
}

func TestBadOptions(t *testing.T) {
	e := newEnv(t, "")
	for _, v := range []string{"abc", "0", "-5", "1.5", ""} {
		err := e.st.CreateStream(ctxT(t), backends.StreamSpec{Name: "bad", Options: map[string]string{"maxlen": v}})
		wantCode(t, err, pgerror.InvalidParameterValue)
	}
	// Options of other layers are ignored.
	e.stream("ok", map[string]string{"pipeline": "p", "retention.ms": "5"})

	for _, q := range []string{"claim_idle=abc", "claim_idle=-1s", "nope=1"} {
		_, err := backends.Open(ctxT(t), "redis://"+e.addr+"/0?"+q, backends.Env{})
		wantCode(t, err, pgerror.InvalidParameterValue)
	}
	for _, u := range []string{"redis://" + e.addr + "/x", "redis://" + e.addr + "/-1", "redis://host:99999"} {
		_, err := backends.Open(ctxT(t), u, backends.Env{})
		wantCode(t, err, pgerror.InvalidParameterValue)
	}
}

func TestParseURL(t *testing.T) {
	u, _ := url.Parse("redis://:sec%20ret@h:7000/3?claim_idle=2s")
	cfg, err := fvredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "h:7000" || cfg.Password != "sec ret" || cfg.Username != "" || cfg.DB != 3 || cfg.ClaimIdle != 2*time.Second {
		t.Errorf("ParseURL = %+v", cfg)
	}
	u, _ = url.Parse("redis://u:p@h")
	if cfg, _ = fvredis.ParseURL(u); cfg.Addr != "h:6379" || cfg.Username != "u" || cfg.Password != "p" || cfg.DB != 0 {
		t.Errorf("ParseURL = %+v", cfg)
	}
}

func TestUnreachable(t *testing.T) {
	testenv.Redis(t) // runs with the other Redis tests
	port := testenv.FreePort(t)
	start := time.Now()
	_, err := backends.Open(ctxT(t), "redis://127.0.0.1:"+strconv.Itoa(port), backends.Env{})
	took := time.Since(start)
	wantCode(t, err, pgerror.SQLClientUnableToEstablish)
	if !errors.Is(err, backends.ErrNotConnected) {
		t.Errorf("error %v does not wrap ErrNotConnected", err)
	}
	if took > 5*time.Second {
		t.Errorf("connecting to a closed port took %v", took)
	}
	t.Logf("closed port: %v after %v", err, took)
}

func TestGroupAtLeastOnceAfterCrash(t *testing.T) {
	e := newEnv(t, "claim_idle=200ms")
	s := e.stream("crash", nil)
	e.send(s, 0, 10)

	c1 := consumer(t, e.st, s, backends.ConsumerOptions{Group: "g", Member: "c1", Follow: true})
	got := readN(t, c1, 10, 100, 10*time.Second)
	if err := c1.Ack(ctxT(t), got[:5]); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	_ = c1.Close() // "crash": 5 entries stay pending with c1

	// c2, in another process, takes them over once they are idle.
	st2 := e.open("claim_idle=200ms")
	time.Sleep(300 * time.Millisecond)
	c2 := consumer(t, st2, s, backends.ConsumerOptions{Group: "g", Member: "c2"})
	again := readToEnd(t, c2, 100)
	if ix := indexes(t, again); !slices.Equal(ix, span(5, 10)) {
		t.Fatalf("c2 got %v, want the 5 entries c1 did not acknowledge", ix)
	}
	for i := range again {
		if again[i].ID != got[5+i].ID {
			t.Errorf("redelivered %d has ID %s, was %s", i, again[i].ID, got[5+i].ID)
		}
	}
	if err := c2.Ack(ctxT(t), again); err != nil {
		t.Fatal(err)
	}
	pend, err := e.st.Client().XPending(ctxT(t), e.prefix+s, "g").Result()
	if err != nil || pend.Count != 0 {
		t.Fatalf("XPENDING after c2 acknowledged: %+v, %v", pend, err)
	}

	// A member reopened under its own name gets its pending entries at
	// once, without waiting for the claim time.
	e.send(s, 10, 4)
	st3 := e.open("claim_idle=1h")
	c3 := consumer(t, st3, s, backends.ConsumerOptions{Group: "g", Member: "c3"})
	first := readToEnd(t, c3, 100)
	if ix := indexes(t, first); !slices.Equal(ix, span(10, 14)) {
		t.Fatalf("c3 got %v", ix)
	}
	_ = c3.Close()
	c3 = consumer(t, st3, s, backends.ConsumerOptions{Group: "g", Member: "c3"})
	if ix := indexes(t, readToEnd(t, c3, 100)); !slices.Equal(ix, span(10, 14)) {
		t.Fatalf("reopened c3 got %v, want its own pending entries", ix)
	}
	// Another member with a long claim time does not take them.
	c4 := consumer(t, st3, s, backends.ConsumerOptions{Group: "g", Member: "c4"})
	if got := readToEnd(t, c4, 100); len(got) != 0 {
		t.Fatalf("c4 got %v", indexes(t, got))
	}
}

func TestGroupMembersShare(t *testing.T) {
	e := newEnv(t, "")
	s := e.stream("share", nil)
	const n = 200
	opts := func(m string) backends.ConsumerOptions {
		return backends.ConsumerOptions{Group: "g", Member: m, Follow: true}
	}
	members := []backends.Consumer{consumer(t, e.st, s, opts("m1")), consumer(t, e.st, s, opts("m2"))}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]string{} // ID -> member
	per := make([]int, len(members))
	total := 0
	var wg sync.WaitGroup
	for i, c := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				msgs, err := c.Read(ctx, 5)
				if err != nil {
					return
				}
				if err := c.Ack(ctx, msgs); err != nil {
					t.Errorf("Ack: %v", err)
				}
				mu.Lock()
				for _, m := range msgs {
					if prev, dup := seen[m.ID]; dup {
						t.Errorf("entry %s delivered to m%d and %s", m.ID, i+1, prev)
					}
					seen[m.ID] = "m" + strconv.Itoa(i+1)
				}
				per[i] += len(msgs)
				total += len(msgs)
				if total >= n {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // both block in XREADGROUP
	for i := 0; i < n; i += 5 {
		e.send(s, i, 5)
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct entries delivered, want %d", len(seen), n)
	}
	if per[0] == 0 || per[1] == 0 {
		t.Errorf("one member got nothing: %v", per)
	}
	t.Logf("shared: m1 %d, m2 %d", per[0], per[1])
}

func TestMaxLen(t *testing.T) {
	e := newEnv(t, "")
	ctx := ctxT(t)
	s := e.stream("capped", map[string]string{"maxlen": "100"})
	key := e.prefix + s
	for i := 0; i < 2000; i += 20 {
		e.send(s, i, 20)
	}
	n, err := e.st.Client().XLen(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	// MAXLEN ~ trims whole macro nodes (100 entries by default).
	if n < 100 || n > 300 {
		t.Fatalf("XLEN after 2000 appends with maxlen 100 = %d", n)
	}
	// The newest entries are kept.
	last := readToEnd(t, consumer(t, e.st, s, backends.ConsumerOptions{}), 1000)
	if ix := indexes(t, last); ix[len(ix)-1] != 1999 || len(ix) != int(n) {
		t.Fatalf("kept %d entries ending with %d", len(ix), ix[len(ix)-1])
	}

	// Another process's producer follows the stored policy too, and
	// CreateStream on the existing stream changes it.
	st2 := e.open("")
	e.stream(s, map[string]string{"maxlen": "1000"})
	p2, _ := st2.Producer(ctx)
	for i := 0; i < 30; i++ {
		msgs := make([]backends.Message, 100)
		for j := range msgs {
			msgs[j] = backends.Message{Stream: s, Payload: payload(j)}
		}
		if err := p2.Send(ctx, msgs); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ = e.st.Client().XLen(ctx, key).Result(); n < 1000 || n > 1200 {
		t.Fatalf("XLEN with maxlen 1000 from another process = %d", n)
	}
	// A stream without the option is not trimmed.
	free := e.stream("free", nil)
	for i := 0; i < 500; i += 100 {
		e.send(free, i, 100)
	}
	if n, _ = e.st.Client().XLen(ctx, e.prefix+free).Result(); n != 500 {
		t.Fatalf("XLEN of an untrimmed stream = %d", n)
	}
}

func TestSendAtPositionsAtomic(t *testing.T) {
	e := newEnv(t, "")
	ctx := ctxT(t)
	s := e.stream("sink", nil)
	p, _ := e.st.Producer(ctx)
	pp, ok := p.(backends.PositionedProducer)
	if !ok {
		t.Fatalf("%T is not a PositionedProducer", p)
	}
	if pos, err := pp.Positions(ctx, s); err != nil || len(pos) != 0 {
		t.Fatalf("Positions of a new stream: %v, %v", pos, err)
	}

	// A watcher reads XLEN and the positions in one MULTI/EXEC, many
	// times, while SendAt writes batches: every snapshot must show the
	// entries and the position together.
	rdb := e.st.Client()
	key, posKey := e.prefix+s, e.st.PositionsKey(s)
	stop := make(chan struct{})
	var snapshots, bad int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var xl *goredis.IntCmd
			var pos *goredis.StringCmd
			_, err := rdb.TxPipelined(ctx, func(pl goredis.Pipeliner) error {
				xl = pl.XLen(ctx, key)
				pos = pl.HGet(ctx, posKey, "src/0")
				return nil
			})
			if err != nil && !errors.Is(err, goredis.Nil) {
				t.Errorf("watcher: %v", err)
				return
			}
			at, _ := pos.Int64()
			if xl.Val() != at {
				bad++
			}
			snapshots++
		}
	}()
	const batches, per = 200, 25
	for b := 0; b < batches; b++ {
		msgs := make([]backends.Message, per)
		for i := range msgs {
			msgs[i] = backends.Message{Stream: s, Payload: payload(b*per + i)}
		}
		if err := pp.SendAt(ctx, msgs, map[string]int64{"src/0": int64((b + 1) * per), "src/1": int64(b)}); err != nil {
			t.Fatalf("SendAt: %v", err)
		}
	}
	close(stop)
	<-done
	if bad > 0 {
		t.Fatalf("%d of %d snapshots saw entries without their position", bad, snapshots)
	}
	t.Logf("%d consistent snapshots", snapshots)
	pos, err := pp.Positions(ctx, s)
	if err != nil || pos["src/0"] != batches*per || pos["src/1"] != batches-1 || len(pos) != 2 {
		t.Fatalf("Positions = %v, %v", pos, err)
	}
	// Another process sees them; a writer resuming skips what is written.
	p2, _ := e.open("").Producer(ctx)
	if pos2, _ := p2.(backends.PositionedProducer).Positions(ctx, s); pos2["src/0"] != batches*per {
		t.Fatalf("other process Positions = %v", pos2)
	}
	if err := e.st.DropStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	if pos, _ := pp.Positions(ctx, s); len(pos) != 0 {
		t.Fatalf("Positions after DropStream = %v", pos)
	}
}

func TestSeek(t *testing.T) {
	e := newEnv(t, "")
	s := e.stream("seek", nil)
	for i := 0; i < 10; i++ {
		e.send(s, i, 1)
		time.Sleep(3 * time.Millisecond) // distinct milliseconds
	}
	all := readToEnd(t, consumer(t, e.st, s, backends.ConsumerOptions{}), 100)
	if len(all) != 10 {
		t.Fatalf("%d messages", len(all))
	}
	for _, group := range []string{"", "g"} {
		t.Run("group="+group, func(t *testing.T) {
			c := consumer(t, e.st, s, backends.ConsumerOptions{Group: group, Member: "m"})
			sk := c.(backends.Seeker)
			ctx := ctxT(t)
			if err := sk.Seek(ctx, all[4].Sequence); err != nil {
				t.Fatal(err)
			}
			if ix := indexes(t, readToEnd(t, c, 3)); !slices.Equal(ix, span(4, 10)) {
				t.Fatalf("after Seek to the 5th: %v", ix)
			}
			// Between two entries: the next one.
			if err := sk.Seek(ctx, all[2].Sequence+1); err != nil {
				t.Fatal(err)
			}
			if ix := indexes(t, readToEnd(t, c, 100)); !slices.Equal(ix, span(3, 10)) {
				t.Fatalf("after Seek past the 3rd: %v", ix)
			}
			if err := sk.SeekTime(ctx, all[7].Timestamp); err != nil {
				t.Fatal(err)
			}
			got := readToEnd(t, c, 100)
			if len(got) == 0 || got[0].Timestamp.Before(all[7].Timestamp) || indexes(t, got)[0] > 7 {
				t.Fatalf("after SeekTime(%v): %v", all[7].Timestamp, indexes(t, got))
			}
			if err := sk.SeekTime(ctx, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
			if got := readToEnd(t, c, 100); len(got) != 10 {
				t.Fatalf("after SeekTime(epoch): %d messages", len(got))
			}
			if err := sk.Seek(ctx, all[9].Sequence+1); err != nil {
				t.Fatal(err)
			}
			if got := readToEnd(t, c, 100); len(got) != 0 {
				t.Fatalf("after Seek past the end: %v", indexes(t, got))
			}
		})
	}
}

func TestNonFollowEnd(t *testing.T) {
	e := newEnv(t, "")
	s := e.stream("end", nil)
	e.send(s, 0, 5)
	present := 5
	for _, o := range []backends.ConsumerOptions{{}, {Group: "g", Member: "m"}} {
		c := consumer(t, e.st, s, o)
		e.send(s, 100, 3) // after open: not read
		if ix := indexes(t, readToEnd(t, c, 2)); len(ix) != present || !slices.Equal(ix[:5], span(0, 5)) {
			t.Fatalf("%+v: read %v, want the %d entries present at open", o, ix, present)
		}
		present += 3
		if _, err := c.Read(ctxT(t), 10); !errors.Is(err, backends.ErrEndOfStream) {
			t.Fatalf("%+v: Read after the end: %v", o, err)
		}
	}
	// Empty stream: the end at once. Latest without following: nothing.
	empty := e.stream("empty", nil)
	if _, err := consumer(t, e.st, empty, backends.ConsumerOptions{}).Read(ctxT(t), 10); !errors.Is(err, backends.ErrEndOfStream) {
		t.Fatalf("empty stream: %v", err)
	}
	if got := readToEnd(t, consumer(t, e.st, s, backends.ConsumerOptions{Start: backends.Latest}), 10); len(got) != 0 {
		t.Fatalf("Latest, not following: %v", indexes(t, got))
	}
}

func TestFollow(t *testing.T) {
	e := newEnv(t, "")
	s := e.stream("tail", nil)
	e.send(s, 0, 3)
	earliest := consumer(t, e.st, s, backends.ConsumerOptions{Follow: true})
	latest := consumer(t, e.st, s, backends.ConsumerOptions{Follow: true, Start: backends.Latest})
	group := consumer(t, e.st, s, backends.ConsumerOptions{Follow: true, Group: "g", Member: "m", Start: backends.Latest})
	go func() {
		time.Sleep(300 * time.Millisecond)
		e.send(s, 3, 4)
	}()
	if ix := indexes(t, readN(t, earliest, 7, 100, 10*time.Second)); !slices.Equal(ix, span(0, 7)) {
		t.Fatalf("earliest: %v", ix)
	}
	if ix := indexes(t, readN(t, latest, 4, 100, 10*time.Second)); !slices.Equal(ix, span(3, 7)) {
		t.Fatalf("latest: %v", ix)
	}
	if ix := indexes(t, readN(t, group, 4, 100, 10*time.Second)); !slices.Equal(ix, span(3, 7)) {
		t.Fatalf("group latest: %v", ix)
	}

	// A Read waiting for data returns promptly when its ctx ends, and
	// what the interrupted XREAD brings later is not lost.
	for _, c := range []backends.Consumer{earliest, group} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err := c.Read(ctx, 10)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Read with an expiring ctx: %v", err)
		}
		if took := time.Since(start); took > 300*time.Millisecond {
			t.Fatalf("Read took %v to notice its ctx ended", took)
		}
	}
	e.send(s, 7, 1)
	if ix := indexes(t, readN(t, earliest, 1, 10, 10*time.Second)); !slices.Equal(ix, []int{7}) {
		t.Fatalf("after a cancelled Read: %v", ix)
	}
	if ix := indexes(t, readN(t, group, 1, 10, 10*time.Second)); !slices.Equal(ix, []int{7}) {
		t.Fatalf("group after a cancelled Read: %v", ix)
	}
}

// privateRedis runs a redis-server of its own (the binary of the test
// environment) that a test may stop, start again, or configure; it is
// stopped when the test ends.
type privateRedis struct {
	t    *testing.T
	bin  string
	port string
	dir  string // kept across restarts: a SAVEd dump.rdb is loaded again
	args []string
	cmd  *exec.Cmd
}

func newPrivateRedis(t *testing.T, args ...string) *privateRedis {
	t.Helper()
	testenv.Redis(t) // runs where the other Redis tests run
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH")
	}
	r := &privateRedis{t: t, bin: bin, port: strconv.Itoa(testenv.FreePort(t)), dir: t.TempDir(), args: args}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *privateRedis) addr() string { return "127.0.0.1:" + r.port }

func (r *privateRedis) start() {
	r.t.Helper()
	args := append([]string{"--bind", "127.0.0.1", "--port", r.port, "--save", "", "--appendonly", "no", "--dir", r.dir}, r.args...)
	r.cmd = exec.Command(r.bin, args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", r.addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if i == 100 {
			r.t.Fatalf("redis-server on port %s did not start", r.port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *privateRedis) stop() {
	if r.cmd != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

func TestPassword(t *testing.T) {
	r := newPrivateRedis(t, "--requirepass", "s3cret")
	ctx := ctxT(t)
	st, err := backends.Open(ctx, "redis://:s3cret@"+r.addr()+"/2", backends.Env{})
	if err != nil {
		t.Fatalf("open with the password: %v", err)
	}
	defer st.Close()
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"redis://:wrong@" + r.addr(), "redis://" + r.addr()} {
		_, err := backends.Open(ctx, u, backends.Env{})
		if err == nil || errors.Is(err, backends.ErrNotConnected) || pgerror.CodeOf(err).String()[:2] != "28" {
			t.Errorf("open %s: %v (SQLSTATE %s), want a 28xxx authorization error", u, err, pgerror.CodeOf(err))
		}
	}
}

// TestServerRestart stops and starts a private server: while it is down,
// operations fail with errors wrapping ErrNotConnected, promptly; once it
// is back the same Streamer works again.
func TestServerRestart(t *testing.T) {
	r := newPrivateRedis(t)
	port := r.port
	ctx := ctxT(t)
	st, err := backends.Open(ctx, "redis://127.0.0.1:"+port, backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	p, _ := st.Producer(ctx)
	msg := []backends.Message{{Stream: "s", Payload: []byte(`{}`)}}
	if err := p.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	c, err := st.Consumer(ctx, "s", backends.ConsumerOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := readN(t, c, 1, 10, 5*time.Second); len(got) != 1 {
		t.Fatal(got)
	}

	r.stop()
	notConnected := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, backends.ErrNotConnected) {
			t.Fatalf("%s while Redis is down: %v, want ErrNotConnected", what, err)
		}
	}
	t0 := time.Now()
	notConnected("Send", p.Send(ctx, msg))
	_, err = c.Read(ctx, 10)
	notConnected("Read", err)
	notConnected("Scan", st.Scan(ctx, "s", func(int32, []backends.Message) error { return nil }))
	_, err = st.Consumer(ctx, "s", backends.ConsumerOptions{Group: "g"})
	notConnected("Consumer", err)
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("four failing calls took %v", took)
	}
	t.Logf("down: %v", p.Send(ctx, msg))

	r.start()
	var sendErr error
	for i := 0; i < 50; i++ {
		if sendErr = p.Send(ctx, msg); sendErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sendErr != nil {
		t.Fatalf("Send after the restart: %v", sendErr)
	}
	// The new server has no data (no persistence): the entry just sent is
	// the stream's only one, and the following consumer gets it.
	if got := readN(t, c, 1, 10, 10*time.Second); len(got) != 1 {
		t.Fatal(got)
	}
}

// TestSendWhileLoading: a restarted server answers LOADING until it has
// read its data back, and inside MULTI that makes EXEC answer EXECABORT.
// Send must wait for the server rather than fail (the insert of a client
// that came right after a Redis restart failed with 58030 on CI), and
// write its messages once.
func TestSendWhileLoading(t *testing.T) {
	r := newPrivateRedis(t, "--enable-debug-command", "yes")
	ctx := ctxT(t)
	raw := goredis.NewClient(&goredis.Options{Addr: r.addr(), MaxRetries: -1})
	defer raw.Close()
	// Two million keys take about a second to load on the CI machine.
	if err := raw.Do(ctx, "DEBUG", "POPULATE", 2000000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := raw.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	st, err := backends.Open(ctx, "redis://"+r.addr(), backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := raw.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	p, _ := st.Producer(ctx)

	r.stop()
	r.start()
	if err := raw.Ping(ctx).Err(); !goredis.IsLoadingError(err) {
		t.Fatalf("PING right after the restart: %v, want LOADING (the test needs a server still loading)", err)
	}
	msgs := []backends.Message{{Stream: "s", Payload: []byte(`{"a":1}`)}, {Stream: "s", Payload: []byte(`{"a":2}`)}}
	t0 := time.Now()
	if err := p.Send(ctx, msgs); err != nil {
		t.Fatalf("Send while the server loads: %v (SQLSTATE %s)", err, pgerror.CodeOf(err))
	}
	t.Logf("Send waited %v for the server to load", time.Since(t0))
	n, err := raw.XLen(ctx, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(msgs)) {
		t.Fatalf("the stream has %d entries after one Send of %d", n, len(msgs))
	}
}
