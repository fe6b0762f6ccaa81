package catalog

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// Functions over catalog objects that need no catalog instance: they
// answer what PostgreSQL answers for objects fvsql does not have
// (publications, tablespaces, sizes of data that lives in Kafka).
func init() {
	b, oidT := types.Bool, types.Oid
	expr.Register(
		// Streams are not published (fvsql has no logical replication).
		&expr.Func{Name: "pg_relation_is_publishable", Args: []types.Type{oidT}, Ret: b, Eval1: func(types.Value) (types.Value, error) {
			return types.NewBool(false), nil
		}},
	)
}
