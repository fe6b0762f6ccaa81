package udf

import (
	"context"
	"encoding/binary"
	"math"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/fvsql/fvsql/types"
	"github.com/fvsql/fvsql/udf/wasmgen"
)

// Batched calls. Entering wasm from Go under the time limit costs a
// goroutine per call (wazero watches each call so that it can stop it),
// several times what a small function takes. So a scalar function with a
// fixed-width result (a number, boolean, date or timestamp) is also given
// a driver: a module fvsql generates for its signature, which imports
// the function and calls it for a batch of rows in one entry. Each row's
// parameters are an 8-byte slot per wasm parameter, then one for the
// result, in the driver's own memory, or, when the function takes text,
// bytea or jsonb, in the module's memory from fv_alloc (the rows'
// variable-length bytes after the slots), since those pointers are the
// module's. Rows with a NULL argument are left out (NULL, no call). A
// batch that fails (a trap, the time limit) is done again row by row, so
// that each row gets its own result or error.

// driverExport is the driver's entry: drive(base i32, n i32).
const driverExport = "drive"

// driver is a function's compiled driver module.
type driver struct {
	compiled wazero.CompiledModule
	stride   uint32 // bytes per row: 8 per wasm parameter, then 8 for the result
}

// minBatch is the fewest rows worth a driver call.
const minBatch = 4

// wasmOps are, per wasm value type, its wasmgen type and the opcodes
// that load and store it.
var wasmOps = map[api.ValueType]struct {
	vt          wasmgen.ValType
	load, store byte
}{
	api.ValueTypeI32: {wasmgen.I32, wasmgen.OpI32Load, wasmgen.OpI32Store},
	api.ValueTypeI64: {wasmgen.I64, wasmgen.OpI64Load, wasmgen.OpI64Store},
	api.ValueTypeF32: {wasmgen.F32, wasmgen.OpF32Load, wasmgen.OpF32Store},
	api.ValueTypeF64: {wasmgen.F64, wasmgen.OpF64Load, wasmgen.OpF64Store},
}

// buildDriver makes f's driver, when its result has a fixed width.
//
//	(func (export "drive") (param $base i32) (param $n i32) (local $i i32) (local $p i32)
//	  (local.set $p (local.get $base))
//	  (block (loop
//	    (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
//	    (<result>.store offset=8*np (local.get $p)
//	      (call $fn (<param 0>.load offset=0 (local.get $p)) … ))
//	    (local.set $i (i32.add (local.get $i) (i32.const 1)))
//	    (local.set $p (i32.add (local.get $p) (i32.const stride)))
//	    (br 0))))
func (f *Function) buildDriver(ctx context.Context) error {
	if f.resultSlot() == slotPacked {
		return nil
	}
	np := len(f.params)
	stride := uint32(8 * (np + 1))
	var params []wasmgen.ValType
	var loads []byte
	for j, t := range f.params {
		params = append(params, wasmOps[t].vt)
		loads = append(loads, wasmgen.LocalGet(3)...)
		loads = append(loads, wasmgen.Load(wasmOps[t].load, uint32(8*j))...)
	}
	m := wasmgen.Module{
		Imports: []wasmgen.Import{{Module: "user", Name: f.export, Params: params, Results: []wasmgen.ValType{wasmOps[f.result].vt}}},
		Funcs: []wasmgen.Func{{
			Name: driverExport, Params: []wasmgen.ValType{wasmgen.I32, wasmgen.I32}, Locals: []wasmgen.ValType{wasmgen.I32, wasmgen.I32},
			Body: wasmgen.Code(
				wasmgen.LocalGet(0), wasmgen.LocalSet(3),
				wasmgen.Block(), wasmgen.Loop(),
				wasmgen.LocalGet(2), wasmgen.LocalGet(1), wasmgen.I32GeU, wasmgen.BrIf(1),
				wasmgen.LocalGet(3), loads, wasmgen.Call(0), wasmgen.Store(wasmOps[f.result].store, uint32(8*np)),
				wasmgen.LocalGet(2), wasmgen.I32Const(1), wasmgen.I32Add, wasmgen.LocalSet(2),
				wasmgen.LocalGet(3), wasmgen.I32Const(int32(stride)), wasmgen.I32Add, wasmgen.LocalSet(3),
				wasmgen.Br(0),
				wasmgen.End(), wasmgen.End(),
			),
		}},
	}
	if f.varlen {
		m.ImportMemory = "user"
	} else {
		m.MemoryPages = 1
	}
	compiled, err := f.rt.rt.CompileModule(ctx, m.Bytes())
	if err != nil {
		return err
	}
	f.driver = &driver{compiled: compiled, stride: stride}
	return nil
}

// instantiateDriver starts the driver of an instance, its import bound to
// the instance's module.
func (f *Function) instantiateDriver(in *instance) error {
	if f.driver == nil {
		return nil
	}
	user := in.mod
	ctx := experimental.WithImportResolver(f.rt.ctx, func(name string) api.Module {
		if name == "user" {
			return user
		}
		return nil
	})
	drv, err := f.rt.rt.InstantiateModule(ctx, f.driver.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return err
	}
	in.drv = drv
	in.drive = drv.ExportedFunction(driverExport)
	in.slots = drv.ExportedMemory(ExportMemory)
	if f.varlen {
		in.slots = in.mem
	}
	return nil
}

// CallBatch calls a scalar function for each row of args (each row the
// arguments of one call), as Call would: out[i] is row i's result, or
// errs[i] its error. A function with a fixed-width result enters wasm
// once for the rows (see the top of this file).
func (f *Function) CallBatch(args [][]types.Value) ([]types.Value, []error) {
	out := make([]types.Value, len(args))
	errs := make([]error, len(args))
	rows := make([]int, 0, len(args))
	for i, row := range args {
		null := false
		for _, a := range row {
			null = null || a.IsNull()
		}
		if !null {
			rows = append(rows, i)
		}
	}
	if f.driver == nil || len(rows) < minBatch || !f.callDriver(args, rows, out) {
		for _, i := range rows {
			out[i], errs[i] = f.Call(args[i])
		}
	}
	return out, errs
}

// callDriver calls the rows through the driver; false when that failed
// (the rows are then called one by one).
func (f *Function) callDriver(args [][]types.Value, rows []int, out []types.Value) bool {
	in, err := f.get()
	if err != nil {
		return false
	}
	defer f.put(in)
	d := f.driver
	np := len(f.params)
	varBytes := 0
	if f.varlen {
		for _, i := range rows {
			for j, a := range args[i] {
				if isVarlen(f.sig.Args[j]) {
					varBytes += len(a.S)
				}
			}
		}
	}
	size := len(rows)*int(d.stride) + varBytes
	if size > math.MaxInt32/2 {
		return false
	}
	var base uint32
	if f.varlen {
		in.stack[0] = uint64(size)
		if f.guard(in, in.alloc, in.stack) != nil {
			return false
		}
		base = uint32(in.stack[0])
	} else if have := int(in.slots.Size()); have < size {
		if _, ok := in.slots.Grow(uint32((size - have + 65535) / 65536)); !ok {
			return false
		}
	}
	buf := make([]byte, size)
	params := make([]uint64, np)
	off := base + uint32(len(rows))*d.stride // where the variable-length bytes go
	for k, i := range rows {
		start := off
		next, err := f.encode(args[i], params, off)
		if err != nil {
			return false
		}
		slot := buf[k*int(d.stride):]
		for j, p := range params {
			binary.LittleEndian.PutUint64(slot[8*j:], p)
		}
		if f.varlen {
			at := int(start - base)
			for j, a := range args[i] {
				if isVarlen(f.sig.Args[j]) {
					at += copy(buf[at:], a.S)
				}
			}
		}
		off = next
	}
	if !in.slots.Write(base, buf) {
		return false
	}
	in.stack[0], in.stack[1] = uint64(base), uint64(len(rows))
	if f.guard(in, in.drive, in.stack[:2]) != nil {
		return false
	}
	res, ok := in.slots.Read(base, uint32(len(rows))*d.stride)
	if !ok {
		return false
	}
	for k, i := range rows {
		raw := binary.LittleEndian.Uint64(res[k*int(d.stride)+8*np:])
		v, err := f.decodeResult(in, raw)
		if err != nil {
			return false // the row by itself reports it
		}
		out[i] = v
	}
	return true
}
