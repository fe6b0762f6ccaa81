package sql

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

// FuzzParse checks that Parse never panics, that every error carries a
// SQLSTATE and a position inside the text, and that what Parse accepts
// prints (Format) without panicking. FuzzFormatRoundTrip checks what it
// prints.
func FuzzParse(f *testing.F) {
	for _, c := range fuzzSeeds() {
		f.Add(c)
	}
	for _, c := range sltSeeds(f) {
		f.Add(c)
	}
	catchPanics = false
	defer func() { catchPanics = true }()
	f.Fuzz(func(t *testing.T, text string) {
		stmts, err := Parse(text)
		if err != nil {
			var pe *pgerror.Error
			if !errors.As(err, &pe) || len(pe.Code.String()) != 5 {
				t.Fatalf("Parse(%q): error without SQLSTATE: %v", text, err)
			}
			if pe.Position < 0 || pe.Position > len([]rune(text))+1 {
				t.Fatalf("Parse(%q): position %d out of range", text, pe.Position)
			}
			return
		}
		for _, s := range stmts {
			_ = Format(s.Stmt)
		}
	})
}

// FuzzFormatRoundTrip checks that every statement Parse accepts (but
// *Unsupported, also under EXPLAIN, which is not parsed further) prints as SQL that parses
// again, to one statement that prints the same: Format is a fixed point
// after one round. TestFormatRoundTrip checks the same on the data-driven
// tests' inputs alone.
func FuzzFormatRoundTrip(f *testing.F) {
	for _, c := range fuzzSeeds() {
		f.Add(c)
	}
	for _, c := range sltSeeds(f) {
		f.Add(c)
	}
	catchPanics = false
	defer func() { catchPanics = true }()
	f.Fuzz(func(t *testing.T, text string) {
		stmts, err := Parse(text)
		if err != nil {
			return
		}
		for _, s := range stmts {
			stmt := s.Stmt
			if e, ok := stmt.(*Explain); ok {
				stmt = e.Stmt
			}
			if _, ok := stmt.(*Unsupported); ok {
				continue // prints as a comment: it has no SQL of its own
			}
			first := Format(s.Stmt)
			again, err := Parse(first)
			if err != nil {
				t.Fatalf("%q prints as %q, which does not parse: %v", s.SQL, first, err)
			}
			if len(again) != 1 {
				t.Fatalf("%q prints as %q, which parses to %d statements", s.SQL, first, len(again))
			}
			if second := Format(again[0].Stmt); second != first {
				t.Fatalf("%q prints as %q, which prints as %q", s.SQL, first, second)
			}
		}
	})
}

// sltDir holds the SQL logic suite, whose statements seed the fuzzers.
const sltDir = "../tests/sqllogic/testdata"

// maxSLTSeeds bounds the seeds taken from the SQL logic suite.
const maxSLTSeeds = 400

// sltSeeds returns the distinct SQL texts of the statement and query
// records of the SQL logic suite (.slt files: a record's SQL follows its
// "statement …" or "query …" line, up to a blank line or "----"), at most
// maxSLTSeeds of them, evenly spread over the suite. They are read at run
// time, not copied into testdata/fuzz, which holds only the inputs the
// fuzzers found failing (each fixed since, and run by every go test).
func sltSeeds(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(sltDir, "*.slt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no SQL logic files in %s: %v", sltDir, err)
	}
	var seeds []string
	seen := map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var cur []string
		inSQL := false
		flush := func() {
			if text := strings.Join(cur, "\n"); text != "" && !seen[text] {
				seen[text] = true
				seeds = append(seeds, text)
			}
			cur, inSQL = nil, false
		}
		for _, line := range strings.Split(string(data), "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case inSQL && (trimmed == "" || trimmed == "----"):
				flush()
			case inSQL:
				cur = append(cur, line)
			case strings.HasPrefix(trimmed, "statement ") || strings.HasPrefix(trimmed, "query "):
				inSQL = true
			}
		}
		flush()
	}
	if len(seeds) <= maxSLTSeeds {
		return seeds
	}
	out := make([]string, 0, maxSLTSeeds)
	for i := range maxSLTSeeds {
		out = append(out, seeds[i*len(seeds)/maxSLTSeeds])
	}
	return out
}

// fuzzSeeds are the inputs of the data-driven tests.
func fuzzSeeds() []string {
	seeds := []string{"SELECT 1", "", ";", "SELECT $1::int", "E'\\x41'", "$$a$$", "/* /* */ */"}
	files, _ := filepath.Glob("testdata/*")
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			continue
		}
		cases, err := parseCases(data)
		if err != nil {
			continue
		}
		for _, c := range cases {
			seeds = append(seeds, c.input)
		}
	}
	return seeds
}

// BenchmarkParseInsert parses a 1000-row INSERT … VALUES statement.
func BenchmarkParseInsert(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("INSERT INTO trades (sym, price, qty, ts) VALUES ")
	const rows = 1000
	for i := 0; i < rows; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("('SYM" + strconv.Itoa(i%50) + "', " + strconv.Itoa(i) + ".25, " + strconv.Itoa(i*10) + ", '2026-01-01 09:00:00')")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestInvalidUTF8 pins what FuzzFormatRoundTrip found: text that is not
// UTF-8 is refused as a whole (22021, naming the bad bytes as PostgreSQL
// does), not accepted in a literal that then prints as an E” string
// which does not parse.
func TestInvalidUTF8(t *testing.T) {
	for text, want := range map[string]string{
		"SELECT'\xb9\x1d'":     `ERROR 22021 at 8: invalid byte sequence for encoding "UTF8": 0xb9`,
		"SELECT 'ab\xe2\x82'":  `ERROR 22021 at 11: invalid byte sequence for encoding "UTF8": 0xe2 0x82 0x27`,
		"SELECT 1 AS \"\xff\"": `ERROR 22021 at 14: invalid byte sequence for encoding "UTF8": 0xff`,
		"SELECT 'a\x00b'":      `ERROR 22021 at 10: invalid byte sequence for encoding "UTF8": 0x00`,
		"SELECT 'é' -- \xc3":   `ERROR 22021 at 15: invalid byte sequence for encoding "UTF8": 0xc3`,
	} {
		_, err := Parse(text)
		var pe *pgerror.Error
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want %s", text, err, want)
			continue
		}
		if got := "ERROR " + pe.Code.String() + " at " + strconv.Itoa(pe.Position) + ": " + pe.Message; got != want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", text, got, want)
		}
	}
}
