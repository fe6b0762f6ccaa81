package server

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/types"
)

// This file holds the view of the server's connections (pg_stat_activity)
// and the functions that signal them (pg_cancel_backend,
// pg_terminate_backend), over the wire server SetWire gives.

// wireServer is what pg_stat_activity and the signalling functions ask of
// the wire server.
type wireServer interface {
	Activity() []pgwire.Activity
	CancelBackend(pid uint32) bool
	TerminateBackend(pid uint32) bool
	BackendUser(pid uint32) (string, bool)
}

var _ wireServer = (*pgwire.Server)(nil)

// wireHolder holds the wire server once SetWire is called.
type wireHolder struct{ w atomic.Pointer[wireServer] }

// SetWire gives the server the wire server serving it: pg_stat_activity
// lists its connections, and pg_cancel_backend and pg_terminate_backend
// signal them. Without it pg_stat_activity is empty.
func (s *Server) SetWire(w *pgwire.Server) {
	var ws wireServer = w
	s.wire.w.Store(&ws)
}

func (s *Server) wireServer() wireServer {
	if p := s.wire.w.Load(); p != nil {
		return *p
	}
	return nil
}

// pgStatActivityColumns are PostgreSQL 15's pg_stat_activity columns.
// client_addr and backend_xid/backend_xmin are text: fvsql has no inet
// or xid type (their values are an address's text and NULL).
var pgStatActivityColumns = []catalog.Column{
	{Name: "datid", Type: types.Oid}, {Name: "datname", Type: types.Name},
	{Name: "pid", Type: types.Int4}, {Name: "leader_pid", Type: types.Int4},
	{Name: "usesysid", Type: types.Oid}, {Name: "usename", Type: types.Name},
	{Name: "application_name", Type: types.Text}, {Name: "client_addr", Type: types.Text},
	{Name: "client_hostname", Type: types.Text}, {Name: "client_port", Type: types.Int4},
	{Name: "backend_start", Type: types.TimestampTZ}, {Name: "xact_start", Type: types.TimestampTZ},
	{Name: "query_start", Type: types.TimestampTZ}, {Name: "state_change", Type: types.TimestampTZ},
	{Name: "wait_event_type", Type: types.Text}, {Name: "wait_event", Type: types.Text},
	{Name: "state", Type: types.Text}, {Name: "backend_xid", Type: types.Text},
	{Name: "backend_xmin", Type: types.Text}, {Name: "query_id", Type: types.Int8},
	{Name: "query", Type: types.Text}, {Name: "backend_type", Type: types.Text},
}

// databaseOID is pg_database's oid of the one database, fvsql.
const databaseOID = 16384

// superuserOID is the usesysid every user shows: fvsql has no roles.
const superuserOID = 10

func (s *Server) pgStatActivityRows(context.Context) []types.Row {
	w := s.wireServer()
	if w == nil {
		return nil
	}
	ts := func(t time.Time) types.Value {
		if t.IsZero() {
			return types.NullValue
		}
		return types.NewTimestamp(types.TimestampTZ, t.UnixMicro())
	}
	var rows []types.Row
	for _, a := range w.Activity() {
		addr, port := types.NullValue, types.NullValue
		if tcp, ok := a.ClientAddr.(*net.TCPAddr); ok {
			addr, port = types.NewText(tcp.IP.String()), types.NewInt(types.Int4, int64(tcp.Port))
		} else if a.ClientAddr != nil {
			port = types.NewInt(types.Int4, -1) // a Unix socket, as PostgreSQL shows it
		}
		rows = append(rows, types.Row{
			types.NewInt(types.Oid, databaseOID), types.NewString(types.Name, a.Database),
			types.NewInt(types.Int4, int64(a.PID)), types.NullValue,
			types.NewInt(types.Oid, superuserOID), types.NewString(types.Name, a.User),
			types.NewText(a.ApplicationName), addr, types.NullValue, port,
			ts(a.BackendStart), ts(a.XactStart), ts(a.QueryStart), ts(a.StateChange),
			types.NullValue, types.NullValue, types.NewText(a.State), types.NullValue, types.NullValue,
			types.NullValue, types.NewText(a.Query), types.NewText("client backend"),
		})
	}
	return rows
}

// signalBackend is pg_cancel_backend (terminate false) and
// pg_terminate_backend for the session sess. fvsql has no roles, so it
// follows PostgreSQL's rule for users without superuser or
// pg_signal_backend: a user may signal only its own connections (those
// that logged in with the same user name). A pid that is no connection
// gives false, as PostgreSQL's (which also warns).
func signalBackend(sess any, pid int64, terminate bool) (types.Value, error) {
	s, ok := sess.(*session)
	if !ok || s == nil {
		return types.NullValue, pgerror.New(pgerror.FeatureNotSupported, "pg_cancel_backend and pg_terminate_backend run only in a session's query")
	}
	w := s.srv.wireServer()
	if w == nil || pid <= 0 || pid > 1<<32-1 {
		return types.NewBool(false), nil
	}
	user, ok := w.BackendUser(uint32(pid))
	if !ok {
		return types.NewBool(false), nil
	}
	if user != s.user {
		verb, what := "cancel query", "cancel this query"
		if terminate {
			verb, what = "terminate process", "terminate this backend"
		}
		return types.NullValue, pgerror.New(pgerror.InsufficientPrivilege, "permission denied to %s", verb).
			WithDetail("Only the user whose connection it is may %s: fvsql has no superuser or pg_signal_backend role.", what)
	}
	if terminate {
		return types.NewBool(w.TerminateBackend(uint32(pid))), nil
	}
	return types.NewBool(w.CancelBackend(uint32(pid))), nil
}

func init() {
	osPID := int64(os.Getpid())
	expr.Register(
		&expr.Func{Name: "pg_cancel_backend", Args: []types.Type{types.Int4}, Ret: types.Bool, Volatile: true,
			EvalSession: func(sess any, a []types.Value) (types.Value, error) { return signalBackend(sess, a[0].I, false) }},
		&expr.Func{Name: "pg_terminate_backend", Args: []types.Type{types.Int4}, Ret: types.Bool, Volatile: true,
			EvalSession: func(sess any, a []types.Value) (types.Value, error) { return signalBackend(sess, a[0].I, true) }},
		// pg_terminate_backend(pid, timeout): fvsql does not wait for the
		// connection to end, so the timeout only has to be valid.
		&expr.Func{Name: "pg_terminate_backend", Args: []types.Type{types.Int4, types.Int8}, Ret: types.Bool, Volatile: true,
			EvalSession: func(sess any, a []types.Value) (types.Value, error) {
				if a[1].I < 0 {
					return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, `"timeout" must not be negative`)
				}
				return signalBackend(sess, a[0].I, true)
			}},
		// The process id of the connection's BackendKeyData (the one
		// pg_stat_activity.pid and pg_cancel_backend use); the server
		// process's own outside a session.
		&expr.Func{Name: "pg_backend_pid", Ret: types.Int4, Volatile: true,
			EvalSession: func(sess any, _ []types.Value) (types.Value, error) {
				if s, ok := sess.(*session); ok && s != nil && s.pid != 0 {
					return types.NewInt(types.Int4, int64(s.pid)), nil
				}
				return types.NewInt(types.Int4, osPID), nil
			}},
	)
}
