package planner

import (
	"strconv"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// planUnionAll plans CREATE STREAM s AS SELECT … FROM a UNION ALL SELECT …
// FROM b …: one stage per branch, each filtering and projecting its own
// input (cast to the union's column types) straight into the output
// stream. Branches run side by side; the output interleaves them, and a
// reader with a watermark orders them by event time as it would any
// stream's partitions.
func planUnionAll(cat Catalog, ca *sql.CreateAs, q *sql.SetOp) (*Continuous, error) {
	if ca.Kind != sql.KindStream {
		return nil, pgerror.NotSupported("UNION ALL into a %s (write the union to a stream, then aggregate that stream)", ca.Kind)
	}
	if ca.Query.Emit != sql.EmitDefault {
		return nil, pgerror.New(pgerror.SyntaxError, "EMIT applies to windowed aggregations")
	}
	var branches []*sql.Select
	var flatten func(e sql.QueryExpr) error
	flatten = func(e sql.QueryExpr) error {
		switch e := e.(type) {
		case *sql.Select:
			branches = append(branches, e)
			return nil
		case *sql.SetOp:
			if e.Op != "union" || !e.All {
				return pgerror.NotSupported("%s in continuous queries (only UNION ALL)", setOpName(e))
			}
			if len(e.OrderBy) > 0 || e.Limit != nil || e.Offset != nil {
				return pgerror.New(pgerror.FeatureNotSupported, "ORDER BY and LIMIT make no sense on an unbounded stream")
			}
			if err := flatten(e.Left); err != nil {
				return err
			}
			return flatten(e.Right)
		}
		return pgerror.NotSupported("this query in a UNION ALL of streams")
	}
	if err := flatten(q); err != nil {
		return nil, err
	}
	type branch struct {
		in    *catalog.Relation
		steps []operators.Step
		cols  []Column
	}
	bs := make([]branch, len(branches))
	for i, sel := range branches {
		if len(sel.From) != 1 {
			return nil, pgerror.NotSupported("joins inside a UNION ALL of streams")
		}
		t, ok := sel.From[0].(*sql.TableName)
		if !ok {
			return nil, pgerror.NotSupported("%s inside a UNION ALL of streams", fromKind(sel.From[0]))
		}
		if len(sel.GroupBy) > 0 || sel.Having != nil || anyAggregate(sel.Items) || sel.Distinct {
			return nil, pgerror.NotSupported("aggregation or DISTINCT inside a UNION ALL of streams")
		}
		if len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil {
			return nil, pgerror.New(pgerror.FeatureNotSupported, "ORDER BY and LIMIT make no sense on an unbounded stream")
		}
		in, _, err := streamInput(cat, t)
		if err != nil {
			return nil, err
		}
		chain, out, err := statelessSelect(cat, sel, "a UNION ALL of streams")
		if err != nil {
			return nil, err
		}
		if _, ok := chain.Input.(*engine.Source); !ok {
			return nil, pgerror.NotSupported("this query in a UNION ALL of streams")
		}
		bs[i] = branch{in: in, steps: chain.Steps, cols: out.outColumns()}
		if len(bs[i].cols) != len(bs[0].cols) {
			return nil, pgerror.New(pgerror.SyntaxError, "each UNION query must have the same number of columns")
		}
	}
	// The union's column types: PostgreSQL resolves them pairwise, left
	// to right.
	outTypes := make([]types.Type, len(bs[0].cols))
	for c := range outTypes {
		t := bs[0].cols[c].Type
		for _, br := range bs[1:] {
			nt, err := expr.CommonType(t, br.cols[c].Type)
			if err != nil {
				return nil, pgerror.New(pgerror.DatatypeMismatch, "UNION types %s and %s cannot be matched", t, br.cols[c].Type)
			}
			t = nt
		}
		if t == types.Null || t == types.Unknown {
			t = types.Text
		}
		outTypes[c] = t
	}
	rel := &catalog.Relation{Name: ca.Name, Kind: catalog.Stream, Topic: ca.Name, Format: "json"}
	names := make([]string, len(outTypes))
	for c, t := range outTypes {
		names[c] = bs[0].cols[c].Name
		rel.Columns = append(rel.Columns, catalog.Column{Name: names[c], Type: t})
	}
	if err := uniqueColumns(rel.Columns); err != nil {
		return nil, err
	}
	errs := ErrorsRelation(ca.Name)
	topo := &engine.Topology{Errors: errs.Name}
	c := &Continuous{Rel: rel, Errors: errs, Topology: topo}
	for i, br := range bs {
		casts := make([]*expr.Expr, len(outTypes))
		for col, t := range outTypes {
			x, err := expr.Coerce(expr.Col(col, br.cols[col].Type, br.cols[col].Name), t, false)
			if err != nil {
				return nil, err
			}
			casts[col] = x
		}
		steps := append(append([]operators.Step(nil), br.steps...), operators.Step{Op: operators.OpProject, Exprs: casts, Names: names})
		topo.Stages = append(topo.Stages, engine.Stage{Name: "u" + strconv.Itoa(i), Inputs: []string{br.in.Name}, Output: rel.Name, Steps: steps})
		dup := false
		for _, in := range c.Inputs {
			dup = dup || in.Name == br.in.Name
		}
		if !dup {
			c.Inputs = append(c.Inputs, br.in)
		}
		rel.Partitions = max(rel.Partitions, br.in.Partitions)
	}
	if err := applyOutputOptions(rel, ca.Options); err != nil {
		return nil, err
	}
	return c, bridgeInputs(c, ca.Name)
}

func setOpName(e *sql.SetOp) string {
	name := map[string]string{"union": "UNION", "intersect": "INTERSECT", "except": "EXCEPT"}[e.Op]
	if e.All {
		name += " ALL"
	}
	return name
}
