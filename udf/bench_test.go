package udf_test

import (
	"testing"

	"github.com/fvsql/fvsql/types"
	"github.com/fvsql/fvsql/udf"
	"github.com/fvsql/fvsql/udf/wasmgen"
)

// BenchmarkCall: one call of a trivial numeric export and of a text
// function through Function.Call (the per-row cost in a pipeline).
func BenchmarkCall(b *testing.B) {
	r, err := udf.NewRuntime(udf.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	add := compileB(b, r, wasmgen.Add(), "add", udf.Signature{Name: "add", Args: []types.Type{types.Int8, types.Int8}, Ret: types.Int8})
	up := compileB(b, r, wasmgen.Upper(), "upper", udf.Signature{Name: "up", Args: []types.Type{types.Text}, Ret: types.Text})
	b.Run("add", func(b *testing.B) {
		args := []types.Value{types.NewInt8(1), types.NewInt8(2)}
		for b.Loop() {
			if _, err := add.Call(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("upper", func(b *testing.B) {
		args := []types.Value{types.NewText("MSFT")}
		for b.Loop() {
			if _, err := up.Call(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func compileB(b *testing.B, r *udf.Runtime, wasm []byte, export string, sig udf.Signature) *udf.Function {
	f, err := r.Compile(b.Context(), wasm, export, sig)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.Close)
	return f
}

// BenchmarkCallBatch: the per-row cost of 1000 calls in one batch.
func BenchmarkCallBatch(b *testing.B) {
	r, err := udf.NewRuntime(udf.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	add := compileB(b, r, wasmgen.Add(), "add", udf.Signature{Name: "add", Args: []types.Type{types.Int8, types.Int8}, Ret: types.Int8})
	risk := compileB(b, r, wasmgen.Risk(), "risk", udf.Signature{Name: "risk", Args: []types.Type{types.Float8, types.Text}, Ret: types.Float8})
	up := compileB(b, r, wasmgen.Upper(), "upper", udf.Signature{Name: "up", Args: []types.Type{types.Text}, Ret: types.Text})
	for _, c := range []struct {
		name string
		f    *udf.Function
		row  []types.Value
	}{
		{"add", add, []types.Value{types.NewInt8(1), types.NewInt8(2)}},
		{"risk", risk, []types.Value{types.NewFloat8(100), types.NewText("MSFT")}},
		{"upper", up, []types.Value{types.NewText("msft")}},
	} {
		args := make([][]types.Value, 1000)
		for i := range args {
			args[i] = c.row
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, errs := c.f.CallBatch(args); errs[0] != nil {
					b.Fatal(errs[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(args)), "ns/row")
		})
	}
}
