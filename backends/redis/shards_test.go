package redis_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	fvredis "github.com/fvsql/fvsql/backends/redis"
	"github.com/fvsql/fvsql/pgerror"
)

func (e *env) sharded(name string, shards int) string {
	e.t.Helper()
	if err := e.st.CreateStream(ctxT(e.t), backends.StreamSpec{Name: name, Shards: shards}); err != nil {
		e.t.Fatalf("CreateStream %s (%d shards): %v", name, shards, err)
	}
	return name
}

// TestShardKeys: a 4-shard stream is the keys <key>:0 … <key>:3, one key's
// messages all in one shard, every shard used; Scan and a consumer without
// a group read every shard; a different shard count for an existing
// stream is refused (22023); DropStream deletes every shard key.
func TestShardKeys(t *testing.T) {
	e := newEnv(t, "")
	s := e.sharded("clicks", 4)
	ctx := ctxT(t)
	rdb := e.st.Client()
	for i := range 4 {
		key := e.st.ShardKey(s, i, 4)
		if want := e.prefix + "clicks:" + string(rune('0'+i)); key != want {
			t.Fatalf("shard %d key %q, want %q", i, key, want)
		}
		if typ := rdb.Type(ctx, key).Val(); typ != "stream" {
			t.Fatalf("shard key %s is a %q after CreateStream, want a stream", key, typ)
		}
	}
	e.send(s, 0, 200)
	e.send(s, 0, 200) // the same keys again: they must land where they did
	shardOf := map[string]int32{}
	perShard := map[int32]int{}
	c := consumer(t, e.st, s, backends.ConsumerOptions{})
	msgs := readToEnd(t, c, 64)
	if len(msgs) != 400 {
		t.Fatalf("read %d messages of 400", len(msgs))
	}
	for _, m := range msgs {
		k := string(m.Key)
		if sh, ok := shardOf[k]; ok && sh != m.Shard {
			t.Fatalf("key %s in shards %d and %d", k, sh, m.Shard)
		}
		shardOf[k] = m.Shard
		perShard[m.Shard]++
	}
	for i := range int32(4) {
		if perShard[i] == 0 {
			t.Fatalf("shard %d got no message: %v", i, perShard)
		}
		n := rdb.XLen(ctx, e.st.ShardKey(s, int(i), 4)).Val()
		if int(n) != perShard[i] {
			t.Fatalf("shard key %d holds %d entries, the consumer read %d from it", i, n, perShard[i])
		}
	}
	scanned := map[int32]int{}
	if err := e.st.Scan(ctx, s, func(shard int32, batch []backends.Message) error {
		for _, m := range batch {
			if m.Shard != shard || shardOf[string(m.Key)] != shard {
				t.Errorf("Scan gave key %s in shard %d (message says %d, consumer read it in %d)", m.Key, shard, m.Shard, shardOf[string(m.Key)])
			}
		}
		scanned[shard] += len(batch)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(scanned, perShard) {
		t.Fatalf("Scan per shard %v, consumer %v", scanned, perShard)
	}
	wantCode(t, e.st.CreateStream(ctx, backends.StreamSpec{Name: s, Shards: 2}), pgerror.InvalidParameterValue)
	if err := e.st.CreateStream(ctx, backends.StreamSpec{Name: s, Shards: 4}); err != nil {
		t.Fatalf("CreateStream again with the same shards: %v", err)
	}
	if err := e.st.DropStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if n := rdb.Exists(ctx, e.st.ShardKey(s, i, 4)).Val(); n != 0 {
			t.Fatalf("shard key %d still exists after DropStream", i)
		}
	}
}

// TestShardFailover: two processes share a 4-shard stream's group, two
// shards each; the second dies (its connection goes away without handing
// its shards over), and once its leases run out the first takes its
// shards and the entries it had read without acknowledging them. Every
// message is read; none is lost.
func TestShardFailover(t *testing.T) {
	e := newEnv(t, "")
	a, b, s := e.twoProcesses("orders", 4)
	ca := consumer(t, a, s, memberOf("a"))
	cb, err := b.Consumer(ctxT(t), s, memberOf("b"))
	if err != nil {
		t.Fatal(err)
	}
	// Until a sees b it holds every shard; it hands two over within a
	// renewal (lease/3), and b takes them at its own.
	time.Sleep(time.Second)
	e.send(s, 0, 400)
	seen := map[int]int{}
	byA := readUntilQuiet(t, ca, 400*time.Millisecond)
	byB := readUntilQuiet(t, cb, 400*time.Millisecond)
	if len(byA) == 0 || len(byB) == 0 {
		t.Fatalf("the members read %d and %d messages: the group does not share the shards", len(byA), len(byB))
	}
	shardsA, shardsB := shardSet(byA), shardSet(byB)
	for _, sh := range shardsA {
		if slices.Contains(shardsB, sh) {
			t.Fatalf("shard %d read by both members (a: %v, b: %v)", sh, shardsA, shardsB)
		}
	}
	if err := ca.Ack(ctxT(t), byA); err != nil {
		t.Fatal(err)
	}
	for _, i := range indexes(t, byA) {
		seen[i]++
	}
	// b acknowledges nothing and dies: its client closes, its leases are
	// not renewed.
	_ = b.Close()
	rest := readN(t, ca, len(byB), 100, 10*time.Second)
	if got := shardSet(rest); !slices.Equal(got, shardsB) {
		t.Fatalf("after b died, a read shards %v, want b's %v", got, shardsB)
	}
	for _, i := range indexes(t, rest) {
		seen[i]++
	}
	for i := range 400 {
		if seen[i] != 1 {
			t.Fatalf("message %d read %d times by the survivor (and b's unacknowledged reads)", i, seen[i])
		}
	}
}

func readUntilQuiet(t *testing.T, c backends.Consumer, quiet time.Duration) []backends.Message {
	t.Helper()
	var out []backends.Message
	for {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		msgs, err := c.Read(ctx, 100)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			t.Fatalf("Read: %v", err)
		}
		out = append(out, msgs...)
	}
}

func shardSet(msgs []backends.Message) []int32 {
	var out []int32
	for _, m := range msgs {
		if !slices.Contains(out, m.Shard) {
			out = append(out, m.Shard)
		}
	}
	slices.Sort(out)
	return out
}

// TestShardHandoverInFlightRead: a member that hands a shard over may
// have a blocking read of it in flight (XREADGROUP … BLOCK, issued
// before the handover, answered up to a second later). Entries written
// right after the handover can go to that read and be pending with the
// member that no longer reads the shard; the new holder must claim them
// (not only those pending when it took the lease), or they are never
// delivered. Every message is read by one member or the other.
func TestShardHandoverInFlightRead(t *testing.T) {
	e := newEnv(t, "")
	a, b, s := e.twoProcesses("handover", 2)
	ca := consumer(t, a, s, memberOf("a")) // holds both shards, reading them (blocking)
	time.Sleep(300 * time.Millisecond)
	cb := consumer(t, b, s, memberOf("b"))
	rdb := e.st.Client()
	lease := func(i int) string {
		v, _ := rdb.Get(ctxT(t), e.prefix+"handover:fvsql:lease:g:"+strconv.Itoa(i)).Result()
		return v
	}
	deadline := time.Now().Add(10 * time.Second)
	for lease(0) == "" || lease(1) == "" || lease(0) == lease(1) {
		if time.Now().After(deadline) {
			t.Fatalf("the shards were not shared: leases %q and %q", lease(0), lease(1))
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.send(s, 0, 40) // at once: a's read of the shard it gave up may still block
	var got []backends.Message
	quiet := time.Now().Add(5 * time.Second)
	for len(got) < 40 && time.Now().Before(quiet) {
		got = append(got, readUntilQuiet(t, ca, 100*time.Millisecond)...)
		got = append(got, readUntilQuiet(t, cb, 100*time.Millisecond)...)
	}
	seen := map[int]bool{}
	for _, i := range indexes(t, got) {
		seen[i] = true
	}
	var missing []int
	for i := range 40 {
		if !seen[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("messages %v were never delivered (pending with a member that gave their shard up)", missing)
	}
}

// twoProcesses opens two Streamers with short leases (two processes)
// and a sharded stream.
func (e *env) twoProcesses(name string, shards int) (a, b *fvredis.Streamer, stream string) {
	return e.open("lease=600ms"), e.open("lease=600ms"), e.sharded(name, shards)
}

// memberOf is the options of member m of group g, following.
func memberOf(m string) backends.ConsumerOptions {
	return backends.ConsumerOptions{Group: "g", Member: m, Follow: true}
}
