package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// redisShards is the backends scenario's sharded-Redis part: a pre-filled
// Redis stream of one shard and one of four, each read by an ingest
// pipeline running on two fvsql processes (one broker shared by both, in
// the bench process). With one shard the two processes' bridges compete
// for the entries of one key (XREADGROUP); with four each holds the
// leases of two shards. Done when FLUSH returns and the output holds
// every row.
func redisShards(ctx context.Context, o Options, c BackendsConfig) error {
	h, ctx, err := openHarness(ctx, o, true)
	if err != nil {
		return err
	}
	defer h.close()
	if h.brokers() == nil {
		fmt.Fprintln(h.o.Out, "redis shards: skipped (two processes need a broker they share)")
		return nil
	}
	second, err := StartServer(ctx, ServerConfig{
		Mode: h.o.Mode, Exe: h.o.Exe, Kafka: h.brokers(), TopicPrefix: h.prefix,
		DataDir: filepath.Join(h.dir, "server-shards-2"), FileRoot: filepath.Join(h.dir, "files"), SyncWrites: h.o.SyncWrites,
		Stream: h.o.Stream, Logger: h.log, LogLevel: h.o.LogLevel,
	})
	if err != nil {
		return err
	}
	defer second.Close()
	rdb := goredis.NewClient(&goredis.Options{Addr: c.Redis})
	defer rdb.Close()
	backend := "redis://" + c.Redis
	tb := Table{
		Title:  fmt.Sprintf("backends: a Redis stream of %s rows read by an ingest pipeline on two fvsql processes", Count(float64(c.Rows))),
		Header: []string{"shards", "duration", "rows/s", "server 1 cpu s", "host cpu s", "ratio to 1 shard"},
	}
	var base float64
	for _, shards := range []int{1, 4} {
		key := "bench_" + h.id + "_s" + strconv.Itoa(shards)
		in, out := h.name("bk_rs"+strconv.Itoa(shards)), h.name("bk_rso"+strconv.Itoa(shards))
		if err := h.execf(ctx, "CREATE STREAM %s %s WITH (backend = '%s', key = '%s', shards = %d)", in, backendColumns, backend, key, shards); err != nil {
			return err
		}
		keys := make([]string, shards)
		for i := range keys {
			keys[i] = h.prefix + key
			if shards > 1 {
				keys[i] += ":" + strconv.Itoa(i)
			}
		}
		buf := make([]byte, 0, 256)
		for from := int64(0); from < c.Rows; from += 1000 {
			pl := rdb.Pipeline()
			for i := from; i < min(from+1000, c.Rows); i++ {
				buf = backendRow(buf[:0], i)
				pl.XAdd(ctx, &goredis.XAddArgs{Stream: keys[i%int64(shards)], Values: []any{"v", string(buf)}})
			}
			if _, err := pl.Exec(ctx); err != nil {
				return fmt.Errorf("XADD: %w", err)
			}
		}
		var n int64
		ph, err := h.measure(ctx, "backends-redis-shards-"+strconv.Itoa(shards), func() error {
			if err := h.execf(ctx, "CREATE STREAM %s AS SELECT id FROM %s WHERE id >= 0", out, in); err != nil {
				return err
			}
			deadline := time.Now().Add(c.CatchupTimeout)
			for time.Now().Before(deadline) {
				if err := flush(ctx, h.conn, c.CatchupTimeout); err != nil {
					return err
				}
				if n, err = countRows(ctx, h.conn, out); err != nil || n >= c.Rows {
					return err
				}
			}
			return fmt.Errorf("%s holds %d rows of %d after %s", out, n, c.Rows, c.CatchupTimeout)
		})
		if err != nil {
			return err
		}
		if n != c.Rows {
			return fmt.Errorf("OUTPUT CHECK FAILED: %s holds %d rows, want %d", out, n, c.Rows)
		}
		rate := Rate(c.Rows, ph.dur)
		if shards == 1 {
			base = rate
		}
		tb.Add(strconv.Itoa(shards), Secs(ph.dur), Count(rate), cpuSecs(ph.srvCPU), cpuSecs(ph.hostCPU), fmt.Sprintf("%.2f", rate/base))
		for _, rel := range []string{out, in} {
			if err := h.exec(ctx, "DROP STREAM "+rel); err != nil {
				return err
			}
		}
	}
	tb.Notes = []string{
		"pre-filled by XADD (round-robin over the shard keys), then CREATE STREAM y AS SELECT id FROM it WHERE id >= 0; done when FLUSH returns and y holds every row (FLUSH runs in a loop, so the duration includes one FLUSH at least)",
		"both processes run the pipeline: with 1 shard their ingest bridges share the key's entries (XREADGROUP), with 4 each leases 2 shards",
		"server 1 cpu = the process the bench is connected to; host cpu = every process (both servers, the broker in the bench process, redis-server)",
	}
	tb.Print(h.o.Out)
	return nil
}
