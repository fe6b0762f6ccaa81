package planner

import (
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// Column is one output column of a plan.
type Column struct {
	Name     string
	Type     types.Type
	TableOID uint32
	AttNum   int16
}

// scopeCol is a column visible to expressions at some point of a query.
type scopeCol struct {
	table  string // qualifier: alias or relation name
	schema string // the relation's schema when table is its name (no alias), for schema.table.column
	name   string
	typ    types.Type
	hidden bool // not expanded by *
	// untyped: a literal of unknown type in a select list, typed text
	// there; a UNION (and so VALUES) resolves it with its other branch's
	// type, as PostgreSQL resolves an unknown literal.
	untyped bool
	relOID  uint32
	attnum  int16
	// fields and fieldTypes describe a record column (types.Record).
	fields     []string
	fieldTypes []types.Type
}

type scope struct {
	cols []scopeCol
}

// resolve finds a column by optional qualifier and name.
func (s *scope) resolve(table, name string) (int, error) {
	found := -1
	for i, c := range s.cols {
		if c.name != name || (table != "" && !c.qualifiedBy(table)) {
			continue
		}
		if found >= 0 {
			return -1, pgerror.New(pgerror.AmbiguousColumn, "column reference %q is ambiguous", name)
		}
		found = i
	}
	if found < 0 {
		if table != "" {
			if !s.hasTable(table) {
				return -1, pgerror.New(pgerror.UndefinedTable, "missing FROM-clause entry for table %q", table)
			}
			return -1, pgerror.New(pgerror.UndefinedColumn, "column %s.%s does not exist", table, name)
		}
		return -1, pgerror.New(pgerror.UndefinedColumn, "column %q does not exist", name)
	}
	return found, nil
}

func (s *scope) hasTable(t string) bool {
	for _, c := range s.cols {
		if c.qualifiedBy(t) {
			return true
		}
	}
	return false
}

// qualifiedBy reports whether a qualifier names the column's FROM item:
// its alias, or its relation's name, alone or after its schema
// (public.items.id, pg_catalog.pg_class.relname), as in PostgreSQL, where
// an aliased relation is known by its alias only.
func (c *scopeCol) qualifiedBy(table string) bool {
	if schema, name, ok := strings.Cut(table, "."); ok && c.schema != "" {
		return c.schema == schema && c.table == name
	}
	return c.table == table
}

// tableOID is the OID of the relation a qualifier names (of the only
// relation in scope when table is ""): the value of its tableoid system
// column.
func (s *scope) tableOID(table string) (uint32, bool) {
	found := uint32(0)
	for _, c := range s.cols {
		if c.relOID == 0 || table != "" && !c.qualifiedBy(table) {
			continue
		}
		if found != 0 && found != c.relOID {
			return 0, false // ambiguous
		}
		found = c.relOID
	}
	return found, found != 0
}

func (s *scope) ref(i int) *expr.Expr {
	c := s.cols[i]
	return expr.Col(i, c.typ, c.name)
}

// visible are the columns * expands to.
func (s *scope) visible() []scopeCol {
	out := make([]scopeCol, 0, len(s.cols))
	for _, c := range s.cols {
		if !c.hidden {
			out = append(out, c)
		}
	}
	return out
}

func (s *scope) outColumns() []Column {
	out := make([]Column, 0, len(s.cols))
	for _, c := range s.cols {
		if !c.hidden {
			out = append(out, Column{Name: c.name, Type: c.typ, TableOID: c.relOID, AttNum: c.attnum})
		}
	}
	return out
}

// relationScope is the scope of the relation rel that t names in FROM:
// its columns, qualified by t's alias or rel's name. A hidden join's
// visible columns keep the qualifiers and names they had in the join it
// stands for (hideJoin).
func relationScope(cat Catalog, t *sql.TableName, rel *catalog.Relation) *scope {
	qual, schema := t.Name, relSchema(rel)
	if t.Alias != "" {
		qual, schema = t.Alias, ""
	}
	var joined []joinColumn
	if t.Schema == "" {
		joined = joinColumns(cat, t.Name)
	}
	sc := &scope{}
	for i, c := range rel.ReadColumns() {
		col := scopeCol{table: qual, schema: schema, name: c.Name, typ: c.Type, hidden: c.Hidden, relOID: rel.OID, attnum: int16(i + 1)}
		if len(joined) > 0 && !c.Hidden {
			col.table, col.schema, col.name = joined[0].table, joined[0].schema, joined[0].name
			joined = joined[1:]
		}
		sc.cols = append(sc.cols, col)
	}
	return sc
}

// relSchema is the schema a relation lives in: a system relation's name
// carries it (pg_catalog.pg_class); user relations live in public.
func relSchema(rel *catalog.Relation) string {
	if rel.Kind == catalog.System {
		if schema, _, ok := strings.Cut(rel.Name, "."); ok {
			return schema
		}
	}
	return "public"
}
