package types

import (
	"bytes"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

// TestCopyFormatsRoundTrip: what CopyEncoder writes, CopyDecoder reads
// back, in every format, for the strings that break COPY formats; and
// the text and CSV bytes are PostgreSQL's.
func TestCopyFormatsRoundTrip(t *testing.T) {
	strs := []string{"", `\N`, `\.`, "a\tb", "x\ny", "c\rd", `b\s`, `"q"`, "a,b", "\b\f\v", "ü"}
	ts := []Type{Int8, Text}
	var rows []Row
	for i, s := range strs {
		rows = append(rows, Row{NewInt8(int64(i)), NewText(s)})
	}
	rows = append(rows, Row{NullValue, NullValue})
	for _, f := range []CopyFormat{CopyText, CopyCSV, CopyBinary} {
		o := DefaultCopyOptions(f)
		o.Header = f != CopyBinary
		enc := NewCopyEncoder(o, ts)
		buf := enc.AppendHeader(nil, []string{"id", "s"})
		for _, r := range rows {
			var err error
			if buf, err = enc.AppendRow(buf, r); err != nil {
				t.Fatal(err)
			}
		}
		buf = enc.AppendTrailer(buf)
		dec := NewCopyDecoder(bytes.NewReader(buf), o, "s", []string{"id", "s"}, ts)
		for i, want := range rows {
			got, err := dec.Next()
			if err != nil {
				t.Fatalf("format %d row %d: %v", f, i, err)
			}
			if got[0].IsNull() != want[0].IsNull() || got[1].IsNull() != want[1].IsNull() || got[1].S != want[1].S {
				t.Fatalf("format %d row %d: got %v, want %v", f, i, got, want)
			}
		}
		if _, err := dec.Next(); err == nil {
			t.Fatalf("format %d: no end", f)
		}
	}
	// PostgreSQL's bytes for a few rows.
	enc := NewCopyEncoder(DefaultCopyOptions(CopyText), ts)
	out, _ := enc.AppendRow(nil, Row{NewInt8(1), NewText("a\tb\\c\n")})
	if string(out) != "1\ta\\tb\\\\c\\n\n" {
		t.Errorf("text: %q", out)
	}
	enc = NewCopyEncoder(DefaultCopyOptions(CopyCSV), ts)
	out, _ = enc.AppendRow(nil, Row{NullValue, NewText(`say "hi", ok`)})
	out, _ = enc.AppendRow(out, Row{NewInt8(2), NewText("")})
	if string(out) != ",\"say \"\"hi\"\", ok\"\n2,\"\"\n" {
		t.Errorf("csv: %q", out)
	}
}

// TestCopyDecoderErrors: the codes and CONTEXT of bad input.
func TestCopyDecoderErrors(t *testing.T) {
	ts := []Type{Int4, Text}
	for _, c := range []struct {
		f           CopyFormat
		in          string
		code, where string
	}{
		{CopyText, "1\tx\nz\ty\n", "22P02", `COPY s, line 2, column a: "z"`},
		{CopyText, "1\n", "22P04", `COPY s, line 1: "1"`},
		{CopyText, "1\\x41\ty\n", "22P02", `COPY s, line 1, column a: "1A"`},
		{CopyCSV, "1,\"x\n", "22P04", "COPY s, line 1"},
		{CopyBinary, "PGCOPY\n", "22P04", "COPY s, line 0"},
	} {
		dec := NewCopyDecoder(bytes.NewReader([]byte(c.in)), DefaultCopyOptions(c.f), "s", []string{"a", "b"}, ts)
		var err error
		for err == nil {
			_, err = dec.Next()
		}
		pe := pgerror.Flatten(err)
		if pe.Code.String() != c.code || pe.Where != c.where {
			t.Errorf("%q: %v (%s, %q), want %s %q", c.in, err, pe.Code, pe.Where, c.code, c.where)
		}
	}
}
