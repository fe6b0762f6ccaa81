package file_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
)

// BenchmarkFileProduceConsume produces b.N 100-byte JSON rows in Sends of
// the given size (each fsynced), then consumes them with one consumer,
// and reports rows/s of each phase.
func BenchmarkFileProduceConsume(b *testing.B) {
	for _, batch := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint("batch", batch), func(b *testing.B) {
			dir := b.TempDir()
			ctx := context.Background()
			st := openURI(b, "file://"+dir+"/", backends.Env{FileRoot: dir})
			p, _ := st.Producer(ctx)
			row := func(i int) []byte {
				r := fmt.Appendf(make([]byte, 0, 100), `{"id":%010d,"user":"u%05d","amount":%06d,"note":"`, i, i%100000, i%999983)
				for len(r) < 98 {
					r = append(r, 'n')
				}
				return append(r, '"', '}')
			}
			msgs := make([]backends.Message, 0, batch)
			b.SetBytes(100)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; {
				msgs = msgs[:0]
				for ; len(msgs) < batch && i < b.N; i++ {
					msgs = append(msgs, backends.Message{Stream: "bench.log", Payload: row(i)})
				}
				if err := p.Send(ctx, msgs); err != nil {
					b.Fatal(err)
				}
			}
			produce := time.Since(start)
			start = time.Now()
			c, err := st.Consumer(ctx, "bench.log", backends.ConsumerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				got, err := c.Read(ctx, 10000)
				if errors.Is(err, backends.ErrEndOfStream) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n += len(got)
			}
			consume := time.Since(start)
			b.StopTimer()
			c.Close()
			if n != b.N {
				b.Fatalf("consumed %d of %d", n, b.N)
			}
			b.ReportMetric(float64(b.N)/produce.Seconds(), "produce-rows/s")
			b.ReportMetric(float64(b.N)/consume.Seconds(), "consume-rows/s")
		})
	}
}
