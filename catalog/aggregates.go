package catalog

import "github.com/fvsql/fvsql/types"

// pg_aggregate and pg_sequences.
//
// pg_aggregate has a row for each aggregate of pg_proc (prokind 'a'),
// all plain ones (aggkind 'n', no direct arguments). fvsql's aggregates
// are built in, their steps are no functions of pg_proc: the transition,
// final, combine and inverse functions are 0 ("-"), the transition type
// is the result type, and count starts from '0', as PostgreSQL's does.
// fvsql has no operators in pg_operator, so no sort operator (min and
// max have one in PostgreSQL).
//
// fvsql has no sequences: pg_sequences is empty, with PostgreSQL 15's
// columns.
func init() {
	registerSystem("pg_catalog", "pg_aggregate", 2600, cols(`aggfnoid oid, aggkind "char", aggnumdirectargs int2,
		aggtransfn oid, aggfinalfn oid, aggcombinefn oid, aggserialfn oid, aggdeserialfn oid, aggmtransfn oid,
		aggminvtransfn oid, aggmfinalfn oid, aggfinalextra bool, aggmfinalextra bool, aggfinalmodify "char",
		aggmfinalmodify "char", aggsortop oid, aggtranstype oid, aggtransspace int4, aggmtranstype oid,
		aggmtransspace int4, agginitval text, aggminitval text`),
		func(*Catalog) []types.Row {
			var rows []types.Row
			for _, p := range procs() {
				if !p.agg {
					continue
				}
				init := types.NullValue
				if p.name == "count" {
					init = text("0")
				}
				rows = append(rows, types.Row{oid(p.oid), char("n"), i2(0),
					oid(0), oid(0), oid(0), oid(0), oid(0), oid(0),
					oid(0), oid(0), boolean(false), boolean(false), char("r"),
					char("r"), oid(0), oid(typeOID(p.ret)), i4(0), oid(0),
					i4(0), init, types.NullValue})
			}
			return rows
		})
	registerView("pg_catalog", "pg_sequences", 13507, cols(`schemaname name, sequencename name,
		sequenceowner name, data_type regtype, start_value int8, min_value int8, max_value int8,
		increment_by int8, cycle bool, cache_size int8, last_value int8`), none)
}
