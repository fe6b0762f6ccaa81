package sql

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
	tast "github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// converter turns TiDB's AST of a normalized statement into sql's AST,
// undoing the normalizer's synthetic functions and markers.
type converter struct {
	params map[int]int           // byte offset of a "?" in the normalized text -> $n
	parsed []Expr                // expressions parsed on their own (normalized.exprs)
	at     func(off int) int     // a normalized text offset's 1-based character position in the source, or nil
	named  func(name string) int // the 1-based character position of a name in a FROM clause, or 0
	tvfs   []TableExpr           // window TVFs and table functions, by the index in their synthetic name
	ctes   []map[string]cteDef
	// aliases are the FROM aliases with column lists the normalizer took
	// out, by the index in their synthetic name
	aliases []aliasSpan
	// windows holds the WINDOW clauses of the SELECTs being converted,
	// innermost last (a subquery's OVER w may name an outer one's window,
	// as in PostgreSQL… which in fact does not allow it; see windowNamed).
	windows []map[string]*tast.WindowSpec
}

func unsupported(format string, args ...any) error {
	return pgerror.NotSupported(format, args...)
}

// ---------------------------------------------------------------------------
// Queries.

func (c *converter) query(n tast.Node) (QueryExpr, error) {
	switch n := n.(type) {
	case *tast.SelectStmt:
		return c.selectStmt(n)
	case *tast.SetOprStmt:
		return c.setOprStmt(n)
	case *tast.SetOprSelectList:
		return c.setOprList(n)
	case *tast.SubqueryExpr:
		return c.query(n.Query)
	}
	return nil, unsupported("statement %s", strings.TrimPrefix(fmt.Sprintf("%T", n), "*ast."))
}

// with brings the CTEs of a WITH clause into scope. Non-recursive CTEs
// are inlined where they are referenced (as derived tables), which is
// what PostgreSQL does with a CTE referenced once.
func (c *converter) with(w *tast.WithClause) (pop func(), err error) {
	if w == nil {
		return func() {}, nil
	}
	scope := make(map[string]cteDef)
	c.ctes = append(c.ctes, scope)
	pop = func() { c.ctes = c.ctes[:len(c.ctes)-1] }
	for _, cte := range w.CTEs {
		def := cteDef{}
		for _, col := range cte.ColNameList {
			def.cols = append(def.cols, col.O)
		}
		var q QueryExpr
		if w.IsRecursive {
			q, err = c.recursive(cte.Name.O, def.cols, cte.Query.Query, scope)
		} else {
			q, err = c.query(cte.Query.Query)
		}
		if err != nil {
			pop()
			return nil, err
		}
		def.query = q
		scope[cte.Name.O] = def
	}
	return pop, nil
}

// recursive converts a query of WITH RECURSIVE named name, in scope (the
// WITH clause's queries so far), as PostgreSQL takes it: a query that
// reads itself must be `anchor UNION [ALL] step`, where only the step
// reads it; one that does not is a plain WITH query.
func (c *converter) recursive(name string, cols []string, n tast.Node, scope map[string]cteDef) (QueryExpr, error) {
	work := &workRefs{}
	scope[name] = cteDef{cols: cols, work: work}
	defer delete(scope, name)
	q, err := c.query(n)
	if err != nil || work.n == 0 {
		return q, err
	}
	bad := pgerror.New(pgerror.InvalidRecursion, "recursive query %q does not have the form non-recursive-term UNION [ALL] recursive-term", name)
	s, ok := n.(*tast.SetOprStmt)
	if !ok || s.SelectList == nil || len(s.SelectList.Selects) < 2 {
		return nil, bad
	}
	if s.OrderBy != nil || s.Limit != nil {
		return nil, unsupported("ORDER BY or LIMIT in a recursive query")
	}
	arms := s.SelectList.Selects
	last := arms[len(arms)-1]
	var op *tast.SetOprType
	switch l := last.(type) {
	case *tast.SelectStmt:
		op = l.AfterSetOperator
	case *tast.SetOprSelectList:
		op = l.AfterSetOperator
	}
	if op == nil || (*op != tast.Union && *op != tast.UnionAll) {
		return nil, bad
	}
	// the anchor, the arms before the last, must not read the query
	work.n = 0
	var anchor QueryExpr
	if len(arms) == 2 {
		anchor, err = c.query(arms[0])
	} else {
		anchor, err = c.setOprList(&tast.SetOprSelectList{Selects: arms[:len(arms)-1]})
	}
	if err != nil {
		return nil, err
	}
	if work.n > 0 {
		return nil, pgerror.New(pgerror.InvalidRecursion, "recursive reference to query %q must not appear within its non-recursive term", name)
	}
	step, err := c.query(last)
	if err != nil {
		return nil, err
	}
	if work.n > 1 {
		return nil, pgerror.New(pgerror.InvalidRecursion, "recursive reference to query %q must not appear more than once", name)
	}
	return &Recursive{Name: name, Columns: cols, Anchor: anchor, Step: step, All: *op == tast.UnionAll}, nil
}

// cteDef is a WITH query and its column list; while a recursive one is
// converted, work counts its references to itself (each a WorkTable).
type cteDef struct {
	query QueryExpr
	cols  []string
	work  *workRefs
}

type workRefs struct{ n int }

// cte is the WITH query in scope under name, as a FROM item under alias:
// a derived table, or a recursive query's reference to itself (nil if
// there is none).
func (c *converter) cte(name, alias string) TableExpr {
	for i := len(c.ctes) - 1; i >= 0; i-- {
		if d, ok := c.ctes[i][name]; ok {
			if d.work != nil {
				d.work.n++
				return &WorkTable{Name: name, Alias: alias}
			}
			if alias == "" {
				alias = name
			}
			return &DerivedTable{Query: d.query, Alias: alias, Columns: d.cols}
		}
	}
	return nil
}

func (c *converter) selectStmt(s *tast.SelectStmt) (QueryExpr, error) {
	pop, err := c.with(s.With)
	if err != nil {
		return nil, err
	}
	defer pop()
	switch {
	case s.Kind == tast.SelectStmtKindValues:
		return nil, unsupported("VALUES as a query")
	case s.LockInfo != nil && s.LockInfo.LockType != tast.SelectLockNone:
		return nil, unsupported("SELECT … FOR UPDATE/SHARE")
	case s.SelectIntoOpt != nil:
		return nil, unsupported("SELECT INTO")
	case s.GroupBy != nil && s.GroupBy.Rollup:
		return nil, unsupported("GROUP BY … WITH ROLLUP")
	}
	named := map[string]*tast.WindowSpec{}
	for i := range s.WindowSpecs {
		w := &s.WindowSpecs[i]
		if _, dup := named[w.Name.L]; dup {
			return nil, pgerror.New(pgerror.WindowingError, "window %q is already defined", w.Name.O)
		}
		named[w.Name.L] = w
	}
	c.windows = append(c.windows, named)
	defer func() { c.windows = c.windows[:len(c.windows)-1] }()
	sel := &Select{Distinct: s.Distinct}
	if s.Kind == tast.SelectStmtKindTable {
		sel.Items = []SelectItem{{Expr: &Star{}}}
	} else if sel.Items, err = c.fields(s.Fields); err != nil {
		return nil, err
	}
	if len(sel.Items) > 1 {
		if f, ok := sel.Items[0].Expr.(*FuncCall); ok && f.Name == fnDistinctOn && sel.Items[0].Alias == "" {
			sel.DistinctOn, sel.Items = f.Args, sel.Items[1:]
		}
	}
	if s.From != nil {
		if sel.From, err = c.fromList(s.From.TableRefs); err != nil {
			return nil, err
		}
	}
	if sel.Where, err = c.optExpr(s.Where); err != nil {
		return nil, err
	}
	if s.GroupBy != nil {
		for _, it := range s.GroupBy.Items {
			e, err := c.expr(it.Expr)
			if err != nil {
				return nil, err
			}
			sel.GroupBy = append(sel.GroupBy, e)
		}
	}
	if s.Having != nil {
		if sel.Having, err = c.expr(s.Having.Expr); err != nil {
			return nil, err
		}
	}
	if sel.OrderBy, err = c.orderBy(s.OrderBy); err != nil {
		return nil, err
	}
	if sel.Limit, sel.Offset, err = c.limit(s.Limit); err != nil {
		return nil, err
	}
	if r := recursiveAlone(sel); r != nil {
		return r, nil
	}
	return sel, nil
}

// recursiveAlone is the recursive query that sel only reads whole
// (WITH RECURSIVE t AS (…) SELECT * FROM t, how one is printed), or nil.
func recursiveAlone(sel *Select) *Recursive {
	if len(sel.From) != 1 || len(sel.Items) != 1 || sel.Distinct || len(sel.DistinctOn) > 0 || sel.Where != nil ||
		len(sel.GroupBy) > 0 || sel.Having != nil || len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil {
		return nil
	}
	if st, ok := sel.Items[0].Expr.(*Star); !ok || st.Table != "" {
		return nil
	}
	d, ok := sel.From[0].(*DerivedTable)
	if !ok {
		return nil
	}
	r, ok := d.Query.(*Recursive)
	if !ok || d.Alias != r.Name || !slices.Equal(d.Columns, r.Columns) {
		return nil
	}
	return r
}

func (c *converter) fields(fl *tast.FieldList) ([]SelectItem, error) {
	if fl == nil {
		return nil, nil
	}
	items := make([]SelectItem, 0, len(fl.Fields))
	for _, f := range fl.Fields {
		if f.WildCard != nil {
			items = append(items, SelectItem{Expr: &Star{Table: f.WildCard.Table.O}})
			continue
		}
		e, err := c.expr(f.Expr)
		if err != nil {
			return nil, err
		}
		items = append(items, SelectItem{Expr: e, Alias: f.AsName.O})
	}
	return items, nil
}

func (c *converter) optExpr(e tast.ExprNode) (Expr, error) {
	if e == nil {
		return nil, nil
	}
	return c.expr(e)
}

func (c *converter) orderBy(ob *tast.OrderByClause) ([]OrderItem, error) {
	if ob == nil {
		return nil, nil
	}
	items := make([]OrderItem, 0, len(ob.Items))
	for _, it := range ob.Items {
		oi := OrderItem{Desc: it.Desc}
		e := it.Expr
		if f, ok := e.(*tast.FuncCallExpr); ok && len(f.Args) == 1 &&
			(f.FnName.O == fnNullsFirst || f.FnName.O == fnNullsLast) {
			first := f.FnName.O == fnNullsFirst
			oi.NullsFirst = &first
			e = f.Args[0]
		}
		x, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		oi.Expr = x
		items = append(items, oi)
	}
	return items, nil
}

func (c *converter) limit(l *tast.Limit) (count, offset Expr, err error) {
	if l == nil {
		return nil, nil, nil
	}
	if v, ok := l.Count.(*driver.ValueExpr); !ok || v.Kind() != driver.KindUint64 || v.GetUint64() != math.MaxUint64 {
		if count, err = c.expr(l.Count); err != nil {
			return nil, nil, err
		}
	}
	offset, err = c.optExpr(l.Offset)
	return count, offset, err
}

// setOprStmt folds TiDB's flat list of set operations into a tree, with
// INTERSECT binding tighter than UNION and EXCEPT as in PostgreSQL.
func (c *converter) setOprStmt(s *tast.SetOprStmt) (QueryExpr, error) {
	pop, err := c.with(s.With)
	if err != nil {
		return nil, err
	}
	defer pop()
	q, err := c.setOprList(s.SelectList)
	if err != nil {
		return nil, err
	}
	return c.setOprTail(q, s.OrderBy, s.Limit)
}

func (c *converter) setOprTail(q QueryExpr, ob *tast.OrderByClause, l *tast.Limit) (QueryExpr, error) {
	if ob == nil && l == nil {
		return q, nil
	}
	order, err := c.orderBy(ob)
	if err != nil {
		return nil, err
	}
	count, offset, err := c.limit(l)
	if err != nil {
		return nil, err
	}
	op, ok := q.(*SetOp)
	if !ok || op.OrderBy != nil || op.Limit != nil || op.Offset != nil {
		// ORDER BY/LIMIT after a lone parenthesized query: wrap it.
		return &Select{Items: []SelectItem{{Expr: &Star{}}}, From: []TableExpr{&DerivedTable{Query: q, Alias: "__fvsql_sub"}},
			OrderBy: order, Limit: count, Offset: offset}, nil
	}
	op.OrderBy, op.Limit, op.Offset = order, count, offset
	return op, nil
}

func (c *converter) setOprList(l *tast.SetOprSelectList) (QueryExpr, error) {
	pop, err := c.with(l.With)
	if err != nil {
		return nil, err
	}
	defer pop()
	type arm struct {
		q  QueryExpr
		op *tast.SetOprType
	}
	arms := make([]arm, 0, len(l.Selects))
	for _, n := range l.Selects {
		var a arm
		switch n := n.(type) {
		case *tast.SelectStmt:
			a.op = n.AfterSetOperator
			a.q, err = c.selectStmt(n)
		case *tast.SetOprSelectList:
			a.op = n.AfterSetOperator
			a.q, err = c.setOprList(n)
		default:
			return nil, unsupported("set operation over %T", n)
		}
		if err != nil {
			return nil, err
		}
		arms = append(arms, a)
	}
	if len(arms) == 0 {
		return nil, unsupported("empty set operation")
	}
	// INTERSECT first, then UNION/EXCEPT left to right.
	var merged []arm
	for i, a := range arms {
		if i > 0 && a.op != nil && (*a.op == tast.Intersect || *a.op == tast.IntersectAll) {
			last := &merged[len(merged)-1]
			last.q = setOp(*a.op, last.q, a.q)
			continue
		}
		merged = append(merged, a)
	}
	q := merged[0].q
	for _, a := range merged[1:] {
		q = setOp(*a.op, q, a.q)
	}
	return c.setOprTail(q, l.OrderBy, l.Limit)
}

func setOp(t tast.SetOprType, l, r QueryExpr) *SetOp {
	op := &SetOp{Left: l, Right: r}
	switch t {
	case tast.Union, tast.UnionAll:
		op.Op = "union"
	case tast.Except, tast.ExceptAll:
		op.Op = "except"
	default:
		op.Op = "intersect"
	}
	op.All = t == tast.UnionAll || t == tast.ExceptAll || t == tast.IntersectAll
	return op
}

// ---------------------------------------------------------------------------
// FROM.

// fromList flattens the top-level comma (cross) joins into Select.From.
func (c *converter) fromList(j *tast.Join) ([]TableExpr, error) {
	if j.Right == nil {
		t, err := c.tableExpr(j.Left)
		if err != nil {
			return nil, err
		}
		return []TableExpr{t}, nil
	}
	if j.Tp == tast.CrossJoin && j.On == nil && len(j.Using) == 0 && !j.NaturalJoin && !j.StraightJoin && !j.ExplicitParens {
		var left []TableExpr
		var err error
		if lj, ok := j.Left.(*tast.Join); ok {
			left, err = c.fromList(lj)
		} else {
			var t TableExpr
			t, err = c.tableExpr(j.Left)
			left = []TableExpr{t}
		}
		if err != nil {
			return nil, err
		}
		right, err := c.tableExpr(j.Right)
		if err != nil {
			return nil, err
		}
		return append(left, right), nil
	}
	t, err := c.join(j)
	if err != nil {
		return nil, err
	}
	return []TableExpr{t}, nil
}

func (c *converter) tableExpr(n tast.ResultSetNode) (TableExpr, error) {
	switch n := n.(type) {
	case *tast.Join:
		if n.Right == nil {
			return c.tableExpr(n.Left)
		}
		return c.join(n)
	case *tast.TableSource:
		return c.tableSource(n)
	case *tast.TableName:
		return c.tableName(n, "")
	}
	return nil, unsupported("FROM item %T", n)
}

func (c *converter) join(j *tast.Join) (TableExpr, error) {
	if j.NaturalJoin {
		return nil, unsupported("NATURAL JOIN")
	}
	out := &Join{}
	switch {
	case j.StraightJoin:
		out.Kind = "full" // the normalizer's mark for FULL [OUTER] JOIN
	case j.Tp == tast.LeftJoin:
		out.Kind = "left"
	case j.Tp == tast.RightJoin:
		out.Kind = "right"
	case j.On != nil || len(j.Using) > 0:
		out.Kind = "inner"
	default:
		out.Kind = "cross"
	}
	var err error
	if out.Left, err = c.tableExpr(j.Left); err != nil {
		return nil, err
	}
	if out.Right, err = c.tableExpr(j.Right); err != nil {
		return nil, err
	}
	if j.On != nil {
		if out.On, err = c.expr(j.On.Expr); err != nil {
			return nil, err
		}
	}
	for _, col := range j.Using {
		out.Using = append(out.Using, col.Name.O)
	}
	if out.Kind == "full" && out.On == nil && out.Using == nil {
		return nil, pgerror.New(pgerror.SyntaxError, "syntax error: FULL JOIN needs ON or USING")
	}
	return out, nil
}

func (c *converter) tableSource(ts *tast.TableSource) (TableExpr, error) {
	if len(ts.ColumnNames) > 0 {
		return nil, unsupported("column aliases in FROM")
	}
	alias := ts.AsName.O
	var cols []string
	if k, ok := strings.CutPrefix(alias, aliasPrefix); ok {
		if i, err := strconv.Atoi(k); err == nil && i < len(c.aliases) {
			alias, cols = c.aliases[i].alias, c.aliases[i].cols
		}
	}
	switch src := ts.Source.(type) {
	case *tast.TableName:
		t, err := c.tableName(src, alias)
		if err != nil || len(cols) == 0 {
			return t, err
		}
		switch t := t.(type) {
		case *DerivedTable: // a WITH query
			if len(t.Columns) > 0 { // renamed twice: the alias's names win
				t = &DerivedTable{Query: &Select{Items: []SelectItem{{Expr: &Star{}}}, From: []TableExpr{t}}, Alias: t.Alias}
			}
			t.Columns = cols
			return t, nil
		case *TableName:
			// t AS x(a, b): a table of t's rows under x, its columns renamed
			return &DerivedTable{Query: &Select{Items: []SelectItem{{Expr: &Star{}}}, From: []TableExpr{t}}, Alias: t.Alias, Columns: cols}, nil
		}
		return nil, unsupported("a column list on this FROM item")
	case *tast.SelectStmt, *tast.SetOprStmt:
		q, err := c.query(src)
		if err != nil {
			return nil, err
		}
		return &DerivedTable{Query: q, Alias: alias, Columns: cols, Lateral: ts.Lateral}, nil
	case *tast.Join:
		return c.tableExpr(src)
	}
	return nil, unsupported("FROM item %T", ts.Source)
}

func (c *converter) tableName(t *tast.TableName, alias string) (TableExpr, error) {
	if len(t.IndexHints) > 0 || len(t.PartitionNames) > 0 || t.TableSample != nil || t.AsOf != nil {
		return nil, unsupported("MySQL table options")
	}
	name := t.Name.O
	if t.Schema.O == "" {
		if k, ok := strings.CutPrefix(name, tvfPrefix); ok {
			i, err := strconv.Atoi(k)
			if err == nil && i < len(c.tvfs) {
				switch f := c.tvfs[i].(type) {
				case *WindowTVF:
					w := *f
					w.Alias = alias
					if w.Source.Schema == "" {
						if d, ok := c.cte(w.Source.Name, "").(*DerivedTable); ok {
							w.Query = d.Query
							if len(d.Columns) > 0 { // its columns renamed
								w.Query = &Select{Items: []SelectItem{{Expr: &Star{}}}, From: []TableExpr{d}}
							}
						}
					}
					return &w, nil
				case *TableFunc:
					tf := *f
					tf.Alias = alias
					return &tf, nil
				}
			}
		}
		if d := c.cte(name, alias); d != nil {
			return d, nil
		}
	}
	tn := &TableName{Schema: t.Schema.O, Name: name, Alias: alias}
	if c.named != nil {
		tn.Pos = c.named(name)
	}
	return tn, nil
}

// ---------------------------------------------------------------------------
// Expressions.

var binaryOps = map[opcode.Op]string{
	opcode.LogicAnd: "and", opcode.LogicOr: "or",
	opcode.GE: ">=", opcode.LE: "<=", opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.GT: ">",
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.Mod: "%",
	opcode.Xor: "^", // MySQL's ^ is XOR; the text was PostgreSQL, where ^ is power
	opcode.And: "&", opcode.Or: "|", opcode.LeftShift: "<<", opcode.RightShift: ">>",
}

func (c *converter) exprs(list []tast.ExprNode) ([]Expr, error) {
	out := make([]Expr, 0, len(list))
	for _, e := range list {
		x, err := c.expr(e)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (c *converter) expr(e tast.ExprNode) (Expr, error) {
	switch e := e.(type) {
	case *driver.ParamMarkerExpr:
		n, ok := c.params[e.Offset]
		if !ok {
			return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"?\"")
		}
		if n < 0 && -n <= len(c.parsed) {
			return c.parsed[-n-1], nil
		}
		return &Param{N: n}, nil
	case *driver.ValueExpr:
		return literal(e)
	case *tast.ColumnNameExpr:
		x, err := columnRef(e.Name)
		if ref, ok := x.(*ColumnRef); ok && c.at != nil {
			ref.Pos = c.at(e.OriginTextPosition())
		}
		return x, err
	case *tast.ParenthesesExpr:
		return c.expr(e.Expr)
	case *tast.BinaryOperationExpr:
		return c.binary(e)
	case *tast.UnaryOperationExpr:
		return c.unary(e)
	case *tast.FuncCallExpr:
		return c.funcCall(e)
	case *tast.AggregateFuncExpr:
		return c.aggregate(e)
	case *tast.WindowFuncExpr:
		return c.windowFunc(e)
	case *tast.PatternLikeOrIlikeExpr:
		return c.like(e)
	case *tast.PatternRegexpExpr:
		pat, ci := stripBinaryMarker(e.Pattern)
		return c.pattern(e.Expr, pat, &Like{Not: e.Not, Regex: true, CaseInsensitive: ci})
	case *tast.PatternInExpr:
		return c.in(e)
	case *tast.IsNullExpr:
		x, err := c.expr(e.Expr)
		return &IsNull{X: x, Not: e.Not}, err
	case *tast.IsTruthExpr:
		x, err := c.expr(e.Expr)
		return &IsBool{X: x, Not: e.Not, Value: e.True != 0}, err
	case *tast.BetweenExpr:
		return c.between(e)
	case *tast.CaseExpr:
		return c.caseExpr(e)
	case *tast.SubqueryExpr:
		q, err := c.query(e.Query)
		return &Subquery{Query: q, Exists: e.Exists}, err
	case *tast.ExistsSubqueryExpr:
		return c.exists(e)
	case *tast.CompareSubqueryExpr:
		return c.compareSubquery(e)
	case *tast.RowExpr:
		items, err := c.exprs(e.Values)
		return &RowExpr{Items: items}, err
	case *tast.PositionExpr:
		if e.P != nil {
			return c.expr(e.P)
		}
		return &Literal{Value: intLiteral(int64(e.N))}, nil
	case *tast.DefaultExpr:
		return nil, unsupported("DEFAULT in expressions")
	}
	return nil, unsupported("expression %s", strings.TrimPrefix(fmt.Sprintf("%T", e), "*ast."))
}

func columnRef(n *tast.ColumnName) (Expr, error) {
	if n.Name.O == colStar || n.Name.O == colOmitted {
		return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"*\"")
	}
	table := n.Table.O
	if n.Schema.O != "" {
		table = n.Schema.O + "." + table
	}
	return &ColumnRef{Table: table, Name: n.Name.O}, nil
}

// literal types a TiDB literal as PostgreSQL would.
func literal(v *driver.ValueExpr) (Expr, error) {
	switch v.Kind() {
	case driver.KindNull:
		return &Literal{Value: types.NullValue}, nil
	case driver.KindInt64:
		if v.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
			return &Literal{Value: types.NewBool(v.GetInt64() != 0)}, nil
		}
		return &Literal{Value: intLiteral(v.GetInt64())}, nil
	case driver.KindUint64:
		if u := v.GetUint64(); u <= math.MaxInt64 {
			return &Literal{Value: intLiteral(int64(u))}, nil
		}
		return numericLiteral(strconv.FormatUint(v.GetUint64(), 10))
	case driver.KindMysqlDecimal:
		return numericLiteral(v.GetMysqlDecimal().String())
	case driver.KindFloat64:
		return numericLiteral(strconv.FormatFloat(v.GetFloat64(), 'g', -1, 64))
	case driver.KindString:
		return &Literal{Value: types.NewString(types.Unknown, v.GetString())}, nil
	}
	return nil, unsupported("literal of kind %d", v.Kind())
}

// intLiteral is Int4 when i fits, else Int8.
func intLiteral(i int64) types.Value {
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return types.NewInt(types.Int4, i)
	}
	return types.NewInt8(i)
}

func numericLiteral(s string) (Expr, error) {
	v, err := types.ParseText(types.Numeric, s)
	if err != nil {
		return nil, err
	}
	return &Literal{Value: v}, nil
}

func (c *converter) binary(e *tast.BinaryOperationExpr) (Expr, error) {
	l, err := c.expr(e.L)
	if err != nil {
		return nil, err
	}
	if e.Op == opcode.NullEQ {
		rn, distinct := stripBinaryMarker(e.R)
		r, err := c.expr(rn)
		op := "is not distinct from"
		if distinct {
			op = "is distinct from"
		}
		return &Binary{Op: op, L: l, R: r}, err
	}
	op, ok := binaryOps[e.Op]
	if !ok {
		return nil, unsupported("operator %s", e.Op)
	}
	if arr, all, ok := quantifiedArg(e.R); ok {
		return c.quantified(l, op, arr, all)
	}
	r, err := c.expr(e.R)
	return &Binary{Op: op, L: l, R: r}, err
}

// quantifiedArg recognises the normalizer's __fvsql_any(array) and
// __fvsql_all(array) on the right of an operator.
func quantifiedArg(e tast.ExprNode) (arr tast.ExprNode, all, ok bool) {
	f, isCall := e.(*tast.FuncCallExpr)
	if !isCall || f.Schema.O != "" || (f.FnName.O != fnAny && f.FnName.O != fnAll) {
		return nil, false, false
	}
	if len(f.Args) != 1 {
		return nil, false, false // reported as a syntax error by funcCall
	}
	return f.Args[0], f.FnName.O == fnAll, true
}

func (c *converter) quantified(x Expr, op string, arr tast.ExprNode, all bool) (Expr, error) {
	a, err := c.expr(arr)
	if err != nil {
		return nil, err
	}
	// = ANY ((SELECT …)) lands here too: a subquery in parentheses is a
	// scalar one yielding an array, as PostgreSQL reads it.
	return &Quantified{X: x, Op: op, All: all, Array: a}, nil
}

// stripBinaryMarker removes the BINARY prefix the normalizer puts on the
// leftmost primary of an operand (see patternOp and isWord).
func stripBinaryMarker(e tast.ExprNode) (tast.ExprNode, bool) {
	switch x := e.(type) {
	case *tast.FuncCastExpr:
		if x.FunctionType == tast.CastBinaryOperator {
			return x.Expr, true
		}
	case *tast.BinaryOperationExpr:
		if l, ok := stripBinaryMarker(x.L); ok {
			x.L = l
			return x, true
		}
	case *tast.FuncCallExpr:
		if x.FnName.O == tast.Concat && x.Schema.O == "" && len(x.Args) > 0 {
			if l, ok := stripBinaryMarker(x.Args[0]); ok {
				x.Args[0] = l
				return x, true
			}
		}
	}
	return e, false
}

func (c *converter) unary(e *tast.UnaryOperationExpr) (Expr, error) {
	x, err := c.expr(e.V)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case opcode.Minus:
		if lit, ok := x.(*Literal); ok {
			if v, ok := negate(lit.Value); ok {
				return &Literal{Value: v}, nil
			}
		}
		return &Unary{Op: "-", X: x}, nil
	case opcode.Plus:
		return &Unary{Op: "+", X: x}, nil
	case opcode.Not, opcode.Not2:
		return &Unary{Op: "not", X: x}, nil
	case opcode.BitNeg:
		return &Unary{Op: "~", X: x}, nil
	}
	return nil, unsupported("operator %s", e.Op)
}

// negate folds -constant as PostgreSQL's grammar does, so that -5 is a
// constant and -2147483648 is an integer.
func negate(v types.Value) (types.Value, bool) {
	switch v.K {
	case types.Int4, types.Int8:
		return intLiteral(-v.I), true
	case types.Numeric:
		s := v.N.Text('f')
		neg, err := types.ParseText(types.Numeric, "-"+s)
		if err != nil {
			return v, false
		}
		if i, err := strconv.ParseInt("-"+s, 10, 64); err == nil {
			return intLiteral(i), true // -9223372036854775808
		}
		return neg, true
	}
	return v, false
}

func (c *converter) like(e *tast.PatternLikeOrIlikeExpr) (Expr, error) {
	l := &Like{Not: e.Not, CaseInsensitive: !e.IsLike}
	if e.EscapeExplicit {
		esc := "" // ESCAPE '': no escape character
		if e.Escape != 0 {
			esc = string([]byte{e.Escape}) // one ASCII byte: the normalizer checked it
		}
		l.Escape = &Literal{Value: types.NewString(types.Unknown, esc)}
	}
	return c.pattern(e.Expr, e.Pattern, l)
}

func (c *converter) pattern(x, pat tast.ExprNode, l *Like) (Expr, error) {
	var err error
	if l.X, err = c.expr(x); err != nil {
		return nil, err
	}
	if arr, all, ok := quantifiedArg(pat); ok {
		if l.Escape != nil {
			return nil, unsupported("LIKE … ESCAPE with ANY/ALL")
		}
		op := "like"
		switch {
		case l.Regex && !l.CaseInsensitive:
			op = "~"
		case l.Regex:
			return nil, unsupported("~* ANY/ALL")
		case l.CaseInsensitive:
			op = "ilike"
		}
		if l.Not {
			op = map[string]string{"like": "not like", "ilike": "not ilike", "~": "!~"}[op]
		}
		return c.quantified(l.X, op, arr, all)
	}
	l.Pattern, err = c.expr(pat)
	return l, err
}

func (c *converter) in(e *tast.PatternInExpr) (Expr, error) {
	x, err := c.expr(e.Expr)
	if err != nil {
		return nil, err
	}
	in := &In{X: x, Not: e.Not}
	if e.Sel != nil {
		sq, ok := e.Sel.(*tast.SubqueryExpr)
		if !ok {
			return nil, unsupported("IN over %T", e.Sel)
		}
		in.Sub, err = c.query(sq.Query)
		return in, err
	}
	in.List, err = c.exprs(e.List)
	return in, err
}

func (c *converter) between(e *tast.BetweenExpr) (Expr, error) {
	x, err := c.expr(e.Expr)
	if err != nil {
		return nil, err
	}
	lo, err := c.expr(e.Left)
	if err != nil {
		return nil, err
	}
	hi, err := c.expr(e.Right)
	return &Between{X: x, Lo: lo, Hi: hi, Not: e.Not}, err
}

func (c *converter) caseExpr(e *tast.CaseExpr) (Expr, error) {
	out := &Case{}
	var err error
	if out.Operand, err = c.optExpr(e.Value); err != nil {
		return nil, err
	}
	for _, w := range e.WhenClauses {
		cond, err := c.expr(w.Expr)
		if err != nil {
			return nil, err
		}
		res, err := c.expr(w.Result)
		if err != nil {
			return nil, err
		}
		out.Whens = append(out.Whens, When{Cond: cond, Result: res})
	}
	out.Else, err = c.optExpr(e.ElseClause)
	return out, err
}

func (c *converter) exists(e *tast.ExistsSubqueryExpr) (Expr, error) {
	sq, ok := e.Sel.(*tast.SubqueryExpr)
	if !ok {
		return nil, unsupported("EXISTS over %T", e.Sel)
	}
	q, err := c.query(sq.Query)
	if err != nil {
		return nil, err
	}
	var out Expr = &Subquery{Query: q, Exists: true}
	if e.Not {
		out = &Unary{Op: "not", X: out}
	}
	return out, nil
}

// compareSubquery maps x = ANY (…) to IN and x <> ALL (…) to NOT IN, the
// forms sql's AST has, and other operators to Quantified.
func (c *converter) compareSubquery(e *tast.CompareSubqueryExpr) (Expr, error) {
	sq, ok := e.R.(*tast.SubqueryExpr)
	op, known := binaryOps[e.Op]
	if !ok || !known || !IsComparisonOp(op) {
		return nil, unsupported("ANY/ALL with operator %s", e.Op)
	}
	x, err := c.expr(e.L)
	if err != nil {
		return nil, err
	}
	q, err := c.query(sq.Query)
	if err != nil {
		return nil, err
	}
	if op == "=" && !e.All || op == "<>" && e.All {
		return &In{X: x, Sub: q, Not: e.All}, nil
	}
	return &Quantified{X: x, Op: op, All: e.All, Sub: q}, nil
}

// IsComparisonOp reports whether op is one of = <> < <= > >=.
func IsComparisonOp(op string) bool {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

// ---------------------------------------------------------------------------
// Function calls.

func (c *converter) funcCall(e *tast.FuncCallExpr) (Expr, error) {
	name := e.FnName.O
	if s := e.Schema.O; s != "" && s != "pg_catalog" {
		name = s + "." + name
	} else if s == "" {
		if op, ok := strings.CutPrefix(name, fnJSONOp); ok && len(e.Args) == 2 {
			for sym, n := range jsonOps {
				if n == op {
					l, err := c.expr(e.Args[0])
					if err != nil {
						return nil, err
					}
					r, err := c.expr(e.Args[1])
					if err != nil {
						return nil, err
					}
					return &Binary{Op: sym, L: l, R: r}, nil
				}
			}
		}
		switch name {
		case fnCast:
			return c.cast(e)
		case fnInterval:
			return intervalLiteral(e)
		case fnNum:
			return numericLiteral(stringArg(e, 0))
		case fnFilter:
			return c.filter(e)
		case fnOver:
			if len(e.Args) == 2 {
				x, err := c.expr(e.Args[0])
				if err != nil {
					return nil, err
				}
				w, err := c.expr(e.Args[1])
				if err != nil {
					return nil, err
				}
				f, ok := x.(*FuncCall)
				carrier, ok2 := w.(*FuncCall)
				if ok && ok2 && f.Over == nil && carrier.Over != nil {
					f.Over = carrier.Over
					return f, nil
				}
			}
			return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"OVER\"")
		case fnArray:
			items, err := c.exprs(e.Args)
			return &ArrayExpr{Items: items}, err
		case fnArraySub:
			if len(e.Args) == 1 {
				if sq, ok := e.Args[0].(*tast.SubqueryExpr); ok {
					q, err := c.query(sq.Query)
					return &Subquery{Query: q, Array: true}, err
				}
			}
			return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"ARRAY\"")
		case fnSubscript, fnSlice:
			return c.subscript(e)
		case fnAggOrder, fnWithinGroup:
			return c.aggOrder(e, name == fnWithinGroup)
		case fnDistinctAgg:
			if len(e.Args) == 1 {
				x, err := c.expr(e.Args[0])
				if f, ok := x.(*FuncCall); ok && err == nil && f.Over == nil {
					f.Distinct = true
					return f, nil
				}
				if err != nil {
					return nil, err
				}
			}
			return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"DISTINCT\"")
		case fnField:
			if len(e.Args) == 2 {
				x, err := c.expr(e.Args[0])
				return &FieldSelect{X: x, Field: stringArg(e, 1)}, err
			}
			return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \".\"")
		case fnAny, fnAll:
			return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"%s\"", strings.ToUpper(strings.TrimPrefix(name, "__fvsql_")))
		case fnRollup, fnCube, fnGroupingSets:
			items, err := c.exprs(e.Args)
			for _, it := range items {
				if r, ok := it.(*RowExpr); ok && len(r.Items) == 0 && name != fnGroupingSets {
					// () is a grouping set, not an element of ROLLUP or CUBE
					return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \")\"")
				}
			}
			return &GroupingSets{Kind: map[string]string{fnRollup: "rollup", fnCube: "cube", fnGroupingSets: "sets"}[name], Items: items}, err
		case fnEmptySet:
			return &RowExpr{}, nil
		case tast.Concat:
			if len(e.Args) == 2 { // a || b; a written concat() carries pg_catalog.
				l, err := c.expr(e.Args[0])
				if err != nil {
					return nil, err
				}
				r, err := c.expr(e.Args[1])
				return &Binary{Op: "||", L: l, R: r}, err
			}
		}
	}
	name = strings.ToLower(name)
	if alias, ok := funcAliases[name]; ok {
		name = alias
	}
	f := &FuncCall{Name: name}
	switch {
	case len(e.Args) == 1 && isStarArg(e.Args[0]):
		f.Star = true
		return f, nil
	case name == "trim":
		return c.trim(e)
	case name == "position" && len(e.Args) == 2:
		e.Args[0], e.Args[1] = e.Args[1], e.Args[0]
		f.Name = "strpos"
	}
	var err error
	f.Args, err = c.exprs(e.Args)
	return f, err
}

// funcAliases maps TiDB's spellings to PostgreSQL's.
var funcAliases = map[string]string{
	fnExtract:      "extract",
	"user":         "current_user",
	"current_role": "current_user",
	"curdate":      "current_date",
	"curtime":      "current_time",
	"substr":       "substring",
}

// sourcePos maps offsets of nr's text back to positions in src.
func sourcePos(src string, nr *normalized) func(int) int {
	return func(off int) int {
		i := sort.SearchInts(nr.outPos, off+1) - 1
		if i < 0 || i >= len(nr.srcPos) {
			return 0
		}
		return runePos(src, nr.srcPos[i])
	}
}

// fromNamePos gives the positions of names in nr's FROM clauses.
func fromNamePos(src string, nr *normalized) func(string) int {
	return func(name string) int {
		if off, ok := nr.fromNames[name]; ok {
			return runePos(src, off)
		}
		return 0
	}
}

// aggOrder converts __fvsql_aggorder(agg(args), keys…) (and
// __fvsql_withingroup, within: an ordered-set call): keys wrapped in
// __fvsql_desc and __fvsql_nulls_first/_last, in either order.
func (c *converter) aggOrder(e *tast.FuncCallExpr, within bool) (Expr, error) {
	bad := pgerror.New(pgerror.SyntaxError, "syntax error at or near \"ORDER\"")
	if len(e.Args) < 2 {
		return nil, bad
	}
	x, err := c.expr(e.Args[0])
	if err != nil {
		return nil, err
	}
	f, ok := x.(*FuncCall)
	if !ok || f.Over != nil || f.Filter != nil {
		return nil, bad
	}
	for _, a := range e.Args[1:] {
		var oi OrderItem
		for {
			w, ok := a.(*tast.FuncCallExpr)
			if !ok || len(w.Args) != 1 {
				break
			}
			switch w.FnName.O {
			case fnDesc:
				oi.Desc = true
			case fnNullsFirst, fnNullsLast:
				first := w.FnName.O == fnNullsFirst
				oi.NullsFirst = &first
			default:
				goto done
			}
			a = w.Args[0]
		}
	done:
		if oi.Expr, err = c.expr(a); err != nil {
			return nil, err
		}
		f.OrderBy = append(f.OrderBy, oi)
	}
	f.WithinGroup = within
	return f, nil
}

// subscript converts __fvsql_subscript(x, i) and __fvsql_slice(x, lo, hi).
func (c *converter) subscript(e *tast.FuncCallExpr) (Expr, error) {
	args := make([]Expr, len(e.Args))
	for i, a := range e.Args {
		if col, ok := a.(*tast.ColumnNameExpr); ok && col.Name.Name.O == colOmitted && col.Name.Table.O == "" && i > 0 {
			continue // nil: an omitted slice bound
		}
		x, err := c.expr(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	if e.FnName.O == fnSubscript && len(args) == 2 {
		return &Subscript{X: args[0], Index: args[1]}, nil
	}
	if len(args) == 3 {
		return &Subscript{X: args[0], Lo: args[1], Hi: args[2], Slice: true}, nil
	}
	return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"[\"")
}

func isStarArg(e tast.ExprNode) bool {
	c, ok := e.(*tast.ColumnNameExpr)
	return ok && c.Name.Name.O == colStar && c.Name.Table.O == ""
}

func stringArg(e *tast.FuncCallExpr, i int) string {
	if i < len(e.Args) {
		if v, ok := e.Args[i].(*driver.ValueExpr); ok && v.Kind() == driver.KindString {
			return v.GetString()
		}
	}
	return ""
}

func (c *converter) cast(e *tast.FuncCallExpr) (Expr, error) {
	if len(e.Args) != 2 {
		return nil, pgerror.New(pgerror.SyntaxError, "syntax error in CAST")
	}
	x, err := c.expr(e.Args[0])
	if err != nil {
		return nil, err
	}
	name := stringArg(e, 1)
	t, err := types.Parse(name)
	if err != nil {
		return nil, err
	}
	return &Cast{X: x, Type: t, TypeName: name}, nil
}

func intervalLiteral(e *tast.FuncCallExpr) (Expr, error) {
	iv, err := types.ParseInterval(stringArg(e, 0), stringArg(e, 1))
	if err != nil {
		return nil, err
	}
	return &Literal{Value: types.NewInterval(iv)}, nil
}

// filter attaches FILTER (WHERE …) to its aggregate.
func (c *converter) filter(e *tast.FuncCallExpr) (Expr, error) {
	if len(e.Args) != 2 {
		return nil, pgerror.New(pgerror.SyntaxError, "syntax error at or near \"FILTER\"")
	}
	agg, err := c.expr(e.Args[0])
	if err != nil {
		return nil, err
	}
	f, ok := agg.(*FuncCall)
	if !ok {
		return nil, pgerror.New(pgerror.SyntaxError, "FILTER specified, but it is not an aggregate function")
	}
	if f.Filter, err = c.expr(e.Args[1]); err != nil {
		return nil, err
	}
	return f, nil
}

// trim maps TiDB's TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) to
// PostgreSQL's btrim/ltrim/rtrim(s [, chars]).
func (c *converter) trim(e *tast.FuncCallExpr) (Expr, error) {
	f := &FuncCall{Name: "btrim"}
	args := e.Args
	if len(args) == 3 {
		if d, ok := args[2].(*tast.TrimDirectionExpr); ok {
			switch d.Direction {
			case tast.TrimLeading:
				f.Name = "ltrim"
			case tast.TrimTrailing:
				f.Name = "rtrim"
			}
			args = args[:2]
		}
	}
	var err error
	f.Args, err = c.exprs(args)
	return f, err
}

func (c *converter) aggregate(e *tast.AggregateFuncExpr) (Expr, error) {
	if e.Order != nil {
		return nil, unsupported("ORDER BY in aggregate calls")
	}
	f := &FuncCall{Name: strings.ToLower(e.F), Distinct: e.Distinct}
	if len(e.Args) == 1 && isStarArg(e.Args[0]) {
		f.Star = true
		return f, nil
	}
	var err error
	f.Args, err = c.exprs(e.Args)
	return f, err
}

func (c *converter) windowFunc(e *tast.WindowFuncExpr) (Expr, error) {
	if e.IgnoreNull || e.FromLast {
		return nil, unsupported("IGNORE NULLS / FROM LAST")
	}
	f := &FuncCall{Name: strings.ToLower(e.Name), Distinct: e.Distinct}
	if len(e.Args) == 1 && isStarArg(e.Args[0]) {
		f.Star = true
	} else {
		var err error
		if f.Args, err = c.exprs(e.Args); err != nil {
			return nil, err
		}
	}
	var err error
	f.Over, err = c.windowSpec(&e.Spec, 0)
	return f, err
}

// windowSpec converts an OVER clause or a WINDOW definition, resolving the
// window it names (OVER w) or refines (OVER (w ORDER BY …)) by
// PostgreSQL's rules: the refinement adds an ORDER BY and a frame, never
// a PARTITION BY, and the window it copies has no frame.
func (c *converter) windowSpec(ws *tast.WindowSpec, depth int) (*WindowSpec, error) {
	if depth > 100 {
		return nil, pgerror.New(pgerror.WindowingError, "window definitions refer to each other in a loop")
	}
	if ws.OnlyAlias {
		base, err := c.windowNamed(ws.Name)
		if err != nil {
			return nil, err
		}
		return c.windowSpec(base, depth+1)
	}
	out := &WindowSpec{}
	if ws.Ref.O != "" {
		base, err := c.windowNamed(ws.Ref)
		if err != nil {
			return nil, err
		}
		b, err := c.windowSpec(base, depth+1)
		if err != nil {
			return nil, err
		}
		switch {
		case ws.PartitionBy != nil:
			return nil, pgerror.New(pgerror.WindowingError, "cannot override PARTITION BY clause of window %q", ws.Ref.O)
		case ws.OrderBy != nil && len(b.OrderBy) > 0:
			return nil, pgerror.New(pgerror.WindowingError, "cannot override ORDER BY clause of window %q", ws.Ref.O)
		case b.Frame != nil:
			return nil, pgerror.New(pgerror.WindowingError, "cannot copy window %q because it has a frame clause", ws.Ref.O)
		}
		*out = *b
	}
	if pb := ws.PartitionBy; pb != nil {
		for _, it := range pb.Items {
			x, err := c.expr(it.Expr)
			if err != nil {
				return nil, err
			}
			out.PartitionBy = append(out.PartitionBy, x)
		}
	}
	if ws.OrderBy != nil {
		var err error
		if out.OrderBy, err = c.orderBy(ws.OrderBy); err != nil {
			return nil, err
		}
	}
	if fr := ws.Frame; fr != nil {
		wf := &WindowFrame{}
		switch fr.Type {
		case tast.Rows:
			wf.Mode = "rows"
		case tast.Ranges:
			wf.Mode = "range"
		case tast.Groups:
			wf.Mode = "groups"
		default:
			return nil, unsupported("this window frame")
		}
		var err error
		if wf.Start, err = c.frameBound(&fr.Extent.Start); err != nil {
			return nil, err
		}
		if wf.End, err = c.frameBound(&fr.Extent.End); err != nil {
			return nil, err
		}
		out.Frame = wf
	}
	return out, nil
}

// windowNamed finds a window of the WINDOW clause of the SELECT being
// converted.
func (c *converter) windowNamed(name tast.CIStr) (*tast.WindowSpec, error) {
	if n := len(c.windows); n > 0 {
		if w, ok := c.windows[n-1][name.L]; ok {
			return w, nil
		}
	}
	return nil, pgerror.New(pgerror.UndefinedObject, "window %q does not exist", name.O)
}

func (c *converter) frameBound(b *tast.FrameBound) (FrameBound, error) {
	if b.Unit != tast.TimeUnitInvalid && b.Unit != tast.TimeUnitMicrosecond {
		// the normalizer wraps every offset but a number in INTERVAL (…)
		// MICROSECOND; another unit is MySQL's syntax
		return FrameBound{}, unsupported("INTERVAL frame offsets")
	}
	switch {
	case b.Type == tast.CurrentRow:
		return FrameBound{Kind: FrameCurrentRow}, nil
	case b.UnBounded && b.Type == tast.Preceding:
		return FrameBound{Kind: FrameUnboundedPreceding}, nil
	case b.UnBounded:
		return FrameBound{Kind: FrameUnboundedFollowing}, nil
	}
	x, err := c.expr(b.Expr)
	if err != nil {
		return FrameBound{}, err
	}
	if b.Type == tast.Preceding {
		return FrameBound{Kind: FramePreceding, Offset: x}, nil
	}
	return FrameBound{Kind: FrameFollowing, Offset: x}, nil
}

// insert converts INSERT INTO t [(cols)] VALUES … | query.
func (c *converter) insert(s *tast.InsertStmt) (*Insert, error) {
	if s.IsReplace || s.IgnoreErr || s.Setlist || len(s.OnDuplicate) > 0 || len(s.PartitionNames) > 0 {
		return nil, unsupported("MySQL INSERT options")
	}
	ts, ok := s.Table.TableRefs.Left.(*tast.TableSource)
	if !ok {
		return nil, unsupported("INSERT target")
	}
	tn, ok := ts.Source.(*tast.TableName)
	if !ok {
		return nil, unsupported("INSERT target")
	}
	ins := &Insert{Table: &TableName{Schema: tn.Schema.O, Name: tn.Name.O, Alias: ts.AsName.O}}
	for _, col := range s.Columns {
		ins.Columns = append(ins.Columns, col.Name.O)
	}
	if s.Select != nil {
		q, err := c.query(s.Select)
		if err != nil {
			return nil, err
		}
		ins.Query = &Query{Body: q}
		return ins, nil
	}
	ins.Values = make([][]Expr, 0, len(s.Lists))
	for _, row := range s.Lists {
		vals, err := c.exprs(row)
		if err != nil {
			return nil, err
		}
		ins.Values = append(ins.Values, vals)
	}
	return ins, nil
}
