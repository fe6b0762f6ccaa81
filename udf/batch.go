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
// several times what a small function takes. So a scalar function is
// also given a driver: a module fvsql generates for its signature, which
// imports the function and calls it for a batch of rows in one entry.
// Each row's parameters are an 8-byte slot per wasm parameter, then one
// for the result, in the driver's own memory, or, when the function
// passes text, bytea or jsonb, in the module's memory from fv_alloc (the
// rows' variable-length bytes after the slots), since those pointers are
// the module's. A variable-length result is copied into an output area
// after them (buildPackedDriver): the module may reuse its result's
// memory at the next call. A function with a variable-length result
// whose module has no fv_alloc, and a table function, have no driver.
// Rows with a NULL argument are left out (NULL, no call). A batch that
// fails (a trap, the time limit) is done again row by row, so that each
// row gets its own result or error.

// driverExport is the driver's entry: drive(base i32, n i32).
const driverExport = "drive"

// driver is a function's compiled driver module.
type driver struct {
	compiled wazero.CompiledModule
	stride   uint32 // bytes per row: 8 per wasm parameter, then 8 for the result
	// packed: the function's result is a packed pointer and length; the
	// driver copies each row's bytes into an output area (see
	// buildPackedDriver).
	packed bool
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

// buildDriver makes f's driver; a function with a fixed-width result
// (a number, boolean, date or timestamp) gets this one:
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
		if len(f.sig.Table) > 0 || !f.hasAlloc {
			return nil
		}
		return f.buildPackedDriver(ctx)
	}
	np := len(f.params)
	stride := uint32(8 * (np + 1))
	params, loads := f.driverParams(3)
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

// driverParams are the function's wasm parameters, and the code that
// loads them from the row slot whose address is in local p.
func (f *Function) driverParams(p int) ([]wasmgen.ValType, []byte) {
	var params []wasmgen.ValType
	var loads []byte
	for j, t := range f.params {
		params = append(params, wasmOps[t].vt)
		loads = append(loads, wasmgen.LocalGet(p)...)
		loads = append(loads, wasmgen.Load(wasmOps[t].load, uint32(8*j))...)
	}
	return params, loads
}

// buildPackedDriver makes the driver of a function whose result is a
// packed pointer and length (text, bytea, jsonb). The module may reuse
// its result's memory at the next call, so the driver copies each
// result into an output area of the host's (in the module's memory, from
// fv_alloc, after the slots), and stores in the slot its pointer and
// length there; it stops early, returning how many rows it did, when the
// next result would not fit.
//
//	(func (export "drive") (param $base i32) (param $n i32) (param $out i32) (param $cap i32) (result i32)
//	  (local $i i32) (local $p i32) (local $o i32) (local $r i64) (local $len i32)
//	  (local.set $p (local.get $base)) (local.set $o (local.get $out))
//	  (block $done (loop $next
//	    (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
//	    (local.set $r (call $fn <params from $p>))
//	    (local.set $len (i32.wrap_i64 (local.get $r)))
//	    (block $store
//	      (br_if $store (i32.eq (local.get $len) (i32.const -1)))      ;; NULL
//	      (br_if $done (i32.gt_u (i32.add (local.get $o) (local.get $len))
//	                             (i32.add (local.get $out) (local.get $cap))))
//	      (memory.copy (local.get $o) (i32.wrap_i64 (i64.shr_u (local.get $r) (i64.const 32))) (local.get $len))
//	      (local.set $r (i64.or (i64.shl (i64.extend_i32_u (local.get $o)) (i64.const 32)) (i64.extend_i32_u (local.get $len))))
//	      (local.set $o (i32.add (local.get $o) (local.get $len))))
//	    (i64.store offset=8*np (local.get $p) (local.get $r))
//	    (local.set $i (i32.add (local.get $i) (i32.const 1)))
//	    (local.set $p (i32.add (local.get $p) (i32.const stride)))
//	    (br $next)))
//	  (local.get $i))
func (f *Function) buildPackedDriver(ctx context.Context) error {
	np := len(f.params)
	stride := uint32(8 * (np + 1))
	const base, n, out, cp, i, p, o, r, ln = 0, 1, 2, 3, 4, 5, 6, 7, 8
	params, loads := f.driverParams(p)
	w := wasmgen.Code
	m := wasmgen.Module{
		ImportMemory: "user",
		Imports:      []wasmgen.Import{{Module: "user", Name: f.export, Params: params, Results: []wasmgen.ValType{wasmgen.I64}}},
		Funcs: []wasmgen.Func{{
			Name: driverExport, Params: []wasmgen.ValType{wasmgen.I32, wasmgen.I32, wasmgen.I32, wasmgen.I32}, Results: []wasmgen.ValType{wasmgen.I32},
			Locals: []wasmgen.ValType{wasmgen.I32, wasmgen.I32, wasmgen.I32, wasmgen.I64, wasmgen.I32},
			Body: w(
				wasmgen.LocalGet(base), wasmgen.LocalSet(p), wasmgen.LocalGet(out), wasmgen.LocalSet(o),
				wasmgen.Block(), wasmgen.Loop(),
				wasmgen.LocalGet(i), wasmgen.LocalGet(n), wasmgen.I32GeU, wasmgen.BrIf(1),
				loads, wasmgen.Call(0), wasmgen.LocalSet(r),
				wasmgen.LocalGet(r), wasmgen.I32WrapI64, wasmgen.LocalSet(ln),
				wasmgen.Block(),
				wasmgen.LocalGet(ln), wasmgen.I32Const(-1), wasmgen.I32Eq, wasmgen.BrIf(0),
				wasmgen.LocalGet(o), wasmgen.LocalGet(ln), wasmgen.I32Add, wasmgen.LocalGet(out), wasmgen.LocalGet(cp), wasmgen.I32Add, wasmgen.I32GtU, wasmgen.BrIf(2),
				wasmgen.LocalGet(o), wasmgen.LocalGet(r), wasmgen.I64Const(32), wasmgen.I64ShrU, wasmgen.I32WrapI64, wasmgen.LocalGet(ln), wasmgen.MemoryCopy(),
				wasmgen.LocalGet(o), wasmgen.I64ExtendI32U, wasmgen.I64Const(32), wasmgen.I64Shl, wasmgen.LocalGet(ln), wasmgen.I64ExtendI32U, wasmgen.I64Or, wasmgen.LocalSet(r),
				wasmgen.LocalGet(o), wasmgen.LocalGet(ln), wasmgen.I32Add, wasmgen.LocalSet(o),
				wasmgen.End(),
				wasmgen.LocalGet(p), wasmgen.LocalGet(r), wasmgen.Store(wasmgen.OpI64Store, uint32(8*np)),
				wasmgen.LocalGet(i), wasmgen.I32Const(1), wasmgen.I32Add, wasmgen.LocalSet(i),
				wasmgen.LocalGet(p), wasmgen.I32Const(int32(stride)), wasmgen.I32Add, wasmgen.LocalSet(p),
				wasmgen.Br(0),
				wasmgen.End(), wasmgen.End(),
				wasmgen.LocalGet(i),
			),
		}},
	}
	compiled, err := f.rt.rt.CompileModule(ctx, m.Bytes())
	if err != nil {
		return err
	}
	f.driver = &driver{compiled: compiled, stride: stride, packed: true}
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
	if f.varlen || f.driver.packed {
		in.slots = in.mem
	}
	return nil
}

// CallBatch calls a scalar function for each row of args (each row the
// arguments of one call), as Call would: out[i] is row i's result, or
// errs[i] its error. A function with a driver enters wasm once for the
// rows, or a few times for large variable-length results (see the top of
// this file).
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
	written := len(rows)*int(d.stride) + varBytes // the slots, then the variable-length arguments
	capBytes := 0                                 // the output area of a packed driver, after them
	if d.packed {
		capBytes = max(64<<10, 2*varBytes+32*len(rows))
	}
	size := written + capBytes
	if size > math.MaxInt32/2 {
		return false
	}
	var base uint32
	if f.varlen || d.packed {
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
	buf := make([]byte, written)
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
	if d.packed {
		return f.drivePacked(in, rows, out, base, base+uint32(written), uint32(capBytes))
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
	f.batched.Add(int64(len(rows)))
	return true
}

// Batched is how many rows the function has computed through its driver
// (several rows per entry into wasm), not one call at a time.
func (f *Function) Batched() int64 { return f.batched.Load() }

// drivePacked runs a packed driver over the rows written at base: each
// call does the rows whose results fit in the output area at outAt, and
// the host copies them out before the next; false when it failed, or
// when one result alone is larger than the area (the rows are then called
// one by one).
func (f *Function) drivePacked(in *instance, rows []int, out []types.Value, base, outAt, capBytes uint32) bool {
	stride, np := f.driver.stride, len(f.params)
	for done := 0; done < len(rows); {
		at := base + uint32(done)*stride
		in.stack[0], in.stack[1], in.stack[2], in.stack[3] = uint64(at), uint64(len(rows)-done), uint64(outAt), uint64(capBytes)
		if f.guard(in, in.drive, in.stack[:4]) != nil {
			return false
		}
		k := int(uint32(in.stack[0]))
		if k == 0 {
			return false
		}
		res, ok := in.slots.Read(at, uint32(k)*stride)
		if !ok {
			return false
		}
		for j := range k {
			v, err := f.decodeResult(in, binary.LittleEndian.Uint64(res[j*int(stride)+8*np:]))
			if err != nil {
				return false // the row by itself reports it
			}
			out[rows[done+j]] = v
		}
		done += k
	}
	f.batched.Add(int64(len(rows)))
	return true
}
