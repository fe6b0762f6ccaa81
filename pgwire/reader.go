// This file holds the reading goroutine (conn.readLoop) and the queue
// (msgQueue) that carries its messages to the processing goroutine: the
// read-ahead budget, the copying of pgproto3's flyweight messages, the
// refusal of oversized declared lengths, and the socket errors that cancel
// the connection.

package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
)

const (
	// queueBudget bounds the bytes of messages read ahead of execution.
	// The reader stops reading while more is queued (one message is always
	// admitted, whatever its size).
	queueBudget = 16 << 20
)

// ioError marks an error of the socket itself (as opposed to a malformed
// message): the client is gone.
type ioError struct{ err error }

func (e *ioError) Error() string { return e.err.Error() }
func (e *ioError) Unwrap() error { return e.err }

type ioErrReader struct{ r io.Reader }

func (r ioErrReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		err = &ioError{err}
	}
	return n, err
}

// limitedChunkReader refuses to read a message whose declared length
// exceeds max, before pgproto3's chunk reader allocates a buffer for it.
// max is maxAuthMessageLen (or MaxMessageSize, if smaller) until the
// client has authenticated, then MaxMessageSize: establish raises it
// before the reading goroutine starts, which alone reads afterwards.
type limitedChunkReader struct {
	cr  pgproto3.ChunkReader
	max int
}

type messageTooLargeError struct{ n, max int }

func (e *messageTooLargeError) Error() string {
	return fmt.Sprintf("invalid message length: %d bytes exceeds the maximum of %d", e.n, e.max)
}

func (r *limitedChunkReader) Next(n int) ([]byte, error) {
	if n > r.max {
		return nil, &messageTooLargeError{n, r.max}
	}
	return r.cr.Next(n)
}

// receive reads one message. pgproto3's decoders can panic on some
// malformed bodies (a negative parameter length in Bind, a short
// FunctionCall): that is a protocol violation too.
func (c *conn) receive() (msg pgproto3.FrontendMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, err = nil, fmt.Errorf("malformed message: %v", r)
		}
	}()
	return c.be.Receive()
}

// readLoop is the reading goroutine: it moves messages from the socket to
// the queue, copying them out of pgproto3's flyweights, and never waits for
// their execution (only for queue space). A socket error cancels the
// connection's context, so a running query stops; a malformed message
// queues a FATAL error behind the messages already read, except a Query
// whose string is malformed, which is answered with an ERROR (see
// invalidQuery).
func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer c.q.close()
	for {
		msg, err := c.receive()
		if err != nil {
			var ioe *ioError
			if errors.As(err, &ioe) {
				c.log.Debug("pgwire: client connection closed", "err", err)
				c.cancel(errClientGone)
				return
			}
			if _, ok := msg.(*pgproto3.Query); ok {
				// pgproto3 returns the message its body failed to
				// decode into, the whole body consumed: the stream is
				// still in step, and the connection goes on.
				if !c.q.push(qitem{msg: &invalidQuery{}, size: 64}) {
					return
				}
				continue
			}
			c.q.push(qitem{fatal: protocolViolation(err)})
			return
		}
		it := copyMessage(msg)
		if it.msg == nil {
			c.q.push(qitem{fatal: pgerror.New(pgerror.ProtocolViolation, "unexpected message %T", msg)})
			return
		}
		if !c.q.push(it) {
			return
		}
		if _, ok := msg.(*pgproto3.Terminate); ok {
			// Nothing may follow Terminate, but the socket is still
			// watched: a client that closes it while an earlier message
			// still executes cancels that execution.
			var discard [512]byte
			for {
				if _, err := c.nc.Read(discard[:]); err != nil {
					c.cancel(errClientGone)
					return
				}
			}
		}
	}
}

func protocolViolation(err error) *pgerror.Error {
	var tl *messageTooLargeError
	if errors.As(err, &tl) {
		return pgerror.New(pgerror.ProtocolViolation, "invalid message length").WithDetail("%s", tl.Error())
	}
	return pgerror.New(pgerror.ProtocolViolation, "invalid frontend message: %v", err)
}

// copyMessage copies msg out of the Backend's flyweight so it stays valid
// after the next Receive, and sizes it for the queue budget.
func copyMessage(msg pgproto3.FrontendMessage) qitem {
	const overhead = 64
	switch m := msg.(type) {
	case *pgproto3.Query:
		cp := *m
		return qitem{msg: &cp, size: overhead + len(cp.String)}
	case *pgproto3.Parse:
		cp := *m
		cp.ParameterOIDs = append([]uint32(nil), m.ParameterOIDs...)
		return qitem{msg: &cp, size: overhead + len(cp.Query) + 4*len(cp.ParameterOIDs)}
	case *pgproto3.Bind:
		cp := *m
		cp.ParameterFormatCodes = append([]int16(nil), m.ParameterFormatCodes...)
		cp.ResultFormatCodes = append([]int16(nil), m.ResultFormatCodes...)
		total := 0
		for _, p := range m.Parameters {
			total += len(p)
		}
		arena := make([]byte, 0, total)
		cp.Parameters = make([][]byte, len(m.Parameters))
		for i, p := range m.Parameters {
			if p == nil {
				continue // NULL
			}
			start := len(arena)
			arena = append(arena, p...)
			cp.Parameters[i] = arena[start:len(arena):len(arena)]
		}
		return qitem{msg: &cp, size: overhead + total + 4*len(m.Parameters)}
	case *pgproto3.Describe:
		cp := *m
		return qitem{msg: &cp, size: overhead}
	case *pgproto3.Execute:
		cp := *m
		return qitem{msg: &cp, size: overhead}
	case *pgproto3.Close:
		cp := *m
		return qitem{msg: &cp, size: overhead}
	case *pgproto3.Sync:
		return qitem{msg: &pgproto3.Sync{}, size: overhead}
	case *pgproto3.Flush:
		return qitem{msg: &pgproto3.Flush{}, size: overhead}
	case *pgproto3.Terminate:
		return qitem{msg: &pgproto3.Terminate{}, size: overhead}
	case *pgproto3.CopyData:
		// The payload is kept for COPY FROM STDIN (copy.go); outside it
		// the message is ignored. The queue's budget bounds what a client
		// can send ahead either way.
		return qitem{msg: &pgproto3.CopyData{Data: append([]byte(nil), m.Data...)}, size: overhead + len(m.Data)}
	case *pgproto3.CopyDone:
		return qitem{msg: &pgproto3.CopyDone{}, size: overhead}
	case *pgproto3.CopyFail:
		cp := *m
		return qitem{msg: &cp, size: overhead + len(cp.Message)}
	case *pgproto3.FunctionCall:
		return qitem{msg: &pgproto3.FunctionCall{Function: m.Function}, size: overhead}
	}
	return qitem{} // authentication messages after authentication
}

// qitem is a queued message, or a fatal protocol error ending the queue.
type qitem struct {
	msg   pgproto3.FrontendMessage
	fatal *pgerror.Error
	size  int
}

// msgQueue carries messages from the reader to the processing goroutine.
type msgQueue struct {
	mu     sync.Mutex
	space  sync.Cond // signalled when items are popped or the queue closes
	items  []qitem
	head   int
	bytes  int
	budget int
	closed bool
	ready  chan struct{} // holds a token when items may be waiting
}

var errQueueClosed = errors.New("pgwire: message queue closed")

func newMsgQueue(budget int) *msgQueue {
	q := &msgQueue{budget: budget, ready: make(chan struct{}, 1)}
	q.space.L = &q.mu
	return q
}

// push appends it, waiting while the queue holds more than its budget.
// It returns false once the queue is closed.
func (q *msgQueue) push(it qitem) bool {
	q.mu.Lock()
	for !q.closed && q.bytes > 0 && q.bytes+it.size > q.budget {
		q.space.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, it)
	q.bytes += it.size
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// pop returns the next item, waiting for one. It fails when ctx is done
// (even with items left: the connection is over) or the queue is closed
// and empty.
func (q *msgQueue) pop(ctx context.Context) (qitem, error) {
	for {
		if err := ctx.Err(); err != nil {
			return qitem{}, err
		}
		q.mu.Lock()
		if q.head < len(q.items) {
			it := q.items[q.head]
			q.items[q.head] = qitem{}
			q.head++
			if q.head == len(q.items) {
				q.items, q.head = q.items[:0], 0
			}
			q.bytes -= it.size
			q.space.Signal()
			q.mu.Unlock()
			return it, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return qitem{}, errQueueClosed
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
		}
	}
}

func (q *msgQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.space.Broadcast()
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
