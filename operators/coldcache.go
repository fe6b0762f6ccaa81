package operators

import (
	"encoding/binary"
	"hash/maphash"
)

// coldCache keeps encoded state entries (key and value, as the KV holds
// them) in one byte arena indexed by a hash of the key. It holds no
// pointers the garbage collector has to trace, and costs about the
// entry's encoded size plus 16 bytes, where a decoded entry costs
// hundreds: an aggregation over millions of keys keeps its state in
// memory between epochs here instead of reading it back from Pebble.
//
// Two keys whose hashes collide share a slot: put reports the key it
// displaced, so a cache that promised to hold every key of its KV knows
// it no longer does. Values returned alias the arena and are valid until
// the next put or compaction.
type coldCache struct {
	seed    maphash.Seed
	index   map[uint64]uint32 // key hash -> offset of the entry's record in arena
	arena   []byte            // records: uvarint key length, key, uvarint value length, value
	garbage int               // bytes of arena no record in index refers to
	limit   int               // live bytes past which half the entries are evicted
}

// coldHash hashes a key for the index (a variable: tests make keys collide).
var coldHash = maphash.Bytes

func newColdCache(limit int) *coldCache {
	return &coldCache{seed: maphash.MakeSeed(), index: map[uint64]uint32{}, limit: limit}
}

// record returns the key and value of the record at off, and its length.
func (c *coldCache) record(off uint32) (key, value []byte, n int) {
	b := c.arena[off:]
	kl, k := binary.Uvarint(b)
	key = b[k : k+int(kl)]
	b = b[k+int(kl):]
	vl, v := binary.Uvarint(b)
	value = b[v : v+int(vl)]
	return key, value, k + int(kl) + v + int(vl)
}

// take returns the value cached under key and removes it from the cache.
func (c *coldCache) take(key []byte) ([]byte, bool) {
	h := coldHash(c.seed, key)
	off, ok := c.index[h]
	if !ok {
		return nil, false
	}
	k, v, n := c.record(off)
	if string(k) != string(key) {
		return nil, false // another key in the slot
	}
	delete(c.index, h)
	c.garbage += n
	return v, true
}

// put caches value under key. It reports whether an entry of another key
// was displaced (a hash collision): the cache no longer holds that key.
func (c *coldCache) put(key, value []byte) (displaced bool) {
	h := coldHash(c.seed, key)
	if off, ok := c.index[h]; ok {
		k, _, n := c.record(off)
		displaced = string(k) != string(key)
		c.garbage += n
	}
	off := len(c.arena)
	c.arena = binary.AppendUvarint(c.arena, uint64(len(key)))
	c.arena = append(c.arena, key...)
	c.arena = binary.AppendUvarint(c.arena, uint64(len(value)))
	c.arena = append(c.arena, value...)
	c.index[h] = uint32(off)
	return displaced
}

// len returns the number of entries cached.
func (c *coldCache) len() int { return len(c.index) }

// live returns the bytes of the records the index refers to.
func (c *coldCache) live() int { return len(c.arena) - c.garbage }

// tidy keeps the cache within its limit (less extra bytes held beside
// it) and its arena mostly live: past the limit it evicts about half the
// entries (those of one hash parity,
// so which keys go is unrelated to their order or age), and it rewrites
// the arena when garbage outweighs what is live. It reports whether any
// entry was evicted.
func (c *coldCache) tidy(extra int) (evicted bool) {
	evict := c.live()+extra > c.limit
	if !evict && (c.garbage < 1<<20 || c.garbage < c.live()) {
		return false
	}
	arena := make([]byte, 0, c.live())
	for h, off := range c.index {
		if evict && h&1 == 1 {
			delete(c.index, h)
			continue
		}
		_, _, n := c.record(off)
		c.index[h] = uint32(len(arena))
		arena = append(arena, c.arena[off:int(off)+n]...)
	}
	c.arena, c.garbage = arena, 0
	return evict
}

// reset empties the cache.
func (c *coldCache) reset() {
	clear(c.index)
	c.arena, c.garbage = c.arena[:0], 0
}

// keyFilter answers "might the KV hold this key?" for an aggregation that
// has seen every key its KV holds (it started empty, or loaded the KV
// whole): a key it has not seen is new, and needs no read of the KV,
// where most lookups of a new key would otherwise cost a Pebble get
// (bloom filter blocks, which do not stay cached once the state is
// larger than the block cache). It is a Bloom filter of layers that
// double in capacity as keys come, ~10 bits and 7 probes per key
// (about 1% false positives per layer; a false positive costs a get).
type keyFilter struct {
	seed   maphash.Seed
	layers []filterLayer
}

type filterLayer struct {
	bits []uint64
	n    int // keys added
	cap  int // keys it was sized for
}

const (
	filterFirstKeys = 1 << 14
	filterBitsPer   = 10
	filterProbes    = 7
)

func newKeyFilter() *keyFilter { return &keyFilter{seed: maphash.MakeSeed()} }

// probes returns the two hashes whose combinations are a key's probes.
func (f *keyFilter) probes(key []byte) (h1, h2 uint64) {
	h := maphash.Bytes(f.seed, key)
	return h, h>>32 | h<<32 | 1
}

func (l *filterLayer) has(h1, h2 uint64) bool {
	m := uint64(len(l.bits) * 64)
	for i := range uint64(filterProbes) {
		b := (h1 + i*h2) % m
		if l.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// add records key.
func (f *keyFilter) add(key []byte) {
	h1, h2 := f.probes(key)
	if len(f.layers) == 0 || f.layers[len(f.layers)-1].n >= f.layers[len(f.layers)-1].cap {
		n := filterFirstKeys << len(f.layers)
		f.layers = append(f.layers, filterLayer{bits: make([]uint64, (n*filterBitsPer+63)/64), cap: n})
	}
	l := &f.layers[len(f.layers)-1]
	m := uint64(len(l.bits) * 64)
	for i := range uint64(filterProbes) {
		b := (h1 + i*h2) % m
		l.bits[b/64] |= 1 << (b % 64)
	}
	l.n++
}

// mayHave reports whether key may have been added (false: it was not).
func (f *keyFilter) mayHave(key []byte) bool {
	h1, h2 := f.probes(key)
	for i := range f.layers {
		if f.layers[i].has(h1, h2) {
			return true
		}
	}
	return false
}

// size returns the filter's bytes.
func (f *keyFilter) size() int {
	n := 0
	for _, l := range f.layers {
		n += 8 * len(l.bits)
	}
	return n
}
