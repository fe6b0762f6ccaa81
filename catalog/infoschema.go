package catalog

import (
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/types"
)

// information_schema, with PostgreSQL 15's columns in its order (what
// Metabase's sync, Grafana's column picker, DBeaver and pgjdbc read).
// Its domains read as their nearest fvsql types: sql_identifier,
// character_data and yes_or_no as text, cardinal_number as int4,
// time_stamp as timestamptz.
//
// Constraints: fvsql declares none. A stream's key chooses the Kafka
// partition and record key of its rows; it does not make them unique (a
// stream holds every row ever written for a key). A materialized view's
// rows are unique by its key, but it is not declared as a primary key
// either: pg_constraint and pg_index have no rows, and the constraint
// views of information_schema (table_constraints, key_column_usage,
// referential_constraints, constraint_column_usage, …) are empty, so that
// every catalog tells the same story.

// isCols parses the columns of an information_schema view: "name" for a
// text column, "name:int" for cardinal_number, "name:ts" for time_stamp.
func isCols(spec string) []Column {
	var out []Column
	for _, f := range strings.Fields(spec) {
		n, t, _ := strings.Cut(f, ":")
		typ := types.Text
		switch t {
		case "int":
			typ = types.Int4
		case "ts":
			typ = types.TimestampTZ
		}
		out = append(out, col(n, typ))
	}
	return out
}

// yesNo is a yes_or_no value.
func yesNo(b bool) types.Value {
	if b {
		return text("YES")
	}
	return text("NO")
}

// dataType is information_schema's data_type of a type: its SQL name,
// ARRAY for arrays.
func dataType(t types.Type) string {
	if t.IsArray() {
		return "ARRAY"
	}
	return t.String()
}

// numericFacts are numeric_precision, numeric_precision_radix and
// numeric_scale of a type, as PostgreSQL reports them without a typmod.
func numericFacts(t types.Type) (prec, radix, scale types.Value) {
	bits := map[types.Type]int{types.Int2: 16, types.Int4: 32, types.Int8: 64, types.Float4: 24, types.Float8: 53}
	if b, ok := bits[t]; ok {
		sc := types.NullValue
		if t.Category() == "N" && t != types.Float4 && t != types.Float8 {
			sc = i4(0)
		}
		return i4(b), i4(2), sc
	}
	if t == types.Numeric {
		return types.NullValue, i4(10), types.NullValue
	}
	return types.NullValue, types.NullValue, types.NullValue
}

// datetimePrecision is datetime_precision: 0 for date, 6 (microseconds)
// for timestamps and intervals.
func datetimePrecision(t types.Type) types.Value {
	switch t {
	case types.Date:
		return i4(0)
	case types.Timestamp, types.TimestampTZ, types.Interval:
		return i4(6)
	}
	return types.NullValue
}

// octetLength is character_octet_length of an unbounded text type.
func octetLength(t types.Type) types.Value {
	if t == types.Text || t == types.Varchar {
		return i4(1073741824)
	}
	return types.NullValue
}

// infoSchemaRelations are the relations information_schema.tables and
// columns list: PostgreSQL's list relkind r, v, f and p, so materialized
// views (m) are not there (clients that show them read pg_class or
// pg_matviews).
func (c *Catalog) infoSchemaRelations() []*Relation {
	var out []*Relation
	for _, r := range c.pgClassRelations() {
		if relKind(r) != "m" {
			out = append(out, r)
		}
	}
	return out
}

// insertable reports whether INSERT into the relation is allowed (streams).
func insertable(r *Relation) bool { return r.Kind == Stream }

var (
	constraintCols = `constraint_catalog constraint_schema constraint_name`
	tableCols      = `table_catalog table_schema table_name`
)

var routinesRel, parametersRel byName

func routinesCols(spec string) []Column   { routinesRel = isCols(spec); return routinesRel }
func parametersCols(spec string) []Column { parametersRel = isCols(spec); return parametersRel }

func init() {
	registerView("information_schema", "schemata", 13600, isCols(`catalog_name schema_name schema_owner
		default_character_set_catalog default_character_set_schema default_character_set_name sql_path`),
		func(*Catalog) []types.Row {
			var rows []types.Row
			for _, s := range []string{"pg_catalog", "public", "information_schema", "fvsql_catalog"} {
				rows = append(rows, types.Row{text("fvsql"), text(s), text("fvsql"),
					types.NullValue, types.NullValue, types.NullValue, types.NullValue})
			}
			return rows
		})
	registerView("information_schema", "tables", 13601, isCols(tableCols+` table_type
		self_referencing_column_name reference_generation user_defined_type_catalog
		user_defined_type_schema user_defined_type_name is_insertable_into is_typed commit_action`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.infoSchemaRelations() {
				schema, rel, _ := relNamespace(r)
				kind := map[string]string{"r": "BASE TABLE", "f": "FOREIGN", "v": "VIEW"}[relKind(r)]
				rows = append(rows, types.Row{text("fvsql"), text(schema), text(rel), text(kind),
					types.NullValue, types.NullValue, types.NullValue, types.NullValue, types.NullValue,
					yesNo(insertable(r)), text("NO"), types.NullValue})
			}
			return rows
		})
	registerView("information_schema", "columns", 13602, isCols(tableCols+` column_name ordinal_position:int
		column_default is_nullable data_type character_maximum_length:int character_octet_length:int
		numeric_precision:int numeric_precision_radix:int numeric_scale:int datetime_precision:int
		interval_type interval_precision:int character_set_catalog character_set_schema character_set_name
		collation_catalog collation_schema collation_name domain_catalog domain_schema domain_name
		udt_catalog udt_schema udt_name scope_catalog scope_schema scope_name maximum_cardinality:int
		dtd_identifier is_self_referencing is_identity identity_generation identity_start identity_increment
		identity_maximum identity_minimum identity_cycle is_generated generation_expression is_updatable`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			null := types.NullValue
			for _, r := range c.infoSchemaRelations() {
				schema, rel, _ := relNamespace(r)
				for i, cl := range r.Columns {
					t := cl.Type
					prec, radix, scale := numericFacts(t)
					rows = append(rows, types.Row{text("fvsql"), text(schema), text(rel), text(cl.Name), i4(i + 1),
						null, yesNo(!cl.NotNull), text(dataType(t)), null, octetLength(t),
						prec, radix, scale, datetimePrecision(t),
						null, null, null, null, null,
						null, null, null, null, null, null,
						text("fvsql"), text("pg_catalog"), text(t.TypName()), null, null, null, null,
						text(strconv.Itoa(i + 1)), text("NO"), text("NO"), null, null, null,
						null, null, text("NO"), text("NEVER"), null, yesNo(insertable(r))})
				}
			}
			return rows
		})
	registerView("information_schema", "views", 13603, isCols(tableCols+` view_definition check_option
		is_updatable is_insertable_into is_trigger_updatable is_trigger_deletable is_trigger_insertable_into`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.pgClassRelations() {
				if relKind(r) != "v" {
					continue // as PostgreSQL's, materialized views left out
				}
				schema, rel, _ := relNamespace(r)
				rows = append(rows, types.Row{text("fvsql"), text(schema), text(rel), nullOr(viewDefinition(r)),
					text("NONE"), text("NO"), text("NO"), text("NO"), text("NO"), text("NO")})
			}
			return rows
		})
	// The constraint views: fvsql declares no constraints (see above).
	for _, v := range []struct {
		name string
		oid  uint32
		cols string
	}{
		{"table_constraints", 13604, constraintCols + " " + tableCols +
			" constraint_type is_deferrable initially_deferred enforced nulls_distinct"},
		{"key_column_usage", 13605, constraintCols + " " + tableCols +
			" column_name ordinal_position:int position_in_unique_constraint:int"},
		{"referential_constraints", 13606, constraintCols + ` unique_constraint_catalog unique_constraint_schema
			unique_constraint_name match_option update_rule delete_rule`},
		{"constraint_column_usage", 13607, tableCols + " column_name " + constraintCols},
		{"constraint_table_usage", 13608, tableCols + " " + constraintCols},
		{"check_constraints", 13609, constraintCols + " check_clause"},
		{"sequences", 13610, `sequence_catalog sequence_schema sequence_name data_type numeric_precision:int
			numeric_precision_radix:int numeric_scale:int start_value minimum_value maximum_value increment cycle_option`},
		{"triggers", 13611, `trigger_catalog trigger_schema trigger_name event_manipulation event_object_catalog
			event_object_schema event_object_table action_order:int action_condition action_statement
			action_orientation action_timing action_reference_old_table action_reference_new_table
			action_reference_old_row action_reference_new_row created:ts`},
		{"domains", 13612, `domain_catalog domain_schema domain_name data_type character_maximum_length:int
			character_octet_length:int character_set_catalog character_set_schema character_set_name
			collation_catalog collation_schema collation_name numeric_precision:int numeric_precision_radix:int
			numeric_scale:int datetime_precision:int interval_type interval_precision:int domain_default
			udt_catalog udt_schema udt_name scope_catalog scope_schema scope_name maximum_cardinality:int
			dtd_identifier`},
	} {
		registerView("information_schema", v.name, v.oid, isCols(v.cols), none)
	}
	registerView("information_schema", "character_sets", 13613, isCols(`character_set_catalog
		character_set_schema character_set_name character_repertoire form_of_use default_collate_catalog
		default_collate_schema default_collate_name`),
		func(*Catalog) []types.Row {
			return []types.Row{{types.NullValue, types.NullValue, text("UTF8"), text("UCS"), text("UTF8"),
				text("fvsql"), text("pg_catalog"), text("C")}}
		})
	registerView("information_schema", "routines", 13614, routinesCols(`specific_catalog specific_schema specific_name
		routine_catalog routine_schema routine_name routine_type module_catalog module_schema module_name
		udt_catalog udt_schema udt_name data_type character_maximum_length:int character_octet_length:int
		character_set_catalog character_set_schema character_set_name collation_catalog collation_schema
		collation_name numeric_precision:int numeric_precision_radix:int numeric_scale:int
		datetime_precision:int interval_type interval_precision:int type_udt_catalog type_udt_schema
		type_udt_name scope_catalog scope_schema scope_name maximum_cardinality:int dtd_identifier
		routine_body routine_definition external_name external_language parameter_style is_deterministic
		sql_data_access is_null_call sql_path schema_level_routine max_dynamic_result_sets:int
		is_user_defined_cast is_implicitly_invocable security_type to_sql_specific_catalog
		to_sql_specific_schema to_sql_specific_name as_locator created:ts last_altered:ts
		new_savepoint_level is_udt_dependent result_cast_from_data_type result_cast_as_locator
		result_cast_char_max_length:int result_cast_char_octet_length:int result_cast_char_set_catalog
		result_cast_char_set_schema result_cast_char_set_name result_cast_collation_catalog
		result_cast_collation_schema result_cast_collation_name result_cast_numeric_precision:int
		result_cast_numeric_precision_radix:int result_cast_numeric_scale:int
		result_cast_datetime_precision:int result_cast_interval_type result_cast_interval_precision:int
		result_cast_type_udt_catalog result_cast_type_udt_schema result_cast_type_udt_name
		result_cast_scope_catalog result_cast_scope_schema result_cast_scope_name
		result_cast_maximum_cardinality:int result_cast_dtd_identifier`),
		func(*Catalog) []types.Row {
			var rows []types.Row
			for _, p := range procs() {
				if p.agg {
					continue // PostgreSQL lists functions and procedures, not aggregates
				}
				ret := p.result()
				det, nullCall := "YES", "NO"
				if p.volatile {
					det = "NO"
				}
				if !p.strict {
					nullCall = "YES"
				}
				rows = append(rows, routinesRel.row(map[string]types.Value{
					"specific_catalog": text("fvsql"), "specific_schema": text("pg_catalog"), "specific_name": text(p.specificName()),
					"routine_catalog": text("fvsql"), "routine_schema": text("pg_catalog"), "routine_name": text(p.name),
					"routine_type": text("FUNCTION"), "data_type": text(routineDataType(ret, p.ret)),
					"type_udt_catalog": text("fvsql"), "type_udt_schema": text("pg_catalog"),
					"type_udt_name": text(strings.Trim(strings.TrimPrefix(ret, "SETOF "), `"`)), "dtd_identifier": text("0"),
					"routine_body": text("EXTERNAL"), "routine_definition": text(p.name), "external_name": text(p.name),
					"external_language": text("INTERNAL"), "parameter_style": text("GENERAL"), "is_deterministic": text(det),
					"sql_data_access": text("MODIFIES"), "is_null_call": text(nullCall), "schema_level_routine": text("YES"),
					"max_dynamic_result_sets": i4(0), "is_user_defined_cast": text("NO"), "is_implicitly_invocable": types.NullValue,
					"security_type": text("INVOKER"), "as_locator": text("NO"), "is_udt_dependent": text("NO"),
				}))
			}
			return rows
		})
	registerView("information_schema", "parameters", 13615, parametersCols(`specific_catalog specific_schema
		specific_name ordinal_position:int parameter_mode is_result as_locator parameter_name data_type
		character_maximum_length:int character_octet_length:int character_set_catalog character_set_schema
		character_set_name collation_catalog collation_schema collation_name numeric_precision:int
		numeric_precision_radix:int numeric_scale:int datetime_precision:int interval_type
		interval_precision:int udt_catalog udt_schema udt_name scope_catalog scope_schema scope_name
		maximum_cardinality:int dtd_identifier parameter_default`),
		func(*Catalog) []types.Row {
			var rows []types.Row
			for _, p := range procs() {
				if p.agg {
					continue
				}
				for i, a := range p.args {
					rows = append(rows, parametersRel.row(map[string]types.Value{
						"specific_catalog": text("fvsql"), "specific_schema": text("pg_catalog"), "specific_name": text(p.specificName()),
						"ordinal_position": i4(i + 1), "parameter_mode": text("IN"), "is_result": text("NO"), "as_locator": text("NO"),
						"data_type": text(routineDataType(typeName(a), a)), "udt_catalog": text("fvsql"), "udt_schema": text("pg_catalog"),
						"udt_name": text(strings.Trim(typeName(a), `"`)), "dtd_identifier": text(strconv.Itoa(i + 1)),
					}))
				}
			}
			return rows
		})
}

// byName builds rows of a relation with many columns from the values
// of some of them, the others NULL.
type byName []Column

func (cs byName) row(vals map[string]types.Value) types.Row {
	row, found := make(types.Row, len(cs)), 0
	for i, c := range cs {
		if v, ok := vals[c.Name]; ok {
			row[i] = v
			found++
		}
	}
	if found != len(vals) {
		panic("catalog: a value for a column the relation does not have")
	}
	return row
}

// specificName is information_schema's specific_name of a function:
// its name and OID, as PostgreSQL makes it unique among overloads.
func (p *proc) specificName() string { return p.name + "_" + strconv.FormatUint(uint64(p.oid), 10) }

// routineDataType is data_type of a function's result or parameter:
// the type's name (SETOF left out), ARRAY for arrays.
func routineDataType(name string, t types.Type) string {
	if t.IsArray() {
		return "ARRAY"
	}
	return strings.TrimPrefix(name, "SETOF ")
}
