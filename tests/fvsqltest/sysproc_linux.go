package fvsqltest

import (
	"os"
	"syscall"
)

// sysProcAttr puts an fvsql process in a process group of its own, so that
// signals reach anything it started, and makes the kernel kill it when the
// test process dies without running its cleanups (e.g. on a `go test
// -timeout` panic), so no server outlives the test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signal sends sig to the process's group.
func signal(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
