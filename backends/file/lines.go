package file

import (
	"bytes"
	"errors"
	"io"
	"os"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// source is what consumers and Scan read: a log, or a text file's lines.
type source interface {
	// read appends up to want messages of what lies before limitPhys
	// (final: that is the end, so a text file's unterminated last line
	// counts) and reports whether it moved.
	read(stream string, out []backends.Message, want int, limitPhys int64, final bool, f *filter) ([]backends.Message, bool, error)
	// release says the messages returned so far are no longer used.
	release()
}

// newSource returns the reader of a file's format, or nil while the format
// is not decided (an empty file, or a header still being written).
func newSource(f *os.File, limitPhys int64) (source, error) {
	head, err := readHead(f)
	if err != nil {
		return nil, ioError(err, "file: read %s", f.Name())
	}
	head = head[:min(int64(len(head)), limitPhys)]
	switch detect(head) {
	case formatLog:
		h, err := parseHeader(head)
		if errors.Is(err, errTornHeader) {
			return nil, nil
		}
		if err != nil {
			return nil, pgerror.Wrap(err, pgerror.IOError, "file: %s", f.Name())
		}
		return newLogReader(f, layout{h.block}), nil
	case formatLines:
		return &lineReader{f: f, line: 1}, nil
	}
	return nil, nil
}

func (r *logReader) read(stream string, out []backends.Message, want int, limitPhys int64, _ bool, f *filter) ([]backends.Message, bool, error) {
	r.setLimit(limitPhys)
	return r.readBatches(stream, out, want, f)
}

func (r *logReader) release() { r.shared = false }

// lineReader reads a text file (JSON lines, CSV, …) one message per line:
// the newline is stripped, and a '\r' before it; a UTF-8 byte order mark
// at the start is dropped; blank lines are skipped (they still count in
// the line numbers). Sequence is the line number (from 1), Timestamp the
// file's modification time when the line was read.
type lineReader struct {
	f      *os.File
	buf    []byte // file bytes [off, off+len(buf))
	off    int64
	pos    int64 // byte offset of the next line
	line   int64 // its number
	shared bool
	mtime  time.Time
	// For group consumers: the byte offset after each line returned and
	// not yet handed out (where the group resumes once it is acknowledged).
	trackOffs bool
	offs      []int64
}

func (r *lineReader) release() { r.shared = false }

// reset goes back to the start (a truncated file, or a seek).
func (r *lineReader) reset() {
	r.pos, r.line = 0, 1
	r.buf, r.off, r.shared, r.offs = nil, 0, false, nil
}

// moveTo continues at byte offset off, line number line (a group position).
func (r *lineReader) moveTo(off, line int64) {
	r.reset()
	r.pos, r.off, r.line = off, off, line
}

// fill reads more bytes after the buffer, up to limit.
func (r *lineReader) fill(limit int64) (bool, error) {
	end := r.off + int64(len(r.buf))
	if end >= limit {
		return false, nil
	}
	keep := r.buf[r.pos-r.off:]
	want := min(int64(readChunk), limit-end)
	if r.shared || int64(cap(r.buf)-len(keep)) < want {
		nb := make([]byte, len(keep), int64(len(keep))+max(want, int64(len(keep))))
		copy(nb, keep)
		r.buf, r.shared = nb, false
	} else {
		r.buf = r.buf[:copy(r.buf, keep)]
	}
	r.off = r.pos
	n, err := r.f.ReadAt(r.buf[len(r.buf):len(r.buf)+int(want)], end)
	r.buf = r.buf[:len(r.buf)+n]
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if st, err := r.f.Stat(); err == nil {
		r.mtime = st.ModTime().UTC()
	}
	return n > 0, nil
}

func (r *lineReader) read(stream string, out []backends.Message, want int, limit int64, final bool, f *filter) ([]backends.Message, bool, error) {
	moved := false
	if limit < r.pos { // truncated (rotated): start over, like tail -F
		r.reset()
	}
	for len(out) < want {
		rest := r.buf[r.pos-r.off:]
		i := bytes.IndexByte(rest, '\n')
		var line []byte
		var next int64
		switch {
		case i >= 0:
			line, next = rest[:i], r.pos+int64(i)+1
		default:
			more, err := r.fill(limit)
			if err != nil {
				return out, moved, err
			}
			if more {
				continue
			}
			if !final || len(rest) == 0 {
				return out, moved, nil
			}
			line, next = rest, r.pos+int64(len(rest)) // the last line, unterminated
		}
		if r.pos == 0 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		seq := r.line
		r.pos, r.line = next, r.line+1
		moved = true
		if len(line) == 0 || f != nil && !f.keep(seq, r.mtime.UnixMicro()) {
			continue
		}
		r.shared = true
		out = append(out, backends.Message{
			Stream: stream, Sequence: seq, Timestamp: r.mtime, Payload: line[:len(line):len(line)],
		})
		if r.trackOffs {
			r.offs = append(r.offs, next)
		}
	}
	return out, moved, nil
}
