package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// SelectConfig configures the select scenario.
type SelectConfig struct {
	Rows       []int64 // stream lengths (default 1M and 2M)
	Runs       int     // runs of the aggregate per length (default 5; the median is reported)
	LimitRuns  int     // runs of SELECT * LIMIT 10 (default 20)
	Partitions int     // of the stream (default 4)
	PriceOver  float64 // WHERE price > this (default 50: about half the rows)
}

// SelectTarget is the scan rate the select scenario should reach.
const SelectTarget = 1_000_000

// Select runs the select scenario.
func Select(ctx context.Context, o Options, c SelectConfig) error {
	orDefaults(&c.Rows, 1_000_000, 2_000_000)
	orDefault(&c.Runs, 5)
	orDefault(&c.LimitRuns, 20)
	orDefault(&c.Partitions, 4)
	if c.PriceOver == 0 {
		c.PriceOver = 50
	}
	h, ctx, err := openHarness(ctx, o, false)
	if err != nil {
		return err
	}
	defer h.close()
	aggSQL := "SELECT count(*), sum(qty) FROM %s WHERE price > " + strconv.FormatFloat(c.PriceOver, 'g', -1, 64)
	h.header("select",
		fmt.Sprintf("workload: a %d-partition stream (sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP) loaded with N JSON rows by franz-go; %q %d times (median), then SELECT * FROM s LIMIT 10 %d times",
			c.Partitions, fmt.Sprintf(aggSQL, "s"), c.Runs, c.LimitRuns))

	tb := Table{
		Title: fmt.Sprintf("select: %s (median of %d runs) and SELECT * LIMIT 10", fmt.Sprintf(aggSQL, "s"), c.Runs),
		Header: []string{"rows N", "load rows/s", "median", "min", "max", "rows/s scanned", "server cpu s/run", "rows/server-cpu-s",
			"broker cpu s/run", "other cpu s/run", "RSS before", "peak RSS", "peak-before", "peak heap", "LIMIT 10 p50 ms", "p99 ms", "≥1M rows/s"},
	}
	for _, n := range c.Rows {
		name := h.name("sel_" + strconv.FormatInt(n, 10))
		g := Gen{}
		want := g.Expected(n, c.PriceOver)
		ld, err := h.createStream(ctx, streamSpec{name: name, columns: "(sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP)",
			partitions: c.Partitions, rows: n, row: g.AppendJSON})
		if err != nil {
			return err
		}
		var runs []time.Duration
		q := fmt.Sprintf(aggSQL, name)
		ph, err := h.measure(ctx, fmt.Sprintf("select-%d", n), func() error {
			for i := 0; i < c.Runs; i++ {
				t := time.Now()
				count, sum, err := aggregate(ctx, h.conn, q)
				if err != nil {
					return err
				}
				runs = append(runs, time.Since(t))
				if count != want.CountOver || sum != want.SumQtyOver {
					return fmt.Errorf("%s: got count %d sum %d, want %d and %d", q, count, sum, want.CountOver, want.SumQtyOver)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		var lim []time.Duration
		stopProf := h.profile(h.srv, fmt.Sprintf("select-limit-%d", n))
		for i := 0; i < c.LimitRuns; i++ {
			t := time.Now()
			got, err := limit10(ctx, h.conn, name)
			if err != nil {
				stopProf()
				return err
			}
			lim = append(lim, time.Since(t))
			if got != 10 {
				stopProf()
				return fmt.Errorf("SELECT * FROM %s LIMIT 10 returned %d rows", name, got)
			}
		}
		stopProf()
		med := Median(runs)
		lo, hi := MinMax(runs)
		rate := Rate(n, med)
		tb.Add(Count(float64(n)), Count(Rate(n, ld.Duration)), Secs(med), Secs(lo), Secs(hi), Count(rate),
			cpuSecs(ph.srvCPU/time.Duration(c.Runs)), perCPU(n*int64(c.Runs), ph.srvCPU),
			cpuSecs(ph.brokerCPU/time.Duration(c.Runs)), cpuSecs(ph.otherCPU/time.Duration(c.Runs)),
			MiB(ph.u0.RSS), MiB(ph.u1.PeakRSS), MiB(diffOrUnknown(ph.u1.PeakRSS, ph.u0.RSS)), MiB(ph.u1.PeakHeap),
			Ms(Percentile(lim, 50)), Ms(Percentile(lim, 99)), verdict(rate >= SelectTarget))
		if err := h.exec(ctx, "DROP STREAM "+name); err != nil {
			return err
		}
	}
	tb.Notes = []string{
		"results checked against the loaded rows' known aggregates on every run",
		"RSS before = the server process's RSS when the runs start (GC'd, freed to the OS); peak RSS = its VmHWM over the runs; peak-before = what the query added",
		"peak heap = highest Go heap in use over the runs, sampled every 10 ms (in-process: includes anything else in the process, e.g. the embedded broker)",
		"server cpu s/run = CPU time of the server's process per run (in-process: includes the embedded broker serving the scan); rows/server-cpu-s = rows scanned per CPU-second of it",
		"broker cpu = a separate broker's (--broker-pid), or in child mode the bench process that hosts the embedded broker; other cpu = the rest of the host's busy CPU (other tenants)",
	}
	tb.Print(h.o.Out)
	h.printProfiles()
	return nil
}

// diffOrUnknown is a-b, or -1 when either is unknown.
func diffOrUnknown(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return a - b
}

// aggregate runs SELECT count(*), sum(qty) … and returns both.
func aggregate(ctx context.Context, conn *pgx.Conn, q string) (count, sum int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var s any
	if err := conn.QueryRow(ctx, q).Scan(&count, &s); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", q, err)
	}
	sum, err = asInt64(s)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: sum: %w", q, err)
	}
	return count, sum, nil
}

func asInt64(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case float64:
		if v != math.Trunc(v) {
			return 0, fmt.Errorf("%v is not an integer", v)
		}
		return int64(v), nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	case pgtype.Numeric:
		i, err := v.Int64Value()
		if err != nil {
			return 0, err
		}
		return i.Int64, nil
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected %T", v)
}

// limit10 runs SELECT * … LIMIT 10 and counts the rows.
func limit10(ctx context.Context, conn *pgx.Conn, name string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT * FROM "+name+" LIMIT 10")
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	return n, rows.Err()
}
