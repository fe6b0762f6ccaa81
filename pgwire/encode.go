package pgwire

import (
	"bufio"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	"github.com/jackc/pgproto3/v2"
)

const (
	// writeBufferSize is the size of a connection's output buffer: rows are
	// encoded straight into it and it is written when full.
	writeBufferSize = 64 << 10
	// minRowSpace: when less than this is left in the buffer, it is flushed
	// before a row is encoded, so rows are encoded in place rather than in a
	// freshly allocated slice.
	minRowSpace = 1 << 10
	// flushDelay bounds how long encoded output may wait in the buffer.
	// A streaming Result can block in Next indefinitely between rows; the
	// timer makes the rows already produced reach the client anyway.
	flushDelay = 5 * time.Millisecond
)

// writer is a connection's output: a bufio.Writer shared by the processing
// goroutine, which encodes messages into it, and a timer that flushes what
// has waited flushDelay. mu guards bw; it is never held while the Handler
// runs.
type writer struct {
	mu      sync.Mutex
	bw      *bufio.Writer
	timer   *time.Timer
	armed   bool  // a timer flush is pending
	stopped bool  // the connection is over: the timer does nothing
	err     error // first write error; the connection is dead after it
	// pending counts timer callbacks scheduled and not yet finished, so
	// that stop can wait for them: no goroutine outlives the connection.
	pending sync.WaitGroup
}

func newWriter(w io.Writer) *writer {
	wr := &writer{bw: bufio.NewWriterSize(w, writeBufferSize)}
	wr.timer = time.AfterFunc(time.Hour, wr.timerFlush)
	wr.timer.Stop()
	return wr
}

func (w *writer) timerFlush() {
	defer w.pending.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if !w.stopped && w.bw.Buffered() > 0 && w.err == nil {
		w.setErr(w.bw.Flush())
	}
}

// armLocked starts the flush timer if output is waiting and none is
// pending.
func (w *writer) armLocked() {
	if !w.armed && w.bw.Buffered() > 0 {
		w.armed = true
		w.pending.Add(1)
		w.timer.Reset(flushDelay)
	}
}

func (w *writer) setErr(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// failed returns the first write error.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// send encodes msg into the buffer.
func (w *writer) send(msg pgproto3.BackendMessage) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	buf, err := msg.Encode(w.bw.AvailableBuffer())
	if err != nil {
		return err
	}
	_, err = w.bw.Write(buf)
	w.setErr(err)
	w.armLocked()
	return w.err
}

// appendTo lets fn append one or more complete messages to the buffer.
// Messages are encoded in place when they fit.
func (w *writer) appendTo(fn func(buf []byte) ([]byte, error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.bw.Available() < minRowSpace && w.bw.Buffered() > 0 {
		if err := w.bw.Flush(); err != nil {
			w.setErr(err)
			return err
		}
	}
	buf, err := fn(w.bw.AvailableBuffer())
	if err != nil {
		return err
	}
	_, err = w.bw.Write(buf)
	w.setErr(err)
	w.armLocked()
	return w.err
}

// flush writes out everything buffered.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.setErr(w.bw.Flush())
	return w.err
}

// stop disarms the timer for good and waits for a callback already
// started.
func (w *writer) stop() {
	w.mu.Lock()
	if w.armed && !w.stopped && w.timer.Stop() {
		w.pending.Done() // cancelled before it ran
	}
	w.stopped = true
	w.armed = true // never re-armed
	w.mu.Unlock()
	w.pending.Wait()
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

// appendCopyRow appends one CopyData message holding row in COPY's text
// format: tab-separated, \N for NULL, newline-terminated, with backslash,
// the delimiter, newline, carriage return and the other C escapes written
// as PostgreSQL's CopyAttributeOutText does. scratch is reused for each
// value's text form and returned.
func appendCopyRow(buf []byte, row types.Row, scratch []byte) ([]byte, []byte) {
	start := len(buf)
	buf = append(buf, 'd', 0, 0, 0, 0)
	for i, v := range row {
		if i > 0 {
			buf = append(buf, '\t')
		}
		if v.K == types.Null {
			buf = append(buf, '\\', 'N')
			continue
		}
		scratch = types.AppendText(scratch[:0], v)
		buf = appendCopyEscaped(buf, scratch)
	}
	buf = append(buf, '\n')
	binary.BigEndian.PutUint32(buf[start+1:], uint32(len(buf)-start-1))
	return buf, scratch
}

func appendCopyEscaped(buf, s []byte) []byte {
	for _, c := range s {
		switch c {
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\v':
			buf = append(buf, '\\', 'v')
		default:
			buf = append(buf, c)
		}
	}
	return buf
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
	}
	if e.Position > 0 {
		r.Position = int32(e.Position)
	}
	return r
}

// retag replaces the row count at the end of a command tag ("SELECT 5",
// "INSERT 0 5") with n; a tag without a trailing count is kept. It gives
// the tag of one Execute of a portal run in several batches, which
// PostgreSQL reports with the rows of that batch only.
func retag(tag string, n int64) string {
	i := strings.LastIndexByte(tag, ' ')
	if i < 0 || i == len(tag)-1 {
		return tag
	}
	for _, c := range tag[i+1:] {
		if c < '0' || c > '9' {
			return tag
		}
	}
	return tag[:i+1] + strconv.FormatInt(n, 10)
}

// negotiateProtocolVersion encodes NegotiateProtocolVersion ('v'), which
// pgproto3/v2 does not define: the newest minor version the server speaks
// and the protocol options ("_pq_.*") it did not recognize.
type negotiateProtocolVersion struct {
	newestMinor uint32
	options     []string
}

func (*negotiateProtocolVersion) Backend() {}

func (m *negotiateProtocolVersion) Decode([]byte) error { return nil }

func (m *negotiateProtocolVersion) Encode(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 'v', 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, m.newestMinor)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.options)))
	for _, o := range m.options {
		dst = append(dst, o...)
		dst = append(dst, 0)
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-start-1))
	return dst, nil
}
