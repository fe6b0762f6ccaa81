package catalog

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

func openTestCatalog(t *testing.T) *Catalog {
	t.Helper()
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoles(t *testing.T) {
	c := openTestCatalog(t)
	c.SetRoles([]string{"client", "reader"})
	c.AddSystemTable("pg_catalog.pg_stat_activity", []Column{{Name: "pid", Type: types.Int4}, {Name: "usename", Type: types.Name}},
		func(context.Context) []types.Row {
			return []types.Row{{types.NewInt(types.Int4, 1), types.NewString(types.Name, "guest")},
				{types.NewInt(types.Int4, 2), types.NewString(types.Name, "client")}}
		})
	rows, err := c.SystemRows(context.Background(), "pg_catalog.pg_roles")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r[0].S] = r[len(r)-1].I
	}
	if len(got) != 4 || got["fvsql"] != 10 {
		t.Fatalf("pg_roles %v, want fvsql (10), client, guest, reader", got)
	}
	for _, n := range []string{"client", "guest", "reader"} {
		if o := got[n]; o != int64(RoleOID(n)) || o < 1<<30 || o >= 1<<31 {
			t.Errorf("role %s has OID %d, want RoleOID %d in 2^30..2^31-1", n, o, RoleOID(n))
		}
	}
}

func TestSettingsSource(t *testing.T) {
	c := openTestCatalog(t)
	get := func() map[string][]string {
		rows, err := c.SystemRows(context.Background(), "pg_catalog.pg_settings")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][]string{}
		for _, r := range rows {
			m[r[0].S] = []string{r[1].Text(), r[8].Text()}
		}
		return m
	}
	if s := get(); s["max_index_keys"][0] != "32" || s["search_path"][0] != `"$user", public` || s["TimeZone"][0] != "UTC" {
		t.Fatalf("defaults: %v", s)
	}
	c.SetSettingsSource(func(context.Context) map[string]string {
		return map[string]string{"statement_timeout": "5s", "application_name": "app", "timezone": "UTC"}
	})
	s := get()
	for name, want := range map[string][2]string{
		"statement_timeout": {"5000", "session"}, "application_name": {"app", "session"},
		"TimeZone": {"UTC", "default"}, "max_index_keys": {"32", "default"},
	} {
		if got := s[name]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: setting, source %v, want %v", name, got, want)
		}
	}
}

func TestRelationSchema(t *testing.T) {
	for o, want := range map[uint32]string{1259: "pg_catalog", 13505: "pg_catalog", 13602: "information_schema",
		13700: "fvsql_catalog", 13702: "fvsql_catalog", 13520: "pg_catalog", FirstOID + 3: "public"} {
		if got, ok := relationSchema(o); !ok || got != want {
			t.Errorf("relationSchema(%d) = %q, %v; want %q", o, got, ok, want)
		}
	}
	if _, ok := relationSchema(1); ok {
		t.Error("OID 1 names a relation")
	}
}
