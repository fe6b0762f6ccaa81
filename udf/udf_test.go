package udf_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	"github.com/fvsql/fvsql/udf"
	"github.com/fvsql/fvsql/udf/wasmgen"
)

func newRuntime(t *testing.T, l udf.Limits) *udf.Runtime {
	t.Helper()
	r, err := udf.NewRuntime(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func compile(t *testing.T, r *udf.Runtime, wasm []byte, export string, sig udf.Signature) *udf.Function {
	t.Helper()
	f, err := r.Compile(context.Background(), wasm, export, sig)
	if err != nil {
		t.Fatalf("Compile %s: %v", sig.Name, err)
	}
	t.Cleanup(f.Close)
	return f
}

func call(t *testing.T, f *udf.Function, args ...types.Value) types.Value {
	t.Helper()
	v, err := f.Call(args)
	if err != nil {
		t.Fatalf("%s%v: %v", f.Signature().Name, args, err)
	}
	return v
}

// TestNumericExport: a plain (i64, i64) -> i64 export serves a bigint
// function with no glue; smaller integer arguments widen; NULL gives NULL
// without a call; concurrent callers each get an instance and the right
// sums.
func TestNumericExport(t *testing.T) {
	r := newRuntime(t, udf.Limits{})
	f := compile(t, r, wasmgen.Add(), "add", udf.Signature{Name: "add2", Args: []types.Type{types.Int8, types.Int8}, Ret: types.Int8})
	if v := call(t, f, types.NewInt8(40), types.NewInt8(2)); v.K != types.Int8 || v.I != 42 {
		t.Fatalf("add2(40, 2) = %+v", v)
	}
	if v := call(t, f, types.NewInt8(1), types.NullValue); !v.IsNull() {
		t.Fatalf("add2(1, NULL) = %+v, want NULL", v)
	}
	if f.Cold <= 0 {
		t.Errorf("cold start not measured: %v", f.Cold)
	}
	// integer arguments and result over an i64 export
	g := compile(t, r, wasmgen.Add(), "add", udf.Signature{Name: "add4", Args: []types.Type{types.Int4, types.Int2}, Ret: types.Int4})
	if v := call(t, g, types.NewInt(types.Int4, -5), types.NewInt(types.Int2, 3)); v.K != types.Int4 || v.I != -2 {
		t.Fatalf("add4(-5, 3) = %+v", v)
	}
	if _, err := g.Call([]types.Value{types.NewInt(types.Int4, 2147483647), types.NewInt(types.Int2, 1)}); pgerror.CodeOf(err) != pgerror.ExternalRoutineException {
		t.Fatalf("add4 overflowing integer: %v (%s), want 38000", err, pgerror.CodeOf(err))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				v, err := f.Call([]types.Value{types.NewInt8(int64(g)), types.NewInt8(int64(i))})
				if err != nil || v.I != int64(g+i) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent calls: wrong sum or error %v", err)
	}
}

// TestMemoryABI: text arguments go through fv_alloc and memory, text
// results come back as a packed pointer and length; a numeric argument
// and a text one mix; a table function's JSON rows decode into its
// columns.
func TestMemoryABI(t *testing.T) {
	r := newRuntime(t, udf.Limits{})
	up := compile(t, r, wasmgen.Upper(), "upper", udf.Signature{Name: "shout", Args: []types.Type{types.Text}, Ret: types.Text})
	for _, s := range []string{"hello, wasm", "", "ÄbC", strings.Repeat("x", 200000)} {
		v := call(t, up, types.NewText(s))
		if want := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r - 32
			}
			return r
		}, s); v.K != types.Text || v.S != want {
			t.Fatalf("shout(%.20q) = %.20q, want %.20q", s, v.S, want)
		}
	}
	risk := compile(t, r, wasmgen.Risk(), "risk", udf.Signature{Name: "risk", Args: []types.Type{types.Numeric, types.Text}, Ret: types.Float8})
	amount, _ := types.Cast(types.NewText("250.5"), types.Numeric)
	if v := call(t, risk, amount, types.NewText("DE")); v.K != types.Float8 || v.Float() != 250.5*2/1000 {
		t.Fatalf("risk(250.5, 'DE') = %v", v.Float())
	}
	rows := compile(t, r, wasmgen.Rows(), "rows", udf.Signature{Name: "enrich", Args: []types.Type{types.JSONB},
		Table: []udf.Column{{Name: "id", Type: types.Int8}, {Name: "tag", Type: types.Text}}})
	for in, want := range map[string]string{
		`[{"id":1,"tag":"a"},{"id":2,"tag":"b"}]`: "1:a 2:b",
		`[]`:                          "",
		`{"id":3,"tag":"c"} {"id":4}`: "3:c 4:<nil>",
	} {
		got, err := rows.CallTable([]types.Value{types.NewJSONB(in)})
		if err != nil {
			t.Fatalf("enrich(%s): %v", in, err)
		}
		var parts []string
		for _, row := range got {
			tag := "<nil>"
			if !row[1].IsNull() {
				tag = row[1].S
			}
			parts = append(parts, strconv.FormatInt(row[0].I, 10)+":"+tag)
		}
		if s := strings.Join(parts, " "); s != want {
			t.Errorf("enrich(%s) = %q, want %q", in, s, want)
		}
	}
	if _, err := rows.CallTable([]types.Value{types.NewJSONB(`[1, 2]`)}); pgerror.CodeOf(err) != pgerror.ExternalRoutineException {
		t.Errorf("enrich over rows that are not objects: %v, want 38000", err)
	}
}

// TestFailuresAreErrors: a trap, a call over the time limit and a module
// that exits fail their call with 38000 and the function's name (the
// module's fv_error message after a trap); the function goes on serving
// other calls, on a new instance where the old one was closed.
func TestFailuresAreErrors(t *testing.T) {
	r := newRuntime(t, udf.Limits{CallTimeout: 50 * time.Millisecond})
	f := compile(t, r, wasmgen.Check(), "check", udf.Signature{Name: "lucky", Args: []types.Type{types.Int8}, Ret: types.Int8})
	for round := range 2 {
		_, err := f.Call([]types.Value{types.NewInt8(13)})
		if pgerror.CodeOf(err) != pgerror.ExternalRoutineException || !strings.Contains(err.Error(), "function lucky") ||
			!strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), "unlucky number") {
			t.Fatalf("round %d: lucky(13): %v (%s), want a 38000 trap with the module's message", round, err, pgerror.CodeOf(err))
		}
		if v := call(t, f, types.NewInt8(12)); v.I != 12 {
			t.Fatalf("lucky(12) after a trap = %d", v.I)
		}
		began := time.Now()
		_, err = f.Call([]types.Value{types.NewInt8(7)})
		if pgerror.CodeOf(err) != pgerror.ExternalRoutineException || !strings.Contains(err.Error(), "time limit") {
			t.Fatalf("round %d: lucky(7): %v, want a 38000 time limit", round, err)
		}
		if d := time.Since(began); d > 2*time.Second {
			t.Fatalf("the spinning call ended after %v, limit 50ms", d)
		}
		if v := call(t, f, types.NewInt8(8)); v.I != 8 {
			t.Fatalf("lucky(8) after a timeout = %d", v.I)
		}
	}
	q := compile(t, r, wasmgen.Exit(), "quit", udf.Signature{Name: "quit", Args: []types.Type{types.Int8}, Ret: types.Int8})
	if _, err := q.Call([]types.Value{types.NewInt8(1)}); pgerror.CodeOf(err) != pgerror.ExternalRoutineException || !strings.Contains(err.Error(), "exited with code 3") {
		t.Fatalf("quit(1): %v, want 38000 exit code 3", err)
	}
}

// TestRefusedAtCompile: what cannot be called right is refused before
// anything runs, with the SQLSTATE a CREATE FUNCTION reports.
func TestRefusedAtCompile(t *testing.T) {
	r := newRuntime(t, udf.Limits{ModuleBytes: 4096, MemoryPages: 4})
	big := wasmgen.Module{MemoryPages: 8, Funcs: []wasmgen.Func{{Name: "f", Params: []wasmgen.ValType{wasmgen.I64}, Results: []wasmgen.ValType{wasmgen.I64}, Body: wasmgen.LocalGet(0)}}}
	bigint := []types.Type{types.Int8}
	noAlloc := wasmgen.Module{MemoryPages: 1, Funcs: []wasmgen.Func{{Name: "f", Params: []wasmgen.ValType{wasmgen.I32, wasmgen.I32}, Results: []wasmgen.ValType{wasmgen.I64}, Body: wasmgen.I64Const(0)}}}
	for _, c := range []struct {
		name   string
		wasm   []byte
		export string
		sig    udf.Signature
		code   pgerror.Code
		says   string
	}{
		{"not wasm", []byte("hello"), "f", udf.Signature{Name: "f", Args: bigint, Ret: types.Int8}, pgerror.InvalidFunctionDefinition, "invalid WebAssembly"},
		{"too large", make([]byte, 5000), "f", udf.Signature{Name: "f", Args: bigint, Ret: types.Int8}, pgerror.ProgramLimitExceeded, "limit"},
		{"no such export", wasmgen.Add(), "sum", udf.Signature{Name: "f", Args: bigint, Ret: types.Int8}, pgerror.InvalidFunctionDefinition, "exports: add"},
		{"wrong arity", wasmgen.Add(), "add", udf.Signature{Name: "f", Args: bigint, Ret: types.Int8}, pgerror.InvalidFunctionDefinition, "(i64, i64) -> (i64)"},
		{"text over a numeric export", wasmgen.Add(), "add", udf.Signature{Name: "f", Args: []types.Type{types.Text}, Ret: types.Int8}, pgerror.InvalidFunctionDefinition, "does not take"},
		{"text without fv_alloc", noAlloc.Bytes(), "f", udf.Signature{Name: "f", Args: []types.Type{types.Text}, Ret: types.Text}, pgerror.InvalidFunctionDefinition, "fv_alloc"},
		{"foreign import", wasmgen.Importer(), "f", udf.Signature{Name: "f", Args: bigint, Ret: types.Int8}, pgerror.InvalidFunctionDefinition, "env.secret"},
		{"interval argument", wasmgen.Add(), "add", udf.Signature{Name: "f", Args: []types.Type{types.Interval}, Ret: types.Int8}, pgerror.FeatureNotSupported, "interval"},
		{"memory over the limit", big.Bytes(), "f", udf.Signature{Name: "f", Args: bigint, Ret: types.Int8}, pgerror.InvalidFunctionDefinition, "memory"},
	} {
		_, err := r.Compile(context.Background(), c.wasm, c.export, c.sig)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message+" "+pe.Hint+" "+pe.Detail, c.says) {
			t.Errorf("%s: %v (%s), want %s saying %q", c.name, err, pgerror.CodeOf(err), c.code, c.says)
		}
	}
}

// TestCallBatch: a batch of calls through the driver gives each row what
// Call gives it: results for a numeric export and for one taking text
// (the rows' bytes in the module's memory), NULL for a row with a NULL
// argument, and for a trapping or spinning row its own error while the
// other rows of the batch get their results.
func TestCallBatch(t *testing.T) {
	r := newRuntime(t, udf.Limits{CallTimeout: 100 * time.Millisecond})
	add := compile(t, r, wasmgen.Add(), "add", udf.Signature{Name: "add2", Args: []types.Type{types.Int8, types.Int8}, Ret: types.Int8})
	risk := compile(t, r, wasmgen.Risk(), "risk", udf.Signature{Name: "risk", Args: []types.Type{types.Float8, types.Text}, Ret: types.Float8})
	lucky := compile(t, r, wasmgen.Check(), "check", udf.Signature{Name: "lucky", Args: []types.Type{types.Int8}, Ret: types.Int4})
	var addArgs, riskArgs, luckyArgs [][]types.Value
	for i := range 3000 {
		a := types.NewInt8(int64(i))
		if i%97 == 5 {
			a = types.NullValue
		}
		addArgs = append(addArgs, []types.Value{a, types.NewInt8(int64(-2 * i))})
		riskArgs = append(riskArgs, []types.Value{types.NewFloat8(float64(i)), types.NewText(strings.Repeat("x", i%7))})
		luckyArgs = append(luckyArgs, []types.Value{types.NewInt8(int64(i % 20))})
	}
	for round := range 2 {
		out, errs := add.CallBatch(addArgs)
		if want := int64(round+1) * int64(3000-31); add.Batched() != want { // 31 rows have a NULL
			t.Fatalf("round %d: add2 computed %d rows through its driver, want %d", round, add.Batched(), want)
		}
		for i := range addArgs {
			if errs[i] != nil {
				t.Fatalf("add2 row %d: %v", i, errs[i])
			}
			if i%97 == 5 {
				if !out[i].IsNull() {
					t.Fatalf("add2 row %d with a NULL argument: %v", i, out[i])
				}
			} else if out[i].I != int64(-i) {
				t.Fatalf("round %d: add2 row %d = %d, want %d", round, i, out[i].I, -i)
			}
		}
		out, errs = risk.CallBatch(riskArgs)
		for i := range riskArgs {
			if want := float64(i) * float64(i%7) / 1000; errs[i] != nil || out[i].Float() != want {
				t.Fatalf("risk row %d = %v, %v; want %v", i, out[i].Float(), errs[i], want)
			}
		}
	}
	out, errs := lucky.CallBatch(luckyArgs[:60])
	for i := range 60 {
		switch i % 20 {
		case 13:
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "unreachable") {
				t.Fatalf("lucky row %d (13): %v, want the trap", i, errs[i])
			}
		case 7:
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "time limit") {
				t.Fatalf("lucky row %d (7): %v, want the time limit", i, errs[i])
			}
		default:
			if errs[i] != nil || out[i].I != int64(i%20) || out[i].K != types.Int4 {
				t.Fatalf("lucky row %d = %+v, %v", i, out[i], errs[i])
			}
		}
	}
}

// TestCallBatchPacked: a function with a text result through the packed
// driver gives each row what Call gives it: upper-casing in place (the
// results in the module's argument memory, copied out row by row),
// results that overflow the output area (the driver stops, the host
// copies and calls again), one result larger than the whole area (row by
// row), and a NULL result.
func TestCallBatchPacked(t *testing.T) {
	r := newRuntime(t, udf.Limits{})
	up := compile(t, r, wasmgen.Upper(), "upper", udf.Signature{Name: "shout", Args: []types.Type{types.Text}, Ret: types.Text})
	var args [][]types.Value
	for i := range 2000 {
		args = append(args, []types.Value{types.NewText(fmt.Sprintf("row %d: %s", i, strings.Repeat("ab", i%50)))})
	}
	args[17] = []types.Value{types.NullValue}
	out, errs := up.CallBatch(args)
	if got := up.Batched(); got != int64(len(args)-1) {
		t.Errorf("shout computed %d rows through its driver, want %d (all but the NULL one)", got, len(args)-1)
	}
	for i, a := range args {
		want := strings.ToUpper(a[0].S)
		if errs[i] != nil || (a[0].IsNull() != out[i].IsNull()) || !a[0].IsNull() && out[i].S != want {
			t.Fatalf("shout row %d = %q, %v; want %q", i, out[i].S, errs[i], want)
		}
	}
	// fixed results of n bytes: 30 kB fill the 64 kB area twice per call,
	// 70 kB is larger than it
	for _, n := range []int{30000, 70000} {
		big := wasmgen.Module{MemoryPages: 4, Data: bytes.Repeat([]byte{'x'}, n), DataOffset: 4096, Funcs: []wasmgen.Func{
			wasmgen.Alloc(),
			{Name: "f", Params: []wasmgen.ValType{wasmgen.I64}, Results: []wasmgen.ValType{wasmgen.I64},
				Body: wasmgen.I64Const(4096<<32 | int64(n))},
		}}
		f := compile(t, r, big.Bytes(), "f", udf.Signature{Name: "big", Args: []types.Type{types.Int8}, Ret: types.Text})
		var rows [][]types.Value
		for i := range 9 {
			rows = append(rows, []types.Value{types.NewInt8(int64(i))})
		}
		out, errs := f.CallBatch(rows)
		for i := range rows {
			if errs[i] != nil || len(out[i].S) != n || strings.Trim(out[i].S, "x") != "" {
				t.Fatalf("big (%d bytes) row %d: %d bytes, %v", n, i, len(out[i].S), errs[i])
			}
		}
		if want := map[int]int64{30000: 9, 70000: 0}[n]; f.Batched() != want {
			t.Errorf("big (%d bytes): %d rows through the driver, want %d", n, f.Batched(), want)
		}
	}
}
