package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fvsql/fvsql/udf/wasmgen"
)

// UDFConfig configures the udf scenario.
type UDFConfig struct {
	Rows       int64 // of the input stream (default 1M)
	Partitions int   // of the input stream (default 4)
	Runs       int   // runs of each variant, alternating (default 3; medians are reported)
	// CatchupTimeout bounds one run's catch-up (default 5m).
	CatchupTimeout time.Duration
}

// UDFRatioTarget: a stateless pipeline calling a trivial wasm function
// per row keeps at least this fraction of the rate of the same pipeline
// with the built-in expression (rows per CPU-second of the server).
const UDFRatioTarget = 0.70

// udfVariant is one measured query: a built-in expression and its wasm
// twin compute the same column.
type udfVariant struct {
	name, sql, check string // the query (%[1]s out, %[2]s in); check: a sum over out both variants must give
}

var udfVariants = []udfVariant{
	{"builtin", "CREATE STREAM %[1]s AS SELECT id, sym, qty + id AS x FROM %[2]s", "SELECT count(*), sum(x) FROM %s"},
	{"wasm", "CREATE STREAM %[1]s AS SELECT id, sym, bench_add(qty, id) AS x FROM %[2]s", "SELECT count(*), sum(x) FROM %s"},
	{"builtin-text", "CREATE STREAM %[1]s AS SELECT id, upper(sym) AS s, qty FROM %[2]s", "SELECT count(*), sum(length(s)), sum(CASE WHEN s = upper(s) THEN 1 ELSE 0 END) FROM %s"},
	{"wasm-text", "CREATE STREAM %[1]s AS SELECT id, bench_upper(sym) AS s, qty FROM %[2]s", "SELECT count(*), sum(length(s)), sum(CASE WHEN s = upper(s) THEN 1 ELSE 0 END) FROM %s"},
}

// UDF runs the udf scenario: the cost of calling a wasm function per row
// in a pipeline, against the built-in expression, and a module's cold
// start.
func UDF(ctx context.Context, o Options, c UDFConfig) error {
	orDefault(&c.Rows, 1_000_000)
	orDefault(&c.Partitions, 4)
	orDefault(&c.Runs, 3)
	orDefault(&c.CatchupTimeout, 5*time.Minute)
	h, ctx, err := openHarness(ctx, o, false)
	if err != nil {
		return err
	}
	defer h.close()
	in := h.name("u_in")
	add, upper := h.name("bench_add"), h.name("bench_upper")
	h.header("udf",
		fmt.Sprintf("workload: %s JSON rows (id, sym, price, qty, ts) loaded by franz-go into a %d-partition stream; each run is one stateless continuous query over all of it, from CREATE until consumed = the rows and lag = 0:", Count(float64(c.Rows)), c.Partitions),
		"  builtin       "+fmt.Sprintf(udfVariants[0].sql, "out", "s"),
		"  wasm          "+fmt.Sprintf(udfVariants[1].sql, "out", "s")+": bench_add is add(a i64, b i64) -> i64, a plain export, one call per row",
		"  builtin-text  "+fmt.Sprintf(udfVariants[2].sql, "out", "s"),
		"  wasm-text     "+fmt.Sprintf(udfVariants[3].sql, "out", "s")+": bench_upper upper-cases ASCII in place (fv_alloc, memory, packed result)",
		fmt.Sprintf("  the variants alternate, %d runs each; medians; the wasm output is checked against the builtin's (count and sums equal)", c.Runs),
		"  cold start: CREATE FUNCTION … AS $1 of a module shipped as a bytea parameter (compile, first instance, catalog write), then the first and a later call of it; risk is examples/udf/risk built with GOOS=wasip1 (when the go command is there)",
	)

	// Cold start, on fresh modules (a module already compiled would be
	// reused: a fresh constant in the module makes it new).
	type coldRow struct {
		what         string
		create       time.Duration
		first, later time.Duration
	}
	var colds []coldRow
	for i, mod := range []struct {
		what, export, sig string
		wasm              []byte
	}{
		{"add (wasmgen)", "add", "(a BIGINT, b BIGINT) RETURNS BIGINT", wasmgen.Add()},
		{"upper (wasmgen)", "upper", "(s TEXT) RETURNS TEXT", wasmgen.Upper()},
		{"scale (wasmgen, fresh constant)", "f", "(x BIGINT) RETURNS BIGINT", wasmgen.Scale(time.Now().UnixNano())},
		{"risk (Go, wasip1)", "risk", "(amount DOUBLE PRECISION, country TEXT) RETURNS DOUBLE PRECISION", goModule()},
	} {
		if mod.wasm == nil {
			continue // no go command to build it
		}
		mod.what = strings.Replace(mod.what, ")", fmt.Sprintf(", %s)", byteSize(len(mod.wasm))), 1)
		fn := h.name(fmt.Sprintf("bench_cold%d", i))
		t0 := time.Now()
		if _, err := h.conn.Exec(ctx, fmt.Sprintf("CREATE FUNCTION %s%s LANGUAGE wasm AS $1 WITH (export = '%s')", fn, mod.sig, mod.export), mod.wasm); err != nil {
			return err
		}
		created := time.Since(t0)
		arg := map[string]string{"add": "1, 2", "upper": "'x'", "f": "3", "risk": "1000, 'RU'"}[mod.export]
		call := func() (time.Duration, error) {
			t := time.Now()
			_, err := queryInts(ctx, h.conn, fmt.Sprintf("SELECT length(%s(%s)::text)", fn, arg))
			return time.Since(t), err
		}
		first, err := call()
		if err != nil {
			return err
		}
		later, err := call()
		if err != nil {
			return err
		}
		colds = append(colds, coldRow{mod.what, created, first, later})
		if err := h.exec(ctx, "DROP FUNCTION "+fn); err != nil {
			return err
		}
	}

	g := Gen{WithID: true}
	if _, err := h.createStream(ctx, streamSpec{name: in, columns: "(id BIGINT, sym TEXT, price DOUBLE PRECISION, qty BIGINT, ts TIMESTAMP)",
		partitions: c.Partitions, rows: c.Rows, row: g.AppendJSON}); err != nil {
		return err
	}
	if err := h.execf(ctx, "CREATE FUNCTION %s(a BIGINT, b BIGINT) RETURNS BIGINT LANGUAGE wasm AS decode('%s', 'base64') WITH (export = 'add')",
		add, base64.StdEncoding.EncodeToString(wasmgen.Add())); err != nil {
		return err
	}
	if err := h.execf(ctx, "CREATE FUNCTION %s(s TEXT) RETURNS TEXT LANGUAGE wasm AS decode('%s', 'base64') WITH (export = 'upper')",
		upper, base64.StdEncoding.EncodeToString(wasmgen.Upper())); err != nil {
		return err
	}
	fmt.Fprintln(h.o.Out)

	type agg struct {
		durs, cpus []time.Duration
		check      []int64
		bad        string
	}
	res := map[string]*agg{}
	for run := 0; run < c.Runs; run++ {
		for _, v := range udfVariants {
			out := h.name(fmt.Sprintf("u_%s_%d", strings.ReplaceAll(v.name, "-", "_"), run))
			q := fmt.Sprintf(v.sql, out, in)
			q = strings.NewReplacer("bench_add(", add+"(", "bench_upper(", upper+"(").Replace(q)
			ph, err := h.measure(ctx, "udf-"+v.name, func() error {
				_, err := h.catchUp(ctx, q, out, c.Rows, false, c.CatchupTimeout)
				return err
			})
			if err != nil {
				return fmt.Errorf("%s run %d: %w", v.name, run, err)
			}
			if err := flush(ctx, h.conn, 5*time.Minute); err != nil {
				return err
			}
			got, err := queryInts(ctx, h.conn, fmt.Sprintf(v.check, out))
			if err != nil {
				return err
			}
			a := res[v.name]
			if a == nil {
				a = &agg{}
				res[v.name] = a
			}
			a.durs, a.cpus = append(a.durs, ph.dur), append(a.cpus, ph.srvCPU)
			if a.check == nil {
				a.check = got
			} else if !equalInts(a.check, got) {
				a.bad = fmt.Sprintf("run %d gave %v, run 0 %v", run, got, a.check)
			}
			if err := h.exec(ctx, "DROP STREAM "+out); err != nil {
				return err
			}
		}
	}
	for _, pair := range [][2]string{{"builtin", "wasm"}, {"builtin-text", "wasm-text"}} {
		b, w := res[pair[0]], res[pair[1]]
		if b != nil && w != nil && w.bad == "" && !equalInts(b.check, w.check) {
			w.bad = fmt.Sprintf("%s's output %v differs from %s's %v", pair[1], w.check, pair[0], b.check)
		}
	}

	tb := Table{
		Title:  fmt.Sprintf("udf: a stateless pipeline over %s rows (%d partitions), %d runs each, medians", Count(float64(c.Rows)), c.Partitions, c.Runs),
		Header: []string{"variant", "duration", "rows/s", "proc cpu s", "rows/proc-cpu-s", "vs built-in", "target", "output"},
	}
	perCPUOf := func(a *agg) float64 { return Rate(c.Rows, Median(a.cpus)) }
	for _, v := range udfVariants {
		a := res[v.name]
		ratio, target := "-", "-"
		if base := map[string]string{"wasm": "builtin", "wasm-text": "builtin-text"}[v.name]; base != "" {
			r := perCPUOf(a) / perCPUOf(res[base])
			ratio = fmt.Sprintf("%.0f%%", 100*r)
			if v.name == "wasm" {
				target = verdict(r >= UDFRatioTarget) + fmt.Sprintf(" (≥ %.0f%%)", 100*UDFRatioTarget)
			}
		}
		output := "checked"
		if a.bad != "" {
			output = "WRONG: " + a.bad
			fmt.Fprintln(os.Stderr, "bench: udf:", v.name, a.bad)
		}
		tb.Add(v.name, Secs(Median(a.durs)), Count(Rate(c.Rows, Median(a.durs))), cpuSecs(Median(a.cpus)), Count(perCPUOf(a)), ratio, target, output)
	}
	tb.Notes = []string{
		"proc = the fvsql server's process; rows/proc-cpu-s = input rows per CPU-second of it; vs built-in = that rate over the built-in twin's",
		fmt.Sprintf("target: the wasm variant keeps ≥ %.0f%% of builtin's rows per CPU-second (issue 18)", 100*UDFRatioTarget),
	}
	tb.Print(h.o.Out)

	ct := Table{Title: "udf: cold start of a module", Header: []string{"module", "CREATE FUNCTION", "first call", "later call"}}
	for _, r := range colds {
		ct.Add(r.what, ms(r.create), ms(r.first), ms(r.later))
	}
	ct.Notes = []string{
		"CREATE FUNCTION = the statement's latency: the module checked and compiled (wazero's compiler), its first instance started, its bytes and the function written to the catalog log and applied",
		"first call = SELECT of one call right after (the compiled module and its first instance are reused); later call = the same again",
	}
	ct.Print(h.o.Out)
	if err := h.exec(ctx, "DROP FUNCTION "+add+", "+upper); err != nil {
		return err
	}
	return h.exec(ctx, "DROP STREAM "+in)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func byteSize(n int) string {
	if n < 10<<10 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// goModule builds examples/udf/risk for GOOS=wasip1 with the go command
// (the bench runs in the repository); nil without it.
func goModule() []byte {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "fvsql-bench-udf-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "risk.wasm")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, "./examples/udf/risk")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: udf: building examples/udf/risk: %v\n%s", err, b)
		return nil
	}
	b, _ := os.ReadFile(out)
	return b
}
