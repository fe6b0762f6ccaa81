package bench

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// InsertConfig configures the insert scenario.
type InsertConfig struct {
	Rows       int64    // rows per protocol (default 1,000,000)
	Batch      int      // rows per INSERT statement (default 1000)
	Partitions int      // of the stream (default 4)
	Protocols  []string // "simple", "extended", "copy-text", "copy-binary" (default all)
	Key        string   // the stream's key column (default sym; "none" for no key)
}

// InsertTarget is the rate the insert scenario should reach.
const InsertTarget = 100_000

// Insert runs the insert scenario: per protocol, a fresh stream and Rows
// rows in multi-row INSERT statements of Batch rows over one connection.
func Insert(ctx context.Context, o Options, c InsertConfig) error {
	orDefault(&c.Rows, 1_000_000)
	orDefault(&c.Batch, 1000)
	orDefault(&c.Partitions, 4)
	orDefaults(&c.Protocols, "simple", "extended", "copy-text", "copy-binary")
	if c.Batch*4 > 65535 {
		return fmt.Errorf("--batch %d: the extended protocol allows at most 65535 parameters (16383 rows of 4)", c.Batch)
	}
	h, ctx, err := openHarness(ctx, o, false)
	if err != nil {
		return err
	}
	defer h.close()
	keyOpt := ""
	if c.Key != "" && c.Key != "none" {
		keyOpt = ", key = '" + c.Key + "'"
	}
	h.header("insert",
		fmt.Sprintf("workload: %s rows per protocol in INSERT … VALUES statements of %d rows, one pgx connection, into a %d-partition stream (sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP)%s",
			Count(float64(c.Rows)), c.Batch, c.Partitions, map[bool]string{true: " keyed by " + c.Key, false: ""}[keyOpt != ""]))

	tb := Table{
		Title:  "insert: rows/s over one connection (latency is per INSERT statement)",
		Header: []string{"protocol", "rows", "stmts", "rows/s", "p50 ms", "p99 ms", "max ms", "duration", "server cpu s", "rows/server-cpu-s", "broker cpu s", "other cpu s", "peak RSS", "peak heap", "≥100k rows/s"},
	}
	for _, proto := range c.Protocols {
		name := h.name("ins_" + strings.ReplaceAll(proto, "-", "_"))
		if err := h.execf(ctx, "CREATE STREAM %s (sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP) WITH (partitions = %d%s)", name, c.Partitions, keyOpt); err != nil {
			return err
		}
		var insert func(ctx context.Context, from, n int64) error
		switch proto {
		case "simple":
			insert = simpleInserter(h.conn, name)
		case "extended":
			insert = extendedInserter(h.conn, name)
		case "copy-text":
			insert = copyTextInserter(h.conn, name)
		case "copy-binary":
			insert = copyBinaryInserter(h.conn, name)
		default:
			return fmt.Errorf("unknown protocol %q (want simple, extended, copy-text or copy-binary)", proto)
		}
		lat := make([]time.Duration, 0, c.Rows/int64(c.Batch)+1)
		ph, err := h.measure(ctx, "insert-"+proto, func() error {
			for from := int64(0); from < c.Rows; from += int64(c.Batch) {
				n := min(int64(c.Batch), c.Rows-from)
				t := time.Now()
				sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
				err := insert(sctx, from, n)
				scancel()
				if err != nil {
					return fmt.Errorf("insert %s rows %d…: %w", proto, from, err)
				}
				lat = append(lat, time.Since(t))
			}
			return nil
		})
		if err != nil {
			return err
		}
		got, err := countRows(ctx, h.conn, name)
		if err != nil {
			return err
		}
		if got != c.Rows {
			return fmt.Errorf("insert %s: the stream holds %d rows, want %d", proto, got, c.Rows)
		}
		_, hi := MinMax(lat)
		rate := Rate(c.Rows, ph.dur)
		tb.Add(proto, Count(float64(c.Rows)), Count(float64(len(lat))), Count(rate),
			Ms(Percentile(lat, 50)), Ms(Percentile(lat, 99)), Ms(hi), Secs(ph.dur),
			cpuSecs(ph.srvCPU), perCPU(c.Rows, ph.srvCPU), cpuSecs(ph.brokerCPU), cpuSecs(ph.otherCPU),
			MiB(ph.u1.PeakRSS), MiB(ph.u1.PeakHeap), verdict(rate >= InsertTarget))
		if err := h.exec(ctx, "DROP STREAM "+name); err != nil {
			return err
		}
	}
	tb.Notes = []string{
		"simple: literal VALUES text, pgx QueryExecModeSimpleProtocol; extended: one prepared statement with 4×batch parameters ($1…), pgx QueryExecModeCacheStatement (binary float8/int8/timestamp)",
		"copy-text: COPY … FROM STDIN of batch rows in text format (pgx PgConn.CopyFrom); copy-binary: pgx Conn.CopyFrom of batch rows (COPY … FROM STDIN (FORMAT binary)); a stmt is one COPY",
		"rows verified with SELECT count(*) after each protocol",
		"server cpu = CPU time of the server's process during the inserts (in-process: also the pgx client and its SQL text, and the embedded broker); broker cpu = a separate broker's (--broker-pid), or in child mode the bench process (the embedded broker it hosts and the pgx client); other cpu = the rest of the host's busy CPU (the pgx client when separate, other tenants)",
		"peak RSS = VmHWM of the server's process during the inserts (reset before); peak heap = highest Go heap in use, sampled every 10 ms",
	}
	tb.Print(h.o.Out)
	h.printProfiles()
	return nil
}

// simpleInserter sends literal INSERT text with the simple protocol.
func simpleInserter(conn *pgx.Conn, name string) func(ctx context.Context, from, n int64) error {
	g := Gen{}
	var buf []byte
	prefix := "INSERT INTO " + name + " VALUES "
	return func(ctx context.Context, from, n int64) error {
		buf = append(buf[:0], prefix...)
		for i := from; i < from+n; i++ {
			if i > from {
				buf = append(buf, ", "...)
			}
			buf = g.AppendSQLValues(buf, i)
		}
		tag, err := conn.Exec(ctx, string(buf), pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != n {
			return fmt.Errorf("INSERT reported %d rows, want %d", tag.RowsAffected(), n)
		}
		return nil
	}
}

// extendedInserter executes a prepared INSERT of n parameter tuples.
func extendedInserter(conn *pgx.Conn, name string) func(ctx context.Context, from, n int64) error {
	g := Gen{}
	stmts := map[int64]string{}
	var args []any
	return func(ctx context.Context, from, n int64) error {
		sql, ok := stmts[n]
		if !ok {
			var b strings.Builder
			b.WriteString("INSERT INTO " + name + " VALUES ")
			for i := int64(0); i < n; i++ {
				if i > 0 {
					b.WriteString(", ")
				}
				p := i*4 + 1
				b.WriteString("($" + strconv.FormatInt(p, 10) + ", $" + strconv.FormatInt(p+1, 10) + ", $" + strconv.FormatInt(p+2, 10) + ", $" + strconv.FormatInt(p+3, 10) + ")")
			}
			sql = b.String()
			stmts[n] = sql
		}
		args = append(args[:0], pgx.QueryExecModeCacheStatement)
		for i := from; i < from+n; i++ {
			args = append(args, g.Sym(i), g.Price(i), g.Qty(i), g.TS(i))
		}
		tag, err := conn.Exec(ctx, sql, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != n {
			return fmt.Errorf("INSERT reported %d rows, want %d", tag.RowsAffected(), n)
		}
		return nil
	}
}

// copyTextInserter sends n rows as one COPY FROM STDIN in text format.
func copyTextInserter(conn *pgx.Conn, name string) func(ctx context.Context, from, n int64) error {
	g := Gen{}
	var buf []byte
	sql := "COPY " + name + " FROM STDIN"
	return func(ctx context.Context, from, n int64) error {
		buf = buf[:0]
		for i := from; i < from+n; i++ {
			buf = append(buf, g.Sym(i)...)
			buf = append(buf, '\t')
			buf = strconv.AppendFloat(buf, g.Price(i), 'g', -1, 64)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, g.Qty(i), 10)
			buf = append(buf, '\t')
			buf = g.TS(i).AppendFormat(buf, "2006-01-02 15:04:05.000")
			buf = append(buf, '\n')
		}
		tag, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(buf), sql)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != n {
			return fmt.Errorf("COPY reported %d rows, want %d", tag.RowsAffected(), n)
		}
		return nil
	}
}

// copyBinaryInserter sends n rows with pgx's CopyFrom (binary format).
func copyBinaryInserter(conn *pgx.Conn, name string) func(ctx context.Context, from, n int64) error {
	g := Gen{}
	cols := []string{"sym", "price", "qty", "ts"}
	row := make([]any, 4)
	return func(ctx context.Context, from, n int64) error {
		want := n
		got, err := conn.CopyFrom(ctx, pgx.Identifier{name}, cols, pgx.CopyFromFunc(func() ([]any, error) {
			if n == 0 {
				return nil, nil
			}
			row[0], row[1], row[2], row[3] = g.Sym(from), g.Price(from), g.Qty(from), g.TS(from)
			from++
			n--
			return row, nil
		}))
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("COPY reported %d rows, want %d", got, want)
		}
		return nil
	}
}

// countRows is SELECT count(*) of a relation.
func countRows(ctx context.Context, conn *pgx.Conn, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+name).Scan(&n); err != nil {
		return 0, fmt.Errorf("SELECT count(*) FROM %s: %w", name, err)
	}
	return n, nil
}
