// This file holds the simple query protocol: a Query message parsed into
// statements that run in turn, their rows sent in text format.

package pgwire

import (
	"context"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
)

// simpleQuery runs a Query message: every statement in turn, stopping at
// the first error, then ReadyForQuery.
func (c *conn) simpleQuery(sql string) {
	// A Query destroys the unnamed statement and portal.
	c.dropStatement("", false)
	c.dropPortal("")
	defer c.sendReady()

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
	cols := st.Columns()
	if co, ok := res.(CopyOutResult); ok && co.CopyOut() {
		return c.sendCopyOut(ctx, res, len(cols))
	}
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
