package pgwire

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	"github.com/jackc/pgproto3/v2"
)

// Startup packet codes (the first int32 after the length).
const (
	protocolVersion30 = 3 << 16
	cancelRequestCode = 80877102
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	// maxStartupPacketLen is PostgreSQL's MAX_STARTUP_PACKET_LENGTH.
	maxStartupPacketLen = 10000
	// queueBudget bounds the bytes of messages read ahead of execution.
	// The reader stops reading while more is queued (one message is always
	// admitted, whatever its size).
	queueBudget = 16 << 20
	// shutdownWriteTimeout bounds the final writes to a client that does
	// not read when the server closes.
	shutdownWriteTimeout = time.Second
)

// conn is one client connection. Its goroutine (serve) runs the startup
// and authentication exchange and then becomes the processing goroutine;
// a second goroutine (readLoop) reads messages into q.
type conn struct {
	srv *Server
	raw net.Conn // the accepted socket; deadlines are set on it
	nc  net.Conn // raw, or the TLS connection over it
	log *slog.Logger

	// ctx is cancelled when the connection ends: by the reader when the
	// client goes away (errClientGone), by Server.Close (errAdminShutdown),
	// or by serve on its way out.
	ctx    context.Context
	cancel context.CancelCauseFunc

	be *pgproto3.Backend
	w  *writer
	q  *msgQueue

	pid, secret uint32 // BackendKeyData; pid 0 until registered

	// Owned by the processing goroutine.
	sess       Session
	stmts      map[string]*prepared
	portals    map[string]*portal
	skipToSync bool   // an extended-protocol message failed: ignore all until Sync
	scratch    []byte // reused by COPY encoding

	dlMu        sync.Mutex
	interrupted bool // Server.Close set the deadlines: don't move them again

	runMu   sync.Mutex
	running context.CancelCauseFunc // cancels the query executing now, or nil
}

// prepared is a prepared statement (Parse).
type prepared struct {
	name   string
	stmt   Statement // nil for an empty query
	params []types.Type
	cols   []Column
}

// portal is a bound statement (Bind), possibly partly executed.
type portal struct {
	name   string
	ps     *prepared
	params []types.Value
	fmts   []int16 // effective result format per column (nil: all text)

	// ctx lives as long as the portal: Statement.Execute gets it, and the
	// Result may hold on to it across Execute messages.
	ctx    context.Context
	cancel context.CancelCauseFunc

	res       Result // nil until the first Execute
	copyOut   bool
	suspended bool // an Execute stopped at its row limit
	done      bool // the Result reached io.EOF
	tag       string
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv: s,
		raw: nc,
		nc:  nc,
		log: s.log.With("remote", nc.RemoteAddr().String()),
	}
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	return c
}

// interrupt is called by Server.Close: it wakes the reader and the startup
// exchange (read deadline now) and bounds the final writes.
func (c *conn) interrupt() {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	c.interrupted = true
	now := time.Now()
	_ = c.raw.SetReadDeadline(now)
	_ = c.raw.SetWriteDeadline(now.Add(shutdownWriteTimeout))
}

// setDeadline sets the socket deadline unless Close has already set its own.
func (c *conn) setDeadline(t time.Time) {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	if !c.interrupted {
		_ = c.raw.SetDeadline(t)
	}
}

// cancelRunning cancels the query executing now, if any (CancelRequest).
func (c *conn) cancelRunning() {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.running != nil {
		c.running(errQueryCanceled)
	}
}

func (c *conn) setRunning(cancel context.CancelCauseFunc) {
	c.runMu.Lock()
	c.running = cancel
	c.runMu.Unlock()
}

// serve runs the connection from accept to close.
func (c *conn) serve() {
	defer c.srv.wg.Done()
	defer c.srv.forget(c)
	defer c.raw.Close()
	defer c.cancel(errConnClosed)

	c.setDeadline(time.Now().Add(c.srv.cfg.AuthTimeout))
	params, ok := c.startup()
	if !ok {
		return
	}
	// From here on the connection speaks typed messages. pgproto3 reads
	// through a ChunkReader that refuses oversized declared lengths before
	// allocating, over a reader that marks socket errors as such.
	cr := pgproto3.NewChunkReader(ioErrReader{c.nc})
	c.be = pgproto3.NewBackend(&limitedChunkReader{cr: cr, max: c.srv.cfg.MaxMessageSize}, io.Discard)
	c.w = newWriter(c.nc)
	defer c.w.stop()

	sp := SessionParams{
		User:            params["user"],
		Database:        params["database"],
		ApplicationName: params["application_name"],
		Options:         params,
	}
	if sp.Database == "" {
		sp.Database = sp.User
	}
	c.log = c.log.With("user", sp.User)
	if !c.authenticate(sp.User) {
		return
	}
	if err := c.send(&pgproto3.AuthenticationOk{}); err != nil {
		return
	}
	c.setDeadline(time.Time{})

	sess, err := c.newSession(sp)
	if err != nil {
		c.sendError(c.toPgError(c.ctx, err), "FATAL")
		_ = c.w.flush()
		return
	}
	c.sess = sess
	c.stmts = make(map[string]*prepared)
	c.portals = make(map[string]*portal)
	defer c.closeSession()

	c.srv.register(c)
	c.log = c.log.With("pid", c.pid)
	if !c.sendStartupParams(sp) {
		return
	}
	c.log.Debug("pgwire: connection ready")

	c.q = newMsgQueue(queueBudget)
	c.srv.wg.Add(1)
	go c.readLoop()
	defer c.q.close()
	c.processLoop()
}

func (c *conn) newSession(sp SessionParams) (s Session, err error) {
	defer c.recoverAs(&err)
	s, err = c.srv.handler.NewSession(c.ctx, sp)
	if err == nil && s == nil {
		err = pgerror.New(pgerror.Internal, "handler returned no session")
	}
	return s, err
}

// sendStartupParams sends the ParameterStatus messages clients expect,
// BackendKeyData and the first ReadyForQuery.
func (c *conn) sendStartupParams(sp SessionParams) bool {
	ps := []Parameter{
		{"server_version", c.srv.cfg.ServerVersion},
		{"server_encoding", "UTF8"},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
		{"application_name", sp.ApplicationName},
		{"is_superuser", "on"},
		{"session_authorization", sp.User},
	}
	var changes []Parameter
	if err := c.safely(func() error { changes = c.sess.ParameterChanges(); return nil }); err != nil {
		c.sendError(c.toPgError(c.ctx, err), "FATAL")
		_ = c.w.flush()
		return false
	}
	for _, ch := range changes {
		replaced := false
		for i := range ps {
			if ps[i].Name == ch.Name {
				ps[i].Value, replaced = ch.Value, true
			}
		}
		if !replaced {
			ps = append(ps, ch)
		}
	}
	for _, p := range ps {
		c.send(&pgproto3.ParameterStatus{Name: p.Name, Value: p.Value})
	}
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	c.send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus()})
	return c.w.flush() == nil
}

// ---------------------------------------------------------------------------
// Startup.

// startup reads startup packets until a StartupMessage, answering
// SSLRequest and GSSEncRequest and serving a CancelRequest. It returns the
// startup parameters, or false when the connection must close.
func (c *conn) startup() (map[string]string, bool) {
	sslDone, gssDone := false, false
	for {
		body, err := readStartupPacket(c.nc)
		if err != nil {
			c.log.Debug("pgwire: bad startup packet", "err", err)
			return nil, false
		}
		code := binary.BigEndian.Uint32(body)
		switch code {
		case sslRequestCode:
			if sslDone || len(body) != 4 {
				c.log.Info("pgwire: unexpected SSLRequest")
				return nil, false
			}
			sslDone = true
			if c.srv.cfg.TLSConfig == nil {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return nil, false
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return nil, false
			}
			tc := tls.Server(c.raw, c.srv.cfg.TLSConfig)
			if err := tc.HandshakeContext(c.ctx); err != nil {
				c.log.Info("pgwire: TLS handshake failed", "err", err)
				return nil, false
			}
			c.nc = tc
		case gssEncRequestCode:
			if gssDone || len(body) != 4 {
				c.log.Info("pgwire: unexpected GSSEncRequest")
				return nil, false
			}
			gssDone = true
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return nil, false
			}
		case cancelRequestCode:
			if len(body) == 12 {
				c.srv.cancelRequest(binary.BigEndian.Uint32(body[4:]), binary.BigEndian.Uint32(body[8:]))
			}
			return nil, false
		default:
			if code>>16 != 3 {
				c.startupFatal(pgerror.New(pgerror.FeatureNotSupported,
					"unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", code>>16, code&0xffff))
				return nil, false
			}
			params, options, err := parseStartupParams(body[4:])
			if err != nil {
				c.startupFatal(pgerror.New(pgerror.ProtocolViolation, "invalid startup packet layout: %v", err))
				return nil, false
			}
			if params["user"] == "" {
				c.startupFatal(pgerror.New(pgerror.InvalidAuthorizationSpec, "no PostgreSQL user name specified in startup packet"))
				return nil, false
			}
			if code != protocolVersion30 || len(options) > 0 {
				// A 3.x client newer than 3.0, or one asking for protocol
				// options: tell it to fall back to 3.0 without them.
				if err := writeMessage(c.nc, &negotiateProtocolVersion{newestMinor: 0, options: options}); err != nil {
					return nil, false
				}
			}
			return params, true
		}
	}
}

// readStartupPacket reads one length-prefixed startup packet, straight
// from the socket so that nothing is read ahead of a TLS handshake.
func readStartupPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 8 || n > maxStartupPacketLen {
		return nil, fmt.Errorf("invalid length of startup packet: %d", n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// parseStartupParams parses the name/value pairs of a StartupMessage.
// Names starting with "_pq_." are protocol options, returned apart.
func parseStartupParams(b []byte) (map[string]string, []string, error) {
	params := make(map[string]string)
	var options []string
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, nil, errors.New("expected terminator as last byte")
		}
		if i == 0 {
			if len(b) != 1 {
				return nil, nil, errors.New("data after the terminator")
			}
			return params, options, nil
		}
		name := string(b[:i])
		b = b[i+1:]
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return nil, nil, fmt.Errorf("missing value for parameter %q", name)
		}
		value := string(b[:j])
		b = b[j+1:]
		if len(name) > 5 && name[:5] == "_pq_." {
			options = append(options, name)
			continue
		}
		params[name] = value
	}
}

// startupFatal sends a FATAL error before the buffered writer exists.
func (c *conn) startupFatal(e *pgerror.Error) {
	c.log.Info("pgwire: startup failed", "code", e.Code, "err", e.Message)
	_ = writeMessage(c.nc, errorResponse(e, "FATAL"))
}

func writeMessage(w io.Writer, m pgproto3.BackendMessage) error {
	buf, err := m.Encode(nil)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// ---------------------------------------------------------------------------
// Reading.

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
// queues a FATAL error behind the messages already read.
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
		// Outside COPY FROM, CopyData is ignored: its payload is not kept.
		return qitem{msg: &pgproto3.CopyData{}, size: overhead}
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

// ---------------------------------------------------------------------------
// Processing.

// processLoop is the processing goroutine: it executes queued messages in
// order and writes their responses.
func (c *conn) processLoop() {
	for {
		it, err := c.q.pop(c.ctx)
		if err != nil {
			c.finish()
			return
		}
		if it.fatal != nil {
			c.log.Info("pgwire: protocol violation", "err", it.fatal.Message, "detail", it.fatal.Detail)
			c.sendError(it.fatal, "FATAL")
			_ = c.w.flush()
			return
		}
		switch it.msg.(type) {
		case *pgproto3.Terminate:
			_ = c.w.flush()
			return
		case *pgproto3.Sync:
			c.skipToSync = false
		default:
			if c.skipToSync {
				continue
			}
		}
		if stop := c.dispatchSafely(it.msg); stop {
			return
		}
		if c.w.failed() != nil || c.ctx.Err() != nil {
			c.finish()
			return
		}
	}
}

// finish ends a connection whose context is done or whose socket failed:
// on server shutdown the client is told why.
func (c *conn) finish() {
	var pe *pgerror.Error
	if errors.As(context.Cause(c.ctx), &pe) && pe == errAdminShutdown {
		c.sendError(errAdminShutdown, "FATAL")
		_ = c.w.flush()
	}
}

// dispatchSafely is dispatch with a last line of defence: Handler panics
// are recovered where the Handler is called and the connection goes on,
// but a panic anywhere else is a bug of pgwire, after which the
// connection's state cannot be trusted: it is closed with XX000.
func (c *conn) dispatchSafely(msg pgproto3.FrontendMessage) (stop bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("pgwire: panic", "panic", r, "stack", string(debug.Stack()))
			c.sendError(pgerror.New(pgerror.Internal, "internal error: %v", r), "FATAL")
			_ = c.w.flush()
			stop = true
		}
	}()
	return c.dispatch(msg)
}

// dispatch handles one message. It returns true when the connection must
// close.
func (c *conn) dispatch(msg pgproto3.FrontendMessage) (stop bool) {
	var err error
	switch m := msg.(type) {
	case *pgproto3.Query:
		c.simpleQuery(m.String)
		return false
	case *pgproto3.Parse:
		err = c.parse(m)
	case *pgproto3.Bind:
		err = c.bind(m)
	case *pgproto3.Describe:
		err = c.describe(m)
	case *pgproto3.Execute:
		err = c.execute(m)
	case *pgproto3.Close:
		err = c.closeMsg(m)
	case *pgproto3.Sync:
		c.sync()
		return false
	case *pgproto3.Flush:
		_ = c.w.flush()
		return false
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		return false // outside COPY FROM STDIN these are ignored, as PostgreSQL does
	case *pgproto3.FunctionCall:
		c.sendError(pgerror.New(pgerror.FeatureNotSupported, "function call protocol is not supported"), "ERROR")
		c.failTx()
		c.sendReady()
		return false
	default:
		c.sendError(pgerror.New(pgerror.ProtocolViolation, "unexpected message %T", msg), "FATAL")
		_ = c.w.flush()
		return true
	}
	if err != nil {
		// Extended protocol: report, then discard everything until Sync.
		c.sendError(c.toPgError(c.ctx, err), "ERROR")
		c.failTx()
		c.skipToSync = true
	}
	return false
}

// simpleQuery runs a Query message: every statement in turn, stopping at
// the first error, then ReadyForQuery.
func (c *conn) simpleQuery(sql string) {
	// A Query destroys the unnamed statement and portal.
	c.dropStatement("", false)
	c.dropPortal("")
	defer c.sendReady()

	var stmts []Statement
	err := c.withQueryCtx(func(ctx context.Context) (err error) {
		stmts, err = c.sess.Parse(ctx, sql)
		return err
	})
	if err != nil {
		c.sendError(c.toPgError(c.ctx, err), "ERROR")
		c.failTx()
		return
	}
	if len(stmts) == 0 {
		c.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, st := range stmts {
		var ctxUsed context.Context
		err := c.withQueryCtx(func(ctx context.Context) error {
			ctxUsed = ctx
			return c.execSimple(ctx, st)
		})
		if err != nil {
			if c.w.failed() != nil {
				return
			}
			c.sendError(c.toPgError(ctxUsed, err), "ERROR")
			c.failTx()
			return
		}
	}
	if c.txStatus() == 'I' {
		c.dropAllPortals()
	}
}

// withQueryCtx runs fn with a context that a CancelRequest cancels, and
// converts a panic in it into an XX000 error.
func (c *conn) withQueryCtx(fn func(ctx context.Context) error) (err error) {
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.setRunning(cancel)
	defer func() {
		c.setRunning(nil)
		cancel(errQueryDone)
	}()
	defer c.recoverAs(&err)
	return fn(ctx)
}

// execSimple executes one statement of a simple query and sends its
// results in text format.
func (c *conn) execSimple(ctx context.Context, st Statement) error {
	res, err := st.Execute(ctx, nil)
	if err != nil {
		return err
	}
	if res == nil {
		return pgerror.New(pgerror.Internal, "statement returned no result")
	}
	defer c.closeResult(res)
	cols := st.Columns()
	if co, ok := res.(CopyOutResult); ok && co.CopyOut() {
		return c.sendCopyOut(ctx, res, len(cols))
	}
	if cols != nil {
		if err := c.send(rowDescription(cols, nil)); err != nil {
			return err
		}
	}
	if _, _, err := c.sendRows(ctx, res, cols, nil, 0); err != nil {
		return err
	}
	c.sendNotices(res)
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag())})
}

// sendRows sends DataRows of res until io.EOF or, when max > 0, max rows.
// It reports the rows sent and whether the result is exhausted.
func (c *conn) sendRows(ctx context.Context, res Result, cols []Column, fmts []int16, max int) (n int64, eof bool, err error) {
	for max <= 0 || n < int64(max) {
		row, err := res.Next(ctx)
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
		if err := c.w.appendTo(func(buf []byte) ([]byte, error) {
			return appendDataRow(buf, row, cols, fmts)
		}); err != nil {
			return n, false, err
		}
		n++
	}
	return n, false, nil
}

// sendCopyOut sends res as COPY TO STDOUT data in text format, then
// CommandComplete.
func (c *conn) sendCopyOut(ctx context.Context, res Result, ncols int) error {
	if err := c.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, ncols)}); err != nil {
		return err
	}
	var n int64
	for {
		row, err := res.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := c.w.appendTo(func(buf []byte) ([]byte, error) {
			buf, c.scratch = appendCopyRow(buf, row, c.scratch)
			return buf, nil
		}); err != nil {
			return err
		}
		n++
	}
	if err := c.send(&pgproto3.CopyDone{}); err != nil {
		return err
	}
	c.sendNotices(res)
	tag := res.Tag()
	if tag == "" {
		tag = fmt.Sprintf("COPY %d", n)
	}
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

func (c *conn) sendNotices(res Result) {
	nr, ok := res.(NoticeResult)
	if !ok {
		return
	}
	for _, msg := range nr.Notices() {
		r := errorResponse(&pgerror.Error{Code: pgerror.SuccessfulCompletion, Message: msg}, "NOTICE")
		c.send((*pgproto3.NoticeResponse)(r))
	}
}

// ---------------------------------------------------------------------------
// Extended protocol.

func (c *conn) parse(m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return pgerror.New(pgerror.DuplicatePreparedStatement, "prepared statement %q already exists", m.Name)
		}
	}
	var stmt Statement
	ps := &prepared{name: m.Name}
	err := c.withQueryCtx(func(ctx context.Context) (err error) {
		stmt, err = c.sess.Prepare(ctx, m.Query, m.ParameterOIDs)
		if err != nil || stmt == nil {
			return err
		}
		ps.params = stmt.ParamTypes()
		ps.cols = stmt.Columns()
		return nil
	})
	if err != nil {
		return err
	}
	ps.stmt = stmt
	// Parameters the client declared exist even if the statement does not
	// use them, as in PostgreSQL: Bind must supply them.
	for i := len(ps.params); i < len(m.ParameterOIDs); i++ {
		t, _ := types.ByOID(m.ParameterOIDs[i])
		ps.params = append(ps.params, t)
	}
	if m.Name == "" {
		c.dropStatement("", false)
	}
	c.stmts[m.Name] = ps
	return c.send(&pgproto3.ParseComplete{})
}

// bind creates a portal. Parameters are decoded here, so their errors
// (08P01 counts, 22P02/22P03 values) are reported at Bind as PostgreSQL
// does; the statement itself runs at the first Execute.
func (c *conn) bind(m *pgproto3.Bind) error {
	ps, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return pgerror.New(pgerror.InvalidSQLStatementName, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if m.DestinationPortal != "" {
		if _, ok := c.portals[m.DestinationPortal]; ok {
			return pgerror.New(pgerror.DuplicateCursor, "portal %q already exists", m.DestinationPortal)
		}
	}
	np := len(m.Parameters)
	if nf := len(m.ParameterFormatCodes); nf > 1 && nf != np {
		return pgerror.New(pgerror.ProtocolViolation, "bind message has %d parameter formats but %d parameters", nf, np)
	}
	if np != len(ps.params) {
		return pgerror.New(pgerror.ProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d",
			np, ps.name, len(ps.params))
	}
	var params []types.Value
	if np > 0 {
		params = make([]types.Value, np)
	}
	for i, raw := range m.Parameters {
		if raw == nil {
			continue // NULL
		}
		f := formatCode(m.ParameterFormatCodes, i)
		var v types.Value
		var err error
		switch f {
		case pgproto3.TextFormat:
			v, err = types.ParseText(ps.params[i], string(raw))
		case pgproto3.BinaryFormat:
			v, err = types.ParseBinary(ps.params[i], raw)
			if err != nil && pgerror.CodeOf(err) == pgerror.InvalidBinaryRepresentation {
				err = pgerror.New(pgerror.InvalidBinaryRepresentation, "incorrect binary data format in bind parameter %d", i+1).
					WithDetail("%s", err.Error())
			}
		default:
			return pgerror.New(pgerror.InvalidParameterValue, "unsupported format code: %d", f)
		}
		if err != nil {
			return err
		}
		params[i] = v
	}
	var fmts []int16
	nr := len(m.ResultFormatCodes)
	if nr > 1 && nr != len(ps.cols) {
		return pgerror.New(pgerror.ProtocolViolation, "bind message has %d result formats but query has %d columns", nr, len(ps.cols))
	}
	if nr > 0 && len(ps.cols) > 0 {
		fmts = make([]int16, len(ps.cols))
		for i, col := range ps.cols {
			f := formatCode(m.ResultFormatCodes, i)
			switch f {
			case pgproto3.TextFormat:
			case pgproto3.BinaryFormat:
				if col.Type.HasBinary() {
					fmts[i] = pgproto3.BinaryFormat
				}
			default:
				return pgerror.New(pgerror.InvalidParameterValue, "unsupported format code: %d", f)
			}
		}
	}
	c.dropPortal(m.DestinationPortal)
	p := &portal{name: m.DestinationPortal, ps: ps, params: params, fmts: fmts}
	p.ctx, p.cancel = context.WithCancelCause(c.ctx)
	c.portals[p.name] = p
	return c.send(&pgproto3.BindComplete{})
}

// formatCode applies the protocol's rule for format code lists: none means
// text, one applies to all, otherwise one per item.
func formatCode(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return pgproto3.TextFormat
	case 1:
		return codes[0]
	}
	return codes[i]
}

func (c *conn) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		ps, ok := c.stmts[m.Name]
		if !ok {
			return pgerror.New(pgerror.InvalidSQLStatementName, "prepared statement %q does not exist", m.Name)
		}
		oids := make([]uint32, len(ps.params))
		for i, t := range ps.params {
			oids[i] = t.OID()
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		if ps.cols == nil {
			return c.send(&pgproto3.NoData{})
		}
		return c.send(rowDescription(ps.cols, nil))
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			if cd, ok := c.sess.(CursorDescriber); ok {
				if cols, ok := cd.DescribeCursor(m.Name); ok {
					return c.send(rowDescription(cols, nil))
				}
			}
			return pgerror.New(pgerror.InvalidCursorName, "portal %q does not exist", m.Name)
		}
		if p.ps.cols == nil {
			return c.send(&pgproto3.NoData{})
		}
		return c.send(rowDescription(p.ps.cols, p.fmts))
	}
	return pgerror.New(pgerror.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
}

// execute runs a portal: the first Execute calls Statement.Execute, and
// each Execute sends up to MaxRows rows (0: all). A portal stopped at its
// limit answers PortalSuspended and keeps its Result for the next
// Execute; an exhausted one answers CommandComplete.
func (c *conn) execute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return pgerror.New(pgerror.InvalidCursorName, "portal %q does not exist", m.Portal)
	}
	if p.ps.stmt == nil {
		return c.send(&pgproto3.EmptyQueryResponse{})
	}
	if p.done {
		// PostgreSQL: a finished row-returning portal yields no more rows;
		// a finished command cannot run again.
		if p.ps.cols == nil {
			return pgerror.New(pgerror.ObjectNotInPrerequisiteState, "portal %q cannot be run", p.name)
		}
		return c.send(&pgproto3.CommandComplete{CommandTag: []byte(retag(p.tag, 0))})
	}
	c.setRunning(p.cancel)
	defer c.setRunning(nil)
	err := c.runPortal(p, int(m.MaxRows))
	if err != nil {
		err = c.toPgError(p.ctx, err)
		c.dropPortal(p.name)
	}
	return err
}

func (c *conn) runPortal(p *portal, maxRows int) (err error) {
	defer c.recoverAs(&err)
	if p.res == nil {
		res, err := p.ps.stmt.Execute(p.ctx, p.params)
		if err != nil {
			return err
		}
		if res == nil {
			return pgerror.New(pgerror.Internal, "statement returned no result")
		}
		p.res = res
		if co, ok := res.(CopyOutResult); ok && co.CopyOut() {
			p.copyOut = true
		}
	}
	if p.copyOut {
		// COPY runs to completion whatever the row limit.
		if err := c.sendCopyOut(p.ctx, p.res, len(p.ps.cols)); err != nil {
			return err
		}
		p.tag = p.res.Tag()
		p.done = true
		c.closePortalResult(p)
		return nil
	}
	n, eof, err := c.sendRows(p.ctx, p.res, p.ps.cols, p.fmts, maxRows)
	if err != nil {
		return err
	}
	if !eof {
		p.suspended = true
		c.send(&pgproto3.PortalSuspended{})
		return c.w.flush()
	}
	c.sendNotices(p.res)
	p.tag = p.res.Tag()
	p.done = true
	c.closePortalResult(p)
	tag := p.tag
	if p.suspended {
		tag = retag(tag, n)
	}
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

func (c *conn) closeMsg(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		c.dropStatement(m.Name, true)
	case 'P':
		c.dropPortal(m.Name)
	default:
		return pgerror.New(pgerror.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	return c.send(&pgproto3.CloseComplete{})
}

// sync ends an extended-protocol batch. Portals live until the end of the
// transaction, as in PostgreSQL: outside a transaction block they are all
// destroyed here.
func (c *conn) sync() {
	if c.txStatus() == 'I' {
		c.dropAllPortals()
	}
	c.sendReady()
}

// dropStatement forgets a prepared statement. A Close message also closes
// the portals bound to it (withPortals); replacing the unnamed statement
// does not, as in PostgreSQL.
func (c *conn) dropStatement(name string, withPortals bool) {
	ps, ok := c.stmts[name]
	if !ok {
		return
	}
	delete(c.stmts, name)
	if !withPortals {
		return
	}
	for pn, p := range c.portals {
		if p.ps == ps {
			c.dropPortal(pn)
		}
	}
}

func (c *conn) dropPortal(name string) {
	p, ok := c.portals[name]
	if !ok {
		return
	}
	delete(c.portals, name)
	c.closePortalResult(p)
	p.cancel(errPortalClosed)
}

func (c *conn) dropAllPortals() {
	for name := range c.portals {
		c.dropPortal(name)
	}
}

func (c *conn) closePortalResult(p *portal) {
	if p.res != nil {
		c.closeResult(p.res)
		p.res = nil
	}
}

// closeResult calls Result.Close, which pgwire does exactly once for every
// Result, whether or not it was read to the end.
func (c *conn) closeResult(res Result) {
	_ = c.safely(func() error { res.Close(); return nil })
}

func (c *conn) closeSession() {
	for name := range c.portals {
		c.dropPortal(name)
	}
	_ = c.safely(func() error { c.sess.Close(); return nil })
}

// ---------------------------------------------------------------------------
// Responses.

func (c *conn) send(m pgproto3.BackendMessage) error { return c.w.send(m) }

func (c *conn) sendError(e *pgerror.Error, severity string) {
	if severity == "ERROR" && c.ctx.Err() != nil {
		return // the connection is ending: finish sends the FATAL that says why
	}
	if e.Code == pgerror.Internal {
		c.log.Warn("pgwire: internal error", "err", e.Message)
	}
	c.send(errorResponse(e, severity))
}

// sendReady sends the ParameterStatus of changed settings and
// ReadyForQuery, and flushes.
func (c *conn) sendReady() {
	if c.ctx.Err() != nil {
		return
	}
	var changes []Parameter
	if err := c.safely(func() error { changes = c.sess.ParameterChanges(); return nil }); err != nil {
		c.sendError(c.toPgError(c.ctx, err), "ERROR")
	}
	for _, p := range changes {
		c.send(&pgproto3.ParameterStatus{Name: p.Name, Value: p.Value})
	}
	c.send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus()})
	_ = c.w.flush()
}

func (c *conn) txStatus() byte {
	s := byte('I')
	_ = c.safely(func() error { s = c.sess.TxStatus(); return nil })
	switch s {
	case 'I', 'T', 'E':
		return s
	}
	return 'I'
}

func (c *conn) failTx() {
	_ = c.safely(func() error { c.sess.FailTx(); return nil })
}

// toPgError gives err its SQLSTATE. A bare context error becomes the
// cause the context was cancelled with (57014 for a CancelRequest, 57P01
// for shutdown).
func (c *conn) toPgError(ctx context.Context, err error) *pgerror.Error {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if errors.As(context.Cause(ctx), &pe) && pe.Code != pgerror.SuccessfulCompletion {
			return pe
		}
		if errors.As(context.Cause(c.ctx), &pe) {
			return pe
		}
		return errQueryCanceled
	}
	return pgerror.Flatten(err)
}

// safely runs fn, converting a panic into an XX000 error.
func (c *conn) safely(fn func() error) (err error) {
	defer c.recoverAs(&err)
	return fn()
}

// recoverAs, deferred, turns a panic of the Handler into an XX000 error.
func (c *conn) recoverAs(err *error) {
	if r := recover(); r != nil {
		c.log.Error("pgwire: panic in handler", "panic", r, "stack", string(debug.Stack()))
		*err = pgerror.New(pgerror.Internal, "internal error: %v", r)
	}
}
