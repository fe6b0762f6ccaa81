// This file holds a connection's output buffer: the writer that messages
// are encoded into, and the timer that flushes what has waited flushDelay.

package pgwire

import (
	"bufio"
	"io"
	"sync"
	"time"

	"github.com/jackc/pgproto3/v2"
)

const (
	// writeBufferSize is the size of a connection's output buffer: rows are
	// encoded straight into it and it is written when full.
	writeBufferSize = 64 << 10
	// minRowSpace: when less than this is left in the buffer, it is flushed
	// before a row is encoded, so rows are encoded in place rather than in a
	// freshly allocated slice.
	minRowSpace = 1 << 10
	// flushDelay bounds how long encoded output may wait in the buffer.
	// A streaming Result can block in Next indefinitely between rows; the
	// timer makes the rows already produced reach the client anyway.
	flushDelay = 5 * time.Millisecond
)

// writer is a connection's output: a bufio.Writer shared by the processing
// goroutine, which encodes messages into it, and a timer that flushes what
// has waited flushDelay. mu guards bw; it is never held while the Handler
// runs.
type writer struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	timer   *time.Timer
	armed   bool  // a timer flush is pending
	stopped bool  // the connection is over: the timer does nothing
	err     error // first write error; the connection is dead after it
	// pending counts timer callbacks scheduled and not yet finished, so
	// that stop can wait for them: no goroutine outlives the connection.
	pending sync.WaitGroup
}

func newWriter(w io.Writer) *writer {
	wr := &writer{bw: bufio.NewWriterSize(w, writeBufferSize)}
	wr.timer = time.AfterFunc(time.Hour, wr.timerFlush)
	wr.timer.Stop()
	return wr
}

func (w *writer) timerFlush() {
	defer w.pending.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if !w.stopped && w.bw.Buffered() > 0 && w.err == nil {
		w.setErr(w.bw.Flush())
	}
}

// armLocked starts the flush timer if output is waiting and none is
// pending.
func (w *writer) armLocked() {
	if !w.armed && w.bw.Buffered() > 0 {
		w.armed = true
		w.pending.Add(1)
		w.timer.Reset(flushDelay)
	}
}

func (w *writer) setErr(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// failed returns the first write error.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// send encodes msg into the buffer.
func (w *writer) send(msg pgproto3.BackendMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	buf, err := msg.Encode(w.bw.AvailableBuffer())
	if err != nil {
		return err
	}
	_, err = w.bw.Write(buf)
	w.setErr(err)
	w.armLocked()
	return w.err
}

// appendTo lets fn append one or more complete messages to the buffer.
// Messages are encoded in place when they fit.
func (w *writer) appendTo(fn func(buf []byte) ([]byte, error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.bw.Available() < minRowSpace && w.bw.Buffered() > 0 {
		if err := w.bw.Flush(); err != nil {
			w.setErr(err)
			return err
		}
	}
	buf, err := fn(w.bw.AvailableBuffer())
	if err != nil {
		return err
	}
	_, err = w.bw.Write(buf)
	w.setErr(err)
	w.armLocked()
	return w.err
}

// flush writes out everything buffered.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.setErr(w.bw.Flush())
	return w.err
}

// stop disarms the timer for good and waits for a callback already
// started.
func (w *writer) stop() {
	w.mu.Lock()
	if w.armed && !w.stopped && w.timer.Stop() {
		w.pending.Done() // cancelled before it ran
	}
	w.stopped = true
	w.armed = true // never re-armed
	w.mu.Unlock()
	w.pending.Wait()
}
