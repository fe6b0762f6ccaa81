package planner

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// windowAggsAsJoins rewrites aggregate window functions over whole
// partitions in a materialized view's select list (sum(x) OVER
// (PARTITION BY k), count(*) OVER ()) as what they are, each row joined
// with its partition's aggregate: one hidden grouped view per PARTITION
// BY list, over the same FROM and WHERE, LEFT JOINed on the partition
// keys:
//
//	SELECT id, amount / sum(amount) OVER (PARTITION BY cust) AS share FROM orders WHERE amount > 0
//	→ SELECT id, amount / _w1._a1 AS share FROM orders LEFT JOIN
//	    (SELECT cust AS _p1, sum(amount) AS _a1 FROM orders WHERE amount > 0 GROUP BY cust) _w1
//	    ON coalesce(cust, 0) = coalesce(_w1._p1, 0) AND (cust IS NULL) = (_w1._p1 IS NULL)
//	  WHERE amount > 0
//
// PARTITION BY puts NULL keys together, as GROUP BY does; a join's
// equality does not, so each key is joined as the pair (is it NULL, its
// value or its type's zero), never NULL. When a row comes or goes, its
// partition's aggregate changes, and the join takes back every row of
// the partition with the old value and puts it in with the new one.
//
// A window with ORDER BY or a frame (running totals) is refused; so is
// one in a grouped or DISTINCT query. Ranking and other window functions
// are left as they are (the top-N recognises the ranking ones).
func windowAggsAsJoins(cat Catalog, sel *sql.Select) (*sql.Select, error) {
	var calls []*sql.FuncCall
	other := false
	for _, it := range sel.Items {
		walkExpr(it.Expr, func(e sql.Expr) bool {
			if f, ok := e.(*sql.FuncCall); ok && f.Over != nil {
				if operators.IsAggregate(f.Name) {
					calls = append(calls, f)
				} else {
					other = true
				}
				return false
			}
			return true
		})
	}
	if len(calls) == 0 || other || len(sel.From) != 1 {
		return sel, nil
	}
	if sel.Distinct || len(sel.DistinctOn) > 0 || len(sel.GroupBy) > 0 || sel.Having != nil || anyAggregate(sel.Items) {
		return nil, pgerror.NotSupported("a window function over a grouped or DISTINCT query in a materialized view").
			WithHint("Group in a subquery, and compute the window function over its rows.")
	}
	if hasSubqueryExpr(sel) {
		return nil, pgerror.NotSupported("a window function with a subquery in a materialized view")
	}
	for _, f := range calls {
		if len(f.Over.OrderBy) > 0 || f.Over.Frame != nil {
			return nil, pgerror.NotSupported("a window function with ORDER BY or a frame in a materialized view").
				WithHint("Over whole partitions (OVER (PARTITION BY …) without ORDER BY), aggregates run in views.")
		}
	}
	from := sel.From[0]
	star := itemName(from)
	for _, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok && st.Table == "" && star == "" {
			return nil, pgerror.NotSupported("* with a window function over a join in a materialized view").
				WithHint("Name the columns, or qualify the star (t.*).")
		}
	}
	b := &builder{cat: cat}
	_, sc, err := b.buildFrom(sel.From)
	if err != nil {
		return nil, err
	}
	// one hidden view per PARTITION BY list
	type partition struct {
		alias string
		inner *sql.Select
		on    sql.Expr
	}
	var parts []*partition
	byKeys := map[string]*partition{}
	value := map[*sql.FuncCall]sql.Expr{}
	for _, f := range calls {
		keys := make([]string, len(f.Over.PartitionBy))
		for i, e := range f.Over.PartitionBy {
			keys[i] = sql.FormatExpr(e)
		}
		p := byKeys[strings.Join(keys, "\x00")]
		if p == nil {
			p = &partition{alias: "_w" + strconv.Itoa(len(parts)+1), inner: &sql.Select{From: sel.From, Where: sel.Where}}
			typed, err := b.buildAll(&exprCtx{scope: sc, what: "PARTITION BY", noAggs: true}, f.Over.PartitionBy)
			if err != nil {
				return nil, err
			}
			var on sql.Expr = &sql.Literal{Value: types.NewBool(true)} // OVER (): one partition
			for i, e := range f.Over.PartitionBy {
				name := "_p" + strconv.Itoa(i+1)
				p.inner.Items = append(p.inner.Items, sql.SelectItem{Expr: e, Alias: name})
				p.inner.GroupBy = append(p.inner.GroupBy, e)
				zero, ok := zeroOf(typed[i].Type)
				if !ok {
					return nil, pgerror.NotSupported("PARTITION BY a %s in a materialized view", typed[i].Type).
						WithHint("Partition by a number, text, boolean, date, time or interval.")
				}
				mine, theirs := e, sql.Expr(&sql.ColumnRef{Table: p.alias, Name: name})
				eq := &sql.Binary{Op: "and",
					L: &sql.Binary{Op: "=", L: coalesced(mine, zero), R: coalesced(theirs, zero)},
					R: &sql.Binary{Op: "=", L: &sql.IsNull{X: mine}, R: &sql.IsNull{X: theirs}}}
				if i == 0 {
					on = eq
				} else {
					on = &sql.Binary{Op: "and", L: on, R: eq}
				}
			}
			p.on = on
			byKeys[strings.Join(keys, "\x00")] = p
			parts = append(parts, p)
		}
		name := "_a" + strconv.Itoa(len(p.inner.Items)+1)
		agg := *f
		agg.Over = nil
		p.inner.Items = append(p.inner.Items, sql.SelectItem{Expr: &agg, Alias: name})
		value[f] = &sql.ColumnRef{Table: p.alias, Name: name}
	}
	out := *sel
	out.Items = make([]sql.SelectItem, len(sel.Items))
	for i, it := range sel.Items {
		if st, ok := it.Expr.(*sql.Star); ok && st.Table == "" {
			out.Items[i] = sql.SelectItem{Expr: &sql.Star{Table: star}}
			continue
		}
		x := sql.Rewrite(it.Expr, func(e sql.Expr) (sql.Expr, bool) {
			if f, ok := e.(*sql.FuncCall); ok && f.Over != nil {
				return value[f], true
			}
			return nil, false
		})
		out.Items[i] = sql.SelectItem{Expr: x, Alias: it.Alias}
		if it.Alias == "" && x != it.Expr {
			out.Items[i].Alias = columnName(it.Expr) // the name the window function gave the column
		}
	}
	for _, p := range parts {
		from = &sql.Join{Kind: "left", Left: from, Right: &sql.DerivedTable{Query: p.inner, Alias: p.alias}, On: p.on}
	}
	out.From = []sql.TableExpr{from}
	return &out, nil
}

func coalesced(e, zero sql.Expr) sql.Expr {
	return &sql.FuncCall{Name: "coalesce", Args: []sql.Expr{e, zero}}
}

// zeroOf is a constant of type t, to stand for NULL in a join key that
// also says whether the value was NULL.
func zeroOf(t types.Type) (sql.Expr, bool) {
	text := ""
	switch {
	case t.IsNumeric(), t == types.Interval:
		text = "0"
	case t.IsString(), t == types.Bytea:
	case t == types.Bool:
		text = "false"
	case t.IsTime():
		text = "2000-01-01"
	default:
		return nil, false
	}
	return &sql.Cast{X: &sql.Literal{Value: types.NewText(text)}, Type: t, TypeName: t.String()}, true
}
