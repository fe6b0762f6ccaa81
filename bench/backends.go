package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

// BackendsConfig configures the backends scenario.
type BackendsConfig struct {
	Rows       int64    // rows per measurement (default 1M)
	Partitions int      // of the Kafka source stream (default 4)
	Backends   []string // kafka, redis, file (default all)
	Redis      string   // host:port of a Redis server; empty: the redis part is skipped
	// CatchupTimeout bounds one measurement (default 5m).
	CatchupTimeout time.Duration
}

// Backends targets (rows/s through fvsql).
const (
	BackendsRedisTarget = 50_000
	BackendsFileTarget  = 300_000
)

// backendRow is the backends scenario's row, about 100 bytes of JSON.
func backendRow(b []byte, i int64) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"name":"user-`...)
	b = append(b, fmt.Sprintf("%07d", i%10_000_000)...)
	b = append(b, `","score":`...)
	b = strconv.AppendFloat(b, float64(i%10000)/4, 'f', 2, 64)
	b = append(b, `,"pad":"`...)
	h := mix(uint64(i))
	const hexd = "0123456789abcdef"
	for j := 0; j < 40; j++ {
		b = append(b, hexd[(h>>(4*(j%16)))&15])
	}
	return append(b, `"}`...)
}

const backendColumns = "(id BIGINT, name TEXT, score DOUBLE PRECISION, pad TEXT)"

// backendResult is one measurement.
type backendResult struct {
	backend, direction, how string
	ph                      *phase
	rows                    int64
	target                  float64 // rows/s (0: none)
	perCore                 float64 // rows per CPU-second (0: none)
	check                   string
	skipped                 string
}

// backendsRun is the backends scenario's state: the harness, the loaded
// source stream and the measurements so far.
type backendsRun struct {
	h       *harness
	c       BackendsConfig
	src     string // the Kafka source stream of every produce
	idSum   int64  // sum(id) of the rows
	results []*backendResult
}

// Backends runs the backends scenario.
func Backends(ctx context.Context, o Options, c BackendsConfig) error {
	orDefault(&c.Rows, 1_000_000)
	orDefault(&c.Partitions, 4)
	orDefaults(&c.Backends, "kafka", "redis", "file")
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	for _, b := range c.Backends {
		if b != "kafka" && b != "redis" && b != "file" {
			return fmt.Errorf("unknown backend %q (want kafka, redis, file)", b)
		}
	}
	parent := ctx
	h, ctx, err := openHarness(ctx, o, false)
	if err != nil {
		return err
	}
	defer h.close()
	files := filepath.Join(h.dir, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		return err
	}
	redisLine := "redis:    --redis " + c.Redis
	if c.Redis == "" && contains(c.Backends, "redis") {
		redisLine = "redis:    none given (--redis host:port or FVSQL_TEST_REDIS): the redis rows are skipped"
	}
	b := &backendsRun{h: h, c: c, src: h.name("bk_src"), idSum: c.Rows * (c.Rows - 1) / 2}
	h.header("backends",
		fmt.Sprintf("workload: %s rows of ~100-byte JSON %s per measurement; a %d-partition Kafka stream %s loaded by franz-go is the source of every produce:", Count(float64(c.Rows)), backendColumns, c.Partitions, b.src),
		"  produce  kafka: CREATE STREAM x AS SELECT * FROM src (Kafka → Kafka, as the pipeline scenario); redis, file: CREATE SINK x AS SELECT * FROM src WITH (backend = …)",
		"           done: redis XLEN reaches the rows; file and kafka: consumed = rows, lag = 0, then FLUSH (which waits for the sink bridge's group)",
		"  consume  a stream declared over a pre-filled backend (redis: XADD pipelined by go-redis, field v; file: a JSON-lines text file; kafka: src):",
		"           select  = SELECT count(*), sum(id) FROM it (bounded scan);  ingest = CREATE STREAM y AS SELECT id FROM it WHERE id >= 0 (ingest bridge + stage), done at consumed = rows",
		redisLine,
		"files:    "+files,
	)
	if _, err := h.createStream(ctx, streamSpec{name: b.src, columns: backendColumns, partitions: c.Partitions, rows: c.Rows, row: backendRow}); err != nil {
		return err
	}

	for _, backend := range c.Backends {
		switch backend {
		case "kafka":
			out := h.name("bk_kcopy")
			if err := b.ingest(ctx, &backendResult{backend: "kafka", direction: "produce", how: "copy", perCore: PipelinePerCoreTarget},
				fmt.Sprintf("CREATE STREAM %s AS SELECT * FROM %s", out, b.src), out); err != nil {
				return err
			}
			if err := h.exec(ctx, "DROP STREAM "+out); err != nil {
				return err
			}
			if err := b.selectCount(ctx, "kafka", b.src, SelectTarget, 0); err != nil {
				return err
			}
		case "redis":
			if c.Redis == "" {
				b.results = append(b.results, &backendResult{backend: "redis", skipped: "skipped: no Redis (--redis host:port)"})
				continue
			}
			if err := b.redis(ctx); err != nil {
				return err
			}
		case "file":
			if err := b.file(ctx, files); err != nil {
				return err
			}
		}
	}

	tb := Table{
		Title: fmt.Sprintf("backends: %s rows of ~100-byte JSON through fvsql", Count(float64(c.Rows))),
		Header: []string{"backend", "direction", "how", "duration", "rows/s", "server cpu s", "rows/server-cpu-s", "broker cpu s", "other cpu s",
			"peak RSS", "targets"},
	}
	var notes []string
	for _, res := range b.results {
		if res.skipped != "" {
			tb.Add(res.backend, "-", "-", "-", "-", "-", "-", "-", "-", "-", res.skipped)
			continue
		}
		ph := res.ph
		rate := Rate(res.rows, ph.dur)
		target := "-"
		switch {
		case res.target > 0:
			target = verdict(rate >= res.target) + " (≥ " + Count(res.target) + " rows/s)"
		case res.perCore > 0:
			target = verdict(Rate(res.rows, ph.srvCPU) >= res.perCore) + " (≥ " + Count(res.perCore) + " rows/cpu-s)"
		}
		if res.check != "" {
			target = "OUTPUT WRONG: see notes"
			notes = append(notes, res.check)
		}
		tb.Add(res.backend, res.direction, res.how, Secs(ph.dur), Count(rate), cpuSecs(ph.srvCPU), perCPU(res.rows, ph.srvCPU),
			cpuSecs(ph.brokerCPU), cpuSecs(ph.otherCPU), MiB(ph.u1.PeakRSS), target)
	}
	tb.Notes = append([]string{
		"duration = from CREATE (or the query) until done (see above); rows/s = rows ÷ duration",
		"server cpu = the fvsql server's process; broker cpu = the bench process hosting the embedded broker in child mode; other cpu = the rest of the host (redis-server, other tenants)",
		fmt.Sprintf("targets: redis ≥ %s rows/s, file ≥ %s rows/s; kafka as the pipeline scenario (≥ %s rows per CPU-second) and the select scenario (≥ %s rows/s)",
			Count(BackendsRedisTarget), Count(BackendsFileTarget), Count(PipelinePerCoreTarget), Count(SelectTarget)),
		"every output is checked: row counts (and sum(id) for selects) equal the input's",
	}, notes...)
	tb.Print(h.o.Out)
	h.printProfiles()
	if c.Redis != "" && contains(c.Backends, "redis") {
		h.close() // one server at a time on the host
		return redisShards(parent, o, c)
	}
	return nil
}

// measure runs one measurement as a phase of the server: start (the
// statement that begins it), then done until it is complete (bounded by
// the catch-up timeout); then check says what is wrong with its output
// ("" for nothing; nil: no check).
func (b *backendsRun) measure(ctx context.Context, res *backendResult, start func() error, done func(context.Context) error, check func() string) error {
	ph, err := b.h.measure(ctx, "backends-"+res.backend+"-"+res.direction+"-"+res.how, func() error {
		if err := start(); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, b.c.CatchupTimeout)
		defer cancel()
		return done(dctx)
	})
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", res.backend, res.direction, res.how, err)
	}
	res.ph, res.rows = ph, b.c.Rows
	if check != nil {
		res.check = check()
		if res.check != "" {
			fmt.Fprintln(os.Stderr, "bench:", res.check)
		}
	}
	b.results = append(b.results, res)
	return nil
}

// selectCount is the bounded consume measurement over a relation.
func (b *backendsRun) selectCount(ctx context.Context, backend, rel string, target, perCore float64) error {
	var got []int64
	return b.measure(ctx, &backendResult{backend: backend, direction: "consume", how: "select", target: target, perCore: perCore},
		func() error { return nil },
		func(dctx context.Context) error {
			var err error
			got, err = queryInts(dctx, b.h.conn, "SELECT count(*), sum(id) FROM "+rel)
			return err
		},
		func() string {
			if !equalInts(got, []int64{b.c.Rows, b.idSum}) {
				return fmt.Sprintf("OUTPUT CHECK FAILED: %s: SELECT count(*), sum(id) FROM %s returned %v, want [%d %d]", backend, rel, got, b.c.Rows, b.idSum)
			}
			return ""
		})
}

// ingest measures a pipeline that create starts, called out, until it has
// consumed every row with no lag left; its output must hold every row.
func (b *backendsRun) ingest(ctx context.Context, res *backendResult, create, out string) error {
	return b.measure(ctx, res,
		func() error { return b.h.exec(ctx, create) },
		func(dctx context.Context) error {
			_, err := waitPipeline(dctx, b.h.conn, out, b.c.Rows, true, b.c.CatchupTimeout)
			return err
		},
		func() string { return checkCount(ctx, b.h.conn, res.backend, out, b.c.Rows) })
}

// consume measures both reads of a stream declared over a pre-filled
// backend: a bounded select, then an ingest pipeline. It drops the stream.
func (b *backendsRun) consume(ctx context.Context, backend, in, out string, target float64) error {
	if err := b.selectCount(ctx, backend, in, target, 0); err != nil {
		return err
	}
	if err := b.ingest(ctx, &backendResult{backend: backend, direction: "consume", how: "ingest", target: target},
		fmt.Sprintf("CREATE STREAM %s AS SELECT id FROM %s WHERE id >= 0", out, in), out); err != nil {
		return err
	}
	if err := b.h.exec(ctx, "DROP STREAM "+out); err != nil {
		return err
	}
	return b.h.exec(ctx, "DROP STREAM "+in)
}

// checkCount compares a relation's row count with want.
func checkCount(ctx context.Context, conn *pgx.Conn, backend, rel string, want int64) string {
	if err := flush(ctx, conn, 5*time.Minute); err != nil {
		return fmt.Sprintf("OUTPUT CHECK FAILED: %s: %v", backend, err)
	}
	n, err := countRows(ctx, conn, rel)
	if err != nil {
		return fmt.Sprintf("OUTPUT CHECK FAILED: %s: %v", backend, err)
	}
	if n != want {
		return fmt.Sprintf("OUTPUT CHECK FAILED: %s: %s holds %d rows, want %d", backend, rel, n, want)
	}
	return ""
}

// redis measures a sink into Redis and reads of a pre-filled Redis
// stream.
func (b *backendsRun) redis(ctx context.Context) error {
	h, c, conn := b.h, b.c, b.h.conn
	rdb := goredis.NewClient(&goredis.Options{Addr: c.Redis})
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := rdb.Ping(pctx).Err()
	cancel()
	if err != nil {
		return fmt.Errorf("redis at %s: %w", c.Redis, err)
	}
	outKey, inKey := "bench_"+h.id+"_out", "bench_"+h.id+"_in"
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, k := range []string{outKey, inKey} {
			k = h.prefix + k
			rdb.Del(dctx, k, k+":fvsql:config", k+":fvsql:positions")
		}
	}()
	backend := "redis://" + c.Redis
	sink := h.name("bk_rsink")
	err = b.measure(ctx, &backendResult{backend: "redis", direction: "produce", how: "sink", target: BackendsRedisTarget},
		func() error {
			return h.execf(ctx, "CREATE SINK %s AS SELECT * FROM %s WITH (backend = '%s', key = '%s')", sink, b.src, backend, outKey)
		},
		func(dctx context.Context) error {
			for {
				n, err := rdb.XLen(dctx, h.prefix+outKey).Result()
				if err == nil && n >= c.Rows {
					return nil
				}
				select {
				case <-dctx.Done():
					st, _ := pipelineStat(ctx, conn, sink)
					return fmt.Errorf("XLEN %s is %d after %s, want %d; pipeline: %s", h.prefix+outKey, n, c.CatchupTimeout, c.Rows, st)
				case <-time.After(50 * time.Millisecond):
				}
			}
		},
		func() string {
			if err := flush(ctx, conn, 5*time.Minute); err != nil {
				return "OUTPUT CHECK FAILED: redis sink: " + err.Error()
			}
			n, err := rdb.XLen(ctx, h.prefix+outKey).Result()
			if err != nil || n != c.Rows {
				return fmt.Sprintf("OUTPUT CHECK FAILED: redis sink: XLEN %s = %d (%v), want %d", h.prefix+outKey, n, err, c.Rows)
			}
			return ""
		})
	if err != nil {
		return err
	}
	if err := h.exec(ctx, "DROP SINK "+sink); err != nil {
		return err
	}

	// Pre-fill the input stream: XADD pipelined, 1000 per round trip.
	t0 := time.Now()
	buf := make([]byte, 0, 256)
	for from := int64(0); from < c.Rows; from += 1000 {
		pl := rdb.Pipeline()
		for i := from; i < min(from+1000, c.Rows); i++ {
			buf = backendRow(buf[:0], i)
			pl.XAdd(ctx, &goredis.XAddArgs{Stream: h.prefix + inKey, Values: []any{"v", string(buf)}})
		}
		if _, err := pl.Exec(ctx); err != nil {
			return fmt.Errorf("XADD %s: %w", h.prefix+inKey, err)
		}
	}
	fill := time.Since(t0)
	fmt.Fprintf(h.o.Out, "redis: pre-filled %s with %s entries in %s (%s entries/s, go-redis pipelines of 1000 XADDs)\n", h.prefix+inKey, Count(float64(c.Rows)), Secs(fill), Count(Rate(c.Rows, fill)))
	in := h.name("bk_rin")
	if err := h.execf(ctx, "CREATE STREAM %s %s WITH (backend = '%s', key = '%s')", in, backendColumns, backend, inKey); err != nil {
		return err
	}
	return b.consume(ctx, "redis", in, h.name("bk_ringest"), BackendsRedisTarget)
}

// file measures a sink into a file log and reads of a pre-written
// JSON-lines file.
func (b *backendsRun) file(ctx context.Context, dir string) error {
	h, c, conn := b.h, b.c, b.h.conn
	outPath, inPath := filepath.Join(dir, "out.log"), filepath.Join(dir, "in.jsonl")
	sink, outRel := h.name("bk_fsink"), h.name("bk_fout")
	err := b.measure(ctx, &backendResult{backend: "file", direction: "produce", how: "sink", target: BackendsFileTarget},
		func() error {
			return h.execf(ctx, "CREATE SINK %s AS SELECT * FROM %s WITH (backend = 'file://%s')", sink, b.src, outPath)
		},
		func(dctx context.Context) error {
			if _, err := waitPipeline(dctx, conn, sink, c.Rows, true, c.CatchupTimeout); err != nil {
				return err
			}
			return flush(dctx, conn, c.CatchupTimeout)
		},
		func() string {
			if err := h.execf(ctx, "CREATE STREAM %s %s WITH (backend = 'file://%s')", outRel, backendColumns, outPath); err != nil {
				return "OUTPUT CHECK FAILED: file sink: " + err.Error()
			}
			return checkCount(ctx, conn, "file sink", outRel, c.Rows)
		})
	if err != nil {
		return err
	}
	if err := h.exec(ctx, "DROP SINK "+sink); err != nil {
		return err
	}
	_ = h.exec(ctx, "DROP STREAM "+outRel)

	t0 := time.Now()
	f, err := os.Create(inPath)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 0, 256)
	for i := int64(0); i < c.Rows; i++ {
		buf = append(backendRow(buf[:0], i), '\n')
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(h.o.Out, "file: pre-wrote %s (%s lines) in %s\n", inPath, Count(float64(c.Rows)), Secs(time.Since(t0)))
	in := h.name("bk_fin")
	if err := h.execf(ctx, "CREATE STREAM %s %s WITH (backend = 'file://%s')", in, backendColumns, inPath); err != nil {
		return err
	}
	return b.consume(ctx, "file", in, h.name("bk_fingest"), BackendsFileTarget)
}
