package planner

import (
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// InsertPlan writes rows into a stream. The source is a bounded plan
// whose output columns are already cast to the stream's column types, in
// the stream's column order (columns not listed are NULL).
type InsertPlan struct {
	Rel        *catalog.Relation
	Source     plan.Node
	ParamTypes []types.Type
}

// PlanInsert plans INSERT INTO … VALUES | SELECT.
func PlanInsert(cat Catalog, ins *sql.Insert, paramTypes []types.Type) (*InsertPlan, error) {
	b := &builder{cat: cat, params: append([]types.Type(nil), paramTypes...)}
	if ins.Table.Schema != "" && ins.Table.Schema != "public" {
		return nil, pgerror.New(pgerror.InsufficientPrivilege, "cannot insert into %s.%s", ins.Table.Schema, ins.Table.Name)
	}
	rel, err := cat.Lookup("", ins.Table.Name)
	if err != nil {
		return nil, err
	}
	if rel.Kind != catalog.Stream {
		return nil, pgerror.New(pgerror.WrongObjectType, "cannot insert into %s %q: only streams accept INSERT", rel.Kind, rel.Name)
	}
	if rel.SQL != "" {
		return nil, pgerror.New(pgerror.WrongObjectType, "cannot insert into stream %q: it is the output of a continuous query", rel.Name)
	}
	// target[i] is the stream column the i-th inserted value goes to.
	var target []int
	if len(ins.Columns) == 0 {
		for i, c := range rel.Columns {
			if !c.Hidden {
				target = append(target, i)
			}
		}
	} else {
		seen := map[int]bool{}
		for _, name := range ins.Columns {
			i := rel.ColumnIndex(name)
			if i < 0 || rel.Columns[i].Hidden {
				return nil, pgerror.New(pgerror.UndefinedColumn, "column %q of relation %q does not exist", name, rel.Name)
			}
			if seen[i] {
				return nil, pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", name)
			}
			seen[i] = true
			target = append(target, i)
		}
	}
	width := len(rel.Columns)
	var src plan.Node
	if ins.Values != nil {
		rows := make([][]*expr.Expr, len(ins.Values))
		empty := &exprCtx{scope: &scope{}, what: "VALUES", noAggs: true}
		for r, vals := range ins.Values {
			if len(vals) > len(target) {
				return nil, pgerror.New(pgerror.SyntaxError, "INSERT has more expressions than target columns")
			}
			if len(vals) < len(target) {
				return nil, pgerror.New(pgerror.SyntaxError, "INSERT has more target columns than expressions")
			}
			row := make([]*expr.Expr, width)
			for i := range row {
				row[i] = expr.TypedNull(rel.Columns[i].Type)
			}
			for i, v := range vals {
				x, err := b.build(empty, v)
				if err != nil {
					return nil, err
				}
				col := rel.Columns[target[i]]
				x = b.inferParam(x, col.Type)
				if row[target[i]], err = assignCast(x, col); err != nil {
					return nil, err
				}
			}
			rows[r] = row
		}
		src = valuesNode(rows)
	} else {
		node, sc, err := b.buildQuery(ins.Query.Body)
		if err != nil {
			return nil, err
		}
		cols := sc.outColumns()
		if len(cols) != len(target) {
			return nil, pgerror.New(pgerror.SyntaxError, "INSERT has %d target columns but the query returns %d", len(target), len(cols))
		}
		exprs := make([]*expr.Expr, width)
		for i := range exprs {
			exprs[i] = expr.TypedNull(rel.Columns[i].Type)
		}
		for i, c := range cols {
			x, err := assignCast(expr.Col(i, c.Type, c.Name), rel.Columns[target[i]])
			if err != nil {
				return nil, err
			}
			exprs[target[i]] = x
		}
		src = appendSteps(node, plan.Step{Op: plan.OpProject, Exprs: exprs, Names: rel.ColumnNames()})
	}
	return &InsertPlan{Rel: rel, Source: src, ParamTypes: b.finalParams()}, nil
}

func assignCast(x *expr.Expr, col catalog.Column) (*expr.Expr, error) {
	out, err := expr.Coerce(x, col.Type, true)
	if err != nil {
		if pgerror.CodeOf(err) != pgerror.DatatypeMismatch {
			return nil, err // the value itself is bad (22P02, 22003, …)
		}
		return nil, pgerror.New(pgerror.DatatypeMismatch, "column %q is of type %s but expression is of type %s", col.Name, col.Type, x.Type).
			WithHint("You will need to rewrite or cast the expression.")
	}
	return out, nil
}

// valuesNode evaluates constant rows at run time (so that parameters and
// now() bind per execution) by projecting them over one empty row each.
func valuesNode(rows [][]*expr.Expr) plan.Node {
	// Rows of constants (the common case) need no evaluation per execution.
	if consts, ok := constRows(rows); ok {
		return &plan.Values{Rows: consts}
	}
	inputs := make([]plan.Node, len(rows))
	for i, r := range rows {
		inputs[i] = &plan.Chain{
			Input: &plan.Values{Rows: []types.Row{{}}},
			Steps: []plan.Step{{Op: plan.OpProject, Exprs: r}},
		}
	}
	if len(inputs) == 1 {
		return inputs[0]
	}
	return &plan.UnionAll{Inputs: inputs}
}

func constRows(rows [][]*expr.Expr) ([]types.Row, bool) {
	out := make([]types.Row, len(rows))
	for r, exprs := range rows {
		row := make(types.Row, len(exprs))
		for i, x := range exprs {
			if x.Kind != expr.KConst {
				return nil, false
			}
			row[i] = x.Val
		}
		out[r] = row
	}
	return out, true
}
