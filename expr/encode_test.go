package expr_test

import (
	"strings"
	"testing"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// TestEncodeDecode: encode and decode round-trip every byte in base64,
// hex and escape, with PostgreSQL's forms (base64 lines of 76, escape's
// \nnn for non-ASCII and NUL, doubled backslashes); decode skips
// whitespace in base64 and hex; bad input and formats are errors.
func TestEncodeDecode(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	call := func(name string, args ...types.Value) (types.Value, error) {
		e := make([]*expr.Expr, len(args))
		for i, a := range args {
			e[i] = expr.Const(a)
		}
		x, err := expr.Call(name, e...)
		if err != nil {
			return types.NullValue, err
		}
		ev, err := expr.Compile(x, nil)
		if err != nil {
			return types.NullValue, err
		}
		return ev(nil)
	}
	for _, f := range []string{"base64", "hex", "escape", "BASE64"} {
		enc, err := call("encode", types.NewBytea(all), types.NewText(f))
		if err != nil {
			t.Fatalf("encode(…, %s): %v", f, err)
		}
		dec, err := call("decode", enc, types.NewText(f))
		if err != nil || dec.S != string(all) {
			t.Fatalf("decode(encode(…, %s)) differs: %v", f, err)
		}
	}
	enc, _ := call("encode", types.NewBytea(all), types.NewText("base64"))
	if lines := strings.Split(enc.S, "\n"); len(lines) != 5 || len(lines[0]) != 76 {
		t.Errorf("base64 of 256 bytes: %d lines, first of %d characters; want 5 lines of 76", len(lines), len(lines[0]))
	}
	if v, _ := call("encode", types.NewBytea([]byte("a\\b\x00\xff")), types.NewText("escape")); v.S != `a\\b\000\377` {
		t.Errorf("escape: %q", v.S)
	}
	if v, _ := call("decode", types.NewText("AGFz\n bQ=="), types.NewText("base64")); v.S != "\x00asm" {
		t.Errorf("base64 with whitespace: %q", v.S)
	}
	for _, c := range [][2]string{{"not base64!", "base64"}, {"abc", "hex"}, {`\9`, "escape"}, {"x", "rot13"}} {
		if _, err := call("decode", types.NewText(c[0]), types.NewText(c[1])); err == nil || pgerror.CodeOf(err).String() == "00000" {
			t.Errorf("decode(%q, %q): %v, want an error with a SQLSTATE", c[0], c[1], err)
		}
	}
}
