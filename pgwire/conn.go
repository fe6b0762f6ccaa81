// This file holds a connection's lifecycle: the conn type, startup
// (SSLRequest, GSSEncRequest, CancelRequest, protocol negotiation), the
// hand-off to authentication (auth.go) and to Handler.NewSession, the
// processing goroutine's message loop and dispatch, termination, the
// transaction status reported in ReadyForQuery, and the guards that turn
// Handler panics and context errors into SQLSTATEs. The reading goroutine
// is in reader.go; the messages it dispatches are run by simple.go and
// extended.go, whose results results.go sends.

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
	"github.com/jackc/pgproto3/v2"
)

// Startup packet codes (the first int32 after the length).
const (
	protocolVersion30 = 3 << 16
	cancelRequestCode = 80877102
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	// maxStartupPacketLen is PostgreSQL's MAX_STARTUP_PACKET_LENGTH: the
	// longest startup packet, its length word included.
	maxStartupPacketLen = 10000
	// maxAuthMessageLen caps the body of an authentication response
	// (password, md5 answer, SASL messages), as MaxMessageSize caps
	// messages after authentication, so that a client that has not
	// authenticated cannot make the server allocate more than this. The
	// legitimate ones are small: SCRAM's messages are well under the 1,024
	// bytes PostgreSQL allows them (PG_MAX_SASL_MESSAGE_LENGTH), and an md5
	// answer is 36 bytes. PostgreSQL long capped password packets at 1,000
	// bytes and now allows 65,535 (PG_MAX_AUTH_TOKEN_LENGTH), a size meant
	// for Kerberos tokens of GSSAPI and SSPI, which fvsql does not offer;
	// 8 KiB leaves room for any password in use.
	maxAuthMessageLen = 8 << 10
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

	admitted bool // holds a slot of Config.MaxConnections (serve's goroutine only)

	pid, secret uint32 // BackendKeyData; pid 0 until registered

	// Owned by the processing goroutine.
	sess       Session
	stmts      map[string]*prepared
	portals    map[string]*portal
	skipToSync bool   // an extended-protocol message failed: ignore all until Sync
	scratch    []byte // reused by COPY TO STDOUT
	// endAfter ends the connection once the current message is handled: a
	// protocol violation or Terminate read during COPY FROM STDIN.
	endAfter *pgerror.Error

	dlMu        sync.Mutex
	interrupted bool // Server.Close set the deadlines: don't move them again

	runMu   sync.Mutex
	running context.CancelCauseFunc // cancels the query executing now, or nil

	started time.Time // accepted
	actMu   sync.Mutex
	act     Activity // what the connection does now (Server.Activity)
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:     s,
		raw:     nc,
		nc:      nc,
		log:     s.log.With("remote", nc.RemoteAddr().String()),
		started: time.Now(),
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

// serve runs the connection from accept to close.
func (c *conn) serve() {
	defer c.srv.wg.Done()
	defer c.srv.forget(c)
	defer c.raw.Close()
	defer c.cancel(errConnClosed)
	// The slot is given back before the socket closes, so a client that
	// sees its connection end can take the slot at once.
	defer func() {
		if c.admitted {
			c.srv.release()
		}
	}()
	defer func() {
		if c.w != nil {
			c.w.stop()
		}
	}()

	sp, ok := c.establish()
	if !ok {
		return
	}
	defer c.closeSession()

	c.log = c.log.With("pid", c.pid)
	c.actStarted(sp)
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

// establish runs the connection up to its session: startup, the slot
// (Config.MaxConnections), authentication and Handler.NewSession, all
// within Config.AuthTimeout. It returns false when the connection must
// close, the client told why when it can be. A panic here, the Handler's
// or pgwire's, is logged and reported as a bare FATAL XX000: the client
// may not have authenticated, and a panic's value is for the log only.
func (c *conn) establish() (sp SessionParams, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("pgwire: panic before the session was established", "panic", r, "stack", string(debug.Stack()))
			if c.w != nil {
				c.sendError(errLoginInternal, "FATAL")
				_ = c.w.flush()
			} else {
				c.startupFatal(errLoginInternal)
			}
			ok = false
		}
	}()

	c.setDeadline(time.Now().Add(c.srv.cfg.AuthTimeout))
	params, ok := c.startup()
	if !ok {
		return sp, false
	}
	if !c.srv.admit() {
		c.startupFatal(errTooManyConnections)
		return sp, false
	}
	c.admitted = true
	// From here on the connection speaks typed messages. pgproto3 reads
	// through a ChunkReader that refuses oversized declared lengths before
	// allocating (at most maxAuthMessageLen until authenticated), over a
	// reader that marks socket errors as such.
	lr := &limitedChunkReader{
		cr:  pgproto3.NewChunkReader(ioErrReader{c.nc}),
		max: min(maxAuthMessageLen, c.srv.cfg.MaxMessageSize),
	}
	c.be = pgproto3.NewBackend(lr, io.Discard)
	c.w = newWriter(c.nc)

	sp = SessionParams{
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
		return sp, false
	}
	lr.max = c.srv.cfg.MaxMessageSize // before the reading goroutine exists
	if err := c.send(&pgproto3.AuthenticationOk{}); err != nil {
		return sp, false
	}
	c.setDeadline(time.Time{})

	// The process id exists before the session, which may want it
	// (pg_backend_pid, pg_stat_activity).
	c.srv.register(c)
	sp.PID = c.pid
	sp.RemoteAddr = c.raw.RemoteAddr()
	sess, err := c.newSession(sp)
	if err != nil {
		c.sendError(c.toPgError(c.ctx, err), "FATAL")
		_ = c.w.flush()
		return sp, false
	}
	c.sess = sess
	c.stmts = make(map[string]*prepared)
	c.portals = make(map[string]*portal)
	return sp, true
}

// newSession calls Handler.NewSession. A panic in it is establish's to
// recover: it must not reach the client.
func (c *conn) newSession(sp SessionParams) (Session, error) {
	s, err := c.srv.handler.NewSession(c.ctx, sp)
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
	sslDone, gssDone, sslOn := false, false, false
	for {
		body, err := readStartupPacket(c.nc)
		if err != nil {
			var le *startupLengthError
			if errors.As(err, &le) {
				c.startupFatal(pgerror.New(pgerror.ProtocolViolation, "invalid length of startup packet").WithDetail("%s", le))
				return nil, false
			}
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
			if err := c.handshakeTLS(); err != nil {
				c.log.Info("pgwire: TLS handshake failed", "err", err)
				return nil, false
			}
			sslOn = true
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
			if c.srv.cfg.RequireTLS && !sslOn {
				// PostgreSQL's hostssl-only refusal, before authentication
				// so that no password crosses the network in the clear.
				c.startupFatal(pgerror.New(pgerror.InvalidAuthorizationSpec,
					"connection without TLS refused for user %q: the server requires TLS", params["user"]).
					WithHint("Connect with sslmode=require (or verify-ca, verify-full)."))
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

// handshakeTLS upgrades the connection to TLS. Config.TLSConfig's
// callbacks (GetCertificate, GetConfigForClient, …) run in the handshake,
// before authentication: a panic in one ends this connection alone, with
// nothing sent (the client, mid-handshake, could not read an
// ErrorResponse) and its value in the log only.
func (c *conn) handshakeTLS() (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("pgwire: panic in the TLS handshake", "panic", r, "stack", string(debug.Stack()))
			err = errors.New("pgwire: panic in the TLS handshake")
		}
	}()
	tc := tls.Server(c.raw, c.srv.cfg.TLSConfig)
	if err := tc.HandshakeContext(c.ctx); err != nil {
		return err
	}
	c.nc = tc
	return nil
}

// startupLengthError is a startup packet's declared length out of range.
type startupLengthError struct{ n int }

func (e *startupLengthError) Error() string {
	return fmt.Sprintf("declared length %d is outside 8 to %d bytes", e.n, maxStartupPacketLen)
}

// readStartupPacket reads one length-prefixed startup packet, straight
// from the socket so that nothing is read ahead of a TLS handshake. The
// length is checked before the body is allocated.
func readStartupPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 8 || n > maxStartupPacketLen {
		return nil, &startupLengthError{n}
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

// negotiateProtocolVersion encodes NegotiateProtocolVersion ('v'), which
// pgproto3/v2 does not define: the newest minor version the server speaks
// and the protocol options ("_pq_.*") it did not recognize.
type negotiateProtocolVersion struct {
	newestMinor uint32
	options     []string
}

func (*negotiateProtocolVersion) Backend() {}

func (m *negotiateProtocolVersion) Decode([]byte) error { return nil }

func (m *negotiateProtocolVersion) Encode(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 'v', 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, m.newestMinor)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.options)))
	for _, o := range m.options {
		dst = append(dst, o...)
		dst = append(dst, 0)
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst, nil
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
		if e := c.endAfter; e != nil {
			if e != errClientGone {
				c.log.Info("pgwire: protocol violation", "err", e.Message, "detail", e.Detail)
				c.sendError(e, "FATAL")
			}
			_ = c.w.flush()
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
	if errors.As(context.Cause(c.ctx), &pe) && (pe == errAdminShutdown || pe == errTerminated) {
		c.sendError(pe, "FATAL")
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
	case *invalidQuery:
		c.simpleQueryInvalid()
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

// ---------------------------------------------------------------------------
// Ending and transaction status.

func (c *conn) closeSession() {
	for name := range c.portals {
		c.dropPortal(name)
	}
	_ = c.safely(func() error { c.sess.Close(); return nil })
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
	tx := c.txStatus()
	c.actIdle(tx, changes)
	c.send(&pgproto3.ReadyForQuery{TxStatus: tx})
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

// ---------------------------------------------------------------------------
// Handler errors and panics.

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
