package join

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/fvsql/fvsql/operators"
)

// rowCache keeps the rows a hash join has stored under a (side, key)
// prefix in memory, as its KV holds them, so that a probe of a key read
// before costs no KV scan (a Pebble iterator each, most of a join's CPU
// before it). A prefix is cached whole or not at all: it enters when a
// probe reads it from the KV, and from then on the join's every write
// under it (a row stored, its count of partners changed, a row
// forgotten) changes the cached copy too. Past limit bytes, half the
// prefixes are dropped, at random, and read again when they come back.
//
// The cache outlives an epoch: a committed epoch leaves the KV equal to
// it, and an aborted one rebuilds the operator (operators.Stateful).
type rowCache struct {
	limit, bytes int
	by           map[string]*storedRows
}

// storedRows are the rows under one prefix, in key order (the order the
// KV scans them in, which is the order they were stored in).
type storedRows struct {
	rows []*storedRow
	size int  // bytes charged to the cache
	read bool // probed since the last row was added
}

// storedRow is one stored row: its state key, the count of partners it
// has met (outer sides) and its encoded values.
type storedRow struct {
	k    []byte
	n    uint64
	vals []byte
}

// rowOverhead is what a cached row costs besides its key and values
// (its struct, slice headers, pointer, allocation rounding), roughly.
const rowOverhead = 96

func (r *storedRow) cost() int { return len(r.k) + len(r.vals) + rowOverhead }

// visit calls fn on every row under prefix, in key order, from the
// cache or read from kv (and cached when they fit: a prefix too large
// to cache streams by, one row copy at a time). fn may change a row's
// count in place (recount), and must not change the KV.
func (c *rowCache) visit(kv operators.KV, prefix []byte, fn func(*storedRow) error) error {
	if r, ok := c.by[string(prefix)]; ok {
		r.read = true
		for _, row := range r.rows {
			if err := fn(row); err != nil {
				return err
			}
		}
		return nil
	}
	r := &storedRows{size: len(prefix) + rowOverhead, read: true}
	keep := true
	err := kv.Scan(prefix, prefixEnd(prefix), func(k, v []byte) error {
		n, m := binary.Uvarint(v)
		if m <= 0 {
			return operators.ErrBadState
		}
		row := &storedRow{k: bytes.Clone(k), n: n, vals: bytes.Clone(v[m:])}
		if keep {
			r.rows = append(r.rows, row)
			if r.size += row.cost(); r.size > c.limit/2 {
				keep, r.rows = false, nil
			}
		}
		return fn(row)
	})
	if err != nil || !keep {
		return err // a row's error leaves the prefix uncached: not every row was read
	}
	if c.by == nil {
		c.by = map[string]*storedRows{}
	}
	c.by[string(prefix)] = r
	c.bytes += r.size
	c.shrink()
	return nil
}

// add notes a row stored under prefix with key k. Rows that come under
// a prefix no probe reads in between (one side of a join whose other
// side is done coming: the bids of persons all known) would only fill
// the cache: the second row added without a probe between drops the
// prefix, to be read from the KV when a probe comes.
func (c *rowCache) add(prefix, k []byte, n uint64, vals []byte) {
	r, ok := c.by[string(prefix)]
	if !ok {
		return // not cached: the next probe reads the KV
	}
	if !r.read {
		delete(c.by, string(prefix))
		c.bytes -= r.size
		return
	}
	r.read = false
	row := &storedRow{k: bytes.Clone(k), n: n, vals: bytes.Clone(vals)}
	r.rows = append(r.rows, row)
	r.size += row.cost()
	c.bytes += row.cost()
	c.shrink()
}

// remove notes that the row of key k under prefix was forgotten.
func (c *rowCache) remove(prefix, k []byte) {
	r, ok := c.by[string(prefix)]
	if !ok {
		return
	}
	for i, row := range r.rows {
		if bytes.Equal(row.k, k) {
			r.rows = slices.Delete(r.rows, i, i+1)
			r.size -= row.cost()
			c.bytes -= row.cost()
			return
		}
	}
}

// shrink drops prefixes, at random (map order), until the cache holds at
// most half its limit, once it holds more than the limit.
func (c *rowCache) shrink() {
	if c.bytes <= c.limit {
		return
	}
	for p, r := range c.by {
		delete(c.by, p)
		if c.bytes -= r.size; c.bytes <= c.limit/2 {
			return
		}
	}
}
