package server

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestFollowUpOrder checks that a catalog change's effects on one name run
// one at a time in the order of the changes (a DROP's Stop before the
// next CREATE's Start), whatever each takes, while names do not wait for
// each other, and that the WaitGroup Close waits on covers them all.
func TestFollowUpOrder(t *testing.T) {
	s := &Server{followQ: map[string][]func(){}}
	var mu sync.Mutex
	ran := map[string][]int{}
	running := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		name := fmt.Sprintf("v%d", rng.IntN(4))
		pause := time.Duration(rng.IntN(300)) * time.Microsecond
		s.followUp(name, func() {
			mu.Lock()
			if running[name] {
				t.Errorf("two follow-ups of %s at once", name)
			}
			running[name] = true
			mu.Unlock()
			time.Sleep(pause)
			mu.Lock()
			running[name] = false
			ran[name] = append(ran[name], i)
			mu.Unlock()
		})
	}
	s.followUps.Wait()
	total := 0
	for name, order := range ran {
		total += len(order)
		if !slices.IsSorted(order) {
			t.Errorf("follow-ups of %s ran in the order %v", name, order)
		}
	}
	if total != 200 {
		t.Fatalf("%d follow-ups ran, want 200", total)
	}
	if len(s.followQ) != 0 {
		t.Fatalf("queues left behind: %v", s.followQ)
	}
}
