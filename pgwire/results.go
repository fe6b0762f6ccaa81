// This file holds the sending of results and errors: DataRows (encoded in
// place in the output buffer, writer.go), RowDescription, CommandComplete, NoticeResponses and ErrorResponses, and
// the closing of every Result exactly once.

package pgwire

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	"github.com/jackc/pgproto3/v2"
)

func (c *conn) send(m pgproto3.BackendMessage) error { return c.w.send(m) }

func (c *conn) sendError(e *pgerror.Error, severity string) {
	if severity == "ERROR" && c.ctx.Err() != nil {
		return // the connection is ending: finish sends the FATAL that says why
	}
	if e.Code == pgerror.Internal {
		c.log.Warn("pgwire: internal error", "err", e.Message)
	}
	c.send(errorResponse(e, severity))
}

// sendRows sends DataRows of res until io.EOF or, when max > 0, max rows.
// It reports the rows sent and whether the result is exhausted.
func (c *conn) sendRows(ctx context.Context, res Result, cols []Column, fmts []int16, max int) (n int64, eof bool, err error) {
	for max <= 0 || n < int64(max) {
		row, err := res.Next(ctx)
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
		if err := c.w.appendTo(func(buf []byte) ([]byte, error) {
			return appendDataRow(buf, row, cols, fmts)
		}); err != nil {
			return n, false, err
		}
		n++
	}
	return n, false, nil
}

func (c *conn) sendNotices(res Result) {
	nr, ok := res.(NoticeResult)
	if !ok {
		return
	}
	for _, msg := range nr.Notices() {
		r := errorResponse(&pgerror.Error{Code: pgerror.SuccessfulCompletion, Message: msg}, "NOTICE")
		c.send((*pgproto3.NoticeResponse)(r))
	}
}

// closeResult calls Result.Close, which pgwire does exactly once for every
// Result, whether or not it was read to the end.
func (c *conn) closeResult(res Result) {
	_ = c.safely(func() error { res.Close(); return nil })
}

// appendDataRow appends a DataRow message. fmts holds the effective format
// code of each column (nil: all text); cols is nil when the row's width is
// not known. A value whose type differs from its binary column's type is
// cast to it, so the binary encoding matches the type the client was told.
func appendDataRow(buf []byte, row types.Row, cols []Column, fmts []int16) ([]byte, error) {
	if cols != nil && len(row) != len(cols) {
		return buf, pgerror.New(pgerror.Internal, "result row has %d values but the statement has %d columns", len(row), len(cols))
	}
	start := len(buf)
	buf = append(buf, 'D', 0, 0, 0, 0, byte(len(row)>>8), byte(len(row)))
	for i, v := range row {
		if v.K == types.Null {
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lp := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		if fmts != nil && fmts[i] == pgproto3.BinaryFormat {
			if t := cols[i].Type; v.K != t {
				cv, err := types.Cast(v, t)
				if err != nil {
					return buf[:start], pgerror.Wrap(err, pgerror.Internal, "column %q", cols[i].Name)
				}
				v = cv
			}
			buf = types.AppendBinary(buf, v)
		} else {
			buf = types.AppendText(buf, v)
		}
		binary.BigEndian.PutUint32(buf[lp:], uint32(len(buf)-lp-4))
	}
	binary.BigEndian.PutUint32(buf[start+1:], uint32(len(buf)-start-1))
	return buf, nil
}

// rowDescription describes cols with the given format codes (nil: text).
func rowDescription(cols []Column, fmts []int16) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, c := range cols {
		f := pgproto3.FieldDescription{
			Name:                 []byte(c.Name),
			TableOID:             c.TableOID,
			TableAttributeNumber: uint16(c.AttNum),
			DataTypeOID:          c.Type.OID(),
			DataTypeSize:         c.Type.Size(),
			TypeModifier:         -1,
		}
		if fmts != nil {
			f.Format = fmts[i]
		}
		fields[i] = f
	}
	return &pgproto3.RowDescription{Fields: fields}
}

// errorResponse builds the ErrorResponse (or, with severity "NOTICE", the
// fields of a NoticeResponse) for e.
func errorResponse(e *pgerror.Error, severity string) *pgproto3.ErrorResponse {
	code := e.Code
	if code == (pgerror.Code{}) {
		code = pgerror.Internal
	}
	r := &pgproto3.ErrorResponse{
		Severity:            severity,
		SeverityUnlocalized: severity,
		Code:                code.String(),
		Message:             e.Message,
		Detail:              e.Detail,
		Hint:                e.Hint,
		Where:               e.Where,
	}
	if e.Position > 0 {
		r.Position = int32(e.Position)
	}
	return r
}
