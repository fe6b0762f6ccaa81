package pgwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
)

func TestStartupParameters(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{ServerVersion: "15.0 (fvsql test)"}, h)
	c := dialRaw(t, addr)
	c.startup(map[string]string{"user": "alice", "database": "db1", "application_name": "app1", "extra_float_digits": "3"})
	want := map[string]string{
		"server_version":              "15.0 (fvsql test)",
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"IntervalStyle":               "postgres",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"TimeZone":                    "UTC",
		"application_name":            "app1",
		"is_superuser":                "on",
		"session_authorization":       "alice",
	}
	for k, v := range want {
		if c.params[k] != v {
			t.Errorf("parameter %s = %q, want %q", k, c.params[k], v)
		}
	}
	if c.pid == 0 {
		t.Error("no BackendKeyData")
	}
	h.mu.Lock()
	sp := h.sessions[0]
	h.mu.Unlock()
	if sp.User != "alice" || sp.Database != "db1" || sp.ApplicationName != "app1" || sp.Options["extra_float_digits"] != "3" {
		t.Errorf("session params = %+v", sp)
	}
	// The database defaults to the user.
	c2 := dialRaw(t, addr)
	c2.startup(map[string]string{"user": "bob"})
	h.mu.Lock()
	sp = h.sessions[1]
	h.mu.Unlock()
	if sp.Database != "bob" {
		t.Errorf("database = %q, want bob", sp.Database)
	}
	// Distinct connections get distinct keys.
	if c.pid == c2.pid {
		t.Errorf("two connections share pid %d", c.pid)
	}
}

func TestSSLAndGSSRequestRefused(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialRaw(t, addr)
	for _, code := range []uint32{gssEncRequestCode, sslRequestCode} {
		var pkt [8]byte
		binary.BigEndian.PutUint32(pkt[:], 8)
		binary.BigEndian.PutUint32(pkt[4:], code)
		if _, err := c.nc.Write(pkt[:]); err != nil {
			t.Fatal(err)
		}
		var resp [1]byte
		if _, err := io.ReadFull(c.nc, resp[:]); err != nil {
			t.Fatal(err)
		}
		if resp[0] != 'N' {
			t.Fatalf("answer to %d = %q, want N", code, resp[0])
		}
	}
	c.startup(nil)
	c.send(&pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: 2 << 16, Parameters: map[string]string{"user": "x"}})
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Code != pgerror.FeatureNotSupported.String() || e.Severity != "FATAL" {
		t.Fatalf("got %s, want FATAL 0A000", describe(m))
	}
	c.expectClosed()
}

func TestNegotiateProtocolVersion(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialRaw(t, addr)
	// A 3.2 startup with a protocol option, encoded by hand.
	body := binary.BigEndian.AppendUint32(nil, 3<<16|2)
	for _, s := range []string{"user", "fvsql", "_pq_.future", "1"} {
		body = append(append(body, s...), 0)
	}
	body = append(body, 0)
	pkt := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	if _, err := c.nc.Write(append(pkt, body...)); err != nil {
		t.Fatal(err)
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if hdr[0] != 'v' {
		t.Fatalf("got message %q, want NegotiateProtocolVersion", hdr[0])
	}
	rest := make([]byte, binary.BigEndian.Uint32(hdr[1:])-4)
	if _, err := io.ReadFull(c.nc, rest); err != nil {
		t.Fatal(err)
	}
	if minor := binary.BigEndian.Uint32(rest); minor != 0 {
		t.Errorf("newest minor = %d", minor)
	}
	if n := binary.BigEndian.Uint32(rest[4:]); n != 1 || string(rest[8:len(rest)-1]) != "_pq_.future" {
		t.Errorf("options = %q", rest[4:])
	}
	if _, ok := c.recv().(*pgproto3.AuthenticationOk); !ok {
		t.Fatal("no AuthenticationOk after negotiation")
	}
}

func TestGarbageFirstPacket(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	for _, garbage := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",    // a length of 1 GiB
		"\x00\x00\x00\x02",                     // too short
		"\x00\x00\x00\x08\x12\x34\x56\x78",     // unknown code
		"\x00\x00\x00\x10\x04\xd2\x16\x2e\x00", // truncated CancelRequest
		"\x00\x00\x00\x09\x00\x03\x00\x00\x41", // startup without terminator
	} {
		c := dialRaw(t, addr)
		if _, err := c.nc.Write([]byte(garbage)); err != nil {
			t.Fatal(err)
		}
		if tcp, ok := c.nc.(*net.TCPConn); ok {
			tcp.CloseWrite() // so that a server waiting for more sees EOF
		}
		c.expectClosed()
	}
	// The server keeps serving.
	conn := connectPgx(t, addr, "")
	var n int64
	if err := conn.QueryRow(testCtx(t), "SELECT 1").Scan(&n, new(string)); err != nil || n != 1 {
		t.Fatalf("after garbage: %v %d", err, n)
	}
}

func TestGarbageAfterStartup(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	other := dialStarted(t, addr)
	c := dialStarted(t, addr)
	if _, err := c.nc.Write([]byte("\x01\x02\x03\x04\x05\x06\x07\x08garbage")); err != nil {
		t.Fatal(err)
	}
	if m, ok := c.recv().(*pgproto3.ErrorResponse); !ok || m.Code != pgerror.ProtocolViolation.String() || m.Severity != "FATAL" {
		t.Fatalf("want FATAL 08P01, got %v", m)
	}
	c.expectClosed()
	other.send(&pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, other.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})
}

func TestOversizedMessage(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{MaxMessageSize: 1024}, h)
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "SELECT 1 -- " + strings.Repeat("x", 2000)})
	if m, ok := c.recv().(*pgproto3.ErrorResponse); !ok || m.Code != pgerror.ProtocolViolation.String() {
		t.Fatalf("want 08P01, got %v", m)
	}
	c.expectClosed()

	// A declared length of 2 GiB on the default limit is refused from the
	// header alone, before any allocation or read of the body.
	_, addr2 := startServer(t, Config{}, newTestHandler())
	c = dialStarted(t, addr2)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := c.nc.Write([]byte{'Q', 0x7f, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if m, ok := c.recv().(*pgproto3.ErrorResponse); !ok || m.Code != pgerror.ProtocolViolation.String() || m.Message != "invalid message length" {
		t.Fatalf("want 08P01 invalid message length, got %v", m)
	}
	c.expectClosed()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("%d bytes allocated for a refused message", grew)
	}
	// Messages below the limit are fine.
	c = dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "SELECT 1 -- " + strings.Repeat("x", 900)})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})
}

func TestMalformedMessages(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	for name, raw := range map[string][]byte{
		// Bind whose parameter length is -2: pgproto3's decoder panics on it.
		"bind": append([]byte{'B', 0, 0, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe}, 0, 0, 0, 0),
		// A message type that does not exist.
		"type": {'z', 0, 0, 0, 4},
		// A negative length.
		"length": {'Q', 0, 0, 0, 2},
		// (A Query without its terminating NUL is an ERROR, the connection
		// going on: TestQueryWithNUL.)
	} {
		t.Run(name, func(t *testing.T) {
			c := dialStarted(t, addr)
			if _, err := c.nc.Write(raw); err != nil {
				t.Fatal(err)
			}
			m := c.recv()
			if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Code != pgerror.ProtocolViolation.String() || e.Severity != "FATAL" {
				t.Fatalf("want FATAL 08P01, got %s", describe(m))
			}
			c.expectClosed()
		})
	}
}

func TestSimpleQueryMultipleStatements(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "SELECT 2; FAIL 22012; SELECT 3"})
	equalStrings(t, c.until(1), []string{
		"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "DataRow 2|row 2", "CommandComplete SELECT 2",
		"Error ERROR 22012",
		"ReadyForQuery I",
	})
	for _, s := range h.executedStatements() {
		if s == "SELECT 3" {
			t.Error("the statement after the error ran")
		}
	}
	// In a transaction block the error fails the transaction.
	c.send(&pgproto3.Query{String: "BEGIN; SELECT 1; FAIL 42P01"})
	equalStrings(t, c.until(1), []string{
		"CommandComplete BEGIN",
		"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1",
		"Error ERROR 42P01",
		"ReadyForQuery E",
	})
	c.send(&pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, c.until(1), []string{"Error ERROR 25000", "ReadyForQuery E"})
	c.send(&pgproto3.Query{String: "ROLLBACK"})
	equalStrings(t, c.until(1), []string{"CommandComplete ROLLBACK", "ReadyForQuery I"})
	// Parse errors carry their position.
	c.send(&pgproto3.Query{String: "SELECT 1; BOGUS"})
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Code != pgerror.SyntaxError.String() || e.Position != 11 {
		t.Fatalf("want 42601 at 11, got %+v", m)
	}
	equalStrings(t, c.until(1), []string{"ReadyForQuery I"})
	// Errors in Next after some rows.
	c.send(&pgproto3.Query{String: "FAILNEXT"})
	equalStrings(t, c.until(1), []string{
		"RowDescription n:20:0,s:25:0", "DataRow 1|x", "DataRow 2|x", "Error ERROR 22012", "ReadyForQuery I",
	})
}

func TestEmptyQuery(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: ""})
	equalStrings(t, c.until(1), []string{"EmptyQueryResponse", "ReadyForQuery I"})
	c.send(&pgproto3.Query{String: " ; -- only a comment\n ;"})
	equalStrings(t, c.until(1), []string{"EmptyQueryResponse", "ReadyForQuery I"})
	c.send(
		&pgproto3.Parse{Query: "-- nothing"},
		&pgproto3.Describe{ObjectType: 'S'},
		&pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(1), []string{
		"ParseComplete", "ParameterDescription []", "NoData", "BindComplete", "NoData", "EmptyQueryResponse", "ReadyForQuery I",
	})
}

func TestExtendedRowLimit(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	c.send(
		&pgproto3.Parse{Name: "s5", Query: "SELECT 5"},
		&pgproto3.Bind{PreparedStatement: "s5"},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2}, // completed: no rows, SELECT 0
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(1), []string{
		"ParseComplete", "BindComplete",
		"DataRow 1|row 1", "DataRow 2|row 2", "PortalSuspended",
		"DataRow 3|row 3", "DataRow 4|row 4", "PortalSuspended",
		"DataRow 5|row 5", "CommandComplete SELECT 1",
		"CommandComplete SELECT 0",
		"ReadyForQuery I",
	})
	// An exact multiple of the limit: the last Execute finds the end.
	c.send(
		&pgproto3.Parse{Query: "SELECT 4"},
		&pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(1), []string{
		"ParseComplete", "BindComplete",
		"DataRow 1|row 1", "DataRow 2|row 2", "PortalSuspended",
		"DataRow 3|row 3", "DataRow 4|row 4", "PortalSuspended",
		"CommandComplete SELECT 0",
		"ReadyForQuery I",
	})
	// A suspended portal is continued across Sync inside a transaction
	// block, and destroyed at Sync outside one.
	c.send(
		&pgproto3.Query{String: "BEGIN"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s5"},
		&pgproto3.Execute{Portal: "p", MaxRows: 3},
		&pgproto3.Sync{},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
		&pgproto3.Query{String: "COMMIT"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s5"},
		&pgproto3.Execute{Portal: "p", MaxRows: 1},
		&pgproto3.Sync{},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(6), []string{
		"CommandComplete BEGIN", "ReadyForQuery T",
		"BindComplete", "DataRow 1|row 1", "DataRow 2|row 2", "DataRow 3|row 3", "PortalSuspended", "ReadyForQuery T",
		"DataRow 4|row 4", "DataRow 5|row 5", "CommandComplete SELECT 2", "ReadyForQuery T",
		"CommandComplete COMMIT", "ReadyForQuery I",
		"BindComplete", "DataRow 1|row 1", "PortalSuspended", "ReadyForQuery I",
		"Error ERROR 34000", "ReadyForQuery I",
	})
	// A completed command cannot run again.
	c.send(
		&pgproto3.Parse{Query: "INSERT"},
		&pgproto3.Bind{},
		&pgproto3.Execute{},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(1), []string{
		"ParseComplete", "BindComplete", "CommandComplete INSERT 0 1", "Error ERROR 55000", "ReadyForQuery I",
	})
}

func TestSkipToSync(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	c.send(
		&pgproto3.Parse{Query: "BOGUS"},
		&pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
		&pgproto3.Query{String: "SELECT 1"}, // ignored too while skipping
		&pgproto3.Sync{},
		&pgproto3.Parse{Query: "SELECT 1"},
		&pgproto3.Bind{},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(2), []string{
		"Error ERROR 42601", "ReadyForQuery I",
		"ParseComplete", "BindComplete", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I",
	})
	// An execution error in the middle of a batch.
	c.send(
		&pgproto3.Parse{Name: "a", Query: "SELECT 1"},
		&pgproto3.Parse{Name: "f", Query: "FAIL 22012"},
		&pgproto3.Bind{PreparedStatement: "f"},
		&pgproto3.Execute{},
		&pgproto3.Bind{PreparedStatement: "a"},
		&pgproto3.Execute{},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(1), []string{"ParseComplete", "ParseComplete", "BindComplete", "Error ERROR 22012", "ReadyForQuery I"})
	// Flush sends what is buffered without ending the batch.
	c.send(&pgproto3.Bind{PreparedStatement: "a"}, &pgproto3.Execute{}, &pgproto3.Flush{})
	for _, want := range []string{"BindComplete", "DataRow 1|row 1", "CommandComplete SELECT 1"} {
		if got := describe(c.recv()); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	c.send(&pgproto3.Sync{})
	equalStrings(t, c.until(1), []string{"ReadyForQuery I"})
}

func TestDescribe(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(
		&pgproto3.Parse{Name: "q", Query: "SELECT $1::int8, $2::text, $1::int8"},
		&pgproto3.Describe{ObjectType: 'S', Name: "q"},
		&pgproto3.Bind{PreparedStatement: "q", Parameters: [][]byte{[]byte("7"), []byte("x")}, ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Bind{DestinationPortal: "mixed", PreparedStatement: "q", Parameters: [][]byte{[]byte("7"), nil}, ResultFormatCodes: []int16{0, 1, 1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "mixed"},
		&pgproto3.Execute{Portal: "mixed"},
		&pgproto3.Parse{Name: "b", Query: "BEGIN"},
		&pgproto3.Describe{ObjectType: 'S', Name: "b"},
		&pgproto3.Describe{ObjectType: 'S', Name: "nope"},
		&pgproto3.Sync{},
		&pgproto3.Describe{ObjectType: 'P', Name: "nope"},
		&pgproto3.Sync{},
	)
	equalStrings(t, c.until(2), []string{
		"ParseComplete",
		"ParameterDescription [20 25]", "RowDescription int8:20:0,text:25:0,int8:20:0",
		"BindComplete", "RowDescription int8:20:1,text:25:1,int8:20:1",
		"BindComplete", "RowDescription int8:20:0,text:25:1,int8:20:1",
		"DataRow 7|NULL|\x00\x00\x00\x00\x00\x00\x00\x07", "CommandComplete SELECT 1",
		"ParseComplete", "ParameterDescription []", "NoData",
		"Error ERROR 26000", "ReadyForQuery I",
		"Error ERROR 34000", "ReadyForQuery I",
	})
}

func TestRowDescriptionFields(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{ResultFormatCodes: []int16{1, 0}}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Sync{})
	c.recv()
	c.recv()
	rd, ok := c.recv().(*pgproto3.RowDescription)
	if !ok {
		t.Fatal("no RowDescription")
	}
	want := []pgproto3.FieldDescription{
		{Name: []byte("n"), TableOID: 16384, TableAttributeNumber: 1, DataTypeOID: 20, DataTypeSize: 8, TypeModifier: -1, Format: 1},
		{Name: []byte("s"), TableOID: 16384, TableAttributeNumber: 2, DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1, Format: 0},
	}
	if fmt.Sprint(rd.Fields) != fmt.Sprint(want) {
		t.Errorf("fields = %+v\nwant %+v", rd.Fields, want)
	}
	c.until(1)
}

func TestBindFormatsAndErrors(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	i8 := binary.BigEndian.AppendUint64(nil, 42)
	c.send(&pgproto3.Parse{Name: "q", Query: "SELECT $1::int8, $2::int8"}, &pgproto3.Sync{})
	c.until(1)
	for _, tc := range []struct {
		name string
		bind pgproto3.Bind
		want []string
	}{
		{"text", pgproto3.Bind{Parameters: [][]byte{[]byte("1"), []byte("2")}},
			[]string{"BindComplete", "DataRow 1|2", "CommandComplete SELECT 1"}},
		{"one binary code for all", pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{i8, i8}},
			[]string{"BindComplete", "DataRow 42|42", "CommandComplete SELECT 1"}},
		{"a code each", pgproto3.Bind{ParameterFormatCodes: []int16{0, 1}, Parameters: [][]byte{[]byte("-5"), i8}},
			[]string{"BindComplete", "DataRow -5|42", "CommandComplete SELECT 1"}},
		{"null", pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{nil, i8}},
			[]string{"BindComplete", "DataRow NULL|42", "CommandComplete SELECT 1"}},
		{"too few parameters", pgproto3.Bind{Parameters: [][]byte{[]byte("1")}},
			[]string{"Error ERROR 08P01"}},
		{"format count mismatch", pgproto3.Bind{ParameterFormatCodes: []int16{0, 0, 0}, Parameters: [][]byte{i8, i8}},
			[]string{"Error ERROR 08P01"}},
		{"bad format code", pgproto3.Bind{ParameterFormatCodes: []int16{2}, Parameters: [][]byte{i8, i8}},
			[]string{"Error ERROR 22023"}},
		{"bad text value", pgproto3.Bind{Parameters: [][]byte{[]byte("x"), []byte("2")}},
			[]string{"Error ERROR 22P02"}},
		{"bad binary value", pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{1, 2, 3}, i8}},
			[]string{"Error ERROR 22P03"}},
		{"result format count mismatch", pgproto3.Bind{Parameters: [][]byte{[]byte("1"), []byte("2")}, ResultFormatCodes: []int16{0, 0, 0}},
			[]string{"Error ERROR 08P01"}},
		{"bad result format", pgproto3.Bind{Parameters: [][]byte{[]byte("1"), []byte("2")}, ResultFormatCodes: []int16{7}},
			[]string{"Error ERROR 22023"}},
		{"binary results", pgproto3.Bind{Parameters: [][]byte{[]byte("42"), []byte("42")}, ResultFormatCodes: []int16{1}},
			[]string{"BindComplete", "DataRow " + string(i8) + "|" + string(i8), "CommandComplete SELECT 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.bind
			b.PreparedStatement = "q"
			c.send(&b, &pgproto3.Execute{}, &pgproto3.Sync{})
			equalStrings(t, c.until(1), append(tc.want, "ReadyForQuery I"))
		})
	}
}

func TestCloseAndDuplicates(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(
		&pgproto3.Close{ObjectType: 'S', Name: "nope"},
		&pgproto3.Close{ObjectType: 'P', Name: "nope"},
		&pgproto3.Parse{Name: "a", Query: "SELECT 1"},
		&pgproto3.Parse{Query: "SELECT 1"},
		&pgproto3.Parse{Query: "SELECT 2"}, // the unnamed statement is replaced
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "a"},
		&pgproto3.Sync{},
		&pgproto3.Parse{Name: "a", Query: "SELECT 2"},
		&pgproto3.Sync{},
		&pgproto3.Query{String: "BEGIN"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "a"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "a"},
		&pgproto3.Sync{},
		&pgproto3.Query{String: "ROLLBACK"},
		&pgproto3.Close{ObjectType: 'S', Name: "a"},
		&pgproto3.Bind{PreparedStatement: "a"},
		&pgproto3.Sync{},
		&pgproto3.Parse{Name: "a", Query: "SELECT 3"},
		&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "a"},
		&pgproto3.Close{ObjectType: 'P', Name: "p"},
		&pgproto3.Execute{Portal: "p"},
		&pgproto3.Sync{},
		// A portal outlives the replacement of its unnamed statement, not
		// the Close of its named one.
		&pgproto3.Query{String: "BEGIN"},
		&pgproto3.Parse{Query: "SELECT 1"},
		&pgproto3.Bind{DestinationPortal: "q"},
		&pgproto3.Parse{Query: "SELECT 2"},
		&pgproto3.Execute{Portal: "q"},
		&pgproto3.Bind{DestinationPortal: "r", PreparedStatement: "a"},
		&pgproto3.Close{ObjectType: 'S', Name: "a"},
		&pgproto3.Execute{Portal: "r"},
		&pgproto3.Sync{},
		&pgproto3.Query{String: "ROLLBACK"},
	)
	equalStrings(t, c.until(10), []string{
		"CloseComplete", "CloseComplete", "ParseComplete", "ParseComplete", "ParseComplete", "BindComplete", "ReadyForQuery I",
		"Error ERROR 42P05", "ReadyForQuery I",
		"CommandComplete BEGIN", "ReadyForQuery T",
		"BindComplete", "Error ERROR 42P03", "ReadyForQuery E",
		"CommandComplete ROLLBACK", "ReadyForQuery I",
		"CloseComplete", "Error ERROR 26000", "ReadyForQuery I",
		"ParseComplete", "BindComplete", "CloseComplete", "Error ERROR 34000", "ReadyForQuery I",
		"CommandComplete BEGIN", "ReadyForQuery T",
		"ParseComplete", "BindComplete", "ParseComplete", "DataRow 1|row 1", "CommandComplete SELECT 1",
		"BindComplete", "CloseComplete", "Error ERROR 34000", "ReadyForQuery E",
		"CommandComplete ROLLBACK", "ReadyForQuery I",
	})
}

func TestCopyOut(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "COPY 2"})
	row := func(i string) string { return `CopyData "` + i + `\t` + `a\\tb\\\\c\\nd\\re\t\\N\n"` }
	equalStrings(t, c.until(1), []string{
		"CopyOutResponse 0 [0 0 0]", row("1"), row("2"), "CopyDone", "CommandComplete COPY 2", "ReadyForQuery I",
	})
	// The same through the extended protocol.
	c.send(&pgproto3.Parse{Query: "COPY 1"}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})
	equalStrings(t, c.until(1), []string{
		"ParseComplete", "BindComplete", "CopyOutResponse 0 [0 0 0]", row("1"), "CopyDone", "CommandComplete COPY 1", "ReadyForQuery I",
	})
}

// TestCopyIn is the COPY FROM STDIN message flow: CopyInResponse, the
// client's CopyData up to CopyDone (Flush and Sync ignored meanwhile),
// CommandComplete; CopyFail is 57014; a Handler error ends the copy at
// once and the client's remaining copy messages are dropped; another
// message during the copy is 08P01.
func TestCopyIn(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	copied := func() []string {
		h.mu.Lock()
		defer h.mu.Unlock()
		return append([]string(nil), h.copied...)
	}

	c.send(&pgproto3.Query{String: "COPYIN"})
	equalStrings(t, []string{describe(c.recv())}, []string{"CopyInResponse 0 [0]"})
	c.send(&pgproto3.CopyData{Data: []byte("a\nb")}, &pgproto3.Flush{}, &pgproto3.CopyData{Data: []byte("\nc\n")}, &pgproto3.CopyDone{})
	equalStrings(t, c.until(1), []string{"CommandComplete COPY 3", "ReadyForQuery I"})
	if got := copied(); len(got) != 1 || got[0] != "a\nb\nc\n" {
		t.Fatalf("copied %q", got)
	}

	c.send(&pgproto3.Query{String: "COPYIN"})
	c.send(&pgproto3.CopyData{Data: []byte("a\n")}, &pgproto3.CopyFail{Message: "client gave up"})
	equalStrings(t, c.until(1), []string{"CopyInResponse 0 [0]", "Error ERROR 57014", "ReadyForQuery I"})

	// A bad row ends the copy; what the client still sends is dropped.
	c.send(&pgproto3.Query{String: "COPYIN"})
	c.send(&pgproto3.CopyData{Data: []byte("bad\n")}, &pgproto3.CopyDone{})
	equalStrings(t, c.until(1), []string{"CopyInResponse 0 [0]", "Error ERROR 22P02", "ReadyForQuery I"})
	c.send(&pgproto3.CopyData{Data: []byte("late\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})

	// Extended protocol, as libpq runs it: Sync after Execute (ignored
	// during the copy) and again after CopyDone.
	c.send(&pgproto3.Parse{Query: "COPYIN"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.send(&pgproto3.CopyData{Data: []byte("x\n")}, &pgproto3.CopyDone{}, &pgproto3.Sync{})
	equalStrings(t, c.until(1), []string{"ParseComplete", "BindComplete", "CopyInResponse 0 [0]", "CommandComplete COPY 1", "ReadyForQuery I"})

	// An error in the extended protocol skips to Sync.
	c.send(&pgproto3.Parse{Query: "COPYIN"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	c.send(&pgproto3.CopyData{Data: []byte("bad\n")}, &pgproto3.CopyDone{}, &pgproto3.Sync{})
	equalStrings(t, c.until(1), []string{"ParseComplete", "BindComplete", "CopyInResponse 0 [0]", "Error ERROR 22P02", "ReadyForQuery I"})

	// Another message during the copy.
	c.send(&pgproto3.Query{String: "COPYIN"})
	c.send(&pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, c.until(1), []string{"CopyInResponse 0 [0]", "Error ERROR 08P01", "ReadyForQuery I"})
	if got := copied(); len(got) != 4 || got[2] != "x\n" { // the 08P01 copy never reached its end
		t.Fatalf("copied %q", got)
	}
}

func TestNoticesAndParameterChanges(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "NOTICE; SET application_name = 'x'"})
	equalStrings(t, c.until(1), []string{
		"Notice hello notice", "CommandComplete DO", "CommandComplete SET", "ParameterStatus application_name=x", "ReadyForQuery I",
	})
}

func TestPanicInHandler(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "PANIC"})
	equalStrings(t, c.until(1), []string{"Error ERROR XX000", "ReadyForQuery I"})
	c.send(&pgproto3.Query{String: "PANICNEXT"})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|x", "Error ERROR XX000", "ReadyForQuery I"})
	c.send(&pgproto3.Parse{Query: "PANICNEXT"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	equalStrings(t, c.until(1), []string{"ParseComplete", "BindComplete", "DataRow 1|x", "Error ERROR XX000", "ReadyForQuery I"})
	c.send(&pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})
}

func TestErrorResponseFields(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "FAIL 22012"})
	m, ok := c.recv().(*pgproto3.ErrorResponse)
	if !ok {
		t.Fatal("no ErrorResponse")
	}
	if m.Severity != "ERROR" || m.SeverityUnlocalized != "ERROR" || m.Code != "22012" || m.Message != "failed on purpose: 22012" ||
		m.Detail != "some detail" || m.Hint != "some hint" || m.Position != 6 {
		t.Errorf("fields = %+v", m)
	}
	c.until(1)
}

func TestCancelRequest(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "SLEEP"})
	<-h.sleepStarted

	cancelWith := func(pid, secret uint32) {
		cc := dialRaw(t, addr)
		cc.send(&pgproto3.CancelRequest{ProcessID: pid, SecretKey: secret})
		cc.expectClosed() // the server closes the cancel connection
	}
	// A wrong key cancels nothing.
	cancelWith(c.pid, c.secret+1)
	cancelWith(c.pid+1, c.secret)
	select {
	case err := <-h.sleepEnded:
		t.Fatalf("query cancelled by a wrong key: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancelWith(c.pid, c.secret)
	if err := <-h.sleepEnded; !errors.Is(err, errQueryCanceled) {
		t.Errorf("cause = %v", err)
	}
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Code != pgerror.QueryCanceled.String() || e.Message != "canceling statement due to user request" {
		t.Fatalf("want 57014, got %+v", m)
	}
	equalStrings(t, c.until(1), []string{"ReadyForQuery I"})
	// The connection goes on, and an idle cancel does nothing.
	cancelWith(c.pid, c.secret)
	c.send(&pgproto3.Query{String: "SELECT 1"})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})

	// An extended-protocol portal is cancelled the same way.
	c.send(&pgproto3.Parse{Query: "STREAM"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	<-h.sleepStarted
	cancelWith(c.pid, c.secret)
	equalStrings(t, c.until(1), []string{"ParseComplete", "BindComplete", "DataRow 1|first", "Error ERROR 57014", "ReadyForQuery I"})
	<-h.sleepEnded
}

func TestDisconnectCancelsQuery(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	c.send(&pgproto3.Query{String: "SLEEP"})
	<-h.sleepStarted
	c.nc.Close()
	select {
	case err := <-h.sleepEnded:
		if !errors.Is(err, errClientGone) {
			t.Errorf("cause = %v, want client gone", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("query not cancelled after the client disconnected")
	}
	waitFor(t, "session close", func() bool { return h.openSessions.Load() == 0 })
}

func TestDisconnectWithQueuedMessages(t *testing.T) {
	for _, terminate := range []bool{false, true} {
		h := newTestHandler()
		_, addr := startServer(t, Config{}, h)
		c := dialStarted(t, addr)
		c.send(&pgproto3.Query{String: "SLEEP"})
		<-h.sleepStarted
		// The reader goes on reading while SLEEP executes: these are queued.
		for i := 0; i < 100; i++ {
			c.send(&pgproto3.Query{String: "SELECT 1"})
		}
		if terminate {
			c.send(&pgproto3.Terminate{})
		}
		c.nc.Close()
		select {
		case err := <-h.sleepEnded:
			if !errors.Is(err, errClientGone) {
				t.Errorf("cause = %v", err)
			}
		case <-time.After(testTimeout):
			t.Fatalf("terminate=%v: query not cancelled", terminate)
		}
		waitFor(t, "session close", func() bool { return h.openSessions.Load() == 0 })
		for _, s := range h.executedStatements() {
			if s == "SELECT 1" {
				t.Errorf("terminate=%v: a queued statement ran after the client left", terminate)
				break
			}
		}
	}
}

func TestMsgQueueBudget(t *testing.T) {
	q := newMsgQueue(100)
	if !q.push(qitem{size: 500}) { // always admitted when empty
		t.Fatal("push into an empty queue failed")
	}
	pushed := make(chan bool)
	go func() { pushed <- q.push(qitem{size: 10}) }()
	select {
	case <-pushed:
		t.Fatal("push beyond the budget did not wait")
	case <-time.After(20 * time.Millisecond):
	}
	ctx := testCtx(t)
	if it, err := q.pop(ctx); err != nil || it.size != 500 {
		t.Fatal(it, err)
	}
	if !<-pushed {
		t.Fatal("push failed")
	}
	q.close()
	if it, err := q.pop(ctx); err != nil || it.size != 10 {
		t.Fatal("items queued before close are still delivered", it, err)
	}
	if _, err := q.pop(ctx); err != errQueueClosed {
		t.Fatal(err)
	}
	if q.push(qitem{}) {
		t.Fatal("push after close")
	}
}

func TestRetag(t *testing.T) {
	for tag, want := range map[string]string{
		"SELECT 5": "SELECT 7", "INSERT 0 5": "INSERT 0 7", "BEGIN": "BEGIN", "FETCH 10": "FETCH 7", "WEIRD x": "WEIRD x", "": "",
	} {
		if got := retag(tag, 7); got != want {
			t.Errorf("retag(%q) = %q, want %q", tag, got, want)
		}
	}
}

func TestTerminate(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, Config{}, h)
	c := dialStarted(t, addr)
	// Messages before Terminate are still answered.
	c.send(&pgproto3.Query{String: "SELECT 1"}, &pgproto3.Terminate{})
	equalStrings(t, c.until(1), []string{"RowDescription n:20:0,s:25:0", "DataRow 1|row 1", "CommandComplete SELECT 1", "ReadyForQuery I"})
	c.expectClosed()
	waitFor(t, "session close", func() bool { return h.openSessions.Load() == 0 })
}

func TestNewSessionError(t *testing.T) {
	h := newTestHandler()
	h.failSession = pgerror.New(pgerror.InvalidCatalogName, "database \"nope\" does not exist")
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "u"}})
	if _, ok := c.recv().(*pgproto3.AuthenticationOk); !ok {
		t.Fatal("want AuthenticationOk first")
	}
	m := c.recv()
	if e, ok := m.(*pgproto3.ErrorResponse); !ok || e.Code != "3D000" || e.Severity != "FATAL" {
		t.Fatalf("want FATAL 3D000, got %s", describe(m))
	}
	c.expectClosed()
}

func TestServerCloseEndsEverything(t *testing.T) {
	h := newTestHandler()
	s, err := NewServer(Config{Logger: testLogger()}, h)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	addr := ln.Addr().String()

	busy := dialStarted(t, addr)
	busy.send(&pgproto3.Query{String: "SLEEP"})
	<-h.sleepStarted
	idle := dialStarted(t, addr)
	half := dialRaw(t, addr) // connected, no startup packet yet
	stuck := dialStarted(t, addr)
	stuck.send(&pgproto3.Query{String: "BENCH 10000000"}) // never read by the client
	waitFor(t, "a server goroutine blocked writing", func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[IO wait") && strings.Contains(g, "pgwire.(*writer)") {
				return true
			}
		}
		return false
	})

	closed := make(chan struct{})
	closeStart := time.Now()
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(testTimeout):
		t.Fatal("Close did not return")
	}
	if d := time.Since(closeStart); d < shutdownWriteTimeout/2 {
		t.Errorf("Close took %v: the blocked writer was not waited for", d)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if err := <-h.sleepEnded; !errors.Is(err, errAdminShutdown) {
		t.Errorf("cause = %v", err)
	}
	for _, c := range []*rawClient{busy, idle} {
		var got []string
		for {
			m, err := c.fe.Receive()
			if err != nil {
				break
			}
			got = append(got, describe(m))
		}
		equalStrings(t, got, []string{"Error FATAL 57P01"})
	}
	half.expectClosed()
	// No goroutine of the server is left (a goroutine may still be
	// returning from its last deferred call when Close returns).
	var stacks string
	leftover := func() bool {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		for _, fn := range []string{"pgwire.(*conn)", "pgwire.(*Server).Serve", "pgwire.(*writer)"} {
			if strings.Contains(stacks, fn) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(time.Second); leftover(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server goroutines left after Close:\n%s", stacks)
		}
	}
	if n := h.openSessions.Load(); n != 0 {
		t.Errorf("%d sessions open after Close", n)
	}
	if n := h.openResults.Load(); n != 0 {
		t.Errorf("%d results open after Close", n)
	}
	if err := s.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Close = %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still accepting after Close")
	}
}
