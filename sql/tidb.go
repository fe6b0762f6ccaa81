package sql

import (
	"strings"
	"sync"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/pingcap/tidb/pkg/parser"
	tast "github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values for the parser
)

// tidbMode makes TiDB read "x" as an identifier, || as concatenation and
// backslashes in strings literally, as PostgreSQL does.
const tidbMode = mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes

// TiDB's parser is not safe for concurrent use; parsers are pooled.
var tidbPool = sync.Pool{New: func() any {
	p := parser.New()
	p.SetSQLMode(tidbMode)
	return p
}}

// unit is a range of source tokens handed to TiDB as one piece.
type unit struct {
	src   string
	toks  []token
	after token // the token after the range (";", ")", …) or an EOF token
}

// tidbParse parses the normalized text of u and maps a failure back to a
// PostgreSQL-style 42601 error at the source position.
func tidbParse(u unit, nr *normalized) (node tast.StmtNode, err error) {
	p := tidbPool.Get().(*parser.Parser)
	defer func() {
		if r := recover(); r != nil {
			// A parser panic is a bug in generated code we do not own; the
			// parser's state is unknown, so it is not returned to the pool.
			node, err = nil, u.errorAt(0, nr)
			return
		}
		tidbPool.Put(p)
	}()
	stmts, _, perr := p.Parse(nr.text, "", "")
	if perr != nil {
		return nil, u.errorAt(nearOffset(perr.Error(), nr.text), nr)
	}
	if len(stmts) != 1 {
		return nil, u.errorAt(len(nr.text), nr)
	}
	return stmts[0], nil
}

// nearOffset finds the byte offset of TiDB's error in text from its
// message `line L column C near "REST"…`, where REST is the text from the
// offending token on (cut at 2048 bytes, then followed by its length).
func nearOffset(msg, text string) int {
	const marker = ` near "`
	k := strings.Index(msg, marker)
	if k < 0 {
		return 0
	}
	rest := msg[k+len(marker):]
	if t := strings.LastIndex(rest, "(total length "); t >= 0 {
		var n int
		for _, c := range rest[t+len("(total length "):] {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		if n <= len(text) {
			return len(text) - n
		}
	}
	best := -1
	for j := 0; j < len(rest); j++ {
		if rest[j] == '"' && strings.HasSuffix(text, rest[:j]) {
			best = j
		}
	}
	if best < 0 {
		return 0
	}
	return len(text) - best
}

// errorAt builds the syntax error for byte offset off of the normalized text.
func (u unit) errorAt(off int, nr *normalized) error {
	if off >= len(nr.text) {
		return syntaxErrorAt(u.src, u.after)
	}
	src := nr.srcOffset(off)
	for _, t := range u.toks {
		if t.pos >= src {
			return syntaxErrorAt(u.src, t)
		}
	}
	return syntaxErrorAt(u.src, u.after)
}

// syntaxErrorAt is PostgreSQL's `syntax error at or near "tok"` (or "at
// end of input") positioned at tok.
func syntaxErrorAt(src string, t token) error {
	var e *pgerror.Error
	if t.kind == tEOF {
		e = pgerror.New(pgerror.SyntaxError, "syntax error at end of input")
	} else {
		e = pgerror.New(pgerror.SyntaxError, "syntax error at or near \"%s\"", src[t.pos:t.end])
	}
	e.Position = runePos(src, t.pos)
	return e
}

// notSupportedAt is a 0A000 error for a construct fvsql does not run.
func notSupportedAt(src string, pos int, what string) error {
	e := pgerror.NotSupported("%s", what)
	e.Position = runePos(src, pos)
	return e
}

// eofToken is the token after the last one of src.
func eofToken(src string) token { return token{kind: tEOF, pos: len(src), end: len(src)} }
