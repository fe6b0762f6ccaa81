//go:build wasip1

// Command risk is a user function module for fvsql, written in Go: the
// README's example of the ABI (udf/doc.go). Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o risk.wasm ./examples/udf/risk
//
// and load it with
//
//	CREATE FUNCTION risk(amount DOUBLE PRECISION, country TEXT) RETURNS DOUBLE PRECISION
//	  LANGUAGE wasm AS 'ref:risk';                     -- risk.wasm in FV_TRANSFORMS_DIR
//	CREATE FUNCTION tags(payload JSONB) RETURNS TABLE (id BIGINT, tag TEXT)
//	  LANGUAGE wasm AS 'ref:risk' WITH (export = 'tags');
package main

import (
	"encoding/json"
	"strings"
	"unsafe"
)

// buf is the memory fv_alloc hands the host: the same buffer every call,
// grown when a call's arguments need more.
var buf []byte

// out holds the last variable-length result until the next call.
var out []byte

//go:wasmexport fv_alloc
func fvAlloc(size int32) int32 {
	if int(size) > cap(buf) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if size == 0 {
		return 0
	}
	return int32(uintptr(unsafe.Pointer(&buf[0])))
}

// str is the text the host wrote at ptr, n bytes long (valid during the
// call).
func str(ptr, n int32) string {
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(uintptr(ptr))), n)
}

// result packs out's pointer and length for the host.
func result(b []byte) int64 {
	out = b
	if len(b) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(&out[0])))<<32 | int64(len(out))
}

// risk scores a payment: a thousandth of its amount, three times that
// from the countries on a watch list.
//
//go:wasmexport risk
func risk(amount float64, countryPtr, countryLen int32) float64 {
	r := amount / 1000
	switch strings.ToUpper(str(countryPtr, countryLen)) {
	case "NG", "RU", "KP":
		r *= 3
	}
	return r
}

// tags is a table function: one row per element of the payload's
// "items" array that has a tag.
//
//go:wasmexport tags
func tags(ptr, n int32) int64 {
	var in struct {
		Items []struct {
			ID  int64  `json:"id"`
			Tag string `json:"tag"`
		} `json:"items"`
	}
	type row struct {
		ID  int64  `json:"id"`
		Tag string `json:"tag"`
	}
	rows := []row{}
	if json.Unmarshal([]byte(str(ptr, n)), &in) == nil {
		for _, it := range in.Items {
			if it.Tag != "" {
				rows = append(rows, row{it.ID, it.Tag})
			}
		}
	}
	b, _ := json.Marshal(rows)
	return result(b)
}

func main() {}
