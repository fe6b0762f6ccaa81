//go:build unix

package file

import (
	"os"
	"syscall"
)

// lockFile takes the exclusive flock that makes a process the file's only
// writer; it fails at once (EWOULDBLOCK) when another process holds it.
// The lock belongs to the open file and ends when it is closed (or the
// process dies), so a crash never leaves a stale lock.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
