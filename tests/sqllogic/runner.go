package sqllogic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Kind is the kind of a Record.
type Kind int

const (
	// Statement runs SQL and expects success ("statement ok"), success with a
	// number of affected rows ("statement count N") or an error
	// ("statement error ...").
	Statement Kind = iota + 1
	// Query runs SQL and compares its rows with the expected ones, or expects
	// an error ("query error ...").
	Query
	// Halt stops the file: the records after it are not run.
	Halt
	// Sleep pauses for Record.Sleep.
	Sleep
)

func (k Kind) String() string {
	switch k {
	case Statement:
		return "statement"
	case Query:
		return "query"
	case Halt:
		return "halt"
	case Sleep:
		return "sleep"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// SortMode tells how query results are ordered before they are compared.
type SortMode int

const (
	// NoSort compares rows in the order the server sent them.
	NoSort SortMode = iota
	// RowSort sorts the rows, as their text lines, on both sides.
	RowSort
	// ValueSort sorts all whitespace-separated values of the result on both
	// sides, ignoring row boundaries.
	ValueSort
)

func (m SortMode) String() string {
	switch m {
	case NoSort:
		return "nosort"
	case RowSort:
		return "rowsort"
	case ValueSort:
		return "valuesort"
	}
	return "SortMode(" + strconv.Itoa(int(m)) + ")"
}

// Record is one test case of a sqllogictest file.
type Record struct {
	Line int  // 1-based line of the record's directive ("statement ...", "query ...")
	Kind Kind // what the record does

	SQL string // the SQL text, lines joined by "\n" (Statement, Query)

	// ExpectError is set for "statement error" and "query error". ErrorCode is
	// the SQLSTATE the error must have, or else ErrorPattern (when non-nil) a
	// regexp the error message must match; with neither, any error from the
	// server passes.
	ExpectError  bool
	ErrorCode    string
	ErrorPattern *regexp.Regexp

	// RowCount is the number of affected rows "statement count N" expects, or
	// -1.
	RowCount int64

	Types    string   // query type string, e.g. "ITR": one letter per column
	Sort     SortMode // query sort mode
	Expected []string // expected result lines of a query, as written

	Sleep time.Duration // for Sleep records

	OnlyIf []string // labels that must all be active to run the record
	SkipIf []string // labels any of which, when active, skips the record
}

// Active reports whether the record runs when the given labels are active.
func (r *Record) Active(labels []string) bool {
	for _, l := range r.OnlyIf {
		if !slices.Contains(labels, l) {
			return false
		}
	}
	for _, l := range r.SkipIf {
		if slices.Contains(labels, l) {
			return false
		}
	}
	return true
}

var sqlstateRE = regexp.MustCompile(`^[0-9A-Z]{5}$`)

// isSQLSTATE reports whether s is written like a SQLSTATE code: five digits
// or upper-case letters, at least one of them a digit (every code defined by
// PostgreSQL has one, which keeps words such as "TABLE" usable as regexps).
func isSQLSTATE(s string) bool {
	return sqlstateRE.MatchString(s) && strings.ContainsAny(s, "0123456789")
}

// Parse reads a sqllogictest file. name is used in error messages only.
//
// The format is the classic sqllogictest subset used by RisingWave and
// CockroachDB; records are separated by blank lines:
//
//	# a comment
//	statement ok
//	CREATE TABLE t (a INT, b TEXT)
//
//	statement count 2
//	INSERT INTO t VALUES (1, 'x y'), (2, NULL)
//
//	statement error 42P01
//	SELECT * FROM missing
//
//	statement error syntax error at or near
//	SELEC 1
//
//	query IT rowsort
//	SELECT a, b FROM t
//	----
//	1 x y
//	2 NULL
//
//	query error division by zero
//	SELECT 1/0
//
//	onlyif real
//	sleep 500ms
//
//	skipif embedded
//	halt
//
// "skipif LABEL" and "onlyif LABEL" lines apply to the next record.
// "hash-threshold N" lines are accepted and ignored.
func Parse(name string, r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}

	var (
		records        []Record
		onlyIf, skipIf []string
	)
	blank := func(i int) bool { return strings.TrimSpace(lines[i]) == "" }
	fail := func(i int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, i+1, fmt.Sprintf(format, args...))
	}
	// body collects lines from i until a blank line, or a "----" line when
	// stopAtDashes is set; it returns the lines and the index after them.
	body := func(i int, stopAtDashes bool) ([]string, int) {
		var out []string
		for ; i < len(lines) && !blank(i); i++ {
			if stopAtDashes && strings.TrimSpace(lines[i]) == "----" {
				break
			}
			out = append(out, lines[i])
		}
		return out, i
	}

	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		fields := strings.Fields(line)
		rec := Record{Line: i + 1, RowCount: -1}
		switch fields[0] {
		case "onlyif", "skipif":
			if len(fields) < 2 {
				return nil, fail(i, "%s needs a label", fields[0])
			}
			if fields[0] == "onlyif" {
				onlyIf = append(onlyIf, fields[1])
			} else {
				skipIf = append(skipIf, fields[1])
			}
			i++
			continue
		case "hash-threshold":
			i++
			continue
		case "halt":
			rec.Kind = Halt
			i++
		case "sleep":
			if len(fields) != 2 {
				return nil, fail(i, "sleep needs one duration, e.g. sleep 500ms")
			}
			d, err := time.ParseDuration(fields[1])
			if err != nil || d < 0 {
				return nil, fail(i, "bad sleep duration %q", fields[1])
			}
			rec.Kind, rec.Sleep = Sleep, d
			i++
		case "statement":
			rec.Kind = Statement
			if len(fields) < 2 {
				return nil, fail(i, "statement needs ok, error or count")
			}
			switch fields[1] {
			case "ok":
				if len(fields) > 2 {
					return nil, fail(i, "unexpected text after statement ok: %q", strings.Join(fields[2:], " "))
				}
			case "count":
				if len(fields) != 3 {
					return nil, fail(i, "statement count needs one number")
				}
				n, err := strconv.ParseInt(fields[2], 10, 64)
				if err != nil || n < 0 {
					return nil, fail(i, "bad row count %q", fields[2])
				}
				rec.RowCount = n
			case "error":
				if err := parseExpectedError(&rec, line); err != nil {
					return nil, fail(i, "%v", err)
				}
			default:
				return nil, fail(i, "statement must be followed by ok, error or count, not %q", fields[1])
			}
			var sql []string
			sql, i = body(i+1, false)
			if len(sql) == 0 {
				return nil, fail(rec.Line-1, "statement without SQL")
			}
			rec.SQL = strings.Join(sql, "\n")
		case "query":
			rec.Kind = Query
			if len(fields) < 2 {
				return nil, fail(i, "query needs a type string or error")
			}
			if fields[1] == "error" {
				if err := parseExpectedError(&rec, line); err != nil {
					return nil, fail(i, "%v", err)
				}
			} else {
				rec.Types = fields[1]
				if len(fields) > 2 {
					switch fields[2] {
					case "nosort":
						rec.Sort = NoSort
					case "rowsort":
						rec.Sort = RowSort
					case "valuesort":
						rec.Sort = ValueSort
					default:
						return nil, fail(i, "unknown sort mode %q (want nosort, rowsort or valuesort)", fields[2])
					}
				}
				// A fourth field is the classic format's result label; unused.
			}
			var sql []string
			sql, i = body(i+1, true)
			if len(sql) == 0 {
				return nil, fail(rec.Line-1, "query without SQL")
			}
			rec.SQL = strings.Join(sql, "\n")
			if i < len(lines) && strings.TrimSpace(lines[i]) == "----" {
				if rec.ExpectError {
					return nil, fail(i, "query error takes no expected results")
				}
				rec.Expected, i = body(i+1, false)
			}
		default:
			return nil, fail(i, "unknown directive %q", fields[0])
		}
		rec.OnlyIf, rec.SkipIf = onlyIf, skipIf
		onlyIf, skipIf = nil, nil
		records = append(records, rec)
	}
	if len(onlyIf)+len(skipIf) > 0 {
		return nil, fmt.Errorf("%s: onlyif/skipif at the end of the file applies to no record", name)
	}
	return records, nil
}

// parseExpectedError reads what follows "statement error" or "query error"
// on the directive line: nothing (any error), a SQLSTATE, or a regexp.
func parseExpectedError(rec *Record, line string) error {
	rec.ExpectError = true
	_, rest, _ := strings.Cut(line, "error")
	rest = strings.TrimSpace(rest)
	switch {
	case rest == "":
	case isSQLSTATE(rest):
		rec.ErrorCode = rest
	default:
		re, err := regexp.Compile(rest)
		if err != nil {
			return fmt.Errorf("bad error regexp %q: %v", rest, err)
		}
		rec.ErrorPattern = re
	}
	return nil
}

// Result is what a SQL text returned: the rows of its last result set that
// has columns (for a query) in PostgreSQL text format (nil is NULL), and the
// command tag of its last statement.
type Result struct {
	Columns    int
	Rows       [][]*string
	CommandTag string
	// RowsAffected is taken from the command tag of the last statement.
	RowsAffected int64
}

// Executor runs one SQL text (one or more statements, as the simple query
// protocol allows). An error the server reported must be (or wrap) a
// *pgconn.PgError; any other error means the connection is unusable.
type Executor interface {
	Exec(ctx context.Context, sql string) (Result, error)
}

// PgConnExecutor runs SQL on a pgconn connection with the simple query
// protocol, so the values compared are exactly the text the server sent.
type PgConnExecutor struct {
	Conn *pgconn.PgConn
}

// Exec implements Executor.
func (e PgConnExecutor) Exec(ctx context.Context, sql string) (Result, error) {
	var res Result
	mrr := e.Conn.Exec(ctx, sql)
	var firstErr error
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		fds := rr.FieldDescriptions()
		var rows [][]*string
		for rr.NextRow() {
			vals := rr.Values()
			row := make([]*string, len(vals))
			for i, v := range vals {
				if v != nil {
					s := string(v)
					row[i] = &s
				}
			}
			rows = append(rows, row)
		}
		tag, err := rr.Close()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if len(fds) > 0 {
			res.Columns, res.Rows = len(fds), rows
		}
		res.CommandTag, res.RowsAffected = tag.String(), tag.RowsAffected()
	}
	if err := mrr.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return res, firstErr
}

// Failure describes one record whose outcome differed from the expected one.
type Failure struct {
	File string
	Line int
	SQL  string
	Msg  string // what was expected and what happened
}

func (f Failure) String() string {
	return fmt.Sprintf("%s:%d: %s\n    SQL:\n%s", f.File, f.Line, f.Msg, indent(f.SQL, "        "))
}

// Stats counts the records of a run.
type Stats struct {
	Run, Skipped, Failed int
	Halted               bool // a halt record stopped the file
	Aborted              bool // the connection broke and the rest of the file was not run
}

// Runner runs parsed records against an Executor.
type Runner struct {
	Exec Executor
	// Labels are the active labels for onlyif/skipif, e.g. "embedded".
	Labels []string
	// Timeout bounds each record; 0 means 60 s.
	Timeout time.Duration
	// MaxFailures stops the file after this many failures; 0 means 50.
	MaxFailures int
	// Logf, when set, receives progress lines (e.g. testing.T.Logf).
	Logf func(format string, args ...any)
	// Vars are substituted for ${name} in SQL before it runs (service
	// addresses a file needs, such as ${redis} or ${kafka}).
	Vars map[string]string
}

// substitute replaces ${name} by its value in Vars.
func (r *Runner) substitute(sql string) string {
	for k, v := range r.Vars {
		sql = strings.ReplaceAll(sql, "${"+k+"}", v)
	}
	return sql
}

// Run runs the records of file in order and returns the failures. It goes on
// after a failure, but stops when the connection breaks (an error that is not
// reported by the server), at a halt record, or after MaxFailures failures.
func (r *Runner) Run(ctx context.Context, file string, records []Record) ([]Failure, Stats) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	maxFailures := r.MaxFailures
	if maxFailures <= 0 {
		maxFailures = 50
	}
	var (
		failures []Failure
		st       Stats
	)
	for i := range records {
		rec := &records[i]
		if ctx.Err() != nil {
			failures = append(failures, Failure{File: file, Line: rec.Line, SQL: rec.SQL, Msg: "not run: " + ctx.Err().Error()})
			st.Failed++
			st.Aborted = true
			break
		}
		if !rec.Active(r.Labels) {
			st.Skipped++
			continue
		}
		if rec.Kind == Halt {
			st.Halted = true
			if r.Logf != nil {
				r.Logf("%s:%d: halt", file, rec.Line)
			}
			break
		}
		st.Run++
		msg, broken := r.runRecord(ctx, timeout, rec)
		if msg == "" {
			continue
		}
		st.Failed++
		failures = append(failures, Failure{File: file, Line: rec.Line, SQL: rec.SQL, Msg: msg})
		if broken {
			st.Aborted = true
			failures[len(failures)-1].Msg += "\n    (connection unusable: the rest of the file is not run)"
			break
		}
		if len(failures) >= maxFailures {
			st.Aborted = true
			failures[len(failures)-1].Msg += fmt.Sprintf("\n    (%d failures: the rest of the file is not run)", len(failures))
			break
		}
	}
	return failures, st
}

// runRecord runs one record and returns "" when it passed, else a message;
// broken reports that the connection can not be used any more.
func (r *Runner) runRecord(ctx context.Context, timeout time.Duration, rec *Record) (msg string, broken bool) {
	if len(r.Vars) > 0 && len(rec.Expected) > 0 {
		cp := *rec
		cp.Expected = make([]string, len(rec.Expected))
		for i, l := range rec.Expected {
			cp.Expected[i] = r.substitute(l)
		}
		rec = &cp
	}
	if rec.Kind == Sleep {
		t := time.NewTimer(rec.Sleep)
		defer t.Stop()
		select {
		case <-t.C:
			return "", false
		case <-ctx.Done():
			return "sleep interrupted: " + ctx.Err().Error(), true
		}
	}

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := r.Exec.Exec(rctx, r.substitute(rec.SQL))
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		what := "failed"
		if rctx.Err() != nil {
			what = fmt.Sprintf("timed out after %s", time.Since(start).Round(time.Millisecond))
		}
		return fmt.Sprintf("%s %s: %v", rec.Kind, what, err), true
	}

	if rec.ExpectError {
		return checkError(rec, pgErr), false
	}
	if pgErr != nil {
		return fmt.Sprintf("%s failed: %s", rec.Kind, describePgError(pgErr)), false
	}
	if rec.Kind == Statement {
		if rec.RowCount >= 0 && res.RowsAffected != rec.RowCount {
			return fmt.Sprintf("statement count: expected %d rows affected, got %d (command tag %q)", rec.RowCount, res.RowsAffected, res.CommandTag), false
		}
		return "", false
	}
	return CompareResult(rec, res), false
}

func checkError(rec *Record, pgErr *pgconn.PgError) string {
	want := "an error"
	switch {
	case rec.ErrorCode != "":
		want = "an error with SQLSTATE " + rec.ErrorCode
	case rec.ErrorPattern != nil:
		want = fmt.Sprintf("an error matching %q", rec.ErrorPattern.String())
	}
	if pgErr == nil {
		return fmt.Sprintf("%s succeeded, expected %s", rec.Kind, want)
	}
	switch {
	case rec.ErrorCode != "" && pgErr.Code != rec.ErrorCode:
	case rec.ErrorPattern != nil && !rec.ErrorPattern.MatchString(pgErr.Message) && !rec.ErrorPattern.MatchString(pgErr.Error()):
	default:
		return ""
	}
	return fmt.Sprintf("expected %s, got %s", want, describePgError(pgErr))
}

func describePgError(e *pgconn.PgError) string {
	s := fmt.Sprintf("%s %s: %s", e.Severity, e.Code, e.Message)
	if e.Detail != "" {
		s += " (DETAIL: " + e.Detail + ")"
	}
	if e.Hint != "" {
		s += " (HINT: " + e.Hint + ")"
	}
	return s
}

// FormatValue renders one value the way expected results write it: NULL for
// null, (empty) for the empty string, else the text as received.
func FormatValue(v *string) string {
	switch {
	case v == nil:
		return "NULL"
	case *v == "":
		return "(empty)"
	}
	return *v
}

// FormatRows renders rows as result lines: values joined by single spaces.
func FormatRows(rows [][]*string) []string {
	out := make([]string, len(rows))
	for i, row := range rows {
		vals := make([]string, len(row))
		for j, v := range row {
			vals[j] = FormatValue(v)
		}
		out[i] = strings.Join(vals, " ")
	}
	return out
}

// normalize collapses runs of whitespace into single spaces and trims.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// CompareResult compares a query's result with the record's expectations and
// returns "" when they agree, else a message with expected and actual rows.
// Each result line is compared after collapsing runs of whitespace on both
// sides, since values may themselves contain spaces.
func CompareResult(rec *Record, res Result) string {
	actual := FormatRows(res.Rows)
	if rec.Types != "" && res.Columns != len(rec.Types) {
		return fmt.Sprintf("query type string %q has %d columns, the result has %d\n    actual:\n%s",
			rec.Types, len(rec.Types), res.Columns, indent(strings.Join(actual, "\n"), "        "))
	}
	var got, want []string
	switch rec.Sort {
	case ValueSort:
		for _, l := range actual {
			got = append(got, strings.Fields(l)...)
		}
		for _, l := range rec.Expected {
			want = append(want, strings.Fields(l)...)
		}
		slices.Sort(got)
		slices.Sort(want)
	default:
		for _, l := range actual {
			got = append(got, normalize(l))
		}
		for _, l := range rec.Expected {
			want = append(want, normalize(l))
		}
		if rec.Sort == RowSort {
			slices.Sort(got)
			slices.Sort(want)
		}
	}
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("query results differ (%s)\n    expected (%d):\n%s\n    actual (%d):\n%s%s",
		rec.Sort, len(want), indent(strings.Join(want, "\n"), "        "),
		len(got), indent(strings.Join(got, "\n"), "        "), firstDiff(want, got))
}

func firstDiff(want, got []string) string {
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("\n    first difference at line %d: expected %q, got %q", i+1, w, g)
		}
	}
	return ""
}

func indent(s, prefix string) string {
	if s == "" {
		return prefix + "(none)"
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
