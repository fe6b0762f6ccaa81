package sql

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fvsql/fvsql/pgerror"
)

// tokKind classifies a token of PostgreSQL's lexical grammar.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // unquoted identifier or keyword; val is lower-cased
	tQIdent         // "quoted" identifier; val is the name with "" undone
	tString         // string constant ('…', E'…', $$…$$, U&'…'); val is decoded
	tBits           // B'…' bit string; val holds the digits
	tBytes          // X'…' hex string; val holds the decoded bytes
	tNumber         // numeric constant; val is its decimal text
	tParam          // $n; n holds the number
	tOp             // operator or punctuation; val is its text
)

// token is one lexeme with its byte span in the source text.
type token struct {
	kind     tokKind
	val      string
	pos, end int
	n        int
}

// is reports whether t is the unquoted keyword word (lower case).
func (t token) is(word string) bool { return t.kind == tIdent && t.val == word }

// isOp reports whether t is the operator or punctuation op.
func (t token) isOp(op string) bool { return t.kind == tOp && t.val == op }

// lexer scans PostgreSQL SQL text. It is used once per Parse call over the
// whole text: splitting, statement recognition and normalization all work
// on its tokens, so the text is never re-scanned by fvsql itself.
type lexer struct {
	src  string
	i    int
	toks []token
}

// lex tokenizes src. Comments and whitespace are dropped; the result ends
// without an EOF token.
func lex(src string) ([]token, error) {
	if !utf8.ValidString(src) || strings.IndexByte(src, 0) >= 0 {
		return nil, invalidUTF8(src)
	}
	l := &lexer{src: src, toks: make([]token, 0, len(src)/4+4)}
	for {
		if err := l.skipSpace(); err != nil {
			return nil, err
		}
		if l.i >= len(src) {
			return l.toks, nil
		}
		if err := l.next(); err != nil {
			return nil, err
		}
	}
}

// lexError is a 42601 error positioned at byte offset off of src.
func lexError(src string, off int, format string, args ...any) error {
	e := pgerror.New(pgerror.SyntaxError, format, args...)
	e.Position = runePos(src, off)
	return e
}

// invalidUTF8 is PostgreSQL's 22021 for text that is not UTF-8 (or holds
// a NUL, which no PostgreSQL text can), naming
// the bytes of the first bad sequence (its length as its first byte
// declares it, as PostgreSQL counts) and where it is. Refusing the whole
// text keeps invalid bytes out of every literal and identifier, so that
// what Parse accepts always prints (Format) as text that parses again.
func invalidUTF8(src string) error {
	off := 0
	for off < len(src) {
		r, n := utf8.DecodeRuneInString(src[off:])
		if r == utf8.RuneError && n == 1 || r == 0 {
			break
		}
		off += n
	}
	n := 1
	switch c := src[off]; {
	case c >= 0xf8:
	case c >= 0xf0:
		n = 4
	case c >= 0xe0:
		n = 3
	case c >= 0xc0:
		n = 2
	}
	var b strings.Builder
	for i := off; i < min(off+n, len(src)); i++ {
		if i > off {
			b.WriteByte(' ')
		}
		const hex = "0123456789abcdef"
		b.WriteString("0x")
		b.WriteByte(hex[src[i]>>4])
		b.WriteByte(hex[src[i]&15])
	}
	return pgerror.WithPosition(pgerror.New(pgerror.CharacterNotInRepertoire,
		"invalid byte sequence for encoding \"UTF8\": %s", b.String()), runePos(src, off))
}

// runePos converts a byte offset into PostgreSQL's 1-based character position.
func runePos(src string, off int) int {
	if off > len(src) {
		off = len(src)
	}
	return utf8.RuneCountInString(src[:off]) + 1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isOpChar reports PostgreSQL's operator characters (the backtick, which
// PostgreSQL also lists, is rejected: MySQL uses it for identifiers).
func isOpChar(c byte) bool {
	return strings.IndexByte("+-*/<>=~!@#%^&|?", c) >= 0
}

func (l *lexer) skipSpace() error {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case isSpace(c):
			l.i++
		case c == '-' && strings.HasPrefix(l.src[l.i:], "--"):
			j := strings.IndexByte(l.src[l.i:], '\n')
			if j < 0 {
				l.i = len(l.src)
			} else {
				l.i += j + 1
			}
		case c == '/' && strings.HasPrefix(l.src[l.i:], "/*"):
			if err := l.blockComment(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// blockComment skips a /* … */ comment, which nests in PostgreSQL.
func (l *lexer) blockComment() error {
	start := l.i
	depth := 0
	for l.i < len(l.src) {
		switch {
		case strings.HasPrefix(l.src[l.i:], "/*"):
			depth++
			l.i += 2
		case strings.HasPrefix(l.src[l.i:], "*/"):
			depth--
			l.i += 2
			if depth == 0 {
				return nil
			}
		default:
			l.i++
		}
	}
	return lexError(l.src, start, "unterminated /* comment at or near %q", snippet(l.src[start:]))
}

// snippet shortens s for an error message.
func snippet(s string) string {
	if len(s) > 40 {
		s = s[:40]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

func (l *lexer) emit(kind tokKind, val string, start int) {
	l.toks = append(l.toks, token{kind: kind, val: val, pos: start, end: l.i})
}

// next scans one token at l.i (which is not whitespace).
func (l *lexer) next() error {
	src, start := l.src, l.i
	c := src[start]
	switch {
	case c == '\'':
		return l.quoted(start, start+1, false)
	case c == '"':
		return l.quotedIdent()
	case (c == 'e' || c == 'E') && l.peekQuote(1):
		return l.quoted(start, start+2, true)
	case (c == 'n' || c == 'N') && l.peekQuote(1):
		return l.quoted(start, start+2, false)
	case (c == 'b' || c == 'B') && l.peekQuote(1):
		return l.bitString(tBits)
	case (c == 'x' || c == 'X') && l.peekQuote(1):
		return l.bitString(tBytes)
	case (c == 'u' || c == 'U') && strings.HasPrefix(src[start+1:], "&'"):
		return l.unicodeString()
	case isIdentStart(c):
		for l.i < len(src) && isIdentCont(src[l.i]) {
			l.i++
		}
		l.emit(tIdent, foldIdent(src[start:l.i]), start)
		return nil
	case isDigit(c) || c == '.' && start+1 < len(src) && isDigit(src[start+1]):
		return l.number()
	case c == '$':
		return l.dollar()
	case c == ':':
		l.i++
		if l.i < len(src) && (src[l.i] == ':' || src[l.i] == '=') {
			l.i++
		}
		l.emit(tOp, src[start:l.i], start)
		return nil
	case strings.IndexByte("(),;[].", c) >= 0:
		l.i++
		l.emit(tOp, src[start:l.i], start)
		return nil
	case isOpChar(c):
		l.operator()
		return nil
	}
	_, size := utf8.DecodeRuneInString(src[start:])
	return lexError(src, start, "syntax error at or near %q", src[start:start+size])
}

func (l *lexer) peekQuote(off int) bool {
	return l.i+off < len(l.src) && l.src[l.i+off] == '\''
}

// foldIdent lower-cases ASCII letters, as PostgreSQL does for unquoted names.
func foldIdent(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// operator scans an operator with PostgreSQL's rules: the longest run of
// operator characters, cut before a comment start, and without trailing
// + or - unless it contains one of ~ ! @ # % ^ & | ? (so "=-1" is "=" "-1").
func (l *lexer) operator() {
	src, start := l.src, l.i
	j := start
	for j < len(src) && isOpChar(src[j]) {
		if j > start && (strings.HasPrefix(src[j:], "--") || strings.HasPrefix(src[j:], "/*")) {
			break
		}
		j++
	}
	op := src[start:j]
	if len(op) > 1 && !strings.ContainsAny(op, "~!@#%^&|?") {
		for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') {
			op = op[:len(op)-1]
		}
	}
	l.i = start + len(op)
	l.emit(tOp, op, start)
}

// number scans an integer or decimal constant, with PostgreSQL 16's
// 0x/0o/0b prefixes and digit-separating underscores.
func (l *lexer) number() error {
	src, start := l.src, l.i
	if src[start] == '0' && start+1 < len(src) && strings.IndexByte("xXoObB", src[start+1]) >= 0 {
		return l.radixNumber()
	}
	digits := func() {
		for l.i < len(src) && (isDigit(src[l.i]) || src[l.i] == '_' && l.i+1 < len(src) && isDigit(src[l.i+1]) && l.i > start && isDigit(src[l.i-1])) {
			l.i++
		}
	}
	digits()
	if l.i < len(src) && src[l.i] == '.' && !(l.i+1 < len(src) && src[l.i+1] == '.') {
		l.i++
		digits()
	}
	if l.i < len(src) && (src[l.i] == 'e' || src[l.i] == 'E') {
		j := l.i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			l.i = j
			digits()
		}
	}
	if l.i < len(src) && isIdentStart(src[l.i]) {
		return l.trailingJunk(start)
	}
	l.emit(tNumber, strings.ReplaceAll(src[start:l.i], "_", ""), start)
	return nil
}

func (l *lexer) trailingJunk(start int) error {
	for l.i < len(l.src) && isIdentCont(l.src[l.i]) {
		l.i++
	}
	return lexError(l.src, start, "trailing junk after numeric literal at or near %q", l.src[start:l.i])
}

func (l *lexer) radixNumber() error {
	src, start := l.src, l.i
	base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[src[start+1]|0x20]
	l.i += 2
	ds := l.i
	for l.i < len(src) && (isIdentCont(src[l.i])) {
		l.i++
	}
	digits := strings.ReplaceAll(src[ds:l.i], "_", "")
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || digits == "" {
		return lexError(src, start, "trailing junk after numeric literal at or near %q", src[start:l.i])
	}
	l.emit(tNumber, strconv.FormatUint(v, 10), start)
	return nil
}

// dollar scans $n parameters and $tag$…$tag$ strings.
func (l *lexer) dollar() error {
	src, start := l.src, l.i
	j := start + 1
	if j < len(src) && isDigit(src[j]) {
		for j < len(src) && isDigit(src[j]) {
			j++
		}
		l.i = j
		if l.i < len(src) && isIdentStart(src[l.i]) {
			return l.trailingJunk(start)
		}
		n, err := strconv.Atoi(src[start+1 : j])
		if err != nil || n == 0 || n > 65535 {
			return lexError(src, start, "there is no parameter %s", src[start:j])
		}
		l.toks = append(l.toks, token{kind: tParam, val: src[start:j], pos: start, end: j, n: n})
		return nil
	}
	for j < len(src) && src[j] != '$' && isIdentCont(src[j]) && src[j] != '$' {
		j++
	}
	if j >= len(src) || src[j] != '$' {
		return lexError(src, start, "syntax error at or near \"$\"")
	}
	tag := src[start : j+1]
	body := j + 1
	k := strings.Index(src[body:], tag)
	if k < 0 {
		return lexError(src, start, "unterminated dollar-quoted string at or near %q", snippet(src[start:]))
	}
	l.i = body + k + len(tag)
	l.emit(tString, src[body:body+k], start)
	return nil
}

// quoted scans a '…' string starting at body (just after the quote);
// escapes turns on E'…' backslash escapes. Adjacent strings separated by
// whitespace containing a newline are one constant, as in PostgreSQL.
func (l *lexer) quoted(start, body int, escapes bool) error {
	var sb strings.Builder
	for {
		end, err := l.quotedPart(&sb, start, body, escapes)
		if err != nil {
			return err
		}
		l.i = end
		next, ok := l.continuation()
		if !ok {
			break
		}
		body = next + 1
	}
	s := sb.String()
	if escapes && !utf8.ValidString(s) {
		return pgerror.WithPosition(pgerror.New(pgerror.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\""), runePos(l.src, start))
	}
	l.emit(tString, s, start)
	return nil
}

// continuation reports whether the string just scanned continues: only
// whitespace with at least one newline, then another quote.
func (l *lexer) continuation() (int, bool) {
	j, newline := l.i, false
	for j < len(l.src) && isSpace(l.src[j]) {
		if l.src[j] == '\n' || l.src[j] == '\r' {
			newline = true
		}
		j++
	}
	if newline && j < len(l.src) && l.src[j] == '\'' {
		return j, true
	}
	return 0, false
}

// quotedPart appends the body of one quoted segment to sb and returns the
// offset after its closing quote.
func (l *lexer) quotedPart(sb *strings.Builder, start, i int, escapes bool) (int, error) {
	src := l.src
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\'':
			if i+1 < len(src) && src[i+1] == '\'' {
				sb.WriteByte('\'')
				i += 2
				continue
			}
			return i + 1, nil
		case c == '\\' && escapes:
			n, err := l.escape(sb, i)
			if err != nil {
				return 0, err
			}
			i = n
		default:
			j := i + 1
			for j < len(src) && src[j] != '\'' && !(escapes && src[j] == '\\') {
				j++
			}
			sb.WriteString(src[i:j])
			i = j
		}
	}
	return 0, lexError(src, start, "unterminated quoted string at or near %q", snippet(src[start:]))
}

// escape decodes the backslash escape at src[i] of an E'…' string.
func (l *lexer) escape(sb *strings.Builder, i int) (int, error) {
	src := l.src
	if i+1 >= len(src) {
		return i + 1, nil // the missing quote is reported by the caller
	}
	c := src[i+1]
	simple := map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	if r, ok := simple[c]; ok {
		sb.WriteByte(r)
		return i + 2, nil
	}
	switch {
	case c >= '0' && c <= '7':
		return l.numericEscape(sb, i, i+1, 3, 8)
	case c == 'x' && i+2 < len(src) && isHex(src[i+2]):
		return l.numericEscape(sb, i, i+2, 2, 16)
	case c == 'u' || c == 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		return l.unicodeEscape(sb, i, i+2, n)
	}
	r, size := utf8.DecodeRuneInString(src[i+1:])
	sb.WriteRune(r)
	return i + 1 + size, nil
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (l *lexer) numericEscape(sb *strings.Builder, at, i, max, base int) (int, error) {
	j := i
	for j < len(l.src) && j-i < max && (base == 16 && isHex(l.src[j]) || base == 8 && l.src[j] >= '0' && l.src[j] <= '7') {
		j++
	}
	v, _ := strconv.ParseUint(l.src[i:j], base, 16)
	if v == 0 || v > 255 {
		return 0, l.badEscape(at)
	}
	sb.WriteByte(byte(v))
	return j, nil
}

func (l *lexer) badEscape(at int) error {
	return pgerror.WithPosition(pgerror.New(pgerror.InvalidEscapeSequence, "invalid Unicode escape value"), runePos(l.src, at))
}

// unicodeEscape decodes \uXXXX / \UXXXXXXXX, joining UTF-16 surrogate pairs.
func (l *lexer) unicodeEscape(sb *strings.Builder, at, i, n int) (int, error) {
	r, j, ok := l.hexRune(i, n)
	if !ok {
		return 0, l.badEscape(at)
	}
	if r >= 0xD800 && r <= 0xDBFF {
		if !strings.HasPrefix(l.src[j:], "\\u") {
			return 0, l.badEscape(at)
		}
		lo, k, ok := l.hexRune(j+2, 4)
		if !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, l.badEscape(at)
		}
		r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
		j = k
	}
	if r == 0 || !utf8.ValidRune(r) {
		return 0, l.badEscape(at)
	}
	sb.WriteRune(r)
	return j, nil
}

func (l *lexer) hexRune(i, n int) (rune, int, bool) {
	if i+n > len(l.src) {
		return 0, i, false
	}
	v, err := strconv.ParseUint(l.src[i:i+n], 16, 32)
	if err != nil {
		return 0, i, false
	}
	return rune(v), i + n, true
}

// unicodeString scans U&'…' with the default \ escape character.
func (l *lexer) unicodeString() error {
	start := l.i
	var raw strings.Builder
	end, err := l.quotedPart(&raw, start, start+3, false)
	if err != nil {
		return err
	}
	l.i = end
	s := raw.String()
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			sb.WriteByte(s[i])
			continue
		}
		n := 4
		k := i + 1
		switch {
		case k < len(s) && s[k] == '\\':
			sb.WriteByte('\\')
			i++
			continue
		case k < len(s) && s[k] == '+':
			n, k = 6, k+1
		}
		if k+n > len(s) {
			return l.badEscape(start)
		}
		v, err := strconv.ParseUint(s[k:k+n], 16, 32)
		if err != nil || v == 0 || !utf8.ValidRune(rune(v)) {
			return l.badEscape(start)
		}
		sb.WriteRune(rune(v))
		i = k + n - 1
	}
	l.emit(tString, sb.String(), start)
	return nil
}

// bitString scans B'0101' or X'DEADBEEF'.
func (l *lexer) bitString(kind tokKind) error {
	start := l.i
	var sb strings.Builder
	end, err := l.quotedPart(&sb, start, start+2, false)
	if err != nil {
		return err
	}
	l.i = end
	s := sb.String()
	if kind == tBits {
		if strings.Trim(s, "01") != "" {
			return lexError(l.src, start, "%q is not a valid binary digit", strings.Trim(s, "01")[:1])
		}
		l.emit(tBits, s, start)
		return nil
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return lexError(l.src, start, "%q is not a valid hexadecimal digit", s[2*i:2*i+2])
		}
		b[i] = byte(v)
	}
	l.emit(tBytes, string(b), start)
	return nil
}

// quotedIdent scans a "quoted" identifier.
func (l *lexer) quotedIdent() error {
	src, start := l.src, l.i
	var sb strings.Builder
	i := start + 1
	for i < len(src) {
		j := strings.IndexByte(src[i:], '"')
		if j < 0 {
			break
		}
		sb.WriteString(src[i : i+j])
		i += j + 1
		if i < len(src) && src[i] == '"' {
			sb.WriteByte('"')
			i++
			continue
		}
		l.i = i
		if sb.Len() == 0 {
			return lexError(src, start, "zero-length delimited identifier at or near \"\"\"\"")
		}
		l.emit(tQIdent, sb.String(), start)
		return nil
	}
	return lexError(src, start, "unterminated quoted identifier at or near %q", snippet(src[start:]))
}
