package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	fvredis "github.com/fvsql/fvsql/backends/redis"
	"github.com/fvsql/fvsql/tests/testenv"
)

// benchBatch is the number of messages per Send and per Read.
const benchBatch = 1000

// benchPayload is a 100-byte JSON object.
func benchPayload(i int) []byte {
	p := fmt.Appendf(nil, `{"id":%010d,"user":"u%06d","amount":%08d,"ts":"2024-01-01T00:00:00Z","k":"`, i, i%1000000, i%100000000)
	for len(p) < 98 {
		p = append(p, 'x')
	}
	p = append(p, `"}`...)
	return p
}

func benchEnv(b *testing.B) (*fvredis.Streamer, string) {
	b.Helper()
	addr := testenv.Redis(b)
	prefix := testenv.UniqueName("fvsqlbench-") + ":"
	ctx := context.Background()
	st, err := backends.Open(ctx, "redis://"+addr, backends.Env{TopicPrefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	rs := st.(*fvredis.Streamer)
	stream := "bench"
	if err := rs.CreateStream(ctx, backends.StreamSpec{Name: stream}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = rs.DropStream(context.Background(), stream)
		_ = rs.Close()
	})
	return rs, stream
}

func benchMessages(stream string, from int) []backends.Message {
	msgs := make([]backends.Message, benchBatch)
	for i := range msgs {
		msgs[i] = backends.Message{Stream: stream, Key: fmt.Appendf(nil, "k%d", (from+i)%1000), Payload: benchPayload(from + i)}
	}
	return msgs
}

func produce(b *testing.B, st *fvredis.Streamer, stream string, rows int) {
	b.Helper()
	ctx := context.Background()
	p, _ := st.Producer(ctx)
	for n := 0; n < rows; n += benchBatch {
		if err := p.Send(ctx, benchMessages(stream, n)); err != nil {
			b.Fatal(err)
		}
	}
}

func report(b *testing.B, rows int, d time.Duration) {
	b.ReportMetric(float64(rows)/d.Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRedisProduce: Send of batches of 1000 100-byte JSON messages
// (one MULTI/EXEC of XADDs per batch). One op = one batch.
func BenchmarkRedisProduce(b *testing.B) {
	st, stream := benchEnv(b)
	ctx := context.Background()
	p, _ := st.Producer(ctx)
	batches := make([][]backends.Message, 8)
	for i := range batches {
		batches[i] = benchMessages(stream, i*benchBatch)
	}
	b.ResetTimer()
	start := time.Now()
	i := 0
	for b.Loop() {
		if err := p.Send(ctx, batches[i%len(batches)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	report(b, i*benchBatch, time.Since(start))
}

// BenchmarkRedisProduceMaxLen is BenchmarkRedisProduce on a stream with
// maxlen (every XADD carries MAXLEN ~).
func BenchmarkRedisProduceMaxLen(b *testing.B) {
	st, stream := benchEnv(b)
	ctx := context.Background()
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: stream, Options: map[string]string{"maxlen": "100000"}}); err != nil {
		b.Fatal(err)
	}
	p, _ := st.Producer(ctx)
	msgs := benchMessages(stream, 0)
	b.ResetTimer()
	start := time.Now()
	i := 0
	for b.Loop() {
		if err := p.Send(ctx, msgs); err != nil {
			b.Fatal(err)
		}
		i++
	}
	report(b, i*benchBatch, time.Since(start))
}

// BenchmarkRedisConsume: a consumer without group reading b.N batches
// (Read of 1000) that were produced before the timer started.
func BenchmarkRedisConsume(b *testing.B) {
	st, stream := benchEnv(b)
	rows := b.N * benchBatch
	produce(b, st, stream, rows)
	ctx := context.Background()
	c, err := st.Consumer(ctx, stream, backends.ConsumerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	start := time.Now()
	got := 0
	for {
		msgs, err := c.Read(ctx, benchBatch)
		if errors.Is(err, backends.ErrEndOfStream) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		got += len(msgs)
	}
	d := time.Since(start)
	if got != rows {
		b.Fatalf("read %d of %d", got, rows)
	}
	report(b, rows, d)
}

// BenchmarkRedisConsumeGroup: a group member reading and acknowledging
// (XREADGROUP + XACK per batch of 1000).
func BenchmarkRedisConsumeGroup(b *testing.B) {
	st, stream := benchEnv(b)
	rows := b.N * benchBatch
	produce(b, st, stream, rows)
	ctx := context.Background()
	c, err := st.Consumer(ctx, stream, backends.ConsumerOptions{Group: "g", Member: "m"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	start := time.Now()
	got := 0
	for {
		msgs, err := c.Read(ctx, benchBatch)
		if errors.Is(err, backends.ErrEndOfStream) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Ack(ctx, msgs); err != nil {
			b.Fatal(err)
		}
		got += len(msgs)
	}
	d := time.Since(start)
	if got != rows {
		b.Fatalf("read %d of %d", got, rows)
	}
	report(b, rows, d)
}

// BenchmarkRedisScan: Scan of b.N*1000 rows.
func BenchmarkRedisScan(b *testing.B) {
	st, stream := benchEnv(b)
	rows := b.N * benchBatch
	produce(b, st, stream, rows)
	b.ResetTimer()
	start := time.Now()
	got := 0
	if err := st.Scan(context.Background(), stream, func(_ int32, msgs []backends.Message) error {
		got += len(msgs)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if got != rows {
		b.Fatalf("scanned %d of %d", got, rows)
	}
	report(b, rows, d)
}
