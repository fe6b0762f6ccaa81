package clients

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The pgxpool suite: pgx's connection pool as a Go service uses it, over
// the target's login (SCRAM, TLS): a pool of four, goroutines sharing it,
// acquire/release cycles, CopyFrom (pgx's binary COPY) into writes_pgx,
// every QueryExecMode with parameters, and batches. It writes only to
// writes_pgx, with ids of its own (1000 and up), so that the counts it
// checks are its own.
func init() {
	goSuites = append(goSuites, goSuite{name: "pgxpool", run: runPgxpool})
}

func runPgxpool(ctx context.Context, c *checker, tg target) {
	var pool *pgxpool.Pool
	c.check("pool-of-four", func(t *testing.T) error {
		cfg, err := pgxpool.ParseConfig(tg.dsn())
		if err != nil {
			return err
		}
		cfg.MaxConns = 4
		cfg.MinConns = 0
		cfg.HealthCheckPeriod = time.Minute
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		if err := p.Ping(ctx); err != nil {
			p.Close()
			return fmt.Errorf("ping: %w", err)
		}
		pool = p
		if got := pool.Stat().MaxConns(); got != 4 {
			return fmt.Errorf("MaxConns %d, want 4", got)
		}
		var user, db string
		if err := pool.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &db); err != nil {
			return err
		}
		if user != tg.user || db != tg.dbname {
			return fmt.Errorf("logged in as %q on %q, want %q on %q", user, db, tg.user, tg.dbname)
		}
		return nil
	})
	if pool == nil {
		c.t.Error("no pool: the other pgxpool checks cannot run")
		return
	}
	defer pool.Close()

	c.check("concurrent-goroutines", func(t *testing.T) error {
		// Four goroutines hold a connection each at once (the barrier makes
		// the pool open all four), then sixteen share them.
		var hold, wg sync.WaitGroup
		hold.Add(4)
		errs := make(chan error, 32)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				conn, err := pool.Acquire(ctx)
				hold.Done()
				if err != nil {
					errs <- err
					return
				}
				defer conn.Release()
				hold.Wait()
				var n int64
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM items WHERE id > $1", int64(i%3)).Scan(&n); err != nil {
					errs <- err
				} else if n != int64(3-i%3) {
					errs <- fmt.Errorf("goroutine %d: count %d, want %d", i, n, 3-i%3)
				}
			}(i)
		}
		wg.Wait()
		if got := pool.Stat().TotalConns(); got != 4 {
			errs <- fmt.Errorf("four goroutines holding connections at once: pool has %d, want 4", got)
		}
		want := map[int64]string{1: "apple", 2: "pear", 3: "plum"}
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				id := int64(i%3 + 1)
				var name string
				var qty int32
				if err := pool.QueryRow(ctx, "SELECT name, qty FROM items WHERE id = $1", id).Scan(&name, &qty); err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", i, err)
				} else if name != want[id] {
					errs <- fmt.Errorf("goroutine %d: id %d is %q, want %q", i, id, name, want[id])
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		if got := pool.Stat().TotalConns(); got > 4 {
			all = append(all, fmt.Errorf("pool of 4 holds %d connections", got))
		}
		return errors.Join(all...)
	})

	c.check("acquire-release-cycles", func(t *testing.T) error {
		before := pool.Stat().AcquireCount()
		for i := 0; i < 12; i++ {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return fmt.Errorf("cycle %d: %w", i, err)
			}
			var sum int64
			err = conn.QueryRow(ctx, "SELECT sum(qty) FROM items WHERE id <= $1", int64(i%3+1)).Scan(&sum)
			conn.Release()
			if err != nil {
				return fmt.Errorf("cycle %d: %w", i, err)
			}
			if want := []int64{10, 15, 35}[i%3]; sum != want {
				return fmt.Errorf("cycle %d: sum %d, want %d", i, sum, want)
			}
		}
		st := pool.Stat()
		if got := st.AcquireCount() - before; got != 12 {
			return fmt.Errorf("%d acquires counted, want 12", got)
		}
		if st.AcquiredConns() != 0 || st.TotalConns() > 4 || st.IdleConns() != st.TotalConns() {
			return fmt.Errorf("after the cycles: %d acquired, %d idle of %d", st.AcquiredConns(), st.IdleConns(), st.TotalConns())
		}
		// A connection a query broke (an error) goes back to the pool usable.
		_, err := pool.Exec(ctx, "SELECT * FROM no_such_relation_pgx")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
			return fmt.Errorf("missing relation: %v, want 42P01", err)
		}
		for i := 0; i < 4; i++ {
			var one int32
			if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				return fmt.Errorf("after the error: %d, %v", one, err)
			}
		}
		return nil
	})

	c.check("copyfrom-writes-pgx", func(t *testing.T) error {
		rows := [][]any{{int64(1001), "copied one"}, {int64(1002), "tab\there, ünïcode"}, {int64(1003), nil}}
		n, err := pool.CopyFrom(ctx, pgx.Identifier{"writes_pgx"}, []string{"id", "note"}, pgx.CopyFromRows(rows))
		if err != nil {
			return err
		}
		if n != 3 {
			return fmt.Errorf("CopyFrom copied %d rows, want 3", n)
		}
		got, err := readWritesPgx(ctx, pool, 1001, 1003)
		if err != nil {
			return err
		}
		want := []string{"1001=copied one", "1002=tab\there, ünïcode", "1003=<null>"}
		if !slices.Equal(got, want) {
			return fmt.Errorf("read back %q, want %q", got, want)
		}
		return nil
	})

	modes := []struct {
		name string
		mode pgx.QueryExecMode
	}{
		{"cache-statement", pgx.QueryExecModeCacheStatement},
		{"cache-describe", pgx.QueryExecModeCacheDescribe},
		{"describe-exec", pgx.QueryExecModeDescribeExec},
		{"exec", pgx.QueryExecModeExec},
		{"simple-protocol", pgx.QueryExecModeSimpleProtocol},
	}
	for i, m := range modes {
		c.check("exec-mode-"+m.name, func(t *testing.T) error {
			return pgxExecMode(ctx, pool, m.mode, int64(1100+10*i))
		})
	}

	c.check("batch", func(t *testing.T) error {
		b := &pgx.Batch{}
		b.Queue("INSERT INTO writes_pgx (id, note) VALUES ($1, $2), ($3, $4)", int64(1201), "batch a", int64(1202), "batch b")
		b.Queue("SELECT name FROM items WHERE qty >= $1 ORDER BY name", int32(10))
		b.Queue("SELECT count(*), sum(price) FROM items")
		b.Queue("SELECT note FROM writes_pgx WHERE id = $1", int64(1202))
		br := pool.SendBatch(ctx, b)
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return fmt.Errorf("insert: %w", err)
		}
		if tag.RowsAffected() != 2 || !tag.Insert() {
			br.Close()
			return fmt.Errorf("insert tag %q", tag)
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			br.Close()
			return err
		}
		var n int64
		var total pgtype.Numeric
		if err := br.QueryRow().Scan(&n, &total); err != nil {
			br.Close()
			return err
		}
		var note string
		if err := br.QueryRow().Scan(&note); err != nil {
			br.Close()
			return fmt.Errorf("reading the batch's own insert: %w", err)
		}
		if err := br.Close(); err != nil {
			return err
		}
		if !slices.Equal(names, []string{"apple", "plum"}) {
			return fmt.Errorf("names %q, want [apple plum]", names)
		}
		if n != 3 || !pgxNumericIs(total, 450, -2) {
			return fmt.Errorf("count %d sum %v, want 3 and 4.50", n, total)
		}
		if note != "batch b" {
			return fmt.Errorf("note %q, want %q", note, "batch b")
		}
		return nil
	})

	c.check("batch-error-midway", func(t *testing.T) error {
		b := &pgx.Batch{}
		b.Queue("SELECT name FROM items WHERE id = $1", int64(3))
		b.Queue("SELECT 10 / $1::integer", int32(0))
		b.Queue("SELECT 2")
		br := pool.SendBatch(ctx, b)
		var name string
		err1 := br.QueryRow().Scan(&name)
		var x int32
		err2 := br.QueryRow().Scan(&x)
		br.Close()
		if err1 != nil || name != "plum" {
			return fmt.Errorf("first query: %q, %v", name, err1)
		}
		var pgErr *pgconn.PgError
		if !errors.As(err2, &pgErr) || pgErr.Code != "22012" {
			return fmt.Errorf("division by zero in a batch: %v, want 22012", err2)
		}
		var one int32
		if err := pool.QueryRow(ctx, "SELECT $1::integer", int32(1)).Scan(&one); err != nil || one != 1 {
			return fmt.Errorf("pool after the failed batch: %d, %v", one, err)
		}
		return nil
	})

	c.check("tx-commit", func(t *testing.T) error {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO writes_pgx (id, note) VALUES ($1, $2)", int64(1301), "in tx"); err != nil {
				return err
			}
			var n int64
			return tx.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n)
		})
		if err != nil {
			return err
		}
		got, err := readWritesPgx(ctx, pool, 1301, 1301)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"1301=in tx"}) {
			return fmt.Errorf("after commit: %q", got)
		}
		return nil
	})

	c.check("writes-pgx-total", func(t *testing.T) error {
		// Everything this suite wrote, and nothing twice.
		var n, distinct int64
		err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM writes_pgx WHERE id BETWEEN 1000 AND 1999").Scan(&n, &distinct)
		if err != nil {
			return err
		}
		if want := int64(3 + 2*len(modes) + 2 + 1); n != want || distinct != want {
			return fmt.Errorf("%d rows (%d ids) from this suite in writes_pgx, want %d", n, distinct, want)
		}
		return nil
	})
}

// pgxExecMode runs a parameterized read and an insert in one exec mode;
// base is the first of the two ids it writes.
func pgxExecMode(ctx context.Context, pool *pgxpool.Pool, mode pgx.QueryExecMode, base int64) error {
	rows, err := pool.Query(ctx, "SELECT id, name, price, qty, added FROM items WHERE id >= $1 AND name <> $2 ORDER BY id",
		mode, int64(2), "pear")
	if err != nil {
		return err
	}
	type item struct {
		id    int64
		name  string
		price pgtype.Numeric
		qty   int32
		added time.Time
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
		var it item
		err := r.Scan(&it.id, &it.name, &it.price, &it.qty, &it.added)
		return it, err
	})
	if err != nil {
		return err
	}
	if len(items) != 1 || items[0].id != 3 || items[0].name != "plum" || !pgxNumericIs(items[0].price, 75, -2) ||
		items[0].qty != 20 || !items[0].added.Equal(time.Date(2026, 1, 2, 9, 30, 0, 0, time.UTC)) {
		return fmt.Errorf("items: %+v, want plum (3, 0.75, 20, 2026-01-02 09:30)", items)
	}

	// Parameters of several types, and a NULL, come back as they went.
	var (
		n    pgtype.Numeric
		ts   time.Time
		b    bool
		null *string
		big  int64
		txt  string
	)
	err = pool.QueryRow(ctx, "SELECT $1::numeric + 1, $2::timestamp, $3::boolean, $4::text, $5::bigint, $6::text",
		mode, "1.25", time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), true, nil, int64(9007199254740993), "it's").
		Scan(&n, &ts, &b, &null, &big, &txt)
	if err != nil {
		return fmt.Errorf("typed parameters: %w", err)
	}
	if !pgxNumericIs(n, 225, -2) || !ts.Equal(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)) || !b || null != nil ||
		big != 9007199254740993 || txt != "it's" {
		return fmt.Errorf("typed parameters came back as %v %v %v %v %v %q", n, ts, b, null, big, txt)
	}

	tag, err := pool.Exec(ctx, "INSERT INTO writes_pgx (id, note) VALUES ($1, $2), ($3, $4)", mode,
		base, fmt.Sprintf("mode %d", mode), base+1, nil)
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	if !tag.Insert() || tag.RowsAffected() != 2 {
		return fmt.Errorf("insert tag %q", tag)
	}
	got, err := readWritesPgx(ctx, pool, base, base+1)
	if err != nil {
		return err
	}
	want := []string{fmt.Sprintf("%d=mode %d", base, mode), fmt.Sprintf("%d=<null>", base+1)}
	if !slices.Equal(got, want) {
		return fmt.Errorf("read back %q, want %q", got, want)
	}
	return nil
}

// readWritesPgx lists writes_pgx's rows with ids in [lo, hi] as "id=note".
func readWritesPgx(ctx context.Context, pool *pgxpool.Pool, lo, hi int64) ([]string, error) {
	rows, err := pool.Query(ctx, "SELECT id, note FROM writes_pgx WHERE id BETWEEN $1 AND $2 ORDER BY id", lo, hi)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id int64
		var note *string
		if err := r.Scan(&id, &note); err != nil {
			return "", err
		}
		if note == nil {
			return fmt.Sprintf("%d=<null>", id), nil
		}
		return fmt.Sprintf("%d=%s", id, *note), nil
	})
}

// pgxNumericIs says whether n equals digits×10^exp as a number (2.50 and
// 2.5 alike).
func pgxNumericIs(n pgtype.Numeric, digits int64, exp int32) bool {
	if !n.Valid || n.NaN || n.InfinityModifier != pgtype.Finite {
		return false
	}
	a := new(big.Rat).SetInt(n.Int)
	a.Mul(a, pgxPow10(n.Exp))
	b := new(big.Rat).SetInt64(digits)
	b.Mul(b, pgxPow10(exp))
	return a.Cmp(b) == 0
}

func pgxPow10(e int32) *big.Rat {
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-e)), nil))
	}
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil))
}
