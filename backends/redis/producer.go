package redis

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// Producer returns a producer on the shared client. It is also a
// backends.PositionedProducer.
func (s *Streamer) Producer(context.Context) (backends.Producer, error) {
	return &producer{s: s}, nil
}

type producer struct {
	s    *Streamer
	next atomic.Uint32 // round-robin shard of the next message without a key
}

// shardOf routes a message of a stream with n shards: a keyed message to
// the FNV-1a hash of its key modulo n (one key, one shard, in send
// order), a message without a key to the next shard in turn.
func (p *producer) shardOf(key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	if key == nil {
		return int(p.next.Add(1) % uint32(n))
	}
	h := fnv.New32a()
	_, _ = h.Write(key)
	return int(h.Sum32() % uint32(n))
}

var _ backends.PositionedProducer = (*producer)(nil)

// Send appends the messages with XADD (fields k and v, see the package
// doc), one MULTI/EXEC round trip for the whole batch: Redis applies all
// or none of it, and go-redis never re-sends a transaction whose EXEC
// may have run, so a failed Send leaves no duplicates behind. It returns
// once Redis acknowledged the EXEC. Message.Timestamp is not stored: an
// entry's time is the milliseconds of the ID Redis assigns.
func (p *producer) Send(ctx context.Context, msgs []backends.Message) error {
	return p.send(ctx, msgs, nil)
}

// SendAt is Send plus, inside the same MULTI/EXEC, an HSET of positions
// into the positions hash (<key>:fvsql:positions) of every stream the
// messages go to. With no messages there is no stream to record the
// positions in, and nothing is done (a replay of such a batch writes
// nothing either).
func (p *producer) SendAt(ctx context.Context, msgs []backends.Message, positions map[string]int64) error {
	return p.send(ctx, msgs, positions)
}

func (p *producer) send(ctx context.Context, msgs []backends.Message, positions map[string]int64) error {
	if len(msgs) == 0 {
		return nil
	}
	for i := range msgs {
		if msgs[i].Stream == "" {
			return pgerror.New(pgerror.InvalidParameterValue, "redis: message without a stream")
		}
	}
	s := p.s
	names := streamsOf(msgs)
	confs, err := s.confs(ctx, names)
	if err != nil {
		return err
	}
	var posArgs []any
	if len(positions) > 0 {
		posArgs = make([]any, 0, 2*len(positions))
		for src, pos := range positions {
			posArgs = append(posArgs, src, pos)
		}
	}
	// Reused per stream name, since batches are usually of one stream.
	keysOf := make(map[string][]string, len(names))
	for _, n := range names {
		keysOf[n] = s.shardKeys(n, confs[n].shards)
	}
	err = s.txPipelined(ctx, func(pl goredis.Pipeliner) error {
		for i := range msgs {
			m := &msgs[i]
			var vals []any
			if m.Key != nil {
				vals = []any{"k", m.Key, "v", payloadArg(m.Payload)}
			} else {
				vals = []any{"v", payloadArg(m.Payload)}
			}
			keys := keysOf[m.Stream]
			a := &goredis.XAddArgs{Stream: keys[p.shardOf(m.Key, len(keys))], Values: vals}
			if n := confs[m.Stream].maxLen; n > 0 {
				a.MaxLen, a.Approx = n, true
			}
			pl.XAdd(ctx, a)
		}
		if posArgs != nil {
			for _, n := range names {
				pl.HSet(ctx, s.PositionsKey(n), posArgs...)
			}
		}
		return nil
	})
	if err != nil {
		return s.fail(ctx, err, "append %d messages", len(msgs))
	}
	return nil
}

// payloadArg keeps an empty payload an empty bulk string (a nil []byte
// would be written the same way, but be explicit).
func payloadArg(b []byte) any {
	if b == nil {
		return ""
	}
	return b
}

// streamsOf lists the distinct stream names of msgs in first-seen order.
func streamsOf(msgs []backends.Message) []string {
	first := msgs[0].Stream
	same := true
	for i := range msgs {
		if msgs[i].Stream != first {
			same = false
			break
		}
	}
	if same {
		return []string{first}
	}
	seen := map[string]bool{}
	var out []string
	for i := range msgs {
		if n := msgs[i].Stream; !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Positions returns the source positions SendAt recorded for the stream.
func (p *producer) Positions(ctx context.Context, stream string) (map[string]int64, error) {
	s := p.s
	h, err := s.rdb.HGetAll(ctx, s.PositionsKey(stream)).Result()
	if err != nil {
		return nil, s.fail(ctx, err, "read positions of %s", s.Key(stream))
	}
	out := make(map[string]int64, len(h))
	for src, v := range h {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, pgerror.New(pgerror.DataException, "redis: position %q of %s in %s is not an integer", v, src, s.PositionsKey(stream))
		}
		out[src] = n
	}
	return out, nil
}

func (p *producer) Close() error { return nil }
