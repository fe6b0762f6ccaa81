package sql

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/types"
)

// Format prints a statement as canonical PostgreSQL-flavoured SQL:
// keywords upper case, identifiers quoted only when needed, parentheses
// only where precedence needs them. Parse(Format(s)) gives s back for
// everything Parse produces (EXPLAIN output and error messages use it).
func Format(s Statement) string {
	var f formatter
	f.stmt(s)
	return f.String()
}

// FormatExpr prints one expression like Format.
func FormatExpr(e Expr) string {
	var f formatter
	f.expr(e, 0)
	return f.String()
}

// FormatQuery prints a query expression like Format.
func FormatQuery(q QueryExpr) string {
	var f formatter
	f.query(q)
	return f.String()
}

type formatter struct{ strings.Builder }

func (f *formatter) w(parts ...string) {
	for _, p := range parts {
		f.WriteString(p)
	}
}

// Ident quotes name for SQL when it is not a plain lower-case identifier
// or is a reserved word.
func Ident(name string) string {
	if name == "" {
		return `""`
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && (c >= '0' && c <= '9' || c == '$')) {
			return quoteIdent(name)
		}
	}
	if pgReserved[name] {
		return quoteIdent(name)
	}
	return name
}

// qualified prints a possibly dotted name ("schema.table"): the schema,
// then the rest.
func qualified(name string) string {
	// schema.name, as objectName joins them; a name that itself holds a
	// dot (a quoted "a.b.c") prints as a."b.c", which parses back to
	// the same string.
	schema, rest, ok := strings.Cut(name, ".")
	if !ok {
		return Ident(name)
	}
	return Ident(schema) + "." + Ident(rest)
}

// ---------------------------------------------------------------------------
// Statements.

func (f *formatter) stmt(s Statement) {
	switch s := s.(type) {
	case *Query:
		f.queryStmt(s)
	case *CreateStream:
		f.createStream(s)
	case *CreateAs:
		f.w("CREATE ", strings.ToUpper(string(s.Kind)), " ")
		if s.IfNotExists {
			f.w("IF NOT EXISTS ")
		}
		f.w(qualified(s.Name), " AS ")
		f.queryStmt(s.Query)
		f.options(s.Options)
	case *CreateFunction:
		f.createFunction(s)
	case *DropFunction:
		f.w("DROP FUNCTION ")
		if s.IfExists {
			f.w("IF EXISTS ")
		}
		for i, r := range s.Funcs {
			f.sep(i, ", ")
			f.w(qualified(r.Name))
			if r.HasArgs {
				f.w("(")
				for j, a := range r.Args {
					f.sep(j, ", ")
					f.w(a.TypeName)
				}
				f.w(")")
			}
		}
	case *Insert:
		f.insert(s)
	case *Drop:
		f.w("DROP ", strings.ToUpper(string(s.Kind)), " ")
		if s.IfExists {
			f.w("IF EXISTS ")
		}
		for i, n := range s.Names {
			f.sep(i, ", ")
			f.w(qualified(n))
		}
	case *Show:
		if showKeywords[s.What] {
			f.w("SHOW ", strings.ToUpper(s.What))
		} else {
			f.w("SHOW ", qualified(s.What))
		}
	case *Set:
		f.set(s)
	case *Flush:
		f.w("FLUSH")
	case *Subscribe:
		f.subscribe(s)
	case *DeclareCursor:
		f.w("DECLARE ", Ident(s.Name), " CURSOR FOR ")
		if s.Subscribe != nil {
			f.subscribe(s.Subscribe)
		} else {
			f.queryStmt(s.Query)
		}
	case *Copy:
		f.copyStmt(s)
	case *Fetch:
		f.fetch(s)
	case *CloseCursor:
		if s.Name == "" {
			f.w("CLOSE ALL")
		} else {
			f.w("CLOSE ", Ident(s.Name))
		}
	case *Explain:
		f.w("EXPLAIN ")
		f.stmt(s.Stmt)
	case *Describe:
		f.w("DESCRIBE ", qualified(s.Name))
	case *Transaction:
		f.w(strings.ToUpper(string(s.Kind)))
		if s.Savepoint != "" {
			f.w(" ", Ident(s.Savepoint))
		}
	case *Discard:
		f.w("DISCARD ALL")
	case *Unsupported:
		f.w("-- unsupported: ", s.What)
	case nil:
		f.w("<nil>")
	}
}

// String names an EMIT mode as written in SQL.
func (m EmitMode) String() string {
	switch m {
	case EmitOnWindowClose:
		return "EMIT ON WINDOW CLOSE"
	case EmitChanges:
		return "EMIT CHANGES"
	}
	return "default"
}

var showKeywords = setOf(`streams sinks pipelines tables all functions`)

func init() { showKeywords["materialized views"] = true }

func (f *formatter) sep(i int, s string) {
	if i > 0 {
		f.w(s)
	}
}

func (f *formatter) queryStmt(q *Query) {
	if q == nil {
		f.w("<nil>")
		return
	}
	f.query(q.Body)
	switch q.Emit {
	case EmitChanges:
		f.w(" EMIT CHANGES")
	case EmitOnWindowClose:
		f.w(" EMIT ON WINDOW CLOSE")
	}
}

func (f *formatter) createFunction(s *CreateFunction) {
	f.w("CREATE ")
	if s.OrReplace {
		f.w("OR REPLACE ")
	}
	f.w("FUNCTION ", qualified(s.Name), "(")
	args := func(as []FuncArg) {
		for i, a := range as {
			f.sep(i, ", ")
			if a.Name != "" {
				f.w(Ident(a.Name), " ")
			}
			f.w(a.TypeName)
		}
		f.w(")")
	}
	args(s.Args)
	if s.Returns != nil {
		f.w(" RETURNS ", s.Returns.TypeName)
	} else {
		f.w(" RETURNS TABLE (")
		args(s.Table)
	}
	f.w(" LANGUAGE ", Ident(s.Language))
	switch {
	case s.Return:
		f.w(" RETURN ", strings.TrimPrefix(s.Body, "SELECT "))
	case s.BodyExpr != nil:
		f.w(" AS ")
		f.expr(s.BodyExpr, 0)
	default:
		f.w(" AS ", quoteString(s.Body))
	}
	if s.Volatility != "" {
		f.w(" ", strings.ToUpper(s.Volatility))
	}
	if s.Strict {
		f.w(" STRICT")
	}
	f.options(s.Options)
}

func (f *formatter) createStream(s *CreateStream) {
	f.w("CREATE STREAM ")
	if s.IfNotExists {
		f.w("IF NOT EXISTS ")
	}
	f.w(qualified(s.Name), " (")
	for i, c := range s.Columns {
		f.sep(i, ", ")
		f.w(Ident(c.Name), " ", c.TypeName)
		if c.NotNull {
			f.w(" NOT NULL")
		}
	}
	if s.Watermark != nil {
		f.sep(len(s.Columns), ", ")
		f.w("WATERMARK FOR ", Ident(s.Watermark.Column), " AS ")
		f.expr(s.Watermark.Expr, 0)
	}
	f.w(")")
	f.options(s.Options)
}

func (f *formatter) options(opts []Option) {
	if len(opts) == 0 {
		return
	}
	f.w(" WITH (")
	for i, o := range opts {
		f.sep(i, ", ")
		f.w(qualified(o.Key), " = ", optionValue(o.Value))
	}
	f.w(")")
}

// optionValue prints numbers and booleans bare and everything else quoted.
func optionValue(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	if lv := strings.ToLower(v); lv == "true" || lv == "false" {
		return lv
	}
	return quoteString(v)
}

func (f *formatter) insert(s *Insert) {
	f.w("INSERT INTO ")
	f.tableName(s.Table)
	if len(s.Columns) > 0 {
		f.w(" (")
		for i, c := range s.Columns {
			f.sep(i, ", ")
			f.w(Ident(c))
		}
		f.w(")")
	}
	if s.Query != nil {
		f.w(" ")
		f.queryStmt(s.Query)
		return
	}
	f.w(" VALUES ")
	for i, row := range s.Values {
		f.sep(i, ", ")
		f.w("(")
		f.exprList(row)
		f.w(")")
	}
}

func (f *formatter) set(s *Set) {
	f.w("SET ")
	if s.Local {
		f.w("LOCAL ")
	}
	f.w(qualified(s.Name), " = ")
	if s.Value == "default" {
		f.w("DEFAULT")
		return
	}
	f.w(quoteString(s.Value))
}

func (f *formatter) subscribe(s *Subscribe) {
	f.w("SUBSCRIBE TO ")
	if s.Query != nil {
		f.w("(")
		f.queryStmt(s.Query)
		f.w(")")
		return
	}
	f.w(qualified(s.Name))
}

func (f *formatter) fetch(s *Fetch) {
	f.w("FETCH ")
	if s.Count < 0 {
		f.w("ALL")
	} else {
		f.w(strconv.FormatInt(s.Count, 10))
	}
	f.w(" FROM ", Ident(s.Cursor))
}

// ---------------------------------------------------------------------------
// Queries.

func (f *formatter) query(q QueryExpr) {
	switch q := q.(type) {
	case *Select:
		f.selectBlock(q)
	case *SetOp:
		f.setOpArm(q.Left, false)
		f.w(" ", strings.ToUpper(q.Op))
		if q.All {
			f.w(" ALL")
		}
		f.w(" ")
		f.setOpArm(q.Right, true)
		f.orderLimit(q.OrderBy, q.Limit, q.Offset)
	case *Recursive:
		f.w("WITH RECURSIVE ", Ident(q.Name))
		f.columnList(q.Columns)
		f.w(" AS (")
		f.query(q.Anchor)
		f.w(" UNION ")
		if q.All {
			f.w("ALL ")
		}
		f.setOpArm(q.Step, true)
		f.w(") SELECT * FROM ", Ident(q.Name))
	case nil:
		f.w("<nil>")
	}
}

// columnList writes an alias's column list, (a, b), if it has one.
func (f *formatter) columnList(cols []string) {
	if len(cols) == 0 {
		return
	}
	f.w("(")
	for i, c := range cols {
		f.sep(i, ", ")
		f.w(Ident(c))
	}
	f.w(")")
}

// setOpArm parenthesizes an operand that would otherwise bind differently.
func (f *formatter) setOpArm(q QueryExpr, right bool) {
	paren := false
	switch q := q.(type) {
	case *SetOp:
		paren = right || q.OrderBy != nil || q.Limit != nil || q.Offset != nil
	case *Select:
		paren = q.OrderBy != nil || q.Limit != nil || q.Offset != nil
	}
	if paren {
		f.w("(")
	}
	f.query(q)
	if paren {
		f.w(")")
	}
}

func (f *formatter) selectBlock(s *Select) {
	f.w("SELECT ")
	if s.Distinct {
		f.w("DISTINCT ")
	}
	if len(s.DistinctOn) > 0 {
		f.w("DISTINCT ON (")
		for i, e := range s.DistinctOn {
			f.sep(i, ", ")
			f.expr(e, 0)
		}
		f.w(") ")
	}
	for i, it := range s.Items {
		f.sep(i, ", ")
		f.expr(it.Expr, 0)
		if it.Alias != "" {
			f.w(" AS ", Ident(it.Alias))
		}
	}
	if len(s.From) > 0 {
		f.w(" FROM ")
		for i, t := range s.From {
			f.sep(i, ", ")
			if j, ok := t.(*Join); ok && j.Kind == "cross" {
				// Only parentheses keep a cross join one FROM item: the
				// parser flattens a bare one into the comma list.
				f.w("(")
				f.table(t)
				f.w(")")
				continue
			}
			f.table(t)
		}
	}
	if s.Where != nil {
		f.w(" WHERE ")
		f.expr(s.Where, 0)
	}
	if len(s.GroupBy) > 0 {
		f.w(" GROUP BY ")
		for i, g := range s.GroupBy {
			if i > 0 {
				f.w(", ")
			}
			if r, ok := g.(*RowExpr); ok && len(r.Items) == 0 {
				f.w("()") // the empty grouping set
				continue
			}
			f.expr(g, 0)
		}
	}
	if s.Having != nil {
		f.w(" HAVING ")
		f.expr(s.Having, 0)
	}
	f.orderLimit(s.OrderBy, s.Limit, s.Offset)
}

func (f *formatter) orderLimit(order []OrderItem, limit, offset Expr) {
	if len(order) > 0 {
		f.w(" ORDER BY ")
		f.orderItems(order)
	}
	if limit != nil {
		f.w(" LIMIT ")
		f.expr(limit, 0)
	}
	if offset != nil {
		f.w(" OFFSET ")
		f.expr(offset, 0)
	}
}

func (f *formatter) orderItems(order []OrderItem) {
	for i, o := range order {
		f.sep(i, ", ")
		f.expr(o.Expr, 0)
		if o.Desc {
			f.w(" DESC")
		}
		if o.NullsFirst != nil {
			if *o.NullsFirst {
				f.w(" NULLS FIRST")
			} else {
				f.w(" NULLS LAST")
			}
		}
	}
}

func (f *formatter) tableName(t *TableName) {
	if t.Schema != "" {
		f.w(Ident(t.Schema), ".")
	}
	f.w(Ident(t.Name))
	f.alias(t.Alias)
}

func (f *formatter) alias(a string) {
	if a != "" {
		f.w(" AS ", Ident(a))
	}
}

func (f *formatter) table(t TableExpr) {
	switch t := t.(type) {
	case *TableName:
		f.tableName(t)
	case *WindowTVF:
		f.w(strings.ToUpper(t.Kind), "(")
		if t.Source != nil {
			f.tableName(t.Source)
		}
		f.w(", ", Ident(t.TimeCol))
		for _, e := range []Expr{t.Slide, t.Size, t.Gap} {
			if e != nil {
				f.w(", ")
				f.expr(e, 0)
			}
		}
		f.w(")")
		f.alias(t.Alias)
	case *DerivedTable:
		if t.Lateral {
			f.w("LATERAL ")
		}
		f.w("(")
		f.query(t.Query)
		f.w(")")
		f.alias(t.Alias)
		f.columnList(t.Columns)
	case *WorkTable:
		f.w(Ident(t.Name))
		f.alias(t.Alias)
	case *TableFunc:
		f.w(t.Name, "(")
		f.exprList(t.Args)
		f.w(")")
		if t.Ordinality {
			f.w(" WITH ORDINALITY")
		}
		if t.Alias != "" || len(t.Columns) > 0 {
			f.w(" AS ", Ident(t.Alias))
		}
		f.columnList(t.Columns)
	case *Join:
		f.table(t.Left)
		f.w(" ", joinWords[t.Kind], " ")
		if _, ok := t.Right.(*Join); ok {
			f.w("(")
			f.table(t.Right)
			f.w(")")
		} else {
			f.table(t.Right)
		}
		if t.On != nil {
			f.w(" ON ")
			f.expr(t.On, 0)
		}
		if len(t.Using) > 0 {
			f.w(" USING (")
			for i, u := range t.Using {
				f.sep(i, ", ")
				f.w(Ident(u))
			}
			f.w(")")
		}
	}
}

// bareFuncs are PostgreSQL's SQL-value functions, written without
// parentheses (current_timestamp() is a syntax error there).
var bareFuncs = setOf(`current_date current_time current_timestamp localtime localtimestamp
current_user session_user current_role current_catalog current_schema system_user`)

var joinWords = map[string]string{"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN", "cross": "CROSS JOIN"}

// ---------------------------------------------------------------------------
// Expressions.

// Precedence levels, lowest first, following PostgreSQL's table.
const (
	precOr = iota + 1
	precAnd
	precNot
	precIs
	precCmp
	precOther
	precAdd
	precMul
	precPow
	precUnary
	precPrimary
)

var binaryPrec = map[string]int{
	"or": precOr, "and": precAnd,
	"=": precCmp, "<>": precCmp, "<": precCmp, "<=": precCmp, ">": precCmp, ">=": precCmp,
	"is distinct from": precIs, "is not distinct from": precIs,
	"+": precAdd, "-": precAdd, "*": precMul, "/": precMul, "%": precMul, "^": precPow,
}

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		if p, ok := binaryPrec[e.Op]; ok {
			return p
		}
		return precOther
	case *Unary:
		if e.Op == "not" {
			return precNot
		}
		return precUnary
	case *IsNull, *IsBool:
		return precIs
	case *Between, *In, *Like, *Quantified:
		return precCmp
	case *Literal:
		if lit := e.Value; (lit.K.IsNumeric() && strings.HasPrefix(lit.Text(), "-")) || lit.K == types.Interval {
			return precUnary
		}
	}
	return precPrimary
}

// expr prints e, parenthesized when its precedence is below min.
func (f *formatter) expr(e Expr, min int) {
	if e != nil && exprPrec(e) < min {
		f.w("(")
		f.expr(e, 0)
		f.w(")")
		return
	}
	switch e := e.(type) {
	case *ColumnRef:
		if e.Table != "" {
			f.w(qualified(e.Table), ".")
		}
		f.w(Ident(e.Name))
	case *Star:
		if e.Table != "" {
			f.w(qualified(e.Table), ".")
		}
		f.w("*")
	case *Literal:
		f.literal(e.Value)
	case *Param:
		f.w("$", strconv.Itoa(e.N))
	case *Unary:
		f.unary(e)
	case *Binary:
		p := exprPrec(e)
		f.expr(e.L, p)
		f.w(" ", strings.ToUpper(e.Op), " ")
		f.expr(e.R, p+1)
	case *IsNull:
		f.expr(e.X, precIs+1)
		f.w(" IS ", not(e.Not), "NULL")
	case *IsBool:
		f.expr(e.X, precIs+1)
		f.w(" IS ", not(e.Not), strings.ToUpper(strconv.FormatBool(e.Value)))
	case *Between:
		f.expr(e.X, precCmp+1)
		f.w(" ", not(e.Not), "BETWEEN ")
		f.expr(e.Lo, precOther)
		f.w(" AND ")
		f.expr(e.Hi, precOther)
	case *In:
		f.expr(e.X, precCmp+1)
		f.w(" ", not(e.Not), "IN (")
		if e.Sub != nil {
			f.query(e.Sub)
		} else {
			f.exprList(e.List)
		}
		f.w(")")
	case *Like:
		f.like(e)
	case *FuncCall:
		f.funcCall(e)
	case *Cast:
		f.w("CAST(")
		f.expr(e.X, 0)
		f.w(" AS ", e.TypeName, ")")
	case *Case:
		f.caseExpr(e)
	case *Subquery:
		if e.Exists {
			f.w("EXISTS ")
		}
		if e.Array {
			f.w("ARRAY")
		}
		f.w("(")
		f.query(e.Query)
		f.w(")")
	case *RowExpr:
		f.w("ROW(")
		f.exprList(e.Items)
		f.w(")")
	case *GroupingSets:
		f.w(map[string]string{"rollup": "ROLLUP (", "cube": "CUBE (", "sets": "GROUPING SETS ("}[e.Kind])
		for i, it := range e.Items {
			if i > 0 {
				f.w(", ")
			}
			if r, ok := it.(*RowExpr); ok { // one element of several expressions, or ()
				f.w("(")
				f.exprList(r.Items)
				f.w(")")
				continue
			}
			f.expr(it, 0)
		}
		f.w(")")
	case *FieldSelect:
		f.w("(")
		f.expr(e.X, 0)
		f.w(").")
		f.w(Ident(e.Field))
	case *ArrayExpr:
		f.w("ARRAY[")
		f.exprList(e.Items)
		f.w("]")
	case *Subscript:
		switch e.X.(type) {
		case *ColumnRef, *Param, *Subscript:
			f.expr(e.X, 0)
		default: // PostgreSQL subscripts other expressions only in parentheses
			f.w("(")
			f.expr(e.X, 0)
			f.w(")")
		}
		f.w("[")
		if e.Slice {
			if e.Lo != nil {
				f.expr(e.Lo, 0)
			}
			f.w(":")
			if e.Hi != nil {
				f.expr(e.Hi, 0)
			}
		} else {
			f.expr(e.Index, 0)
		}
		f.w("]")
	case *Quantified:
		f.expr(e.X, precCmp+1)
		f.w(" ", strings.ToUpper(e.Op), " ")
		if e.All {
			f.w("ALL (")
		} else {
			f.w("ANY (")
		}
		if e.Sub != nil {
			f.query(e.Sub)
		} else {
			f.expr(e.Array, 0)
		}
		f.w(")")
	case nil:
		f.w("<nil>")
	}
}

func not(b bool) string {
	if b {
		return "NOT "
	}
	return ""
}

func (f *formatter) exprList(list []Expr) {
	for i, e := range list {
		f.sep(i, ", ")
		f.expr(e, 0)
	}
}

func (f *formatter) unary(e *Unary) {
	if e.Op == "not" {
		f.w("NOT ")
		f.expr(e.X, precNot)
		return
	}
	f.w(e.Op)
	if _, ok := e.X.(*Unary); ok {
		f.w(" ") // - -x, not --x (a comment)
	}
	f.expr(e.X, precUnary)
}

func (f *formatter) like(e *Like) {
	f.expr(e.X, precCmp+1)
	f.w(" ")
	if e.Regex {
		op := "~"
		if e.CaseInsensitive {
			op += "*"
		}
		if e.Not {
			op = "!" + op
		}
		f.w(op, " ")
	} else {
		f.w(not(e.Not))
		if e.CaseInsensitive {
			f.w("ILIKE ")
		} else {
			f.w("LIKE ")
		}
	}
	// The pattern and escape must be simple operands (see doc.go):
	// anything else prints in parentheses.
	f.expr(e.Pattern, precPrimary)
	if e.Escape != nil {
		f.w(" ESCAPE ")
		f.expr(e.Escape, precPrimary)
	}
}

func (f *formatter) funcCall(e *FuncCall) {
	if e.Name == "extract" && len(e.Args) == 2 && e.Over == nil {
		if lit, ok := e.Args[0].(*Literal); ok && lit.Value.K == types.Unknown {
			f.w("EXTRACT(", lit.Value.S, " FROM ")
			f.expr(e.Args[1], 0)
			f.w(")")
			return
		}
	}
	if len(e.Args) == 0 && !e.Star && e.Over == nil && e.Filter == nil && bareFuncs[e.Name] {
		f.w(strings.ToUpper(e.Name))
		return
	}
	f.w(qualified(e.Name), "(")
	if e.Distinct {
		f.w("DISTINCT ")
	}
	if e.Star {
		f.w("*")
	}
	f.exprList(e.Args)
	if len(e.OrderBy) > 0 && !e.WithinGroup {
		f.w(" ORDER BY ")
		f.orderItems(e.OrderBy)
	}
	f.w(")")
	if e.WithinGroup {
		f.w(" WITHIN GROUP (ORDER BY ")
		f.orderItems(e.OrderBy)
		f.w(")")
	}
	if e.Filter != nil {
		f.w(" FILTER (WHERE ")
		f.expr(e.Filter, 0)
		f.w(")")
	}
	if e.Over != nil {
		f.w(" OVER (")
		if len(e.Over.PartitionBy) > 0 {
			f.w("PARTITION BY ")
			f.exprList(e.Over.PartitionBy)
		}
		if len(e.Over.OrderBy) > 0 {
			f.sep(len(e.Over.PartitionBy), " ")
			f.w("ORDER BY ")
			f.orderItems(e.Over.OrderBy)
		}
		if fr := e.Over.Frame; fr != nil {
			f.sep(len(e.Over.PartitionBy)+len(e.Over.OrderBy), " ")
			f.w(strings.ToUpper(fr.Mode) + " BETWEEN ")
			f.frameBound(fr.Start)
			f.w(" AND ")
			f.frameBound(fr.End)
		}
		f.w(")")
	}
}

func (f *formatter) frameBound(b FrameBound) {
	switch b.Kind {
	case FrameUnboundedPreceding:
		f.w("UNBOUNDED PRECEDING")
	case FrameUnboundedFollowing:
		f.w("UNBOUNDED FOLLOWING")
	case FrameCurrentRow:
		f.w("CURRENT ROW")
	case FramePreceding:
		f.expr(b.Offset, 0)
		f.w(" PRECEDING")
	case FrameFollowing:
		f.expr(b.Offset, 0)
		f.w(" FOLLOWING")
	}
}

func (f *formatter) caseExpr(e *Case) {
	f.w("CASE")
	if e.Operand != nil {
		f.w(" ")
		f.expr(e.Operand, 0)
	}
	for _, w := range e.Whens {
		f.w(" WHEN ")
		f.expr(w.Cond, 0)
		f.w(" THEN ")
		f.expr(w.Result, 0)
	}
	if e.Else != nil {
		f.w(" ELSE ")
		f.expr(e.Else, 0)
	}
	f.w(" END")
}

func (f *formatter) literal(v types.Value) {
	switch v.K {
	case types.Null:
		f.w("NULL")
	case types.Bool:
		f.w(strings.ToUpper(strconv.FormatBool(v.Bool())))
	case types.Int2, types.Int4, types.Int8, types.Numeric, types.Float4, types.Float8:
		f.w(v.Text())
	case types.Unknown:
		f.w(stringLiteral(v.S))
	case types.Interval:
		f.w("INTERVAL ", stringLiteral(v.Text()))
	default:
		f.w("CAST(", stringLiteral(v.Text()), " AS ", v.K.String(), ")")
	}
}

// stringLiteral quotes s, switching to an E'…' string when s holds
// backslashes or control characters so that the output stays one line.
func stringLiteral(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return quoteString(s)
	}
	var b strings.Builder
	b.WriteString("E'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			b.WriteString(`\'`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ':
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(c)>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(c)&15, 16))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func (f *formatter) copyStmt(s *Copy) {
	f.w("COPY ")
	switch {
	case s.Query != nil:
		f.w("(")
		f.queryStmt(s.Query)
		f.w(")")
	case s.Subscribe != nil:
		f.w("(")
		f.subscribe(s.Subscribe)
		f.w(")")
	default:
		f.w(qualified(s.Table))
	}
	if len(s.Columns) > 0 {
		f.w(" (")
		f.identList(s.Columns)
		f.w(")")
	}
	if s.From {
		f.w(" FROM ")
	} else {
		f.w(" TO ")
	}
	switch s.Target {
	case "file":
		f.w(stringLiteral(s.File))
	case "program":
		f.w("PROGRAM ", stringLiteral(s.File))
	default:
		f.w(strings.ToUpper(s.Target))
	}
	if len(s.Options) == 0 {
		return
	}
	f.w(" WITH (")
	for i, o := range s.Options {
		f.sep(i, ", ")
		f.w(strings.ToUpper(o.Name))
		switch {
		case o.Star:
			f.w(" *")
		case o.Columns != nil:
			f.w(" (")
			f.identList(o.Columns)
			f.w(")")
		case o.HasValue:
			f.w(" ", stringLiteral(o.Value))
		}
	}
	f.w(")")
}

func (f *formatter) identList(names []string) {
	for i, n := range names {
		f.sep(i, ", ")
		f.w(Ident(n))
	}
}
