// This file holds COPY's data formats as PostgreSQL writes and reads them
// (copyto.c, copyfromparse.c): text (delimited, \N for NULL, backslash
// escapes), CSV (quoting rules, FORCE_QUOTE/FORCE_NOT_NULL/FORCE_NULL) and
// binary (the PGCOPY signature, then tuples of the types' binary
// formats). CopyEncoder writes rows, CopyDecoder reads them.

package types

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/fvsql/fvsql/pgerror"
)

// CopyFormat is the FORMAT of a COPY.
type CopyFormat uint8

// COPY's formats.
const (
	CopyText CopyFormat = iota
	CopyCSV
	CopyBinary
)

// CopyOptions are the format options of one COPY, validated by the
// caller (PostgreSQL's ProcessCopyOptions rules).
type CopyOptions struct {
	Format    CopyFormat
	Delimiter byte   // text: tab; CSV: ','
	Null      string // text: \N; CSV: the empty string
	Header    bool
	// HeaderMatch (FROM, HEADER MATCH): the header line must name the
	// columns, in order.
	HeaderMatch bool
	Quote       byte // CSV: '"'
	Escape      byte // CSV: Quote unless given
	// Per column, CSV only: FORCE_QUOTE quotes every non-NULL value (TO);
	// FORCE_NOT_NULL reads the unquoted null string as a value, FORCE_NULL
	// reads the quoted one as NULL (FROM). nil: no column.
	ForceQuote, ForceNotNull, ForceNull []bool
}

// DefaultCopyOptions returns the defaults of format f.
func DefaultCopyOptions(f CopyFormat) CopyOptions {
	o := CopyOptions{Format: f, Delimiter: '\t', Null: `\N`}
	if f == CopyCSV {
		o.Delimiter, o.Null, o.Quote, o.Escape = ',', "", '"', '"'
	}
	return o
}

// copySignature starts a binary COPY: "PGCOPY\n\377\r\n\0".
var copySignature = []byte("PGCOPY\n\xff\r\n\x00")

// CopyEncoder writes rows in a COPY format. Its methods append to buf and
// return it; the encoder reuses its own scratch space between calls.
type CopyEncoder struct {
	o       CopyOptions
	types   []Type
	scratch []byte
}

// NewCopyEncoder returns an encoder of rows of the given column types.
func NewCopyEncoder(o CopyOptions, colTypes []Type) *CopyEncoder {
	return &CopyEncoder{o: o, types: colTypes}
}

// AppendHeader appends what precedes the rows: the binary signature,
// flags and header extension, or (HEADER) the line of column names.
func (e *CopyEncoder) AppendHeader(buf []byte, names []string) []byte {
	switch {
	case e.o.Format == CopyBinary:
		buf = append(buf, copySignature...)
		return append(buf, 0, 0, 0, 0, 0, 0, 0, 0) // flags, extension length
	case !e.o.Header:
		return buf
	}
	for i, n := range names {
		if i > 0 {
			buf = append(buf, e.o.Delimiter)
		}
		if e.o.Format == CopyCSV {
			buf = e.appendCSV(buf, []byte(n), false)
		} else {
			buf = e.appendText(buf, []byte(n))
		}
	}
	return append(buf, '\n')
}

// AppendTrailer appends what follows the rows (binary: the -1 field count).
func (e *CopyEncoder) AppendTrailer(buf []byte) []byte {
	if e.o.Format == CopyBinary {
		return append(buf, 0xff, 0xff)
	}
	return buf
}

// AppendRow appends one row: a line of text or CSV, or a binary tuple. In
// binary, a value whose type differs from its column's is cast to it, so
// the bytes match the type the reader expects.
func (e *CopyEncoder) AppendRow(buf []byte, row Row) ([]byte, error) {
	if e.o.Format == CopyBinary {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(row)))
		for i, v := range row {
			if v.K == Null {
				buf = append(buf, 0xff, 0xff, 0xff, 0xff)
				continue
			}
			if i < len(e.types) && v.K != e.types[i] && e.types[i] != Null {
				cv, err := Cast(v, e.types[i])
				if err != nil {
					return buf, err
				}
				v = cv
			}
			lp := len(buf)
			buf = append(buf, 0, 0, 0, 0)
			buf = AppendBinary(buf, v)
			binary.BigEndian.PutUint32(buf[lp:], uint32(len(buf)-lp-4))
		}
		return buf, nil
	}
	for i, v := range row {
		if i > 0 {
			buf = append(buf, e.o.Delimiter)
		}
		if v.K == Null {
			buf = append(buf, e.o.Null...)
			continue
		}
		e.scratch = AppendText(e.scratch[:0], v)
		if e.o.Format == CopyCSV {
			buf = e.appendCSV(buf, e.scratch, e.o.ForceQuote != nil && i < len(e.o.ForceQuote) && e.o.ForceQuote[i])
		} else {
			buf = e.appendText(buf, e.scratch)
		}
	}
	return append(buf, '\n'), nil
}

// appendText is CopyAttributeOutText: backslash, the delimiter and the C
// control characters escaped.
func (e *CopyEncoder) appendText(buf, s []byte) []byte {
	d := e.o.Delimiter
	for _, c := range s {
		if c < 0x20 {
			var esc byte
			switch c {
			case '\b':
				esc = 'b'
			case '\f':
				esc = 'f'
			case '\n':
				esc = 'n'
			case '\r':
				esc = 'r'
			case '\t':
				esc = 't'
			case '\v':
				esc = 'v'
			default:
				if c == d {
					esc = c
				}
			}
			if esc != 0 {
				buf = append(buf, '\\', esc)
				continue
			}
		} else if c == '\\' || c == d {
			buf = append(buf, '\\')
		}
		buf = append(buf, c)
	}
	return buf
}

// appendCSV is CopyAttributeOutCSV: a value is quoted when forced, when
// it equals the null string, is \. alone, or holds the delimiter, the
// quote, a newline or a carriage return; inside quotes the quote and the
// escape are preceded by the escape.
func (e *CopyEncoder) appendCSV(buf, s []byte, quote bool) []byte {
	o := &e.o
	if !quote {
		quote = string(s) == o.Null || string(s) == `\.`
	}
	if !quote {
		for _, c := range s {
			if c == o.Delimiter || c == o.Quote || c == '\n' || c == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(buf, s...)
	}
	buf = append(buf, o.Quote)
	for _, c := range s {
		if c == o.Quote || c == o.Escape {
			buf = append(buf, o.Escape)
		}
		buf = append(buf, c)
	}
	return append(buf, o.Quote)
}

// CopyDecoder reads the rows of a COPY FROM. Its errors are
// *pgerror.Error with PostgreSQL's codes (22P04 for the format, the
// type's own for a value: 22P02, 22003, …) and PostgreSQL's CONTEXT in
// Where: `COPY s, line 3, column b: "x"`.
type CopyDecoder struct {
	o     CopyOptions
	r     *bufio.Reader
	rel   string
	names []string
	types []Type
	line  int64
	done  bool

	buf    []byte   // the current line (text, CSV)
	fields [][]byte // its fields, de-escaped, nil for NULL
	arena  []byte
	row    Row
}

// NewCopyDecoder reads rows of the given columns (names for errors and
// HEADER MATCH, types to parse the values as) from r; rel names the
// relation in error contexts.
func NewCopyDecoder(r io.Reader, o CopyOptions, rel string, names []string, colTypes []Type) *CopyDecoder {
	return &CopyDecoder{o: o, r: bufio.NewReaderSize(r, 64<<10), rel: rel, names: names, types: colTypes, row: make(Row, len(colTypes))}
}

// Line is the number of the line (binary: tuple) read last, 1 for the
// first, the header included.
func (d *CopyDecoder) Line() int64 { return d.line }

// Where is the CONTEXT of an error about the current line ("COPY s, line
// 3"), for the caller's own checks of a row.
func (d *CopyDecoder) Where() string {
	return "COPY " + d.rel + ", line " + strconv.FormatInt(d.line, 10)
}

func (d *CopyDecoder) fail(code pgerror.Code, msg string, args ...any) error {
	return pgerror.New(code, msg, args...).WithWhere("%s", d.Where())
}

// Next returns the next row, or io.EOF after the last. The row is valid
// until the following call.
func (d *CopyDecoder) Next() (Row, error) {
	if d.done {
		return nil, io.EOF
	}
	if d.o.Format == CopyBinary {
		return d.nextBinary()
	}
	for {
		ok, err := d.readLine()
		if err != nil {
			return nil, err
		}
		if !ok {
			d.done = true
			return nil, io.EOF
		}
		if d.line == 1 && d.o.Header {
			if err := d.header(); err != nil {
				return nil, err
			}
			continue
		}
		return d.parseRow()
	}
}

// readLine reads the next line into d.buf, without its newline (\n or
// \r\n); in CSV a newline inside quotes belongs to the line. It reports
// false at the end of the data (EOF, or the \. marker line).
func (d *CopyDecoder) readLine() (bool, error) {
	d.buf = d.buf[:0]
	inQuote, lastEsc := false, false
	csv := d.o.Format == CopyCSV
	for {
		chunk, err := d.r.ReadSlice('\n')
		start := len(d.buf)
		d.buf = append(d.buf, chunk...)
		if csv {
			// A quote toggles quoting; with an escape of its own, an
			// escaped character inside quotes toggles nothing.
			q, esc := d.o.Quote, d.o.Escape
			for _, c := range d.buf[start:] {
				switch {
				case lastEsc:
					lastEsc = false
				case inQuote && c == esc && esc != q:
					lastEsc = true
				case c == q:
					inQuote = !inQuote
				}
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(d.buf) == 0 {
				return false, nil
			}
		case err != nil:
			return false, err
		case inQuote:
			continue // a quoted newline
		}
		break
	}
	d.line++
	d.buf = bytes.TrimSuffix(d.buf, []byte{'\n'})
	d.buf = bytes.TrimSuffix(d.buf, []byte{'\r'})
	if string(d.buf) == `\.` {
		return false, nil
	}
	return true, nil
}

// split parses d.buf into d.fields.
func (d *CopyDecoder) split() error {
	d.fields = d.fields[:0]
	d.arena = d.arena[:0]
	if d.o.Format == CopyCSV {
		return d.splitCSV()
	}
	s, delim, null := d.buf, d.o.Delimiter, d.o.Null
	for i := 0; ; {
		start, out := i, len(d.arena)
		for i < len(s) && s[i] != delim {
			c := s[i]
			i++
			if c != '\\' || i >= len(s) {
				d.arena = append(d.arena, c)
				continue
			}
			c = s[i]
			i++
			switch c {
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(c - '0')
				for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
					v = v*8 + int(s[i]-'0')
					i++
				}
				c = byte(v)
			case 'x':
				if i < len(s) && isHex(s[i]) {
					v := hexVal(s[i])
					i++
					if i < len(s) && isHex(s[i]) {
						v = v*16 + hexVal(s[i])
						i++
					}
					c = byte(v)
				}
			}
			d.arena = append(d.arena, c)
		}
		if string(s[start:i]) == null {
			d.arena = d.arena[:out]
			d.fields = append(d.fields, nil)
		} else {
			d.fields = append(d.fields, d.arena[out:len(d.arena):len(d.arena)])
		}
		if i >= len(s) {
			return nil
		}
		i++ // the delimiter
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c <= '9':
		return int(c - '0')
	case c >= 'a':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// splitCSV is CopyReadAttributesCSV.
func (d *CopyDecoder) splitCSV() error {
	o := &d.o
	s := d.buf
	for i, col := 0, 0; ; col++ {
		start, out := i, len(d.arena)
		sawQuote := false
	field:
		for {
			for {
				if i >= len(s) {
					break field
				}
				c := s[i]
				i++
				if c == o.Delimiter {
					i-- // end of field, below
					break field
				}
				if c == o.Quote {
					sawQuote = true
					break
				}
				d.arena = append(d.arena, c)
			}
			for {
				if i >= len(s) {
					return d.fail(pgerror.BadCopyFileFormat, "unterminated CSV quoted field")
				}
				c := s[i]
				i++
				if c == o.Escape && i < len(s) && (s[i] == o.Escape || s[i] == o.Quote) {
					d.arena = append(d.arena, s[i])
					i++
					continue
				}
				if c == o.Quote {
					break
				}
				d.arena = append(d.arena, c)
			}
		}
		raw := s[start:i]
		val := d.arena[out:len(d.arena):len(d.arena)]
		isNull := !sawQuote && string(raw) == o.Null
		if isNull && o.ForceNotNull != nil && col < len(o.ForceNotNull) && o.ForceNotNull[col] {
			isNull = false
		} else if !isNull && sawQuote && o.ForceNull != nil && col < len(o.ForceNull) && o.ForceNull[col] && string(val) == o.Null {
			isNull = true
		}
		if isNull {
			d.arena = d.arena[:out]
			d.fields = append(d.fields, nil)
		} else {
			d.fields = append(d.fields, val)
		}
		if i >= len(s) {
			return nil
		}
		i++ // the delimiter
	}
}

// header checks (HEADER MATCH) or skips the header line.
func (d *CopyDecoder) header() error {
	if !d.o.HeaderMatch {
		return nil
	}
	if err := d.split(); err != nil {
		return err
	}
	if len(d.fields) != len(d.names) {
		return d.fail(pgerror.BadCopyFileFormat, "wrong number of fields in header line: got %d, expected %d", len(d.fields), len(d.names))
	}
	for i, f := range d.fields {
		if f == nil {
			return d.fail(pgerror.BadCopyFileFormat, "column name mismatch in header line field %d: got null value (\"%s\"), expected \"%s\"", i+1, d.o.Null, d.names[i])
		}
		if string(f) != d.names[i] {
			return d.fail(pgerror.BadCopyFileFormat, "column name mismatch in header line field %d: got \"%s\", expected \"%s\"", i+1, f, d.names[i])
		}
	}
	return nil
}

func (d *CopyDecoder) parseRow() (Row, error) {
	if err := d.split(); err != nil {
		return nil, err
	}
	if len(d.types) == 0 && len(d.fields) == 1 && len(d.buf) == 0 {
		return d.row, nil // no columns: an empty line is a row
	}
	if len(d.fields) > len(d.types) {
		return nil, pgerror.New(pgerror.BadCopyFileFormat, "extra data after last expected column").
			WithWhere("%s: \"%s\"", d.Where(), d.buf)
	}
	if len(d.fields) < len(d.types) {
		return nil, pgerror.New(pgerror.BadCopyFileFormat, "missing data for column \"%s\"", d.names[len(d.fields)]).
			WithWhere("%s: \"%s\"", d.Where(), d.buf)
	}
	for i, f := range d.fields {
		if f == nil {
			d.row[i] = NullValue
			continue
		}
		if !utf8.Valid(f) {
			return nil, pgerror.New(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\"").
				WithWhere("%s, column %s", d.Where(), d.names[i])
		}
		v, err := ParseText(d.types[i], string(f))
		if err != nil {
			return nil, pgerror.Flatten(err).WithWhere("%s, column %s: \"%s\"", d.Where(), d.names[i], f)
		}
		d.row[i] = v
	}
	return d.row, nil
}

// nextBinary reads one tuple (the signature and header first).
func (d *CopyDecoder) nextBinary() (Row, error) {
	if d.line == 0 {
		var hdr [19]byte
		if _, err := io.ReadFull(d.r, hdr[:]); err != nil || !bytes.Equal(hdr[:11], copySignature) {
			return nil, pgerror.New(pgerror.BadCopyFileFormat, "COPY file signature not recognized").WithWhere("COPY %s, line 0", d.rel)
		}
		flags := binary.BigEndian.Uint32(hdr[11:])
		if flags&(1<<16) != 0 {
			return nil, pgerror.New(pgerror.BadCopyFileFormat, "invalid COPY file header (WITH OIDS)").WithWhere("COPY %s, line 0", d.rel)
		}
		if flags&^(0xffff<<16) != 0 {
			return nil, pgerror.New(pgerror.BadCopyFileFormat, "unrecognized critical flags in COPY file header").WithWhere("COPY %s, line 0", d.rel)
		}
		ext := int64(binary.BigEndian.Uint32(hdr[15:]))
		if _, err := io.CopyN(io.Discard, d.r, ext); err != nil {
			return nil, pgerror.New(pgerror.BadCopyFileFormat, "invalid COPY file header (wrong length)").WithWhere("COPY %s, line 0", d.rel)
		}
	}
	d.line++
	var n [4]byte
	if _, err := io.ReadFull(d.r, n[:2]); err != nil {
		if err == io.EOF {
			// PostgreSQL accepts the end of the data in place of the trailer.
			d.done = true
			return nil, io.EOF
		}
		return nil, d.eof(err)
	}
	count := int16(binary.BigEndian.Uint16(n[:2]))
	if count == -1 {
		d.done = true
		return nil, io.EOF
	}
	if int(count) != len(d.types) {
		return nil, d.fail(pgerror.BadCopyFileFormat, "row field count is %d, expected %d", count, len(d.types))
	}
	for i, t := range d.types {
		if _, err := io.ReadFull(d.r, n[:]); err != nil {
			return nil, d.eof(err)
		}
		l := int32(binary.BigEndian.Uint32(n[:]))
		if l == -1 {
			d.row[i] = NullValue
			continue
		}
		if l < -1 {
			return nil, pgerror.New(pgerror.BadCopyFileFormat, "invalid field size").WithWhere("%s, column %s", d.Where(), d.names[i])
		}
		if cap(d.arena) < int(l) {
			d.arena = make([]byte, l)
		}
		b := d.arena[:l]
		if _, err := io.ReadFull(d.r, b); err != nil {
			return nil, d.eof(err)
		}
		v, err := ParseBinary(t, b)
		if err != nil {
			return nil, pgerror.Flatten(err).WithWhere("%s, column %s", d.Where(), d.names[i])
		}
		d.row[i] = v
	}
	return d.row, nil
}

func (d *CopyDecoder) eof(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.fail(pgerror.BadCopyFileFormat, "unexpected EOF in COPY data")
	}
	return err
}
