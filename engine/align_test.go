package engine

import (
	"math"
	"testing"
	"time"
)

func TestAlignerLimit(t *testing.T) {
	a := newAligner(30 * time.Second)
	s := int64(time.Second / time.Microsecond)
	if got := a.limit(); got != math.MaxInt64 {
		t.Fatalf("empty aligner limit %d, want none", got)
	}
	p0, p1, p2 := partKey{"in", 0}, partKey{"in", 1}, partKey{"in", 2}
	a.note(p0, 100*s, false)
	a.note(p1, 500*s, false)
	a.note(p2, 10*s, true) // caught up: holds nothing back
	if got, want := a.limit(), 130*s; got != want {
		t.Fatalf("limit %d, want the slowest behind plus the drift %d", got, want)
	}
	a.note(p0, 200*s, false)
	if got, want := a.limit(), 230*s; got != want {
		t.Fatalf("limit %d after the slowest moved, want %d", got, want)
	}
	a.note(p0, 200*s, true) // p0 read everything: p1 is the only one behind
	if got, want := a.limit(), 530*s; got != want {
		t.Fatalf("limit %d, want %d", got, want)
	}
	a.forget(p1)
	if got := a.limit(); got != math.MaxInt64 {
		t.Fatalf("limit %d with nothing behind, want none", got)
	}
	// A partition not heard of for alignStale stops holding the others.
	a.note(p1, 5*s, false)
	a.behind[p1] = aligned{5 * s, time.Now().Add(-2 * alignStale)}
	a.note(p0, 300*s, false)
	if got, want := a.limit(), 330*s; got != want {
		t.Fatalf("limit %d, want %d: a stale entry held it back", got, want)
	}
}
