package services_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fvsql/fvsql/tests/testenv"
)

// TestRedisStreamConsumerGroups exercises a stream consumer group the way a
// real Redis server implements it: XADD, XGROUP CREATE MKSTREAM, XREADGROUP,
// XPENDING, XACK and XAUTOCLAIM, and logs the server's version.
func TestRedisStreamConsumerGroups(t *testing.T) {
	addr := testenv.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	rdb := redis.NewClient(&redis.Options{
		Addr:            addr,
		DialTimeout:     5 * time.Second,
		ReadTimeout:     5 * time.Second,
		WriteTimeout:    5 * time.Second,
		DisableIdentity: true,
	})
	t.Cleanup(func() { _ = rdb.Close() }) // after the stream is deleted

	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	m := regexp.MustCompile(`(?m)^redis_version:(\d+\.\d+\.\d+)\r?$`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO server has no redis_version line:\n%s", info)
	}
	mode := regexp.MustCompile(`(?m)^redis_mode:(\S+)`).FindStringSubmatch(info)
	t.Logf("Redis server at %s: redis_version %s, mode %v", addr, m[1], mode)

	stream := testenv.UniqueName("services-stream-")
	const group = "g"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rdb.Del(ctx, stream).Err(); err != nil {
			t.Logf("DEL %s: %v", stream, err)
		}
	})

	const n = 5
	var ids []string
	for i := range n {
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"i": i, "v": "value"}}).Result()
		if err != nil {
			t.Fatalf("XADD %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	if err := rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err(); err != nil {
		t.Fatalf("XGROUP CREATE %s %s 0 MKSTREAM: %v", stream, group, err)
	}

	read, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: "c1", Streams: []string{stream, ">"}, Count: 10, Block: -1,
	}).Result()
	if err != nil {
		t.Fatalf("XREADGROUP: %v", err)
	}
	if len(read) != 1 || len(read[0].Messages) != n {
		t.Fatalf("XREADGROUP returned %v, want %d messages of %s", read, n, stream)
	}
	for i, msg := range read[0].Messages {
		if msg.ID != ids[i] {
			t.Fatalf("XREADGROUP message %d has id %s, want %s", i, msg.ID, ids[i])
		}
	}

	pending := xpending(ctx, t, rdb, stream, group)
	if pending.Count != n || pending.Consumers["c1"] != n {
		t.Fatalf("XPENDING after reading: %+v, want %d pending for c1", pending, n)
	}

	acked, err := rdb.XAck(ctx, stream, group, ids[0], ids[1]).Result()
	if err != nil || acked != 2 {
		t.Fatalf("XACK 2 ids: %d, %v; want 2", acked, err)
	}
	// Acknowledging again changes nothing.
	if again, err := rdb.XAck(ctx, stream, group, ids[0]).Result(); err != nil || again != 0 {
		t.Fatalf("second XACK of %s: %d, %v; want 0", ids[0], again, err)
	}
	pending = xpending(ctx, t, rdb, stream, group)
	if pending.Count != n-2 || pending.Consumers["c1"] != n-2 {
		t.Fatalf("XPENDING after XACK of 2: %+v, want %d pending for c1", pending, n-2)
	}

	claimed, _, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: stream, Group: group, Consumer: "c2", MinIdle: 0, Start: "0-0", Count: 10,
	}).Result()
	if err != nil {
		t.Fatalf("XAUTOCLAIM: %v", err)
	}
	var claimedIDs []string
	for _, msg := range claimed {
		claimedIDs = append(claimedIDs, msg.ID)
	}
	if !slices.Equal(claimedIDs, ids[2:]) {
		t.Fatalf("XAUTOCLAIM to c2 claimed %v, want %v", claimedIDs, ids[2:])
	}
	pending = xpending(ctx, t, rdb, stream, group)
	if pending.Count != n-2 || pending.Consumers["c2"] != n-2 || pending.Consumers["c1"] != 0 {
		t.Fatalf("XPENDING after XAUTOCLAIM: %+v, want all %d pending entries with c2", pending, n-2)
	}
	ext, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: group, Start: "-", End: "+", Count: 10, Consumer: "c2",
	}).Result()
	if err != nil {
		t.Fatalf("XPENDING %s %s - + 10 c2: %v", stream, group, err)
	}
	for i, p := range ext {
		if p.ID != ids[2+i] || p.Consumer != "c2" || p.RetryCount < 2 {
			t.Fatalf("pending entry %d of c2 = %+v, want id %s delivered at least twice", i, p, ids[2+i])
		}
	}
	t.Logf("stream %s: %d added, 2 acked by c1, %s claimed by c2", stream, n, strings.Join(claimedIDs, ","))
}

func xpending(ctx context.Context, t *testing.T, rdb *redis.Client, stream, group string) *redis.XPending {
	t.Helper()
	p, err := rdb.XPending(ctx, stream, group).Result()
	if err != nil {
		t.Fatalf("XPENDING %s %s: %v", stream, group, err)
	}
	return p
}
