package sqllogic

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func parse(t *testing.T, src string) []Record {
	t.Helper()
	recs, err := Parse("test.slt", strings.NewReader(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return recs
}

func TestRunnerParse(t *testing.T) {
	src := `# leading comment
hash-threshold 8

statement ok
CREATE TABLE t (a INT,
  b TEXT)

statement count 2
INSERT INTO t VALUES (1, 'x'), (2, NULL)

statement error 42P01
SELECT * FROM nope

statement error relation "nope" does not exist
SELECT * FROM nope

statement error
garbage

# comment between records
onlyif real
skipif embedded
query IT rowsort
SELECT a, b
FROM t
----
1  x
2 NULL

query T
SELECT 'nothing' WHERE false

query error ^division by zero$
SELECT 1/0

sleep 10ms

onlyif embedded
halt
`
	recs := parse(t, src)
	if len(recs) != 10 {
		t.Fatalf("got %d records, want 10: %+v", len(recs), recs)
	}
	check := func(i int, kind Kind, line int, sql string) *Record {
		t.Helper()
		r := &recs[i]
		if r.Kind != kind || r.Line != line || r.SQL != sql {
			t.Errorf("record %d = %v line %d SQL %q, want %v line %d SQL %q", i, r.Kind, r.Line, r.SQL, kind, line, sql)
		}
		return r
	}
	r := check(0, Statement, 4, "CREATE TABLE t (a INT,\n  b TEXT)")
	if r.ExpectError || r.RowCount != -1 {
		t.Errorf("statement ok parsed as %+v", r)
	}
	if r := check(1, Statement, 8, "INSERT INTO t VALUES (1, 'x'), (2, NULL)"); r.RowCount != 2 {
		t.Errorf("statement count: RowCount %d", r.RowCount)
	}
	if r := check(2, Statement, 11, "SELECT * FROM nope"); !r.ExpectError || r.ErrorCode != "42P01" || r.ErrorPattern != nil {
		t.Errorf("statement error 42P01 parsed as %+v", r)
	}
	if r := check(3, Statement, 14, "SELECT * FROM nope"); r.ErrorCode != "" || r.ErrorPattern == nil || r.ErrorPattern.String() != `relation "nope" does not exist` {
		t.Errorf("statement error regexp parsed as %+v", r)
	}
	if r := check(4, Statement, 17, "garbage"); !r.ExpectError || r.ErrorCode != "" || r.ErrorPattern != nil {
		t.Errorf("bare statement error parsed as %+v", r)
	}
	r = check(5, Query, 23, "SELECT a, b\nFROM t")
	if r.Types != "IT" || r.Sort != RowSort || len(r.Expected) != 2 || r.Expected[0] != "1  x" || r.Expected[1] != "2 NULL" {
		t.Errorf("query parsed as %+v", r)
	}
	if len(r.OnlyIf) != 1 || r.OnlyIf[0] != "real" || len(r.SkipIf) != 1 || r.SkipIf[0] != "embedded" {
		t.Errorf("conditions parsed as onlyif %v skipif %v", r.OnlyIf, r.SkipIf)
	}
	if r := check(6, Query, 30, "SELECT 'nothing' WHERE false"); r.Expected != nil || r.Sort != NoSort {
		t.Errorf("query without results parsed as %+v", r)
	}
	if r := check(7, Query, 33, "SELECT 1/0"); !r.ExpectError || r.ErrorPattern == nil {
		t.Errorf("query error parsed as %+v", r)
	}
	if r := check(8, Sleep, 36, ""); r.Sleep != 10*time.Millisecond {
		t.Errorf("sleep parsed as %+v", r)
	}
	if r := check(9, Halt, 39, ""); len(r.OnlyIf) != 1 || r.OnlyIf[0] != "embedded" {
		t.Errorf("halt parsed as %+v", r)
	}
}

func TestRunnerParseHaltAndConditions(t *testing.T) {
	recs := parse(t, "statement ok\nSELECT 1\n\nonlyif embedded\nhalt\n\nstatement ok\nSELECT 2\n")
	if len(recs) != 3 || recs[1].Kind != Halt || len(recs[1].OnlyIf) != 1 || len(recs[2].OnlyIf) != 0 {
		t.Fatalf("records: %+v", recs)
	}
	if recs[1].Active([]string{"real"}) || !recs[1].Active([]string{"embedded"}) {
		t.Errorf("onlyif embedded: Active wrong")
	}
	skip := Record{SkipIf: []string{"real"}}
	if skip.Active([]string{"real"}) || !skip.Active([]string{"embedded"}) {
		t.Errorf("skipif real: Active wrong")
	}
}

func TestRunnerParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"statement maybe\nSELECT 1\n", "test.slt:1: statement must be followed by ok, error or count"},
		{"statement ok\n", "test.slt:1: statement without SQL"},
		{"\n\nquery I\n----\n1\n", "test.slt:3: query without SQL"},
		{"query I sideways\nSELECT 1\n", `test.slt:1: unknown sort mode "sideways"`},
		{"frobnicate\n", `test.slt:1: unknown directive "frobnicate"`},
		{"statement error (unclosed\nSELECT 1\n", "test.slt:1: bad error regexp"},
		{"sleep forever\n", `test.slt:1: bad sleep duration "forever"`},
		{"statement count x\nDELETE FROM t\n", `test.slt:1: bad row count "x"`},
		{"query error boom\nSELECT 1\n----\n1\n", "test.slt:3: query error takes no expected results"},
		{"statement ok\nSELECT 1\n\nonlyif real\n", "onlyif/skipif at the end of the file"},
		{"skipif\nhalt\n", "test.slt:1: skipif needs a label"},
	} {
		_, err := Parse("test.slt", strings.NewReader(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want error containing %q", tc.src, err, tc.want)
		}
	}
}

func TestRunnerSQLSTATEOrRegexp(t *testing.T) {
	for s, want := range map[string]bool{
		"42P01": true, "42601": true, "XX000": true, "0A000": true,
		"TABLE": false, "error": false, "4260": false, "426011": false, "42p01": false,
	} {
		if got := isSQLSTATE(s); got != want {
			t.Errorf("isSQLSTATE(%q) = %v, want %v", s, got, want)
		}
	}
}

func strp(s string) *string { return &s }

func TestRunnerCompareResult(t *testing.T) {
	rows := [][]*string{
		{strp("2"), strp("hello  world")},
		{strp("1"), nil},
		{strp("3"), strp("")},
	}
	res := Result{Columns: 2, Rows: rows}
	for _, tc := range []struct {
		name     string
		sort     SortMode
		types    string
		expected []string
		ok       bool
	}{
		{"nosort in order", NoSort, "IT", []string{"2 hello world", "1 NULL", "3 (empty)"}, true},
		{"whitespace collapsed", NoSort, "IT", []string{"2   hello   world ", "1\tNULL", "3 (empty)"}, true},
		{"nosort out of order", NoSort, "IT", []string{"1 NULL", "2 hello world", "3 (empty)"}, false},
		{"rowsort", RowSort, "IT", []string{"3 (empty)", "1 NULL", "2 hello world"}, true},
		{"rowsort wrong value", RowSort, "IT", []string{"3 (empty)", "1 NULL", "2 hello there"}, false},
		{"missing row", RowSort, "IT", []string{"3 (empty)", "1 NULL"}, false},
		{"valuesort", ValueSort, "IT", []string{"1", "2", "3", "(empty)", "NULL", "hello", "world"}, true},
		{"valuesort wrong", ValueSort, "IT", []string{"1", "2", "3", "(empty)", "NULL", "hello"}, false},
		{"empty string is not NULL", NoSort, "IT", []string{"2 hello world", "1 NULL", "3 NULL"}, false},
		{"column count", NoSort, "I", []string{"2 hello world", "1 NULL", "3 (empty)"}, false},
	} {
		rec := &Record{Kind: Query, Types: tc.types, Sort: tc.sort, Expected: tc.expected}
		msg := CompareResult(rec, res)
		if (msg == "") != tc.ok {
			t.Errorf("%s: CompareResult = %q, want ok=%v", tc.name, msg, tc.ok)
		}
	}
	// No rows expected and none returned.
	if msg := CompareResult(&Record{Kind: Query, Types: "I"}, Result{Columns: 1}); msg != "" {
		t.Errorf("empty result: %s", msg)
	}
	// The message shows both sides and the first difference.
	msg := CompareResult(&Record{Kind: Query, Types: "I", Expected: []string{"1", "2"}}, Result{Columns: 1, Rows: [][]*string{{strp("1")}, {strp("3")}}})
	for _, want := range []string{"expected (2)", "actual (2)", `first difference at line 2: expected "2", got "3"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// fakeExec answers SQL texts from a table; unknown SQL is a syntax error.
type fakeExec struct {
	results map[string]Result
	errs    map[string]error
	calls   []string
}

func (f *fakeExec) Exec(ctx context.Context, sql string) (Result, error) {
	f.calls = append(f.calls, sql)
	if err, ok := f.errs[sql]; ok {
		return Result{}, err
	}
	if res, ok := f.results[sql]; ok {
		return res, nil
	}
	return Result{}, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "syntax error at or near \"" + strings.Fields(sql)[0] + "\""}
}

func TestRunnerRun(t *testing.T) {
	src := `statement ok
CREATE TABLE t (a INT)

statement count 2
INSERT INTO t VALUES (1), (2)

statement error 42601
SELEC 1

statement error syntax error at or near "SELEC"
SELEC 1

query I rowsort
SELECT a FROM t
----
2
1

onlyif real
query I
SELECT 'only on real'
----
1

skipif embedded
statement ok
SELECT 'skipped on embedded'

query error 22012
SELECT 1/0

statement ok
SELECT 'no such statement in the fake'

statement error 42P01
SELECT 1

query I
SELECT a FROM t
----
1
3

statement count 5
INSERT INTO t VALUES (1), (2)

onlyif embedded
halt

statement ok
SELECT 'after halt'
`
	ex := &fakeExec{
		results: map[string]Result{
			"CREATE TABLE t (a INT)":        {CommandTag: "CREATE TABLE"},
			"INSERT INTO t VALUES (1), (2)": {CommandTag: "INSERT 0 2", RowsAffected: 2},
			"SELECT a FROM t":               {Columns: 1, Rows: [][]*string{{strp("1")}, {strp("2")}}},
			"SELECT 1":                      {Columns: 1, Rows: [][]*string{{strp("1")}}},
		},
		errs: map[string]error{
			"SELECT 1/0": &pgconn.PgError{Severity: "ERROR", Code: "22012", Message: "division by zero"},
		},
	}
	r := &Runner{Exec: ex, Labels: []string{"embedded"}}
	failures, st := r.Run(context.Background(), "run.slt", parse(t, src))

	wantLines := []int{32, 35, 38, 44}
	if len(failures) != len(wantLines) {
		t.Fatalf("got %d failures, want %d:\n%v", len(failures), len(wantLines), failures)
	}
	for i, f := range failures {
		if f.Line != wantLines[i] || f.File != "run.slt" {
			t.Errorf("failure %d at %s:%d, want line %d: %s", i, f.File, f.Line, wantLines[i], f)
		}
	}
	for i, want := range []string{
		"statement failed: ERROR 42601",
		"statement succeeded, expected an error with SQLSTATE 42P01",
		"query results differ",
		"statement count: expected 5 rows affected, got 2",
	} {
		if !strings.Contains(failures[i].Msg, want) {
			t.Errorf("failure %d: %q lacks %q", i, failures[i].Msg, want)
		}
	}
	if !strings.Contains(failures[0].String(), "run.slt:32: ") || !strings.Contains(failures[0].String(), "SELECT 'no such statement in the fake'") {
		t.Errorf("Failure.String() = %q", failures[0].String())
	}
	if st.Run != 10 || st.Skipped != 2 || st.Failed != 4 || !st.Halted || st.Aborted {
		t.Errorf("stats %+v", st)
	}
	for _, c := range ex.calls {
		if strings.Contains(c, "after halt") || strings.Contains(c, "only on real") || strings.Contains(c, "skipped on embedded") {
			t.Errorf("ran %q", c)
		}
	}
}

func TestRunnerStopsOnBrokenConnection(t *testing.T) {
	ex := &fakeExec{
		results: map[string]Result{"SELECT 1": {Columns: 1, Rows: [][]*string{{strp("1")}}}},
		errs:    map[string]error{"SELECT pg_crash()": errors.New("unexpected EOF")},
	}
	src := "statement error\nSELECT pg_crash()\n\nstatement ok\nSELECT 1\n"
	failures, st := (&Runner{Exec: ex}).Run(context.Background(), "x.slt", parse(t, src))
	if len(failures) != 1 || !st.Aborted || st.Run != 1 {
		t.Fatalf("failures %v, stats %+v", failures, st)
	}
	if !strings.Contains(failures[0].Msg, "unexpected EOF") || !strings.Contains(failures[0].Msg, "connection unusable") {
		t.Errorf("message %q", failures[0].Msg)
	}
	if len(ex.calls) != 1 {
		t.Errorf("calls after a broken connection: %v", ex.calls)
	}
}

// slowExec blocks until the context ends, like a server that does not answer.
type slowExec struct{}

func (slowExec) Exec(ctx context.Context, sql string) (Result, error) {
	<-ctx.Done()
	return Result{}, ctx.Err()
}

func TestRunnerRecordTimeout(t *testing.T) {
	start := time.Now()
	failures, st := (&Runner{Exec: slowExec{}, Timeout: 50 * time.Millisecond}).Run(context.Background(), "slow.slt", parse(t, "statement ok\nSELECT pg_sleep(100)\n"))
	if len(failures) != 1 || !strings.Contains(failures[0].Msg, "timed out after") || !st.Aborted {
		t.Fatalf("failures %v, stats %+v", failures, st)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
}

func TestRunnerMaxFailures(t *testing.T) {
	var src strings.Builder
	for range 10 {
		src.WriteString("statement ok\nbad sql\n\n")
	}
	failures, st := (&Runner{Exec: &fakeExec{}, MaxFailures: 3}).Run(context.Background(), "many.slt", parse(t, src.String()))
	if len(failures) != 3 || !st.Aborted || st.Run != 3 {
		t.Fatalf("failures %d, stats %+v", len(failures), st)
	}
}

func TestRunnerFormatValue(t *testing.T) {
	if got := FormatRows([][]*string{{nil, strp(""), strp("t"), strp("1.5")}}); got[0] != "NULL (empty) t 1.5" {
		t.Errorf("FormatRows = %q", got)
	}
}
