package server

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// flushTimeout bounds FLUSH: a pipeline that cannot catch up (its
// consumers are retrying) makes FLUSH fail with 57014 rather than hang.
const flushTimeout = 2 * time.Minute

// session is the state of one connection.
type session struct {
	srv      *Server
	user     string
	pid      uint32 // BackendKeyData's process id
	settings map[string]string
	reset    map[string]string // the settings as the session started: what RESET restores
	changed  map[string]bool
	tx       byte // 'I', 'T', 'E'
	// txw holds the writes of the transaction block until COMMIT
	// (txwrites.go); nil outside one.
	txw     *txWrites
	cursors map[string]*cursor
	ctx     context.Context // ends when the session closes
	cancel  context.CancelFunc
}

func newSession(srv *Server, p pgwire.SessionParams) *session {
	s := &session{srv: srv, user: p.User, pid: p.PID, settings: map[string]string{}, changed: map[string]bool{}, tx: 'I', cursors: map[string]*cursor{}}
	s.ctx, s.cancel = context.WithCancel(srv.ctx)
	for k, v := range defaultSettings {
		s.settings[k] = v
	}
	if p.ApplicationName != "" {
		s.settings["application_name"] = p.ApplicationName
	}
	apply := func(opts map[string]string) {
		for k, v := range opts {
			k = strings.ToLower(k)
			if _, ok := defaultSettings[k]; ok && !readOnly[k] && k != "application_name" {
				_ = s.set(k, v) // startup options apply like SET; bad ones are ignored, as clients send many
			}
		}
	}
	apply(p.Options)
	apply(startupOptions(p.Options["options"])) // -c name=value, as psql's PGOPTIONS sends
	s.reset = maps.Clone(s.settings)
	return s
}

// Parse implements pgwire.Session.
func (s *session) Parse(ctx context.Context, text string) ([]pgwire.Statement, error) {
	parsed, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	out := make([]pgwire.Statement, 0, len(parsed))
	for _, p := range parsed {
		out = append(out, &lazyStatement{s: s, p: p})
	}
	return out, nil
}

// Prepare implements pgwire.Session.
func (s *session) Prepare(ctx context.Context, text string, paramOIDs []uint32) (pgwire.Statement, error) {
	parsed, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	switch len(parsed) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, pgerror.New(pgerror.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	params := make([]types.Type, len(paramOIDs))
	for i, o := range paramOIDs {
		if o == 0 {
			params[i] = types.Unknown
			continue
		}
		t, ok := types.ByOID(o)
		if !ok {
			return nil, pgerror.New(pgerror.UndefinedObject, "type with OID %d is not supported", o)
		}
		params[i] = t
	}
	return s.plan(ctx, parsed[0], params)
}

// lazyStatement plans a simple-query statement only when it runs, after
// the statements before it, so that "CREATE STREAM s …; INSERT INTO s …"
// works in one message.
type lazyStatement struct {
	s    *session
	p    sql.Parsed
	plan *statement
}

func (l *lazyStatement) ParamTypes() []types.Type { return nil }

func (l *lazyStatement) Columns() []pgwire.Column {
	if l.plan == nil {
		return nil
	}
	return l.plan.cols
}

func (l *lazyStatement) Execute(ctx context.Context, params []types.Value) (pgwire.Result, error) {
	st, err := l.s.plan(ctx, l.p, nil)
	if err != nil {
		return nil, err
	}
	l.plan = st
	return st.Execute(ctx, params)
}

// TxStatus implements pgwire.Session.
func (s *session) TxStatus() byte { return s.tx }

// FailTx implements pgwire.Session.
func (s *session) FailTx() {
	if s.tx == 'T' {
		s.tx = 'E'
	}
}

// ParameterChanges implements pgwire.Session.
func (s *session) ParameterChanges() []pgwire.Parameter {
	var out []pgwire.Parameter
	for _, k := range sortedSettings(boolKeys(s.changed)) {
		out = append(out, pgwire.Parameter{Name: displayName(k), Value: s.settings[k]})
	}
	s.changed = map[string]bool{}
	return out
}

func boolKeys(m map[string]bool) map[string]string {
	out := map[string]string{}
	for k := range m {
		out[k] = ""
	}
	return out
}

// Close implements pgwire.Session.
func (s *session) Close() {
	for _, c := range s.cursors {
		c.close()
	}
	s.cursors = nil
	s.cancel()
}

// statement is a planned statement.
type statement struct {
	params []types.Type
	cols   []pgwire.Column
	exec   func(ctx context.Context, params []types.Value) (pgwire.Result, error)
}

func (st *statement) ParamTypes() []types.Type { return st.params }
func (st *statement) Columns() []pgwire.Column { return st.cols }
func (st *statement) Execute(ctx context.Context, params []types.Value) (pgwire.Result, error) {
	return st.exec(ctx, params)
}

// plan turns a parsed statement into an executable one.
func (s *session) plan(ctx context.Context, p sql.Parsed, params []types.Type) (*statement, error) {
	if s.tx == 'E' {
		if t, ok := p.Stmt.(*sql.Transaction); !ok || t.Kind == sql.TxBegin {
			return nil, pgerror.New(pgerror.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")
		}
	}
	switch st := p.Stmt.(type) {
	case *sql.Query:
		return s.planQuery(st, params)
	case *sql.Insert:
		return s.planInsert(st, params)
	case *sql.CreateStream:
		return s.command("CREATE STREAM", func(ctx context.Context) (pgwire.Result, error) {
			return s.srv.createStream(ctx, st)
		}), nil
	case *sql.Drop:
		return s.command("DROP "+strings.ToUpper(string(st.Kind)), func(ctx context.Context) (pgwire.Result, error) {
			return s.srv.drop(ctx, st)
		}), nil
	case *sql.Show:
		return s.planShow(st)
	case *sql.CreateFunction:
		return s.planCreateFunction(st, params)
	case *sql.DropFunction:
		return s.command("DROP FUNCTION", func(ctx context.Context) (pgwire.Result, error) {
			return s.srv.dropFunction(ctx, st)
		}), nil
	case *sql.Set:
		return s.command("SET", func(context.Context) (pgwire.Result, error) {
			return tagOnly("SET"), s.set(st.Name, st.Value)
		}), nil
	case *sql.Transaction:
		return s.command(strings.ToUpper(string(st.Kind)), func(ctx context.Context) (pgwire.Result, error) {
			return s.transaction(ctx, st)
		}), nil
	case *sql.Discard:
		tag := st.Tag
		if tag == "" {
			tag = "DISCARD ALL"
		}
		return s.command(tag, func(context.Context) (pgwire.Result, error) { return tagOnly(tag), nil }), nil
	case *sql.Flush:
		return s.command("FLUSH", func(ctx context.Context) (pgwire.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, flushTimeout)
			defer cancel()
			warnings, err := s.srv.engine.Flush(ctx)
			if err != nil {
				return nil, err
			}
			return &rowsResult{tag: "FLUSH", notices: warnings}, s.srv.views.flush(ctx)
		}), nil
	case *sql.Describe:
		return s.planDescribe(st)
	case *sql.Explain:
		return s.planExplain(st, params)
	case *sql.CreateAs:
		return s.command("CREATE", func(ctx context.Context) (pgwire.Result, error) {
			return s.srv.createAs(ctx, st, p.SQL)
		}), nil
	case *sql.Subscribe:
		cols, run, err := s.planSubscribe(st)
		if err != nil {
			return nil, err
		}
		return &statement{cols: cols, exec: func(ctx context.Context, _ []types.Value) (pgwire.Result, error) {
			r, err := run(ctx)
			if err != nil {
				return nil, err
			}
			return r, nil
		}}, nil
	case *sql.Copy:
		return s.planCopy(st)
	case *sql.DeclareCursor:
		return s.declare(st, params)
	case *sql.Fetch:
		return s.fetch(st)
	case *sql.CloseCursor:
		return s.command("CLOSE", func(context.Context) (pgwire.Result, error) { return s.closeCursor(st.Name) }), nil
	case *sql.Unsupported:
		if st.What == "UNLISTEN" {
			// LISTEN is refused, so no session listens to any channel:
			// UNLISTEN of anything (asyncpg's pool reset sends UNLISTEN *)
			// does what PostgreSQL's does for a channel not listened to.
			return s.command("UNLISTEN", func(context.Context) (pgwire.Result, error) { return tagOnly("UNLISTEN"), nil }), nil
		}
		return nil, pgerror.NotSupported("%s", st.What)
	}
	return nil, pgerror.NotSupported("statement %T", p.Stmt)
}

// command wraps a statement that returns no rows.
func (s *session) command(_ string, run func(ctx context.Context) (pgwire.Result, error)) *statement {
	return &statement{exec: func(ctx context.Context, _ []types.Value) (pgwire.Result, error) { return run(ctx) }}
}

func (s *session) transaction(ctx context.Context, st *sql.Transaction) (pgwire.Result, error) {
	switch st.Kind {
	case sql.TxSavepoint, sql.TxRelease:
		if s.tx == 'I' {
			return &rowsResult{tag: strings.ToUpper(string(st.Kind)), notices: []string{string(st.Kind) + " can only be used in transaction blocks"}}, nil
		}
		if err := s.writes().savepoint(st.Kind, st.Savepoint); err != nil {
			return nil, err
		}
		return tagOnly(strings.ToUpper(string(st.Kind))), nil
	case sql.TxRollbackTo:
		if s.tx == 'I' {
			return nil, pgerror.New(pgerror.NoActiveSQLTransaction, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
		}
		if err := s.writes().savepoint(st.Kind, st.Savepoint); err != nil {
			return nil, err
		}
		s.tx = 'T' // back to a usable transaction, as PostgreSQL does
		return tagOnly("ROLLBACK"), nil
	case sql.TxBegin:
		if s.tx != 'I' {
			return &rowsResult{tag: "BEGIN", notices: []string{"there is already a transaction in progress"}}, nil
		}
		s.tx, s.txw = 'T', nil
		return tagOnly("BEGIN"), nil
	case sql.TxCommit:
		if s.tx == 'I' {
			return &rowsResult{tag: "COMMIT", notices: []string{"there is no transaction in progress"}}, nil
		}
		failed, w := s.tx == 'E', s.txw
		s.tx, s.txw = 'I', nil
		if failed {
			return tagOnly("ROLLBACK"), nil
		}
		if w != nil {
			if err := w.commit(ctx, s.srv); err != nil {
				return nil, err
			}
		}
		return tagOnly("COMMIT"), nil
	default:
		if s.tx == 'I' {
			return &rowsResult{tag: "ROLLBACK", notices: []string{"there is no transaction in progress"}}, nil
		}
		s.tx, s.txw = 'I', nil
		return tagOnly("ROLLBACK"), nil
	}
}

// writes is the transaction block's held writes (made on first use), or
// nil outside a block, where statements write at once.
func (s *session) writes() *txWrites {
	if s.tx == 'I' {
		return nil
	}
	if s.txw == nil {
		s.txw = &txWrites{}
	}
	return s.txw
}

func textCols(names ...string) []pgwire.Column {
	out := make([]pgwire.Column, len(names))
	for i, n := range names {
		out[i] = pgwire.Column{Name: n, Type: types.Text}
	}
	return out
}

func rowsStatement(cols []pgwire.Column, rows func(ctx context.Context) ([]types.Row, error)) *statement {
	return &statement{cols: cols, exec: func(ctx context.Context, _ []types.Value) (pgwire.Result, error) {
		r, err := rows(ctx)
		if err != nil {
			return nil, err
		}
		return &rowsResult{rows: r, tag: fmt.Sprintf("SELECT %d", len(r))}, nil
	}}
}
