package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

// testDB is a catalog with a stream, a view and a sink, and the rows of
// the stream, to plan and run bounded queries against without a server.
type testDB struct {
	cat  *catalog.Catalog
	rows map[string][]types.Row // user relations' data by name
}

// newCatalog is an empty catalog in a Pebble store of the test's own.
func newCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	st, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := catalog.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func newTestDB(t *testing.T) *testDB {
	t.Helper()
	cat := newCatalog(t)
	rels := []*catalog.Relation{
		{Name: "trades", Kind: catalog.Stream, Topic: "trades", Format: "json", Partitions: 4, Key: []string{"sym"},
			Columns: []catalog.Column{{Name: "sym", Type: types.Text}, {Name: "tags", Type: types.TextArray}, {Name: "qty", Type: types.Int8}}},
		{Name: "per_sym", Kind: catalog.MaterializedView, Topic: "per_sym", Format: "json", Partitions: 1,
			SQL:     "CREATE MATERIALIZED VIEW per_sym WITH (partitions = 1) AS SELECT sym, count(*) AS n FROM trades GROUP BY sym",
			Columns: []catalog.Column{{Name: "sym", Type: types.Text}, {Name: "n", Type: types.Int8}}},
		{Name: "big", Kind: catalog.Sink, Backend: "redis://127.0.0.1:6379", Topic: "big", Format: "json", Partitions: 1,
			SQL:     "CREATE SINK big AS SELECT sym FROM trades WHERE qty > 100 WITH (backend = 'redis://127.0.0.1:6379', key = 'big')",
			Columns: []catalog.Column{{Name: "sym", Type: types.Text}}},
	}
	for i, r := range rels {
		b, err := catalog.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Apply(int64(i), r.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	tags := func(s string) types.Value { v, _ := types.ParseText(types.TextArray, s); return v }
	return &testDB{cat: cat, rows: map[string][]types.Row{
		"trades": {
			{types.NewText("ACME"), tags("{a,b}"), types.NewInt8(100)},
			{types.NewText("INIT"), tags("{}"), types.NewInt8(5)},
			{types.NewText("ZED"), types.NullValue, types.NewInt8(7)},
		},
	}}
}

type rowsDataset []types.Row

func (r rowsDataset) Scan(_ context.Context, fn func(int32, *operators.Batch) error) error {
	if len(r) == 0 {
		return nil
	}
	return fn(0, &operators.Batch{Rows: r})
}

func (db *testDB) Dataset(_ context.Context, name string) (engine.Dataset, error) {
	if rel, ok := strings.CutPrefix(name, "rel:"); ok {
		r, _ := db.cat.Get(rel)
		var out []types.Row
		for _, row := range db.rows[rel] {
			// streams carry their metadata columns after the declared ones
			out = append(out, append(append(types.Row(nil), row...), make(types.Row, len(r.ReadColumns())-len(row))...))
		}
		return rowsDataset(out), nil
	}
	rows, err := db.cat.SystemRows(context.Background(), name)
	return rowsDataset(rows), err
}

// query plans and runs one SELECT; rows come back as text, one line each,
// columns separated by " | ", NULL as NULL.
func (db *testDB) query(t *testing.T, text string, params ...types.Value) (string, error) {
	t.Helper()
	return db.queryOn(t, db, text, params...)
}

// queryOn is query reading the datasets r gives.
func (db *testDB) queryOn(t *testing.T, r engine.Resolver, text string, params ...types.Value) (string, error) {
	t.Helper()
	stmts, err := sql.Parse(text)
	if err != nil {
		return "", err
	}
	plan, err := planner.PlanQuery(db.cat, stmts[0].Stmt.(*sql.Query), nil)
	if err != nil {
		return "", err
	}
	var lines []string
	err = engine.RunBounded(context.Background(), plan.Root, r, params, func(_ *operators.Batch, _ int, err error) error { return err },
		func(b *operators.Batch) error {
			for _, row := range b.Rows {
				cells := make([]string, len(plan.Columns))
				for i := range plan.Columns {
					cells[i] = row[i].String()
				}
				lines = append(lines, strings.Join(cells, " | "))
			}
			return nil
		})
	return strings.Join(lines, "\n"), err
}

func TestArrayQueries(t *testing.T) {
	db := newTestDB(t)
	for _, c := range []struct{ sql, want string }{
		{`SELECT ARRAY[1, 2] || 3, ARRAY['a', NULL], (ARRAY[10, 20, 30])[2], (ARRAY[10, 20, 30])[2:], '{1,2}'::int[] = ARRAY[1, 2]`,
			`{1,2,3} | {a,NULL} | 20 | {20,30} | t`},
		{`SELECT sym FROM trades WHERE 'b' = ANY (tags) ORDER BY 1`, "ACME"},
		{`SELECT sym, 'b' = ANY (tags), 'z' <> ALL (tags), cardinality(tags) FROM trades ORDER BY 1`,
			"ACME | t | t | 2\nINIT | f | t | 0\nZED | NULL | NULL | NULL"},
		{`SELECT sym FROM trades WHERE qty > ALL (SELECT qty FROM trades WHERE sym <> 'ACME') ORDER BY 1`, "ACME"},
		{`SELECT sym FROM trades WHERE qty < ANY (SELECT qty FROM trades WHERE sym = 'ZED') ORDER BY 1`, "INIT"},
		{`SELECT sym FROM trades WHERE sym LIKE ANY (ARRAY['A%', 'Z%']) ORDER BY 1`, "ACME\nZED"},
		{`SELECT array_to_string(ARRAY(SELECT sym FROM trades ORDER BY sym DESC), ',')`, "ZED,INIT,ACME"},
		{`SELECT ARRAY(SELECT qty FROM trades WHERE qty > 1000)`, "{}"},
		{`SELECT x, n FROM unnest(ARRAY['c', 'a', 'b']) WITH ORDINALITY AS t(x, n) WHERE n > 1 ORDER BY x`, "a | 2\nb | 3"},
		{`SELECT s FROM generate_series(1, 10, 4) s`, "1\n5\n9"},
		{`SELECT * FROM pg_catalog.unnest('{1,NULL}'::int8[])`, "1\nNULL"},
		{`SELECT count(*) FROM generate_series(1, 3) a, generate_series(1, 2) b`, "6"},
		// a subquery over a function of the enclosing row runs in place
		{`SELECT sym, ARRAY(SELECT 't.' || x FROM unnest(tags) x WHERE x <> 'a') FROM trades ORDER BY 1`,
			"ACME | {t.b}\nINIT | {}\nZED | {}"},
		{`SELECT sym FROM trades WHERE EXISTS (SELECT 1 FROM unnest(tags) x WHERE x = 'a')`, "ACME"},
		{`SELECT sym, (SELECT x FROM unnest(tags) WITH ORDINALITY AS u(x, i) WHERE i = 2) FROM trades ORDER BY 1`,
			"ACME | b\nINIT | NULL\nZED | NULL"},
		{`SELECT sym FROM trades WHERE 'b' IN (SELECT * FROM unnest(tags)) ORDER BY 1`, "ACME"},
		// functions over the rows before them in FROM (LATERAL), as
		// PostgreSQL answers them
		{`SELECT sym, t FROM trades, unnest(trades.tags) t ORDER BY 1, 2`, "ACME | a\nACME | b"},
		{`SELECT sym, g FROM trades, generate_series(1, qty::int % 3) g ORDER BY 1, 2`, "ACME | 1\nINIT | 1\nINIT | 2\nZED | 1"},
		{`SELECT sym, t FROM trades LEFT JOIN LATERAL unnest(tags) t ON true ORDER BY 1, 2`, "ACME | a\nACME | b\nINIT | NULL\nZED | NULL"},
		{`SELECT sym, t, n FROM trades LEFT JOIN LATERAL unnest(tags) WITH ORDINALITY u(t, n) ON true ORDER BY 1, 2`,
			"ACME | a | 1\nACME | b | 2\nINIT | NULL | NULL\nZED | NULL | NULL"},
		{`SELECT t.sym, u.x FROM trades t CROSS JOIN LATERAL unnest(t.tags) AS u(x) WHERE u.x <> 'a'`, "ACME | b"},
		{`SELECT sym, u FROM trades, lower(sym) u ORDER BY 1`, "ACME | acme\nINIT | init\nZED | zed"},
	} {
		got, err := db.query(t, c.sql)
		if err != nil || got != c.want {
			t.Errorf("%s\n got: %s %v\nwant: %s", c.sql, got, err, c.want)
		}
	}
}

// Functions in FROM over arguments that are not constants but read no
// row run when the query does, per execution; a scalar function in FROM
// is a one-row, one-column table.
func TestFromFunctionsAtRunTime(t *testing.T) {
	db := newTestDB(t)
	for _, c := range []struct {
		sql    string
		params []types.Value
		want   string
	}{
		{`SELECT s[1], s[2] FROM string_to_array('a,b', ',') s`, nil, "a | b"},
		{`SELECT x FROM upper('a') AS x`, nil, "A"},
		{`SELECT upper.upper, * FROM upper('a')`, nil, "A | A"},
		{`SELECT x.* FROM upper('a') AS x(y)`, nil, "A"},
		{`SELECT * FROM upper('a') WITH ORDINALITY`, nil, "A | 1"},
		{`SELECT * FROM string_to_array(NULL::text, ',') s`, nil, "NULL"},
		{`SELECT * FROM generate_series(1, NULL::int + 1) s`, nil, ""},
		{`SELECT * FROM unnest($1::int[])`, []types.Value{types.NewText("{3,4}")}, "3\n4"},
		{`SELECT * FROM unnest($1::int[])`, []types.Value{types.NewText("{5}")}, "5"},
		{`SELECT g, n FROM generate_series(1, $1::int) WITH ORDINALITY AS t(g, n) WHERE g > 1`, []types.Value{types.NewText("3")}, "2 | 2\n3 | 3"},
		{`SELECT x FROM upper($1) x`, []types.Value{types.NewText("q")}, "Q"},
		{`SELECT i, s[i] FROM generate_series(array_lower(string_to_array($1, ','), 1), array_upper(string_to_array($1, ','), 1)) AS i, string_to_array($1, ',') s`,
			[]types.Value{types.NewText("x,y")}, "1 | x\n2 | y"},
		{`SELECT g FROM generate_series(1, (SELECT count(*) FROM trades)::int) g WHERE g > 2`, nil, "3"},
		{`SELECT count(*) FROM trades, generate_series(1, length($1)) g`, []types.Value{types.NewText("ab")}, "6"},
		{`SELECT sym FROM trades WHERE sym IN (SELECT upper(x) FROM unnest(string_to_array($1, ',')) x) ORDER BY 1`,
			[]types.Value{types.NewText("zed,acme")}, "ACME\nZED"},
	} {
		got, err := db.query(t, c.sql, c.params...)
		if err != nil || got != c.want {
			t.Errorf("%s %v\n got: %s %v\nwant: %s", c.sql, c.params, got, err, c.want)
		}
	}
}

func TestArrayQueryErrors(t *testing.T) {
	db := newTestDB(t)
	for _, c := range []struct {
		sql  string
		code pgerror.Code
	}{
		{`SELECT * FROM trades t RIGHT JOIN LATERAL unnest(t.tags) u ON true`, pgerror.FeatureNotSupported},
		{`SELECT * FROM trades t JOIN LATERAL unnest(t.tags) u ON u = 'a'`, pgerror.FeatureNotSupported},
		{`SELECT (SELECT count(*) FROM upper(t.sym) u, generate_series(1, 2) g) FROM trades t`, pgerror.FeatureNotSupported},
		{`SELECT * FROM sum(1)`, pgerror.GroupingError},
		{`SELECT * FROM upper('a') AS t(a, b)`, pgerror.SyntaxError},
		{`SELECT * FROM generate_series(1, (SELECT count(*) FROM trades)::int / 0)`, pgerror.DivisionByZero},
		{`SELECT count(*), unnest(ARRAY[1]) FROM trades`, pgerror.FeatureNotSupported},
		{`SELECT ARRAY[]`, pgerror.IndeterminateDatatype},
		{`SELECT ARRAY[1, 'x'::text]`, pgerror.DatatypeMismatch},
		{`SELECT sym[1] FROM trades`, pgerror.DatatypeMismatch},
		{`SELECT 1 = ANY (2)`, pgerror.WrongObjectType},
		{`SELECT * FROM nosuchfunction(1)`, pgerror.UndefinedFunction},
		{`SELECT * FROM generate_series(1, 3, 0)`, pgerror.InvalidParameterValue},
		{`SELECT 'nosuch'::regclass`, pgerror.UndefinedTable},
		{`SELECT bit_and(qty) FROM trades`, pgerror.FeatureNotSupported},
		// a subquery fvsql cannot plan fails when it runs
		{`SELECT (SELECT bit_and(qty) FROM trades)`, pgerror.FeatureNotSupported},
	} {
		if _, err := db.query(t, c.sql); pgerror.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.sql, err, c.code)
		}
	}
	// … and not at all when it is never evaluated
	got, err := db.query(t, `SELECT sym, CASE WHEN qty < 0 THEN (SELECT bit_and(relpages) FROM pg_class) END FROM trades WHERE sym = 'ZED'`)
	if err != nil || got != "ZED | NULL" {
		t.Errorf("unevaluated unsupported subquery: %s, %v", got, err)
	}
}

func TestCatalogQueries(t *testing.T) {
	db := newTestDB(t)
	for _, c := range []struct{ sql, want string }{
		{`SELECT relname, relkind, reloptions FROM pg_class WHERE relnamespace = 2200 ORDER BY 1`,
			"big | f | NULL\nper_sym | m | {topic=per_sym,format=json,partitions=1}\ntrades | r | {topic=trades,format=json,partitions=4,key=sym}"},
		{`SELECT attname, format_type(atttypid, atttypmod), attnum FROM pg_attribute WHERE attrelid = 'trades'::regclass ORDER BY attnum`,
			"_timestamp | timestamp with time zone | -4\n_offset | bigint | -3\n_partition | integer | -2\n_key | text | -1\nsym | text | 1\ntags | text[] | 2\nqty | bigint | 3"},
		{`SELECT pg_get_viewdef(c.oid, true) FROM pg_class c WHERE relname = 'per_sym'`,
			" SELECT sym, count(*) AS n FROM trades GROUP BY sym;"},
		{`SELECT pg_get_viewdef('per_sym'::regclass), pg_get_viewdef('trades'::regclass::oid)`,
			" SELECT sym, count(*) AS n FROM trades GROUP BY sym; | NULL"},
		{`SELECT s.srvname, array_to_string(ARRAY(SELECT quote_ident(option_name) || ' ' || quote_literal(option_value) FROM pg_options_to_table(ftoptions)), ', ')
		  FROM pg_foreign_table f JOIN pg_foreign_server s ON s.oid = f.ftserver`,
			"redis://127.0.0.1:6379 | topic 'big', format 'json', partitions '1', query 'SELECT sym FROM trades WHERE qty > 100'"},
		{`SELECT c.tableoid = 'pg_class'::regclass, 'pg_catalog'::regnamespace, t.typname FROM pg_class c, pg_type t WHERE c.relname = 'trades' AND t.oid = 'int4[]'::regtype`,
			"t | 11 | _int4"},
		{`SELECT count(*) > 100, bool_and(prokind = 'f' OR prokind = 'a') FROM pg_proc`, "t | t"},
		{`SELECT pg_get_function_result(oid), pg_get_function_arguments(oid) FROM pg_proc WHERE proname = 'array_to_string' ORDER BY 2`,
			"text | anyarray, text\ntext | anyarray, text, text"},
		{`SELECT typname, typelem = 'int4'::regtype, typcategory FROM pg_type WHERE typname = '_int4'`, "_int4 | t | A"},
		{`SELECT r.rolname, ARRAY(SELECT b.rolname FROM pg_auth_members m JOIN pg_roles b ON m.roleid = b.oid WHERE m.member = r.oid) FROM pg_roles r`,
			"fvsql | {}"},
	} {
		got, err := db.query(t, c.sql)
		if err != nil || got != c.want {
			t.Errorf("%s\n got: %s %v\nwant: %s", c.sql, got, err, c.want)
		}
	}
}
