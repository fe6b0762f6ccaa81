package planner

import (
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// A UNION ALL whose branches are not all rows of streams (an aggregate,
// a DISTINCT, a join, a view, a top-N) is a view of signed rows: each
// branch's rows come and go as its input's do, and the union is every
// branch's rows side by side. The nester (hideUnion) first makes each
// branch that is more than a filter and projection of one stream or
// view a hidden view of its own; planUnionView then runs one stage per
// branch, reading a stream's rows or a view's changes (a changelog step
// makes signed rows of its table), casting them to the union's column
// types and writing them into one internal topic, and one stage that
// writes that topic's rows into the view. A row's key in the view is
// where it came from: its branch and its input record (a stream's
// partition and offset, a view's record key), so equal rows of two
// branches, or of one, stay apart as they do in the bounded SELECT.

// Hidden key columns of a union view's rows.
const (
	unionBranchCol = "_union_branch"
	unionPartCol   = "_src_partition"
	unionOffCol    = "_src_offset"
	unionKeyCol    = "_src_key"
)

// flattenUnionAll lists the branches of a tree of UNION ALLs: each
// SELECT, and each other set operation (a UNION, INTERSECT or EXCEPT,
// which a view runs as a hidden view of its own), left to right.
func flattenUnionAll(e sql.QueryExpr) []sql.QueryExpr {
	op, ok := plainUnionAll(e)
	if !ok {
		return []sql.QueryExpr{e}
	}
	return append(flattenUnionAll(op.Left), flattenUnionAll(op.Right)...)
}

// plainUnionAll says whether q is a UNION ALL without ORDER BY, LIMIT or
// OFFSET of its own.
func plainUnionAll(q sql.QueryExpr) (*sql.SetOp, bool) {
	op, ok := q.(*sql.SetOp)
	return op, ok && op.Op == "union" && op.All && len(op.OrderBy) == 0 && op.Limit == nil && op.Offset == nil
}

// rowBranch says whether a union's branch is a filter and projection of
// one stream's or view's rows, which a union stage runs itself, and
// which input it reads.
func rowBranch(cat Catalog, q sql.QueryExpr) (*catalog.Relation, bool) {
	sel, ok := q.(*sql.Select)
	if !ok || len(sel.From) != 1 || sel.Distinct || len(sel.DistinctOn) > 0 || aggregates(sel) ||
		len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil || hasWindowCall(sel) || hasSubqueryExpr(sel) {
		return nil, false
	}
	t, ok := sel.From[0].(*sql.TableName)
	if !ok {
		return nil, false
	}
	in, _, err := changelogInput(cat, t)
	if err != nil {
		return nil, false
	}
	chain, _, err := statelessSelect(cat, sel, "a UNION ALL")
	if err != nil {
		return nil, false
	}
	if _, ok := chain.Input.(*plan.Source); !ok {
		return nil, false
	}
	return in, true
}

// streamRows says whether every branch is rows of a stream: the union
// is then a hidden stream (planUnionAll), whose readers keep a stream
// reader's fast paths.
func streamRows(cat Catalog, branches []sql.QueryExpr) bool {
	for _, b := range branches {
		in, ok := rowBranch(cat, b)
		if !ok || in.Kind != catalog.Stream {
			return false
		}
	}
	return true
}

// planUnionView plans a materialized view that is the UNION ALL of
// branches, each a filter and projection of one stream's or view's rows
// (rowBranch).
func planUnionView(cat Catalog, ca *sql.CreateAs, branches []*sql.Select) (*Continuous, error) {
	type branch struct {
		in    *catalog.Relation
		steps []plan.Step
		cols  []Column
	}
	bs := make([]branch, len(branches))
	cols := make([][]Column, len(branches))
	streams, views := false, false
	for i, sel := range branches {
		in, _, err := changelogInput(cat, sel.From[0].(*sql.TableName))
		if err != nil {
			return nil, err
		}
		chain, out, err := statelessSelect(cat, sel, "a UNION ALL in a materialized view")
		if err != nil {
			return nil, err
		}
		steps := chain.Steps
		if len(steps) == 0 || steps[len(steps)-1].Op != plan.OpProject {
			return nil, pgerror.NotSupported("this branch of a UNION ALL in a materialized view")
		}
		bs[i] = branch{in: in, steps: steps, cols: out.outColumns()}
		cols[i] = bs[i].cols
		streams = streams || in.Kind == catalog.Stream
		views = views || in.Kind == catalog.MaterializedView
	}
	outTypes, err := unionTypes(cols)
	if err != nil {
		return nil, err
	}
	// The view's columns, then its hidden key columns: the branch, and
	// the input record as its kind of input names it.
	var viewCols []catalog.Column
	for c, t := range outTypes {
		viewCols = append(viewCols, catalog.Column{Name: bs[0].cols[c].Name, Type: t})
	}
	if err := uniqueColumns(viewCols); err != nil {
		return nil, err
	}
	key := []int{len(viewCols)}
	viewCols = append(viewCols, catalog.Column{Name: unionBranchCol, Type: types.Int4, Hidden: true})
	if streams {
		key = append(key, len(viewCols), len(viewCols)+1)
		viewCols = append(viewCols, catalog.Column{Name: unionPartCol, Type: types.Int4, Hidden: true},
			catalog.Column{Name: unionOffCol, Type: types.Int8, Hidden: true})
	}
	if views {
		key = append(key, len(viewCols))
		viewCols = append(viewCols, catalog.Column{Name: unionKeyCol, Type: types.Bytea, Hidden: true})
	}
	names := make([]string, 0, len(viewCols)+1)
	for _, c := range viewCols {
		names = append(names, c.Name)
	}
	names = append(names, "_sign")
	// The union's rows, signed, keyed by the view's key: a key's rows
	// all come from one branch's input partition, so they stay in order.
	union := plan.Stream{Name: ca.Name + ".union", Topic: InternalTopic(ca.Name, "union"), Format: types.InternalFormat, Columns: names, Key: key}
	for _, c := range viewCols {
		union.Types = append(union.Types, c.Type)
	}
	union.Types = append(union.Types, types.Int8)

	errs := ErrorsRelation(ca.Name)
	out := &Continuous{Errors: errs, Topology: &plan.Topology{Errors: errs.Name, Internal: []plan.Stream{union}}}
	for i, br := range bs {
		proj := br.steps[len(br.steps)-1]
		exprs := make([]*expr.Expr, 0, len(names))
		for c, t := range outTypes {
			x, err := expr.Coerce(proj.Exprs[c], t, false)
			if err != nil {
				return nil, err
			}
			exprs = append(exprs, x)
		}
		exprs = append(exprs, expr.Const(types.NewInt(types.Int4, int64(i))))
		n := len(br.in.Columns)
		steps := br.steps[:len(br.steps)-1]
		sign := expr.Const(types.NewInt8(1))
		if br.in.Kind == catalog.MaterializedView {
			steps = append([]plan.Step{changelogStep(br.in)}, steps...)
			sign = signColumn(br.in)
		}
		if streams {
			if br.in.Kind == catalog.Stream {
				exprs = append(exprs, expr.Col(n+1, types.Int4, "_partition"), expr.Col(n+2, types.Int8, "_offset"))
			} else {
				exprs = append(exprs, expr.TypedNull(types.Int4), expr.TypedNull(types.Int8))
			}
		}
		if views {
			if br.in.Kind == catalog.MaterializedView {
				exprs = append(exprs, expr.Col(n, types.Bytea, "_key"))
			} else {
				exprs = append(exprs, expr.TypedNull(types.Bytea))
			}
		}
		exprs = append(exprs, sign)
		steps = append(append([]plan.Step(nil), steps...), plan.Step{Op: plan.OpProject, Exprs: exprs, Names: names})
		out.Topology.Stages = append(out.Topology.Stages, plan.Stage{Name: "u" + strconv.Itoa(i), Inputs: []string{br.in.Name},
			Output: union.Name, Steps: steps, SourceBase: int32(i) << 16})
		out.Topology.Internal[0].Partitions = max(out.Topology.Internal[0].Partitions, br.in.Partitions, 1)
		if !containsRel(out.Inputs, br.in.Name) {
			out.Inputs = append(out.Inputs, br.in)
		}
	}
	pass := make([]*expr.Expr, len(names))
	for c, t := range union.Types {
		pass[c] = expr.Col(c, t, names[c])
	}
	out.Topology.Stages = append(out.Topology.Stages, plan.Stage{Name: "union", Inputs: []string{union.Name},
		Output: ca.Name + ChangesSuffix, Steps: []plan.Step{{Op: plan.OpProject, Exprs: pass, Names: names}}})
	last := &out.Topology.Stages[len(out.Topology.Stages)-1]
	if err := viewOutput(ca, out, last, viewCols, key, out.Topology.Internal[0].Partitions); err != nil {
		return nil, err
	}
	last.Changes.Sign = len(viewCols)
	return out, bridgeInputs(out, ca.Name)
}

// planViewUnion plans a materialized view that is a UNION ALL of views'
// rows as the union itself, its branches' hidden views first; it
// returns nil for any other set operation, and for a union of streams'
// rows (a view of a hidden stream: unionAsSubquery).
func planViewUnion(cat Catalog, ca *sql.CreateAs, so *sql.SetOp) (*Continuous, error) {
	if _, ok := plainUnionAll(so); !ok {
		return nil, nil
	}
	qs := flattenUnionAll(so)
	if streamRows(cat, qs) {
		return nil, nil
	}
	ns := &nester{cat: &overlay{Catalog: cat, views: map[string]*catalog.Relation{}}, name: ca.Name}
	branches, err := ns.unionBranches(qs)
	if err != nil {
		return nil, err
	}
	c, err := planUnionView(ns.cat, ca, branches)
	if err != nil {
		return nil, err
	}
	return c, ns.embed(c)
}

// containsRel says whether rels holds a relation named name.
func containsRel(rels []*catalog.Relation, name string) bool {
	for _, r := range rels {
		if r.Name == name {
			return true
		}
	}
	return false
}
