package clients

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The grafana suite: Grafana's PostgreSQL data source, replayed. Its
// backend (grafana/grafana, pkg/tsdb/grafana-postgresql-datasource) runs
// on pgx v5: postgres.go's newPostgresPGX builds a pgxpool from a libpq
// keyword/value string, and sqleng/sql_engine_pgx.go's execQuery sends a
// panel's SQL, macros expanded, on an acquired connection's
// PgConn().Exec: the simple protocol, text results, several statements
// allowed, the frame built from the SELECT results only and its column
// types named by pgtype's map (an OID it does not know is an error). It
// sends no session setup of its own. Its query editor (public/app/plugins/
// datasource/grafana-postgresql-datasource, and the older editor in
// public/app/plugins/datasource/postgres) sends its metadata SQL the same
// way; the newer schema API (schema.go) uses pool.Query with parameters.
// Each query below is reconstructed from the file its comment names.
func init() {
	goSuites = append(goSuites, goSuite{name: "grafana", run: runGrafana})
}

// The dashboard's time range for the macro checks: items' three rows lie
// in it.
var (
	grafanaFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	grafanaTo   = time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
)

func runGrafana(ctx context.Context, c *checker, tg target) {
	// Epoch seconds of items' rows and of their hours and days.
	const (
		appleAt   = 1767261600 // 2026-01-01 10:00
		pearAt    = 1767265200 // 2026-01-01 11:00
		plumAt    = 1767346200 // 2026-01-02 09:30
		plumHour  = 1767344400 // 2026-01-02 09:00
		firstDay  = 1767225600 // 2026-01-01
		secondDay = 1767312000 // 2026-01-02
	)
	var pool *pgxpool.Pool
	c.check("connect-health", func(t *testing.T) error {
		p, err := grafanaPool(ctx, tg)
		if err != nil {
			return err
		}
		// The data source's health check (pgx/handler_checkhealth.go,
		// sqleng's CheckHealth) is the pool's Ping: an empty query.
		if err := p.Ping(ctx); err != nil {
			p.Close()
			return fmt.Errorf("ping: %w", err)
		}
		pool = p
		return nil
	})
	if pool == nil {
		c.t.Error("no pool: the other grafana checks cannot run")
		return
	}
	defer pool.Close()
	q := func(sql string) (*grafanaFrame, error) { return grafanaQuery(ctx, pool, sql) }

	c.check("version", func(t *testing.T) error {
		// postgresMetaQuery.ts getVersion, run by configuration/
		// useAutoDetectFeatures.ts: the number decides the version shown
		// and whether the TimescaleDB check runs (>= 906).
		f, err := q(`SELECT current_setting('server_version_num')::int/100 as version`)
		if err != nil {
			return err
		}
		if err := f.columns("version:int4"); err != nil {
			return err
		}
		if len(f.rows) != 1 {
			return fmt.Errorf("%d rows", len(f.rows))
		}
		v, _ := f.rows[0][0].(int64)
		if v < 906 || v > 9999 {
			return fmt.Errorf("version %v: not a PostgreSQL server_version_num/100", f.rows[0][0])
		}
		return nil
	})

	c.check("timescaledb-check", func(t *testing.T) error {
		// postgresMetaQuery.ts getTimescaleDBVersion: no row, no
		// TimescaleDB (and so $__timeGroup is not time_bucket). pgconn
		// gives a result of no rows no columns either, so there is only
		// the row count to check.
		f, err := q(`SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'`)
		if err != nil {
			return err
		}
		if len(f.rows) != 0 {
			return fmt.Errorf("timescaledb reported installed: %v", f.rows)
		}
		return nil
	})

	c.check("schemas", func(t *testing.T) error {
		// postgresMetaQuery.ts showSchemas.
		f, err := q(`SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache',
      '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information',
      'timescaledb_experimental')
    ORDER BY schema_name`)
		if err != nil {
			return err
		}
		names := f.strings(0)
		if !slices.Contains(names, "public") || slices.Contains(names, "pg_catalog") || slices.Contains(names, "information_schema") {
			return fmt.Errorf("schemas %q: want public, and neither pg_catalog nor information_schema", names)
		}
		return grafanaSorted(names)
	})

	c.check("tables-search-path", func(t *testing.T) error {
		// postgresMetaQuery.ts showTables() with no schema, the table
		// picker's list: the tables of the search path's schemas, bare,
		// then the others, qualified.
		f, err := q(`SELECT
    CASE WHEN ` + grafanaSearchPathSchemas + `
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache',
      '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information',
      'timescaledb_experimental')
    ORDER BY CASE WHEN ` + grafanaSearchPathSchemas + ` THEN 0 ELSE 1 END, 1`)
		if err != nil {
			return err
		}
		if err := f.columns("table:text"); err != nil {
			return err
		}
		return grafanaTables(f.strings(0))
	})

	c.check("tables-of-schema", func(t *testing.T) error {
		// postgresMetaQuery.ts showTables('public').
		f, err := q(`SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1`)
		if err != nil {
			return err
		}
		return grafanaTables(f.strings(0))
	})

	itemsColumns := map[string]string{"id": "bigint", "name": "text", "price": "numeric", "qty": "integer",
		"added": "timestamp without time zone"}
	for _, table := range []string{"items", "public.items"} {
		c.check("column-picker-"+table, func(t *testing.T) error {
			// postgresMetaQuery.ts getSchema(table), datasource.ts
			// fetchFields: the columns and their data_type, which
			// sqlUtil.ts getFieldConfig maps to the editor's kinds. No
			// ORDER BY: compared as a set.
			lit := "'" + table + "'"
			f, err := q(`SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident(` + lit + `),1) = 2
        THEN quote_ident(table_schema) = (parse_ident(` + lit + `))[1]
          AND quote_ident(table_name) = (parse_ident(` + lit + `))[2]
        ELSE quote_ident(table_name) = ` + lit + `
          AND ` + grafanaSearchPathSchemas + `
      END`)
			if err != nil {
				return err
			}
			if err := f.columns("column:text", "type:"+f.typeOf(1)); err != nil {
				return err
			}
			return grafanaSameMap(f.pairs(), itemsColumns)
		})
	}

	c.check("schema-api", func(t *testing.T) error {
		// schema.go querySchemas, queryTables and queryColumns: pgxpool's
		// Query, extended protocol, $1/$2 parameters.
		var schemas []string
		if err := grafanaStrings(ctx, pool, &schemas, `SELECT schema_name FROM information_schema.schemata
		 WHERE schema_name NOT LIKE 'pg_%' AND schema_name != 'information_schema'
		 ORDER BY schema_name`); err != nil {
			return fmt.Errorf("schemas: %w", err)
		}
		if !slices.Contains(schemas, "public") {
			return fmt.Errorf("schemas %q lack public", schemas)
		}
		var tables []string
		if err := grafanaStrings(ctx, pool, &tables, `SELECT table_name FROM information_schema.tables
		 WHERE table_schema = $1 AND table_type IN ('BASE TABLE', 'VIEW')
		 ORDER BY table_name`, "public"); err != nil {
			return fmt.Errorf("tables: %w", err)
		}
		if err := grafanaTables(tables); err != nil {
			return err
		}
		rows, err := pool.Query(ctx, `SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale
		 FROM information_schema.columns
		 WHERE table_schema = $1 AND table_name = $2
		 ORDER BY ordinal_position`, "public", "items")
		if err != nil {
			return fmt.Errorf("columns: %w", err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var name, dataType, udt string
			var precision, scale *int
			if err := rows.Scan(&name, &dataType, &udt, &precision, &scale); err != nil {
				return fmt.Errorf("scanning a column: %w", err)
			}
			got = append(got, fmt.Sprintf("%s %s %s %s %s", name, dataType, udt, grafanaIntOrNull(precision), grafanaIntOrNull(scale)))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// Integers have a binary precision and scale 0; an unconstrained
		// numeric has neither, which is what the schema API passes on.
		want := []string{"id bigint int8 64 0", "name text text null null", "price numeric numeric null null",
			"qty integer int4 32 0", "added timestamp without time zone timestamp null null"}
		if !slices.Equal(got, want) {
			return fmt.Errorf("columns\n%q, want\n%q", got, want)
		}
		return nil
	})

	c.check("schema-api-column-values", func(t *testing.T) error {
		// schema.go ColumnValues: each column's distinct values, as text,
		// in one UNION ALL over quoted identifiers.
		f, err := q(`SELECT 'name' AS col_name, "name"::text AS val FROM (SELECT DISTINCT "name" FROM "public"."items" WHERE "name" IS NOT NULL ORDER BY "name" LIMIT 100) sub_0` +
			` UNION ALL SELECT 'qty' AS col_name, "qty"::text AS val FROM (SELECT DISTINCT "qty" FROM "public"."items" WHERE "qty" IS NOT NULL ORDER BY "qty" LIMIT 100) sub_1`)
		if err != nil {
			return err
		}
		if err := f.columns("col_name:text", "val:text"); err != nil {
			return err
		}
		byCol := map[string][]string{}
		for _, r := range f.rows {
			byCol[fmt.Sprint(r[0])] = append(byCol[fmt.Sprint(r[0])], fmt.Sprint(r[1]))
		}
		if !slices.Equal(byCol["name"], []string{"apple", "pear", "plum"}) || !slices.Equal(byCol["qty"], []string{"5", "10", "20"}) {
			return fmt.Errorf("values %v", byCol)
		}
		return nil
	})

	// The older visual editor (public/app/plugins/datasource/postgres/
	// meta_query.ts), which panels made before Grafana 9 still open with:
	// its column pickers filter information_schema.columns by data_type.
	legacyColumns := func(extra string) string {
		return `SELECT quote_ident(column_name) FROM information_schema.columns WHERE ` + grafanaLegacySearchPath +
			` AND table_name = 'items'` + extra + ` ORDER BY column_name`
	}
	for _, pick := range []struct {
		name, filter string
		want         []string
	}{
		// buildColumnQuery('time'): the time-column guess.
		{"time", ` AND data_type IN ('timestamp without time zone','timestamp with time zone','bigint','integer','double precision','real')`,
			[]string{"added", "id", "qty"}},
		// buildColumnQuery('metric'): the metric (series name) column.
		{"metric", ` AND data_type IN ('text','character','character varying')`, []string{"name"}},
		// buildColumnQuery('value') with added as the time column.
		{"value", ` AND data_type IN ('bigint','integer','double precision','real','numeric') AND column_name <> 'added'`,
			[]string{"id", "price", "qty"}},
	} {
		c.check("legacy-"+pick.name+"-column", func(t *testing.T) error {
			f, err := q(legacyColumns(pick.filter))
			if err != nil {
				return err
			}
			if err := f.columns("quote_ident:text"); err != nil {
				return err
			}
			if got := f.strings(0); !slices.Equal(got, pick.want) {
				return fmt.Errorf("columns %q, want %q", got, pick.want)
			}
			return nil
		})
	}

	c.check("legacy-table-and-datatype", func(t *testing.T) error {
		// meta_query.ts buildTableQuery, then buildDatatypeQuery('added'),
		// which tells the editor whether the time column is an epoch.
		f, err := q(`SELECT quote_ident(table_name) FROM information_schema.tables WHERE ` + grafanaLegacySearchPath + ` ORDER BY table_name`)
		if err != nil {
			return err
		}
		if err := grafanaTables(f.strings(0)); err != nil {
			return err
		}
		d, err := q(`SELECT udt_name FROM information_schema.columns WHERE ` + grafanaLegacySearchPath +
			` AND table_name = 'items' AND column_name = 'added'`)
		if err != nil {
			return err
		}
		if got := d.strings(0); !slices.Equal(got, []string{"timestamp"}) {
			return fmt.Errorf("udt_name of added %q, want [timestamp]", got)
		}
		return nil
	})

	c.check("legacy-value-query", func(t *testing.T) error {
		// meta_query.ts buildValueQuery('name'): the values offered for a
		// WHERE condition, quoted, over the dashboard's time range.
		f, err := q(grafanaExpand(`SELECT DISTINCT quote_literal(name) FROM items WHERE $__timeFilter(added) AND name IS NOT NULL ORDER BY 1 LIMIT 100`))
		if err != nil {
			return err
		}
		if got, want := f.strings(0), []string{"'apple'", "'pear'", "'plum'"}; !slices.Equal(got, want) {
			return fmt.Errorf("values %q, want %q", got, want)
		}
		return nil
	})

	c.check("legacy-aggregates", func(t *testing.T) error {
		// meta_query.ts buildAggregateQuery: the aggregates the editor
		// offers for a value column.
		f, err := q(`SELECT DISTINCT proname FROM pg_aggregate INNER JOIN pg_proc ON pg_aggregate.aggfnoid = pg_proc.oid ` +
			`INNER JOIN pg_type ON pg_type.oid=pg_proc.prorettype WHERE pronargs=1 AND typname IN ('float8') AND aggkind='n' ORDER BY 1`)
		if err != nil {
			return err
		}
		got := f.strings(0)
		for _, agg := range []string{"avg", "max", "min", "sum"} {
			if !slices.Contains(got, agg) {
				return fmt.Errorf("aggregates %q lack %s", got, agg)
			}
		}
		return grafanaSorted(got)
	})

	c.check("timeseries-timegroup-alias", func(t *testing.T) error {
		// postgres_query_model.ts buildQuery: the older editor's query for
		// sum(qty) by $__interval (1h here), expanded as macros.go does:
		// floor(extract(epoch from added)/3600)*3600 AS "time".
		f, err := q(grafanaExpand(`SELECT
  $__timeGroupAlias(added,$__interval),
  sum(qty) AS "qty"
FROM items
WHERE
  $__timeFilter(added)
GROUP BY 1
ORDER BY 1`))
		if err != nil {
			return err
		}
		if err := f.timeSeries("qty"); err != nil {
			return err
		}
		return f.values([][]any{{float64(appleAt), 10.0}, {float64(pearAt), 5.0}, {float64(plumHour), 20.0}})
	})

	c.check("timeseries-metric-column", func(t *testing.T) error {
		// The same with a metric column: one series per name, avg(price).
		f, err := q(grafanaExpand(`SELECT
  $__timeGroupAlias(added,$__interval),
  name AS metric,
  avg(price) AS "price"
FROM items
WHERE
  $__timeFilter(added)
GROUP BY 1,2
ORDER BY 1,2`))
		if err != nil {
			return err
		}
		if err := f.timeSeries("metric", "price"); err != nil {
			return err
		}
		if got := f.typeOf(1); got != "text" {
			return fmt.Errorf("metric column is %s; Grafana takes a text column as the series name", got)
		}
		return f.values([][]any{{float64(appleAt), "apple", 1.25}, {float64(pearAt), "pear", 2.5}, {float64(plumHour), "plum", 0.75}})
	})

	c.check("timeseries-timegroup-day", func(t *testing.T) error {
		// The code editor's form: $__timeGroup(col, '1d') AS time with a
		// count, grouped and ordered by position.
		f, err := q(grafanaExpand(`SELECT $__timeGroup(added, '1d') AS time, count(*) AS n, sum(qty) AS qty
FROM items WHERE $__timeFilter(added) GROUP BY 1 ORDER BY 1`))
		if err != nil {
			return err
		}
		if err := f.timeSeries("n", "qty"); err != nil {
			return err
		}
		return f.values([][]any{{float64(firstDay), 2.0, 15.0}, {float64(secondDay), 1.0, 20.0}})
	})

	c.check("timeseries-narrow-range", func(t *testing.T) error {
		// A range that ends before plum: $__timeFilter's bounds are
		// RFC 3339 literals compared with a timestamp column.
		narrow := strings.NewReplacer("$__timeFilter(added)", "added BETWEEN '2026-01-01T10:30:00Z' AND '2026-01-01T23:59:59.999Z'")
		f, err := q(grafanaExpand(narrow.Replace(`SELECT $__timeGroupAlias(added,$__interval), sum(qty) AS "qty"
FROM items WHERE $__timeFilter(added) GROUP BY 1 ORDER BY 1`)))
		if err != nil {
			return err
		}
		return f.values([][]any{{float64(pearAt), 5.0}})
	})

	c.check("table-time-macros", func(t *testing.T) error {
		// $__time, $__timeEpoch, $__timeFrom() and $__timeTo() in a table
		// panel's query: the time column as a timestamp, then as epoch
		// seconds.
		f, err := q(grafanaExpand(`SELECT $__time(added), name, price, qty
FROM items WHERE added >= $__timeFrom() AND added < $__timeTo() AND qty > 5 ORDER BY 1`))
		if err != nil {
			return err
		}
		if err := f.columns("time:timestamp", "name:text", "price:numeric", "qty:int4"); err != nil {
			return err
		}
		apple, plum := time.Unix(appleAt, 0).UTC(), time.Unix(plumAt, 0).UTC()
		if err := f.values([][]any{{apple, "apple", 1.25, int64(10)}, {plum, "plum", 0.75, int64(20)}}); err != nil {
			return err
		}
		e, err := q(grafanaExpand(`SELECT $__timeEpoch(added), name FROM items WHERE $__timeFilter(added) ORDER BY 1 DESC`))
		if err != nil {
			return err
		}
		if err := e.timeSeries("name"); err != nil {
			return err
		}
		return e.values([][]any{{float64(plumAt), "plum"}, {float64(pearAt), "pear"}, {float64(appleAt), "apple"}})
	})

	c.check("table-types", func(t *testing.T) error {
		// A table panel over items: every column's type is one pgtype
		// knows (Grafana fails on any other), every value decodes from
		// text as Grafana decodes it.
		f, err := q(`SELECT id, name, price, qty, added, qty > 9 AS big, NULL::text AS nothing FROM items ORDER BY id`)
		if err != nil {
			return err
		}
		if err := f.columns("id:int8", "name:text", "price:numeric", "qty:int4", "added:timestamp", "big:bool", "nothing:text"); err != nil {
			return err
		}
		return f.values([][]any{
			{int64(1), "apple", 1.25, int64(10), time.Unix(appleAt, 0).UTC(), true, nil},
			{int64(2), "pear", 2.5, int64(5), time.Unix(pearAt, 0).UTC(), false, nil},
			{int64(3), "plum", 0.75, int64(20), time.Unix(plumAt, 0).UTC(), true, nil},
		})
	})

	c.check("multi-statement", func(t *testing.T) error {
		// A panel's SQL may set something first: Exec returns both
		// results and the frame is built from the SELECT alone.
		results, err := grafanaExec(ctx, pool, `SET statement_timeout = '10s'; SELECT name AS __text, id AS __value FROM items ORDER BY 2`)
		if err != nil {
			return err
		}
		if len(results) != 2 || results[0].CommandTag.String() != "SET" || !results[1].CommandTag.Select() {
			tags := []string{}
			for _, r := range results {
				tags = append(tags, r.CommandTag.String())
			}
			return fmt.Errorf("results %q, want SET and a SELECT", tags)
		}
		f, err := grafanaFrameOf(results)
		if err != nil {
			return err
		}
		// The template variable form (responseParser.ts): __text and __value.
		if err := f.columns("__text:text", "__value:int8"); err != nil {
			return err
		}
		return f.values([][]any{{"apple", int64(1)}, {"pear", int64(2)}, {"plum", int64(3)}})
	})

	c.check("query-error", func(t *testing.T) error {
		// A panel over a relation that is not there: the error Grafana
		// shows is the server's, with its SQLSTATE.
		_, err := q(grafanaExpand(`SELECT $__time(added) FROM no_such_relation_grafana WHERE $__timeFilter(added)`))
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
			return fmt.Errorf("%v, want 42P01", err)
		}
		f, err := q(`SELECT count(*) AS n FROM items`)
		if err != nil {
			return fmt.Errorf("after the error: %w", err)
		}
		return f.values([][]any{{int64(3)}})
	})
}

// grafanaPool opens the pool as newPostgresPGX does: pgxpool.ParseConfig
// of the keyword/value string generateConnectionString writes (values
// single-quoted, ' and \ escaped), host names left unresolved, and the
// data source's default limits (100 connections, 4 h lifetime). The
// connect timeout is this suite's, to stay bounded.
func grafanaPool(ctx context.Context, tg target) (*pgxpool.Pool, error) {
	esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace
	conn := fmt.Sprintf("user='%s' host='%s' dbname='%s' password='%s' port=%s sslmode='%s'",
		esc(tg.user), esc(tg.host), esc(tg.dbname), esc(tg.pass), tg.port, "require")
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	cfg.MaxConnLifetime = 14400 * time.Second
	cfg.MaxConns = 100
	return pgxpool.NewWithConfig(ctx, cfg)
}

// grafanaExec sends one panel's SQL as sql_engine_pgx.go's execQuery does.
func grafanaExec(ctx context.Context, pool *pgxpool.Pool, sql string) ([]*pgconn.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	return conn.Conn().PgConn().Exec(ctx, sql).ReadAll()
}

func grafanaQuery(ctx context.Context, pool *pgxpool.Pool, sql string) (*grafanaFrame, error) {
	results, err := grafanaExec(ctx, pool, sql)
	if err != nil {
		return nil, err
	}
	return grafanaFrameOf(results)
}

// A grafanaFrame is the data frame Grafana makes of a query's results:
// the columns' names and pgtype names, and the values decoded as its
// convertResultsToFrame decodes them (integers here all as int64).
type grafanaFrame struct {
	names, types []string
	rows         [][]any
}

func grafanaFrameOf(results []*pgconn.Result) (*grafanaFrame, error) {
	m := pgtype.NewMap()
	f := &grafanaFrame{}
	for _, r := range results {
		if !r.CommandTag.Select() {
			continue
		}
		f.names, f.types = nil, nil
		for _, fd := range r.FieldDescriptions {
			f.names = append(f.names, fd.Name)
			typ, ok := m.TypeForOID(fd.DataTypeOID)
			switch {
			case ok:
				f.types = append(f.types, typ.Name)
			case fd.DataTypeOID == pgtype.TimetzOID:
				f.types = append(f.types, "timetz")
			case fd.DataTypeOID == 790:
				f.types = append(f.types, "money")
			default:
				return nil, fmt.Errorf("column %q: unknown data type oid %d (Grafana refuses the query)", fd.Name, fd.DataTypeOID)
			}
		}
	}
	for _, r := range results {
		if !r.CommandTag.Select() {
			continue
		}
		for _, raw := range r.Rows {
			row := make([]any, len(r.FieldDescriptions))
			for i, fd := range r.FieldDescriptions {
				v, err := grafanaDecode(m, fd, raw[i])
				if err != nil {
					return nil, fmt.Errorf("column %q value %q: %w", fd.Name, raw[i], err)
				}
				row[i] = v
			}
			f.rows = append(f.rows, row)
		}
	}
	return f, nil
}

func grafanaDecode(m *pgtype.Map, fd pgconn.FieldDescription, raw []byte) (any, error) {
	if raw == nil {
		return nil, nil
	}
	scan := func(dst any) error { return m.PlanScan(fd.DataTypeOID, fd.Format, dst).Scan(raw, dst) }
	switch fd.DataTypeOID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		var v int64
		err := scan(&v)
		return v, err
	case pgtype.NumericOID, pgtype.Float4OID, pgtype.Float8OID:
		var v float64
		err := scan(&v)
		return v, err
	case pgtype.BoolOID:
		var v bool
		err := scan(&v)
		return v, err
	case pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.DateOID:
		var v time.Time
		err := scan(&v)
		return v.UTC(), err
	case pgtype.ByteaOID:
		var v []byte
		err := scan(&v)
		return string(v), err
	default:
		var v string
		err := scan(&v)
		return v, err
	}
}

func (f *grafanaFrame) typeOf(i int) string {
	if i < len(f.types) {
		return f.types[i]
	}
	return ""
}

// columns checks the frame's columns, given as "name:type".
func (f *grafanaFrame) columns(want ...string) error {
	var got []string
	for i := range f.names {
		got = append(got, f.names[i]+":"+f.types[i])
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("columns %q, want %q", got, want)
	}
	return nil
}

// timeSeries checks a time-series frame as Grafana reads one: a first
// column named time holding epoch seconds as a number, then the named
// columns: a text one names the series, the others are values and must
// be numbers (Grafana converts them to float64).
func (f *grafanaFrame) timeSeries(rest ...string) error {
	if want := append([]string{"time"}, rest...); !slices.Equal(f.names, want) {
		return fmt.Errorf("columns %q, want %q", f.names, want)
	}
	// PostgreSQL's extract(epoch ...) is numeric since 14 (float8 before):
	// Grafana takes either, or an integer, as epoch seconds.
	for i, name := range f.names {
		if !(i > 0 && f.types[i] == "text") && !grafanaNumeric(f.types[i]) {
			return fmt.Errorf("column %s is %s, not a number", name, f.types[i])
		}
	}
	return nil
}

func grafanaNumeric(t string) bool {
	return slices.Contains([]string{"int2", "int4", "int8", "float4", "float8", "numeric"}, t)
}

// values checks the frame's rows; numbers compare as float64 within 1e-9.
func (f *grafanaFrame) values(want [][]any) error {
	fail := func() error { return fmt.Errorf("rows %v, want %v", f.rows, want) }
	if len(f.rows) != len(want) {
		return fail()
	}
	for i := range want {
		if len(f.rows[i]) != len(want[i]) {
			return fail()
		}
		for j, w := range want[i] {
			g := f.rows[i][j]
			switch w := w.(type) {
			case float64:
				var gf float64
				switch g := g.(type) {
				case float64:
					gf = g
				case int64:
					gf = float64(g)
				default:
					return fail()
				}
				if math.Abs(gf-w) > 1e-9*math.Max(1, math.Abs(w)) {
					return fail()
				}
			case time.Time:
				if gt, ok := g.(time.Time); !ok || !gt.Equal(w) {
					return fail()
				}
			default:
				if g != w {
					return fail()
				}
			}
		}
	}
	return nil
}

func (f *grafanaFrame) strings(col int) []string {
	var out []string
	for _, r := range f.rows {
		if col < len(r) {
			out = append(out, fmt.Sprint(r[col]))
		}
	}
	return out
}

// pairs maps the first column to the second.
func (f *grafanaFrame) pairs() map[string]string {
	out := map[string]string{}
	for _, r := range f.rows {
		out[fmt.Sprint(r[0])] = fmt.Sprint(r[1])
	}
	return out
}

// grafanaTables checks a table picker's list: the fixture's tables, bare (they
// are in the search path's public), none of them twice.
func grafanaTables(tables []string) error {
	for _, want := range []string{"items", "writes_pgx", "writes_node"} {
		if !slices.Contains(tables, want) {
			return fmt.Errorf("tables %q lack %s", tables, want)
		}
	}
	seen := map[string]bool{}
	for _, tb := range tables {
		if seen[tb] {
			return fmt.Errorf("tables %q list %s twice", tables, tb)
		}
		seen[tb] = true
		if strings.HasPrefix(tb, "pg_catalog.") || strings.HasPrefix(tb, "information_schema.") {
			return fmt.Errorf("tables %q include the system's %s", tables, tb)
		}
	}
	return nil
}

func grafanaSorted(s []string) error {
	if !slices.IsSorted(s) {
		return fmt.Errorf("%q is not in order", s)
	}
	return nil
}

func grafanaSameMap(got, want map[string]string) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			return fmt.Errorf("got %v, want %v", got, want)
		}
	}
	return nil
}

func grafanaStrings(ctx context.Context, pool *pgxpool.Pool, out *[]string, sql string, args ...any) error {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		*out = append(*out, s)
	}
	return rows.Err()
}

func grafanaIntOrNull(p *int) string {
	if p == nil {
		return "null"
	}
	return strconv.Itoa(*p)
}

// grafanaSearchPathSchemas is the condition postgresMetaQuery.ts's
// buildSchemaConstraint writes: the schema is one of search_path's, with
// "$user" read as the login.
const grafanaSearchPathSchemas = `
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )`

// grafanaLegacySearchPath is meta_query.ts's buildSchemaConstraint: the
// same without quote_ident.
var grafanaLegacySearchPath = strings.Replace(grafanaSearchPathSchemas, "quote_ident(table_schema)", "table_schema", 1)

// grafanaExpand expands the macros these checks use over the suite's
// time range, with $__interval 1h, as Grafana's backend does before it
// sends a query (sqleng's Interpolate for $__interval and the epoch
// bounds, macros.go for the rest, TimescaleDB off).
func grafanaExpand(sql string) string {
	from, to := grafanaFrom.UTC().Format(time.RFC3339Nano), grafanaTo.UTC().Format(time.RFC3339Nano)
	sql = strings.NewReplacer("$__interval_ms", "3600000", "$__unixEpochFrom()", strconv.FormatInt(grafanaFrom.Unix(), 10),
		"$__unixEpochTo()", strconv.FormatInt(grafanaTo.Unix(), 10)).Replace(sql)
	sql = strings.ReplaceAll(sql, "$__interval", "1h")
	macro := regexp.MustCompile(`\$(__[_a-zA-Z0-9]+)\(([^)]*)\)`)
	return macro.ReplaceAllStringFunc(sql, func(call string) string {
		m := macro.FindStringSubmatch(call)
		var args []string
		for _, a := range strings.Split(m[2], ",") {
			args = append(args, strings.TrimSpace(a))
		}
		seconds := func() string {
			d, err := time.ParseDuration(strings.ReplaceAll(strings.Trim(args[1], "'"), "d", "h"))
			if err != nil {
				panic(fmt.Sprintf("interval %q", args[1]))
			}
			if strings.HasSuffix(strings.Trim(args[1], "'"), "d") {
				d *= 24
			}
			return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
		}
		switch m[1] {
		case "__time":
			return args[0] + ` AS "time"`
		case "__timeEpoch":
			return `extract(epoch from ` + args[0] + `) as "time"`
		case "__timeFilter":
			return fmt.Sprintf("%s BETWEEN '%s' AND '%s'", args[0], from, to)
		case "__timeFrom":
			return "'" + from + "'"
		case "__timeTo":
			return "'" + to + "'"
		case "__timeGroup":
			s := seconds()
			return fmt.Sprintf("floor(extract(epoch from %s)/%s)*%s", args[0], s, s)
		case "__timeGroupAlias":
			s := seconds()
			return fmt.Sprintf(`floor(extract(epoch from %s)/%s)*%s AS "time"`, args[0], s, s)
		}
		panic("macro " + m[1])
	})
}
