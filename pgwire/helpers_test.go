package pgwire

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgproto3/v2"
	"github.com/jackc/pgx/v5"
)

const testTimeout = 30 * time.Second

func testLogger() *slog.Logger {
	if testing.Verbose() && os.Getenv("PGWIRE_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startServer runs a server on a loopback port until the test ends, and
// then checks that every Result was closed exactly once and every session
// closed.
func startServer(t testing.TB, cfg Config, h *testHandler) (*Server, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	s, err := NewServer(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if n := h.openResults.Load(); n != 0 {
			t.Errorf("%d results left open", n)
		}
		if n := h.doubleClose.Load(); n != 0 {
			t.Errorf("%d results closed twice", n)
		}
		if n := h.openSessions.Load(); n != 0 {
			t.Errorf("%d sessions left open", n)
		}
	})
	return s, ln.Addr().String()
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func connString(addr, user, extra string) string {
	s := fmt.Sprintf("postgres://%s@%s/fvsql?sslmode=disable", user, addr)
	if extra != "" {
		s += "&" + extra
	}
	return s
}

func connectPgx(t testing.TB, addr, extra string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(testCtx(t), connString(addr, "fvsql", extra))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// rawClient speaks the protocol message by message through pgproto3's
// Frontend.
type rawClient struct {
	t           testing.TB
	nc          net.Conn
	fe          *pgproto3.Frontend
	pid, secret uint32
	params      map[string]string
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(testTimeout))
	return &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(pgproto3.NewChunkReader(nc), nc), params: map[string]string{}}
}

// startup sends a StartupMessage and reads through the first
// ReadyForQuery.
func (c *rawClient) startup(params map[string]string) {
	c.t.Helper()
	if params == nil {
		params = map[string]string{"user": "fvsql", "database": "fvsql"}
	}
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: params})
	for {
		switch m := c.recv().(type) {
		case *pgproto3.AuthenticationOk:
		case *pgproto3.ParameterStatus:
			c.params[m.Name] = m.Value
		case *pgproto3.BackendKeyData:
			c.pid, c.secret = m.ProcessID, m.SecretKey
		case *pgproto3.ReadyForQuery:
			return
		default:
			c.t.Fatalf("unexpected startup message %s", describe(m))
		}
	}
}

func dialStarted(t testing.TB, addr string) *rawClient {
	c := dialRaw(t, addr)
	c.startup(nil)
	return c
}

func (c *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		if err := c.fe.Send(m); err != nil {
			c.t.Fatalf("send %T: %v", m, err)
		}
	}
}

func (c *rawClient) recv() pgproto3.BackendMessage {
	c.t.Helper()
	m, err := c.fe.Receive()
	if err != nil {
		c.t.Fatalf("receive: %v", err)
	}
	return m
}

// until receives messages through the n-th ReadyForQuery and describes
// each.
func (c *rawClient) until(n int) []string {
	c.t.Helper()
	var out []string
	for n > 0 {
		m := c.recv()
		out = append(out, describe(m))
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			n--
		}
	}
	return out
}

// expectClosed checks that the server closes the connection.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	buf := make([]byte, 1)
	_ = c.nc.SetReadDeadline(time.Now().Add(testTimeout))
	for {
		_, err := c.nc.Read(buf)
		if err != nil {
			return
		}
	}
}

// describe renders a backend message compactly for comparisons.
func describe(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.DataRow:
		parts := make([]string, len(m.Values))
		for i, v := range m.Values {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		return "DataRow " + strings.Join(parts, "|")
	case *pgproto3.CommandComplete:
		return "CommandComplete " + string(m.CommandTag)
	case *pgproto3.ErrorResponse:
		return fmt.Sprintf("Error %s %s", m.Severity, m.Code)
	case *pgproto3.NoticeResponse:
		return fmt.Sprintf("Notice %s", m.Message)
	case *pgproto3.RowDescription:
		parts := make([]string, len(m.Fields))
		for i, f := range m.Fields {
			parts[i] = fmt.Sprintf("%s:%d:%d", f.Name, f.DataTypeOID, f.Format)
		}
		return "RowDescription " + strings.Join(parts, ",")
	case *pgproto3.ParameterDescription:
		return fmt.Sprintf("ParameterDescription %v", m.ParameterOIDs)
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery " + string(m.TxStatus)
	case *pgproto3.CopyData:
		return fmt.Sprintf("CopyData %q", m.Data)
	case *pgproto3.CopyOutResponse:
		return fmt.Sprintf("CopyOutResponse %d %v", m.OverallFormat, m.ColumnFormatCodes)
	case *pgproto3.CopyInResponse:
		return fmt.Sprintf("CopyInResponse %d %v", m.OverallFormat, m.ColumnFormatCodes)
	case *pgproto3.ParameterStatus:
		return "ParameterStatus " + m.Name + "=" + m.Value
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
}

func equalStrings(t testing.TB, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("messages differ\ngot:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
