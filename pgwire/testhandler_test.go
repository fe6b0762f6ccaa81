package pgwire

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// testHandler is an in-memory Handler understanding a tiny language, one
// statement per ';'-separated part ("--" starts a comment):
//
//	SELECT n                  rows 1..n of (n int8, s text "row i")
//	SELECT e::type, …         one row echoing each e: $k (a parameter),
//	                          NULL, a number/true/false or a 'quoted' literal
//	TYPES                     a row of every type, then a row of NULLs
//	FAIL code                 an error with that SQLSTATE (and detail, hint,
//	                          position 6)
//	FAILNEXT                  two rows, then error 22012 from Next
//	SLEEP                     blocks until its context is cancelled
//	STREAM                    one row, then blocks like SLEEP
//	BEGIN, COMMIT, ROLLBACK   transaction status
//	NOTICE                    a notice, tag DO
//	COPY n                    n rows as COPY TO STDOUT data
//	COPYIN                    COPY FROM STDIN: the data is kept (copied),
//	                          tag COPY <lines>; a line "bad" fails 22P02
//	PANIC, PANICNEXT          panics in Execute / in Next after a row
//	SET name = value          a ParameterStatus change, tag SET
//	BENCH n                   n rows of (int8, text, float8), allocation-free
//	INSERT                    no rows, tag INSERT 0 1
//
// NewSession panics (with panicSecret in the value) for the user
// panicUser.
type testHandler struct {
	sleepStarted chan struct{} // a SLEEP/STREAM began blocking
	sleepEnded   chan error    // the cause its context was cancelled with

	failSession error // NewSession fails with it when set

	mu       sync.Mutex
	sessions []SessionParams
	executed []string // statements executed, in order
	copied   []string // the data of each COPYIN that reached its end

	openSessions atomic.Int64
	openResults  atomic.Int64 // Execute results not yet Closed
	doubleClose  atomic.Int64 // Result.Close calls beyond the first
}

func newTestHandler() *testHandler {
	return &testHandler{sleepStarted: make(chan struct{}, 64), sleepEnded: make(chan error, 64)}
}

// panicUser is the user whose NewSession panics; panicSecret is in the
// panic's value, so that a test can check it never reaches the client.
const (
	panicUser   = "panic-in-new-session"
	panicSecret = "secret-panic-value"
)

func (h *testHandler) NewSession(ctx context.Context, p SessionParams) (Session, error) {
	if p.User == panicUser {
		panic("NewSession: " + panicSecret)
	}
	if h.failSession != nil {
		return nil, h.failSession
	}
	h.mu.Lock()
	h.sessions = append(h.sessions, p)
	h.mu.Unlock()
	h.openSessions.Add(1)
	return &testSession{h: h, tx: 'I'}, nil
}

func (h *testHandler) executedStatements() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.executed...)
}

type testSession struct {
	h       *testHandler
	tx      byte
	changes []Parameter
	closed  bool
}

func (s *testSession) TxStatus() byte { return s.tx }

func (s *testSession) FailTx() {
	if s.tx == 'T' {
		s.tx = 'E'
	}
}

func (s *testSession) ParameterChanges() []Parameter {
	c := s.changes
	s.changes = nil
	return c
}

func (s *testSession) Close() {
	if !s.closed {
		s.closed = true
		s.h.openSessions.Add(-1)
	}
}

type stmtText struct {
	text   string
	offset int // byte offset in the query string
}

// splitStatements splits on ';' outside quotes and drops comments.
func splitStatements(sql string) []stmtText {
	var out []stmtText
	var cur strings.Builder
	start, inQuote := -1, false
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, stmtText{text: t, offset: start})
		}
		cur.Reset()
		start = -1
	}
	for i := 0; i < len(sql); i++ {
		ch := sql[i]
		switch {
		case inQuote:
			if ch == '\'' {
				inQuote = false
			}
		case ch == '\'':
			inQuote = true
		case ch == ';':
			flush()
			continue
		case ch == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			continue
		}
		if start < 0 && ch != ' ' && ch != '\t' && ch != '\n' {
			start = i
		}
		cur.WriteByte(ch)
	}
	flush()
	return out
}

func (s *testSession) Parse(ctx context.Context, sql string) ([]Statement, error) {
	var out []Statement
	for _, p := range splitStatements(sql) {
		st, err := s.prepare(p, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (s *testSession) Prepare(ctx context.Context, sql string, paramOIDs []uint32) (Statement, error) {
	parts := splitStatements(sql)
	switch len(parts) {
	case 0:
		return nil, nil
	case 1:
		return s.prepare(parts[0], paramOIDs)
	}
	return nil, pgerror.New(pgerror.SyntaxError, "cannot insert multiple commands into a prepared statement")
}

type testStmt struct {
	s      *testSession
	text   string
	kind   string
	n      int
	code   string
	params []types.Type
	cols   []Column
	echo   []echoItem
	set    Parameter
}

type echoItem struct {
	param int // 1-based, or 0 for a literal
	value types.Value
}

func (st *testStmt) ParamTypes() []types.Type { return st.params }
func (st *testStmt) Columns() []Column        { return st.cols }

var (
	genCols   = []Column{{Name: "n", Type: types.Int8, TableOID: 16384, AttNum: 1}, {Name: "s", Type: types.Text, TableOID: 16384, AttNum: 2}}
	benchCols = []Column{{Name: "id", Type: types.Int8}, {Name: "name", Type: types.Text}, {Name: "score", Type: types.Float8}}
	copyCols  = []Column{{Name: "id", Type: types.Int8}, {Name: "s", Type: types.Text}, {Name: "x", Type: types.Text}}
)

// typesRow lists every type with a value in PostgreSQL's text form.
var typesRow = []struct {
	name string
	t    types.Type
	text string
}{
	{"bool", types.Bool, "t"},
	{"int2", types.Int2, "-32768"},
	{"int4", types.Int4, "2147483647"},
	{"int8", types.Int8, "-9223372036854775808"},
	{"float4", types.Float4, "1.5"},
	{"float8", types.Float8, "-0.1"},
	{"numeric", types.Numeric, "-1234567890.0123456789"},
	{"text", types.Text, "héllo\tworld"},
	{"varchar", types.Varchar, "vc"},
	{"bytea", types.Bytea, `\x0001ff`},
	{"date", types.Date, "2024-02-29"},
	{"timestamp", types.Timestamp, "2024-02-29 12:34:56.789012"},
	{"timestamptz", types.TimestampTZ, "2024-02-29 12:34:56.789012+00"},
	{"interval", types.Interval, "1 year 2 mons 3 days 04:05:06.789"},
	{"jsonb", types.JSONB, `{"a": [1, 2.5, "x"], "b": null}`},
}

func (s *testSession) prepare(p stmtText, oids []uint32) (Statement, error) {
	fields := strings.Fields(p.text)
	st := &testStmt{s: s, text: p.text, kind: strings.ToUpper(fields[0])}
	arg := strings.TrimSpace(p.text[len(fields[0]):])
	atoi := func() error {
		n, err := strconv.Atoi(arg)
		if err != nil {
			return &pgerror.Error{Code: pgerror.SyntaxError, Message: fmt.Sprintf("syntax error at or near %q", arg), Position: p.offset + len(fields[0]) + 2}
		}
		st.n = n
		return nil
	}
	switch st.kind {
	case "SELECT":
		if n, err := strconv.Atoi(arg); err == nil {
			st.kind, st.n, st.cols = "GEN", n, genCols
			break
		}
		st.kind = "ECHO"
		if err := st.parseEcho(arg, oids); err != nil {
			return nil, err
		}
	case "TYPES":
		for _, c := range typesRow {
			st.cols = append(st.cols, Column{Name: c.name, Type: c.t})
		}
	case "FAIL":
		if len(fields) != 2 {
			return nil, pgerror.New(pgerror.SyntaxError, "FAIL needs a code")
		}
		st.code = fields[1]
	case "FAILNEXT", "STREAM", "PANICNEXT":
		st.cols = genCols
	case "SLEEP", "BEGIN", "COMMIT", "ROLLBACK", "NOTICE", "PANIC", "INSERT", "COPYIN":
	case "COPY":
		if err := atoi(); err != nil {
			return nil, err
		}
		st.cols = copyCols
	case "BENCH":
		if err := atoi(); err != nil {
			return nil, err
		}
		st.cols = benchCols
	case "SET":
		name, value, ok := strings.Cut(arg, "=")
		if !ok {
			return nil, pgerror.New(pgerror.SyntaxError, "SET needs name = value")
		}
		st.set = Parameter{strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), "'")}
	default:
		return nil, &pgerror.Error{Code: pgerror.SyntaxError, Message: fmt.Sprintf("syntax error at or near %q", fields[0]), Position: p.offset + 1}
	}
	return st, nil
}

// parseEcho parses "e::type, …".
func (st *testStmt) parseEcho(list string, oids []uint32) error {
	for _, item := range splitTopLevel(list) {
		expr, typeName := item, ""
		if i := strings.LastIndex(item, "::"); i >= 0 {
			expr, typeName = strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+2:])
		}
		t := types.Text
		if typeName != "" {
			var err error
			if t, err = types.Parse(typeName); err != nil {
				return err
			}
		}
		name := strings.ToLower(typeName)
		if name == "" {
			name = "?column?"
		}
		var it echoItem
		switch {
		case strings.HasPrefix(expr, "$"):
			k, err := strconv.Atoi(expr[1:])
			if err != nil || k < 1 {
				return pgerror.New(pgerror.SyntaxError, "bad parameter %q", expr)
			}
			it.param = k
			for len(st.params) < k {
				st.params = append(st.params, types.Null)
			}
			if typeName == "" && k <= len(oids) {
				if dt, ok := types.ByOID(oids[k-1]); ok {
					t = dt
				}
			}
			st.params[k-1] = t
		case strings.EqualFold(expr, "null"):
			it.value = types.NullValue
		default:
			lit := expr
			if strings.HasPrefix(lit, "'") && strings.HasSuffix(lit, "'") && len(lit) >= 2 {
				lit = strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
			}
			v, err := types.ParseText(t, lit)
			if err != nil {
				return err
			}
			it.value = v
		}
		st.echo = append(st.echo, it)
		st.cols = append(st.cols, Column{Name: name, Type: t})
	}
	for i, t := range st.params {
		if t == types.Null { // unreferenced: as PostgreSQL, take the declared type or text
			st.params[i] = types.Text
			if i < len(oids) {
				if dt, ok := types.ByOID(oids[i]); ok {
					st.params[i] = dt
				}
			}
		}
	}
	return nil
}

// splitTopLevel splits on commas outside quotes.
func splitTopLevel(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

func (st *testStmt) Execute(ctx context.Context, params []types.Value) (Result, error) {
	s := st.s
	s.h.mu.Lock()
	s.h.executed = append(s.h.executed, st.text)
	s.h.mu.Unlock()
	if s.tx == 'E' && st.kind != "COMMIT" && st.kind != "ROLLBACK" {
		return nil, pgerror.New(pgerror.InvalidTransactionState, "current transaction is aborted, commands ignored until end of transaction block")
	}
	r := &testResult{h: s.h}
	switch st.kind {
	case "GEN":
		n := st.n
		r.tag = fmt.Sprintf("SELECT %d", n)
		i := 0
		r.next = func(ctx context.Context) (types.Row, error) {
			if i >= n {
				return nil, io.EOF
			}
			i++
			return types.Row{types.NewInt8(int64(i)), types.NewText(fmt.Sprintf("row %d", i))}, nil
		}
	case "ECHO":
		row := make(types.Row, len(st.echo))
		for i, it := range st.echo {
			if it.param > 0 {
				if it.param > len(params) {
					return nil, pgerror.New(pgerror.UndefinedParameter, "there is no parameter $%d", it.param)
				}
				row[i] = params[it.param-1]
			} else {
				row[i] = it.value
			}
		}
		r.rows, r.tag = []types.Row{row}, "SELECT 1"
	case "TYPES":
		vals := make(types.Row, len(typesRow))
		for i, c := range typesRow {
			v, err := types.ParseText(c.t, c.text)
			if err != nil {
				panic(err)
			}
			vals[i] = v
		}
		r.rows, r.tag = []types.Row{vals, make(types.Row, len(typesRow))}, "SELECT 2"
	case "FAIL":
		return nil, &pgerror.Error{Code: pgerror.MakeCode(st.code), Message: "failed on purpose: " + st.code, Detail: "some detail", Hint: "some hint", Position: 6}
	case "FAILNEXT":
		i := 0
		r.next = func(ctx context.Context) (types.Row, error) {
			if i == 2 {
				return nil, pgerror.New(pgerror.DivisionByZero, "division by zero")
			}
			i++
			return types.Row{types.NewInt8(int64(i)), types.NewText("x")}, nil
		}
	case "SLEEP", "STREAM":
		sent := st.kind == "SLEEP"
		r.next = func(ctx context.Context) (types.Row, error) {
			if !sent {
				sent = true
				return types.Row{types.NewInt8(1), types.NewText("first")}, nil
			}
			select {
			case s.h.sleepStarted <- struct{}{}:
			default:
			}
			<-ctx.Done()
			select {
			case s.h.sleepEnded <- context.Cause(ctx):
			default:
			}
			return nil, ctx.Err()
		}
		r.tag = "SELECT 1"
	case "BEGIN":
		s.tx, r.tag = 'T', "BEGIN"
	case "COMMIT":
		r.tag = "COMMIT"
		if s.tx == 'E' {
			r.tag = "ROLLBACK"
		}
		s.tx = 'I'
	case "ROLLBACK":
		s.tx, r.tag = 'I', "ROLLBACK"
	case "NOTICE":
		r.notices, r.tag = []string{"hello notice"}, "DO"
	case "COPY":
		r.tag = fmt.Sprintf("COPY %d", st.n)
		for i := 1; i <= st.n; i++ {
			r.rows = append(r.rows, types.Row{types.NewInt8(int64(i)), types.NewText("a\tb\\c\nd\re"), types.NullValue})
		}
		s.h.openResults.Add(1)
		return &testCopyOut{testResult: r, enc: types.NewCopyEncoder(types.DefaultCopyOptions(types.CopyText), nil)}, nil
	case "COPYIN":
		s.h.openResults.Add(1)
		return &testCopyIn{testResult: r}, nil
	case "PANIC":
		panic("boom in Execute")
	case "PANICNEXT":
		i := 0
		r.next = func(ctx context.Context) (types.Row, error) {
			if i == 1 {
				panic("boom in Next")
			}
			i++
			return types.Row{types.NewInt8(1), types.NewText("x")}, nil
		}
	case "SET":
		s.changes = append(s.changes, st.set)
		r.tag = "SET"
	case "BENCH":
		n := st.n
		r.tag = fmt.Sprintf("SELECT %d", n)
		row := make(types.Row, 3)
		i := 0
		r.next = func(ctx context.Context) (types.Row, error) {
			if i >= n {
				return nil, io.EOF
			}
			if i&1023 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			i++
			row[0] = types.NewInt8(int64(i))
			row[1] = types.NewText(benchNames[i&(len(benchNames)-1)])
			row[2] = types.NewFloat8(float64(i) * 0.25)
			return row, nil
		}
	case "INSERT":
		r.tag = "INSERT 0 1"
	default:
		return nil, pgerror.New(pgerror.Internal, "unknown kind %s", st.kind)
	}
	s.h.openResults.Add(1)
	return r, nil
}

var benchNames = func() []string {
	out := make([]string, 1024)
	for i := range out {
		out[i] = fmt.Sprintf("name-%04d", i)
	}
	return out
}()

// testResult serves rows from next, or else from rows.
type testResult struct {
	h       *testHandler
	rows    []types.Row
	i       int
	next    func(ctx context.Context) (types.Row, error)
	tag     string
	notices []string
	closed  bool
}

func (r *testResult) Next(ctx context.Context) (types.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.next != nil {
		return r.next(ctx)
	}
	if r.i >= len(r.rows) {
		return nil, io.EOF
	}
	r.i++
	return r.rows[r.i-1], nil
}

func (r *testResult) Tag() string       { return r.tag }
func (r *testResult) Notices() []string { return r.notices }

func (r *testResult) Close() {
	if r.closed {
		r.h.doubleClose.Add(1)
		return
	}
	r.closed = true
	r.h.openResults.Add(-1)
}

// testCopyOut encodes its rows in COPY's text format.
type testCopyOut struct {
	*testResult
	enc *types.CopyEncoder
}

func (r *testCopyOut) CopyOutFormat() (int16, int) { return 0, len(copyCols) }

func (r *testCopyOut) NextCopyData(ctx context.Context, buf []byte) ([]byte, error) {
	row, err := r.Next(ctx)
	if err != nil {
		return buf, err
	}
	return r.enc.AppendRow(buf, row)
}

// testCopyIn reads COPY FROM STDIN data.
type testCopyIn struct {
	*testResult
	data []byte
}

func (r *testCopyIn) CopyInFormat() (int16, int) { return 0, 1 }

func (r *testCopyIn) CopyIn(ctx context.Context, in io.Reader) error {
	data, err := io.ReadAll(in)
	r.data = data
	if err != nil {
		return err
	}
	r.h.mu.Lock()
	r.h.copied = append(r.h.copied, string(data))
	r.h.mu.Unlock()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, l := range lines {
		if l == "bad" {
			return pgerror.New(pgerror.InvalidTextRepresentation, "bad line")
		}
	}
	r.tag = fmt.Sprintf("COPY %d", len(lines))
	return nil
}
