package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
)

// FuzzWire feeds arbitrary bytes to a real server on 127.0.0.1 as one
// client's byte stream: startup packets, then messages. It checks that the
// server answers only well-formed backend messages, that every error it
// sends is an ErrorResponse with a 5-character SQLSTATE that is not XX000
// (pgwire turns its own panics into XX000), that the connection ends
// within a bound, that its goroutines and session end with it, and that
// the server stays up for the next connection.
//
// The input is followed by fuzzPadding zero bytes: they complete whatever
// packet or message the input left unfinished (fuzzMaxMessage bounds a
// declared length), after which a zero message type is a protocol
// violation. So every input ends with a FATAL the server sends after
// processing all the messages before it, in order, without the client
// having to guess when the server is done (a client that just closed its
// socket would cancel the connection at a random point of its messages).
//
// The seed corpus is testdata/fuzz/FuzzWire, written by TestWriteWireCorpus.
func FuzzWire(f *testing.F) {
	h := newTestHandler()
	srv, addr, served := startFuzzServer(f, h)
	f.Fuzz(func(t *testing.T, input []byte) {
		before := runtime.NumGoroutine()
		select {
		case err := <-served:
			t.Fatalf("the server stopped serving: %v", err)
		default:
		}
		out, err := wireExchange(addr, input)
		if err != nil {
			t.Fatalf("input %q: %v", input, err)
		}
		if err := checkBackendStream(out); err != nil {
			t.Fatalf("input %q: %v\nserver sent %q", input, err, out)
		}
		// The connection's goroutines and session end with it.
		deadline := time.Now().Add(fuzzBound)
		for {
			srv.mu.Lock()
			n := len(srv.conns)
			srv.mu.Unlock()
			if n == 0 && h.openSessions.Load() == 0 && h.openResults.Load() == 0 && runtime.NumGoroutine() <= before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("input %q: %s after the connection ended: %d connections, %d sessions, %d results open, %d goroutines (%d before)",
					input, fuzzBound, n, h.openSessions.Load(), h.openResults.Load(), runtime.NumGoroutine(), before)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

const (
	// fuzzMaxMessage is the server's Config.MaxMessageSize in FuzzWire:
	// small, so that the padding that completes any message stays small.
	fuzzMaxMessage = 4096
	// fuzzPadding completes a startup packet (at most maxStartupPacketLen
	// bytes) or a message (at most fuzzMaxMessage), and then holds a whole
	// zero message header.
	fuzzPadding = maxStartupPacketLen + 16
	// fuzzBound is how long one input may take: the connection must end
	// (the server's FATAL and close) within it.
	fuzzBound = 5 * time.Second
)

// startFuzzServer starts a server for FuzzWire's inputs, with a handler
// that keeps only the testHandler statements that end by themselves and
// fail with proper codes (see fuzzSession). served receives Serve's
// result if it returns before the end of the test.
func startFuzzServer(t testing.TB, h *testHandler) (s *Server, addr string, served chan error) {
	t.Helper()
	if fuzzMaxMessage+5 > fuzzPadding-5 {
		t.Fatal("fuzzPadding does not complete a message of fuzzMaxMessage bytes")
	}
	s, err := NewServer(Config{Logger: testLogger(), MaxMessageSize: fuzzMaxMessage, AuthTimeout: fuzzBound / 2}, fuzzHandler{h})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served = make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if n := h.doubleClose.Load(); n != 0 {
			t.Errorf("%d results closed twice", n)
		}
	})
	return s, ln.Addr().String(), served
}

// wireExchange sends input and the padding on a new connection and returns
// everything the server sent until it closed the connection. A reset
// connection counts as closed: the server closes its socket with the rest
// of the padding unread, which makes the kernel reset the connection, and
// the reset may discard some of what it sent last.
func wireExchange(addr string, input []byte) ([]byte, error) {
	nc, err := net.DialTimeout("tcp", addr, fuzzBound)
	if err != nil {
		return nil, fmt.Errorf("the server accepts no connection: %v", err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(fuzzBound))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// Write errors are expected: the server closes as soon as it has
		// read the message that ends the connection.
		if _, err := nc.Write(input); err == nil {
			_, _ = nc.Write(make([]byte, fuzzPadding))
		}
	}()
	defer func() { <-wrote }()
	var out bytes.Buffer
	_, err = io.Copy(&out, nc)
	switch {
	case err == nil, errors.Is(err, syscall.ECONNRESET):
		return out.Bytes(), nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("the connection did not end within %s (server sent %q)", fuzzBound, out.Bytes())
	}
	return nil, fmt.Errorf("reading the server's answer: %v", err)
}

// backendTypes are the message types a backend may send.
var backendTypes = []byte("123ACDEGHIKNRSTVWZcdnstv")

// checkBackendStream checks what a server sent on one connection: the
// answers to SSLRequest and GSSEncRequest (a bare 'N' each, before
// anything else), then well-framed messages of backend types; every
// ErrorResponse and NoticeResponse decodes, and every error has a SQLSTATE
// of five digits or upper-case letters that is not XX000.
func checkBackendStream(b []byte) error {
	// Up to two bare 'N's come first: a NoticeResponse never precedes
	// AuthenticationOk.
	for i := 0; i < 2 && len(b) > 0 && b[0] == 'N'; i++ {
		b = b[1:]
	}
	for len(b) > 0 {
		if len(b) < 5 {
			return nil // cut by the reset
		}
		typ, n := b[0], int(binary.BigEndian.Uint32(b[1:5]))
		if !bytes.ContainsRune(backendTypes, rune(typ)) {
			return fmt.Errorf("message of unknown type %q", typ)
		}
		if n < 4 {
			return fmt.Errorf("message %q with length %d", typ, n)
		}
		if n+1 > len(b) {
			return nil // cut by the reset
		}
		body := b[5 : n+1]
		b = b[n+1:]
		switch typ {
		case 'E':
			var m pgproto3.ErrorResponse
			if err := m.Decode(body); err != nil {
				return fmt.Errorf("undecodable ErrorResponse %q: %v", body, err)
			}
			if err := checkSQLSTATE(m.Code); err != nil {
				return fmt.Errorf("ErrorResponse %s %q: %v", m.Severity, m.Message, err)
			}
			if m.Severity != "ERROR" && m.Severity != "FATAL" {
				return fmt.Errorf("ErrorResponse with severity %q", m.Severity)
			}
		case 'N':
			var m pgproto3.NoticeResponse
			if err := m.Decode(body); err != nil {
				return fmt.Errorf("undecodable NoticeResponse %q: %v", body, err)
			}
		}
	}
	return nil
}

func checkSQLSTATE(code string) error {
	if len(code) != 5 || strings.Trim(code, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return fmt.Errorf("SQLSTATE %q is not five digits or upper-case letters", code)
	}
	if code == pgerror.Internal.String() {
		return fmt.Errorf("SQLSTATE %s: an internal error (a panic in pgwire)", code)
	}
	return nil
}

// fuzzHandler is the testHandler without what would make a fuzzed input
// wait for its bound or fail on purpose: SLEEP and STREAM block until the
// connection ends, PANIC, PANICNEXT and the panicking user panic (XX000),
// FAIL sends whatever code it is given, and large row counts take long.
// The fuzzer finds such statements in the seeds' text easily; what it
// would find with them is the handler's behaviour, not pgwire's.
type fuzzHandler struct{ *testHandler }

func (h fuzzHandler) NewSession(ctx context.Context, p SessionParams) (Session, error) {
	if p.User == panicUser {
		return nil, pgerror.New(pgerror.InvalidAuthorizationSpec, "role %q does not exist", p.User)
	}
	s, err := h.testHandler.NewSession(ctx, p)
	if err != nil {
		return nil, err
	}
	return fuzzSession{s.(*testSession)}, nil
}

type fuzzSession struct{ *testSession }

func (s fuzzSession) Parse(ctx context.Context, sql string) ([]Statement, error) {
	if err := fuzzRefused(sql); err != nil {
		return nil, err
	}
	return s.testSession.Parse(ctx, sql)
}

func (s fuzzSession) Prepare(ctx context.Context, sql string, paramOIDs []uint32) (Statement, error) {
	if err := fuzzRefused(sql); err != nil {
		return nil, err
	}
	return s.testSession.Prepare(ctx, sql, paramOIDs)
}

func fuzzRefused(sql string) error {
	for _, p := range splitStatements(sql) {
		fields := strings.Fields(p.text)
		kind := strings.ToUpper(fields[0])
		switch kind {
		case "SLEEP", "STREAM", "PANIC", "PANICNEXT", "FAIL":
			return pgerror.New(pgerror.SyntaxError, "%s is not fuzzed", kind)
		case "SELECT", "COPY", "BENCH":
			if n, err := strconv.Atoi(strings.TrimSpace(p.text[len(fields[0]):])); err == nil && n > 100 {
				return pgerror.New(pgerror.ProgramLimitExceeded, "%s of more than 100 rows is not fuzzed", kind)
			}
		}
	}
	return nil
}

// wireSeeds are FuzzWire's seed inputs: client byte streams that reach
// each part of the protocol, and some broken ones.
func wireSeeds() map[string][]byte {
	enc := func(msgs ...pgproto3.FrontendMessage) []byte {
		var b []byte
		for _, m := range msgs {
			var err error
			if b, err = m.Encode(b); err != nil {
				panic(err)
			}
		}
		return b
	}
	start := func(msgs ...pgproto3.FrontendMessage) []byte {
		return enc(append([]pgproto3.FrontendMessage{&pgproto3.StartupMessage{
			ProtocolVersion: pgproto3.ProtocolVersionNumber,
			Parameters:      map[string]string{"user": "fvsql", "database": "fvsql"},
		}}, msgs...)...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	u32 := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.BigEndian.AppendUint32(b, x)
		}
		return b
	}
	// packet is a startup packet: its length, then code and body.
	packet := func(code uint32, body string) []byte {
		return cat(u32(uint32(8+len(body)), code), []byte(body))
	}
	q := func(s string) *pgproto3.Query { return &pgproto3.Query{String: s} }
	return map[string][]byte{
		"empty":             nil,
		"startup only":      start(),
		"terminate":         start(&pgproto3.Terminate{}),
		"simple queries":    start(q("SELECT 3"), q("SELECT 1; SELECT 2"), q(""), q("-- nothing"), q("TYPES"), &pgproto3.Terminate{}),
		"echo":              start(q("SELECT 'x'::text, 42::int4, NULL, true::bool, '2024-02-29'::date"), q("SELECT 'nan'::float8, '1.5'::numeric")),
		"bad echo":          start(q("SELECT 'x'::int4"), q("SELECT 1::nosuchtype"), q("SELECT $0")),
		"transaction":       start(q("BEGIN"), q("SELECT 1"), q("garbage"), q("SELECT 1"), q("ROLLBACK"), q("COMMIT")),
		"notice copy set":   start(q("NOTICE"), q("COPY 3"), q("SET a = 'b'"), q("INSERT")),
		"failnext":          start(q("FAILNEXT")),
		"query with nul":    cat(start(), []byte{'Q', 0, 0, 0, 9, 'a', 0, 'b', 0, 0}, enc(q("SELECT 1"))),
		"query without nul": cat(start(), []byte{'Q', 0, 0, 0, 6, 'a', 'b'}, enc(q("SELECT 1"))),
		"extended": start(
			&pgproto3.Parse{Name: "s1", Query: "SELECT $1::int8, $2::text", ParameterOIDs: []uint32{20, 25}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
			&pgproto3.Bind{DestinationPortal: "p1", PreparedStatement: "s1", ParameterFormatCodes: []int16{0, 1},
				Parameters: [][]byte{[]byte("7"), []byte("hi")}, ResultFormatCodes: []int16{1}},
			&pgproto3.Describe{ObjectType: 'P', Name: "p1"},
			&pgproto3.Execute{Portal: "p1"},
			&pgproto3.Close{ObjectType: 'P', Name: "p1"},
			&pgproto3.Close{ObjectType: 'S', Name: "s1"},
			&pgproto3.Sync{}),
		"extended limits": start(
			&pgproto3.Parse{Query: "SELECT 5"},
			&pgproto3.Bind{},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Execute{MaxRows: 2},
			&pgproto3.Flush{},
			&pgproto3.Execute{},
			&pgproto3.Execute{},
			&pgproto3.Sync{}),
		"extended errors": start(
			&pgproto3.Parse{Name: "a", Query: "SELECT $1::int4"},
			&pgproto3.Parse{Name: "a", Query: "SELECT 1"},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "a", Parameters: [][]byte{[]byte("x")}},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "a", ParameterFormatCodes: []int16{1, 1, 1}, Parameters: [][]byte{{0, 0}}},
			&pgproto3.Sync{},
			&pgproto3.Bind{PreparedStatement: "nope"},
			&pgproto3.Execute{Portal: "nope"},
			&pgproto3.Describe{ObjectType: 'X'},
			&pgproto3.Sync{},
			&pgproto3.Parse{Query: "SELECT 1; SELECT 2"},
			&pgproto3.Sync{}),
		"binary params": start(
			&pgproto3.Parse{Query: "SELECT $1::int8, $2::float8, $3::bool, $4::timestamp, $5::numeric, $6::bytea"},
			&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{
				u32(0, 7), u32(0x3ff00000, 0), {1}, u32(0, 0), {0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, {0xff}}},
			&pgproto3.Execute{},
			&pgproto3.Sync{}),
		"copy messages":  start(&pgproto3.CopyData{Data: []byte("x")}, &pgproto3.CopyDone{}, &pgproto3.CopyFail{Message: "no"}, q("SELECT 1")),
		"function call":  start(&pgproto3.FunctionCall{Function: 1, ArgFormatCodes: []uint16{0}, Arguments: [][]byte{[]byte("1")}}),
		"password late":  start(&pgproto3.PasswordMessage{Password: "x"}),
		"bad type":       cat(start(), []byte{'@', 0, 0, 0, 4}),
		"short length":   cat(start(), []byte{'Q', 0, 0, 0, 2}),
		"huge length":    cat(start(), []byte{'Q', 0x7f, 0xff, 0xff, 0xff}),
		"negative bind":  cat(start(), []byte{'B', 0, 0, 0, 14, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf0}),
		"ssl then start": cat(packet(80877103, ""), start(q("SELECT 1"))),
		"gss ssl start":  cat(packet(80877104, ""), packet(80877103, ""), start(q("SELECT 1"))),
		"ssl twice":      cat(packet(80877103, ""), packet(80877103, "")),
		"cancel":         packet(80877102, "\x00\x00\x03\xe8\x00\x00\x00\x01"),
		"cancel short":   packet(80877102, "\x00\x00\x03\xe8"),
		"protocol 2":     packet(2<<16, "user\x00fvsql\x00\x00"),
		"protocol 3.1":   packet(3<<16|1, "user\x00fvsql\x00_pq_.x\x00y\x00\x00"),
		"no user":        packet(3<<16, "database\x00fvsql\x00\x00"),
		"no terminator":  packet(3<<16, "user\x00fvsql\x00a"),
		"after nul":      packet(3<<16, "user\x00fvsql\x00\x00junk"),
		"startup len":    u32(10001),
		"http":           []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
	}
}

// TestWriteWireCorpus writes wireSeeds into testdata/fuzz/FuzzWire when
// FVSQL_WRITE_FUZZ_CORPUS=1 (go test -run TestWriteWireCorpus ./pgwire),
// one file per seed, named after it, in the go fuzz corpus format.
func TestWriteWireCorpus(t *testing.T) {
	if os.Getenv("FVSQL_WRITE_FUZZ_CORPUS") != "1" {
		t.Skip("FVSQL_WRITE_FUZZ_CORPUS=1 writes testdata/fuzz/FuzzWire")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzWire")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range wireSeeds() {
		file := "seed-" + strings.ReplaceAll(name, " ", "-")
		data := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
