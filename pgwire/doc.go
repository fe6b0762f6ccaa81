// Package pgwire is fvsql's PostgreSQL wire protocol server (protocol 3.0):
// PostgreSQL clients (psql, pgx, pgjdbc, psycopg) connect to it, and it
// runs their statements through a Handler (handler.go), which cmd/fvsql
// wires to the server package. Messages are encoded and decoded with
// github.com/jackc/pgproto3/v2; values with the types package
// (types.AppendText/AppendBinary for results, types.ParseText/ParseBinary
// for parameters).
//
// # Files
//
//   - handler.go: the Handler, Session, Statement and Result interfaces
//     that the server package implements.
//   - server.go: Config, Server (listening, accepting, Close), the
//     connection slots of Config.MaxConnections and the registry of
//     connections that CancelRequest looks keys up in.
//   - conn.go: one connection's lifecycle: startup, the hand-off to
//     authentication and NewSession, the message loop and dispatch,
//     termination, transaction status, Handler panics and errors.
//   - auth.go: the authentication exchange (trust, password, md5, SCRAM).
//   - reader.go: the reading goroutine and its message queue.
//   - simple.go: the simple query protocol (Query).
//   - extended.go: the extended query protocol (Parse, Bind, Describe,
//     Execute, Close, Sync; statements and portals).
//   - results.go: sending results and errors (DataRow, RowDescription,
//     CommandComplete, notices, ErrorResponse with its CONTEXT).
//   - copy.go: the COPY sub-protocols: copy-out (CopyOutResponse,
//     CopyData, CopyDone) and copy-in (CopyInResponse, then the client's
//     CopyData up to CopyDone or CopyFail). The data's formats (text, CSV,
//     binary) are the Handler's: pgwire moves payloads.
//   - writer.go: the buffered output and its flush timer.
//
// # Connection lifecycle
//
// Server.Serve accepts connections; each gets a goroutine (conn.serve)
// that runs, in order:
//
//  1. Startup, read packet by packet straight from the socket so nothing
//     is read ahead of a TLS handshake: SSLRequest is answered 'S' and the
//     connection upgraded when Config.TLSConfig is set, 'N' otherwise
//     (with Config.RequireTLS, a StartupMessage not over TLS is refused
//     with FATAL 28000 before authentication); GSSEncRequest is answered
//     'N'; a CancelRequest cancels the running
//     query of the connection whose BackendKeyData matches and closes the
//     cancel connection; a 3.x StartupMessage newer than 3.0 or carrying
//     "_pq_." options gets NegotiateProtocolVersion(3.0); any other first
//     packet (garbage, an HTTP request, protocol 2) closes that connection
//     alone. A startup packet may be 10,000 bytes long at most, PostgreSQL's
//     MAX_STARTUP_PACKET_LENGTH: a declared length outside 8 to 10,000 is
//     answered FATAL 08P01 "invalid length of startup packet" from the
//     length alone, nothing allocated for the body. Startup and
//     authentication must finish within Config.AuthTimeout (a client that
//     sends nothing, or half a packet, is closed then).
//  2. The connection slot: a StartupMessage takes one of
//     Config.MaxConnections (default 100, PostgreSQL's max_connections),
//     held until the connection closes; when none is free the client gets
//     FATAL 53300 "sorry, too many clients already" and is closed.
//     Connections still before their StartupMessage hold no slot, so a
//     CancelRequest is served however full the server is.
//  3. Authentication (auth.go): trust, cleartext password, md5 (salted, as
//     PostgreSQL), or SCRAM-SHA-256 (RFC 5802/7677 as PostgreSQL runs it,
//     without channel binding). Bad credentials, an unknown user included,
//     end the connection with FATAL 28P01. Until the client has
//     authenticated its messages may be 8 KiB long at most (see
//     maxAuthMessageLen; Config.MaxMessageSize if smaller): a longer
//     declared length is FATAL 08P01 "invalid message length", nothing
//     allocated for it.
//  4. Handler.NewSession with the startup parameters; an error from it is
//     sent as FATAL and ends the connection. Then ParameterStatus
//     (server_version, encodings, DateStyle, …), BackendKeyData (a unique
//     process id and a random secret) and ReadyForQuery.
//  5. The message loop, below, until Terminate, a protocol violation, the
//     client going away, or Server.Close.
//
// # Goroutines
//
// After startup a connection has two goroutines, as CockroachDB's pgwire
// does:
//
//   - The reader (conn.readLoop) reads messages with pgproto3's Backend and
//     appends them to a queue (msgQueue). It never waits for execution,
//     only for queue space: the queue holds at most 16 MiB of messages read
//     ahead (one message always fits). pgproto3's Receive returns
//     flyweights valid until the next Receive, so every queued message is
//     copied, parameters included. When the socket fails (EOF, reset) the
//     reader cancels the connection's context, so a running query stops at
//     once; a malformed message queues a FATAL 08P01 behind the messages
//     already read. After Terminate it reads no more messages but still
//     watches the socket, so a client that leaves while an earlier message
//     executes cancels it too.
//   - The processor (conn.serve, then conn.processLoop) pops messages in
//     order, calls the Session and writes the responses. It alone touches
//     the session, the prepared statements and the portals.
//
// Declared message lengths are checked before pgproto3 allocates for them:
// the Backend reads through limitedChunkReader, which refuses a length
// above its cap (FATAL 08P01, connection closed). The cap depends on the
// phase: 8 KiB during authentication, Config.MaxMessageSize (default 64
// MiB) after it; the startup packet, read before the Backend exists, has
// its own 10,000 bytes.
//
// Output goes through a 64 KiB bufio.Writer (writer.go) guarded by a mutex.
// DataRows are encoded in place in its buffer, which is written out when
// full, at ReadyForQuery, Flush, PortalSuspended and the end of
// authentication, never per row. Because a streaming Result may block in
// Next indefinitely, a timer also flushes output that has waited 5ms: rows
// already produced reach the client while the next ones are awaited. The
// Handler is never called with the mutex held.
//
// # Contexts and cancellation
//
// Server.Close cancels the server's context (cause 57P01); each
// connection's context derives from it and is also cancelled when the
// client goes away (cause 08006). Each statement of a simple query, each
// Parse, and each portal gets a context derived from the connection's;
// while it executes it is the connection's "running" query, which a
// matching CancelRequest cancels with cause 57014 ("canceling statement
// due to user request"). A Result that returns the bare context error is
// reported with that cause. The Handler's side reaches other connections
// by process id (activity.go): Server.Activity lists what each one does
// (user, client, state, current statement and its start, for
// pg_stat_activity), Server.CancelBackend cancels its running statement
// like a CancelRequest, and Server.TerminateBackend cancels its context
// with cause 57P01, which ends it with FATAL "terminating connection due
// to administrator command". A connection's process id exists before its
// Session (SessionParams.PID).
//
// # Simple query
//
// A Query message whose body is not one NUL-terminated string (a NUL
// inside the query, or no NUL at its end) is answered ERROR 08P01 "invalid
// message format" and ReadyForQuery, as PostgreSQL answers it, and the
// connection goes on: nothing runs, an open transaction block fails. Any
// other Query destroys the unnamed statement and portal, and is parsed
// with Session.Parse. No statements: EmptyQueryResponse. Otherwise each
// statement is executed in turn with no parameters; its rows are sent in
// text format (RowDescription when Columns() is not nil, a DataRow per row,
// CommandComplete with Result.Tag(), NoticeResponses before it), or, for a
// CopyOutResult, as CopyOutResponse, one CopyData per payload the Result
// encodes, CopyDone and CommandComplete. The first
// error is sent as ErrorResponse, Session.FailTx is called and the
// remaining statements are skipped. Then ParameterStatus for
// Session.ParameterChanges and ReadyForQuery(Session.TxStatus).
//
// # COPY FROM STDIN
//
// A CopyInResult (from a simple query or an Execute) gets CopyInResponse,
// flushed, and then CopyIn reads the client's CopyData payloads from the
// queue, in order, up to CopyDone (io.EOF). Flush and Sync are ignored
// meanwhile, as PostgreSQL does (libpq sends Sync after Execute and again
// after CopyDone). CopyFail is ERROR 57014 "COPY from stdin failed: …";
// any other message is ERROR 08P01 (a Terminate also ends the connection,
// a malformed message FATAL). A copy that ends early with an error (a bad
// row) is answered at once; the client's remaining CopyData, CopyDone and
// CopyFail are dropped where they arrive (outside a copy they are
// ignored), and in the extended protocol everything up to Sync. CopyData
// payloads are copied out of pgproto3's buffer by the reader and count
// against the read-ahead budget, which bounds what a client sends ahead.
//
// # Extended query
//
//   - Parse calls Session.Prepare with the declared parameter OIDs. Named
//     statements live until Close or the end of the session; re-using a name
//     is 42P05; the unnamed statement is replaced by the next unnamed Parse
//     or Query (portals bound to it survive).
//   - Bind checks the parameter count and format codes (none: text; one:
//     for all; else one each) and decodes every parameter with
//     types.ParseText or ParseBinary into the statement's ParamTypes; count
//     and format errors are 08P01, bad values 22P02/22P03 and so on, all
//     reported at Bind, as PostgreSQL does. Result format codes follow the
//     same rule; a column is sent in binary only if its type HasBinary,
//     otherwise in text, and RowDescription says which.
//   - Statement.Execute is called at the first Execute of a portal (not at
//     Bind: a portal that is never executed never runs). Execute with a row
//     limit sends that many DataRows and PortalSuspended, keeping the Result
//     open for the next Execute, whose CommandComplete counts only its own
//     rows ("SELECT n", as PostgreSQL). An exhausted row-returning portal
//     answers "SELECT 0" again; an exhausted command portal, 55000.
//   - Describe answers ParameterDescription and RowDescription (or NoData)
//     for a statement, RowDescription with the portal's formats (or NoData)
//     for a portal. Close answers CloseComplete whether or not the object
//     existed; closing a statement closes its portals.
//   - Sync answers ReadyForQuery. Portals live until the end of the
//     transaction: when the session is idle ('I') at Sync, or after a simple
//     query, all portals are destroyed.
//   - After an error, every message up to Sync is discarded (Terminate
//     excepted).
//
// # Invariants
//
//   - Every Result that Statement.Execute returns is closed exactly once,
//     whether read to its end or not (portal closed or destroyed, error,
//     connection end). Session.Close is called once, when the connection
//     ends.
//   - The Session, its Statements and Results are called from the
//     processing goroutine only, one call at a time.
//   - The ctx given to Parse and Prepare is valid during the call only; the
//     ctx given to Statement.Execute stays valid until the Result is
//     closed, and is the one its Next calls receive.
//   - An error never closes the connection, except authentication
//     failures, protocol violations (oversized, malformed, a Query's
//     string excepted, or unexpected messages), a full server, NewSession
//     errors, Terminate and Server.Close. Once the session exists, a panic
//     in the Handler is recovered and reported as XX000 with its value,
//     and the connection goes on.
//   - Before the session exists (startup, authentication, NewSession) a
//     panic, the Handler's or pgwire's, ends that connection alone with a
//     bare FATAL XX000 "internal error": its value goes to the log, never
//     to a client that may not have authenticated. A panic in a TLS
//     handshake (Config.TLSConfig's callbacks) closes the connection with
//     nothing sent.
//   - What a client costs before authenticating is bounded: at most 10,000
//     bytes of startup packet and 8 KiB per authentication message, for at
//     most Config.AuthTimeout, and at most Config.MaxConnections such
//     clients past their StartupMessage. Known limit: connections not yet
//     past their startup packet are not counted (so that CancelRequests
//     always get through); their number is bounded by the process's file
//     descriptors only, each a goroutine and at most one startup packet
//     for Config.AuthTimeout, as PostgreSQL's dead-end backends are.
//   - Server.Close returns after every goroutine of the server has ended.
//     A client that does not read gets at most one second to take its
//     final FATAL 57P01.
package pgwire
