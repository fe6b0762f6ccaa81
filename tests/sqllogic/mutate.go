// This file holds the SQL mutator of TestSQLMutations: a tokenizer that
// keeps the text between tokens, seeded random token-level mutations, and
// the minimizer of a failing statement.

package sqllogic

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// TokenKind classifies a Token.
type TokenKind int

// Token kinds.
const (
	Word        TokenKind = iota + 1 // keyword or identifier
	Number                           // 1, 2.5, 1e3
	String                           // '…', E'…', X'…', B'…', $tag$…$tag$
	QuotedIdent                      // "…"
	Param                            // $1
	Op                               // operator or punctuation
)

// Token is one SQL token and the text before it (white space and
// comments), so that Render(Tokenize(s)) == s.
type Token struct {
	Gap  string
	Text string
	Kind TokenKind
}

// Tokenize splits sql into tokens the way PostgreSQL's lexer would, closely
// enough for mutations: an unterminated quote or comment runs to the end.
func Tokenize(sql string) []Token {
	var toks []Token
	i, gapStart := 0, 0
	emit := func(start, end int, kind TokenKind) {
		toks = append(toks, Token{Gap: sql[gapStart:start], Text: sql[start:end], Kind: kind})
		i, gapStart = end, end
	}
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '\'':
			emit(i, quotedEnd(sql, i, '\''), String)
		case c == '"':
			emit(i, quotedEnd(sql, i, '"'), QuotedIdent)
		case (c == 'E' || c == 'e' || c == 'X' || c == 'x' || c == 'B' || c == 'b') && i+1 < len(sql) && sql[i+1] == '\'':
			emit(i, quotedEnd(sql, i+1, '\''), String)
		case c == '$' && i+1 < len(sql) && isDigit(sql[i+1]):
			j := i + 1
			for j < len(sql) && isDigit(sql[j]) {
				j++
			}
			emit(i, j, Param)
		case c == '$':
			if end, ok := dollarQuoteEnd(sql, i); ok {
				emit(i, end, String)
			} else {
				emit(i, i+1, Op)
			}
		case isDigit(c) || c == '.' && i+1 < len(sql) && isDigit(sql[i+1]):
			j := i
			for j < len(sql) && (isDigit(sql[j]) || sql[j] == '.') {
				j++
			}
			if j < len(sql) && (sql[j] == 'e' || sql[j] == 'E') {
				k := j + 1
				if k < len(sql) && (sql[k] == '+' || sql[k] == '-') {
					k++
				}
				if k < len(sql) && isDigit(sql[k]) {
					for j = k; j < len(sql) && isDigit(sql[j]); j++ {
					}
				}
			}
			emit(i, j, Number)
		case isWordStart(c):
			j := i + 1
			for j < len(sql) && isWordPart(sql[j]) {
				j++
			}
			emit(i, j, Word)
		default:
			n := 1
			for _, op := range []string{"::", "<=", ">=", "<>", "!=", "||", "->>", "->", "=>", "!~*", "!~", "~*"} {
				if strings.HasPrefix(sql[i:], op) && len(op) > n {
					n = len(op)
				}
			}
			emit(i, i+n, Op)
		}
	}
	if gapStart < len(sql) {
		toks = append(toks, Token{Gap: sql[gapStart:]}) // trailing white space or comment
	}
	return toks
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isWordPart(c byte) bool { return isWordStart(c) || isDigit(c) || c == '$' }

// quotedEnd returns the end of the quoted token starting at sql[i] == q,
// where a doubled quote stands for itself (and, for strings, a backslash
// may escape one: an E'…' string).
func quotedEnd(sql string, i int, q byte) int {
	for j := i + 1; j < len(sql); j++ {
		switch {
		case sql[j] == '\\' && q == '\'':
			j++
		case sql[j] == q && j+1 < len(sql) && sql[j+1] == q:
			j++
		case sql[j] == q:
			return j + 1
		}
	}
	return len(sql)
}

func dollarQuoteEnd(sql string, i int) (int, bool) {
	j := i + 1
	for j < len(sql) && sql[j] != '$' && isWordPart(sql[j]) {
		j++
	}
	if j >= len(sql) || sql[j] != '$' {
		return 0, false
	}
	tag := sql[i : j+1]
	if k := strings.Index(sql[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag), true
	}
	return len(sql), true
}

// Render joins tokens back into SQL, adding a space where two tokens would
// otherwise run together into one.
func Render(toks []Token) string {
	var b strings.Builder
	prev := ""
	for _, t := range toks {
		gap := t.Gap
		if gap == "" && prev != "" && t.Text != "" && fuses(prev[len(prev)-1], t.Text[0]) {
			gap = " "
		}
		b.WriteString(gap)
		b.WriteString(t.Text)
		if t.Text != "" {
			prev = t.Text
		}
	}
	return b.String()
}

func fuses(a, b byte) bool {
	word := func(c byte) bool { return isWordPart(c) || c == '\'' || c == '"' }
	return word(a) && word(b) || strings.IndexByte("<>=!~*+-/|:&%^@#", a) >= 0 && strings.IndexByte("<>=!~*+-/|:&%^@#", b) >= 0
}

// Mutator makes seeded random mutations of SQL texts: the same seed gives
// the same sequence of mutants for the same sequence of inputs.
type Mutator struct {
	rng *rand.Rand
}

// NewMutator returns a Mutator whose choices follow seed.
func NewMutator(seed uint64) *Mutator {
	return &Mutator{rng: rand.New(rand.NewPCG(seed, 0x6d7574617465))}
}

// Intn returns a random number in [0, n) from the mutator's sequence.
func (m *Mutator) Intn(n int) int { return m.rng.IntN(n) }

// Mutate applies one to three random mutations to sql (one most often:
// most mutants should still parse, to reach the planner and the engine)
// and returns the result and the mutations' names, e.g. "drop", "literal".
func (m *Mutator) Mutate(sql string) (string, []string) {
	toks := Tokenize(sql)
	if len(toks) > 0 && toks[len(toks)-1].Text == "" {
		toks = toks[:len(toks)-1] // a trailing comment: keep only tokens
	}
	var names []string
	for n := []int{1, 1, 1, 1, 1, 1, 2, 2, 2, 3}[m.rng.IntN(10)]; n > 0; n-- {
		var name string
		toks, name = m.mutateOnce(toks)
		names = append(names, name)
	}
	return Render(toks), names
}

func (m *Mutator) mutateOnce(toks []Token) ([]Token, string) {
	if len(toks) == 0 {
		return []Token{m.keyword()}, "keyword"
	}
	i := m.rng.IntN(len(toks))
	// Literal replacements are half of all mutations: they keep the
	// statement valid most often.
	switch m.rng.IntN(16) {
	case 0:
		return deleteAt(toks, i), "drop"
	case 1:
		t := toks[i]
		t.Gap = " "
		return insertAt(toks, i+1, t), "duplicate"
	case 2:
		j := m.rng.IntN(len(toks))
		if m.rng.IntN(2) == 0 && i+1 < len(toks) {
			j = i + 1 // neighbours, more often valid
		}
		toks = append([]Token(nil), toks...)
		toks[i].Text, toks[i].Kind, toks[j].Text, toks[j].Kind = toks[j].Text, toks[j].Kind, toks[i].Text, toks[i].Kind
		return toks, "swap"
	case 3, 4, 5, 6, 7, 8, 9, 10:
		// Literals first: pick one if there is any.
		var lits []int
		for k, t := range toks {
			if t.Kind == Number || t.Kind == String {
				lits = append(lits, k)
			}
		}
		if len(lits) == 0 {
			return m.mutateOnce(toks) // no literal: another mutation
		}
		i = lits[m.rng.IntN(len(lits))]
		return replaceAt(toks, i, m.extreme(toks[i].Kind)), "literal"
	case 11:
		var words []int
		for k, t := range toks {
			if t.Kind == Word || t.Kind == QuotedIdent {
				words = append(words, k)
			}
		}
		if len(words) > 0 {
			i = words[m.rng.IntN(len(words))]
		}
		return replaceAt(toks, i, m.identifier()), "identifier"
	case 12:
		return insertAt(toks, m.rng.IntN(len(toks)+1), m.unbalanced()), "unbalanced"
	case 13, 14:
		k := m.keyword()
		if m.rng.IntN(2) == 0 {
			return replaceAt(toks, i, k), "keyword"
		}
		return insertAt(toks, m.rng.IntN(len(toks)+1), k), "keyword"
	default:
		return toks[:1+m.rng.IntN(len(toks))], "truncate"
	}
}

func deleteAt(toks []Token, i int) []Token {
	return append(append([]Token(nil), toks[:i]...), toks[i+1:]...)
}

func insertAt(toks []Token, i int, t Token) []Token {
	if t.Gap == "" {
		t.Gap = " "
	}
	out := append(append(append([]Token(nil), toks[:i]...), t), toks[i:]...)
	return out
}

func replaceAt(toks []Token, i int, t Token) []Token {
	toks = append([]Token(nil), toks...)
	t.Gap = toks[i].Gap
	toks[i] = t
	return toks
}

// extremeNumbers are the values numbers are replaced with: type
// boundaries and just past them, precision and exponent limits, and the
// edges of the server's own limits (10000 partitions).
var extremeNumbers = []string{
	"0", "-1", "1", "-0", "0.0", "10000", "10001", "32767", "32768", "-32769",
	"2147483647", "2147483648", "-2147483648", "-2147483649",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551616", "99999999999999999999999999999999999999999999999999",
	"1e308", "1e309", "-1e309", "1e-400", "4.9e-324", "1.7976931348623157e308",
	"0.000000000000000000000000000000000000000000000001", "123456789012345678901234567890.123456789012345678901234567890",
	"1e131072", "1e-16384",
}

// extremeStrings are the values strings are replaced with (besides long
// ones, made in extreme).
var extremeStrings = []string{
	"''", "NULL", "' '", "'NaN'", "'Infinity'", "'-Infinity'", "'infinity'", "'-0'",
	"'2262-04-11 23:47:16.854775807'", "'294277-01-01 00:00:00'", "'4714-11-24 00:00:00 BC'", "'0001-01-01'",
	"'epoch'", "'allballs'", "'1 century 1000000000 years'", "'-178000000 years'", "'2147483647 days'",
	"'9223372036854775807 microseconds'", "'1e400'", "'{'", "'{\"a\":'", "'[1,2'", "'{}'", "'{NULL}'", "'{{1},{2}}'",
	"'\\x'", "'\\xzz'", "E'\\\\'", "E'\\u0000'", "E'\\xff'", "U&'\\0000'", "'é中𝄞'", "'\x01\x7f'", "'%_\\'",
	"$$$$", "'kafka://'", "'file:///etc/passwd'", "'redis://127.0.0.1:1'", "'stdio://'", "'_fvsql_catalog'",
}

func (m *Mutator) extreme(kind TokenKind) Token {
	switch {
	case kind == Number && m.rng.IntN(4) != 0 || kind != String && m.rng.IntN(2) == 0:
		return Token{Text: extremeNumbers[m.rng.IntN(len(extremeNumbers))], Kind: Number}
	case m.rng.IntN(5) == 0:
		n := []int{64, 255, 1000, 4096}[m.rng.IntN(4)]
		return Token{Text: "'" + strings.Repeat(string(rune('a'+m.rng.IntN(26))), n) + "'", Kind: String}
	}
	s := extremeStrings[m.rng.IntN(len(extremeStrings))]
	kind = String
	if s == "NULL" {
		kind = Word
	}
	return Token{Text: s, Kind: kind}
}

func (m *Mutator) identifier() Token {
	switch m.rng.IntN(6) {
	case 0:
		return Token{Text: strings.Repeat("n", 63+m.rng.IntN(3)), Kind: Word}
	case 1:
		return Token{Text: `"` + strings.Repeat("Q", []int{64, 300, 2000}[m.rng.IntN(3)]) + `"`, Kind: QuotedIdent}
	case 2:
		return Token{Text: `""`, Kind: QuotedIdent}
	case 3:
		return Token{Text: []string{`"a""b"`, `"a.b"`, `" "`, `"é"`, `"A"`, `"_fvsql_catalog"`, `"-"`}[m.rng.IntN(7)], Kind: QuotedIdent}
	}
	return Token{Text: []string{"pg_catalog", "information_schema", "fvsql_catalog", "_errors", "public", "oid", "ctid", "key", "window_start"}[m.rng.IntN(9)], Kind: Word}
}

func (m *Mutator) unbalanced() Token {
	ops := []string{"(", ")", "'", `"`, "$$", "/*", "[", "]", "{", "}", "::", ";", ",", "*", "$1", "$0", "$99999", "\\", "E'"}
	s := ops[m.rng.IntN(len(ops))]
	kind := Op
	if s[0] == '$' && len(s) > 1 && s[1] != '$' {
		kind = Param
	}
	return Token{Text: s, Kind: kind}
}

// mutationKeywords are the keywords inserted or substituted. SUBSCRIBE is
// not among them: a subscription waits for rows by design.
var mutationKeywords = strings.Fields(`SELECT FROM WHERE GROUP BY ORDER HAVING LIMIT OFFSET FETCH FIRST ROWS ONLY
	JOIN LEFT RIGHT FULL INNER OUTER CROSS NATURAL LATERAL ON USING UNION INTERSECT EXCEPT ALL DISTINCT AS
	CREATE DROP STREAM MATERIALIZED VIEW SINK TABLE INSERT INTO VALUES DEFAULT WITH RECURSIVE WINDOW OVER
	PARTITION TUMBLE HOP SESSION EMIT CHANGES ON WINDOW CLOSE FLUSH BEGIN COMMIT ROLLBACK DECLARE CURSOR
	EXPLAIN DESCRIBE SHOW SET RESET DISCARD NULL TRUE FALSE NOT AND OR IN IS ISNULL BETWEEN LIKE ILIKE
	SIMILAR CASE WHEN THEN ELSE END CAST INTERVAL ARRAY ANY SOME EXISTS IF WATERMARK FOR KEY PRIMARY
	COLLATE AT TIME ZONE EXTRACT FILTER ORDINALITY count sum min max avg row_number rank lag now
	generate_series unnest array_agg string_agg coalesce nullif greatest least`)

func (m *Mutator) keyword() Token {
	return Token{Text: mutationKeywords[m.rng.IntN(len(mutationKeywords))], Kind: Word}
}

// Minimize returns a shorter SQL text that still fails: it removes tokens,
// longest runs first (ddmin-like), while fails says the result still shows
// the failure, calling fails at most budget times.
func Minimize(sql string, fails func(string) bool, budget int) string {
	toks := Tokenize(sql)
	calls := 0
	for chunk := len(toks) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(toks); {
			if calls >= budget {
				return Render(toks)
			}
			cand := append(append([]Token(nil), toks[:i]...), toks[i+chunk:]...)
			calls++
			if len(cand) > 0 && fails(Render(cand)) {
				toks = cand
				continue
			}
			i += chunk
		}
	}
	return Render(toks)
}

// String describes a token for test failures.
func (t Token) String() string { return fmt.Sprintf("%q(%d)", t.Text, t.Kind) }
