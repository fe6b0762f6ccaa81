package engine

import (
	"testing"
	"time"
)

// TestCommitsInFlight: wait returns once the commits begun before it
// ended, not before, and a commit begun after it does not hold it.
func TestCommitsInFlight(t *testing.T) {
	var c commitsInFlight
	c.wait() // nothing in flight
	a := c.begin()
	b := c.begin()
	done := make(chan struct{})
	upto := c.mark()
	go func() { c.waitFor(upto); close(done) }()
	blocked := func() bool {
		select {
		case <-done:
			return false
		case <-time.After(50 * time.Millisecond):
			return true
		}
	}
	if !blocked() {
		t.Fatal("wait returned with two commits in flight")
	}
	c.end(a)
	later := c.begin() // begun after the wait: must not hold it
	if !blocked() {
		t.Fatal("wait returned with one earlier commit in flight")
	}
	c.end(b)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after the earlier commits ended (a later one is in flight)")
	}
	c.end(later)
	c.wait()
}
