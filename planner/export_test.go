package planner

import (
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// PlanQueryApplied is PlanQuery with every LATERAL subquery run per row
// of the items before it, none rewritten as a join: the answer the
// rewrite must give.
func PlanQueryApplied(cat Catalog, q *sql.Query, paramTypes []types.Type) (*Query, error) {
	return planBounded(&builder{cat: cat, params: append([]types.Type(nil), paramTypes...), applyLateral: true}, q)
}
