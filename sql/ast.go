package sql

import "github.com/fvsql/fvsql/types"

// Statement is one parsed SQL statement. Every statement type of this file
// implements it; the planner and the server switch on the concrete type.
type Statement interface{ statement() }

// ---------------------------------------------------------------------------
// Expressions.

// Expr is a scalar expression.
type Expr interface{ expr() }

// ColumnRef names a column, optionally qualified by a table name or alias.
// Names are folded to lower case unless they were double-quoted.
type ColumnRef struct {
	Table string
	Name  string
	// Pos is the reference's 1-based character position in the query
	// text, for errors (0: not known); it is no part of its meaning.
	Pos int
}

// Star is `*` or `t.*` in a select list or in count(*) (there, Table is "").
type Star struct{ Table string }

// Literal is a constant. Its Value's type follows PostgreSQL's literal
// typing: an integer literal is Int4 if it fits, else Int8, else Numeric; a
// literal with a point or exponent is Numeric; a quoted string is Unknown
// (its type comes from context); TRUE/FALSE are Bool; NULL is Null;
// INTERVAL '…' [unit] is an Interval value.
type Literal struct{ Value types.Value }

// Param is a $n placeholder (N is 1-based).
type Param struct{ N int }

// Unary is a prefix operator: "-", "+", "not", "~".
type Unary struct {
	Op string
	X  Expr
}

// Binary is an infix operator. Op is one of: + - * / % ^ || = <> < <= > >=
// and or, "is distinct from", "is not distinct from", & | # << >>.
type Binary struct {
	Op   string
	L, R Expr
}

// IsNull is `X IS [NOT] NULL`.
type IsNull struct {
	X   Expr
	Not bool
}

// IsBool is `X IS [NOT] TRUE|FALSE`.
type IsBool struct {
	X     Expr
	Not   bool
	Value bool
}

// Between is `X [NOT] BETWEEN Lo AND Hi`.
type Between struct {
	X, Lo, Hi Expr
	Not       bool
}

// In is `X [NOT] IN (list)` or `X [NOT] IN (subquery)`; exactly one of
// List and Sub is set.
type In struct {
	X    Expr
	List []Expr
	Sub  QueryExpr
	Not  bool
}

// Like is `X [NOT] LIKE|ILIKE Pattern [ESCAPE e]`; Regex marks the
// `~`, `~*`, `!~`, `!~*` operators (and MySQL's REGEXP), with Not and
// CaseInsensitive set to match.
type Like struct {
	X, Pattern      Expr
	Not             bool
	CaseInsensitive bool
	Regex           bool
	Escape          Expr // nil for the default backslash
}

// FuncCall is a function or aggregate call. Name is lower case with a
// pg_catalog. prefix removed (other schemas are kept: "information_schema.x").
// Star marks count(*). Over is set for window functions.
type FuncCall struct {
	Name     string
	Args     []Expr
	Star     bool
	Distinct bool
	OrderBy  []OrderItem // agg(args ORDER BY …)
	// WithinGroup marks an ordered-set aggregate's call, f(args) WITHIN
	// GROUP (ORDER BY …): OrderBy holds its ORDER BY, Args its direct
	// arguments (percentile_cont(0.5) WITHIN GROUP (ORDER BY x)).
	WithinGroup bool
	Filter      Expr
	Over        *WindowSpec
}

// WindowSpec is an OVER (…) clause; a named window (WINDOW w AS …,
// OVER w, OVER (w ORDER BY …)) is resolved into it by the parser.
type WindowSpec struct {
	PartitionBy []Expr
	OrderBy     []OrderItem
	Frame       *WindowFrame // nil: the default frame
}

// WindowFrame is a frame clause: ROWS, RANGE or GROUPS BETWEEN Start AND
// End (a lone start bound has End CURRENT ROW).
type WindowFrame struct {
	Mode       string // "rows", "range" or "groups"
	Start, End FrameBound
}

// FrameBound is one end of a frame.
type FrameBound struct {
	Kind   FrameBoundKind
	Offset Expr // for FramePreceding and FrameFollowing
}

// FrameBoundKind says where a frame bound lies.
type FrameBoundKind int

// Frame bounds.
const (
	FrameUnboundedPreceding FrameBoundKind = iota
	FramePreceding
	FrameCurrentRow
	FrameFollowing
	FrameUnboundedFollowing
)

// Cast is `CAST(X AS type)` or `X::type`; TypeName is as written, Type resolved.
type Cast struct {
	X        Expr
	Type     types.Type
	TypeName string
}

// Case is a CASE expression; Operand is nil for the searched form.
type Case struct {
	Operand Expr
	Whens   []When
	Else    Expr
}

// When is one WHEN … THEN … arm.
type When struct{ Cond, Result Expr }

// Subquery is a scalar subquery `(SELECT …)`, `EXISTS (SELECT …)` or
// `ARRAY(SELECT …)` (Array: the rows' one column as an array).
type Subquery struct {
	Query  QueryExpr
	Exists bool
	Array  bool
}

// Row is a row constructor `(a, b)` / ROW(a, b).
type RowExpr struct{ Items []Expr }

// GroupingSets is ROLLUP (…), CUBE (…) or GROUPING SETS (…), an item of
// a GROUP BY clause: Kind is "rollup", "cube" or "sets". An item is an
// expression, a RowExpr for several expressions taken as one element
// (an empty one is the empty grouping set, ()), or inside GROUPING SETS
// another GroupingSets.
type GroupingSets struct {
	Kind  string
	Items []Expr
}

// FieldSelect is `(X).Field`, a field of a composite value.
type FieldSelect struct {
	X     Expr
	Field string
}

// ArrayExpr is the constructor `ARRAY[a, b, …]`.
type ArrayExpr struct{ Items []Expr }

// Subscript is `X[Index]`, or the slice `X[Lo:Hi]` when Slice is set
// (an omitted bound is nil).
type Subscript struct {
	X, Index, Lo, Hi Expr
	Slice            bool
}

// Quantified is `X op ANY|SOME|ALL (Array)` or `X op ANY|ALL (subquery)`
// for operators other than `= ANY` and `<> ALL` (those are In). Op is a
// comparison operator or "like", "not like", "ilike", "not ilike", "~",
// "!~"; exactly one of Array and Sub is set.
type Quantified struct {
	X     Expr
	Op    string
	All   bool
	Array Expr
	Sub   QueryExpr
}

func (*ColumnRef) expr()    {}
func (*Star) expr()         {}
func (*Literal) expr()      {}
func (*Param) expr()        {}
func (*Unary) expr()        {}
func (*Binary) expr()       {}
func (*IsNull) expr()       {}
func (*IsBool) expr()       {}
func (*Between) expr()      {}
func (*In) expr()           {}
func (*Like) expr()         {}
func (*FuncCall) expr()     {}
func (*Cast) expr()         {}
func (*Case) expr()         {}
func (*Subquery) expr()     {}
func (*RowExpr) expr()      {}
func (*GroupingSets) expr() {}
func (*ArrayExpr) expr()    {}
func (*Subscript) expr()    {}
func (*FieldSelect) expr()  {}
func (*Quantified) expr()   {}

// ---------------------------------------------------------------------------
// Queries.

// QueryExpr is a SELECT or a set operation over SELECTs.
type QueryExpr interface{ queryExpr() }

// Select is one SELECT block.
type Select struct {
	Distinct bool
	// DistinctOn is SELECT DISTINCT ON (keys): the first row of each
	// group of equal keys, in ORDER BY's order.
	DistinctOn []Expr
	Items      []SelectItem
	From       []TableExpr // a comma list; empty for SELECT without FROM
	Where      Expr
	GroupBy    []Expr
	Having     Expr
	OrderBy    []OrderItem
	Limit      Expr
	Offset     Expr
}

// SetOp is UNION / INTERSECT / EXCEPT, with ORDER BY/LIMIT of the whole.
type SetOp struct {
	Op          string // "union", "intersect", "except"
	All         bool
	Left, Right QueryExpr
	OrderBy     []OrderItem
	Limit       Expr
	Offset      Expr
}

// Recursive is WITH RECURSIVE's query, `Anchor UNION [ALL] Step`: the
// anchor's rows, then the step's over the rows its run before made (the
// WorkTable named Name), run after run until one makes no row. Without
// All a row made before is left out, and is not worked on again. Columns
// is the WITH query's column list, which names the work table's columns.
type Recursive struct {
	Name         string
	Columns      []string
	Anchor, Step QueryExpr
	All          bool
}

func (*Select) queryExpr()    {}
func (*SetOp) queryExpr()     {}
func (*Recursive) queryExpr() {}

// SelectItem is one output column; Expr may be *Star.
type SelectItem struct {
	Expr  Expr
	Alias string
}

// OrderItem is one ORDER BY term. NullsFirst nil means the default
// (NULLS LAST for ASC, NULLS FIRST for DESC, as PostgreSQL).
type OrderItem struct {
	Expr       Expr
	Desc       bool
	NullsFirst *bool
}

// TableExpr is an item of FROM.
type TableExpr interface{ tableExpr() }

// TableName is a named relation (stream, view, system table).
type TableName struct {
	Schema string
	Name   string
	Alias  string
	// Pos is the name's 1-based character position in the query text,
	// for errors (0: not known).
	Pos int
}

// WindowTVF is TUMBLE(t, col, size), HOP(t, col, slide, size) or
// SESSION(t, col, gap) in FROM. Size/Slide/Gap are constant interval
// expressions as written (normally *Literal holding an Interval).
type WindowTVF struct {
	Kind   string // "tumble", "hop", "session"
	Source *TableName
	// Query is the WITH query Source names, if it names one (inlined as
	// a FROM clause's derived table would be)
	Query   QueryExpr
	TimeCol string
	Size    Expr // tumble, hop
	Slide   Expr // hop
	Gap     Expr // session
	Alias   string
}

// TableFunc is a set-returning function in FROM: `unnest(a) AS x`,
// `generate_series(1, 3) WITH ORDINALITY AS s(i, n)`. Name is lower case
// without a pg_catalog. prefix; Columns are the column aliases.
type TableFunc struct {
	Name       string
	Args       []Expr
	Ordinality bool
	Alias      string
	Columns    []string
}

// DerivedTable is `(SELECT …) AS alias`.
type DerivedTable struct {
	Query QueryExpr
	Alias string
	// Columns are the alias's column list, (…) AS x(a, b): the names of
	// the query's first visible columns, in order (a WITH query's column
	// list, and a relation's, t AS x(a, b), come as such a table too).
	Columns []string
	// Lateral: LATERAL (SELECT …) AS alias, whose query may read the
	// columns of the FROM items before it (as a correlated subquery
	// reads its enclosing query's).
	Lateral bool
}

// WorkTable is a recursive WITH query's reference to itself in its
// recursive term: the rows the term's run before made (Recursive).
type WorkTable struct {
	Name, Alias string
}

// Join is `Left [kind] JOIN Right ON …|USING (…)`; Kind is "inner",
// "left", "right", "full" or "cross".
type Join struct {
	Kind        string
	Left, Right TableExpr
	On          Expr
	Using       []string
}

func (*TableName) tableExpr()    {}
func (*WindowTVF) tableExpr()    {}
func (*DerivedTable) tableExpr() {}
func (*TableFunc) tableExpr()    {}
func (*Join) tableExpr()         {}
func (*WorkTable) tableExpr()    {}

// ---------------------------------------------------------------------------
// Statements.

// EmitMode is the EMIT clause of a continuous query.
type EmitMode int

const (
	EmitDefault       EmitMode = iota // the object kind's default
	EmitOnWindowClose                 // final rows only
	EmitChanges                       // every update
)

// Query is a SELECT statement (bounded when run directly, continuous
// inside CREATE … AS). NumParams is the highest $n used.
type Query struct {
	Body      QueryExpr
	Emit      EmitMode
	NumParams int
}

// ObjectKind names what CREATE/DROP/SHOW act on.
type ObjectKind string

// Object kinds.
const (
	KindStream           ObjectKind = "stream"
	KindMaterializedView ObjectKind = "materialized view"
	KindSink             ObjectKind = "sink"
	KindTable            ObjectKind = "table" // DROP TABLE etc.: rejected with a clear message
	KindView             ObjectKind = "view"
)

// Option is one `key = value` of a WITH clause; Key is lower case, Value
// the literal's text (quotes removed; numbers and words as written).
type Option struct {
	Key   string
	Value string
}

// ColumnDef is one column of CREATE STREAM.
type ColumnDef struct {
	Name     string
	Type     types.Type
	TypeName string
	NotNull  bool
}

// Watermark is `WATERMARK FOR col AS expr` (expr usually col - INTERVAL …).
// Column is a declared column or RecordTimestamp.
type Watermark struct {
	Column string
	Expr   Expr
}

// RecordTimestamp is the metadata column holding a record's own timestamp
// (catalog.MetaColumns), the one metadata column a WATERMARK may name
// without declaring it: event time is then the time the record was
// produced, or whatever time its producer set.
const RecordTimestamp = "_timestamp"

// CreateStream is CREATE STREAM name (columns …) WITH (…).
type CreateStream struct {
	Name        string
	IfNotExists bool
	Columns     []ColumnDef
	Watermark   *Watermark
	Options     []Option
}

// CreateAs is CREATE STREAM|MATERIALIZED VIEW|SINK name [WITH (…)] AS
// query [EMIT …] [WITH (…)]: a continuous query. Options from either WITH
// position are merged.
type CreateAs struct {
	Kind        ObjectKind
	Name        string
	IfNotExists bool
	Query       *Query
	Options     []Option
}

// CreateFunction is CREATE [OR REPLACE] FUNCTION name (args) RETURNS …
// LANGUAGE … AS … [WITH (…)]. The body is a literal (Body: the module's
// source for wasm, ref:NAME or a path; the SQL text for sql) or, for
// wasm, an expression giving the module's bytes (BodyExpr: decode(…),
// '\x…'::bytea, $1).
type CreateFunction struct {
	Name      string
	OrReplace bool
	Args      []FuncArg
	Returns   *FuncType // a scalar result; nil with Table
	Table     []FuncArg // RETURNS TABLE (…) columns
	Language  string    // lower case
	Body      string
	BodyExpr  Expr
	// Return is set when the body was RETURN expr (SQL-standard, sql
	// functions): Body is then "SELECT expr".
	Return     bool
	Volatility string // immutable, stable, volatile or ""
	Strict     bool   // STRICT or RETURNS NULL ON NULL INPUT
	Options    []Option
	NumParams  int
}

// FuncArg is one argument of CREATE FUNCTION (Name may be empty) or one
// column of RETURNS TABLE.
type FuncArg struct {
	Name string
	FuncType
}

// FuncType is a type as written and as parsed.
type FuncType struct {
	Type     types.Type
	TypeName string
}

// DropFunction is DROP FUNCTION [IF EXISTS] name [(types)][, …].
type DropFunction struct {
	Funcs    []FuncRef
	IfExists bool
}

// FuncRef names a function, with its argument types when HasArgs.
type FuncRef struct {
	Name    string
	Args    []FuncType
	HasArgs bool
}

// Insert is INSERT INTO table [(cols)] VALUES … | query.
type Insert struct {
	Table   *TableName
	Columns []string
	Values  [][]Expr // set for VALUES
	Query   *Query   // set for INSERT … SELECT
}

// Drop is DROP <kind> [IF EXISTS] name[, …].
type Drop struct {
	Kind     ObjectKind
	Names    []string
	IfExists bool
}

// Show is SHOW <what>: What is "streams", "materialized views", "sinks",
// "pipelines", "tables", "all", or a setting name (lower case).
type Show struct{ What string }

// Set is SET [SESSION|LOCAL] name =|TO value[, …] (Value is the joined
// text of the value list; DEFAULT gives "default").
type Set struct {
	Name  string
	Value string
	Local bool
}

// Flush is FLUSH.
type Flush struct{}

// Subscribe is SUBSCRIBE [TO] name [WITH (…)] | (query).
type Subscribe struct {
	Name    string
	Query   *Query
	Options []Option // WITH (start_time = …)
}

// Copy is COPY relation [(columns)] | (query) | (SUBSCRIBE …) TO STDOUT,
// or COPY relation [(columns)] FROM STDIN, with its options. A file or
// program (COPY … TO 'file', FROM PROGRAM 'cmd') parses, with Target
// "file" or "program", so that the server can refuse it.
type Copy struct {
	Table     string // the relation, dotted when qualified; "" for a query
	Columns   []string
	Query     *Query
	Subscribe *Subscribe
	From      bool   // FROM (else TO)
	Target    string // "stdin", "stdout", "file" or "program"
	File      string // the file name or command of a file or program
	Options   []CopyOption
}

// CopyOption is one option of a COPY, in either syntax (WITH (FORMAT csv,
// HEADER) or the older WITH CSV HEADER): Name lower case with
// underscores (format, header, delimiter, null, quote, escape,
// force_quote, force_not_null, force_null, encoding, freeze, oids), Value
// the argument's text when HasValue, Columns or Star for the FORCE_
// options' column lists.
type CopyOption struct {
	Name     string
	Value    string
	HasValue bool
	Columns  []string
	Star     bool
}

// DeclareCursor is DECLARE name CURSOR FOR subscribe|query.
type DeclareCursor struct {
	Name      string
	Subscribe *Subscribe
	Query     *Query
}

// Fetch is FETCH [FORWARD] [n|ALL] [FROM|IN] cursor; Count -1 means ALL.
type Fetch struct {
	Cursor string
	Count  int64
}

// CloseCursor is CLOSE name | CLOSE ALL (Name "").
type CloseCursor struct{ Name string }

// Explain is EXPLAIN statement.
type Explain struct{ Stmt Statement }

// Describe is DESCRIBE name (also DESC name).
type Describe struct{ Name string }

// TxKind is the kind of a transaction control statement.
type TxKind string

// Transaction statement kinds.
const (
	TxBegin    TxKind = "begin"
	TxCommit   TxKind = "commit"
	TxRollback TxKind = "rollback"
	// Savepoints mark the writes a transaction block holds: ROLLBACK TO
	// drops those written since (clients such as SQLAlchemy and psycopg
	// issue them around nested transactions).
	TxSavepoint  TxKind = "savepoint"
	TxRelease    TxKind = "release"
	TxRollbackTo TxKind = "rollback to"
)

// Transaction is BEGIN/START TRANSACTION, COMMIT/END, ROLLBACK/ABORT,
// and SAVEPOINT/RELEASE/ROLLBACK TO with the savepoint's name.
type Transaction struct {
	Kind      TxKind
	Savepoint string
}

// Discard is DISCARD ALL and friends, and the SET forms fvsql accepts
// without effect (SET TRANSACTION …): Tag is the command tag ("" for
// DISCARD ALL).
type Discard struct{ Tag string }

// Unsupported is a statement that parses but fvsql does not run (CREATE
// TABLE, UPDATE, DELETE, GRANT …); What names it for the 0A000 message.
type Unsupported struct{ What string }

func (*Query) statement()          {}
func (*CreateStream) statement()   {}
func (*CreateAs) statement()       {}
func (*CreateFunction) statement() {}
func (*DropFunction) statement()   {}
func (*Insert) statement()         {}
func (*Drop) statement()           {}
func (*Show) statement()           {}
func (*Set) statement()            {}
func (*Flush) statement()          {}
func (*Subscribe) statement()      {}
func (*DeclareCursor) statement()  {}
func (*Copy) statement()           {}
func (*Fetch) statement()          {}
func (*CloseCursor) statement()    {}
func (*Explain) statement()        {}
func (*Describe) statement()       {}
func (*Transaction) statement()    {}
func (*Discard) statement()        {}
func (*Unsupported) statement()    {}

// Parsed is one statement with the source text it came from.
type Parsed struct {
	Stmt Statement
	SQL  string // the statement's own text, trimmed, without the trailing ';'
}
