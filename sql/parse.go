package sql

import (
	"errors"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	tast "github.com/pingcap/tidb/pkg/parser/ast"
)

// catchPanics turns a panic inside Parse into an error. Tests switch it
// off so that the fuzzer sees the panic.
var catchPanics = true

func recoverTo(err *error) {
	if !catchPanics {
		return
	}
	if r := recover(); r != nil {
		*err = pgerror.New(pgerror.SyntaxError, "syntax error: %v", r)
	}
}

// Parse splits text into statements (on ';' outside quotes, comments and
// dollar-quotes) and parses each. Empty or comment-only text gives nil, nil.
// Errors are *pgerror.Error: 42601 for syntax errors, with Position the
// 1-based character offset in text; 42704 for unknown type names; 22007
// and others for bad constants.
func Parse(text string) (stmts []Parsed, err error) {
	defer recoverTo(&err)
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	start := 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) && !toks[i].isOp(";") {
			continue
		}
		if i > start {
			after := eofToken(text)
			if i < len(toks) {
				after = toks[i]
			}
			p := &stmtParser{src: text, toks: toks[start:i], after: after}
			s, err := p.statement()
			if err != nil {
				return nil, err
			}
			stmts = append(stmts, Parsed{Stmt: s, SQL: text[toks[start].pos:toks[i-1].end]})
		}
		start = i + 1
	}
	return stmts, nil
}

// ParseExpr parses one scalar expression (column defaults, tests).
func ParseExpr(text string) (e Expr, err error) {
	defer recoverTo(&err)
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	u := unit{src: text, toks: toks, after: eofToken(text)}
	if len(toks) == 0 {
		return nil, syntaxErrorAt(text, u.after)
	}
	e, _, err = parseExprUnit(u)
	return e, err
}

// parseExprUnit parses the tokens of u as one expression; it also returns
// the highest $n used.
func parseExprUnit(u unit) (Expr, int, error) {
	if len(u.toks) == 0 {
		return nil, 0, syntaxErrorAt(u.src, u.after)
	}
	nr, err := normalize(u, "SELECT")
	if err != nil {
		return nil, 0, err
	}
	node, err := tidbParse(u, nr)
	if err != nil {
		return nil, 0, err
	}
	sel, ok := node.(*tast.SelectStmt)
	if !ok || sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil ||
		sel.OrderBy != nil || sel.Limit != nil || sel.Distinct || len(nr.tvfs) > 0 || nr.emit != EmitDefault ||
		sel.Fields == nil || len(sel.Fields.Fields) != 1 || sel.Fields.Fields[0].WildCard != nil ||
		sel.Fields.Fields[0].AsName.O != "" {
		return nil, 0, syntaxErrorAt(u.src, u.toks[len(u.toks)-1])
	}
	c := &converter{params: nr.params, parsed: nr.exprs, aliases: nr.aliases, at: sourcePos(u.src, nr), named: fromNamePos(u.src, nr)}
	e, err := c.expr(sel.Fields.Fields[0].Expr)
	if err != nil {
		return nil, 0, withPosition(err, u.src, u.toks[0].pos)
	}
	return e, nr.maxParam, nil
}

// withPosition gives err the source position pos unless it has one.
func withPosition(err error, src string, pos int) error {
	var pe *pgerror.Error
	if errors.As(err, &pe) && pe.Position == 0 {
		return pgerror.WithPosition(err, runePos(src, pos))
	}
	if pe == nil {
		e := pgerror.New(pgerror.SyntaxError, "syntax error: %v", err)
		e.Position = runePos(src, pos)
		return e
	}
	return err
}

// subUnit is toks[lo:hi] of u with the token that follows.
func subUnit(u unit, lo, hi int) unit {
	after := u.after
	if hi < len(u.toks) {
		after = u.toks[hi]
	}
	return unit{src: u.src, toks: u.toks[lo:hi], after: after}
}

// parseQueryUnit parses u as a query (SELECT, set operation, TABLE t).
func parseQueryUnit(u unit) (*Query, error) {
	if len(u.toks) == 0 {
		return nil, syntaxErrorAt(u.src, u.after)
	}
	nr, err := normalize(u, "")
	if err != nil {
		return nil, err
	}
	node, err := tidbParse(u, nr)
	if err != nil {
		return nil, err
	}
	switch node.(type) {
	case *tast.SelectStmt, *tast.SetOprStmt:
	default:
		return nil, syntaxErrorAt(u.src, u.toks[0])
	}
	c := &converter{params: nr.params, parsed: nr.exprs, aliases: nr.aliases, at: sourcePos(u.src, nr), named: fromNamePos(u.src, nr)}
	maxParam, err := c.windowTVFs(u, nr)
	if err != nil {
		return nil, err
	}
	body, err := c.query(node)
	if err != nil {
		return nil, withPosition(err, u.src, u.toks[0].pos)
	}
	return &Query{Body: body, Emit: nr.emit, NumParams: max(nr.maxParam, maxParam)}, nil
}

// windowTVFs parses the arguments of the TUMBLE/HOP/SESSION calls and
// table functions the normalizer took out of FROM.
func (c *converter) windowTVFs(u unit, nr *normalized) (int, error) {
	maxParam := 0
	for _, s := range nr.tvfs {
		if s.kind == "function" {
			f, m, err := tableFunc(u, s)
			if err != nil {
				return 0, err
			}
			c.tvfs = append(c.tvfs, f)
			maxParam = max(maxParam, m)
			continue
		}
		w, m, err := windowTVF(u, s)
		if err != nil {
			return 0, err
		}
		c.tvfs = append(c.tvfs, w)
		maxParam = max(maxParam, m)
	}
	return maxParam, nil
}

// tableFunc parses the arguments of a function in FROM.
func tableFunc(u unit, s tvfSpan) (*TableFunc, int, error) {
	f := &TableFunc{Name: s.name, Ordinality: s.ordinality, Columns: s.cols}
	maxParam := 0
	for _, a := range s.args {
		e, m, err := parseExprUnit(subUnit(u, a[0], a[1]))
		if err != nil {
			return nil, 0, err
		}
		f.Args = append(f.Args, e)
		maxParam = max(maxParam, m)
	}
	return f, maxParam, nil
}

var tvfArity = map[string]int{"tumble": 3, "hop": 4, "session": 3}

func windowTVF(u unit, s tvfSpan) (*WindowTVF, int, error) {
	if want := tvfArity[s.kind]; len(s.args) != want {
		e := pgerror.New(pgerror.SyntaxError, "%s takes %d arguments: %s", strings.ToUpper(s.kind), want, tvfUsage[s.kind])
		e.Position = runePos(u.src, s.pos)
		return nil, 0, e
	}
	w := &WindowTVF{Kind: s.kind}
	src := subUnit(u, s.args[0][0], s.args[0][1])
	p := &stmtParser{src: u.src, toks: src.toks, after: src.after}
	schema, name, err := p.tableName()
	if err != nil {
		return nil, 0, err
	}
	if err := p.end(); err != nil {
		return nil, 0, err
	}
	w.Source = &TableName{Schema: schema, Name: name}
	col := subUnit(u, s.args[1][0], s.args[1][1])
	p = &stmtParser{src: u.src, toks: col.toks, after: col.after}
	if w.TimeCol, err = p.name(); err != nil {
		return nil, 0, err
	}
	if err := p.end(); err != nil {
		return nil, 0, err
	}
	var exprs []Expr
	maxParam := 0
	for _, a := range s.args[2:] {
		e, m, err := parseExprUnit(subUnit(u, a[0], a[1]))
		if err != nil {
			return nil, 0, err
		}
		exprs = append(exprs, e)
		maxParam = max(maxParam, m)
	}
	switch s.kind {
	case "tumble":
		w.Size = exprs[0]
	case "hop":
		w.Slide, w.Size = exprs[0], exprs[1]
	case "session":
		w.Gap = exprs[0]
	}
	return w, maxParam, nil
}

var tvfUsage = map[string]string{
	"tumble":  "(source, time column, size)",
	"hop":     "(source, time column, slide, size)",
	"session": "(source, time column, gap)",
}
