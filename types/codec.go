package types

import (
	"bytes"
	"encoding/csv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
)

// Codec turns a record payload into a row of values and back.
type Codec interface {
	// Decode fills dst (Width() values) from a payload.
	Decode(data []byte, dst Row) error
	// Append appends the payload of row's first Width() values.
	Append(buf []byte, row Row) []byte
	// Width is the number of columns.
	Width() int
}

var (
	_ Codec = (*JSONCodec)(nil)
	_ Codec = (*CSVCodec)(nil)
	_ Codec = (*TextCodec)(nil)
	_ Codec = (*BinaryCodec)(nil)
)

// InternalFormat is the format of the topics fvsql's pipelines write for
// themselves (repartition and join stages): BinaryCodec. It is not one of
// Formats: streams users declare cannot use it.
const InternalFormat = "fvsql-binary"

// BinaryCodec is the row format of internal topics: the values one after
// the other in AppendValue's encoding. It keeps every value's type and
// precision and costs a fraction of JSON to write and read.
type BinaryCodec struct{ width int }

// NewBinaryCodec returns the codec of rows of width values.
func NewBinaryCodec(width int) *BinaryCodec { return &BinaryCodec{width: width} }

// Width implements Codec.
func (c *BinaryCodec) Width() int { return c.width }

// Append implements Codec.
func (c *BinaryCodec) Append(buf []byte, row Row) []byte { return AppendValues(buf, row[:c.width]) }

// Decode implements Codec.
func (c *BinaryCodec) Decode(data []byte, dst Row) error {
	for i := 0; i < c.width; i++ {
		v, rest, err := DecodeValue(data)
		if err != nil {
			return err
		}
		dst[i], data = v, rest
	}
	if len(data) != 0 {
		return errBadValue
	}
	return nil
}

// Formats names the record formats streams can use.
var Formats = []string{"json", "csv", "text"}

// NewCodec returns the codec of a format for columns.
func NewCodec(format string, names []string, types []Type) (Codec, error) {
	switch strings.ToLower(format) {
	case "", "json":
		return NewJSONCodec(names, types), nil
	case InternalFormat:
		return NewBinaryCodec(len(types)), nil
	case "csv":
		return &CSVCodec{types: types}, nil
	case "text":
		if len(types) != 1 || !types[0].IsString() {
			return nil, pgerror.New(pgerror.InvalidParameterValue, "format text needs exactly one text column (the line)")
		}
		return &TextCodec{t: types[0]}, nil
	}
	return nil, pgerror.New(pgerror.InvalidParameterValue, "unknown format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// CSVCodec reads and writes one CSV line per record, columns in order;
// an empty unquoted field is NULL.
type CSVCodec struct{ types []Type }

// Width implements Codec.
func (c *CSVCodec) Width() int { return len(c.types) }

// Decode implements Codec.
func (c *CSVCodec) Decode(data []byte, dst Row) error {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err != nil {
		return pgerror.New(pgerror.InvalidTextRepresentation, "invalid CSV record: %v", err)
	}
	if len(rec) != len(c.types) {
		return pgerror.New(pgerror.InvalidTextRepresentation, "CSV record has %d fields, the stream %d columns", len(rec), len(c.types))
	}
	for i, f := range rec {
		if f == "" {
			dst[i] = NullValue
			continue
		}
		v, err := ParseText(c.types[i], f)
		if err != nil {
			return pgerror.Wrap(err, pgerror.InvalidTextRepresentation, "CSV field %d", i+1)
		}
		dst[i] = v
	}
	return nil
}

// Append implements Codec.
func (c *CSVCodec) Append(buf []byte, row Row) []byte {
	for i, v := range row[:len(c.types)] {
		if i > 0 {
			buf = append(buf, ',')
		}
		if v.IsNull() {
			continue
		}
		s := v.Text()
		if s == "" || strings.ContainsAny(s, ",\"\r\n") {
			buf = append(buf, '"')
			buf = append(buf, strings.ReplaceAll(s, `"`, `""`)...)
			buf = append(buf, '"')
			continue
		}
		buf = append(buf, s...)
	}
	return buf
}

// TextCodec treats the whole payload as one text column.
type TextCodec struct{ t Type }

// Width implements Codec.
func (c *TextCodec) Width() int { return 1 }

// Decode implements Codec.
func (c *TextCodec) Decode(data []byte, dst Row) error {
	v, err := ParseText(c.t, strings.TrimRight(string(data), "\r\n"))
	if err != nil {
		return err
	}
	dst[0] = v
	return nil
}

// Append implements Codec.
func (c *TextCodec) Append(buf []byte, row Row) []byte {
	if row[0].IsNull() {
		return buf
	}
	return append(buf, row[0].Text()...)
}
