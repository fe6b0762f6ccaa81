package engine

import (
	"context"
	"testing"
	"time"
)

// TestEpochPace: an epoch that runs long makes the next polls smaller, a
// quick one lets them grow back to the batch size, never past it, never
// below one record.
func TestEpochPace(t *testing.T) {
	const batch = 10_000
	const txn = 10 * time.Second
	for _, c := range []struct {
		size int
		took time.Duration
		want int
	}{
		{batch, 12 * time.Second, batch / 4}, // aborted by the broker: a quarter
		{batch, 10 * time.Second, batch / 4},
		{batch, 6 * time.Second, batch / 2}, // over half the timeout: half
		{batch, 5 * time.Second, batch},     // half of it: kept
		{400, 3 * time.Second, 400},
		{400, 2500 * time.Millisecond, 800}, // a quarter of it: grows
		{100, time.Second, 200},
		{6000, time.Second, batch}, // up to the batch size
		{batch, time.Second, batch},
		{1, 20 * time.Second, 1}, // never below one
		{3, 7 * time.Second, 1},
	} {
		if got := epochPace(c.size, batch, c.took, txn); got != c.want {
			t.Errorf("epochPace(%d records, took %s) = %d, want %d", c.size, c.took, got, c.want)
		}
	}
	// An epoch that timed out again and again comes down to one record
	// per poll within a few tries, and back up once epochs are quick.
	size, tries := batch, 0
	for ; size > 1; tries++ {
		size = epochPace(size, batch, 11*time.Second, txn)
	}
	if tries > 7 {
		t.Errorf("%d long epochs to come down to one record per poll", tries)
	}
	for tries = 0; size < batch; tries++ {
		size = epochPace(size, batch, time.Second, txn)
	}
	if tries > 14 {
		t.Errorf("%d quick epochs to grow back to the batch size", tries)
	}
}

// TestSettleContext: an epoch's wait for its records' acknowledgements
// ends settleGrace after its pipeline stops (the epoch then aborts and
// is read again), not the full 30 s a running pipeline gives it.
func TestSettleContext(t *testing.T) {
	pctx, stop := context.WithCancel(context.Background())
	w := &worker{p: &pipeline{ctx: pctx}}
	ctx, cancel := w.settleContext()
	defer cancel()
	select {
	case <-ctx.Done():
		t.Fatal("the wait ended while the pipeline runs")
	case <-time.After(200 * time.Millisecond):
	}
	stopped := time.Now()
	stop()
	select {
	case <-ctx.Done():
		if took := time.Since(stopped); took < settleGrace {
			t.Errorf("the wait ended %s after the stop, before its grace of %s", took, settleGrace)
		}
	case <-time.After(settleGrace + 15*time.Second):
		t.Fatalf("the wait went on %s after the pipeline stopped", settleGrace+15*time.Second)
	}
}
