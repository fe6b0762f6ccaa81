// Package udf runs user functions written in WebAssembly, sandboxed, on
// github.com/tetratelabs/wazero (pure Go, compiled to machine code).
//
// A Runtime (one per process) compiles modules; Compile checks a module
// against a function's SQL signature and the ABI below and returns a
// Function, which any goroutine may call: each concurrent caller gets an
// instance of the module of its own from the function's pool (a
// pipeline's worker, which calls one row at a time, keeps reusing one),
// so a module's global state is never shared between two calls running
// at once. Compile starts one instance, so a module that cannot start is
// refused when the function is created; Function.Cold is what that took.
//
// # Sandbox and limits
//
// A module may import WASI (wasi_snapshot_preview1) and nothing else: no
// files (no preopened directories), no network, no environment, no
// arguments; its clocks and random source are wazero's deterministic
// ones. Each instance's memory is capped (Limits.MemoryPages), and each
// call has a time limit (Limits.CallTimeout): a watchdog goroutine keeps
// a coarse clock and closes an instance whose call has run longer, which
// ends the call. A trap, a call over the limit, a module that exits and a
// result the ABI does not allow fail that call with SQLSTATE 38000 and
// the function's name; the engine sets such a row aside as a poison row
// in the pipeline's <name>_errors stream, and the stream goes on. A
// closed instance is dropped and the next call starts a new one.
//
// # ABI
//
// Arguments are wasm values, in order:
//
//	boolean                      i32 (0 or 1)
//	smallint, integer, date      i32 or i64, as the export declares (date: days since 1970-01-01)
//	bigint, timestamp[tz]        i64 (timestamps: microseconds since 1970-01-01 UTC)
//	real                         f32 or f64
//	double precision, numeric    f64 (numeric converted)
//	text, varchar, bytea, jsonb  two i32: pointer and length of the bytes in the module's memory
//
// The result is one wasm value: a number as above (an i64 result of an
// integer function is range-checked), or for text, varchar, bytea and
// jsonb an i64 packing pointer << 32 | length (length 0xFFFFFFFF: NULL).
// The host copies it out before the next call. A text result must be
// valid UTF-8; a jsonb result, JSON.
//
// Functions are strict: a NULL argument gives NULL without a call. A
// function passing variable-length values needs the module to export its
// memory as "memory" and, for variable-length arguments, fv_alloc(size
// i32) -> i32, which returns size bytes of memory for the host to write
// the call's variable-length arguments into (one after another); that
// memory is the host's until the call returns, and the module may hand
// out the same memory at every fv_alloc. A module may export fv_error()
// -> i64 (a packed text): after a trap, the message of the call's error.
//
// A table function (RETURNS TABLE) returns, packed like a text, JSON
// rows: an array of objects, or objects one after another (JSON lines),
// fields named as its columns (missing ones NULL), decoded as a JSON
// stream's records are. It gives 0..n rows per call.
//
// A module exporting plain (i64, i64) -> i64 or f64 functions needs no
// glue at all. wasmgen assembles the small modules the tests and the
// benchmarks use; the README shows a module written in Go (GOOS=wasip1,
// //go:wasmexport).
//
// User functions are deterministic by contract: a pipeline may call one
// again on the same row after a crash (exactly-once output is unchanged,
// as each epoch's results are written in one transaction), and every
// process must compute the same result.
package udf
