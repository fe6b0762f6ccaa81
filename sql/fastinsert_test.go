package sql

import (
	"reflect"
	"testing"
)

// TestFastInsertMatchesParser holds the INSERT fast path to the general
// route: where it takes a statement, the AST must be the one TiDB's grammar
// gives; where it declines, the statement must still parse (or fail) as
// before.
func TestFastInsertMatchesParser(t *testing.T) {
	cases := []struct {
		sql  string
		fast bool
	}{
		{`INSERT INTO t VALUES (1, 'a', NULL, TRUE, false)`, true},
		{`insert into T (A, "Mixed") values (1, 2), (3, 4)`, true},
		{`INSERT INTO s.t VALUES (2147483647, 2147483648, -2147483648, -2147483649)`, true},
		{`INSERT INTO t VALUES (9223372036854775807, -9223372036854775808, 99999999999999999999999)`, true},
		{`INSERT INTO t VALUES (10.5, -0.25, .5, 5., -007)`, true},
		{`INSERT INTO t VALUES (+3)`, false},
		{`INSERT INTO t VALUES (0x1F, 1_000, 'it''s', E'a\nb', $$dollar$$)`, true},
		{`INSERT INTO "select" VALUES ('')`, true},
		{`INSERT INTO trades VALUES ('ACME', 10.5, 100, '2026-01-01 09:00:00'), ('INIT', 99.0, 5, '2026-01-01 09:00:01')`, true},
		{`INSERT INTO t VALUES (1e3)`, false},
		{`INSERT INTO t VALUES (1 + 2)`, false},
		{`INSERT INTO t VALUES (TIMESTAMP '2026-01-01')`, false},
		{`INSERT INTO t VALUES ('1'::int)`, false},
		{`INSERT INTO t VALUES (DEFAULT)`, false},
		{`INSERT INTO t VALUES (- -1)`, false},
		{`INSERT INTO t SELECT 1`, false},
		{`INSERT INTO t VALUES (1), (2`, false},
		{`INSERT INTO t VALUES (1),`, false},
		{`INSERT INTO t VALUES (1) RETURNING *`, false},
		{`INSERT INTO t AS x VALUES (1)`, false},
		{`INSERT INTO t VALUES (B'101')`, false},
	}
	for _, c := range cases {
		toks, err := lex(c.sql)
		if err != nil {
			t.Fatalf("%s: lex: %v", c.sql, err)
		}
		p := &stmtParser{src: c.sql, toks: toks, after: eofToken(c.sql)}
		fast, ok := p.fastInsert()
		if ok != c.fast {
			t.Errorf("%s: fast path taken = %v, want %v", c.sql, ok, c.fast)
		}
		general, gerr := (&stmtParser{src: c.sql, toks: toks, after: eofToken(c.sql)}).generalInsert()
		if !ok {
			continue
		}
		if gerr != nil {
			t.Errorf("%s: fast path accepted what the parser rejects: %v", c.sql, gerr)
			continue
		}
		if !reflect.DeepEqual(Statement(fast), general) {
			t.Errorf("%s:\nfast    %s\ngeneral %s", c.sql, Format(fast), Format(general))
		}
	}
}
