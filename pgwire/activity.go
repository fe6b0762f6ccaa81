// This file holds what each connection is doing (Server.Activity, for a
// pg_stat_activity view) and the signals an administrator sends to
// another connection (Server.CancelBackend, Server.TerminateBackend).

package pgwire

import (
	"net"
	"sort"
	"time"
)

// Activity is one connection's state, as pg_stat_activity shows it.
type Activity struct {
	PID             uint32
	User            string
	Database        string
	ApplicationName string
	ClientAddr      net.Addr
	BackendStart    time.Time
	// XactStart is when the current transaction began (zero: none); a
	// statement outside a transaction block is its own transaction.
	XactStart   time.Time
	QueryStart  time.Time // the most recent statement's start (zero: none yet)
	StateChange time.Time
	// State is "active", "idle", "idle in transaction" or
	// "idle in transaction (aborted)".
	State string
	Query string // the most recent statement's text
}

// Activity lists the established connections in process id order.
func (s *Server) Activity() []Activity {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.byPID))
	for _, c := range s.byPID {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	out := make([]Activity, 0, len(conns))
	for _, c := range conns {
		c.actMu.Lock()
		a := c.act
		c.actMu.Unlock()
		if a.State != "" { // its session exists
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// CancelBackend cancels the statement the connection with process id pid
// is running, as a CancelRequest with its key would (57014 "canceling
// statement due to user request"). It reports whether that connection
// exists; a connection running nothing is left alone.
func (s *Server) CancelBackend(pid uint32) bool {
	c := s.conn(pid)
	if c == nil {
		return false
	}
	c.cancelRunning()
	return true
}

// TerminateBackend ends the connection with process id pid: its running
// statement is cancelled and the client is sent FATAL 57P01
// "terminating connection due to administrator command". It reports
// whether that connection exists.
func (s *Server) TerminateBackend(pid uint32) bool {
	c := s.conn(pid)
	if c == nil {
		return false
	}
	c.cancel(errTerminated)
	return true
}

// BackendUser returns the user of the connection with process id pid.
func (s *Server) BackendUser(pid uint32) (string, bool) {
	c := s.conn(pid)
	if c == nil {
		return "", false
	}
	c.actMu.Lock()
	defer c.actMu.Unlock()
	return c.act.User, c.act.State != ""
}

func (s *Server) conn(pid uint32) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPID[pid]
}

// actStarted records the session's start.
func (c *conn) actStarted(sp SessionParams) {
	now := time.Now()
	c.actMu.Lock()
	defer c.actMu.Unlock()
	c.act = Activity{
		PID: c.pid, User: sp.User, Database: sp.Database, ApplicationName: sp.ApplicationName,
		ClientAddr: c.raw.RemoteAddr(), BackendStart: c.started, StateChange: now, State: "idle",
	}
}

// actQuery records that a statement (its text: query) starts.
func (c *conn) actQuery(query string) {
	now := time.Now()
	c.actMu.Lock()
	defer c.actMu.Unlock()
	c.act.Query, c.act.QueryStart, c.act.StateChange, c.act.State = query, now, now, "active"
	if c.act.XactStart.IsZero() {
		c.act.XactStart = now
	}
}

// actIdle records that the connection waits for the client, with its
// transaction status and the application_name it may have SET.
func (c *conn) actIdle(tx byte, changes []Parameter) {
	c.actMu.Lock()
	defer c.actMu.Unlock()
	for _, p := range changes {
		if p.Name == "application_name" {
			c.act.ApplicationName = p.Value
		}
	}
	state := "idle"
	switch tx {
	case 'T':
		state = "idle in transaction"
	case 'E':
		state = "idle in transaction (aborted)"
	default:
		c.act.XactStart = time.Time{}
	}
	if state != c.act.State {
		c.act.State, c.act.StateChange = state, time.Now()
	}
}
