package catalog

import (
	"sort"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Namespace OIDs, as PostgreSQL numbers them where it has them.
const (
	PgCatalogOID         = 11
	PublicOID            = 2200
	InformationSchemaOID = 13000
	FvsqlCatalogOID      = 13100
)

// systemTable is a relation whose rows the catalog generates on demand.
type systemTable struct {
	rel  *Relation
	rows func(c *Catalog) []types.Row
}

var systemTables = map[string]*systemTable{}

func col(name string, t types.Type) Column { return Column{Name: name, Type: t} }

func registerSystem(schema, name string, oid uint32, cols []Column, rows func(c *Catalog) []types.Row) {
	full := schema + "." + name
	systemTables[full] = &systemTable{
		rel:  &Relation{OID: oid, Name: full, Kind: System, Columns: cols},
		rows: rows,
	}
}

// Lookup resolves a possibly schema-qualified relation name: user
// relations live in schema public; pg_catalog is searched first for
// unqualified names, as PostgreSQL's search_path does.
func (c *Catalog) Lookup(schema, name string) (*Relation, error) {
	if t := c.dynamicTable(schema, name); t != nil {
		return t.rel, nil
	}
	switch schema {
	case "", "public":
		if schema == "" {
			if t, ok := systemTables["pg_catalog."+name]; ok {
				return t.rel, nil
			}
		}
		if r, ok := c.Get(name); ok {
			return r, nil
		}
	default:
		if t, ok := systemTables[schema+"."+name]; ok {
			return t.rel, nil
		}
		if !isSystemSchema(schema) {
			return nil, pgerror.New(pgerror.UndefinedObject, "schema %q does not exist", schema)
		}
	}
	if schema != "" {
		name = schema + "." + name
	}
	return nil, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist", name)
}

func isSystemSchema(s string) bool {
	switch s {
	case "pg_catalog", "information_schema", "fvsql_catalog", "public":
		return true
	}
	return false
}

// SystemRows generates the current rows of a system relation.
func (c *Catalog) SystemRows(name string) ([]types.Row, error) {
	if schema, rel, ok := strings.Cut(name, "."); ok {
		if t := c.dynamicTable(schema, rel); t != nil {
			return t.rows(c), nil
		}
	}
	t, ok := systemTables[name]
	if !ok {
		return nil, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist", name)
	}
	return t.rows(c), nil
}

// SystemRelations lists the system relations (for pg_class).
func SystemRelations() []*Relation {
	out := make([]*Relation, 0, len(systemTables))
	for _, t := range systemTables {
		out = append(out, t.rel)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func text(s string) types.Value    { return types.NewText(s) }
func name(s string) types.Value    { return types.NewString(types.Name, s) }
func oid(o uint32) types.Value     { return types.NewInt(types.Oid, int64(o)) }
func i2(i int) types.Value         { return types.NewInt(types.Int2, int64(i)) }
func i4(i int) types.Value         { return types.NewInt(types.Int4, int64(i)) }
func boolean(b bool) types.Value   { return types.NewBool(b) }
func char(s string) types.Value    { return types.NewString(types.Char, s) }
func float4(f float64) types.Value { return types.NewFloat(types.Float4, f) }
func nullOr(s string) types.Value {
	if s == "" {
		return types.NullValue
	}
	return text(s)
}

// relKind maps a relation to pg_class.relkind: streams are tables ('r')
// so that tools list them, materialized views 'm'.
func relKind(r *Relation) string {
	switch r.Kind {
	case MaterializedView:
		return "m"
	case System:
		return "v"
	}
	return "r"
}

// queryable lists the relations that appear in pg_class: user streams and
// views (sinks hold no queryable data) and the system relations.
func (c *Catalog) queryable() []*Relation {
	var out []*Relation
	for _, r := range c.List("") {
		if r.Kind != Sink {
			out = append(out, r)
		}
	}
	return append(out, SystemRelations()...)
}

func splitSystemName(full string) (schema, rel string, nsOID uint32) {
	schema, rel, _ = strings.Cut(full, ".")
	switch schema {
	case "pg_catalog":
		return schema, rel, PgCatalogOID
	case "information_schema":
		return schema, rel, InformationSchemaOID
	}
	return schema, rel, FvsqlCatalogOID
}

func relNamespace(r *Relation) (string, string, uint32) {
	if r.Kind == System {
		return splitSystemName(r.Name)
	}
	return "public", r.Name, PublicOID
}

func init() {
	T := types.Text
	registerSystem("pg_catalog", "pg_namespace", 2615, []Column{col("oid", types.Oid), col("nspname", types.Name), col("nspowner", types.Oid), col("nspacl", types.TextArray)},
		func(*Catalog) []types.Row {
			return []types.Row{
				{oid(PgCatalogOID), name("pg_catalog"), oid(10), types.NullValue},
				{oid(PublicOID), name("public"), oid(10), types.NullValue},
				{oid(InformationSchemaOID), name("information_schema"), oid(10), types.NullValue},
				{oid(FvsqlCatalogOID), name("fvsql_catalog"), oid(10), types.NullValue},
			}
		})
	registerSystem("pg_catalog", "pg_database", 1262, []Column{col("oid", types.Oid), col("datname", types.Name), col("datdba", types.Oid), col("encoding", types.Int4),
		col("datcollate", types.Name), col("datctype", types.Name), col("datistemplate", types.Bool), col("datallowconn", types.Bool), col("datacl", types.TextArray),
		col("datlocprovider", types.Char), col("daticulocale", types.Text), col("daticurules", types.Text), col("datcollversion", types.Text),
		col("datconnlimit", types.Int4), col("dattablespace", types.Oid)},
		func(*Catalog) []types.Row {
			return []types.Row{{oid(16383), name("fvsql"), oid(10), i4(6), name("C"), name("C"), boolean(false), boolean(true), types.NullValue,
				char("c"), types.NullValue, types.NullValue, types.NullValue, i4(-1), oid(1663)}}
		})
	registerSystem("pg_catalog", "pg_roles", 1260, []Column{col("oid", types.Oid), col("rolname", types.Name), col("rolsuper", types.Bool), col("rolcanlogin", types.Bool)},
		func(*Catalog) []types.Row {
			return []types.Row{{oid(10), name("fvsql"), boolean(true), boolean(true)}}
		})
	registerSystem("pg_catalog", "pg_class", 1259, []Column{
		col("oid", types.Oid), col("relname", types.Name), col("relnamespace", types.Oid), col("reltype", types.Oid),
		col("relowner", types.Oid), col("relam", types.Oid), col("relkind", types.Char), col("relpersistence", types.Char),
		col("relnatts", types.Int2), col("relchecks", types.Int2), col("relhasindex", types.Bool), col("relhasrules", types.Bool),
		col("relhastriggers", types.Bool), col("relrowsecurity", types.Bool), col("relforcerowsecurity", types.Bool),
		col("relispartition", types.Bool), col("reltablespace", types.Oid), col("reltuples", types.Float4),
		col("relpages", types.Int4), col("reloptions", types.TextArray), col("relacl", types.TextArray), col("reloftype", types.Oid),
		col("reltoastrelid", types.Oid), col("relreplident", types.Char), col("relallvisible", types.Int4), col("relfrozenxid", types.Oid),
		col("relpartbound", types.Text), col("relisshared", types.Bool), col("relhassubclass", types.Bool),
	}, func(c *Catalog) []types.Row {
		var rows []types.Row
		for _, r := range c.queryable() {
			_, rel, ns := relNamespace(r)
			rows = append(rows, types.Row{
				oid(r.OID), name(rel), oid(ns), oid(0), oid(10), oid(0), char(relKind(r)), char("p"),
				i2(len(r.Columns)), i2(0), boolean(false), boolean(false), boolean(false), boolean(false), boolean(false),
				boolean(false), oid(0), float4(-1), i4(0), types.NullValue, types.NullValue, oid(0),
				oid(0), char("d"), i4(0), oid(0), types.NullValue, boolean(false), boolean(false),
			})
		}
		return rows
	})
	registerSystem("pg_catalog", "pg_attribute", 1249, []Column{
		col("attrelid", types.Oid), col("attname", types.Name), col("atttypid", types.Oid), col("attnum", types.Int2),
		col("attlen", types.Int2), col("atttypmod", types.Int4), col("attnotnull", types.Bool), col("atthasdef", types.Bool),
		col("attisdropped", types.Bool), col("attidentity", types.Char), col("attgenerated", types.Char), col("attcollation", types.Oid),
	}, func(c *Catalog) []types.Row {
		var rows []types.Row
		for _, r := range c.queryable() {
			for i, cl := range r.Columns {
				rows = append(rows, types.Row{
					oid(r.OID), name(cl.Name), oid(cl.Type.OID()), i2(i + 1), i2(int(cl.Type.Size())), i4(-1),
					boolean(cl.NotNull), boolean(false), boolean(false), char(""), char(""), oid(0),
				})
			}
		}
		return rows
	})
	registerSystem("pg_catalog", "pg_type", 1247, []Column{
		col("oid", types.Oid), col("typname", types.Name), col("typnamespace", types.Oid), col("typlen", types.Int2),
		col("typtype", types.Char), col("typcategory", types.Char), col("typelem", types.Oid), col("typarray", types.Oid),
		col("typbasetype", types.Oid), col("typnotnull", types.Bool), col("typrelid", types.Oid), col("typdelim", types.Char),
		col("typcollation", types.Oid), col("typowner", types.Oid), col("typtypmod", types.Int4), col("typndims", types.Int4),
		col("typinput", types.Oid), col("typoutput", types.Oid), col("typreceive", types.Oid), col("typsend", types.Oid),
	}, func(*Catalog) []types.Row {
		var rows []types.Row
		seen := map[uint32]bool{}
		for _, t := range types.All() {
			if seen[t.OID()] || t.OID() == 0 {
				continue
			}
			seen[t.OID()] = true
			n := pgTypeName(t)
			rows = append(rows, types.Row{
				oid(t.OID()), name(n), oid(PgCatalogOID), i2(int(t.Size())), char("b"), char(t.Category()),
				oid(0), oid(t.ArrayOID()), oid(0), boolean(false), oid(0), char(","),
				oid(collation(t)), oid(10), i4(-1), i4(0), oid(0), oid(0), oid(0), oid(0),
			})
		}
		return rows
	})
	for _, empty := range []struct {
		name string
		oid  uint32
		cols []Column
	}{
		{"pg_index", 2610, []Column{col("indexrelid", types.Oid), col("indrelid", types.Oid), col("indisprimary", types.Bool), col("indisunique", types.Bool)}},
		{"pg_constraint", 2606, []Column{col("oid", types.Oid), col("conname", types.Name), col("conrelid", types.Oid), col("contype", types.Char)}},
		{"pg_description", 2609, []Column{col("objoid", types.Oid), col("classoid", types.Oid), col("objsubid", types.Int4), col("description", T)}},
		{"pg_inherits", 2611, []Column{col("inhrelid", types.Oid), col("inhparent", types.Oid), col("inhseqno", types.Int4), col("inhdetachpending", types.Bool)}},
		{"pg_attrdef", 2604, []Column{col("oid", types.Oid), col("adrelid", types.Oid), col("adnum", types.Int2), col("adbin", T)}},
		{"pg_proc", 1255, []Column{col("oid", types.Oid), col("proname", types.Name), col("pronamespace", types.Oid), col("prokind", types.Char),
			col("prorettype", types.Oid), col("proargtypes", types.OidArray), col("proretset", types.Bool), col("proowner", types.Oid)}},
		{"pg_trigger", 2620, []Column{col("oid", types.Oid), col("tgrelid", types.Oid), col("tgname", types.Name)}},
		{"pg_policy", 3256, []Column{col("oid", types.Oid), col("polname", types.Name), col("polrelid", types.Oid), col("polcmd", types.Char),
			col("polpermissive", types.Bool), col("polroles", types.OidArray), col("polqual", T), col("polwithcheck", T)}},
		{"pg_statistic_ext", 3381, []Column{col("oid", types.Oid), col("stxrelid", types.Oid), col("stxname", types.Name),
			col("stxnamespace", types.Oid), col("stxowner", types.Oid), col("stxstattarget", types.Int4), col("stxkeys", types.Int2Array),
			col("stxkind", types.CharArray), col("stxexprs", T)}},
		{"pg_publication", 6104, []Column{col("oid", types.Oid), col("pubname", types.Name), col("pubowner", types.Oid),
			col("puballtables", types.Bool), col("pubinsert", types.Bool), col("pubupdate", types.Bool), col("pubdelete", types.Bool),
			col("pubtruncate", types.Bool), col("pubviaroot", types.Bool)}},
		{"pg_publication_rel", 6106, []Column{col("oid", types.Oid), col("prpubid", types.Oid), col("prrelid", types.Oid),
			col("prqual", T), col("prattrs", types.Int2Array)}},
		{"pg_publication_namespace", 6237, []Column{col("oid", types.Oid), col("pnpubid", types.Oid), col("pnnspid", types.Oid)}},
		{"pg_rewrite", 2618, []Column{col("oid", types.Oid), col("rulename", types.Name), col("ev_class", types.Oid)}},
		{"pg_partitioned_table", 3350, []Column{col("partrelid", types.Oid)}},
		{"pg_foreign_table", 3118, []Column{col("ftrelid", types.Oid), col("ftserver", types.Oid)}},
		{"pg_matviews", 0, []Column{col("schemaname", types.Name), col("matviewname", types.Name), col("definition", T)}},
	} {
		registerSystem("pg_catalog", empty.name, empty.oid, empty.cols, func(*Catalog) []types.Row { return nil })
	}
	registerSystem("pg_catalog", "pg_am", 2601, []Column{col("oid", types.Oid), col("amname", types.Name), col("amhandler", types.Oid), col("amtype", types.Char)},
		func(*Catalog) []types.Row {
			return []types.Row{{oid(2), name("heap"), oid(0), char("t")}}
		})
	registerSystem("pg_catalog", "pg_collation", 3456, []Column{col("oid", types.Oid), col("collname", types.Name), col("collnamespace", types.Oid)},
		func(*Catalog) []types.Row {
			return []types.Row{{oid(100), name("default"), oid(PgCatalogOID)}, {oid(950), name("C"), oid(PgCatalogOID)}}
		})
	registerSystem("pg_catalog", "pg_tables", 0, []Column{col("schemaname", types.Name), col("tablename", types.Name), col("tableowner", types.Name)},
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.List(Stream) {
				rows = append(rows, types.Row{name("public"), name(r.Name), name("fvsql")})
			}
			return rows
		})
	registerSystem("information_schema", "schemata", 0, []Column{col("catalog_name", T), col("schema_name", T), col("schema_owner", T)},
		func(*Catalog) []types.Row {
			var rows []types.Row
			for _, s := range []string{"pg_catalog", "public", "information_schema", "fvsql_catalog"} {
				rows = append(rows, types.Row{text("fvsql"), text(s), text("fvsql")})
			}
			return rows
		})
	registerSystem("information_schema", "tables", 0, []Column{col("table_catalog", T), col("table_schema", T), col("table_name", T), col("table_type", T)},
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.queryable() {
				schema, rel, _ := relNamespace(r)
				kind := "BASE TABLE"
				if r.Kind != Stream {
					kind = "VIEW"
				}
				rows = append(rows, types.Row{text("fvsql"), text(schema), text(rel), text(kind)})
			}
			return rows
		})
	registerSystem("information_schema", "columns", 0, []Column{
		col("table_catalog", T), col("table_schema", T), col("table_name", T), col("column_name", T),
		col("ordinal_position", types.Int4), col("is_nullable", T), col("data_type", T), col("udt_name", T),
	}, func(c *Catalog) []types.Row {
		var rows []types.Row
		for _, r := range c.queryable() {
			schema, rel, _ := relNamespace(r)
			for i, cl := range r.Columns {
				null := "YES"
				if cl.NotNull {
					null = "NO"
				}
				rows = append(rows, types.Row{text("fvsql"), text(schema), text(rel), text(cl.Name), i4(i + 1), text(null), text(cl.Type.String()), text(pgTypeName(cl.Type))})
			}
		}
		return rows
	})
	registerSystem("fvsql_catalog", "streams", 0, []Column{
		col("name", T), col("kind", T), col("backend", T), col("topic", T), col("format", T), col("partitions", types.Int4), col("key", T), col("sql", T),
	}, func(c *Catalog) []types.Row {
		var rows []types.Row
		for _, r := range c.List("") {
			rows = append(rows, types.Row{text(r.Name), text(string(r.Kind)), text(r.BackendURI()), text(r.Topic), text(r.Format), i4(r.Partitions), nullOr(strings.Join(r.Key, ",")), nullOr(r.SQL)})
		}
		return rows
	})
}

// BackendURI is the relation's backend as users see it.
func (r *Relation) BackendURI() string {
	if r.Backend == "" {
		return "kafka (server default)"
	}
	return r.Backend
}

// collation is pg_type.typcollation: 100 (default) for text types.
func collation(t types.Type) uint32 {
	if t.IsString() {
		return 100
	}
	return 0
}

// pgTypeName is pg_type.typname of a type.
func pgTypeName(t types.Type) string {
	switch t {
	case types.Bool:
		return "bool"
	case types.Int2:
		return "int2"
	case types.Int4:
		return "int4"
	case types.Int8:
		return "int8"
	case types.Float4:
		return "float4"
	case types.Float8:
		return "float8"
	case types.Varchar:
		return "varchar"
	case types.Timestamp:
		return "timestamp"
	case types.TimestampTZ:
		return "timestamptz"
	case types.Char:
		return "char"
	case types.TextArray:
		return "_text"
	case types.Int2Array:
		return "_int2"
	case types.OidArray:
		return "_oid"
	}
	return t.String()
}

// AddSystemTable registers a system relation whose rows another package
// produces (the engine's live pipeline records), in schema fvsql_catalog.
func (c *Catalog) AddSystemTable(name string, cols []Column, rows func() []types.Row) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dynamic == nil {
		c.dynamic = map[string]*systemTable{}
	}
	full := "fvsql_catalog." + name
	c.dynamic[full] = &systemTable{
		rel:  &Relation{OID: 0, Name: full, Kind: System, Columns: cols},
		rows: func(*Catalog) []types.Row { return rows() },
	}
}

func (c *Catalog) dynamicTable(schema, name string) *systemTable {
	if schema != "fvsql_catalog" {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dynamic["fvsql_catalog."+name]
}
