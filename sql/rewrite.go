package sql

import "slices"

// Rewrite returns e with nodes replaced: f sees each node before its
// children and returns (replacement, true) to put the replacement in the
// node's place without visiting the children, or (_, false) to go on
// into them. A node is copied only when something below it changed, so
// an expression f leaves alone is returned as it was, shared. The
// queries of subqueries are not entered (f sees the *Subquery, *In and
// *Quantified nodes that hold them).
func Rewrite(e Expr, f func(Expr) (Expr, bool)) Expr {
	if e == nil {
		return nil
	}
	if y, ok := f(e); ok {
		return y
	}
	all := func(es []Expr) []Expr {
		var out []Expr
		for i, x := range es {
			if y := Rewrite(x, f); y != x {
				if out == nil {
					out = slices.Clone(es)
				}
				out[i] = y
			}
		}
		if out == nil {
			return es
		}
		return out
	}
	order := func(items []OrderItem) []OrderItem {
		var out []OrderItem
		for i, o := range items {
			if y := Rewrite(o.Expr, f); y != o.Expr {
				if out == nil {
					out = slices.Clone(items)
				}
				out[i].Expr = y
			}
		}
		if out == nil {
			return items
		}
		return out
	}
	same := func(a, b []Expr) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }
	sameOrder := func(a, b []OrderItem) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }
	switch x := e.(type) {
	case *Unary:
		if y := Rewrite(x.X, f); y != x.X {
			c := *x
			c.X = y
			return &c
		}
	case *Binary:
		l, r := Rewrite(x.L, f), Rewrite(x.R, f)
		if l != x.L || r != x.R {
			c := *x
			c.L, c.R = l, r
			return &c
		}
	case *IsNull:
		if y := Rewrite(x.X, f); y != x.X {
			c := *x
			c.X = y
			return &c
		}
	case *IsBool:
		if y := Rewrite(x.X, f); y != x.X {
			c := *x
			c.X = y
			return &c
		}
	case *Between:
		a, lo, hi := Rewrite(x.X, f), Rewrite(x.Lo, f), Rewrite(x.Hi, f)
		if a != x.X || lo != x.Lo || hi != x.Hi {
			c := *x
			c.X, c.Lo, c.Hi = a, lo, hi
			return &c
		}
	case *In:
		a, list := Rewrite(x.X, f), all(x.List)
		if a != x.X || !same(list, x.List) {
			c := *x
			c.X, c.List = a, list
			return &c
		}
	case *Like:
		a, p, esc := Rewrite(x.X, f), Rewrite(x.Pattern, f), Rewrite(x.Escape, f)
		if a != x.X || p != x.Pattern || esc != x.Escape {
			c := *x
			c.X, c.Pattern, c.Escape = a, p, esc
			return &c
		}
	case *FuncCall:
		args, filter, ob := all(x.Args), Rewrite(x.Filter, f), order(x.OrderBy)
		var over *WindowSpec
		if x.Over != nil {
			part, wob := all(x.Over.PartitionBy), order(x.Over.OrderBy)
			if !same(part, x.Over.PartitionBy) || !sameOrder(wob, x.Over.OrderBy) {
				w := *x.Over
				w.PartitionBy, w.OrderBy = part, wob
				over = &w
			}
		}
		if !same(args, x.Args) || filter != x.Filter || !sameOrder(ob, x.OrderBy) || over != nil {
			c := *x
			c.Args, c.Filter, c.OrderBy = args, filter, ob
			if over != nil {
				c.Over = over
			}
			return &c
		}
	case *Cast:
		if y := Rewrite(x.X, f); y != x.X {
			c := *x
			c.X = y
			return &c
		}
	case *Case:
		op, els := Rewrite(x.Operand, f), Rewrite(x.Else, f)
		changed := op != x.Operand || els != x.Else
		whens := make([]When, len(x.Whens))
		for i, w := range x.Whens {
			whens[i] = When{Cond: Rewrite(w.Cond, f), Result: Rewrite(w.Result, f)}
			changed = changed || whens[i].Cond != w.Cond || whens[i].Result != w.Result
		}
		if changed {
			return &Case{Operand: op, Whens: whens, Else: els}
		}
	case *RowExpr:
		if items := all(x.Items); !same(items, x.Items) {
			return &RowExpr{Items: items}
		}
	case *GroupingSets:
		if items := all(x.Items); !same(items, x.Items) {
			return &GroupingSets{Kind: x.Kind, Items: items}
		}
	case *ArrayExpr:
		if items := all(x.Items); !same(items, x.Items) {
			return &ArrayExpr{Items: items}
		}
	case *FieldSelect:
		if y := Rewrite(x.X, f); y != x.X {
			c := *x
			c.X = y
			return &c
		}
	case *Subscript:
		a, i, lo, hi := Rewrite(x.X, f), Rewrite(x.Index, f), Rewrite(x.Lo, f), Rewrite(x.Hi, f)
		if a != x.X || i != x.Index || lo != x.Lo || hi != x.Hi {
			c := *x
			c.X, c.Index, c.Lo, c.Hi = a, i, lo, hi
			return &c
		}
	case *Quantified:
		a, arr := Rewrite(x.X, f), Rewrite(x.Array, f)
		if a != x.X || arr != x.Array {
			c := *x
			c.X, c.Array = a, arr
			return &c
		}
	}
	return e
}
