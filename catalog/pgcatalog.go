package catalog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fvsql/fvsql/types"
)

// The pg_catalog and information_schema relations, with PostgreSQL 15's
// columns (those clients read: psql's describe commands, pgjdbc's
// DatabaseMetaData, SQLAlchemy's inspector), and fvsql's own
// fvsql_catalog relations.
//
// How fvsql's objects appear there:
//
//   - A stream is a table (relkind 'r'): \dt lists it. Its WITH options
//     are its reloptions (\d+ prints them as "Options:"), and its record
//     metadata columns (_key, _partition, _offset, _timestamp) are system
//     columns with negative attnum, as ctid and xmin are in PostgreSQL:
//     readable by name, left out of * and of \d.
//   - A materialized view is one (relkind 'm'); pg_get_viewdef gives its
//     query.
//   - A sink is a foreign table (relkind 'f'): its rows live in another
//     system. Its "foreign server" is its backend, and its options (topic,
//     format, the defining query) are its FDW options.
//   - System relations are tables in pg_catalog where PostgreSQL's are,
//     views elsewhere (information_schema, fvsql_catalog, pg_roles…).
//     Each has a fixed OID (PostgreSQL's for its catalogs: relOID), and
//     every relation, user or system, a row type in pg_type (typtype
//     'c', typrelid its OID: rowTypeOID) and its columns in pg_attribute,
//     so joins through typrelid, attrelid and reltype meet one row.
//   - Functions (pg_proc) are the expression functions fvsql knows, in
//     pg_catalog, with OIDs from 12000 in name order; types (pg_type) are
//     fvsql's types with PostgreSQL's OIDs.

// cols parses "name type, …" into columns (types as types.Parse reads
// them; PostgreSQL's internal types map to the nearest fvsql type:
// int2vector to int2[], oidvector to oid[], pg_node_tree to text).
func cols(spec string) []Column {
	var out []Column
	for _, part := range strings.Split(spec, ",") {
		f := strings.Fields(part)
		t, err := types.Parse(strings.Join(f[1:], " "))
		if err != nil {
			panic(fmt.Sprintf("catalog: column %q: %v", part, err))
		}
		out = append(out, Column{Name: f[0], Type: t})
	}
	return out
}

// systemViews are the system relations that are views in PostgreSQL (or
// generated listings in fvsql_catalog); the others are tables.
var systemViews = map[string]bool{}

func registerView(schema, name string, oid uint32, c []Column, rows func(c *Catalog) []types.Row) {
	registerSystem(schema, name, oid, c, rows)
	systemViews[schema+"."+name] = true
}

func none(*Catalog) []types.Row { return nil }

func textArray(ss []string) types.Value {
	if len(ss) == 0 {
		return types.NullValue
	}
	elems := make([]types.Value, len(ss))
	for i, s := range ss {
		elems[i] = text(s)
	}
	return types.NewArray(types.TextArray, elems)
}

// relKind is pg_class.relkind.
func relKind(r *Relation) string {
	switch r.Kind {
	case MaterializedView:
		return "m"
	case Sink:
		return "f"
	case System:
		if systemViews[r.Name] || strings.HasPrefix(r.Name, "fvsql_catalog.") {
			return "v"
		}
	}
	return "r"
}

// pgClassRelations lists the relations of pg_class: user relations, the
// system relations, and the dynamic ones (fvsql_catalog.pipelines).
func (c *Catalog) pgClassRelations() []*Relation {
	out := append(c.List(""), SystemRelations()...)
	c.mu.RLock()
	var dyn []*Relation
	for _, t := range c.dynamic {
		dyn = append(dyn, t.rel)
	}
	c.mu.RUnlock()
	sort.Slice(dyn, func(i, j int) bool { return dyn[i].Name < dyn[j].Name })
	return append(out, dyn...)
}

// System relation OIDs. pg_catalog's tables have PostgreSQL's own
// (fixed in its source); its views, which PostgreSQL numbers at initdb,
// and the other schemas' relations have fixed ones in 13500-13899, so
// every process and every restart agrees:
//
//	13500-13599 pg_catalog views (pg_roles, pg_stat_user_tables, …)
//	13600-13699 information_schema views
//	13700-13799 fvsql_catalog views
//	13800-13899 relations other packages register (AddSystemTable)
//	            without an entry in dynamicOIDs, by name
var dynamicOIDs = map[string]uint32{
	"pg_catalog.pg_stat_activity": 13520,
	"fvsql_catalog.pipelines":     13702,
}

// relOID is a relation's OID; a dynamic system relation, registered
// without one, has its entry in dynamicOIDs or one from 13800 by name.
func (c *Catalog) relOID(r *Relation) uint32 {
	if r.OID != 0 {
		return r.OID
	}
	if o, ok := dynamicOIDs[r.Name]; ok {
		return o
	}
	c.mu.RLock()
	names := make([]string, 0, len(c.dynamic))
	for n := range c.dynamic {
		if _, ok := dynamicOIDs[n]; !ok {
			names = append(names, n)
		}
	}
	c.mu.RUnlock()
	sort.Strings(names)
	for i, n := range names {
		if n == r.Name {
			return uint32(13800 + i)
		}
	}
	return 0
}

// bootstrapRowTypes are the row type OIDs PostgreSQL fixes for its
// bootstrap catalogs.
var bootstrapRowTypes = map[string]uint32{
	"pg_catalog.pg_type": 71, "pg_catalog.pg_attribute": 75,
	"pg_catalog.pg_proc": 81, "pg_catalog.pg_class": 83,
}

// rowTypeOID is the OID of a relation's row type (pg_class.reltype, the
// pg_type row whose typrelid is the relation). PostgreSQL gives it an
// OID of its own; here it is the relation's OID (OIDs are unique per
// catalog, and no relation OID is a built-in type's), except for the
// bootstrap catalogs, whose row types have PostgreSQL's OIDs.
func (c *Catalog) rowTypeOID(r *Relation) uint32 {
	if o, ok := bootstrapRowTypes[r.Name]; ok && r.Kind == System {
		return o
	}
	return c.relOID(r)
}

// relOptions is how a relation's WITH options read as reloptions.
func relOptions(r *Relation) []string {
	var out []string
	if r.Backend != "" {
		out = append(out, "backend="+RedactURI(r.Backend))
	}
	if r.Topic != "" {
		out = append(out, "topic="+r.Topic)
	}
	if r.Format != "" {
		out = append(out, "format="+r.Format)
	}
	if r.Partitions > 0 {
		out = append(out, fmt.Sprintf("partitions=%d", r.Partitions))
	}
	if len(r.Key) > 0 {
		out = append(out, "key="+strings.Join(r.Key, ","))
	}
	if r.Watermark != nil {
		delay := types.NewInterval(types.IntervalValue{Micros: r.Watermark.Delay})
		out = append(out, fmt.Sprintf("watermark=%s - '%s'", r.Watermark.Column, delay.Text()))
	}
	keys := make([]string, 0, len(r.Options))
	for k := range r.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+r.Options[k])
	}
	return out
}

// sinkServer is the name of a sink's "foreign server": its backend, its
// password masked.
func sinkServer(r *Relation) string {
	if r.Backend == "" {
		return "kafka"
	}
	return RedactURI(r.Backend)
}

// foreignServers lists the distinct backends of sinks, with OIDs from
// 13300 in name order.
func (c *Catalog) foreignServers() (names []string, oids map[string]uint32) {
	seen := map[string]bool{}
	for _, r := range c.List(Sink) {
		if s := sinkServer(r); !seen[s] {
			seen[s] = true
			names = append(names, s)
		}
	}
	sort.Strings(names)
	oids = map[string]uint32{}
	for i, n := range names {
		oids[n] = uint32(13300 + i)
	}
	return names, oids
}

// viewDefinition is pg_get_viewdef's text for a continuous relation:
// its query, without the CREATE … AS before it.
func viewDefinition(r *Relation) string {
	q := definingQuery(r.SQL)
	if q == "" {
		return ""
	}
	return " " + q + ";"
}

// definingQuery cuts the query out of CREATE STREAM|MATERIALIZED
// VIEW|SINK name [IF NOT EXISTS] [WITH (…)] AS query: what follows the
// first AS outside parentheses, quotes and comments.
func definingQuery(stmt string) string {
	s := strings.TrimSuffix(strings.TrimSpace(stmt), ";")
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return s
			}
			i += j + 1
		case c == '-' && strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return s
			}
			i += j
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && (c == 'a' || c == 'A') && i > 0 && i+2 < len(s) &&
			strings.EqualFold(s[i:i+2], "as") && isSpace(s[i-1]) && isSpace(s[i+2]):
			return withoutTrailingOptions(strings.TrimSpace(s[i+2:]))
		}
	}
	return s
}

// withoutTrailingOptions drops a WITH (…) after the query (the options
// of CREATE … AS query WITH (…)): no query ends with one.
func withoutTrailingOptions(q string) string {
	if !strings.HasSuffix(q, ")") {
		return q
	}
	depth := 0
	for i := len(q) - 1; i >= 0; i-- {
		switch q[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				head := strings.TrimRight(q[:i], " \t\n\r")
				if len(head) >= 4 && strings.EqualFold(head[len(head)-4:], "with") && (len(head) == 4 || isSpace(head[len(head)-5])) {
					return strings.TrimSpace(head[:len(head)-4])
				}
				return q
			}
		case '\'':
			// a quoted option value: find its opening quote
			if j := strings.LastIndexByte(q[:i], '\''); j >= 0 {
				i = j
			}
		}
	}
	return q
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// typeInput is pg_type.typinput: array_in for arrays, none (0) for the
// others, whose input functions are not in pg_proc.
func typeInput(t types.Type) uint32 {
	if t.IsArray() && !t.IsVector() { // int2vector and oidvector have input functions of their own
		return arrayInOID
	}
	return 0
}

// typeStorage is pg_type.typstorage / pg_attribute.attstorage.
func typeStorage(t types.Type) string {
	if t.Size() > 0 {
		return "p"
	}
	return "x"
}

// typeAlign is pg_type.typalign.
func typeAlign(t types.Type) string {
	switch t.Size() {
	case 1, 64:
		return "c"
	case 2:
		return "s"
	case 4:
		return "i"
	case 8, 16:
		return "d"
	}
	if t.IsArray() && t.Elem().Size() == 8 {
		return "d"
	}
	return "i"
}

// collation is pg_type.typcollation: 100 (default) for text types.
func collation(t types.Type) uint32 {
	if t.IsString() || t.IsArray() && t.Elem().IsString() {
		return 100
	}
	return 0
}

func init() {
	registerSystem("pg_catalog", "pg_namespace", 2615, cols("oid oid, nspname name, nspowner oid, nspacl text[]"),
		func(*Catalog) []types.Row {
			return []types.Row{
				{oid(PgCatalogOID), name("pg_catalog"), oid(10), types.NullValue},
				{oid(PublicOID), name("public"), oid(10), types.NullValue},
				{oid(InformationSchemaOID), name("information_schema"), oid(10), types.NullValue},
				{oid(FvsqlCatalogOID), name("fvsql_catalog"), oid(10), types.NullValue},
			}
		})
	registerSystem("pg_catalog", "pg_database", 1262, cols(`oid oid, datname name, datdba oid, encoding int4,
		datlocprovider "char", datistemplate bool, datallowconn bool, datconnlimit int4, datfrozenxid oid,
		datminmxid oid, dattablespace oid, datcollate name, datctype name, daticulocale text, daticurules text,
		datcollversion text, datacl text[]`),
		func(*Catalog) []types.Row {
			return []types.Row{{oid(16383), name(Database), oid(10), i4(6), char("c"), boolean(false), boolean(true), i4(-1),
				oid(0), oid(0), oid(1663), name("C"), name("C"), types.NullValue, types.NullValue, types.NullValue, types.NullValue}}
		})
	registerSystem("pg_catalog", "pg_tablespace", 1213, cols("oid oid, spcname name, spcowner oid, spcacl text[], spcoptions text[]"),
		func(*Catalog) []types.Row {
			return []types.Row{
				{oid(1663), name("pg_default"), oid(10), types.NullValue, types.NullValue},
				{oid(1664), name("pg_global"), oid(10), types.NullValue, types.NullValue},
			}
		})
	// pg_roles, pg_authid, pg_user: roles.go
	registerSystem("pg_catalog", "pg_auth_members", 1261, cols("oid oid, roleid oid, member oid, grantor oid, admin_option bool"), none)

	registerSystem("pg_catalog", "pg_class", 1259, cols(`oid oid, relname name, relnamespace oid, reltype oid,
		reloftype oid, relowner oid, relam oid, relfilenode oid, reltablespace oid, relpages int4, reltuples float4,
		relallvisible int4, reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence "char",
		relkind "char", relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool,
		relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident "char",
		relispartition bool, relrewrite oid, relfrozenxid oid, relminmxid oid, relacl text[], reloptions text[],
		relpartbound text`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.pgClassRelations() {
				_, rel, ns := relNamespace(r)
				kind := relKind(r)
				var opts types.Value = types.NullValue
				if kind == "r" || kind == "m" {
					opts = textArray(relOptions(r))
				}
				replident := "d"
				if kind != "r" && kind != "m" {
					replident = "n"
				}
				rows = append(rows, types.Row{
					oid(c.relOID(r)), name(rel), oid(ns), oid(c.rowTypeOID(r)),
					oid(0), oid(10), oid(0), oid(0), oid(0), i4(0), float4(-1),
					i4(0), oid(0), boolean(false), boolean(false), char("p"),
					char(kind), i2(len(r.Columns)), i2(0), boolean(false), boolean(false), boolean(false),
					boolean(false), boolean(false), boolean(true), char(replident),
					boolean(false), oid(0), oid(0), oid(0), types.NullValue, opts,
					types.NullValue,
				})
			}
			return rows
		})
	registerSystem("pg_catalog", "pg_attribute", 1249, cols(`attrelid oid, attname name, atttypid oid,
		attstattarget int4, attlen int2, attnum int2, attndims int4, attcacheoff int4, atttypmod int4,
		attbyval bool, attalign "char", attstorage "char", attcompression "char", attnotnull bool,
		atthasdef bool, atthasmissing bool, attidentity "char", attgenerated "char", attisdropped bool,
		attislocal bool, attinhcount int4, attcollation oid, attacl text[], attoptions text[],
		attfdwoptions text[], attmissingval text`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			attr := func(r *Relation, cl Column, num int) types.Row {
				t := cl.Type
				ndims := 0
				if t.IsArray() {
					ndims = 1
				}
				return types.Row{
					oid(c.relOID(r)), name(cl.Name), oid(t.OID()),
					i4(-1), i2(int(t.Size())), i2(num), i4(ndims), i4(-1), i4(-1),
					boolean(t.Size() > 0 && t.Size() <= 8), char(typeAlign(t)), char(typeStorage(t)), char(""), boolean(cl.NotNull),
					boolean(false), boolean(false), char(""), char(""), boolean(false),
					boolean(true), i4(0), oid(collation(t)), types.NullValue, types.NullValue,
					types.NullValue, types.NullValue,
				}
			}
			for _, r := range c.pgClassRelations() {
				for i, cl := range r.Columns {
					rows = append(rows, attr(r, cl, i+1))
				}
				if r.HasMeta() {
					for i, cl := range MetaColumns {
						if !r.Shadowed(cl) {
							rows = append(rows, attr(r, cl, -1-i))
						}
					}
				}
			}
			return rows
		})
	registerSystem("pg_catalog", "pg_type", 1247, cols(`oid oid, typname name, typnamespace oid, typowner oid,
		typlen int2, typbyval bool, typtype "char", typcategory "char", typispreferred bool, typisdefined bool,
		typdelim "char", typrelid oid, typsubscript oid, typelem oid, typarray oid, typinput oid, typoutput oid,
		typreceive oid, typsend oid, typmodin oid, typmodout oid, typanalyze oid, typalign "char",
		typstorage "char", typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, typcollation oid,
		typdefaultbin text, typdefault text, typacl text[]`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			seen := map[uint32]bool{}
			for _, t := range types.All() {
				if seen[t.OID()] || t.OID() == 0 {
					continue
				}
				seen[t.OID()] = true
				var elem uint32 // an array's element type; 0 for the others
				if t.IsArray() {
					elem = t.Elem().OID()
				}
				typtype, preferred := "b", t == types.Text || t == types.Float8 || t == types.Bool || t == types.TimestampTZ || t == types.Interval || t == types.Oid
				if t.IsPseudo() {
					typtype = "p"
				}
				rows = append(rows, types.Row{
					oid(t.OID()), name(t.TypName()), oid(PgCatalogOID), oid(10),
					i2(int(t.Size())), boolean(t.Size() > 0 && t.Size() <= 8), char(typtype), char(t.Category()), boolean(preferred), boolean(true),
					char(","), oid(0), oid(0), oid(elem), oid(t.ArrayOID()), oid(typeInput(t)), oid(0),
					oid(0), oid(0), oid(0), oid(0), oid(0), char(typeAlign(t)),
					char(typeStorage(t)), boolean(false), oid(0), i4(-1), i4(0), oid(collation(t)),
					types.NullValue, types.NullValue, types.NullValue,
				})
			}
			// every relation's row type (typtype 'c'), as PostgreSQL has
			// one for each table and view; no array type of it
			for _, r := range c.pgClassRelations() {
				_, rel, ns := relNamespace(r)
				rows = append(rows, types.Row{
					oid(c.rowTypeOID(r)), name(rel), oid(ns), oid(10),
					i2(-1), boolean(false), char("c"), char("C"), boolean(false), boolean(true),
					char(","), oid(c.relOID(r)), oid(0), oid(0), oid(0), oid(0), oid(0),
					oid(0), oid(0), oid(0), oid(0), oid(0), char("d"),
					char("x"), boolean(false), oid(0), i4(-1), i4(0), oid(0),
					types.NullValue, types.NullValue, types.NullValue,
				})
			}
			return rows
		})
	registerSystem("pg_catalog", "pg_proc", 1255, cols(`oid oid, proname name, pronamespace oid, proowner oid,
		prolang oid, procost float4, prorows float4, provariadic oid, prosupport oid, prokind "char",
		prosecdef bool, proleakproof bool, proisstrict bool, proretset bool, provolatile "char",
		proparallel "char", pronargs int2, pronargdefaults int2, prorettype oid, proargtypes oidvector,
		proallargtypes oid[], proargmodes "char"[], proargnames text[], proargdefaults text,
		protrftypes oid[], prosrc text, probin text, prosqlbody text, proconfig text[], proacl text[]`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, p := range procs() {
				rows = append(rows, p.row())
			}
			for _, f := range c.Functions() {
				rows = append(rows, f.procRow())
			}
			return rows
		})
	registerSystem("pg_catalog", "pg_language", 2612, cols(`oid oid, lanname name, lanowner oid, lanispl bool,
		lanpltrusted bool, lanplcallfoid oid, laninline oid, lanvalidator oid, lanacl text[]`),
		func(*Catalog) []types.Row {
			return []types.Row{
				{oid(12), name("internal"), oid(10), boolean(false), boolean(false), oid(0), oid(0), oid(0), types.NullValue},
				{oid(14), name("sql"), oid(10), boolean(false), boolean(true), oid(0), oid(0), oid(0), types.NullValue},
				{oid(WasmLanguageOID), name("wasm"), oid(10), boolean(true), boolean(true), oid(0), oid(0), oid(0), types.NullValue},
			}
		})
	registerSystem("pg_catalog", "pg_am", 2601, cols(`oid oid, amname name, amhandler oid, amtype "char"`),
		func(*Catalog) []types.Row {
			return []types.Row{{oid(2), name("heap"), oid(0), char("t")}, {oid(403), name("btree"), oid(0), char("i")}}
		})
	registerSystem("pg_catalog", "pg_collation", 3456, cols(`oid oid, collname name, collnamespace oid, collowner oid,
		collprovider "char", collisdeterministic bool, collencoding int4, collcollate text, collctype text,
		colliculocale text, collversion text`),
		func(*Catalog) []types.Row {
			return []types.Row{
				{oid(100), name("default"), oid(PgCatalogOID), oid(10), char("d"), boolean(true), i4(-1), types.NullValue, types.NullValue, types.NullValue, types.NullValue},
				{oid(950), name("C"), oid(PgCatalogOID), oid(10), char("c"), boolean(true), i4(-1), text("C"), text("C"), types.NullValue, types.NullValue},
			}
		})
	registerSystem("pg_catalog", "pg_foreign_data_wrapper", 2328, cols(`oid oid, fdwname name, fdwowner oid,
		fdwhandler oid, fdwvalidator oid, fdwacl text[], fdwoptions text[]`),
		func(*Catalog) []types.Row {
			return []types.Row{{oid(13290), name(Database), oid(10), oid(0), oid(0), types.NullValue, types.NullValue}}
		})
	registerSystem("pg_catalog", "pg_foreign_server", 1417, cols(`oid oid, srvname name, srvowner oid, srvfdw oid,
		srvtype text, srvversion text, srvacl text[], srvoptions text[]`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			names, oids := c.foreignServers()
			for _, n := range names {
				rows = append(rows, types.Row{oid(oids[n]), name(n), oid(10), oid(13290), types.NullValue, types.NullValue, types.NullValue, types.NullValue})
			}
			return rows
		})
	registerSystem("pg_catalog", "pg_foreign_table", 3118, cols("ftrelid oid, ftserver oid, ftoptions text[]"),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			_, oids := c.foreignServers()
			for _, r := range c.List(Sink) {
				opts := relOptions(r)
				if r.Backend != "" {
					opts = opts[1:] // the server says it
				}
				if q := definingQuery(r.SQL); q != "" {
					opts = append(opts, "query="+q)
				}
				rows = append(rows, types.Row{oid(r.OID), oid(oids[sinkServer(r)]), textArray(opts)})
			}
			return rows
		})
	registerView("pg_catalog", "pg_views", 13501, cols("schemaname name, viewname name, viewowner name, definition text"), none)
	registerView("pg_catalog", "pg_matviews", 13502, cols(`schemaname name, matviewname name, matviewowner name,
		tablespace name, hasindexes bool, ispopulated bool, definition text`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.List(MaterializedView) {
				rows = append(rows, types.Row{name("public"), name(r.Name), name(Database), types.NullValue,
					boolean(false), boolean(true), nullOr(viewDefinition(r))})
			}
			return rows
		})
	registerView("pg_catalog", "pg_tables", 13503, cols(`schemaname name, tablename name, tableowner name,
		tablespace name, hasindexes bool, hasrules bool, hastriggers bool, rowsecurity bool`),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.List(Stream) {
				rows = append(rows, types.Row{name("public"), name(r.Name), name(Database), types.NullValue,
					boolean(false), boolean(false), boolean(false), boolean(false)})
			}
			return rows
		})
	// pg_settings: settings.go

	// Relations of objects fvsql does not have: empty, with the columns
	// clients join on.
	for _, e := range []struct {
		name string
		oid  uint32
		cols string
	}{
		{"pg_index", 2610, `indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool,
			indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, indisclustered bool,
			indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, indisreplident bool,
			indkey int2vector, indcollation oidvector, indclass oidvector, indoption int2vector, indexprs text, indpred text`},
		{"pg_constraint", 2606, `oid oid, conname name, connamespace oid, contype "char", condeferrable bool,
			condeferred bool, convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid,
			confrelid oid, confupdtype "char", confdeltype "char", confmatchtype "char", conislocal bool,
			coninhcount int4, connoinherit bool, conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[],
			conffeqop oid[], confdelsetcols int2[], conexclop oid[], conbin text`},
		{"pg_description", 2609, "objoid oid, classoid oid, objsubid int4, description text"},
		{"pg_shdescription", 2396, "objoid oid, classoid oid, description text"},
		{"pg_inherits", 2611, "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool"},
		{"pg_attrdef", 2604, "oid oid, adrelid oid, adnum int2, adbin text"},
		{"pg_trigger", 2620, `oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2,
			tgenabled "char", tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid,
			tgdeferrable bool, tginitdeferred bool, tgnargs int2, tgattr int2vector, tgargs bytea, tgqual text,
			tgoldtable name, tgnewtable name`},
		{"pg_policy", 3256, `oid oid, polname name, polrelid oid, polcmd "char", polpermissive bool,
			polroles oid[], polqual text, polwithcheck text`},
		{"pg_statistic_ext", 3381, `oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid,
			stxstattarget int4, stxkeys int2[], stxkind "char"[], stxexprs text`},
		{"pg_publication", 6104, `oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool,
			pubupdate bool, pubdelete bool, pubtruncate bool, pubviaroot bool`},
		{"pg_publication_rel", 6106, "oid oid, prpubid oid, prrelid oid, prqual text, prattrs int2[]"},
		{"pg_publication_namespace", 6237, "oid oid, pnpubid oid, pnnspid oid"},
		{"pg_rewrite", 2618, `oid oid, rulename name, ev_class oid, ev_type "char", ev_enabled "char",
			is_instead bool, ev_qual text, ev_action text`},
		{"pg_partitioned_table", 3350, `partrelid oid, partstrat "char", partnatts int2, partdefid oid,
			partattrs int2[], partclass oid[], partcollation oid[], partexprs text`},
		{"pg_enum", 3501, "oid oid, enumtypid oid, enumsortorder float4, enumlabel name"},
		{"pg_range", 3541, "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, rngcanonical oid, rngsubdiff oid"},
		{"pg_sequence", 2224, "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, seqmin int8, seqcache int8, seqcycle bool"},
		{"pg_extension", 3079, `oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool,
			extversion text, extconfig oid[], extcondition text[]`},
		{"pg_event_trigger", 3466, `oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid,
			evtenabled "char", evttags text[]`},
		{"pg_default_acl", 826, `oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype "char", defaclacl text[]`},
		{"pg_db_role_setting", 2964, "setdatabase oid, setrole oid, setconfig text[]"},
		{"pg_depend", 2608, `classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid,
			refobjsubid int4, deptype "char"`},
		{"pg_cast", 2605, `oid oid, castsource oid, casttarget oid, castfunc oid, castcontext "char", castmethod "char"`},
		{"pg_operator", 2617, `oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind "char",
			oprcanmerge bool, oprcanhash bool, oprleft oid, oprright oid, oprresult oid, oprcom oid,
			oprnegate oid, oprcode oid, oprrest oid, oprjoin oid`},
		{"pg_conversion", 2607, `oid oid, conname name, connamespace oid, conowner oid, conforencoding int4,
			contoencoding int4, conproc oid, condefault bool`},
		{"pg_opclass", 2616, `oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid,
			opcfamily oid, opcintype oid, opcdefault bool, opckeytype oid`},
		{"pg_opfamily", 2753, "oid oid, opfmethod oid, opfname name, opfnamespace oid, opfowner oid"},
		{"pg_amop", 2602, "oid oid, amopfamily oid, amoplefttype oid, amoprighttype oid, amopstrategy int2, amoppurpose \"char\", amopopr oid, amopmethod oid, amopsortfamily oid"},
		{"pg_amproc", 2603, "oid oid, amprocfamily oid, amproclefttype oid, amprocrighttype oid, amprocnum int2, amproc oid"},
		{"pg_ts_config", 3602, "oid oid, cfgname name, cfgnamespace oid, cfgowner oid, cfgparser oid"},
		{"pg_ts_dict", 3600, "oid oid, dictname name, dictnamespace oid, dictowner oid, dicttemplate oid, dictinitoption text"},
		{"pg_ts_parser", 3601, "oid oid, prsname name, prsnamespace oid"},
		{"pg_ts_template", 3764, "oid oid, tmplname name, tmplnamespace oid"},
		{"pg_largeobject_metadata", 2995, "oid oid, lomowner oid, lomacl text[]"},
		{"pg_user_mapping", 1418, "oid oid, umuser oid, umserver oid, umoptions text[]"},
		{"pg_subscription", 6100, "oid oid, subdbid oid, subname name, subowner oid, subenabled bool"},
		{"pg_statistic_ext_data", 3429, "stxoid oid, stxdinherit bool"},
	} {
		registerSystem("pg_catalog", e.name, e.oid, cols(e.cols), none)
	}

	T := types.Text
	registerView("fvsql_catalog", "streams", 13700, []Column{
		col("name", T), col("kind", T), col("backend", T), col("topic", T), col("format", T), col("partitions", types.Int4), col("key", T), col("sql", T),
		col("oid", types.Oid),
	}, func(c *Catalog) []types.Row {
		var rows []types.Row
		for _, r := range c.List("") {
			rows = append(rows, types.Row{text(r.Name), text(string(r.Kind)), text(r.BackendURI()), text(r.Topic), text(r.Format), i4(r.Partitions), nullOr(strings.Join(r.Key, ",")), nullOr(r.SQL), oid(r.OID)})
		}
		return rows
	})
	// fvsql_catalog.definitions backs pg_get_viewdef: the query of each
	// materialized view and sink, as pg_get_viewdef prints a view's.
	registerView("fvsql_catalog", "definitions", 13701, cols("oid oid, definition text"),
		func(c *Catalog) []types.Row {
			var rows []types.Row
			for _, r := range c.List("") {
				if d := viewDefinition(r); d != "" {
					rows = append(rows, types.Row{oid(r.OID), text(d)})
				}
			}
			return rows
		})
}
