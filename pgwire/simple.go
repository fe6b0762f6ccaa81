// This file holds the simple query protocol: a Query message parsed into
// statements that run in turn, their rows sent in text format.

package pgwire

import (
	"context"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
)

// invalidQuery is queued in place of a Query message whose body is not one
// NUL-terminated string (a NUL inside it, or none at its end), which
// pgproto3's Query.Decode refuses. PostgreSQL reads that string with
// pq_getmsgstring and pq_getmsgend, which answer such a body with ERROR
// 08P01 ("invalid message format", "invalid string in message"), and the
// connection goes on: the message's length kept the stream in step.
type invalidQuery struct{}

func (*invalidQuery) Frontend()                         {}
func (*invalidQuery) Decode([]byte) error               { return nil }
func (*invalidQuery) Encode(dst []byte) ([]byte, error) { return dst, nil }

// errInvalidQuery is the answer to an invalidQuery.
var errInvalidQuery = pgerror.New(pgerror.ProtocolViolation, "invalid message format").
	WithDetail("A Query message holds one string ending with the message's only NUL byte.")

// simpleQueryInvalid answers an invalidQuery as PostgreSQL does a simple
// query that fails: ERROR (failing an open transaction block), then
// ReadyForQuery. No statement runs.
func (c *conn) simpleQueryInvalid() {
	c.sendError(errInvalidQuery, "ERROR")
	c.failTx()
	c.sendReady()
}

// simpleQuery runs a Query message: every statement in turn, stopping at
// the first error, then ReadyForQuery.
func (c *conn) simpleQuery(sql string) {
	// A Query destroys the unnamed statement and portal.
	c.dropStatement("", false)
	c.dropPortal("")
	defer c.sendReady()
	c.actQuery(sql)

	var stmts []Statement
	err := c.withQueryCtx(func(ctx context.Context) (err error) {
		stmts, err = c.sess.Parse(ctx, sql)
		return err
	})
	if err != nil {
		c.sendError(c.toPgError(c.ctx, err), "ERROR")
		c.failTx()
		return
	}
	if len(stmts) == 0 {
		c.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, st := range stmts {
		var ctxUsed context.Context
		err := c.withQueryCtx(func(ctx context.Context) error {
			ctxUsed = ctx
			return c.execSimple(ctx, st)
		})
		if err != nil {
			if c.w.failed() != nil {
				return
			}
			c.sendError(c.toPgError(ctxUsed, err), "ERROR")
			c.failTx()
			return
		}
	}
	if c.txStatus() == 'I' {
		c.dropAllPortals()
	}
}

// execSimple executes one statement of a simple query and sends its
// results in text format.
func (c *conn) execSimple(ctx context.Context, st Statement) error {
	res, err := st.Execute(ctx, nil)
	if err != nil {
		return err
	}
	if res == nil {
		return pgerror.New(pgerror.Internal, "statement returned no result")
	}
	defer c.closeResult(res)
	switch r := res.(type) {
	case CopyOutResult:
		return c.sendCopyOut(ctx, r)
	case CopyInResult:
		return c.copyIn(ctx, r)
	}
	cols := st.Columns()
	if cols != nil {
		if err := c.send(rowDescription(cols, nil)); err != nil {
			return err
		}
	}
	if _, _, err := c.sendRows(ctx, res, cols, nil, 0); err != nil {
		return err
	}
	c.sendNotices(res)
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag())})
}
