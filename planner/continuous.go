package planner

import (
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
)

// Continuous is a planned continuous query: the relation it writes, the
// stream its poison rows go to, and the topology the engine runs.
type Continuous struct {
	Rel      *catalog.Relation // output relation (SQL and Plan set by the caller)
	Errors   *catalog.Relation // <name>_errors
	Topology *engine.Topology
	Inputs   []*catalog.Relation
}

// ErrorsSuffix names a pipeline's poison-row stream.
const ErrorsSuffix = "_errors"

// PlanContinuous plans CREATE STREAM … AS SELECT.
func PlanContinuous(cat Catalog, ca *sql.CreateAs) (*Continuous, error) {
	if err := checkName(ca.Name); err != nil {
		return nil, err
	}
	if ca.Kind != sql.KindStream {
		return nil, pgerror.NotSupported("CREATE %s … AS", strings.ToUpper(string(ca.Kind)))
	}
	sel, ok := ca.Query.Body.(*sql.Select)
	if !ok {
		return nil, pgerror.NotSupported("set operations in continuous queries")
	}
	if ca.Query.NumParams > 0 {
		return nil, pgerror.New(pgerror.UndefinedParameter, "continuous queries cannot have parameters")
	}
	if len(sel.From) != 1 {
		return nil, pgerror.NotSupported("continuous queries over more than one input")
	}
	src, ok := sel.From[0].(*sql.TableName)
	if !ok {
		return nil, pgerror.NotSupported("continuous queries over %s", fromKind(sel.From[0]))
	}
	switch {
	case len(sel.GroupBy) > 0 || sel.Having != nil:
		return nil, pgerror.NotSupported("GROUP BY in continuous queries")
	case sel.Distinct:
		return nil, pgerror.NotSupported("DISTINCT in continuous queries")
	case len(sel.OrderBy) > 0 || sel.Limit != nil || sel.Offset != nil:
		return nil, pgerror.New(pgerror.FeatureNotSupported, "ORDER BY and LIMIT make no sense on an unbounded stream").
			WithHint("Use ROW_NUMBER() OVER (…) for top-N.")
	}
	for _, it := range sel.Items {
		if hasAggregate(it.Expr) {
			return nil, pgerror.NotSupported("aggregates in continuous queries")
		}
	}
	in, err := cat.Lookup(src.Schema, src.Name)
	if err != nil {
		return nil, err
	}
	if in.Kind != catalog.Stream {
		return nil, pgerror.New(pgerror.WrongObjectType, "%q is a %s; continuous queries read streams", in.Name, in.Kind)
	}
	if in.Backend != "" && !strings.HasPrefix(in.Backend, "kafka://") {
		return nil, pgerror.NotSupported("continuous queries over %s streams", in.Backend)
	}
	b := &builder{cat: cat}
	node, out, err := b.buildSelect(sel)
	if err != nil {
		return nil, err
	}
	chain, ok := node.(*engine.Chain)
	if !ok {
		return nil, pgerror.NotSupported("this continuous query")
	}
	for _, st := range chain.Steps {
		if !st.Stateless() {
			return nil, pgerror.NotSupported("step %s in continuous queries", st.Op)
		}
	}
	rel := &catalog.Relation{Name: ca.Name, Kind: catalog.Stream, Topic: ca.Name, Format: "json", Partitions: in.Partitions}
	for _, c := range out.outColumns() {
		rel.Columns = append(rel.Columns, catalog.Column{Name: c.Name, Type: c.Type})
	}
	if err := uniqueColumns(rel.Columns); err != nil {
		return nil, err
	}
	// The output keeps the input's key when the key columns pass through
	// unchanged, so downstream stateful queries need no repartition.
	if proj := chain.Steps[len(chain.Steps)-1]; proj.Op == operators.OpProject {
		rel.Key = passthroughKey(in, proj.Exprs, rel.Columns)
	}
	if err := applyOptions(rel, ca.Options); err != nil {
		return nil, err
	}
	if rel.Backend != "" {
		return nil, pgerror.NotSupported("writing a continuous query to backend %s (use CREATE SINK)", rel.Backend)
	}
	errs := ErrorsRelation(ca.Name)
	topo := &engine.Topology{
		Stages: []engine.Stage{{Name: "s0", Inputs: []string{in.Name}, Output: rel.Name, Steps: chain.Steps}},
		Errors: errs.Name,
	}
	return &Continuous{Rel: rel, Errors: errs, Topology: topo, Inputs: []*catalog.Relation{in}}, nil
}

func fromKind(t sql.TableExpr) string {
	switch t.(type) {
	case *sql.Join:
		return "joins"
	case *sql.WindowTVF:
		return "window functions"
	case *sql.DerivedTable:
		return "subqueries"
	}
	return "this FROM clause"
}

func uniqueColumns(cols []catalog.Column) error {
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.Name] {
			return pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", c.Name).
				WithHint("Give the select items distinct names with AS.")
		}
		seen[c.Name] = true
	}
	return nil
}

func passthroughKey(in *catalog.Relation, exprs []*expr.Expr, out []catalog.Column) []string {
	if len(in.Key) == 0 {
		return nil
	}
	var key []string
	for _, k := range in.Key {
		src := in.ColumnIndex(k)
		found := ""
		for i, e := range exprs {
			if e.Kind == expr.KCol && e.Col == src && i < len(out) {
				found = out[i].Name
				break
			}
		}
		if found == "" {
			return nil
		}
		key = append(key, found)
	}
	return key
}

// ErrorsRelation is the poison-row stream of a pipeline.
func ErrorsRelation(pipeline string) *catalog.Relation {
	rel := &catalog.Relation{
		Name: pipeline + ErrorsSuffix, Kind: catalog.Stream, Topic: pipeline + ErrorsSuffix, Format: "json", Partitions: 1,
		Options: map[string]string{"pipeline": pipeline},
	}
	for i, n := range engine.ErrorsColumns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: n, Type: engine.ErrorsTypes[i]})
	}
	return rel
}

// StreamOf converts a relation to the engine's view of it.
func StreamOf(rel *catalog.Relation) *engine.Stream {
	s := &engine.Stream{Name: rel.Name, Topic: rel.Topic, Partitions: rel.Partitions}
	for _, c := range rel.Columns {
		s.Columns = append(s.Columns, c.Name)
		s.Types = append(s.Types, c.Type)
	}
	for _, k := range rel.Key {
		s.Key = append(s.Key, rel.ColumnIndex(k))
	}
	return s
}
