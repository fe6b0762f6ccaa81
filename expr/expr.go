package expr

import (
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Kind is the kind of an expression node.
type Kind uint8

// Node kinds.
const (
	KCol       Kind = iota + 1 // input column Col
	KConst                     // constant Val
	KParam                     // $Col+1, bound at compile time
	KCall                      // function or operator Fn over Args
	KCast                      // Args[0] cast to Type
	KAnd                       // three-valued AND of Args
	KOr                        // three-valued OR of Args
	KNot                       // NOT Args[0]
	KIsNull                    // Args[0] IS NULL
	KCase                      // Args: cond1, res1, cond2, res2, …, [else]; HasElse
	KCoalesce                  // first non-null of Args
	KIn                        // Args[0] IN (Args[1:])
	KDistinct                  // Args[0] IS DISTINCT FROM Args[1]
	KOuter                     // column Col of the enclosing query's row (correlated subqueries)
	KSubquery                  // subquery Col of the plan; Name: scalar, exists, in (Args[0] IN …) or array
	KArray                     // ARRAY[Args…]
	KSubscript                 // Args[0][Args[1]]
	KSlice                     // Args[0][Args[1]:Args[2]]; Col bit 1: no lower bound, bit 2: no upper
	KAny                       // Args[0] Fn ANY (Args[1]), Fn a comparison or boolean function
	KAll                       // Args[0] Fn ALL (Args[1])
	KFuncScan                  // a subquery over set function Fn of the current row, see FuncScan
	KFail                      // fails with SQLSTATE Val and message Name when evaluated, see Fail
	KRow                       // a record of Args (types.Record), see Row
	KField                     // field Col of record Args[0], of type Type; Name: the field's name
	KUser                      // user function Name over Args (Env.Funcs), of type Type
)

// Expr is a typed expression tree. It is plain data: safe to share,
// serialisable to JSON, never mutated after building.
type Expr struct {
	Kind    Kind        `json:"k"`
	Type    types.Type  `json:"t"`
	Col     int         `json:"c,omitempty"`
	Val     types.Value `json:"v,omitempty"`
	Fn      string      `json:"f,omitempty"` // overload key, see Func.Key
	Args    []*Expr     `json:"a,omitempty"`
	HasElse bool        `json:"e,omitempty"`
	Name    string      `json:"n,omitempty"` // column name or display name
}

// Col returns a reference to input column i of type t.
func Col(i int, t types.Type, name string) *Expr {
	return &Expr{Kind: KCol, Type: t, Col: i, Name: name}
}

// Const returns a constant.
func Const(v types.Value) *Expr {
	t := v.K
	return &Expr{Kind: KConst, Type: t, Val: v}
}

// TypedNull returns a NULL constant of type t.
func TypedNull(t types.Type) *Expr { return &Expr{Kind: KConst, Type: t} }

// Param returns a reference to parameter n (0-based) of type t.
func Param(n int, t types.Type) *Expr { return &Expr{Kind: KParam, Type: t, Col: n} }

// Outer returns a reference to column i of the enclosing query's row.
func Outer(i int, t types.Type, name string) *Expr {
	return &Expr{Kind: KOuter, Type: t, Col: i, Name: name}
}

// Subquery returns a reference to subquery i of the plan: "scalar" (its
// one value, NULL without rows, 21000 with several), "exists", "in"
// (x IN the subquery's values) or "array" (its values as an array of
// type t, in the order they come).
func Subquery(i int, mode string, t types.Type, x *Expr) *Expr {
	e := &Expr{Kind: KSubquery, Type: t, Col: i, Name: mode}
	if x != nil {
		e.Args = []*Expr{x}
	}
	return e
}

// Row returns a record of the values of args.
func Row(args ...*Expr) *Expr { return &Expr{Kind: KRow, Type: types.Record, Args: args} }

// Field returns field i (named name, of type t) of record rec.
func Field(rec *Expr, i int, t types.Type, name string) *Expr {
	return &Expr{Kind: KField, Type: t, Col: i, Name: name, Args: []*Expr{rec}}
}

// IsConst reports whether e is a constant.
func (e *Expr) IsConst() bool { return e.Kind == KConst }

// Walk calls fn on e and every node below it, depth first.
func (e *Expr) Walk(fn func(*Expr)) {
	fn(e)
	for _, a := range e.Args {
		a.Walk(fn)
	}
}

// Columns returns the sorted set of input columns e reads.
func (e *Expr) Columns() []int {
	seen := map[int]bool{}
	var out []int
	e.Walk(func(n *Expr) {
		if n.Kind == KCol && !seen[n.Col] {
			seen[n.Col] = true
			out = append(out, n.Col)
		}
	})
	return out
}

// Remap returns a copy of e with column i replaced by column m[i].
func (e *Expr) Remap(m map[int]int) *Expr {
	c := *e
	if c.Kind == KCol {
		if n, ok := m[c.Col]; ok {
			c.Col = n
		}
	}
	if len(e.Args) > 0 {
		c.Args = make([]*Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = a.Remap(m)
		}
	}
	return &c
}

// Substitute returns a copy of e with every column reference replaced by
// the expression at that index of by (used to push expressions through a
// projection).
func (e *Expr) Substitute(by []*Expr) *Expr {
	if e.Kind == KCol {
		return by[e.Col]
	}
	c := *e
	if len(e.Args) > 0 {
		c.Args = make([]*Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = a.Substitute(by)
		}
	}
	return &c
}

// Fail returns an expression of type t that fails with err's SQLSTATE
// and message when it is evaluated (never when it is built or folded):
// the planner's stand-in for a part of a query it cannot plan yet but
// that may never run.
func Fail(err error, t types.Type) *Expr {
	return &Expr{Kind: KFail, Type: t, Name: err.Error(), Val: types.NewText(pgerror.CodeOf(err).String())}
}

// MapOuter returns a copy of e with every outer reference (KOuter)
// replaced by by(reference).
func (e *Expr) MapOuter(by func(outer *Expr) *Expr) *Expr {
	if e.Kind == KOuter {
		return by(e)
	}
	c := *e
	if len(e.Args) > 0 {
		c.Args = make([]*Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = a.MapOuter(by)
		}
	}
	return &c
}

// HasOuter reports whether e reads the enclosing query's row.
func (e *Expr) HasOuter() bool { return e.Has(KOuter) }

// Has reports whether e or a node below it is of kind k.
func (e *Expr) Has(k Kind) bool {
	found := false
	e.Walk(func(n *Expr) { found = found || n.Kind == k })
	return found
}

// String renders e as SQL-like text for EXPLAIN and messages.
func (e *Expr) String() string {
	var sb strings.Builder
	e.format(&sb)
	return sb.String()
}

func (e *Expr) format(sb *strings.Builder) {
	switch e.Kind {
	case KCol:
		if e.Name != "" {
			sb.WriteString(e.Name)
		} else {
			sb.WriteString("#")
			sb.WriteString(itoa(e.Col))
		}
	case KConst:
		switch {
		case e.Val.K == types.Null:
			sb.WriteString("NULL")
		case e.Val.K.IsNumeric() || e.Val.K == types.Bool:
			sb.WriteString(e.Val.Text())
		default:
			sb.WriteString("'")
			sb.WriteString(strings.ReplaceAll(e.Val.Text(), "'", "''"))
			sb.WriteString("'")
			if e.Val.K != types.Unknown && e.Val.K != types.Text {
				sb.WriteString("::")
				sb.WriteString(e.Val.K.String())
			}
		}
	case KParam:
		sb.WriteString("$")
		sb.WriteString(itoa(e.Col + 1))
	case KOuter:
		sb.WriteString("outer.")
		if e.Name != "" {
			sb.WriteString(e.Name)
		} else {
			sb.WriteString("#" + itoa(e.Col))
		}
	case KSubquery:
		if e.Name == "in" {
			e.Args[0].format(sb)
			sb.WriteString(" IN ")
		}
		switch e.Name {
		case "exists":
			sb.WriteString("EXISTS ")
		case "array":
			sb.WriteString("ARRAY")
		}
		sb.WriteString("(subquery " + itoa(e.Col) + ")")
	case KFuncScan:
		name := e.Fn
		if f := lookupSetKey(e.Fn); f != nil {
			name = f.Name
		}
		switch e.Name {
		case "in":
			e.Args[len(e.Args)-1].format(sb)
			sb.WriteString(" IN ")
		case "exists":
			sb.WriteString("EXISTS ")
		case "array":
			sb.WriteString("ARRAY")
		}
		sb.WriteString("(SELECT ")
		e.Args[e.Col+1].format(sb)
		sb.WriteString(" FROM " + name + "(")
		formatList(sb, e.Args[:e.Col])
		sb.WriteString(")")
		if e.HasElse {
			sb.WriteString(" WITH ORDINALITY")
		}
		sb.WriteString(" WHERE ")
		e.Args[e.Col].format(sb)
		sb.WriteString(")")
	case KFail:
		sb.WriteString("<error: " + e.Name + ">")
	case KUser:
		sb.WriteString(e.Name + "(")
		formatList(sb, e.Args)
		sb.WriteString(")")
	case KRow:
		sb.WriteString("ROW(")
		formatList(sb, e.Args)
		sb.WriteString(")")
	case KField:
		sb.WriteString("(")
		e.Args[0].format(sb)
		sb.WriteString(")." + e.Name)
	case KArray:
		sb.WriteString("ARRAY[")
		formatList(sb, e.Args)
		sb.WriteString("]")
	case KSubscript, KSlice:
		e.Args[0].format(sb)
		sb.WriteString("[")
		if e.Kind == KSubscript {
			e.Args[1].format(sb)
		} else {
			if e.Col&1 == 0 {
				e.Args[1].format(sb)
			}
			sb.WriteString(":")
			if e.Col&2 == 0 {
				e.Args[2].format(sb)
			}
		}
		sb.WriteString("]")
	case KAny, KAll:
		name := e.Fn
		if f := lookupKey(e.Fn); f != nil {
			name = f.Name
		}
		e.Args[0].format(sb)
		sb.WriteString(" " + name + " ")
		if e.Kind == KAny {
			sb.WriteString("ANY (")
		} else {
			sb.WriteString("ALL (")
		}
		e.Args[1].format(sb)
		sb.WriteString(")")
	case KCall:
		f := lookupKey(e.Fn)
		name := e.Fn
		if f != nil {
			name = f.Name
		}
		if f != nil && f.Infix && len(e.Args) == 2 {
			sb.WriteString("(")
			e.Args[0].format(sb)
			sb.WriteString(" " + name + " ")
			e.Args[1].format(sb)
			sb.WriteString(")")
			return
		}
		if f != nil && f.Infix && len(e.Args) == 1 {
			sb.WriteString(name)
			e.Args[0].format(sb)
			return
		}
		sb.WriteString(name)
		sb.WriteString("(")
		formatList(sb, e.Args)
		sb.WriteString(")")
	case KCast:
		e.Args[0].format(sb)
		sb.WriteString("::")
		sb.WriteString(e.Type.String())
	case KAnd, KOr:
		op := " AND "
		if e.Kind == KOr {
			op = " OR "
		}
		sb.WriteString("(")
		for i, a := range e.Args {
			if i > 0 {
				sb.WriteString(op)
			}
			a.format(sb)
		}
		sb.WriteString(")")
	case KNot:
		sb.WriteString("NOT ")
		e.Args[0].format(sb)
	case KIsNull:
		e.Args[0].format(sb)
		sb.WriteString(" IS NULL")
	case KDistinct:
		e.Args[0].format(sb)
		sb.WriteString(" IS DISTINCT FROM ")
		e.Args[1].format(sb)
	case KCase:
		sb.WriteString("CASE")
		n := len(e.Args)
		if e.HasElse {
			n--
		}
		for i := 0; i+1 < n; i += 2 {
			sb.WriteString(" WHEN ")
			e.Args[i].format(sb)
			sb.WriteString(" THEN ")
			e.Args[i+1].format(sb)
		}
		if e.HasElse {
			sb.WriteString(" ELSE ")
			e.Args[n].format(sb)
		}
		sb.WriteString(" END")
	case KCoalesce:
		sb.WriteString("coalesce(")
		formatList(sb, e.Args)
		sb.WriteString(")")
	case KIn:
		e.Args[0].format(sb)
		sb.WriteString(" IN (")
		formatList(sb, e.Args[1:])
		sb.WriteString(")")
	}
}

// formatList writes args separated by ", ".
func formatList(sb *strings.Builder, args []*Expr) {
	for i, a := range args {
		if i > 0 {
			sb.WriteString(", ")
		}
		a.format(sb)
	}
}

func itoa(i int) string {
	return types.NewInt8(int64(i)).Text()
}

// Equal reports whether a and b are the same expression: of the same
// kind, type, columns, constants (numerics of one scale too), functions
// and arguments. A column's name is left out (its index says which it
// is); every other kind's Name counts, since some carry meaning in it (a
// subquery's form).
func Equal(a, b *Expr) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Type != b.Type || a.Col != b.Col || a.Fn != b.Fn || a.HasElse != b.HasElse ||
		len(a.Args) != len(b.Args) || (a.Kind != KCol && a.Name != b.Name) {
		return false
	}
	va, vb := a.Val, b.Val
	if va.K != vb.K || va.I != vb.I || va.X != vb.X || va.S != vb.S || (va.N == nil) != (vb.N == nil) ||
		(va.N != nil && (va.N.Cmp(vb.N) != 0 || va.N.Exponent != vb.N.Exponent)) {
		return false
	}
	for i := range a.Args {
		if !Equal(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}
