package catalog

import (
	"context"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

func TestDefiningQuery(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE MATERIALIZED VIEW v AS SELECT a FROM t":                                          "SELECT a FROM t",
		"create stream s with (partitions = 2) as select a as b from t where c = 'x as y';":      "select a as b from t where c = 'x as y'",
		"CREATE SINK k AS SELECT (SELECT 1 AS z) FROM t WITH (backend = 'redis://h', key = 'k')": "SELECT (SELECT 1 AS z) FROM t",
		`CREATE STREAM "a as" AS SELECT 1 EMIT CHANGES`:                                          "SELECT 1 EMIT CHANGES",
		"CREATE SINK k AS SELECT f(x) FROM t WITH (key = 'a)b')":                                 "SELECT f(x) FROM t",
		"": "",
	} {
		if got := definingQuery(in); got != want {
			t.Errorf("definingQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPgClassRows(t *testing.T) {
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []*Relation{
		{Name: "s", Kind: Stream, Topic: "s", Format: "json", Partitions: 3, Key: []string{"a"},
			Watermark: &Watermark{Column: "ts", Delay: 4_000_000}, Options: map[string]string{"pipeline": "s"},
			Columns: []Column{{Name: "a", Type: types.Int8}, {Name: "ts", Type: types.Timestamp}}},
		{Name: "k", Kind: Sink, Backend: "redis://h:1", Topic: "k", Format: "json", Partitions: 1,
			Columns: []Column{{Name: "a", Type: types.Int8}}},
	} {
		b, _ := Encode(r)
		if _, err := c.Apply(int64(i), r.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := c.SystemRows(context.Background(), "pg_catalog.pg_class")
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := c.Lookup("pg_catalog", "pg_class")
	col := func(row types.Row, name string) types.Value { return row[rel.ColumnIndex(name)] }
	seen := map[string]string{}
	for _, row := range rows {
		seen[col(row, "relname").S] = col(row, "relkind").S + " " + col(row, "reloptions").String()
		if len(row) != len(rel.Columns) {
			t.Fatalf("pg_class row of %d values for %d columns", len(row), len(rel.Columns))
		}
	}
	for name, want := range map[string]string{
		"s":        "r {topic=s,format=json,partitions=3,key=a,\"watermark=ts - '00:00:04'\",pipeline=s}",
		"k":        "f NULL",
		"pg_class": "r NULL",
		"pg_roles": "v NULL",
		"tables":   "v NULL",
		"streams":  "v NULL",
		"pg_am":    "r NULL",
	} {
		if seen[name] != want {
			t.Errorf("pg_class %s: %q, want %q", name, seen[name], want)
		}
	}
	// every system relation's rows fit its columns
	for _, r := range SystemRelations() {
		rows, err := c.SystemRows(context.Background(), r.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if len(row) != len(r.Columns) {
				t.Fatalf("%s: a row of %d values for %d columns", r.Name, len(row), len(r.Columns))
			}
			for i, v := range row {
				if !v.IsNull() && v.K != r.Columns[i].Type {
					t.Fatalf("%s.%s holds a %s, declared %s", r.Name, r.Columns[i].Name, v.K, r.Columns[i].Type)
				}
			}
		}
	}
	// the sink is a foreign table of its backend's server
	srv, _ := c.SystemRows(context.Background(), "pg_catalog.pg_foreign_server")
	ft, _ := c.SystemRows(context.Background(), "pg_catalog.pg_foreign_table")
	if len(srv) != 1 || srv[0][1].S != "redis://h:1" || len(ft) != 1 || ft[0][1].I != srv[0][0].I ||
		!strings.Contains(ft[0][2].String(), "topic=k") {
		t.Errorf("foreign server %v, table %v", srv, ft)
	}
}

func TestProcs(t *testing.T) {
	ps := procs()
	if len(ps) < 100 {
		t.Fatalf("%d functions", len(ps))
	}
	byName := map[string]*proc{}
	for i, p := range ps {
		if p.oid != uint32(firstProcOID+i) || procByOID(p.oid) != p {
			t.Fatalf("%s has OID %d at %d", p.name, p.oid, i)
		}
		if i > 0 && ps[i-1].name > p.name {
			t.Fatalf("%s after %s", p.name, ps[i-1].name)
		}
		byName[p.name] = p
	}
	for name, want := range map[string]string{
		"unnest":          "SETOF anyelement (VARIADIC anyarray)",
		"generate_series": "SETOF integer (integer, integer)",
		"count":           "bigint (*)",
		"upper":           "text (text)",
	} {
		p := byName[name]
		if name == "count" || name == "generate_series" {
			for _, q := range ps {
				if q.name == name {
					p = q
					break
				}
			}
		}
		if got := p.result() + " (" + p.arguments() + ")"; p == nil || got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}
