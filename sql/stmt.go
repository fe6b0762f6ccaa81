package sql

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	tast "github.com/pingcap/tidb/pkg/parser/ast"
)

// stmtParser is a small recursive-descent parser over the tokens of one
// statement. It handles the statements TiDB's grammar lacks (streaming
// DDL, SHOW/SET/transactions, cursors) and hands queries and INSERT to
// the normalizer and TiDB.
type stmtParser struct {
	src   string
	toks  []token
	after token // ";" or EOF
	i     int
}

func (p *stmtParser) tok(i int) token {
	if i < len(p.toks) {
		return p.toks[i]
	}
	return p.after
}

func (p *stmtParser) peek() token { return p.tok(p.i) }

// accept consumes the keywords words if they come next, all of them.
func (p *stmtParser) accept(words ...string) bool {
	for k, w := range words {
		if !p.tok(p.i + k).is(w) {
			return false
		}
	}
	p.i += len(words)
	return true
}

func (p *stmtParser) acceptOp(op string) bool {
	if p.peek().isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *stmtParser) expect(words ...string) error {
	for _, w := range words {
		if !p.accept(w) {
			return p.fail()
		}
	}
	return nil
}

func (p *stmtParser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.fail()
	}
	return nil
}

func (p *stmtParser) fail() error { return syntaxErrorAt(p.src, p.peek()) }

func (p *stmtParser) end() error {
	if p.i < len(p.toks) {
		return p.fail()
	}
	return nil
}

// name reads an identifier (folded unless quoted).
func (p *stmtParser) name() (string, error) {
	t := p.peek()
	if t.kind != tIdent && t.kind != tQIdent {
		return "", p.fail()
	}
	p.i++
	return t.val, nil
}

// tableName reads name or schema.name.
func (p *stmtParser) tableName() (schema, name string, err error) {
	if name, err = p.name(); err != nil {
		return "", "", err
	}
	if p.acceptOp(".") {
		schema = name
		if name, err = p.name(); err != nil {
			return "", "", err
		}
	}
	return schema, name, nil
}

// objectName reads a possibly qualified name as one dotted string.
func (p *stmtParser) objectName() (string, error) {
	schema, name, err := p.tableName()
	if schema != "" {
		name = schema + "." + name
	}
	return name, err
}

func (p *stmtParser) unit(lo, hi int) unit {
	return unit{src: p.src, toks: p.toks[lo:hi], after: p.tok(hi)}
}

// unsupportedStarts are statements fvsql recognises but does not run.
var unsupportedStarts = setOf(`update delete alter grant revoke truncate vacuum analyze analyse
listen notify unlisten prepare execute do call lock comment reindex cluster checkpoint
security import load refresh merge reassign move`)

func (p *stmtParser) statement() (Statement, error) {
	t := p.peek()
	if t.isOp("(") {
		return p.queryStmt()
	}
	if t.kind == tIdent {
		if h, ok := stmtHandlers[t.val]; ok {
			return h(p)
		}
		if unsupportedStarts[t.val] {
			return &Unsupported{What: p.what()}, nil
		}
	}
	return nil, p.fail()
}

var stmtHandlers map[string]func(*stmtParser) (Statement, error)

func init() {
	stmtHandlers = map[string]func(*stmtParser) (Statement, error){
		"select":     (*stmtParser).queryStmt,
		"with":       (*stmtParser).queryStmt,
		"table":      (*stmtParser).queryStmt,
		"values":     func(p *stmtParser) (Statement, error) { return &Unsupported{What: "VALUES"}, nil },
		"insert":     (*stmtParser).insert,
		"create":     (*stmtParser).create,
		"drop":       (*stmtParser).drop,
		"show":       (*stmtParser).show,
		"set":        (*stmtParser).set,
		"reset":      (*stmtParser).reset,
		"begin":      (*stmtParser).begin,
		"start":      (*stmtParser).begin,
		"commit":     (*stmtParser).commit,
		"end":        (*stmtParser).commit,
		"rollback":   (*stmtParser).rollback,
		"savepoint":  (*stmtParser).savepoint,
		"release":    (*stmtParser).savepoint,
		"abort":      (*stmtParser).rollback,
		"discard":    (*stmtParser).discard,
		"deallocate": (*stmtParser).deallocate,
		"flush":      (*stmtParser).flush,
		"subscribe":  func(p *stmtParser) (Statement, error) { return p.subscribe() },
		"declare":    (*stmtParser).declare,
		"fetch":      (*stmtParser).fetch,
		"close":      (*stmtParser).closeCursor,
		"explain":    (*stmtParser).explain,
		"describe":   (*stmtParser).describe,
		"copy":       (*stmtParser).copyStmt,
		"desc":       (*stmtParser).describe,
	}
}

// what names an unsupported statement by its leading keywords.
func (p *stmtParser) what() string {
	words := []string{p.toks[0].val}
	switch p.toks[0].val {
	case "create", "alter", "drop", "comment":
		for k := 1; k < len(p.toks) && k < 5; k++ {
			t := p.toks[k]
			if t.kind != tIdent {
				break
			}
			words = append(words, t.val)
			if !modifierWords[t.val] {
				break
			}
		}
	}
	return strings.ToUpper(strings.Join(words, " "))
}

var modifierWords = setOf(`or replace unique temp temporary global local unlogged materialized foreign recursive trusted default on`)

// ---------------------------------------------------------------------------
// Queries and INSERT.

func (p *stmtParser) queryStmt() (Statement, error) {
	q, err := parseQueryUnit(p.unit(0, len(p.toks)))
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (p *stmtParser) insert() (Statement, error) {
	if ins, ok := p.fastInsert(); ok {
		return ins, nil
	}
	return p.generalInsert()
}

// generalInsert parses any INSERT through TiDB's grammar.
func (p *stmtParser) generalInsert() (Statement, error) {
	depth := 0
	for i, t := range p.toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth > 0:
		case t.is("returning"):
			return &Unsupported{What: "INSERT … RETURNING"}, nil
		case t.is("on") && p.tok(i+1).is("conflict"):
			return &Unsupported{What: "INSERT … ON CONFLICT"}, nil
		case t.is("default") && p.tok(i+1).is("values"):
			return &Unsupported{What: "INSERT … DEFAULT VALUES"}, nil
		}
	}
	u := p.unit(0, len(p.toks))
	nr, err := normalize(u, "")
	if err != nil {
		return nil, err
	}
	node, err := tidbParse(u, nr)
	if err != nil {
		return nil, err
	}
	is, ok := node.(*tast.InsertStmt)
	if !ok {
		return nil, syntaxErrorAt(p.src, p.toks[0])
	}
	c := &converter{params: nr.params, parsed: nr.exprs, aliases: nr.aliases, at: sourcePos(u.src, nr), named: fromNamePos(u.src, nr)}
	maxParam, err := c.windowTVFs(u, nr)
	if err != nil {
		return nil, err
	}
	ins, err := c.insert(is)
	if err != nil {
		return nil, withPosition(err, p.src, p.toks[0].pos)
	}
	if ins.Query != nil {
		ins.Query.Emit = nr.emit
		ins.Query.NumParams = max(nr.maxParam, maxParam)
	} else if nr.emit != EmitDefault {
		return nil, syntaxErrorAt(p.src, p.toks[0])
	}
	return ins, nil
}

// ---------------------------------------------------------------------------
// CREATE and DROP.

func (p *stmtParser) objectKind() (ObjectKind, bool) {
	switch {
	case p.accept("stream"):
		return KindStream, true
	case p.accept("materialized", "view"):
		return KindMaterializedView, true
	case p.accept("sink"):
		return KindSink, true
	}
	return "", false
}

func (p *stmtParser) create() (Statement, error) {
	p.i++
	if p.peek().is("function") || p.peek().is("or") && p.tok(p.i+1).is("replace") && p.tok(p.i+2).is("function") {
		return p.createFunction()
	}
	kind, ok := p.objectKind()
	if !ok {
		return &Unsupported{What: p.what()}, nil
	}
	ifNotExists := p.accept("if", "not", "exists")
	name, err := p.objectName()
	if err != nil {
		return nil, err
	}
	if kind == KindStream && p.peek().isOp("(") {
		return p.createStream(name, ifNotExists)
	}
	var opts []Option
	if p.peek().is("with") {
		if opts, err = p.options(nil); err != nil {
			return nil, err
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	lo, hi := p.i, p.trailingWith(p.i)
	q, err := parseQueryUnit(p.unit(lo, hi))
	if err != nil {
		return nil, err
	}
	p.i = hi
	if p.i < len(p.toks) {
		if opts, err = p.options(opts); err != nil {
			return nil, err
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return &CreateAs{Kind: kind, Name: name, IfNotExists: ifNotExists, Query: q, Options: opts}, nil
}

// trailingWith finds a `WITH (` at the top level after the query starting
// at lo (a CTE's WITH is followed by a name, not a parenthesis).
func (p *stmtParser) trailingWith(lo int) int {
	depth := 0
	for i := lo; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case depth == 0 && i > lo && t.is("with") && p.tok(i+1).isOp("("):
			return i
		}
	}
	return len(p.toks)
}

func (p *stmtParser) createStream(name string, ifNotExists bool) (Statement, error) {
	cs := &CreateStream{Name: name, IfNotExists: ifNotExists}
	p.i++ // (
	seen := map[string]bool{}
	for {
		if p.peek().is("watermark") && (p.tok(p.i + 1).is("for")) {
			if err := p.watermark(cs); err != nil {
				return nil, err
			}
		} else if err := p.columnDef(cs, seen); err != nil {
			return nil, err
		}
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		break
	}
	// The watermark's column is a declared one or, when none has its
	// name, the record timestamp every stream carries (the planner checks
	// the rest: the types, and that no other metadata column is named).
	if cs.Watermark != nil && !seen[cs.Watermark.Column] && cs.Watermark.Column != RecordTimestamp {
		return nil, pgerror.New(pgerror.UndefinedColumn, "column %q named in WATERMARK does not exist", cs.Watermark.Column)
	}
	if p.peek().is("with") {
		opts, err := p.options(nil)
		if err != nil {
			return nil, err
		}
		cs.Options = opts
	}
	return cs, p.end()
}

func (p *stmtParser) columnDef(cs *CreateStream, seen map[string]bool) error {
	at := p.peek()
	col, err := p.name()
	if err != nil {
		return err
	}
	if seen[col] {
		e := pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", col)
		e.Position = runePos(p.src, at.pos)
		return e
	}
	seen[col] = true
	typeName, next, err := readTypeName(p.src, p.toks, p.i, len(p.toks), p.after)
	if err != nil {
		return err
	}
	p.i = next
	t, err := types.Parse(typeName)
	if err != nil {
		return pgerror.WithPosition(err, runePos(p.src, at.pos))
	}
	def := ColumnDef{Name: col, Type: t, TypeName: typeName}
	for {
		switch {
		case p.accept("not", "null"):
			def.NotNull = true
		case p.accept("null"):
			def.NotNull = false
		default:
			cs.Columns = append(cs.Columns, def)
			return nil
		}
	}
}

// watermark reads WATERMARK FOR col AS expr; expr runs to the next comma
// or the closing parenthesis at this level.
func (p *stmtParser) watermark(cs *CreateStream) error {
	at := p.peek()
	if cs.Watermark != nil {
		e := pgerror.New(pgerror.SyntaxError, "multiple WATERMARK clauses are not allowed")
		e.Position = runePos(p.src, at.pos)
		return e
	}
	p.i += 2
	col, err := p.name()
	if err != nil {
		return err
	}
	if err := p.expect("as"); err != nil {
		return err
	}
	lo, depth := p.i, 0
	for ; p.i < len(p.toks); p.i++ {
		t := p.toks[p.i]
		if t.isOp("(") {
			depth++
		} else if t.isOp(")") || t.isOp(",") {
			if depth == 0 {
				break
			}
			if t.isOp(")") {
				depth--
			}
		}
	}
	e, _, err := parseExprUnit(p.unit(lo, p.i))
	if err != nil {
		return err
	}
	cs.Watermark = &Watermark{Column: col, Expr: e}
	return nil
}

// options reads WITH (key = value, …) and appends to opts, refusing a
// key given twice (also across the two WITH positions of CREATE … AS).
func (p *stmtParser) options(opts []Option) ([]Option, error) {
	if err := p.expect("with"); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	for {
		at := p.peek()
		key, err := p.optionKey()
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			if o.Key == key {
				e := pgerror.New(pgerror.DuplicateObject, "option %q specified more than once", key)
				e.Position = runePos(p.src, at.pos)
				return nil, e
			}
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		val, err := p.optionValue()
		if err != nil {
			return nil, err
		}
		opts = append(opts, Option{Key: key, Value: val})
		if p.acceptOp(",") {
			continue
		}
		return opts, p.expectOp(")")
	}
}

func (p *stmtParser) optionKey() (string, error) {
	var parts []string
	for {
		t := p.peek()
		switch t.kind {
		case tIdent, tQIdent, tString:
			parts = append(parts, strings.ToLower(t.val))
			p.i++
		default:
			return "", p.fail()
		}
		if !p.acceptOp(".") {
			return strings.Join(parts, "."), nil
		}
	}
}

func (p *stmtParser) optionValue() (string, error) {
	t := p.peek()
	sign := ""
	if t.isOp("-") || t.isOp("+") {
		sign = strings.TrimPrefix(t.val, "+")
		p.i++
		t = p.peek()
		if t.kind != tNumber {
			return "", p.fail()
		}
	}
	switch t.kind {
	case tString, tQIdent:
		p.i++
		return t.val, nil
	case tNumber:
		p.i++
		return sign + p.src[t.pos:t.end], nil
	case tIdent:
		p.i++
		return p.src[t.pos:t.end], nil
	}
	return "", p.fail()
}

func (p *stmtParser) drop() (Statement, error) {
	p.i++
	if p.accept("function") {
		return p.dropFunction()
	}
	kind, ok := p.objectKind()
	if !ok {
		switch {
		case p.accept("table"):
			kind = KindTable
		case p.accept("view"):
			kind = KindView
		default:
			return &Unsupported{What: p.what()}, nil
		}
	}
	d := &Drop{Kind: kind, IfExists: p.accept("if", "exists")}
	for {
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		d.Names = append(d.Names, name)
		if !p.acceptOp(",") {
			break
		}
	}
	if !p.accept("cascade") {
		p.accept("restrict")
	}
	return d, p.end()
}

// ---------------------------------------------------------------------------
// SHOW, SET, RESET.

func (p *stmtParser) show() (Statement, error) {
	p.i++
	var what string
	switch {
	case p.accept("streams"):
		what = "streams"
	case p.accept("materialized", "views"):
		what = "materialized views"
	case p.accept("sinks"):
		what = "sinks"
	case p.accept("pipelines"):
		what = "pipelines"
	case p.accept("functions"):
		what = "functions"
	case p.accept("tables"):
		what = "tables"
	case p.accept("all"):
		what = "all"
	case p.accept("transaction", "isolation", "level"):
		what = "transaction_isolation"
	case p.accept("time", "zone"):
		what = "timezone"
	case p.accept("session", "authorization"):
		what = "session_authorization"
	default:
		name, err := p.settingName()
		if err != nil {
			return nil, err
		}
		what = name
	}
	return &Show{What: what}, p.end()
}

// settingName reads a configuration parameter name (possibly dotted).
func (p *stmtParser) settingName() (string, error) {
	name, err := p.name()
	if err != nil {
		return "", err
	}
	for p.acceptOp(".") {
		part, err := p.name()
		if err != nil {
			return "", err
		}
		name += "." + part
	}
	return strings.ToLower(name), nil
}

func (p *stmtParser) set() (Statement, error) {
	p.i++
	s := &Set{}
	switch {
	case p.accept("session", "characteristics"):
		// SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL x:
		// the session's default_transaction_isolation (Metabase sets it);
		// the other modes (READ ONLY, DEFERRABLE) are accepted and ignored
		if p.accept("as", "transaction") {
			if lvl, ok := p.isolationLevel(); ok {
				s.Name, s.Value = "default_transaction_isolation", lvl
				return p.skipRest(s)
			}
		}
		return p.skipRest(&Discard{Tag: "SET"})
	case p.accept("transaction"):
		return p.skipRest(&Discard{Tag: "SET"})
	case p.accept("local"):
		s.Local = true
	default:
		p.accept("session")
	}
	switch {
	case p.accept("transaction"):
		return p.skipRest(&Discard{Tag: "SET"})
	case p.accept("time", "zone"):
		s.Name = "timezone"
		if p.accept("local") {
			s.Value = "default"
			return s, p.end()
		}
		if p.accept("interval") {
			// SET TIME ZONE INTERVAL '+02:00' HOUR TO MINUTE: keep the text.
			t := p.peek()
			if t.kind != tString {
				return nil, p.fail()
			}
			p.i = len(p.toks)
			s.Value = t.val
			return s, nil
		}
		return p.setValues(s)
	case p.accept("names"):
		s.Name = "client_encoding"
		return p.setValues(s)
	case p.accept("schema"):
		s.Name = "search_path"
		return p.setValues(s)
	case p.accept("session", "authorization"):
		s.Name = "session_authorization"
		return p.setValues(s)
	case p.accept("role"):
		s.Name = "role"
		return p.setValues(s)
	}
	name, err := p.settingName()
	if err != nil {
		return nil, err
	}
	s.Name = name
	if !p.acceptOp("=") && !p.accept("to") {
		return nil, p.fail()
	}
	return p.setValues(s)
}

// setValues reads value[, …] into s.Value.
func (p *stmtParser) setValues(s *Set) (Statement, error) {
	var vals []string
	for {
		t := p.peek()
		switch {
		case t.is("default"):
			p.i++
			vals = append(vals, "default")
		case t.kind == tIdent, t.kind == tQIdent, t.kind == tString:
			p.i++
			vals = append(vals, t.val)
		default:
			v, err := p.optionValue()
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	s.Value = strings.Join(vals, ", ")
	return s, p.end()
}

func (p *stmtParser) reset() (Statement, error) {
	p.i++
	if p.accept("all") {
		return &Set{Name: "all", Value: "default"}, p.end()
	}
	name := ""
	switch {
	case p.accept("time", "zone"):
		name = "timezone"
	case p.accept("session", "authorization"):
		name = "session_authorization"
	case p.accept("transaction", "isolation", "level"):
		name = "transaction_isolation"
	default:
		var err error
		if name, err = p.settingName(); err != nil {
			return nil, err
		}
	}
	return &Set{Name: name, Value: "default"}, p.end()
}

// skipRest accepts the rest of a statement whose details fvsql ignores,
// checking only that it is made of words, numbers, strings and commas.
// isolationLevel reads ISOLATION LEVEL SERIALIZABLE | REPEATABLE READ |
// READ COMMITTED | READ UNCOMMITTED, in lower case.
func (p *stmtParser) isolationLevel() (string, bool) {
	if !p.accept("isolation", "level") {
		return "", false
	}
	for _, l := range [][]string{{"serializable"}, {"repeatable", "read"}, {"read", "committed"}, {"read", "uncommitted"}} {
		if p.accept(l...) {
			return strings.Join(l, " "), true
		}
	}
	return "", false
}

func (p *stmtParser) skipRest(s Statement) (Statement, error) {
	for ; p.i < len(p.toks); p.i++ {
		switch p.toks[p.i].kind {
		case tIdent, tString, tNumber:
		case tOp:
			if !p.toks[p.i].isOp(",") && !p.toks[p.i].isOp("=") {
				return nil, p.fail()
			}
		default:
			return nil, p.fail()
		}
	}
	return s, nil
}

// ---------------------------------------------------------------------------
// Transactions and session housekeeping.

func (p *stmtParser) begin() (Statement, error) {
	if p.accept("start") {
		if err := p.expect("transaction"); err != nil {
			return nil, err
		}
	} else {
		p.i++
		if !p.accept("work") {
			p.accept("transaction")
		}
	}
	return p.skipRest(&Transaction{Kind: TxBegin})
}

func (p *stmtParser) commit() (Statement, error) {
	p.i++
	if p.accept("prepared") {
		return &Unsupported{What: "COMMIT PREPARED"}, nil
	}
	return p.txEnd(TxCommit)
}

func (p *stmtParser) rollback() (Statement, error) {
	p.i++
	if p.accept("prepared") {
		return &Unsupported{What: "ROLLBACK PREPARED"}, nil
	}
	if !p.accept("work") {
		p.accept("transaction")
	}
	if p.accept("to") {
		p.accept("savepoint")
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		return &Transaction{Kind: TxRollbackTo, Savepoint: name}, p.end()
	}
	return p.txEnd(TxRollback)
}

// savepoint parses SAVEPOINT name and RELEASE [SAVEPOINT] name.
func (p *stmtParser) savepoint() (Statement, error) {
	kind := TxSavepoint
	if p.peek().is("release") {
		kind = TxRelease
	}
	p.i++
	p.accept("savepoint")
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	return &Transaction{Kind: kind, Savepoint: name}, p.end()
}

func (p *stmtParser) txEnd(kind TxKind) (Statement, error) {
	if !p.accept("work") {
		p.accept("transaction")
	}
	if p.accept("and") {
		p.accept("no")
		if err := p.expect("chain"); err != nil {
			return nil, err
		}
	}
	return &Transaction{Kind: kind}, p.end()
}

func (p *stmtParser) discard() (Statement, error) {
	p.i++
	if !p.accept("all") && !p.accept("plans") && !p.accept("sequences") && !p.accept("temp") && !p.accept("temporary") {
		return nil, p.fail()
	}
	return &Discard{}, p.end()
}

func (p *stmtParser) deallocate() (Statement, error) {
	p.i++
	p.accept("prepare")
	if !p.accept("all") {
		if _, err := p.name(); err != nil {
			return nil, err
		}
	}
	return &Discard{}, p.end()
}

// ---------------------------------------------------------------------------
// Streaming statements and cursors.

func (p *stmtParser) flush() (Statement, error) {
	p.i++
	return &Flush{}, p.end()
}

func (p *stmtParser) subscribe() (*Subscribe, error) {
	p.i++
	p.accept("to")
	if p.peek().isOp("(") {
		closeIdx := matchParen(p.toks, p.i)
		if closeIdx < 0 {
			return nil, syntaxErrorAt(p.src, p.after)
		}
		q, err := parseQueryUnit(p.unit(p.i+1, closeIdx))
		if err != nil {
			return nil, err
		}
		p.i = closeIdx + 1
		return &Subscribe{Query: q}, p.end()
	}
	name, err := p.objectName()
	if err != nil {
		return nil, err
	}
	sub := &Subscribe{Name: name}
	if p.peek().is("with") {
		if sub.Options, err = p.options(nil); err != nil {
			return nil, err
		}
	}
	return sub, p.end()
}

func matchParen(toks []token, i int) int {
	depth := 0
	for k := i; k < len(toks); k++ {
		switch {
		case toks[k].isOp("("):
			depth++
		case toks[k].isOp(")"):
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

func (p *stmtParser) declare() (Statement, error) {
	p.i++
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	if p.peek().is("binary") {
		return &Unsupported{What: "DECLARE … BINARY CURSOR"}, nil
	}
	for p.accept("insensitive") || p.accept("asensitive") || p.accept("scroll") || p.accept("no", "scroll") {
	}
	if err := p.expect("cursor"); err != nil {
		return nil, err
	}
	if !p.accept("with", "hold") {
		p.accept("without", "hold")
	}
	if err := p.expect("for"); err != nil {
		return nil, err
	}
	dc := &DeclareCursor{Name: name}
	if p.peek().is("subscribe") {
		sub := &stmtParser{src: p.src, toks: p.toks[p.i:], after: p.after}
		dc.Subscribe, err = sub.subscribe()
		return dc, err
	}
	dc.Query, err = parseQueryUnit(p.unit(p.i, len(p.toks)))
	return dc, err
}

func (p *stmtParser) fetch() (Statement, error) {
	p.i++
	f := &Fetch{Count: 1}
	switch {
	case p.accept("forward"):
		if p.accept("all") {
			f.Count = -1
		} else if p.peek().kind == tNumber {
			if err := p.fetchCount(f); err != nil {
				return nil, err
			}
		}
	case p.accept("next"):
	case p.accept("all"):
		f.Count = -1
	case p.peek().kind == tNumber:
		if err := p.fetchCount(f); err != nil {
			return nil, err
		}
	case p.peek().is("backward") || p.peek().is("prior") || p.peek().is("first") || p.peek().is("last") ||
		p.peek().is("absolute") || p.peek().is("relative") || p.peek().isOp("-"):
		return &Unsupported{What: "FETCH " + strings.ToUpper(p.peek().val)}, nil
	}
	if !p.accept("from") {
		p.accept("in")
	}
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	f.Cursor = name
	return f, p.end()
}

func (p *stmtParser) fetchCount(f *Fetch) error {
	t := p.peek()
	n, err := strconv.ParseInt(t.val, 10, 64)
	if err != nil {
		return p.fail()
	}
	p.i++
	f.Count = n
	return nil
}

func (p *stmtParser) closeCursor() (Statement, error) {
	p.i++
	if p.accept("all") {
		return &CloseCursor{}, p.end()
	}
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	return &CloseCursor{Name: name}, p.end()
}

func (p *stmtParser) explain() (Statement, error) {
	p.i++
	if p.peek().isOp("(") {
		closeIdx := matchParen(p.toks, p.i)
		if closeIdx < 0 {
			return nil, syntaxErrorAt(p.src, p.after)
		}
		p.i = closeIdx + 1
	}
	if !p.accept("analyze") {
		p.accept("analyse")
	}
	p.accept("verbose")
	if p.i >= len(p.toks) {
		return nil, p.fail()
	}
	inner := &stmtParser{src: p.src, toks: p.toks[p.i:], after: p.after}
	s, err := inner.statement()
	if err != nil {
		return nil, err
	}
	return &Explain{Stmt: s}, nil
}

func (p *stmtParser) describe() (Statement, error) {
	p.i++
	name, err := p.objectName()
	if err != nil {
		return nil, err
	}
	return &Describe{Name: name}, p.end()
}

// ---------------------------------------------------------------------------
// COPY.

// copyStmt parses COPY in PostgreSQL's grammar: the generic option list
// WITH (name value, …) and the older option words (BINARY, CSV, HEADER,
// DELIMITER [AS] 'x', FORCE QUOTE cols, …), which become the same
// CopyOptions.
func (p *stmtParser) copyStmt() (Statement, error) {
	p.i++
	c := &Copy{}
	if p.accept("binary") {
		c.Options = append(c.Options, CopyOption{Name: "format", Value: "binary", HasValue: true})
	}
	if p.peek().isOp("(") {
		closeIdx := matchParen(p.toks, p.i)
		if closeIdx < 0 {
			return nil, syntaxErrorAt(p.src, p.after)
		}
		if p.tok(p.i + 1).is("subscribe") {
			sub := &stmtParser{src: p.src, toks: p.toks[p.i+1 : closeIdx], after: p.toks[closeIdx]}
			s, err := sub.subscribe()
			if err != nil {
				return nil, err
			}
			c.Subscribe = s
		} else {
			q, err := parseQueryUnit(p.unit(p.i+1, closeIdx))
			if err != nil {
				return nil, err
			}
			c.Query = q
		}
		p.i = closeIdx + 1
	} else {
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		c.Table = name
		if p.peek().isOp("(") {
			cols, err := p.identList()
			if err != nil {
				return nil, err
			}
			c.Columns = cols
		}
	}
	switch {
	case p.accept("from"):
		c.From = true
		if c.Table == "" {
			return nil, p.failAt(p.i - 1)
		}
	case p.accept("to"):
	default:
		return nil, p.fail()
	}
	switch t := p.peek(); {
	case t.is("stdin"), t.is("stdout"):
		// PostgreSQL takes either word either way: both mean the client.
		c.Target = "stdout"
		if c.From {
			c.Target = "stdin"
		}
		p.i++
	case t.is("program"):
		p.i++
		if p.peek().kind != tString {
			return nil, p.fail()
		}
		c.Target, c.File = "program", p.peek().val
		p.i++
	case t.kind == tString:
		c.Target, c.File = "file", t.val
		p.i++
	default:
		return nil, p.fail()
	}
	if p.peek().is("using") && p.tok(p.i+1).is("delimiters") {
		p.i += 2
		v, err := p.copyString()
		if err != nil {
			return nil, err
		}
		c.Options = append(c.Options, CopyOption{Name: "delimiter", Value: v, HasValue: true})
	}
	p.accept("with")
	var err error
	if p.peek().isOp("(") {
		err = p.copyGenericOptions(c)
	} else {
		err = p.copyLegacyOptions(c)
	}
	if err != nil {
		return nil, err
	}
	if p.peek().is("where") {
		return &Unsupported{What: "COPY … WHERE"}, nil
	}
	return c, p.end()
}

func (p *stmtParser) failAt(i int) error { return syntaxErrorAt(p.src, p.tok(i)) }

// identList reads (name, name, …).
func (p *stmtParser) identList() ([]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var out []string
	for {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		if p.acceptOp(")") {
			return out, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
}

func (p *stmtParser) copyString() (string, error) {
	t := p.peek()
	if t.kind != tString {
		return "", p.fail()
	}
	p.i++
	return t.val, nil
}

// copyGenericOptions reads ( name [value], … ): a value is a string, a
// number, a word (csv, true, match), * or a parenthesised column list.
func (p *stmtParser) copyGenericOptions(c *Copy) error {
	p.i++
	for {
		t := p.peek()
		if t.kind != tIdent {
			return p.fail()
		}
		p.i++
		o := CopyOption{Name: t.val}
		switch v := p.peek(); {
		case v.isOp("*"):
			o.Star = true
			p.i++
		case v.isOp("("):
			cols, err := p.identList()
			if err != nil {
				return err
			}
			o.Columns = cols
		case v.kind == tString || v.kind == tNumber || v.kind == tIdent || v.kind == tQIdent:
			o.Value, o.HasValue = v.val, true
			p.i++
		case v.isOp("-") && p.tok(p.i+1).kind == tNumber:
			o.Value, o.HasValue = "-"+p.tok(p.i+1).val, true
			p.i += 2
		}
		c.Options = append(c.Options, o)
		if p.acceptOp(")") {
			return nil
		}
		if err := p.expectOp(","); err != nil {
			return err
		}
	}
}

// copyLegacyOptions reads the option words of PostgreSQL before 9.0, which
// psql's \copy still sends (COPY s FROM STDIN csv header).
func (p *stmtParser) copyLegacyOptions(c *Copy) error {
	add := func(name, value string, has bool) {
		c.Options = append(c.Options, CopyOption{Name: name, Value: value, HasValue: has})
	}
	for p.i < len(p.toks) && !p.peek().is("where") {
		t := p.peek()
		p.i++
		switch {
		case t.is("binary"):
			add("format", "binary", true)
		case t.is("csv"):
			add("format", "csv", true)
		case t.is("oids"):
			add("oids", "", false)
		case t.is("freeze"):
			add("freeze", "", false)
		case t.is("header"):
			add("header", "", false)
		case t.is("delimiter") || t.is("null") || t.is("quote") || t.is("escape") || t.is("encoding"):
			p.accept("as")
			v, err := p.copyString()
			if err != nil {
				return err
			}
			add(t.val, v, true)
		case t.is("force"):
			name := "force_"
			switch {
			case p.accept("quote"):
				name += "quote"
			case p.accept("not", "null"):
				name += "not_null"
			case p.accept("null"):
				name += "null"
			default:
				return p.fail()
			}
			o := CopyOption{Name: name}
			if p.acceptOp("*") {
				o.Star = true
			} else {
				for {
					n, err := p.name()
					if err != nil {
						return err
					}
					o.Columns = append(o.Columns, n)
					if !p.acceptOp(",") {
						break
					}
				}
			}
			c.Options = append(c.Options, o)
		default:
			p.i--
			return p.fail()
		}
	}
	return nil
}
