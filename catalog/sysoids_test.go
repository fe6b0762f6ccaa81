package catalog

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

// TestSystemOIDs: every relation of pg_class has an OID of its own, a row
// type in pg_type whose typrelid is it, and columns in pg_attribute; no
// pg_type row points at a relation pg_class does not have (DBeaver's
// type list joins pg_type to pg_class through typrelid).
func TestSystemOIDs(t *testing.T) {
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	r := &Relation{Name: "s", Kind: Stream, Topic: "s", Format: "json", Partitions: 1,
		Columns: []Column{{Name: "a", Type: types.Int8}}}
	b, _ := Encode(r)
	if _, err := c.Apply(0, r.Name, b); err != nil {
		t.Fatal(err)
	}
	live := func(context.Context) []types.Row { return nil }
	c.AddSystemTable("pipelines", []Column{{Name: "name", Type: types.Text}}, live)
	c.AddSystemTable("pg_catalog.pg_stat_activity", []Column{{Name: "pid", Type: types.Int4}}, live)
	c.AddSystemTable("something_new", []Column{{Name: "x", Type: types.Int4}}, live)

	rowsOf := func(rel string) (*Relation, []types.Row) {
		schema, name, _ := splitSystemName(rel)
		r, err := c.Lookup(schema, name)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := c.SystemRows(context.Background(), rel)
		if err != nil {
			t.Fatal(err)
		}
		return r, rows
	}
	classRel, class := rowsOf("pg_catalog.pg_class")
	typeRel, typ := rowsOf("pg_catalog.pg_type")
	attRel, att := rowsOf("pg_catalog.pg_attribute")
	_, nsp := rowsOf("pg_catalog.pg_namespace")
	ci := func(r *Relation, n string) int { return r.ColumnIndex(n) }

	namespaces := map[int64]bool{}
	for _, row := range nsp {
		namespaces[row[0].I] = true
	}
	relByOID := map[int64]string{}
	reltype := map[int64]int64{}
	for _, row := range class {
		o, n := row[ci(classRel, "oid")].I, row[ci(classRel, "relname")].S
		if o == 0 {
			t.Errorf("pg_class %s has OID 0", n)
		}
		if prev, dup := relByOID[o]; dup {
			t.Errorf("pg_class OID %d is both %s and %s", o, prev, n)
		}
		relByOID[o] = n
		reltype[o] = row[ci(classRel, "reltype")].I
		if !namespaces[row[ci(classRel, "relnamespace")].I] {
			t.Errorf("pg_class %s: relnamespace %d is no schema", n, row[ci(classRel, "relnamespace")].I)
		}
	}
	for rel, want := range map[string]int64{"pg_class": 1259, "pg_type": 1247, "pg_attribute": 1249,
		"pg_proc": 1255, "pg_namespace": 2615, "pg_stat_activity": 13520, "pipelines": 13702, "something_new": 13800} {
		found := false
		for o, n := range relByOID {
			if n == rel {
				found = true
				if o != want {
					t.Errorf("%s has OID %d, want %d", rel, o, want)
				}
			}
		}
		if !found {
			t.Errorf("no pg_class row for %s", rel)
		}
	}
	typeOIDs := map[int64]string{}
	rowType := map[int64]int64{} // typrelid → type OID
	for _, row := range typ {
		o, n := row[ci(typeRel, "oid")].I, row[ci(typeRel, "typname")].S
		if prev, dup := typeOIDs[o]; dup {
			t.Errorf("pg_type OID %d is both %s and %s", o, prev, n)
		}
		typeOIDs[o] = n
		if rel := row[ci(typeRel, "typrelid")].I; rel != 0 {
			if relByOID[rel] != n {
				t.Errorf("pg_type %s: typrelid %d is pg_class %q", n, rel, relByOID[rel])
			}
			if row[ci(typeRel, "typtype")].S != "c" {
				t.Errorf("pg_type %s: a row type of typtype %q", n, row[ci(typeRel, "typtype")].S)
			}
			rowType[rel] = o
		}
	}
	for o, n := range relByOID {
		if rowType[o] == 0 || rowType[o] != reltype[o] {
			t.Errorf("%s: reltype %d, row type %d", n, reltype[o], rowType[o])
		}
	}
	if reltype[1259] != 83 || reltype[1247] != 71 {
		t.Errorf("pg_class reltype %d, pg_type reltype %d", reltype[1259], reltype[1247])
	}
	cols := map[int64]int{}
	for _, row := range att {
		rel := row[ci(attRel, "attrelid")].I
		if _, ok := relByOID[rel]; !ok {
			t.Errorf("pg_attribute %s: attrelid %d is no relation", row[ci(attRel, "attname")].S, rel)
		}
		cols[rel]++
	}
	for o, n := range relByOID {
		if cols[o] == 0 {
			t.Errorf("%s has no pg_attribute rows", n)
		}
	}
}
