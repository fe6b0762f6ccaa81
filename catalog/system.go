package catalog

import (
	"context"
	"net/url"
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
	live func(ctx context.Context) []types.Row // AddSystemTable's, instead of rows
	// ctxRows, instead of rows, for catalog relations whose rows depend
	// on the query's context (pg_settings, the roles of connected users)
	ctxRows func(ctx context.Context, c *Catalog) []types.Row
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

// registerSystemCtx registers a system relation whose rows depend on the
// query's context.
func registerSystemCtx(schema, name string, oid uint32, cols []Column, rows func(ctx context.Context, c *Catalog) []types.Row) {
	registerSystem(schema, name, oid, cols, nil)
	systemTables[schema+"."+name].ctxRows = rows
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

// NamespaceOID is the OID of a schema (pg_namespace.oid).
func NamespaceOID(schema string) (uint32, bool) {
	o, ok := map[string]uint32{"pg_catalog": PgCatalogOID, "public": PublicOID,
		"information_schema": InformationSchemaOID, "fvsql_catalog": FvsqlCatalogOID}[schema]
	return o, ok
}

func isSystemSchema(s string) bool {
	switch s {
	case "pg_catalog", "information_schema", "fvsql_catalog", "public":
		return true
	}
	return false
}

// SystemRows generates the current rows of a system relation. ctx bounds
// the work of tables whose rows ask other parts of the process (a
// pipeline's lag reads offsets from Kafka).
func (c *Catalog) SystemRows(ctx context.Context, name string) ([]types.Row, error) {
	if schema, rel, ok := strings.Cut(name, "."); ok {
		if t := c.dynamicTable(schema, rel); t != nil {
			return t.live(ctx), nil
		}
	}
	t, ok := systemTables[name]
	if !ok {
		return nil, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist", name)
	}
	if t.ctxRows != nil {
		return t.ctxRows(ctx, c), nil
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

// BackendURI is the relation's backend as users see it: its password, if
// the URI has one, masked (RedactURI).
func (r *Relation) BackendURI() string {
	if r.Backend == "" {
		return "kafka (server default)"
	}
	return RedactURI(r.Backend)
}

// RedactURI is a backend URI fit to show: every user may list relations, so
// a password in it (redis://:secret@host) reads xxxxx, as
// url.URL.Redacted writes it. A URI without a password is returned as it
// is; one that does not parse (CREATE refuses those) is not shown at all.
// The catalog keeps the real URI: the backend needs it.
func RedactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparsable URI)"
	}
	if _, ok := u.User.Password(); !ok {
		return uri
	}
	return u.Redacted()
}

// AddSystemTable registers a system relation whose rows another package
// produces (the engine's live pipeline records), in schema fvsql_catalog,
// or in pg_catalog when name is "pg_catalog.<name>" (pg_stat_activity,
// whose rows are the wire server's connections).
func (c *Catalog) AddSystemTable(name string, cols []Column, rows func(ctx context.Context) []types.Row) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dynamic == nil {
		c.dynamic = map[string]*systemTable{}
	}
	full := "fvsql_catalog." + name
	if rel, ok := strings.CutPrefix(name, "pg_catalog."); ok {
		full = "pg_catalog." + rel
	}
	c.dynamic[full] = &systemTable{
		rel:  &Relation{OID: 0, Name: full, Kind: System, Columns: cols},
		live: rows,
	}
}

func (c *Catalog) dynamicTable(schema, name string) *systemTable {
	switch schema {
	case "fvsql_catalog", "pg_catalog":
	case "": // an unqualified name looks in pg_catalog first
		schema = "pg_catalog"
	default:
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.dynamic[schema+"."+name]
}
