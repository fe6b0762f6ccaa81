package udf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Column is one output column of a table function.
type Column struct {
	Name string
	Type types.Type
}

// Signature is the SQL side of a function: its name (for messages), its
// argument types, and its result: Ret for a scalar function, Table (its
// columns) for a table function.
type Signature struct {
	Name  string
	Args  []types.Type
	Ret   types.Type
	Table []Column
}

// The exports of the ABI besides the function itself.
const (
	// ExportAlloc is fv_alloc(size i32) -> i32: memory for the host to
	// write the variable-length arguments of one call into. Required
	// when a function takes text, bytea or jsonb. The memory is the
	// host's until the call returns; the module may hand out the same
	// memory at the next fv_alloc.
	ExportAlloc = "fv_alloc"
	// ExportError is fv_error() -> i64 (optional): after a trap, the
	// message the module left (packed like a text result).
	ExportError = "fv_error"
	// ExportMemory is the memory variable-length values live in.
	ExportMemory = "memory"
)

// NullLength is the length of a variable-length result that is NULL.
const NullLength = 0xFFFFFFFF

// Hash is the hex SHA-256 of a module's bytes: how the catalog names it.
func Hash(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// Function is a compiled module's export bound to a signature, ready to
// call from any goroutine: each concurrent caller gets an instance of its
// own from the function's pool (a caller that runs one call at a time,
// a pipeline's worker, keeps reusing one).
type Function struct {
	rt       *Runtime
	sig      Signature
	export   string
	compiled wazero.CompiledModule
	params   []api.ValueType // the export's
	result   api.ValueType
	varlen   bool    // some argument is passed in memory
	hasAlloc bool    // the module exports fv_alloc
	driver   *driver // calls of a batch in one entry (batch.go); nil: row by row

	// Cold is the time Compile took to compile the module and start its
	// first instance.
	Cold time.Duration
	// batched counts the rows computed through the driver (batch.go).
	batched atomic.Int64

	mu     sync.Mutex
	free   []*instance
	closed bool
}

// maxIdle is how many idle instances a function keeps.
const maxIdle = 8

// Compile checks a module against the signature and the ABI (see the
// package doc) and returns the function, with one instance started. Its
// errors carry SQLSTATE 42P13 (a module or export that does not fit),
// 54000 (a module over Limits.ModuleBytes), or 0A000 (a type the ABI does
// not pass).
func (r *Runtime) Compile(ctx context.Context, wasm []byte, export string, sig Signature) (*Function, error) {
	began := time.Now()
	if len(wasm) > r.limits.ModuleBytes {
		return nil, pgerror.New(pgerror.ProgramLimitExceeded, "module of %d bytes is over the limit of %d", len(wasm), r.limits.ModuleBytes)
	}
	if export == "" {
		export = sig.Name
	}
	compiled, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, definitionError("invalid WebAssembly module: %s", firstLine(err.Error()))
	}
	f := &Function{rt: r, sig: sig, export: export, compiled: compiled}
	if err := f.check(); err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	if err := f.buildDriver(ctx); err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	in, err := f.instantiate()
	if err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	f.free = append(f.free, in)
	f.Cold = time.Since(began)
	return f, nil
}

// check matches the module's imports and exports with the signature.
func (f *Function) check() error {
	c := f.compiled
	for _, im := range c.ImportedFunctions() {
		mod, name, _ := im.Import()
		if mod != wasi_snapshot_preview1Name {
			return definitionError("the module imports %s.%s, which fvsql does not provide", mod, name).
				WithDetail("User functions are sandboxed: a module may import WASI (%s) only, with no files, network or environment.", wasi_snapshot_preview1Name)
		}
	}
	if len(c.ImportedMemories()) > 0 {
		return definitionError("the module imports a memory; it must define its own")
	}
	def, ok := c.ExportedFunctions()[f.export]
	if !ok {
		return definitionError("the module exports no function %q", f.export).
			WithHint("Name the export with WITH (export = '…'); the module exports: %s.", strings.Join(exportNames(c), ", "))
	}
	want, err := f.abiParams()
	if err != nil {
		return err
	}
	got := def.ParamTypes()
	if len(got) != len(want) {
		return f.mismatch(def)
	}
	for i, w := range want {
		if !accepts(w, got[i]) {
			return f.mismatch(def)
		}
	}
	f.params = got
	res := def.ResultTypes()
	if len(res) != 1 || !accepts(f.resultSlot(), res[0]) {
		return f.mismatch(def)
	}
	f.result = res[0]
	alloc, ok := c.ExportedFunctions()[ExportAlloc]
	f.hasAlloc = ok && sameTypes(alloc.ParamTypes(), api.ValueTypeI32) && sameTypes(alloc.ResultTypes(), api.ValueTypeI32)
	if f.varlen && !f.hasAlloc {
		return definitionError("a function taking text, bytea or jsonb needs the module to export %s(size i32) -> i32", ExportAlloc)
	}
	if f.varlen || f.resultSlot() == slotPacked {
		if _, ok := c.ExportedMemories()[ExportMemory]; !ok {
			return definitionError("a function passing text, bytea or jsonb needs the module to export its memory as %q", ExportMemory)
		}
	}
	return nil
}

const wasi_snapshot_preview1Name = "wasi_snapshot_preview1"

func (f *Function) mismatch(def api.FunctionDefinition) error {
	want, _ := f.abiParams()
	var ws []string
	for _, w := range want {
		ws = append(ws, w.String())
	}
	return definitionError("export %q is %s, which does not take %s", f.export, wasmSig(def), sigString(f.sig)).
		WithHint("The ABI passes (%s) and returns %s; see the README's user functions section.", strings.Join(ws, ", "), f.resultSlot())
}

// slot is what one wasm parameter of the ABI may be.
type slot uint8

const (
	slotI32    slot = iota + 1 // i32
	slotInt                    // i32 or i64
	slotI64                    // i64
	slotFloat                  // f32 or f64
	slotF64                    // f64
	slotPacked                 // i64: pointer << 32 | length (a result)
)

func (s slot) String() string {
	return [...]string{"", "i32", "i32 or i64", "i64", "f32 or f64", "f64", "i64 (pointer << 32 | length)"}[s]
}

func accepts(s slot, t api.ValueType) bool {
	switch s {
	case slotI32:
		return t == api.ValueTypeI32
	case slotInt:
		return t == api.ValueTypeI32 || t == api.ValueTypeI64
	case slotI64, slotPacked:
		return t == api.ValueTypeI64
	case slotFloat:
		return t == api.ValueTypeF32 || t == api.ValueTypeF64
	case slotF64:
		return t == api.ValueTypeF64
	}
	return false
}

// abiParams lists the wasm parameters the signature's arguments take.
func (f *Function) abiParams() ([]slot, error) {
	var out []slot
	f.varlen = false
	for _, t := range f.sig.Args {
		switch t {
		case types.Bool:
			out = append(out, slotI32)
		case types.Int2, types.Int4:
			out = append(out, slotInt)
		case types.Int8, types.Timestamp, types.TimestampTZ:
			out = append(out, slotI64)
		case types.Date:
			out = append(out, slotInt)
		case types.Float4:
			out = append(out, slotFloat)
		case types.Float8, types.Numeric:
			out = append(out, slotF64)
		case types.Text, types.Varchar, types.Bytea, types.JSONB:
			out = append(out, slotI32, slotI32)
			f.varlen = true
		default:
			return nil, pgerror.NotSupported("argument type %s of a wasm function", t).
				WithHint("The ABI passes boolean, integers, real, double precision, numeric (as f64), date, timestamps, text, bytea and jsonb.")
		}
	}
	if len(f.sig.Table) == 0 {
		if err := checkResultType(f.sig.Ret); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resultSlot is what the export's result must be: a number, or for a
// variable-length result (and a table function's rows) a packed pointer
// and length.
func (f *Function) resultSlot() slot {
	if len(f.sig.Table) > 0 {
		return slotPacked
	}
	switch f.sig.Ret {
	case types.Bool:
		return slotI32
	case types.Int2, types.Int4, types.Date:
		return slotInt
	case types.Int8, types.Timestamp, types.TimestampTZ:
		return slotI64
	case types.Float4:
		return slotFloat
	case types.Float8, types.Numeric:
		return slotF64
	}
	return slotPacked
}

func checkResultType(t types.Type) error {
	switch t {
	case types.Bool, types.Int2, types.Int4, types.Int8, types.Float4, types.Float8, types.Numeric,
		types.Date, types.Timestamp, types.TimestampTZ, types.Text, types.Varchar, types.Bytea, types.JSONB:
		return nil
	}
	return pgerror.NotSupported("result type %s of a wasm function", t)
}

func sameTypes(got []api.ValueType, want ...api.ValueType) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// instance is one instantiation of the module, used by one caller at a
// time.
type instance struct {
	mod    api.Module
	drv    api.Module   // the function's driver, bound to mod; nil without one
	drive  api.Function // its entry
	slots  api.Memory   // where the driver's rows are
	fn     api.Function
	alloc  api.Function
	errFn  api.Function
	mem    api.Memory
	stack  []uint64
	stderr *tail
	since  atomic.Int64 // the runtime's tick when the running call began; 0: idle
	killed atomic.Bool  // closed by the watchdog
}

func (f *Function) instantiate() (*instance, error) {
	r := f.rt
	stderr := &tail{}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize"). // a reactor's; a module without it starts as it is
		WithStderr(stderr)
	mod, err := r.rt.InstantiateModule(r.ctx, f.compiled, cfg)
	if err != nil {
		msg := firstLine(err.Error())
		if out := stderr.String(); out != "" {
			msg += ": " + out
		}
		return nil, pgerror.New(pgerror.ExternalRoutineException, "function %s: starting its module failed: %s", f.sig.Name, msg)
	}
	in := &instance{mod: mod, fn: mod.ExportedFunction(f.export), stderr: stderr}
	in.alloc = mod.ExportedFunction(ExportAlloc)
	in.errFn = mod.ExportedFunction(ExportError)
	in.mem = mod.ExportedMemory(ExportMemory)
	in.stack = make([]uint64, max(len(f.params), 4))
	if err := f.instantiateDriver(in); err != nil {
		_ = mod.Close(r.ctx)
		return nil, pgerror.New(pgerror.ExternalRoutineException, "function %s: starting its batch driver failed: %s", f.sig.Name, firstLine(err.Error()))
	}
	r.watchInstance(in)
	return in, nil
}

func (f *Function) get() (*instance, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errClosed
	}
	if n := len(f.free); n > 0 {
		in := f.free[n-1]
		f.free = f.free[:n-1]
		f.mu.Unlock()
		return in, nil
	}
	f.mu.Unlock()
	return f.instantiate()
}

func (f *Function) put(in *instance) {
	if in.closed() {
		f.discard(in)
		return
	}
	f.mu.Lock()
	if !f.closed && len(f.free) < maxIdle {
		f.free = append(f.free, in)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.discard(in)
}

func (f *Function) discard(in *instance) {
	f.rt.unwatch(in)
	in.close(0)
}

// closed reports whether the instance's module (or driver) was closed.
func (in *instance) closed() bool { return in.mod.IsClosed() || in.drv != nil && in.drv.IsClosed() }

// close closes the instance's module and driver (a running call ends).
func (in *instance) close(code uint32) {
	if in.drv != nil {
		_ = in.drv.CloseWithExitCode(context.Background(), code)
	}
	_ = in.mod.CloseWithExitCode(context.Background(), code)
}

// Close closes the function's instances and compiled module; calls in
// flight finish, later ones fail.
func (f *Function) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	free := f.free
	f.free = nil
	f.mu.Unlock()
	for _, in := range free {
		f.discard(in)
	}
	_ = f.compiled.Close(context.Background())
	if f.driver != nil {
		_ = f.driver.compiled.Close(context.Background())
	}
}

// Signature returns the function's signature.
func (f *Function) Signature() Signature { return f.sig }

// Call calls a scalar function on one row's arguments. A NULL argument
// gives NULL without a call (wasm functions are strict). Errors carry
// SQLSTATE 38000 and name the function: a trap, a call over the time
// limit, a module that exited, or a result the ABI does not allow.
func (f *Function) Call(args []types.Value) (types.Value, error) {
	for _, a := range args {
		if a.IsNull() {
			return types.NullValue, nil
		}
	}
	in, err := f.get()
	if err != nil {
		return types.NullValue, err
	}
	v, err := f.call(in, args)
	f.put(in)
	return v, err
}

func (f *Function) call(in *instance, args []types.Value) (types.Value, error) {
	raw, err := f.invoke(in, args)
	if err != nil {
		return types.NullValue, err
	}
	return f.decodeResult(in, raw)
}

// invoke passes the arguments and calls the export; it returns the raw
// result.
func (f *Function) invoke(in *instance, args []types.Value) (uint64, error) {
	var base uint32
	if f.varlen {
		total := 0
		for i, a := range args {
			if isVarlen(f.sig.Args[i]) {
				total += len(a.S)
			}
		}
		if total > math.MaxInt32 {
			return 0, f.fail("arguments of %d bytes are too large", total)
		}
		in.stack[0] = uint64(total)
		if err := f.guard(in, in.alloc, in.stack); err != nil {
			return 0, err
		}
		base = uint32(in.stack[0])
		off := base
		for i, a := range args {
			if isVarlen(f.sig.Args[i]) {
				if !in.mem.WriteString(off, a.S) {
					return 0, f.fail("%s returned memory out of bounds (%d bytes at %d)", ExportAlloc, total, base)
				}
				off += uint32(len(a.S))
			}
		}
	}
	stack := in.stack[:max(len(f.params), 1)]
	if _, err := f.encode(args, stack, base); err != nil {
		return 0, err
	}
	if err := f.guard(in, in.fn, stack); err != nil {
		return 0, err
	}
	return stack[0], nil
}

// encode puts one row's arguments into the export's parameters (dst),
// the variable-length ones as pointers from off on, where their bytes
// are (one after another, in argument order); it returns the offset
// after them.
func (f *Function) encode(args []types.Value, dst []uint64, off uint32) (uint32, error) {
	p := 0
	for i, a := range args {
		switch t := f.sig.Args[i]; {
		case isVarlen(t):
			dst[p] = uint64(off)
			dst[p+1] = uint64(len(a.S))
			off += uint32(len(a.S))
			p += 2
		case t == types.Float4 || t == types.Float8 || t == types.Numeric:
			x := a.Float()
			if t == types.Numeric {
				c, err := types.Cast(a, types.Float8)
				if err != nil {
					return 0, err
				}
				x = c.Float()
			}
			if f.params[p] == api.ValueTypeF32 {
				dst[p] = api.EncodeF32(float32(x))
			} else {
				dst[p] = api.EncodeF64(x)
			}
			p++
		default: // integers, booleans, dates, timestamps
			if f.params[p] == api.ValueTypeI32 {
				dst[p] = api.EncodeI32(int32(a.I))
			} else {
				dst[p] = api.EncodeI64(a.I)
			}
			p++
		}
	}
	return off, nil
}

func isVarlen(t types.Type) bool {
	return t == types.Text || t == types.Varchar || t == types.Bytea || t == types.JSONB
}

// guard runs one call under the watchdog and turns its failure into the
// function's error.
func (f *Function) guard(in *instance, fn api.Function, stack []uint64) error {
	in.since.Store(f.rt.tick.Load())
	err := fn.CallWithStack(f.rt.ctx, stack)
	in.since.Store(0)
	if err == nil {
		return nil
	}
	if in.killed.Load() {
		return pgerror.New(pgerror.ExternalRoutineException, "function %s: call exceeded the time limit of %v", f.sig.Name, f.rt.limits.CallTimeout).
			WithHint("A call of a user function is stopped after udf_call_timeout; the row is set aside in the pipeline's _errors stream.")
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		msg := fmt.Sprintf("function %s: its module exited with code %d", f.sig.Name, exit.ExitCode())
		if out := in.stderr.String(); out != "" {
			msg += ": " + out
		}
		return pgerror.New(pgerror.ExternalRoutineException, "%s", msg)
	}
	msg := firstLine(err.Error())
	if m := f.moduleError(in); m != "" {
		msg += ": " + m
	}
	return pgerror.New(pgerror.ExternalRoutineException, "function %s: %s", f.sig.Name, msg)
}

// moduleError asks a module that trapped for its message (fv_error).
func (f *Function) moduleError(in *instance) string {
	if in.errFn == nil || in.mem == nil || in.mod.IsClosed() {
		return ""
	}
	res, err := in.errFn.Call(f.rt.ctx)
	if err != nil || len(res) != 1 {
		return ""
	}
	b, ok := readPacked(in, res[0])
	if !ok || b == nil {
		return ""
	}
	return clip(strings.ToValidUTF8(string(b), "\uFFFD"))
}

func (f *Function) fail(format string, args ...any) error {
	return pgerror.New(pgerror.ExternalRoutineException, "function %s: %s", f.sig.Name, fmt.Sprintf(format, args...))
}

// readPacked reads a packed pointer and length from memory, copied; nil
// with ok for NullLength.
func readPacked(in *instance, raw uint64) ([]byte, bool) {
	ptr, n := uint32(raw>>32), uint32(raw)
	if n == NullLength {
		return nil, true
	}
	if in.mem == nil {
		return nil, false
	}
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		return nil, false
	}
	return bytes.Clone(b), true
}

func (f *Function) decodeResult(in *instance, raw uint64) (types.Value, error) {
	switch f.sig.Ret {
	case types.Bool:
		return types.NewBool(api.DecodeI32(raw) != 0), nil
	case types.Int2, types.Int4, types.Int8, types.Date:
		i := int64(api.DecodeI32(raw))
		if f.result == api.ValueTypeI64 {
			i = int64(raw)
		}
		if f.sig.Ret == types.Date {
			return types.NewDate(i), nil
		}
		v, err := types.Cast(types.NewInt8(i), f.sig.Ret)
		if err != nil {
			return types.NullValue, f.fail("result %d: %v", i, err)
		}
		return v, nil
	case types.Timestamp, types.TimestampTZ:
		return types.NewTimestamp(f.sig.Ret, int64(raw)), nil
	case types.Float4, types.Float8, types.Numeric:
		x := api.DecodeF64(raw)
		if f.result == api.ValueTypeF32 {
			x = float64(api.DecodeF32(raw))
		}
		v := types.NewFloat8(x)
		if f.sig.Ret == types.Float8 {
			return v, nil
		}
		c, err := types.Cast(v, f.sig.Ret)
		if err != nil {
			return types.NullValue, f.fail("result %v: %v", x, err)
		}
		return c, nil
	}
	b, ok := readPacked(in, raw)
	if !ok {
		return types.NullValue, f.fail("result out of memory bounds (pointer %d, length %d)", uint32(raw>>32), uint32(raw))
	}
	if b == nil {
		return types.NullValue, nil
	}
	switch f.sig.Ret {
	case types.Bytea:
		return types.NewBytea(b), nil
	case types.JSONB:
		v, err := types.Cast(types.NewText(string(b)), types.JSONB)
		if err != nil {
			return types.NullValue, f.fail("result is not JSON: %v", err)
		}
		return v, nil
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return types.NullValue, pgerror.New(pgerror.CharacterNotInRepertoire, "function %s: result is not valid UTF-8 text", f.sig.Name)
	}
	return types.NewString(f.sig.Ret, string(b)), nil
}

// CallTable calls a table function on one row's arguments: its result is
// JSON rows (an array of objects, or one object per line, fields named
// as the columns), decoded into rows of the signature's columns. A NULL
// argument gives no rows without a call.
func (f *Function) CallTable(args []types.Value) ([]types.Row, error) {
	for _, a := range args {
		if a.IsNull() {
			return nil, nil
		}
	}
	in, err := f.get()
	if err != nil {
		return nil, err
	}
	defer f.put(in)
	raw, err := f.invoke(in, args)
	if err != nil {
		return nil, err
	}
	b, ok := readPacked(in, raw)
	if !ok {
		return nil, f.fail("result out of memory bounds (pointer %d, length %d)", uint32(raw>>32), uint32(raw))
	}
	rows, err := decodeRows(b, f.sig.Table)
	if err != nil {
		return nil, f.fail("%v", err)
	}
	return rows, nil
}

// tail keeps the last bytes a module wrote to stderr (a runtime's panic
// message), for error messages.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailBytes = 512

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = t.b[len(t.b)-tailBytes:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return clip(strings.TrimSpace(strings.ToValidUTF8(string(t.b), "\uFFFD")))
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) > tailBytes {
		s = s[:tailBytes]
	}
	return strings.Join(strings.Fields(s), " ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func exportNames(c wazero.CompiledModule) []string {
	var out []string
	for n := range c.ExportedFunctions() {
		out = append(out, n)
	}
	if len(out) == 0 {
		return []string{"(none)"}
	}
	sort.Strings(out)
	return out
}

func wasmSig(def api.FunctionDefinition) string {
	var ps, rs []string
	for _, p := range def.ParamTypes() {
		ps = append(ps, api.ValueTypeName(p))
	}
	for _, r := range def.ResultTypes() {
		rs = append(rs, api.ValueTypeName(r))
	}
	return "(" + strings.Join(ps, ", ") + ") -> (" + strings.Join(rs, ", ") + ")"
}

func sigString(s Signature) string {
	var as []string
	for _, a := range s.Args {
		as = append(as, a.String())
	}
	ret := s.Ret.String()
	if len(s.Table) > 0 {
		var cs []string
		for _, c := range s.Table {
			cs = append(cs, c.Name+" "+c.Type.String())
		}
		ret = "TABLE (" + strings.Join(cs, ", ") + ")"
	}
	return s.Name + "(" + strings.Join(as, ", ") + ") RETURNS " + ret
}

// decodeRows reads JSON rows: an array of objects, or objects one after
// another (JSON lines), each decoded into the columns by name as a JSON
// stream's records are.
func decodeRows(b []byte, cols []Column) ([]types.Row, error) {
	names := make([]string, len(cols))
	ts := make([]types.Type, len(cols))
	for i, c := range cols {
		names[i], ts[i] = c.Name, c.Type
	}
	codec := types.NewJSONCodec(names, ts)
	var objs []json.RawMessage
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &objs); err != nil {
			return nil, fmt.Errorf("result is not a JSON array of rows: %v", err)
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var o json.RawMessage
			if err := dec.Decode(&o); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("result is not JSON rows: %v", err)
			}
			objs = append(objs, o)
		}
	}
	rows := make([]types.Row, 0, len(objs))
	for i, o := range objs {
		row := make(types.Row, len(cols))
		if err := codec.Decode(o, row); err != nil {
			return nil, fmt.Errorf("row %d of the result: %v", i+1, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
