package state

// SetChangesHash replaces the hash Changes matches keys by, until the
// returned func restores it.
func SetChangesHash(h func([]byte) uint64) (restore func()) {
	old := changesHash
	changesHash = h
	return func() { changesHash = old }
}
