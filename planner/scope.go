package planner

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
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
	name   string
	typ    types.Type
	hidden bool // not expanded by *
	relOID uint32
	attnum int16
}

type scope struct {
	cols []scopeCol
}

// resolve finds a column by optional qualifier and name.
func (s *scope) resolve(table, name string) (int, error) {
	found := -1
	for i, c := range s.cols {
		if c.name != name || (table != "" && c.table != table) {
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
		if c.table == t {
			return true
		}
	}
	return false
}

// tableOID is the OID of the relation a qualifier names (of the only
// relation in scope when table is ""): the value of its tableoid system
// column.
func (s *scope) tableOID(table string) (uint32, bool) {
	found := uint32(0)
	for _, c := range s.cols {
		if c.relOID == 0 || table != "" && c.table != table {
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

func (s *scope) outColumns() []Column {
	out := make([]Column, 0, len(s.cols))
	for _, c := range s.cols {
		if !c.hidden {
			out = append(out, Column{Name: c.name, Type: c.typ, TableOID: c.relOID, AttNum: c.attnum})
		}
	}
	return out
}
