package sqllogic_test

import (
	"os"
	"syscall"
)

// sysProcAttr puts an fvsql server in a process group of its own, so that
// stopping it reaches any process it started, and makes the kernel kill it
// when the test process dies without running its cleanups (e.g. on a
// `go test -timeout` panic), so no server outlives the test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalServer sends sig to the server's process group.
func signalServer(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
