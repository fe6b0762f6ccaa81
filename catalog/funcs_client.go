package catalog

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// arrayInOID is PostgreSQL's OID of array_in, the input function of
// every array type: pg_type.typinput of fvsql's array types, so that
// pgjdbc's typinput = 'array_in'::regproc tells arrays from other types.
// fvsql's other types have no input function in pg_proc (typinput 0).
const arrayInOID = 750

// ProcOID is regproc's input for a function name: the OID of the one
// function of that name in pg_proc (array_in's for array_in). A name
// with no function, or with several overloads, is an error, as in
// PostgreSQL (42883, 42725).
func ProcOID(name string) (uint32, error) {
	if name == "array_in" {
		return arrayInOID, nil
	}
	var found []*proc
	for _, p := range procs() {
		if p.name == name {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return 0, pgerror.New(pgerror.UndefinedFunction, "function %q does not exist", name)
	case 1:
		return found[0].oid, nil
	}
	return 0, pgerror.New(pgerror.MakeCode("42725"), "more than one function named %q", name)
}

// Functions clients call that look at the catalog's fixed objects.
func init() {
	text := types.Text
	expr.Register(
		// to_regproc is regproc's input, NULL instead of an error.
		&expr.Func{Name: "to_regproc", Args: []types.Type{text}, Ret: types.Oid, Eval1: func(a types.Value) (types.Value, error) {
			parts, err := expr.ParseIdent(a.S)
			if err != nil || len(parts) > 2 || len(parts) == 2 && parts[0] != "pg_catalog" {
				return types.NullValue, nil
			}
			o, err := ProcOID(parts[len(parts)-1])
			if err != nil {
				return types.NullValue, nil
			}
			return oid(o), nil
		}},
		// to_regnamespace is regnamespace's input, NULL instead of an error.
		&expr.Func{Name: "to_regnamespace", Args: []types.Type{text}, Ret: types.Oid, Eval1: func(a types.Value) (types.Value, error) {
			parts, err := expr.ParseIdent(a.S)
			if err != nil || len(parts) != 1 {
				return types.NullValue, nil
			}
			if o, ok := NamespaceOID(parts[0]); ok {
				return oid(o), nil
			}
			return types.NullValue, nil
		}},
	)
	// The statistics functions behind pg_stat_*_tables: fvsql counts no
	// scans or tuples (see pgstat.go), so 0 for every relation.
	for _, f := range []string{"pg_stat_get_numscans", "pg_stat_get_tuples_returned", "pg_stat_get_tuples_fetched",
		"pg_stat_get_tuples_inserted", "pg_stat_get_tuples_updated", "pg_stat_get_tuples_deleted",
		"pg_stat_get_live_tuples", "pg_stat_get_dead_tuples", "pg_stat_get_blocks_fetched", "pg_stat_get_blocks_hit"} {
		expr.Register(&expr.Func{Name: f, Args: []types.Type{types.Oid}, Ret: types.Int8, Volatile: true,
			Eval1: func(types.Value) (types.Value, error) { return types.NewInt8(0), nil }})
	}
}
