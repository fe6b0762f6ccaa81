package catalog

import "github.com/fvsql/fvsql/types"

// The statistics views of tables (pg_stat_*_tables, pg_statio_*_tables)
// and indexes, with PostgreSQL 15's columns. fvsql counts none of what
// they count (scans, tuples, vacuums: a stream's rows live in its
// backend), so every counter is 0 and every time NULL; idx_scan is NULL,
// as PostgreSQL has it for a table without indexes. The tables listed
// are those of pg_class with relkind r or m (foreign tables are not in
// PostgreSQL's either); "user" ones are those outside pg_catalog and
// information_schema. There are no indexes, so the index views are empty.

// statTables lists the (relation, schema, name) of the tables a
// statistics view shows.
func (c *Catalog) statTables(user bool) (rels []*Relation, schemas, names []string) {
	for _, r := range c.pgClassRelations() {
		if k := relKind(r); k != "r" && k != "m" {
			continue
		}
		schema, rel, _ := relNamespace(r)
		if user && (schema == "pg_catalog" || schema == "information_schema") {
			continue
		}
		rels, schemas, names = append(rels, r), append(schemas, schema), append(names, rel)
	}
	return rels, schemas, names
}

func init() {
	statCols := cols(`relid oid, schemaname name, relname name, seq_scan int8, seq_tup_read int8,
		idx_scan int8, idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, n_tup_del int8,
		n_tup_hot_upd int8, n_live_tup int8, n_dead_tup int8, n_mod_since_analyze int8,
		n_ins_since_vacuum int8, last_vacuum timestamptz, last_autovacuum timestamptz,
		last_analyze timestamptz, last_autoanalyze timestamptz, vacuum_count int8,
		autovacuum_count int8, analyze_count int8, autoanalyze_count int8`)
	stat := func(user bool) func(c *Catalog) []types.Row {
		return func(c *Catalog) []types.Row {
			var rows []types.Row
			rels, schemas, names := c.statTables(user)
			for i, r := range rels {
				row := types.Row{oid(c.relOID(r)), name(schemas[i]), name(names[i])}
				for j := 3; j < len(statCols); j++ {
					v := types.NewInt8(0)
					if statCols[j].Type != types.Int8 || statCols[j].Name == "idx_scan" || statCols[j].Name == "idx_tup_fetch" {
						v = types.NullValue
					}
					row = append(row, v)
				}
				rows = append(rows, row)
			}
			return rows
		}
	}
	registerView("pg_catalog", "pg_stat_all_tables", 13510, statCols, stat(false))
	registerView("pg_catalog", "pg_stat_user_tables", 13511, statCols, stat(true))

	ioCols := cols(`relid oid, schemaname name, relname name, heap_blks_read int8, heap_blks_hit int8,
		idx_blks_read int8, idx_blks_hit int8, toast_blks_read int8, toast_blks_hit int8,
		tidx_blks_read int8, tidx_blks_hit int8`)
	statio := func(user bool) func(c *Catalog) []types.Row {
		return func(c *Catalog) []types.Row {
			var rows []types.Row
			rels, schemas, names := c.statTables(user)
			for i, r := range rels {
				row := types.Row{oid(c.relOID(r)), name(schemas[i]), name(names[i]), types.NewInt8(0), types.NewInt8(0)}
				for len(row) < len(ioCols) {
					row = append(row, types.NullValue) // no indexes, no TOAST
				}
				rows = append(rows, row)
			}
			return rows
		}
	}
	registerView("pg_catalog", "pg_statio_all_tables", 13512, ioCols, statio(false))
	registerView("pg_catalog", "pg_statio_user_tables", 13513, ioCols, statio(true))

	idxCols := cols(`relid oid, indexrelid oid, schemaname name, relname name, indexrelname name,
		idx_scan int8, idx_tup_read int8, idx_tup_fetch int8`)
	registerView("pg_catalog", "pg_stat_all_indexes", 13514, idxCols, none)
	registerView("pg_catalog", "pg_stat_user_indexes", 13515, idxCols, none)
	registerView("pg_catalog", "pg_indexes", 13516, cols(`schemaname name, tablename name, indexname name,
		tablespace name, indexdef text`), none)
}
