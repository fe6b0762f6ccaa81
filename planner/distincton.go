package planner

import (
	"strconv"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// distinctOnRank is the ranking column distinctOnAsRank adds.
const distinctOnRank = "_distinct_on"

// distinctOnAsRank rewrites SELECT DISTINCT ON (keys) as what it means,
// the first row of each group of equal keys in ORDER BY's order:
//
//	SELECT DISTINCT ON (k) k, v FROM t WHERE c ORDER BY k, v DESC LIMIT 5
//	→ SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS _distinct_on
//	                    FROM t WHERE c) t
//	  WHERE _distinct_on = 1 ORDER BY k, v DESC LIMIT 5
//
// so bounded queries run it as a window function and views as a top-N
// (the latest row per key). As in PostgreSQL, the keys must be the
// leading ORDER BY terms (42P10); keys and ORDER BY terms may name output
// columns by name or position. Over a join or several FROM items, the
// rows are first a subquery of them (fromAsSubquery). Aggregation is
// 0A000 (rank in a subquery instead).
func distinctOnAsRank(b *builder, sel *sql.Select) (*sql.Select, error) {
	if len(sel.From) != 1 || itemName(sel.From[0]) == "" {
		// over a join: over a subquery of the joined rows
		from, err := fromAsSubquery(b.cat, sel, distinctOnRank+"_from")
		if err != nil {
			return nil, err
		}
		sel = from
	}
	alias := itemName(sel.From[0])
	if alias == "" {
		return nil, pgerror.NotSupported("DISTINCT ON over this FROM item").
			WithHint("Select its rows in a subquery with an alias, and take DISTINCT ON of it.")
	}
	if sel.Distinct || aggregates(sel) {
		return nil, pgerror.NotSupported("DISTINCT ON with GROUP BY, aggregates or DISTINCT").
			WithHint("Aggregate in a subquery, and take DISTINCT ON of it.")
	}
	_, in, err := b.buildTable(sel.From[0])
	if err != nil {
		return nil, err
	}
	items, err := expandStars(in, sel.Items)
	if err != nil {
		return nil, err
	}
	// term resolves a key or ORDER BY term naming an output column (by
	// position or name) to the select item's expression.
	term := func(e sql.Expr) sql.Expr {
		switch t := e.(type) {
		case *sql.Literal:
			if t.Value.K.IsInteger() && t.Value.I >= 1 && int(t.Value.I) <= len(items) {
				return items[t.Value.I-1].Expr
			}
		case *sql.ColumnRef:
			if t.Table == "" {
				if _, err := in.resolve("", t.Name); err != nil {
					for _, it := range items {
						if it.Alias == t.Name {
							return it.Expr
						}
					}
				}
			}
		}
		return e
	}
	keys := make([]sql.Expr, len(sel.DistinctOn))
	for i, k := range sel.DistinctOn {
		keys[i] = term(k)
	}
	var rest []sql.OrderItem
	if len(sel.OrderBy) > 0 {
		if len(sel.OrderBy) < len(keys) {
			return nil, errDistinctOnOrder
		}
		lead := map[string]bool{}
		for _, o := range sel.OrderBy[:len(keys)] {
			lead[fingerprint(term(o.Expr))] = true
		}
		for _, k := range keys {
			if !lead[fingerprint(k)] {
				return nil, errDistinctOnOrder
			}
		}
		for _, o := range sel.OrderBy[len(keys):] {
			rest = append(rest, sql.OrderItem{Expr: term(o.Expr), Desc: o.Desc, NullsFirst: o.NullsFirst})
		}
	}
	// Terms other than columns are computed by a subquery first (a
	// view's top-N partitions and orders by its input's columns).
	computed := []sql.SelectItem{{Expr: &sql.Star{}}}
	column := func(e sql.Expr, name string) sql.Expr {
		if c, ok := e.(*sql.ColumnRef); ok {
			return c
		}
		computed = append(computed, sql.SelectItem{Expr: e, Alias: name})
		return &sql.ColumnRef{Name: name}
	}
	for i := range keys {
		keys[i] = column(keys[i], distinctOnRank+"_k"+strconv.Itoa(i+1))
	}
	for i := range rest {
		rest[i].Expr = column(rest[i].Expr, distinctOnRank+"_o"+strconv.Itoa(i+1))
	}
	from, where := sel.From[0], sel.Where
	if len(computed) > 1 {
		from = &sql.DerivedTable{Query: &sql.Select{Items: computed, From: sel.From, Where: sel.Where}, Alias: alias}
		where = nil
	}
	inner := &sql.Select{
		Items: []sql.SelectItem{{Expr: &sql.Star{}}, {
			Expr:  &sql.FuncCall{Name: "row_number", Over: &sql.WindowSpec{PartitionBy: keys, OrderBy: rest}},
			Alias: distinctOnRank,
		}},
		From: []sql.TableExpr{from}, Where: where,
	}
	return &sql.Select{
		Items:   items,
		From:    []sql.TableExpr{&sql.DerivedTable{Query: inner, Alias: alias}},
		Where:   &sql.Binary{Op: "=", L: &sql.ColumnRef{Name: distinctOnRank}, R: &sql.Literal{Value: types.NewInt(types.Int4, 1)}},
		OrderBy: sel.OrderBy, Limit: sel.Limit, Offset: sel.Offset,
	}, nil
}

var errDistinctOnOrder = pgerror.New(pgerror.InvalidColumnReference, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
