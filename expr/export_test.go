package expr

// SetMaxValueBytes lowers the limit on the size of one value so that
// tests reach it without allocating hundreds of MiB; the returned function
// restores it.
func SetMaxValueBytes(n int64) (restore func()) {
	old := maxValueBytes
	maxValueBytes = n
	return func() { maxValueBytes = old }
}
