//go:build !linux

package fvsqltest

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signal(p *os.Process, sig syscall.Signal) error { return p.Signal(sig) }
