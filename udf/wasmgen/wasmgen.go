// Package wasmgen assembles small WebAssembly modules from Go: a module
// is a list of functions, each a signature and a body of instructions
// (the helpers below, one per opcode the tests and benchmarks use), and
// Bytes encodes it in the binary format. It lets the tests and the
// benchmarks of user functions build the modules they load from source,
// without a WebAssembly toolchain: the module is what a hand-written
// .wat would assemble to.
package wasmgen

import "math"

// ValType is a WebAssembly value type.
type ValType byte

// The value types.
const (
	I32 ValType = 0x7f
	I64 ValType = 0x7e
	F32 ValType = 0x7d
	F64 ValType = 0x7c
)

// Func is one function of a module.
type Func struct {
	Name    string // exported under this name; "" is not exported
	Params  []ValType
	Results []ValType
	Locals  []ValType // beyond the parameters
	Body    []byte    // instructions, without the final end
}

// Import is a function imported from another module.
type Import struct {
	Module, Name    string
	Params, Results []ValType
}

// Module is a module: imported functions (indexes 0…), then its own
// functions, one exported memory ("memory") of MemoryPages pages when
// not 0 (MaxPages: its maximum, 0 none), and a data segment Data at
// DataOffset. ImportMemory, when set, imports the module's memory from
// that module ("memory") instead of defining one.
type Module struct {
	Imports      []Import
	ImportMemory string
	Funcs        []Func
	MemoryPages  uint32
	MaxPages     uint32
	Data         []byte
	DataOffset   uint32
}

// FuncIndex returns the index of the function called name (imports
// first), for Call; -1 when there is none.
func (m *Module) FuncIndex(name string) int {
	for i, f := range m.Funcs {
		if f.Name == name {
			return len(m.Imports) + i
		}
	}
	return -1
}

// Bytes encodes the module.
func (m *Module) Bytes() []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	// Types: one per function and import, in order (duplicates are fine).
	var types []byte
	n := 0
	sig := func(params, results []ValType) {
		types = append(types, 0x60)
		types = appendU(types, uint64(len(params)))
		for _, p := range params {
			types = append(types, byte(p))
		}
		types = appendU(types, uint64(len(results)))
		for _, r := range results {
			types = append(types, byte(r))
		}
		n++
	}
	for _, im := range m.Imports {
		sig(im.Params, im.Results)
	}
	for _, f := range m.Funcs {
		sig(f.Params, f.Results)
	}
	out = section(out, 1, appendU(nil, uint64(n)), types)
	if len(m.Imports) > 0 || m.ImportMemory != "" {
		var b []byte
		for i, im := range m.Imports {
			b = appendName(b, im.Module)
			b = appendName(b, im.Name)
			b = append(b, 0x00) // a function
			b = appendU(b, uint64(i))
		}
		n := len(m.Imports)
		if m.ImportMemory != "" {
			b = appendName(b, m.ImportMemory)
			b = appendName(b, "memory")
			b = append(b, 0x02, 0x00, 0x00) // a memory, no maximum, at least 0 pages
			n++
		}
		out = section(out, 2, appendU(nil, uint64(n)), b)
	}
	var fidx []byte
	for i := range m.Funcs {
		fidx = appendU(fidx, uint64(len(m.Imports)+i))
	}
	out = section(out, 3, appendU(nil, uint64(len(m.Funcs))), fidx)
	if m.MemoryPages > 0 {
		b := []byte{0x01} // one memory
		if m.MaxPages > 0 {
			b = append(b, 0x01)
			b = appendU(b, uint64(m.MemoryPages))
			b = appendU(b, uint64(m.MaxPages))
		} else {
			b = append(b, 0x00)
			b = appendU(b, uint64(m.MemoryPages))
		}
		out = section(out, 5, nil, b)
	}
	var exports []byte
	ne := 0
	for i, f := range m.Funcs {
		if f.Name == "" {
			continue
		}
		exports = appendName(exports, f.Name)
		exports = append(exports, 0x00)
		exports = appendU(exports, uint64(len(m.Imports)+i))
		ne++
	}
	if m.MemoryPages > 0 {
		exports = appendName(exports, "memory")
		exports = append(exports, 0x02, 0x00)
		ne++
	}
	out = section(out, 7, appendU(nil, uint64(ne)), exports)
	var code []byte
	for _, f := range m.Funcs {
		var body []byte
		body = appendU(body, uint64(len(f.Locals)))
		for _, l := range f.Locals {
			body = append(body, 0x01, byte(l))
		}
		body = append(body, f.Body...)
		body = append(body, 0x0b)
		code = appendU(code, uint64(len(body)))
		code = append(code, body...)
	}
	out = section(out, 10, appendU(nil, uint64(len(m.Funcs))), code)
	if len(m.Data) > 0 {
		b := []byte{0x00} // active, memory 0
		b = append(b, I32Const(int32(m.DataOffset))...)
		b = append(b, 0x0b)
		b = appendU(b, uint64(len(m.Data)))
		b = append(b, m.Data...)
		out = section(out, 11, appendU(nil, 1), b)
	}
	return out
}

func section(out []byte, id byte, head, body []byte) []byte {
	out = append(out, id)
	out = appendU(out, uint64(len(head)+len(body)))
	out = append(out, head...)
	return append(out, body...)
}

func appendName(b []byte, s string) []byte {
	b = appendU(b, uint64(len(s)))
	return append(b, s...)
}

func appendU(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Code concatenates instructions.
func Code(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Instructions.

func LocalGet(i int) []byte   { return appendU([]byte{0x20}, uint64(i)) }
func LocalSet(i int) []byte   { return appendU([]byte{0x21}, uint64(i)) }
func LocalTee(i int) []byte   { return appendU([]byte{0x22}, uint64(i)) }
func I32Const(v int32) []byte { return appendS([]byte{0x41}, int64(v)) }
func I64Const(v int64) []byte { return appendS([]byte{0x42}, v) }
func F64Const(v float64) []byte {
	b := []byte{0x44}
	u := math.Float64bits(v)
	for i := 0; i < 8; i++ {
		b = append(b, byte(u>>(8*i)))
	}
	return b
}
func Call(i int) []byte { return appendU([]byte{0x10}, uint64(i)) }

// Block, Loop and If open a structured instruction with no result (If
// with an i32 on the stack); End closes it. Br and BrIf branch to the
// label depth levels out.
func Block() []byte         { return []byte{0x02, 0x40} }
func Loop() []byte          { return []byte{0x03, 0x40} }
func If() []byte            { return []byte{0x04, 0x40} }
func Else() []byte          { return []byte{0x05} }
func End() []byte           { return []byte{0x0b} }
func Br(depth int) []byte   { return appendU([]byte{0x0c}, uint64(depth)) }
func BrIf(depth int) []byte { return appendU([]byte{0x0d}, uint64(depth)) }
func Return() []byte        { return []byte{0x0f} }
func Unreachable() []byte   { return []byte{0x00} }
func Drop() []byte          { return []byte{0x1a} }

// Load and Store access memory at the address on the stack plus offset
// (alignment hint 0): op is one of the Load* and Store* opcodes.
func Load(op byte, offset uint32) []byte  { return appendU([]byte{op, 0x00}, uint64(offset)) }
func Store(op byte, offset uint32) []byte { return appendU([]byte{op, 0x00}, uint64(offset)) }

// Load and store opcodes.
const (
	OpI32Load  = 0x28
	OpI64Load  = 0x29
	OpF32Load  = 0x2a
	OpF64Load  = 0x2b
	OpI32Store = 0x36
	OpI64Store = 0x37
	OpF32Store = 0x38
	OpF64Store = 0x39
)

// MemoryCopy is memory.copy (bulk memory): dst, src and length on the
// stack.
func MemoryCopy() []byte { return []byte{0xfc, 0x0a, 0x00, 0x00} }

// Memory access (alignment hint 0, offset 0) and size.
func I32Load8U() []byte  { return []byte{0x2d, 0x00, 0x00} }
func I32Store8() []byte  { return []byte{0x3a, 0x00, 0x00} }
func MemoryGrow() []byte { return []byte{0x40, 0x00} }
func MemorySize() []byte { return []byte{0x3f, 0x00} }

// Numeric instructions.
var (
	I32Eqz         = []byte{0x45}
	I32Eq          = []byte{0x46}
	I32LtU         = []byte{0x49}
	I32GeU         = []byte{0x4f}
	I32GtU         = []byte{0x4b}
	I32LeU         = []byte{0x4d}
	I32And         = []byte{0x71}
	I32Shl         = []byte{0x74}
	I32Add         = []byte{0x6a}
	I32Sub         = []byte{0x6b}
	I32Mul         = []byte{0x6c}
	I32ShrU        = []byte{0x76}
	I64Add         = []byte{0x7c}
	I64Sub         = []byte{0x7d}
	I64Eq          = []byte{0x51}
	I64Mul         = []byte{0x7e}
	I64DivS        = []byte{0x7f}
	I64Or          = []byte{0x84}
	I64ShrU        = []byte{0x88}
	I32WrapI64     = []byte{0xa7}
	I32Ne          = []byte{0x47}
	I64Shl         = []byte{0x86}
	I64GtS         = []byte{0x55}
	F64Add         = []byte{0xa0}
	F64Mul         = []byte{0xa2}
	F64Div         = []byte{0xa3}
	F64Gt          = []byte{0x64}
	I64ExtendI32U  = []byte{0xad}
	I64ExtendI32S  = []byte{0xac}
	F64ConvertI32U = []byte{0xb8}
	F64ConvertI64S = []byte{0xb9}
)
