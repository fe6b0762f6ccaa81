package planner_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
)

// The golden plans of continuous queries live in testdata/explain/*.txt.
// Each case is a command line, the input (a statement), a line "----",
// the expected output, and a blank line:
//
//	create
//	CREATE MATERIALIZED VIEW v AS SELECT k, count(*) FROM s GROUP BY k
//	----
//	stage s0: s -> v.repartition
//	…
//
// Commands:
//
//	stream   CREATE STREAM: the relation goes into the catalog; prints "ok" or the error.
//	create   CREATE … AS: the pipeline's EXPLAIN (its topology), and its
//	         relations go into the catalog as the server records them, so
//	         that later cases can read them; or the error.
//	explain  The same EXPLAIN, nothing recorded.
//
// The output is EXPLAIN's without its blank lines; an error prints as
// "error SQLSTATE: message". These files pin today's topologies: a change
// to the planner that changes one shows here, in review. Run
// `go test ./planner -run TestExplainGolden -rewrite` to write what the
// planner now makes.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the golden EXPLAIN files")

func TestExplainGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/explain/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runExplainFile(t, file) })
	}
}

type goldenCase struct {
	comment          string // the lines of # before it
	cmd, input, want string
	line             int
}

func parseGolden(text string) ([]goldenCase, error) {
	lines := strings.Split(text, "\n")
	var cases []goldenCase
	var comment strings.Builder
	for i := 0; i < len(lines); {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			if l != "" {
				comment.WriteString(l + "\n")
			}
			i++
			continue
		}
		c := goldenCase{comment: comment.String(), cmd: l, line: i + 1}
		comment.Reset()
		i++
		var in []string
		for i < len(lines) && lines[i] != "----" {
			if strings.TrimSpace(lines[i]) == "" {
				return nil, fmt.Errorf("line %d: a blank line before ----", i+1)
			}
			in = append(in, lines[i])
			i++
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: no ----", c.line)
		}
		i++
		var want []string
		for i < len(lines) && lines[i] != "" {
			want = append(want, lines[i])
			i++
		}
		c.input, c.want = strings.Join(in, "\n"), strings.Join(want, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

func runExplainFile(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := parseGolden(string(data))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cat := newCatalog(t)
	offset := int64(0)
	record := func(r *catalog.Relation) error {
		b, err := catalog.Encode(r)
		if err != nil {
			return err
		}
		offset++
		_, err = cat.Apply(offset, r.Name, b)
		return err
	}
	var out strings.Builder
	for _, c := range cases {
		got := runGolden(cat, c, record)
		if *rewrite {
			if c.comment != "" {
				out.WriteString(c.comment + "\n")
			}
			fmt.Fprintf(&out, "%s\n%s\n----\n%s\n\n", c.cmd, c.input, got)
			continue
		}
		if got != c.want {
			t.Errorf("%s:%d: %s\n%s\ngot:\n%s\nwant:\n%s", file, c.line, c.cmd, c.input, got, c.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runGolden(cat *catalog.Catalog, c goldenCase, record func(*catalog.Relation) error) string {
	fail := func(err error) string {
		var pe *pgerror.Error
		if errors.As(err, &pe) {
			return "error " + pe.Code.String() + ": " + pe.Message
		}
		return "error: " + err.Error()
	}
	stmts, err := sql.Parse(c.input)
	if err != nil {
		return fail(err)
	}
	switch c.cmd {
	case "stream":
		cs, ok := stmts[0].Stmt.(*sql.CreateStream)
		if !ok {
			return "error: not CREATE STREAM"
		}
		rel, err := planner.PlanCreateStream(cs)
		if err == nil {
			err = record(rel)
		}
		if err != nil {
			return fail(err)
		}
		return "ok"
	case "create", "explain":
		ca, ok := stmts[0].Stmt.(*sql.CreateAs)
		if !ok {
			return "error: not CREATE … AS"
		}
		plan, err := planner.PlanContinuous(cat, ca)
		if err != nil {
			return fail(err)
		}
		var lines []string
		for _, l := range strings.Split(plan.Topology.String(), "\n") {
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		if c.cmd == "create" {
			if plan.Rel.Plan, err = json.Marshal(plan.Topology); err != nil {
				return fail(err)
			}
			plan.Rel.SQL = c.input
			for _, r := range []*catalog.Relation{plan.Errors, plan.Changes, plan.Rel} {
				if r == nil {
					continue
				}
				if err := record(r); err != nil {
					return fail(err)
				}
			}
		}
		return strings.Join(lines, "\n")
	}
	return "error: unknown command " + c.cmd
}
