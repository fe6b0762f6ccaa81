//go:build !linux

package file

import "os"

func datasync(f *os.File) error { return f.Sync() }
