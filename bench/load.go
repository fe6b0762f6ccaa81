package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// syms are the ticker symbols rows cycle through.
var syms = []string{"ACME", "INIT", "GLOBX", "UMBR", "WAYNE", "STARK", "OSCP", "TYRL"}

// tsBase is the timestamp of row 0; row i is i milliseconds later.
var tsBase = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// Gen generates the bench rows: row i is deterministic, so aggregates
// over any prefix of rows are known without reading them back.
//
//	id    i                          (only WithID)
//	sym   syms[i % 8]
//	price (i % 10000) / 100 + 0.25   (0.25 … 100.24, uniform)
//	qty   (i * 7919) % 100 + 1       (1 … 100, uniform: 90% have qty > 10)
//	ts    2026-01-01 09:00:00 + i ms
type Gen struct {
	WithID bool
}

// Price, Qty, Sym and TS are row i's values.
func (Gen) Price(i int64) float64 { return float64(i%10000)/100 + 0.25 }
func (Gen) Qty(i int64) int64     { return (i*7919)%100 + 1 }
func (Gen) Sym(i int64) string    { return syms[i%int64(len(syms))] }
func (Gen) TS(i int64) time.Time  { return tsBase.Add(time.Duration(i) * time.Millisecond) }

// AppendJSON appends row i as the JSON object fvsql stores.
func (g Gen) AppendJSON(b []byte, i int64) []byte {
	b = append(b, '{')
	if g.WithID {
		b = append(b, `"id":`...)
		b = strconv.AppendInt(b, i, 10)
		b = append(b, ',')
	}
	b = append(b, `"sym":"`...)
	b = append(b, g.Sym(i)...)
	b = append(b, `","price":`...)
	b = strconv.AppendFloat(b, g.Price(i), 'g', -1, 64)
	b = append(b, `,"qty":`...)
	b = strconv.AppendInt(b, g.Qty(i), 10)
	b = append(b, `,"ts":"`...)
	b = g.TS(i).AppendFormat(b, "2006-01-02T15:04:05.000")
	return append(b, `"}`...)
}

// AppendSQLValues appends row i as a VALUES tuple of literals:
// ('ACME', 12.5, 42, '2026-01-01 09:00:00.123').
func (g Gen) AppendSQLValues(b []byte, i int64) []byte {
	b = append(b, '(')
	if g.WithID {
		b = strconv.AppendInt(b, i, 10)
		b = append(b, ", "...)
	}
	b = append(b, '\'')
	b = append(b, g.Sym(i)...)
	b = append(b, "', "...)
	b = strconv.AppendFloat(b, g.Price(i), 'g', -1, 64)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, g.Qty(i), 10)
	b = append(b, ", '"...)
	b = g.TS(i).AppendFormat(b, "2006-01-02 15:04:05.000")
	return append(b, "')"...)
}

// Expect holds the aggregates the bench queries must return over rows
// 0 … N-1.
type Expect struct {
	N              int64
	PriceOver      float64 // threshold of the select scenario's WHERE
	CountOver      int64   // count(*) WHERE price > PriceOver
	SumQtyOver     int64   // sum(qty) WHERE price > PriceOver
	CountQtyOver10 int64   // count(*) WHERE qty > 10 (the pipeline's filter)
}

// Expected computes the aggregates over rows 0 … n-1.
func (g Gen) Expected(n int64, priceOver float64) Expect {
	e := Expect{N: n, PriceOver: priceOver}
	for i := int64(0); i < n; i++ {
		if g.Price(i) > priceOver {
			e.CountOver++
			e.SumQtyOver += g.Qty(i)
		}
		if g.Qty(i) > 10 {
			e.CountQtyOver10++
		}
	}
	return e
}

// LoadResult describes a load.
type LoadResult struct {
	Rows     int64
	Bytes    int64
	Duration time.Duration
}

// LoadRows produces rows from … from+n-1 into the topic with franz-go and
// waits for every acknowledgement. row appends row i's payload. Without
// key, row i goes to partition i % partitions with no key; with key, the
// record carries key(i) and goes where Kafka's Java clients (and fvsql)
// put that key: murmur2, so a stream declared WITH (key = …) sees each
// key in the partition its own producers would use.
func LoadRows(ctx context.Context, brokers []string, topic string, partitions int, from, n int64,
	row func(b []byte, i int64) []byte, key func(i int64) []byte) (LoadResult, error) {
	part := kgo.ManualPartitioner()
	if key != nil {
		part = kgo.StickyKeyPartitioner(nil)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(part),
		kgo.MaxBufferedRecords(1<<18),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordRetries(20),
	)
	if err != nil {
		return LoadResult{}, err
	}
	defer cl.Close()
	var (
		firstErr atomic.Value
		wg       sync.WaitGroup
		bytes    int64
	)
	start := time.Now()
	slab := make([]byte, 0, 1<<20)
	for i := from; i < from+n; i++ {
		if ctx.Err() != nil {
			break
		}
		if cap(slab)-len(slab) < 512 {
			slab = make([]byte, 0, 1<<20)
		}
		off := len(slab)
		slab = row(slab, i)
		val := slab[off:len(slab):len(slab)]
		bytes += int64(len(val))
		rec := &kgo.Record{Value: val}
		if key != nil {
			rec.Key = key(i)
		} else {
			rec.Partition = int32(i % int64(partitions))
		}
		wg.Add(1)
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return LoadResult{}, fmt.Errorf("load %s: %w", topic, err)
	}
	if err := ctx.Err(); err != nil {
		return LoadResult{}, fmt.Errorf("load %s: %w", topic, err)
	}
	return LoadResult{Rows: n, Bytes: bytes, Duration: time.Since(start)}, nil
}

// partitionOf is the partition Kafka's Java clients (and fvsql) give a
// record key in a topic of n partitions (murmur2).
func partitionOf(key []byte, n int) int32 {
	return int32(kgo.StickyKeyPartitioner(nil).ForTopic("").Partition(&kgo.Record{Key: key}, n))
}

// createTopic creates a topic (an existing one is fine).
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	resp, err := adm.CreateTopic(ctx, int32(partitions), -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !kerrIs(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func kerrIs(err error, target *kerr.Error) bool {
	for err != nil {
		if e, ok := err.(*kerr.Error); ok && e == target {
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// endOffsets returns the read_committed end offset of every partition.
func endOffsets(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	lo, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := lo.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}
