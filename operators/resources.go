package operators

import (
	"context"

	"github.com/fvsql/fvsql/types"
)

// ViewLookup returns the current rows of a view under a key or a prefix
// of its key, in key order. It returns ctx's error once ctx is done.
type ViewLookup func(ctx context.Context, view string, key types.Row) ([]types.Row, error)

// Resources are what some operators need from the process running them.
type Resources struct {
	// Ctx ends when the operators' pipeline stops; lookups made on their
	// behalf end with it. Nil is context.Background().
	Ctx        context.Context
	ViewLookup ViewLookup
	// GroupCacheBytes bounds the encoded groups an unwindowed GROUP BY
	// keeps in memory between epochs, per partition, and the stored rows
	// a hash join keeps (0: the default, DefaultGroupCacheBytes).
	GroupCacheBytes int
	// Budget, in bounded queries, is charged with the rows the sort,
	// aggregate and distinct operators hold, and tells their long loops
	// when the query has ended (nil: unlimited).
	Budget *Budget
	// Clock, when set, is the wall clock of the operators that read it
	// (TemporalFilter), in microseconds since the Unix epoch (tests).
	Clock func() int64
}

func (r *Resources) budget() *Budget {
	if r == nil {
		return nil
	}
	return r.Budget
}
