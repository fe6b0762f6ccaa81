// This file holds the COPY sub-protocols: copy-out (CopyOutResponse,
// CopyData…, CopyDone) for COPY TO STDOUT, and copy-in (CopyInResponse,
// then the client's CopyData…, CopyDone or CopyFail) for COPY FROM STDIN.
// The data's format (text, CSV, binary) is the Handler's business:
// pgwire moves payloads.

package pgwire

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/jackc/pgproto3/v2"
)

// sendCopyOut sends res as COPY TO STDOUT data, then CommandComplete.
// Each payload is taken from the Handler into c.scratch first, since the
// Handler is never called with the writer's mutex held.
func (c *conn) sendCopyOut(ctx context.Context, res CopyOutResult) error {
	format, ncols := res.CopyOutFormat()
	if err := c.send(&pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: formatCodes(format, ncols)}); err != nil {
		return err
	}
	for {
		var err error
		c.scratch, err = res.NextCopyData(ctx, c.scratch[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := c.w.appendTo(func(buf []byte) ([]byte, error) {
			start := len(buf)
			buf = append(buf, 'd', 0, 0, 0, 0)
			buf = append(buf, c.scratch...)
			binary.BigEndian.PutUint32(buf[start+1:], uint32(len(buf)-start-1))
			return buf, nil
		}); err != nil {
			return err
		}
	}
	if err := c.send(&pgproto3.CopyDone{}); err != nil {
		return err
	}
	c.sendNotices(res)
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag())})
}

func formatCodes(format int16, ncols int) []uint16 {
	codes := make([]uint16, ncols)
	for i := range codes {
		codes[i] = uint16(format)
	}
	return codes
}

// copyIn runs a COPY FROM STDIN: CopyInResponse, then the Handler reads
// the client's data; a copy that ended without an error is drained to its
// CopyDone (data after the end marker is ignored, as PostgreSQL does)
// before CommandComplete.
func (c *conn) copyIn(ctx context.Context, res CopyInResult) error {
	format, ncols := res.CopyInFormat()
	if err := c.send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: formatCodes(format, ncols)}); err != nil {
		return err
	}
	if err := c.w.flush(); err != nil {
		return err
	}
	r := &copyInReader{c: c, ctx: ctx}
	err := res.CopyIn(ctx, r)
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	if r.fatal != nil || r.terminate {
		c.endAfter = r.fatal
		if r.terminate {
			c.endAfter = errClientGone
		}
	}
	if err != nil {
		return err
	}
	c.sendNotices(res)
	return c.send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag())})
}

// copyInReader reads the payloads of the queued CopyData messages.
type copyInReader struct {
	c         *conn
	ctx       context.Context
	cur       []byte
	done      bool
	err       error
	fatal     *pgerror.Error // a protocol violation read from the queue
	terminate bool           // Terminate arrived during the copy
}

func (r *copyInReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.done {
			return 0, io.EOF
		}
		it, err := r.c.q.pop(r.ctx)
		if err != nil {
			if r.ctx.Err() != nil {
				err = r.ctx.Err()
			} else {
				err = pgerror.New(pgerror.ConnectionFailure, "unexpected EOF on client connection with an open transaction")
			}
			r.err = err
			continue
		}
		if it.fatal != nil {
			r.fatal, r.err = it.fatal, it.fatal
			continue
		}
		switch m := it.msg.(type) {
		case *pgproto3.CopyData:
			r.cur = m.Data
		case *pgproto3.CopyDone:
			r.done = true
		case *pgproto3.CopyFail:
			r.err = pgerror.New(pgerror.QueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// Ignored during copy-in, as PostgreSQL does: libpq sends Sync
			// after Execute and again after CopyDone.
		default:
			if _, ok := m.(*pgproto3.Terminate); ok {
				r.terminate = true
			}
			r.err = pgerror.New(pgerror.ProtocolViolation, "unexpected message type 0x%02X during COPY from stdin", messageType(m))
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// messageType is the type byte of a frontend message.
func messageType(m pgproto3.FrontendMessage) byte {
	if b, err := m.Encode(nil); err == nil && len(b) > 0 {
		return b[0]
	}
	return '?'
}
