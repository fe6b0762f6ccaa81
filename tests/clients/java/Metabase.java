import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * What Metabase's PostgreSQL driver sends when it connects to, syncs and
 * queries a database, replayed through pgjdbc as Metabase runs it.
 *
 * The SQL is reconstructed from Metabase's source (metabase/metabase, the
 * files cited at each check): the driver builds most of it with HoneySQL 2,
 * whose :ansi dialect quotes every identifier with double quotes, writes
 * "AS" before aliases and "INNER JOIN"/"LEFT JOIN", and passes literals that
 * are not [:inline ...] as JDBC parameters (set with setObject; integers
 * are Clojure longs, so int8). Query-processor queries start with
 * Metabase's remark comment.
 */
public final class Metabase {
    static Connection conn;

    static final String REMARK = "-- Metabase:: userID: 1 queryType: MBQL queryHash: 5bd3c1a0b2e9\n";

    public static void main(String[] args) throws Exception {
        Check.init();
        Properties p = new Properties();
        // metabase.driver.postgres/connection-details->spec and ssl-params:
        // the spec's extra keys reach the driver as connection properties
        p.setProperty("OpenSourceSubProtocolOverride", "true");
        p.setProperty("sslpassword", "");
        p.setProperty("ApplicationName", "Metabase v0.56 [sync]");
        conn = Check.connect("", p);

        connection();
        sync();
        queries();
        conn.close();
        Check.exit();
    }

    static void connection() {
        // metabase.driver.sql-jdbc.connection/can-connect-with-spec?: the
        // "test connection" of the database form
        Check.run("mb-can-connect", () ->
                Check.eq(1, Check.query(conn, "SELECT 1").get(0).get("?column?"), "SELECT 1"));

        // src/metabase/driver/sql_jdbc/execute.clj, do-with-connection-with-options'
        // happy path: set-best-transaction-level! (the first level the
        // metadata says is supported), then read-only, autocommit, holdability.
        // The pool (c3p0) tests a connection on checkout with isValid, which
        // pgjdbc does with an empty query.
        Check.run("mb-connection-options", () -> {
            DatabaseMetaData md = conn.getMetaData();
            Check.that(md.supportsTransactionIsolationLevel(Connection.TRANSACTION_READ_UNCOMMITTED),
                    "supportsTransactionIsolationLevel(READ_UNCOMMITTED) is false");
            conn.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
            conn.setReadOnly(true);
            conn.setAutoCommit(true);
            conn.setHoldability(ResultSet.CLOSE_CURSORS_AT_COMMIT);
            Check.eq(Connection.TRANSACTION_READ_UNCOMMITTED, conn.getTransactionIsolation(), "getTransactionIsolation");
            Check.that(conn.isValid(5), "isValid(5) is false");
            Check.eq(3L, Check.query(conn, "SELECT count(*) AS c FROM items").get(0).num("c"), "a query after the options");
        });

        // src/metabase/driver/postgres.clj, driver/db-default-timezone
        Check.run("mb-db-default-timezone", () -> {
            try (PreparedStatement st = conn.prepareStatement("show timezone;"); ResultSet rs = st.executeQuery()) {
                Check.that(rs.next(), "no row");
                // pgjdbc sends the JVM's zone (UTC here) at startup
                Check.eq("UTC", rs.getString(1), "timezone");
            }
        });

        // src/metabase/driver/postgres.clj, sql-jdbc.execute/set-timezone-sql,
        // run by execute.clj's set-time-zone-if-supported! when the admin sets
        // a report timezone: read-write, then a plain statement
        Check.run("mb-report-timezone", () -> {
            try (Connection c = Check.connect("")) {
                c.setReadOnly(false);
                try (Statement st = c.createStatement()) {
                    st.execute("SET SESSION TIMEZONE TO 'America/Los_Angeles';");
                }
                c.setReadOnly(true);
                List<Check.Row> r = Check.query(c, "show timezone;");
                Check.eq("America/Los_Angeles", r.get(0).str("timezone"), "timezone after SET");
                r = Check.query(c, "SELECT CAST(CAST('2026-01-01 10:00:00+00' AS timestamptz) AS timestamp) AS t");
                Check.eq(Timestamp.valueOf("2026-01-01 02:00:00"), r.get(0).get("t"), "timestamptz seen in the report zone");
            }
        });

        // src/metabase/driver/sql_jdbc/connection.clj / driver dbms-version:
        // the version comes from DatabaseMetaData
        Check.run("mb-dbms-version", () -> {
            DatabaseMetaData md = conn.getMetaData();
            Check.eq("PostgreSQL", md.getDatabaseProductName(), "getDatabaseProductName");
            Check.that(md.getDatabaseProductVersion().matches("\\d+(\\.\\d+)*.*"), "getDatabaseProductVersion "
                    + md.getDatabaseProductVersion());
            Check.that(md.getDatabaseMajorVersion() >= 12, "getDatabaseMajorVersion " + md.getDatabaseMajorVersion());
        });
    }

    // src/metabase/driver/postgres.clj, sql-jdbc.sync/current-user-table-privileges
    static final String TABLE_PRIVILEGES = String.join("\n",
            "with table_privileges as (",
            " select",
            "   NULL as role,",
            "   t.schemaname as schema,",
            "   t.objectname as table,",
            "   pg_catalog.has_any_column_privilege(current_user, '\"' || replace(t.schemaname, '\"', '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',  'update') as update,",
            "   pg_catalog.has_any_column_privilege(current_user, '\"' || replace(t.schemaname, '\"', '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',  'select') as select,",
            "   pg_catalog.has_any_column_privilege(current_user, '\"' || replace(t.schemaname, '\"', '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',  'insert') as insert,",
            "   pg_catalog.has_table_privilege(     current_user, '\"' || replace(t.schemaname, '\"', '\"\"') || '\"' || '.' || '\"' || replace(t.objectname, '\"', '\"\"') || '\"',  'delete') as delete",
            " from (",
            "   select schemaname, tablename as objectname from pg_catalog.pg_tables",
            "   union",
            "   select schemaname, viewname as objectname from pg_catalog.pg_views",
            "   union",
            "   select schemaname, matviewname as objectname from pg_catalog.pg_matviews",
            " ) t",
            " where t.schemaname !~ '^pg_'",
            "   and t.schemaname <> 'information_schema'",
            "   and pg_catalog.has_schema_privilege(current_user, t.schemaname, 'usage')",
            ")",
            "select t.*",
            "from table_privileges t");

    // src/metabase/driver/postgres.clj, get-tables-sql, with the syncable
    // schemas (here public) as the :in list
    static final String GET_TABLES = "SELECT \"n\".\"nspname\" AS \"schema\", \"c\".\"relname\" AS \"name\", "
            + "CASE \"c\".\"relkind\" WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' "
            + "WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS \"type\", "
            + "\"d\".\"description\" AS \"description\", \"stat\".\"n_live_tup\" AS \"estimated_row_count\" "
            + "FROM \"pg_catalog\".\"pg_class\" AS \"c\" "
            + "INNER JOIN \"pg_catalog\".\"pg_namespace\" AS \"n\" ON \"c\".\"relnamespace\" = \"n\".\"oid\" "
            + "LEFT JOIN \"pg_catalog\".\"pg_description\" AS \"d\" ON (\"c\".\"oid\" = \"d\".\"objoid\") AND (\"d\".\"objsubid\" = ?) "
            + "AND (\"d\".\"classoid\" = 'pg_class'::regclass) "
            + "LEFT JOIN \"pg_stat_user_tables\" AS \"stat\" ON (\"n\".\"nspname\" = \"stat\".\"schemaname\") "
            + "AND (\"c\".\"relname\" = \"stat\".\"relname\") "
            + "WHERE (\"c\".\"relnamespace\" = \"n\".\"oid\") AND (\"n\".\"nspname\" !~ ?) AND (\"n\".\"nspname\" <> ?) "
            + "AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND (\"n\".\"nspname\" IN (?)) "
            + "ORDER BY \"type\" ASC, \"schema\" ASC, \"name\" ASC";

    // src/metabase/driver/postgres.clj, sql-jdbc.sync/describe-fields-sql,
    // with schema-names [public] and table-names [items item_totals]
    static final String DESCRIBE_FIELDS = "SELECT \"c\".\"column_name\" AS \"name\", "
            + "CASE WHEN \"c\".\"udt_schema\" IN ('public', 'pg_catalog') THEN FORMAT('%s', \"c\".\"udt_name\") "
            + "ELSE FORMAT('\"%s\".\"%s\"', \"c\".\"udt_schema\", \"c\".\"udt_name\") END AS \"database-type\", "
            + "\"c\".\"ordinal_position\" - 1 AS \"database-position\", \"c\".\"table_schema\" AS \"table-schema\", "
            + "\"c\".\"table_name\" AS \"table-name\", \"pk\".\"column_name\" IS NOT NULL AS \"pk?\", "
            + "COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST(\"c\".\"table_schema\" AS TEXT), CAST(\"c\".\"table_name\" AS TEXT)) AS REGCLASS) AS OID), "
            + "\"c\".\"ordinal_position\") AS \"field-comment\", "
            + "((\"column_default\" IS NULL) OR (LOWER(\"column_default\") = 'null')) AND (\"is_nullable\" = 'NO') "
            + "AND NOT (((\"column_default\" IS NOT NULL) AND (\"column_default\" LIKE '%nextval(%')) OR (\"is_identity\" <> 'NO')) "
            + "AS \"database-required\", "
            + "((\"column_default\" IS NOT NULL) AND (\"column_default\" LIKE '%nextval(%')) OR (\"is_identity\" <> 'NO') "
            + "AS \"database-is-auto-increment\" "
            + "FROM \"information_schema\".\"columns\" AS \"c\" "
            + "LEFT JOIN (SELECT \"tc\".\"table_schema\", \"tc\".\"table_name\", \"kc\".\"column_name\" "
            + "FROM \"information_schema\".\"table_constraints\" AS \"tc\" "
            + "INNER JOIN \"information_schema\".\"key_column_usage\" AS \"kc\" ON (\"tc\".\"constraint_name\" = \"kc\".\"constraint_name\") "
            + "AND (\"tc\".\"table_schema\" = \"kc\".\"table_schema\") AND (\"tc\".\"table_name\" = \"kc\".\"table_name\") "
            + "WHERE \"tc\".\"constraint_type\" = 'PRIMARY KEY') AS \"pk\" "
            + "ON (\"c\".\"table_schema\" = \"pk\".\"table_schema\") AND (\"c\".\"table_name\" = \"pk\".\"table_name\") "
            + "AND (\"c\".\"column_name\" = \"pk\".\"column_name\") "
            + "WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND (\"c\".\"table_schema\" IN (?)) "
            + "AND (\"c\".\"table_name\" IN (?, ?)) "
            + "UNION ALL "
            + "SELECT \"pa\".\"attname\" AS \"name\", "
            + "CASE WHEN \"ptn\".\"nspname\" IN ('public', 'pg_catalog') THEN FORMAT('%s', \"pt\".\"typname\") "
            + "ELSE FORMAT('\"%s\".\"%s\"', \"ptn\".\"nspname\", \"pt\".\"typname\") END AS \"database-type\", "
            + "\"pa\".\"attnum\" - 1 AS \"database-position\", \"pn\".\"nspname\" AS \"table-schema\", "
            + "\"pc\".\"relname\" AS \"table-name\", FALSE AS \"pk?\", NULL AS \"field-comment\", "
            + "FALSE AS \"database-required\", FALSE AS \"database-is-auto-increment\" "
            + "FROM \"pg_catalog\".\"pg_class\" AS \"pc\" "
            + "INNER JOIN \"pg_catalog\".\"pg_namespace\" AS \"pn\" ON \"pn\".\"oid\" = \"pc\".\"relnamespace\" "
            + "INNER JOIN \"pg_catalog\".\"pg_attribute\" AS \"pa\" ON \"pa\".\"attrelid\" = \"pc\".\"oid\" "
            + "INNER JOIN \"pg_catalog\".\"pg_type\" AS \"pt\" ON \"pt\".\"oid\" = \"pa\".\"atttypid\" "
            + "INNER JOIN \"pg_catalog\".\"pg_namespace\" AS \"ptn\" ON \"ptn\".\"oid\" = \"pt\".\"typnamespace\" "
            + "WHERE (\"pc\".\"relkind\" = 'm') AND (\"pa\".\"attnum\" >= 1) AND (\"pn\".\"nspname\" IN (?)) "
            + "AND (\"pc\".\"relname\" IN (?, ?)) "
            + "ORDER BY \"table-schema\" ASC, \"table-name\" ASC, \"database-position\" ASC";

    // src/metabase/driver/postgres.clj, sql-jdbc.sync/describe-fks-sql
    // (feature :describe-fks), schema-names [public], table-names [items item_totals]
    static final String DESCRIBE_FKS = "SELECT \"fk_ns\".\"nspname\" AS \"fk-table-schema\", "
            + "\"fk_table\".\"relname\" AS \"fk-table-name\", \"fk_column\".\"attname\" AS \"fk-column-name\", "
            + "\"pk_ns\".\"nspname\" AS \"pk-table-schema\", \"pk_table\".\"relname\" AS \"pk-table-name\", "
            + "\"pk_column\".\"attname\" AS \"pk-column-name\" "
            + "FROM \"pg_constraint\" AS \"c\" "
            + "INNER JOIN \"pg_class\" AS \"fk_table\" ON \"c\".\"conrelid\" = \"fk_table\".\"oid\" "
            + "INNER JOIN \"pg_namespace\" AS \"fk_ns\" ON \"c\".\"connamespace\" = \"fk_ns\".\"oid\" "
            + "INNER JOIN \"pg_attribute\" AS \"fk_column\" ON \"c\".\"conrelid\" = \"fk_column\".\"attrelid\" "
            + "INNER JOIN \"pg_class\" AS \"pk_table\" ON \"c\".\"confrelid\" = \"pk_table\".\"oid\" "
            + "INNER JOIN \"pg_namespace\" AS \"pk_ns\" ON \"pk_table\".\"relnamespace\" = \"pk_ns\".\"oid\" "
            + "INNER JOIN \"pg_attribute\" AS \"pk_column\" ON \"c\".\"confrelid\" = \"pk_column\".\"attrelid\" "
            + "WHERE fk_ns.nspname !~ '^information_schema|catalog_history|pg_' AND (\"c\".\"contype\" = 'f'::char) "
            + "AND (\"fk_column\".\"attnum\" = ANY(c.conkey)) AND (\"pk_column\".\"attnum\" = ANY(c.confkey)) "
            + "AND (\"fk_table\".\"relname\" IN (?, ?)) AND (\"fk_ns\".\"nspname\" IN (?)) "
            + "ORDER BY \"fk-table-schema\" ASC, \"fk-table-name\" ASC";

    static void sync() {
        // src/metabase/driver/sql_jdbc/sync/describe_database.clj, all-schemas
        // and filtered-syncable-schemas: getSchemas less excluded-schemas
        // (postgres.clj: information_schema, pg_catalog)
        Check.run("mb-syncable-schemas", () -> {
            List<String> s = new ArrayList<>();
            for (Check.Row r : Check.rows(conn.getMetaData().getSchemas())) {
                String name = r.str("table_schem");
                if (!name.equals("information_schema") && !name.equals("pg_catalog") && !name.startsWith("metabase_cache")) {
                    s.add(name);
                }
            }
            Check.that(s.contains("public"), "syncable schemas lack public: " + s);
        });

        Check.run("mb-table-privileges", () -> {
            List<Check.Row> r = Check.query(conn, TABLE_PRIVILEGES);
            for (String t : List.of("items", "item_totals", "writes_jdbc")) {
                List<Check.Row> w = Check.where(Check.where(r, "schema", "public"), "table", t);
                Check.eq(1, w.size(), "rows for public." + t);
                Check.eq(true, w.get(0).bool("select"), t + " select");
                Check.that(w.get(0).containsKey("insert") && w.get(0).containsKey("update") && w.get(0).containsKey("delete")
                        && w.get(0).containsKey("role"), t + " columns " + w.get(0).keySet());
            }
            for (Check.Row row : r) {
                Check.that(!row.str("schema").startsWith("pg_") && !row.str("schema").equals("information_schema"),
                        "system schema listed: " + row);
            }
        });

        Check.run("mb-describe-database", () -> {
            List<Check.Row> r = Check.query(conn, GET_TABLES, 0L, "^pg_", "information_schema", "public");
            Check.Row items = Check.one(r, "name", "items");
            Check.eq("public", items.str("schema"), "items schema");
            Check.eq("TABLE", items.str("type"), "items type");
            Check.eq(null, items.get("description"), "items description");
            items.need("estimated_row_count");
            Check.eq("MATERIALIZED VIEW", Check.one(r, "name", "item_totals").str("type"), "item_totals type");
            Check.eq("TABLE", Check.one(r, "name", "writes_jdbc").str("type"), "writes_jdbc type");
            // ORDER BY type, schema, name: MATERIALIZED VIEW sorts before TABLE
            List<String> names = Check.column(r, "name");
            Check.eq("item_totals", names.get(0), "first row");
            List<String> tables = new ArrayList<>(names.subList(1, names.size()));
            List<String> sorted = new ArrayList<>(tables);
            sorted.sort(null);
            Check.eq(sorted, tables, "tables ordered by name");
        });

        Check.run("mb-describe-fields", () -> {
            List<Check.Row> r = Check.query(conn, DESCRIBE_FIELDS, "public", "items", "item_totals", "public", "items", "item_totals");
            List<String> got = new ArrayList<>();
            for (Check.Row row : r) {
                got.add(row.str("table-name") + "." + row.str("name") + ":" + row.str("database-type") + "@" + row.num("database-position"));
                Check.eq("public", row.str("table-schema"), "table-schema");
                Check.eq(false, row.bool("pk?"), row.str("name") + " pk?");
                Check.eq(false, row.bool("database-required"), row.str("name") + " database-required");
                Check.eq(false, row.bool("database-is-auto-increment"), row.str("name") + " database-is-auto-increment");
                Check.eq(null, row.get("field-comment"), row.str("name") + " field-comment");
            }
            Check.eq(List.of("item_totals.name:text@0", "item_totals.total:int8@1", "item_totals.n:int8@2",
                    "items.id:int8@0", "items.name:text@1", "items.price:numeric@2", "items.qty:int4@3",
                    "items.added:timestamp@4"), got, "fields");
        });

        Check.run("mb-describe-fks", () -> {
            List<Check.Row> r = Check.query(conn, DESCRIBE_FKS, "items", "item_totals", "public");
            Check.eq(0, r.size(), "foreign keys");
        });

        // src/metabase/driver/postgres.clj, enum-types (describe-fields-pre-process-xf
        // and dynamic-database-types-lookup): the fixture has no enum types
        Check.run("mb-enum-types", () -> {
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("SELECT nspname, typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
                         + "WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e)")) {
                ResultSetMetaData m = rs.getMetaData();
                Check.eq("nspname", m.getColumnName(1), "column 1");
                Check.eq("typname", m.getColumnName(2), "column 2");
                Check.that(!rs.next(), "enum types listed: " + (rs.getRow() > 0 ? rs.getString(2) : ""));
            }
        });

        // src/metabase/driver/sql_jdbc/sync/describe_table.clj,
        // describe-nested-field-columns (json-unfolding defaults on):
        // table->unfold-json-fields reads the columns through getColumns, and
        // get-table-pks through getPrimaryKeys; items has no json column, so
        // no sample query follows
        Check.run("mb-nested-field-columns", () -> {
            DatabaseMetaData md = conn.getMetaData();
            List<Check.Row> cols = Check.rows(md.getColumns(null, "public", "items", null));
            Check.eq(List.of("id", "name", "price", "qty", "added"), Check.column(cols, "column_name"), "columns");
            Check.eq(List.of("int8", "text", "numeric", "int4", "timestamp"), Check.column(cols, "type_name"), "TYPE_NAME");
            for (Check.Row c : cols) {
                Check.eq(null, c.get("column_def"), c.str("column_name") + " COLUMN_DEF");
                Check.eq((long) DatabaseMetaData.columnNullable, c.num("nullable"), c.str("column_name") + " NULLABLE");
                Check.eq("NO", c.str("is_autoincrement"), c.str("column_name") + " IS_AUTOINCREMENT");
                Check.eq(null, c.get("remarks"), c.str("column_name") + " REMARKS");
            }
            Check.eq(0, Check.rows(md.getPrimaryKeys(null, "public", "items")).size(), "primary keys");
        });

        // src/metabase/driver/sql_jdbc/sync/describe_database.clj,
        // simple-select-probe-query and execute-select-probe-query (the
        // select-privilege probe sql-jdbc drivers run per table; postgres
        // runs it for foreign tables): a prepared statement, 15 s timeout,
        // execute()
        Check.run("mb-select-probe", () -> {
            for (String t : List.of("items", "item_totals")) {
                try (PreparedStatement ps = conn.prepareStatement("SELECT TRUE AS \"_\" FROM \"public\".\"" + t + "\" WHERE 1 <> 1 LIMIT 0")) {
                    ps.setQueryTimeout(15);
                    Check.that(ps.execute(), t + ": execute() returned no result set");
                    try (ResultSet rs = ps.getResultSet()) {
                        Check.eq("_", rs.getMetaData().getColumnName(1), t + " column");
                        Check.eq("bool", rs.getMetaData().getColumnTypeName(1), t + " column type");
                        Check.that(!rs.next(), t + ": rows from a LIMIT 0 probe");
                    }
                }
            }
            // sql-jdbc/impl-table-known-to-not-exist? (postgres.clj): 42P01
            Check.sqlState("42P01", () -> {
                try (PreparedStatement ps = conn.prepareStatement("SELECT TRUE AS \"_\" FROM \"public\".\"no_such_table\" WHERE 1 <> 1 LIMIT 0")) {
                    ps.execute();
                }
            });
        });

        // describe_table.clj, fallback-metadata-query and
        // fallback-fields-metadata-from-select-query (when getColumns gives a
        // column no type): SELECT * ... LIMIT 0, read through ResultSetMetaData
        Check.run("mb-fallback-metadata-query", () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT * FROM \"public\".\"items\" WHERE 1 <> 1 LIMIT 0");
                 ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData m = rs.getMetaData();
                List<String> got = new ArrayList<>();
                for (int i = 1; i <= m.getColumnCount(); i++) {
                    got.add(m.getColumnName(i) + ":" + m.getColumnTypeName(i) + ":" + m.isAutoIncrement(i));
                }
                Check.eq(List.of("id:int8:false", "name:text:false", "price:numeric:false", "qty:int4:false",
                        "added:timestamp:false"), got, "columns");
                Check.that(!rs.next(), "rows from LIMIT 0");
            }
        });
    }

    /** Runs a query-processor query as sql-jdbc.execute does: forward-only, read-only, fetch forward. */
    static List<Check.Row> qp(String sql, Object... params) throws Exception {
        try (PreparedStatement ps = conn.prepareStatement(REMARK + sql, ResultSet.TYPE_FORWARD_ONLY,
                ResultSet.CONCUR_READ_ONLY, ResultSet.CLOSE_CURSORS_AT_COMMIT)) {
            ps.setFetchDirection(ResultSet.FETCH_FORWARD);
            ps.setQueryTimeout(30);
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            return Check.rows(ps.executeQuery());
        }
    }

    static void queries() {
        // sync's row count (metabase.sync.sync-metadata / table row count):
        // an MBQL count query
        Check.run("mb-row-count", () -> {
            List<Check.Row> r = qp("SELECT COUNT(*) AS \"count\" FROM \"public\".\"items\"");
            Check.eq(3L, r.get(0).num("count"), "count");
        });

        // src/metabase/driver/common/table_rows_sample.clj, table-rows-sample
        // (fingerprinting): every field, text truncated with SUBSTRING
        // (truncation-size 1234), LIMIT max-sample-rows (10000)
        Check.run("mb-table-rows-sample", () -> {
            List<Check.Row> r = qp("SELECT \"public\".\"items\".\"id\" AS \"id\", "
                    + "SUBSTRING(\"public\".\"items\".\"name\", 1, 1234) AS \"substring1234\", "
                    + "\"public\".\"items\".\"price\" AS \"price\", \"public\".\"items\".\"qty\" AS \"qty\", "
                    + "\"public\".\"items\".\"added\" AS \"added\" FROM \"public\".\"items\" LIMIT 10000");
            Check.eq(3, r.size(), "rows");
            Check.Row pear = Check.one(r, "id", 2L);
            Check.eq("pear", pear.str("substring1234"), "name");
            Check.eq(0, new BigDecimal("2.50").compareTo((BigDecimal) pear.get("price")), "price compared with 2.50");
            Check.eq(5, pear.get("qty"), "qty");
            Check.eq(Timestamp.valueOf("2026-01-01 11:00:00"), pear.get("added"), "added");
        });

        // field values (metabase.warehouse-schema field values / sync
        // field-values): an MBQL breakout on the field, LIMIT 1000
        Check.run("mb-field-values", () -> {
            List<Check.Row> r = qp("SELECT \"public\".\"items\".\"name\" AS \"name\" FROM \"public\".\"items\" "
                    + "GROUP BY \"public\".\"items\".\"name\" ORDER BY \"public\".\"items\".\"name\" ASC LIMIT 1000");
            Check.eq(List.of("apple", "pear", "plum"), Check.column(r, "name"), "values");
            r = qp("SELECT \"public\".\"item_totals\".\"total\" AS \"total\" FROM \"public\".\"item_totals\" "
                    + "GROUP BY \"public\".\"item_totals\".\"total\" ORDER BY \"public\".\"item_totals\".\"total\" ASC LIMIT 1000");
            Check.eq(List.of("5", "10", "20"), Check.column(r, "total"), "values");
        });

        // src/metabase/driver/postgres.clj, sql.qp/date [:postgres :day]
        // (maybe-cast to the column's type of a cast to date) and :month
        // (date_trunc): a question grouped by day and by month
        Check.run("mb-breakout-by-day", () -> {
            String day = "CAST(CAST(\"public\".\"items\".\"added\" AS date) AS timestamp)";
            List<Check.Row> r = qp("SELECT " + day + " AS \"added\", COUNT(*) AS \"count\" FROM \"public\".\"items\" GROUP BY "
                    + day + " ORDER BY " + day + " ASC");
            Check.eq(2, r.size(), "days");
            Check.eq(Timestamp.valueOf("2026-01-01 00:00:00"), r.get(0).get("added"), "first day");
            Check.eq(2L, r.get(0).num("count"), "first day count");
            Check.eq(Timestamp.valueOf("2026-01-02 00:00:00"), r.get(1).get("added"), "second day");
            Check.eq(1L, r.get(1).num("count"), "second day count");
        });
        Check.run("mb-breakout-by-month", () -> {
            String month = "DATE_TRUNC('month', \"public\".\"items\".\"added\")";
            List<Check.Row> r = qp("SELECT " + month + " AS \"added\", SUM(\"public\".\"items\".\"qty\") AS \"sum\" "
                    + "FROM \"public\".\"items\" GROUP BY " + month + " ORDER BY " + month + " ASC");
            Check.eq(1, r.size(), "months");
            Check.eq(Timestamp.valueOf("2026-01-01 00:00:00"), r.get(0).get("added"), "month");
            Check.eq(35L, r.get(0).num("sum"), "sum");
        });
        // a filtered question: the value is a parameter
        Check.run("mb-filter-parameter", () -> {
            List<Check.Row> r = qp("SELECT \"public\".\"items\".\"name\" AS \"name\", \"public\".\"items\".\"price\" AS \"price\" "
                    + "FROM \"public\".\"items\" WHERE \"public\".\"items\".\"price\" > ? ORDER BY \"public\".\"items\".\"price\" DESC "
                    + "LIMIT 2000", 1L);
            Check.eq(List.of("pear", "apple"), Check.column(r, "name"), "names");
        });
        // a native question runs as written, after the remark
        Check.run("mb-native-query", () -> {
            List<Check.Row> r = qp("SELECT name, total, n FROM item_totals ORDER BY total DESC");
            Check.eq(List.of("plum", "apple", "pear"), Check.column(r, "name"), "names");
            Check.eq(20L, r.get(0).num("total"), "plum total");
            Check.eq(1L, r.get(0).num("n"), "plum n");
        });
    }
}
