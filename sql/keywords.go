package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
)

// pgReserved lists PostgreSQL's reserved keywords (both "reserved" and
// "reserved (can be function or type)" of the keyword appendix). They are
// never quoted by the normalizer: their meaning is the same in both
// grammars, or they are handled by a rewrite.
var pgReserved = setOf(`all analyse analyze and any array as asc asymmetric authorization binary
both case cast check collate collation column concurrently constraint create cross
current_catalog current_date current_role current_schema current_time current_timestamp
current_user default deferrable desc distinct do else end except false fetch for foreign
freeze from full grant group having ilike in initially inner intersect into is isnull join
lateral leading left like limit localtime localtimestamp natural not notnull null offset on
only or order outer overlaps placing primary references returning right select session_user
similar some symmetric system_user table tablesample then to trailing true union unique user
using variadic verbose when where window with`)

// syntaxWords are TiDB-reserved words that are syntax in PostgreSQL too
// and so must stay keywords although PostgreSQL does not reserve them.
var syntaxWords = setOf(`between by exists insert values`)

// tidbReserved is the set of words TiDB's grammar reserves, from the
// parser's own keyword table so it follows the parser version.
var tidbReserved = func() map[string]bool {
	m := make(map[string]bool)
	for _, k := range parser.Keywords {
		if k.Reserved {
			m[strings.ToLower(k.Word)] = true
		}
	}
	// TiDB's lexer reads SCHEMA and SCHEMAS as its reserved DATABASE and
	// DATABASES, which its keyword table lists under those names only.
	m["schema"], m["schemas"] = true, true
	return m
}()

// sqlValueFuncs are PostgreSQL's parenthesis-less functions that TiDB
// would read as column names or not know; the normalizer adds "()".
var sqlValueFuncs = setOf(`session_user current_user current_role user current_catalog current_schema system_user`)

// clauseWords end an ORDER BY list and change the clause of a query level.
var clauseWords = setOf(`select from where group having order window union intersect except
limit offset fetch on using join rows range groups values returning for`)

// typeStartWords may begin a type name in a `type 'literal'` constant.
var typeStartWords = setOf(`bool boolean int int2 int4 int8 integer smallint bigint real float float4
float8 double numeric decimal dec text varchar character char bpchar bytea date time timestamp
timestamptz jsonb json oid name regclass regtype uuid`)

// intervalFields are the field words of INTERVAL '…' field [TO field].
var intervalFields = setOf(`year month day hour minute second`)

func setOf(words string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
