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

// tidy keeps the cache within its limit and its arena mostly live: past
// the limit it evicts about half the entries (those of one hash parity,
// so which keys go is unrelated to their order or age), and it rewrites
// the arena when garbage outweighs what is live. It reports whether any
// entry was evicted.
func (c *coldCache) tidy() (evicted bool) {
	evict := c.live() > c.limit
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
