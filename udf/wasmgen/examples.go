package wasmgen

// The modules the tests and benchmarks of user functions load. Each is
// what a few lines of WebAssembly text would assemble to; the comments
// give that text.

// Add exports add(a i64, b i64) -> i64: a + b. A plain numeric export,
// no memory: the ABI needs no glue for it.
func Add() []byte {
	m := Module{Funcs: []Func{{
		Name: "add", Params: []ValType{I64, I64}, Results: []ValType{I64},
		Body: Code(LocalGet(0), LocalGet(1), I64Add),
	}}}
	return m.Bytes()
}

// Alloc is fv_alloc, the allocator of the modules here, for modules
// assembled elsewhere (tests).
func Alloc() Func { return alloc() }

// alloc is fv_alloc(size i32) -> i32: the memory from offset 1024 on,
// grown to hold size bytes; the same memory at every call.
//
//	(local $end i32)
//	(local.set $end (i32.add (local.get 0) (i32.const 1024)))
//	(block (br_if 0 (i32.le_u (local.get $end) (i32.shl (memory.size) (i32.const 16))))
//	  (if (i32.eq (memory.grow (i32.add (i32.shr_u (i32.sub (local.get $end)
//	      (i32.shl (memory.size) (i32.const 16))) (i32.const 16)) (i32.const 1))) (i32.const -1))
//	    (then unreachable)))
//	(i32.const 1024)
func alloc() Func {
	memBytes := Code(MemorySize(), I32Const(16), I32Shl)
	return Func{
		Name: "fv_alloc", Params: []ValType{I32}, Results: []ValType{I32}, Locals: []ValType{I32},
		Body: Code(
			LocalGet(0), I32Const(1024), I32Add, LocalSet(1),
			Block(),
			LocalGet(1), memBytes, I32LeU, BrIf(0),
			LocalGet(1), memBytes, I32Sub, I32Const(16), I32ShrU, I32Const(1), I32Add,
			MemoryGrow(), I32Const(-1), I32Eq, If(), Unreachable(), End(),
			End(),
			I32Const(1024),
		),
	}
}

// packed returns (pointer << 32 | length) from two i32 locals.
func packed(ptr, n int) []byte {
	return Code(LocalGet(ptr), I64ExtendI32U, I64Const(32), I64Shl, LocalGet(n), I64ExtendI32U, I64Or)
}

// Upper exports upper(s text) -> text: s with ASCII letters upper-cased,
// in place in the argument's memory, and fv_alloc.
//
//	(func (export "upper") (param $p i32) (param $n i32) (result i64) (local $i i32) (local $c i32)
//	  (block (loop
//	    (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
//	    (local.set $c (i32.load8_u (i32.add (local.get $p) (local.get $i))))
//	    (if (i32.and (i32.ge_u (local.get $c) (i32.const 97)) (i32.le_u (local.get $c) (i32.const 122)))
//	      (then (i32.store8 (i32.add (local.get $p) (local.get $i)) (i32.sub (local.get $c) (i32.const 32)))))
//	    (local.set $i (i32.add (local.get $i) (i32.const 1)))
//	    (br 0)))
//	  (i64.or (i64.shl (i64.extend_i32_u (local.get $p)) (i64.const 32)) (i64.extend_i32_u (local.get $n))))
func Upper() []byte {
	m := Module{MemoryPages: 1, Funcs: []Func{alloc(), {
		Name: "upper", Params: []ValType{I32, I32}, Results: []ValType{I64}, Locals: []ValType{I32, I32},
		Body: Code(
			Block(), Loop(),
			LocalGet(2), LocalGet(1), I32GeU, BrIf(1),
			LocalGet(0), LocalGet(2), I32Add, I32Load8U(), LocalSet(3),
			LocalGet(3), I32Const(97), I32GeU, LocalGet(3), I32Const(122), I32LeU, I32And,
			If(), LocalGet(0), LocalGet(2), I32Add, LocalGet(3), I32Const(32), I32Sub, I32Store8(), End(),
			LocalGet(2), I32Const(1), I32Add, LocalSet(2),
			Br(0),
			End(), End(),
			packed(0, 1),
		),
	}}}
	return m.Bytes()
}

// Risk exports risk(amount f64, country text) -> f64: amount times the
// length of country, over 1000; and fv_alloc.
func Risk() []byte {
	m := Module{MemoryPages: 1, Funcs: []Func{alloc(), {
		Name: "risk", Params: []ValType{F64, I32, I32}, Results: []ValType{F64},
		Body: Code(LocalGet(0), LocalGet(2), F64ConvertI32U, F64Mul, F64Const(1000), F64Div),
	}}}
	return m.Bytes()
}

// Rows exports rows(payload i32, n i32) -> i64: its argument back, for a
// table function over a jsonb whose value is its rows; and fv_alloc.
func Rows() []byte {
	m := Module{MemoryPages: 1, Funcs: []Func{alloc(), {
		Name: "rows", Params: []ValType{I32, I32}, Results: []ValType{I64},
		Body: packed(0, 1),
	}}}
	return m.Bytes()
}

// Check exports check(x i64) -> i64: x, except that 13 traps
// (unreachable) and 7 runs forever; fv_error returns "unlucky number"
// after a trap.
func Check() []byte {
	msg := []byte("unlucky number")
	m := Module{MemoryPages: 1, Data: msg, DataOffset: 2048, Funcs: []Func{
		{
			Name: "check", Params: []ValType{I64}, Results: []ValType{I64},
			Body: Code(
				LocalGet(0), I64Const(13), I64Eq, If(), Unreachable(), End(),
				LocalGet(0), I64Const(7), I64Eq, If(), Loop(), Br(0), End(), End(),
				LocalGet(0),
			),
		},
		{
			Name: "fv_error", Results: []ValType{I64},
			Body: I64Const(2048<<32 | int64(len(msg))),
		},
	}}
	return m.Bytes()
}

// Exit exports quit(x i64) -> i64, which calls WASI's proc_exit(3).
func Exit() []byte {
	m := Module{
		Imports: []Import{{Module: "wasi_snapshot_preview1", Name: "proc_exit", Params: []ValType{I32}}},
		Funcs: []Func{{
			Name: "quit", Params: []ValType{I64}, Results: []ValType{I64},
			Body: Code(I32Const(3), Call(0), LocalGet(0)),
		}},
	}
	return m.Bytes()
}

// Importer exports f(x i64) -> i64 and imports env.secret, which no
// sandbox provides.
func Importer() []byte {
	m := Module{
		Imports: []Import{{Module: "env", Name: "secret", Results: []ValType{I64}}},
		Funcs: []Func{{
			Name: "f", Params: []ValType{I64}, Results: []ValType{I64},
			Body: Code(Call(0), LocalGet(0), I64Add),
		}},
	}
	return m.Bytes()
}

// Scale exports f(x i64) -> i64: x times k. Two of them with other k
// are two versions of one function.
func Scale(k int64) []byte {
	m := Module{Funcs: []Func{{
		Name: "f", Params: []ValType{I64}, Results: []ValType{I64},
		Body: Code(LocalGet(0), I64Const(k), I64Mul),
	}}}
	return m.Bytes()
}
