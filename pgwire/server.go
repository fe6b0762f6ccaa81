package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/fvsql/fvsql/pgerror"
)

// Authentication methods for Config.Auth, named as in pg_hba.conf.
const (
	AuthTrust       = "trust"         // no password
	AuthPassword    = "password"      // cleartext password
	AuthMD5         = "md5"           // salted MD5 challenge
	AuthSCRAMSHA256 = "scram-sha-256" // SASL SCRAM-SHA-256, no channel binding
)

// DefaultMaxMessageSize is the largest frontend message accepted when
// Config.MaxMessageSize is 0.
const DefaultMaxMessageSize = 64 << 20

// DefaultAuthTimeout bounds the startup and authentication exchange when
// Config.AuthTimeout is 0 (PostgreSQL's authentication_timeout).
const DefaultAuthTimeout = time.Minute

// DefaultMaxConnections is the number of connections served at once when
// Config.MaxConnections is 0 (PostgreSQL's default max_connections).
const DefaultMaxConnections = 100

// Config configures a Server.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on, e.g.
	// "127.0.0.1:5433".
	Addr string
	// Auth is the authentication method: AuthTrust (the default when
	// empty), AuthPassword, AuthMD5 or AuthSCRAMSHA256.
	Auth string
	// Users maps user names to passwords for the password methods. A user
	// missing from the map fails authentication exactly like a wrong
	// password (28P01).
	Users map[string]string
	// TLSConfig enables TLS: an SSLRequest is answered 'S' and the
	// connection upgraded. When nil, SSLRequest is answered 'N'.
	TLSConfig *tls.Config
	// RequireTLS refuses a StartupMessage that did not come over TLS
	// (FATAL 28000, before authentication); CancelRequests are served
	// either way, as PostgreSQL's are. It needs TLSConfig.
	RequireTLS bool
	// ServerVersion is reported as the server_version parameter; clients
	// parse its leading number. Default "15.0".
	ServerVersion string
	// MaxMessageSize is the largest message body accepted, in bytes;
	// a larger declared length closes the connection with 08P01 before
	// anything is allocated. Default DefaultMaxMessageSize.
	MaxMessageSize int
	// AuthTimeout bounds the time from accepting a connection to the end
	// of authentication. Default DefaultAuthTimeout.
	AuthTimeout time.Duration
	// MaxConnections is the most connections served at once. A connection
	// holds its slot from its StartupMessage (authentication included, as
	// a PostgreSQL backend holds its PGPROC) until it closes; one more is
	// refused with FATAL 53300. Connections that have not sent their
	// StartupMessage yet hold none, and CancelRequests are served however
	// full the server is. Default DefaultMaxConnections.
	MaxConnections int
	// Logger receives connection and protocol events. Default
	// slog.Default().
	Logger *slog.Logger
}

// Server is a PostgreSQL wire protocol (3.0) server. Create it with
// NewServer, run it with Serve or ListenAndServe, stop it with Close.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger

	// ctx is cancelled by Close with errAdminShutdown as its cause; every
	// connection's context derives from it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	addr      net.Addr
	conns     map[*conn]struct{} // every accepted connection, from accept to close
	byPID     map[uint32]*conn   // authenticated connections, for CancelRequest
	nextPID   uint32
	clients   int            // connections holding a slot (at most cfg.MaxConnections)
	wg        sync.WaitGroup // Serve loops and every connection goroutine
}

// ErrServerClosed is returned by Serve and ListenAndServe when called after
// Close.
var ErrServerClosed = errors.New("pgwire: server closed")

// NewServer validates cfg, fills in its defaults and returns a server that
// hands authenticated connections to h.
func NewServer(cfg Config, h Handler) (*Server, error) {
	if h == nil {
		return nil, errors.New("pgwire: nil Handler")
	}
	switch cfg.Auth {
	case "":
		cfg.Auth = AuthTrust
	case AuthTrust, AuthPassword, AuthMD5, AuthSCRAMSHA256:
	default:
		return nil, fmt.Errorf("pgwire: unknown auth method %q (want trust, password, md5 or scram-sha-256)", cfg.Auth)
	}
	if cfg.Auth != AuthTrust && len(cfg.Users) == 0 {
		return nil, fmt.Errorf("pgwire: auth method %q needs Users", cfg.Auth)
	}
	if cfg.RequireTLS && cfg.TLSConfig == nil {
		return nil, errors.New("pgwire: RequireTLS needs TLSConfig")
	}
	users := make(map[string]string, len(cfg.Users))
	for u, p := range cfg.Users {
		users[u] = p
	}
	cfg.Users = users
	if cfg.MaxMessageSize < 0 {
		return nil, fmt.Errorf("pgwire: negative MaxMessageSize %d", cfg.MaxMessageSize)
	}
	if cfg.MaxMessageSize > 0 && cfg.MaxMessageSize < 1024 {
		return nil, fmt.Errorf("pgwire: MaxMessageSize %d is below the minimum of 1024", cfg.MaxMessageSize)
	}
	if cfg.MaxMessageSize == 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.AuthTimeout < 0 {
		return nil, fmt.Errorf("pgwire: negative AuthTimeout %v", cfg.AuthTimeout)
	}
	if cfg.AuthTimeout == 0 {
		cfg.AuthTimeout = DefaultAuthTimeout
	}
	if cfg.MaxConnections < 0 {
		return nil, fmt.Errorf("pgwire: negative MaxConnections %d", cfg.MaxConnections)
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = "15.0"
	}
	if cfg.TLSConfig != nil {
		cfg.TLSConfig = cfg.TLSConfig.Clone()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	var seed [4]byte
	_, _ = rand.Read(seed[:])
	s := &Server{
		cfg:       cfg,
		handler:   h,
		log:       log,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		byPID:     make(map[uint32]*conn),
		// Process ids start at a random point below 2^30 so they look like
		// ordinary positive pids to every client.
		nextPID: 1000 + binary.BigEndian.Uint32(seed[:])%(1<<30),
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s, nil
}

// ListenAndServe listens on cfg.Addr and serves until Close.
func (s *Server) ListenAndServe() error {
	addr := s.cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:5432"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Close, then returns nil. It closes
// ln when it returns. Serve may be called for several listeners.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.addr = ln.Addr()
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Transient failures (EMFILE, ECONNABORTED): back off as
			// net/http does rather than spinning or giving up.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.log.Warn("pgwire: accept failed; retrying", "err", err, "delay", delay)
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return nil
			}
			continue
		}
		delay = 0
		s.startConn(nc)
	}
}

// Addr returns the address of the listener Serve most recently started
// with, or nil. A caller that needs the port of ":0" before Serve runs
// should create the listener itself and pass it to Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close stops accepting connections, ends every connection (a running
// query's context is cancelled and the client is sent FATAL 57P01), and
// waits for all of the server's goroutines to return. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for ln := range s.listeners {
			ln.Close()
		}
		s.cancel(errAdminShutdown)
		for c := range s.conns {
			c.interrupt()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// admit takes a connection slot, or reports that none is free.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients >= s.cfg.MaxConnections {
		return false
	}
	s.clients++
	return true
}

// release gives back a slot that admit took.
func (s *Server) release() {
	s.mu.Lock()
	s.clients--
	s.mu.Unlock()
}

// register gives an authenticated connection its BackendKeyData: a unique
// process id and a random secret.
func (s *Server) register(c *conn) {
	var secret [4]byte
	if _, err := rand.Read(secret[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		s.nextPID++
		if s.nextPID == 0 || s.nextPID > 1<<31-1 {
			s.nextPID = 1000
		}
		if _, used := s.byPID[s.nextPID]; !used {
			break
		}
	}
	c.pid = s.nextPID
	c.secret = binary.BigEndian.Uint32(secret[:])
	s.byPID[c.pid] = c
}

// forget removes c from the server's tables once its goroutine ends.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if c.pid != 0 && s.byPID[c.pid] == c {
		delete(s.byPID, c.pid)
	}
}

// cancelRequest handles a CancelRequest packet: it cancels the running
// query of the connection with that process id when the secret matches.
// A mismatch is ignored silently, as PostgreSQL does.
func (s *Server) cancelRequest(pid, secret uint32) {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeEq(int32(c.secret), int32(secret)) != 1 {
		s.log.Info("pgwire: ignored CancelRequest with unknown key", "pid", pid)
		return
	}
	c.cancelRunning()
}

// Causes given to cancelled contexts; they become the ErrorResponse when a
// handler returns the bare context error.
var (
	errQueryCanceled = pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
	errAdminShutdown = pgerror.New(pgerror.AdminShutdown, "terminating connection due to administrator command")
	// errTerminated ends one connection (TerminateBackend); the same
	// words as a shutdown, as PostgreSQL's pg_terminate_backend.
	errTerminated   = pgerror.New(pgerror.AdminShutdown, "terminating connection due to administrator command")
	errClientGone   = pgerror.New(pgerror.ConnectionFailure, "connection to client lost")
	errConnClosed   = pgerror.New(pgerror.ConnectionFailure, "connection closed")
	errPortalClosed = pgerror.New(pgerror.InvalidCursorState, "portal closed")
	errQueryDone    = pgerror.New(pgerror.SuccessfulCompletion, "statement finished")
)

// Errors that end a connection before its session exists.
var (
	errTooManyConnections = pgerror.New(pgerror.TooManyConnections, "sorry, too many clients already")
	// errLoginInternal reports a panic before the session exists. It
	// carries no detail: the client may not have authenticated, and a
	// panic's value (paths, names, data) is for the server's log only.
	errLoginInternal = pgerror.New(pgerror.Internal, "internal error")
)
