package pgwire

import (
	"context"
	"io"
	"net"

	"github.com/fvsql/fvsql/types"
)

// Handler is what the wire server asks of the database. cmd/fvsql wires
// the server package's implementation in; pgwire's tests use their own.
type Handler interface {
	// NewSession opens the session of one authenticated connection.
	NewSession(ctx context.Context, p SessionParams) (Session, error)
}

// SessionParams are the startup parameters of a connection.
type SessionParams struct {
	User            string
	Database        string
	ApplicationName string
	// Options holds every startup parameter as sent (including the above).
	Options map[string]string
	// PID is the process id of the connection's BackendKeyData
	// (Server.CancelBackend, Server.Activity).
	PID uint32
	// RemoteAddr is the client's address.
	RemoteAddr net.Addr
}

// Session executes the statements of one connection. pgwire calls it from
// one goroutine at a time.
type Session interface {
	// Parse parses a simple-query string into its statements, in order. An
	// empty or comment-only string returns no statements. Errors carry
	// SQLSTATE 42601 and a position.
	Parse(ctx context.Context, sql string) ([]Statement, error)

	// Prepare parses and plans a single statement for the extended
	// protocol. paramOIDs are the types the client declared (0 or missing
	// entries: infer). A nil Statement with nil error means an empty query.
	Prepare(ctx context.Context, sql string, paramOIDs []uint32) (Statement, error)

	// TxStatus is the ReadyForQuery status: 'I' idle, 'T' in a
	// transaction block, 'E' in a failed transaction block.
	TxStatus() byte

	// FailTx tells the session that a statement failed, so an open
	// transaction block becomes failed ('E').
	FailTx()

	// ParameterChanges returns and clears the session settings changed
	// since the last call that clients track via ParameterStatus.
	ParameterChanges() []Parameter

	// Close releases the session's resources (cursors, subscriptions).
	Close()
}

// Parameter is a ParameterStatus name and value.
type Parameter struct{ Name, Value string }

// Statement is one parsed, planned statement.
type Statement interface {
	// ParamTypes are the types of $1…$n, inferred where the client left
	// them unspecified.
	ParamTypes() []types.Type

	// Columns describes the result rows, or nil for statements that
	// return none (RowDescription vs NoData).
	Columns() []Column

	// Execute runs the statement with bound parameters. Rows are pulled
	// with Result.Next; cancelling ctx (CancelRequest, closed connection)
	// must make Next return promptly with the context's error.
	Execute(ctx context.Context, params []types.Value) (Result, error)
}

// Column describes one result column.
type Column struct {
	Name     string
	Type     types.Type
	TableOID uint32 // 0 when not a plain column of a relation
	AttNum   int16
}

// Result is the outcome of one execution.
type Result interface {
	// Next returns the next row, or (nil, io.EOF) after the last one. The
	// returned row is valid until the following call.
	Next(ctx context.Context) (types.Row, error)

	// Tag is the CommandComplete tag ("SELECT 3", "INSERT 0 2",
	// "CREATE STREAM"); valid once Next has returned io.EOF.
	Tag() string

	// Close releases the result early (a portal closed before its end).
	Close()
}

// CopyOutResult is an optional ability of a Result: its output is COPY
// TO STDOUT data, encoded by the Handler (pgwire knows no COPY format).
// pgwire sends CopyOutResponse, one CopyData per NextCopyData payload
// until io.EOF, CopyDone, then CommandComplete with Tag; Next is not
// called. An error from NextCopyData ends the copy with ErrorResponse.
type CopyOutResult interface {
	Result
	// CopyOutFormat is the CopyOutResponse's overall format (0 text, 1
	// binary) and its number of columns.
	CopyOutFormat() (format int16, ncols int)
	// NextCopyData appends the payload of the next CopyData message (a
	// row, or a binary header or trailer) to buf and returns it, or
	// returns io.EOF after the last. Cancelling ctx must make it return
	// promptly with the context's error.
	NextCopyData(ctx context.Context, buf []byte) ([]byte, error)
}

// CopyInResult is an optional ability of a Result: the statement is COPY
// FROM STDIN. pgwire sends CopyInResponse and calls CopyIn, whose reader
// yields the payloads of the client's CopyData messages back to back;
// CommandComplete with Tag follows when CopyIn returns nil.
type CopyInResult interface {
	Result
	// CopyInFormat is the CopyInResponse's overall format (0 text, 1
	// binary) and its number of columns.
	CopyInFormat() (format int16, ncols int)
	// CopyIn consumes the client's data. r returns io.EOF at CopyDone;
	// after a CopyFail it returns a 57014 error ("COPY from stdin failed:
	// <message>"), after any other message than CopyData, CopyDone,
	// CopyFail, Flush or Sync (the last two are ignored) an 08P01 error;
	// its errors are meant to be returned. CopyIn may return before the
	// end of the data (a bad row): pgwire discards the rest, as PostgreSQL
	// does. Cancelling ctx makes r's Read fail with the context's error.
	CopyIn(ctx context.Context, r io.Reader) error
}

// NoticeResult is an optional ability of a Result: notices to send before
// CommandComplete (for example "stream does not exist, skipping").
type NoticeResult interface {
	Result
	Notices() []string
}

// CursorDescriber is an optional ability of a Session: cursors declared
// with SQL (DECLARE c CURSOR FOR …) are portals too, and clients (psycopg's
// named cursors) Describe them by name at the protocol level.
type CursorDescriber interface {
	Session
	// DescribeCursor returns the columns of a SQL-declared cursor.
	DescribeCursor(name string) ([]Column, bool)
}
