package operators

import "hash/maphash"

// SetMaxCachedEntries lowers the bound of an aggregation's state cache so
// that tests reach the paths of a state larger than it; the returned
// function restores it.
func SetMaxCachedEntries(n int) (restore func()) {
	old := maxCachedEntries
	maxCachedEntries = n
	return func() { maxCachedEntries = old }
}

// SetColdCache sets the byte limit of a GroupAggregate's cold cache and,
// when weak, a hash under which keys collide often; the returned function
// restores both.
func SetColdCache(limit int, weak bool) (restore func()) {
	oldLimit, oldHash := coldCacheBytes, coldHash
	coldCacheBytes = limit
	if weak {
		coldHash = func(seed maphash.Seed, key []byte) uint64 { return maphash.Bytes(seed, key) % 5 }
	}
	return func() { coldCacheBytes, coldHash = oldLimit, oldHash }
}

// SetMaxAggValueBytes lowers the limit on the value string_agg and
// array_agg build; the returned function restores it.
func SetMaxAggValueBytes(n int64) (restore func()) {
	old := maxAggValueBytes
	maxAggValueBytes = n
	return func() { maxAggValueBytes = old }
}

// SetMaxOverRange lowers the rows a stream's RANGE frame keeps per
// partition; the returned function restores it.
func SetMaxOverRange(n int) (restore func()) {
	old := maxOverRange
	maxOverRange = n
	return func() { maxOverRange = old }
}

// SetSlideAggregates turns a stream's sliding window aggregates on or
// off; the returned function restores them.
func SetSlideAggregates(on bool) (restore func()) {
	old := slideAggregates
	slideAggregates = on
	return func() { slideAggregates = old }
}

// SetMinSlideRows sets the narrowest frame a sliding aggregate computes;
// the returned function restores it.
func SetMinSlideRows(n int64) (restore func()) {
	old := minSlideRows
	minSlideRows = n
	return func() { minSlideRows = old }
}
