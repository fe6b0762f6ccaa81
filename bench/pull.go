package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// PullConfig configures the pull scenario.
type PullConfig struct {
	Rows       int64         // rows of the input stream (default 1M)
	Keys       int64         // distinct auctions, the view's keys (default 1M)
	Partitions int           // of the input stream (default 4)
	Clients    int           // concurrent pgx connections (default 16)
	Duration   time.Duration // of each protocol's run (default 10s)
	Protocols  []string      // extended, simple (default both)
	// CatchupTimeout bounds building the view (default 5m).
	CatchupTimeout time.Duration
}

// PullTarget is the pull-query rate the pull scenario should reach.
const PullTarget = 10_000

// pullGen is the pull scenario's input: row i has auction
// (i % Keys) * m % Keys (a permutation of i % Keys) and price i % 1000 + 1,
// so every key's count and sum are known without reading the rows.
type pullGen struct {
	n, keys, m, inv int64
}

func newPullGen(n, keys int64) pullGen {
	g := pullGen{n: n, keys: keys, m: 7919}
	if gcd(g.m, keys) != 1 {
		g.m = 1
	}
	g.inv = modInverse(g.m, keys)
	return g
}

func (g pullGen) auction(i int64) int64 { return (i % g.keys) * g.m % g.keys }
func (g pullGen) price(i int64) int64   { return i%1000 + 1 }

func (g pullGen) appendJSON(b []byte, i int64) []byte {
	b = append(b, `{"auction":`...)
	b = strconv.AppendInt(b, g.auction(i), 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, g.price(i), 10)
	return append(b, '}')
}

func (g pullGen) key(i int64) []byte { return strconv.AppendInt(nil, g.auction(i), 10) }

// expect is key a's count(*) and sum(price): the rows i ≡ j (mod Keys)
// with j = a·m⁻¹.
func (g pullGen) expect(a int64) (count, sum int64) {
	j := a * g.inv % g.keys
	for i := j; i < g.n; i += g.keys {
		count++
		sum += g.price(i)
	}
	return count, sum
}

// modInverse is a⁻¹ mod m (a and m coprime).
func modInverse(a, m int64) int64 {
	if m == 1 {
		return 0
	}
	t, nt, r, nr := int64(0), int64(1), m, a%m
	for nr != 0 {
		q := r / nr
		t, nt = nt, t-q*nt
		r, nr = nr, r-q*nr
	}
	if t < 0 {
		t += m
	}
	return t
}

// Pull runs the pull scenario.
func Pull(ctx context.Context, o Options, c PullConfig) error {
	orDefault(&c.Rows, 1_000_000)
	orDefault(&c.Keys, 1_000_000)
	orDefault(&c.Partitions, 4)
	orDefault(&c.Clients, 16)
	orDefault(&c.Duration, 10*time.Second)
	orDefaults(&c.Protocols, "extended", "simple")
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	for _, p := range c.Protocols {
		if p != "extended" && p != "simple" {
			return fmt.Errorf("unknown protocol %q (want extended or simple)", p)
		}
	}
	h, ctx, err := openHarness(ctx, o, false)
	if err != nil {
		return err
	}
	defer h.close()
	in, view := h.name("pull_in"), h.name("totals")
	g := newPullGen(c.Rows, c.Keys)
	viewSQL := fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS SELECT auction, count(*), sum(price) FROM %s GROUP BY auction", view, in)
	query := "SELECT * FROM " + view + " WHERE auction = $1"
	h.header("pull",
		fmt.Sprintf("workload: CREATE STREAM %s (auction BIGINT, price BIGINT) WITH (partitions = %d, key = 'auction'), %s JSON rows by franz-go (keyed, murmur2) with %s distinct auctions,",
			in, c.Partitions, Count(float64(c.Rows)), Count(float64(min(c.Keys, c.Rows)))),
		"  "+viewSQL+", FLUSH; then "+strconv.Itoa(c.Clients)+" pgx connections run",
		fmt.Sprintf("  %q with uniformly random keys for %s per protocol:", query, c.Duration),
		"  extended  one prepared statement per connection (pgx QueryExecModeCacheStatement: Bind/Execute, binary int8 parameter)",
		"  simple    the key as a literal in the SQL text (pgx QueryExecModeSimpleProtocol)",
		"  every answer is checked against the generator's count and sum for that key",
	)
	if _, err := h.createStream(ctx, streamSpec{name: in, columns: "(auction BIGINT, price BIGINT)", partitions: c.Partitions,
		key: "auction", keyOf: g.key, rows: c.Rows, row: g.appendJSON}); err != nil {
		return err
	}
	keys := min(c.Keys, c.Rows)
	built, copied, err := h.buildView(ctx, viewSQL, view, c.Rows, keys, c.CatchupTimeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(h.o.Out, "view %s built in %s (%s rows/s), local copy complete after %s; %s rows (want %s)\n\n",
		view, Secs(built), Count(Rate(c.Rows, built)), Secs(copied), Count(float64(keys)), Count(float64(keys)))

	tb := Table{
		Title: fmt.Sprintf("pull: %s by key over a %s-row view, %d connections, %s per protocol", query, Count(float64(keys)), c.Clients, c.Duration),
		Header: []string{"protocol", "queries", "queries/s", "p50 ms", "p99 ms", "max ms", "server cpu s", "queries/server-cpu-s",
			"bench cpu s", "other cpu s", "RSS before", "peak RSS", "peak heap", "wrong", "≥10k q/s"},
	}
	var notes []string
	for _, proto := range c.Protocols {
		res, err := measurePull(ctx, h, proto, query, g, keys, c)
		if err != nil {
			return fmt.Errorf("%s: %w", proto, err)
		}
		ph := res.ph
		rate := Rate(res.queries, ph.dur)
		target := verdict(rate >= PullTarget)
		if res.wrong > 0 {
			target = "OUTPUT WRONG: see notes"
			notes = append(notes, fmt.Sprintf("%s: %d wrong answers, e.g. %s", proto, res.wrong, res.example))
		}
		tb.Add(proto, Count(float64(res.queries)), Count(rate), Ms(Percentile(res.lat, 50)), Ms(Percentile(res.lat, 99)), Ms(Percentile(res.lat, 100)),
			cpuSecs(ph.srvCPU), perCPU(res.queries, ph.srvCPU), cpuSecs(ph.brokerCPU), cpuSecs(ph.otherCPU),
			MiB(ph.u0.RSS), MiB(ph.u1.PeakRSS), MiB(ph.u1.PeakHeap), Count(float64(res.wrong)), target)
	}
	tb.Notes = append([]string{
		"latency = one query's round trip as the client sees it (pgx QueryRow + Scan), over every query of every connection",
		"server cpu = the server process's CPU over the run (in-process mode: also the clients and the embedded broker); bench cpu = in child mode the bench process: the pgx clients (and the idle embedded broker it hosts); other cpu = the rest of the host (other tenants)",
		"wrong = answers whose count or sum differ from the generator's (a missing row counts as wrong)",
		fmt.Sprintf("target: ≥ %s queries/s", Count(PullTarget)),
	}, notes...)
	tb.Print(h.o.Out)
	h.printProfiles()
	return h.exec(ctx, "DROP MATERIALIZED VIEW "+view)
}

type pullResult struct {
	ph      *phase
	queries int64
	lat     []time.Duration
	wrong   int64
	example string
}

// measurePull runs Clients connections querying random keys for Duration.
func measurePull(ctx context.Context, h *harness, proto, query string, g pullGen, keys int64, c PullConfig) (*pullResult, error) {
	conns := make([]*pgx.Conn, c.Clients)
	defer func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close(context.Background())
			}
		}
	}()
	for i := range conns {
		cn, err := connect(ctx, h.srv.URL())
		if err != nil {
			return nil, err
		}
		conns[i] = cn
	}
	mode := pgx.QueryExecModeCacheStatement
	if proto == "simple" {
		mode = pgx.QueryExecModeSimpleProtocol
	}
	// One query per connection first: prepares the statement, warms up.
	for _, cn := range conns {
		var a, n int64
		var s any
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cn.QueryRow(qctx, query, mode, int64(0)).Scan(&a, &n, &s)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", query, err)
		}
	}
	res := &pullResult{}
	var (
		mu       sync.Mutex
		firstErr error
		wrong    atomic.Int64
	)
	ph, err := h.measure(ctx, "pull-"+proto, func() error {
		deadline := time.Now().Add(c.Duration)
		var wg sync.WaitGroup
		for i, cn := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(i)+1, uint64(time.Now().UnixNano())))
				lat := make([]time.Duration, 0, 1<<14)
				var example string
				for time.Now().Before(deadline) {
					key := rng.Int64N(keys)
					var a, n int64
					var s any
					t := time.Now()
					qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					err := cn.QueryRow(qctx, query, mode, key).Scan(&a, &n, &s)
					cancel()
					lat = append(lat, time.Since(t))
					if errors.Is(err, pgx.ErrNoRows) {
						if wrong.Add(1) == 1 {
							example = fmt.Sprintf("auction %d: no row", key)
						}
						continue
					}
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("%s ($1 = %d): %w", query, key, err)
						}
						mu.Unlock()
						return
					}
					sum, _ := asInt64(s)
					wc, ws := g.expect(key)
					if a != key || n != wc || sum != ws {
						if wrong.Add(1) == 1 {
							example = fmt.Sprintf("auction %d: got (%d, %d, %d), want (%d, %d, %d)", key, a, n, sum, key, wc, ws)
						}
					}
				}
				mu.Lock()
				res.lat = append(res.lat, lat...)
				if example != "" {
					res.example = example
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		return firstErr
	})
	if err != nil {
		return nil, err
	}
	res.ph, res.queries, res.wrong = ph, int64(len(res.lat)), wrong.Load()
	return res, nil
}
