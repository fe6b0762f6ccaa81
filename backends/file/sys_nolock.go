//go:build !unix

package file

import "os"

// lockFile is a no-op where flock(2) does not exist: a second writer
// process is not detected there.
func lockFile(*os.File) error { return nil }
