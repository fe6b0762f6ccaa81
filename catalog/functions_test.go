package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/fvsql/fvsql/types"
)

// TestFunctionRecords: a function's record and its module's chunks, as
// the catalog log applies them: the first create wins (its OID from its
// record's offset), a replacement of the current version keeps the OID
// and a stale one is ignored, the module is assembled from its version's
// chunks and checked against its hash, a drop deletes.
func TestFunctionRecords(t *testing.T) {
	c := openTestCatalog(t)
	module := bytes.Repeat([]byte("wasm"), 100000) // 400 kB: two chunks
	sum := sha256.Sum256(module)
	v1 := &Function{ID: "v1", Name: "f", Language: "wasm", Args: []FuncArg{{Name: "x", Type: types.Int8}}, Ret: types.Int8,
		Module: hex.EncodeToString(sum[:]), ModuleSize: len(module), Chunks: 2}
	apply := func(off int64, key string, v []byte) Change {
		t.Helper()
		ch, err := c.Apply(off, key, v)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	enc := func(f *Function) []byte {
		b, err := EncodeFunction(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	apply(10, ModuleKey("v1", 0), module[:ModuleChunk])
	if _, ok := c.Module(v1); ok {
		t.Fatal("a module with a chunk missing assembled")
	}
	apply(11, ModuleKey("v1", 1), module[ModuleChunk:])
	if ch := apply(12, FunctionKey("f"), enc(v1)); ch.FunctionCreated == nil || ch.FunctionCreated.OID != FirstOID+12 {
		t.Fatalf("create: %+v", ch)
	}
	got, _ := c.Function("f")
	if b, ok := c.Module(got); !ok || !bytes.Equal(b, module) {
		t.Fatal("the module did not assemble")
	}
	racer := *v1
	racer.ID = "racer"
	if ch := apply(13, FunctionKey("f"), enc(&racer)); ch.FunctionCreated != nil {
		t.Fatal("a second create of the name was applied")
	}
	v2 := *v1
	v2.ID, v2.Replaces, v2.Version = "v2", "v1", 2
	if ch := apply(14, FunctionKey("f"), enc(&v2)); ch.FunctionCreated == nil || ch.FunctionReplaced == nil || ch.FunctionCreated.OID != FirstOID+12 {
		t.Fatalf("replace: %+v", ch)
	}
	stale := v2
	stale.ID, stale.Replaces = "v3", "v1"
	if ch := apply(15, FunctionKey("f"), enc(&stale)); ch.FunctionCreated != nil {
		t.Fatal("a replacement of a replaced version was applied")
	}
	cur, _ := c.Function("f")
	if cur.ID != "v2" {
		t.Fatalf("current version %s, want v2", cur.ID)
	}
	if _, ok := c.Module(cur); ok {
		t.Fatal("v2's module assembled from v1's chunks")
	}
	bad := append([]byte(nil), module...)
	bad[0] = 'x'
	apply(16, ModuleKey("v2", 0), bad[:ModuleChunk])
	apply(17, ModuleKey("v2", 1), bad[ModuleChunk:])
	if _, ok := c.Module(cur); ok {
		t.Fatal("a module whose bytes do not match its hash assembled")
	}
	if ch := apply(18, FunctionKey("f"), nil); ch.FunctionDeleted == nil {
		t.Fatal("drop not applied")
	}
	if _, ok := c.Function("f"); ok {
		t.Fatal("the dropped function is still there")
	}
	if len(c.Functions()) != 0 {
		t.Fatal("Functions lists a dropped function")
	}
}
