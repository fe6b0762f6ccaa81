//go:build !linux

package sqllogic_test

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalServer(p *os.Process, sig syscall.Signal) error { return p.Signal(sig) }
