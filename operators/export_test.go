package operators

// SetMaxCachedEntries lowers the bound of an aggregation's state cache so
// that tests reach the paths of a state larger than it; the returned
// function restores it.
func SetMaxCachedEntries(n int) (restore func()) {
	old := maxCachedEntries
	maxCachedEntries = n
	return func() { maxCachedEntries = old }
}
