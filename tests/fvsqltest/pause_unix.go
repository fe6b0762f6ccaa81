//go:build unix

package fvsqltest

import (
	"syscall"
	"testing"
)

// Pause freezes the process with SIGSTOP: it keeps its sockets and its
// Kafka sessions but runs no code (a "zombie" once its group session
// expires). Resume continues it; Kill and the end of the test also end a
// paused process.
func (p *Process) Pause(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGSTOP)
}

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGCONT)
}
