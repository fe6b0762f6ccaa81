package fvsqltest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Signal sends sig to the current process (its process group on Linux).
// It does not wait for anything: use Stop or Kill to end a process, so
// that the end of the test does not report its exit as unexpected.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	cmd, _ := p.current()
	if err := signal(cmd.Process, sig); err != nil {
		t.Fatalf("fvsql %s (pid %d): sending %v: %v", p.cfg.Name, cmd.Process.Pid, sig, err)
	}
	t.Logf("fvsql %s: sent %v to pid %d", p.cfg.Name, sig, cmd.Process.Pid)
}

// WipeDataDir deletes everything in the data directory of a process that
// is not running (after Stop or Kill), so that its next Restart starts
// with no local state: no catalog copy, no Pebble state, a new node id.
// It must not be used on a process that hosts the embedded broker whose
// data the test still needs.
func (p *Process) WipeDataDir(t testing.TB) {
	t.Helper()
	if p.Running() {
		t.Fatalf("fvsql %s: WipeDataDir while pid %d is running", p.cfg.Name, p.Pid())
	}
	if err := os.RemoveAll(p.cfg.DataDir); err != nil {
		t.Fatalf("fvsql %s: wiping %s: %v", p.cfg.Name, p.cfg.DataDir, err)
	}
	if err := os.MkdirAll(p.cfg.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("fvsql %s: wiped data directory %s", p.cfg.Name, p.cfg.DataDir)
}

// Starts is how many times the process was started (1 after Start).
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// LogDirEnv names a directory where every process's log (and a private
// Kafka broker's) is copied when its test ends, as
// <test name>-<process name>.log, to read after the temporary
// directories are gone.
const LogDirEnv = "FVSQL_TEST_LOG_DIR"

func keepLog(t testing.TB, path, name string) {
	dir := os.Getenv(LogDirEnv)
	if dir == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("%s: %v", LogDirEnv, err)
		return
	}
	clean := []rune(t.Name() + "-" + name)
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			clean[i] = '_'
		}
	}
	err = os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, string(clean)+".log"), b, 0o644)
	}
	if err != nil {
		t.Logf("%s: %v", LogDirEnv, err)
	}
}

// WaitExit waits up to timeout for the current process to exit on its
// own (a refused start) and returns how it ended: nil for status 0, else
// the *exec.ExitError. It fails the test if the process is still running
// then.
func (p *Process) WaitExit(t testing.TB, timeout time.Duration) error {
	t.Helper()
	cmd, exited := p.current()
	select {
	case <-exited:
	case <-time.After(timeout):
		t.Fatalf("fvsql %s (pid %d) still running after %s", p.cfg.Name, cmd.Process.Pid, timeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ending = true
	return p.waitErr
}
