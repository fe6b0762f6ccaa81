package operators

import (
	"fmt"
	"hash/maphash"
	"testing"
)

func TestKeyFilter(t *testing.T) {
	f := newKeyFilter()
	const n = 100_000
	for i := range n {
		f.add(fmt.Appendf(nil, "in-%d", i))
	}
	for i := range n {
		if !f.mayHave(fmt.Appendf(nil, "in-%d", i)) {
			t.Fatalf("key in-%d added but not found", i)
		}
	}
	fp := 0
	for i := range n {
		if f.mayHave(fmt.Appendf(nil, "out-%d", i)) {
			fp++
		}
	}
	// Each layer has about 1% false positives; 4 layers hold 100k keys.
	if rate := float64(fp) / n; rate > 0.05 {
		t.Fatalf("false positive rate %.3f, want < 0.05", rate)
	}
	if got, max := f.size(), 2*n*filterBitsPer/8+filterFirstKeys*filterBitsPer/8; got > max {
		t.Fatalf("filter of %d keys takes %d bytes, want at most %d", n, got, max)
	}
}

func TestColdCache(t *testing.T) {
	c := newColdCache(1 << 20)
	for i := range 1000 {
		if c.put(fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i)) {
			t.Fatalf("put k%d displaced a key under a 64-bit hash", i)
		}
	}
	c.put([]byte("k7"), []byte("v7 again"))
	if v, ok := c.take([]byte("k7")); !ok || string(v) != "v7 again" {
		t.Fatalf("take k7 = %q, %v; want the value put last", v, ok)
	}
	if _, ok := c.take([]byte("k7")); ok {
		t.Fatal("take k7 twice: want the second to miss")
	}
	if c.len() != 999 {
		t.Fatalf("len %d, want 999", c.len())
	}
	// Garbage outweighs what is live: tidy rewrites the arena and
	// keeps every entry.
	big := make([]byte, 1200)
	for i := range 900 {
		c.put(fmt.Appendf(nil, "big%d", i), big)
	}
	for i := range 900 {
		c.take(fmt.Appendf(nil, "big%d", i))
	}
	before := len(c.arena)
	if c.tidy(0) {
		t.Fatal("tidy evicted under the limit")
	}
	if len(c.arena) >= before/10 || c.garbage != 0 {
		t.Fatalf("arena %d bytes (was %d), garbage %d: want it rewritten", len(c.arena), before, c.garbage)
	}
	for i := range 1000 {
		if i == 7 {
			continue
		}
		if v, ok := c.take(fmt.Appendf(nil, "k%d", i)); !ok || string(v) != fmt.Sprintf("v%d", i) {
			t.Fatalf("after tidy: take k%d = %q, %v", i, v, ok)
		}
	}
	// Past the limit, about half go.
	c = newColdCache(1000)
	for i := range 200 {
		c.put(fmt.Appendf(nil, "k%d", i), []byte("0123456789"))
	}
	if !c.tidy(0) || c.len() < 50 || c.len() > 150 {
		t.Fatalf("tidy past the limit left %d of 200", c.len())
	}
	// Colliding keys displace each other, and take tells them apart.
	defer func(h func(maphash.Seed, []byte) uint64) { coldHash = h }(coldHash)
	coldHash = func(maphash.Seed, []byte) uint64 { return 1 }
	c = newColdCache(1 << 20)
	c.put([]byte("a"), []byte("1"))
	if !c.put([]byte("b"), []byte("2")) {
		t.Fatal("put b over a in one slot: want displaced")
	}
	if _, ok := c.take([]byte("a")); ok {
		t.Fatal("take a after b displaced it: want a miss")
	}
	if v, ok := c.take([]byte("b")); !ok || string(v) != "2" {
		t.Fatalf("take b = %q, %v", v, ok)
	}
}
