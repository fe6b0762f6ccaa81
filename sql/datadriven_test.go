package sql

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// The data-driven tests live in testdata/*. Each case is a command line,
// the input, a line "----", the expected output, and a blank line:
//
//	parse
//	SELECT 1
//	----
//	Query: SELECT 1
//
// Commands:
//
//	parse  Parse the input; print "Type: Format(stmt)" per statement, or the error.
//	tree   Parse the input; print the AST as an indented tree (node types and fields).
//	expr   ParseExpr the input; print "Type: FormatExpr(e)" or the error.
//
// Run `go test ./sql -run DataDriven -rewrite` to regenerate expectations.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of data-driven tests")

type ddCase struct {
	cmd, input, want string
	line             int
}

func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		if fi, err := os.Stat(file); err == nil && fi.IsDir() {
			continue // testdata/fuzz: the fuzz targets' corpus
		}
		t.Run(filepath.Base(file), func(t *testing.T) { runDataDriven(t, file) })
	}
}

func runDataDriven(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := parseCases(string(data))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out strings.Builder
	for i, c := range cases {
		got := runCommand(c.cmd, c.input)
		if *rewrite {
			if i > 0 {
				out.WriteString("\n")
			}
			fmt.Fprintf(&out, "%s\n%s\n----\n%s\n", c.cmd, c.input, got)
			continue
		}
		if got != c.want {
			t.Errorf("%s:%d: %s\n%s\n--- got:\n%s\n--- want:\n%s", file, c.line, c.cmd, c.input, got, c.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseCases splits a test file into cases. Lines starting with # between
// cases are comments.
func parseCases(data string) ([]ddCase, error) {
	lines := strings.Split(data, "\n")
	var cases []ddCase
	for i := 0; i < len(lines); {
		if l := strings.TrimSpace(lines[i]); l == "" || strings.HasPrefix(l, "#") {
			i++
			continue
		}
		c := ddCase{cmd: strings.TrimSpace(lines[i]), line: i + 1}
		i++
		var in []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			in = append(in, lines[i])
		}
		if i >= len(lines) {
			return nil, fmt.Errorf("line %d: missing ----", c.line)
		}
		i++
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		c.input, c.want = strings.Join(in, "\n"), strings.Join(want, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

func runCommand(cmd, input string) string {
	switch cmd {
	case "parse", "tree":
		stmts, err := Parse(input)
		if err != nil {
			return formatError(err)
		}
		var b strings.Builder
		for i, s := range stmts {
			if i > 0 {
				b.WriteString("\n")
			}
			if cmd == "tree" {
				dump(&b, reflect.ValueOf(s.Stmt), 0)
				continue
			}
			fmt.Fprintf(&b, "%s: %s", typeName(s.Stmt), Format(s.Stmt))
		}
		if len(stmts) == 0 {
			return "(no statements)"
		}
		return strings.TrimRight(b.String(), "\n")
	case "expr":
		e, err := ParseExpr(input)
		if err != nil {
			return formatError(err)
		}
		return fmt.Sprintf("%s: %s", typeName(e), FormatExpr(e))
	}
	return "unknown command " + cmd
}

func typeName(v any) string { return strings.TrimPrefix(fmt.Sprintf("%T", v), "*sql.") }

func formatError(err error) string {
	var pe *pgerror.Error
	if !errors.As(err, &pe) {
		return fmt.Sprintf("ERROR (no SQLSTATE): %v", err)
	}
	s := fmt.Sprintf("ERROR %s", pe.Code)
	if pe.Position > 0 {
		s += fmt.Sprintf(" at %d", pe.Position)
	}
	return s + ": " + pe.Message
}

var valueType = reflect.TypeOf(types.Value{})

// dump prints v as an indented tree: node types, then non-zero fields.
func dump(b *strings.Builder, v reflect.Value, depth int) {
	pad := strings.Repeat("  ", depth)
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			b.WriteString("nil\n")
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == valueType:
		val := v.Interface().(types.Value)
		fmt.Fprintf(b, "%s(%s)\n", typeLabel(val.K), val.String())
	case v.Kind() == reflect.Struct:
		b.WriteString(v.Type().Name() + "\n")
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.IsZero() && f.Type() != valueType || v.Type().Field(i).Name == "Pos" {
				continue // positions are for errors, not the tree
			}
			fmt.Fprintf(b, "%s  %s: ", pad, v.Type().Field(i).Name)
			dump(b, f, depth+1)
		}
	case v.Kind() == reflect.Slice:
		b.WriteString("[]\n")
		for i := 0; i < v.Len(); i++ {
			fmt.Fprintf(b, "%s  - ", pad)
			dump(b, v.Index(i), depth+2)
		}
	case v.Kind() == reflect.String:
		fmt.Fprintf(b, "%q\n", v.String())
	default:
		fmt.Fprintf(b, "%v\n", v.Interface())
	}
}

func typeLabel(t types.Type) string {
	switch t {
	case types.Null:
		return "null"
	case types.Unknown:
		return "unknown"
	}
	return t.String()
}

func readFile(name string) (string, error) {
	data, err := os.ReadFile(name)
	return string(data), err
}

// TestFormatRoundTrip checks that Format prints SQL that Parse reads back
// to the same statement, for every statement of the data-driven tests.
func TestFormatRoundTrip(t *testing.T) {
	for _, input := range fuzzSeeds() {
		stmts, err := Parse(input)
		if err != nil {
			continue
		}
		for _, s := range stmts {
			if _, ok := s.Stmt.(*Unsupported); ok {
				continue
			}
			first := Format(s.Stmt)
			again, err := Parse(first)
			if err != nil {
				t.Errorf("%q printed as %q, which fails: %v", s.SQL, first, err)
				continue
			}
			if len(again) != 1 || Format(again[0].Stmt) != first {
				t.Errorf("%q printed as %q, reprinted differently", s.SQL, first)
			}
		}
	}
}
