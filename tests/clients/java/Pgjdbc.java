import java.io.StringReader;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.postgresql.PGConnection;
import org.postgresql.PGResultSetMetaData;
import org.postgresql.PGStatement;
import org.postgresql.copy.CopyManager;

/**
 * pgjdbc (org.postgresql:postgresql) against the fixture: login, the
 * DatabaseMetaData methods JDBC tools call, typed parameters, result set
 * metadata, portal fetches, batches, COPY, SQLSTATEs, transactions and
 * server-side prepared statements. Writes go to writes_jdbc only.
 */
public final class Pgjdbc {
    static Connection conn;

    public static void main(String[] args) throws Exception {
        Check.init();
        Check.run("connect-scram-tls", () -> {
            // sslmode=require fails unless the server speaks TLS; requireAuth
            // makes the driver refuse any method but SCRAM-SHA-256.
            conn = Check.connect("requireAuth=scram-sha-256");
            List<Check.Row> r = Check.query(conn, "SELECT current_user AS u, 1 + 1 AS two");
            Check.eq(Check.user(), r.get(0).str("u"), "current_user");
            Check.eq(2, r.get(0).get("two"), "1 + 1");
        });
        if (conn == null) {
            conn = Check.connect("");
        }
        Check.run("connect-wrong-password", () -> Check.sqlState("28P01", () -> {
            Properties p = Check.props("not-the-password");
            java.sql.DriverManager.getConnection(Check.url(""), p).close();
        }));

        DatabaseMetaData md = conn.getMetaData();
        metadata(md);
        prepared();
        resultSetMetadata();
        multiStatement();
        fetchSize();
        batches();
        copy();
        errors();
        transactions();
        serverPrepared();
        conn.close();
        Check.exit();
    }

    static void metadata(DatabaseMetaData md) {
        Check.run("meta-product", () -> {
            Check.eq("PostgreSQL", md.getDatabaseProductName(), "getDatabaseProductName");
            String v = md.getDatabaseProductVersion();
            Check.that(v.matches("\\d+(\\.\\d+)*.*"), "getDatabaseProductVersion " + Check.show(v));
            Check.that(md.getDatabaseMajorVersion() >= 12, "getDatabaseMajorVersion " + md.getDatabaseMajorVersion());
            Check.eq("PostgreSQL JDBC Driver", md.getDriverName(), "getDriverName");
        });
        Check.run("meta-user-name", () -> Check.eq(Check.user(), md.getUserName(), "getUserName"));

        Check.run("meta-tables-all-types", () -> {
            List<Check.Row> t = Check.rows(md.getTables(null, "public", "%", null));
            Check.eq("TABLE", Check.one(t, "table_name", "items").str("table_type"), "items TABLE_TYPE");
            Check.eq("MATERIALIZED VIEW", Check.one(t, "table_name", "item_totals").str("table_type"), "item_totals TABLE_TYPE");
            Check.eq("TABLE", Check.one(t, "table_name", "writes_jdbc").str("table_type"), "writes_jdbc TABLE_TYPE");
            Check.eq("public", Check.one(t, "table_name", "items").str("table_schem"), "items TABLE_SCHEM");
        });
        Check.run("meta-tables-type-filter", () -> {
            List<Check.Row> t = Check.rows(md.getTables(null, "public", "%", new String[] {"TABLE"}));
            Check.one(t, "table_name", "items");
            Check.eq(0, Check.where(t, "table_name", "item_totals").size(), "item_totals among TABLE");
            for (Check.Row r : t) {
                Check.eq("TABLE", r.str("table_type"), r.str("table_name") + " TABLE_TYPE");
            }
            List<Check.Row> m = Check.rows(md.getTables(null, "public", "%", new String[] {"MATERIALIZED VIEW"}));
            Check.eq(List.of("item_totals"), Check.column(m, "table_name"), "MATERIALIZED VIEW tables");
        });
        Check.run("meta-tables-pattern", () -> {
            List<Check.Row> t = Check.rows(md.getTables(null, null, "item%", null));
            List<String> names = Check.column(t, "table_name");
            Check.that(names.contains("items") && names.contains("item_totals"), "item% matched " + names);
            List<Check.Row> exact = Check.rows(md.getTables(null, "public", "item\\_totals", null));
            Check.eq(List.of("item_totals"), Check.column(exact, "table_name"), "item\\_totals");
        });
        Check.run("meta-columns-items", () -> {
            List<Check.Row> cols = Check.rows(md.getColumns(null, "public", "items", "%"));
            Check.eq(List.of("id", "name", "price", "qty", "added"), Check.column(cols, "column_name"), "columns");
            int[] types = {Types.BIGINT, Types.VARCHAR, Types.NUMERIC, Types.INTEGER, Types.TIMESTAMP};
            String[] names = {"int8", "text", "numeric", "int4", "timestamp"};
            for (int i = 0; i < cols.size(); i++) {
                Check.Row c = cols.get(i);
                String col = c.str("column_name");
                Check.eq((long) types[i], c.num("data_type"), col + " DATA_TYPE");
                Check.eq(names[i], c.str("type_name"), col + " TYPE_NAME");
                Check.eq((long) i + 1, c.num("ordinal_position"), col + " ORDINAL_POSITION");
                Check.eq((long) DatabaseMetaData.columnNullable, c.num("nullable"), col + " NULLABLE");
                Check.eq("YES", c.str("is_nullable"), col + " IS_NULLABLE");
                Check.eq("NO", c.str("is_autoincrement"), col + " IS_AUTOINCREMENT");
                Check.eq("items", c.str("table_name"), col + " TABLE_NAME");
            }
            Check.eq(19L, cols.get(0).num("column_size"), "id COLUMN_SIZE");
            Check.eq(10L, cols.get(3).num("column_size"), "qty COLUMN_SIZE");
        });
        Check.run("meta-columns-matview", () -> {
            List<Check.Row> cols = Check.rows(md.getColumns(null, "public", "item_totals", null));
            Check.eq(List.of("name", "total", "n"), Check.column(cols, "column_name"), "columns");
            Check.eq(List.of("text", "int8", "int8"), Check.column(cols, "type_name"), "TYPE_NAME");
        });
        Check.run("meta-primary-keys", () -> {
            List<Check.Row> pk = Check.rows(md.getPrimaryKeys(null, "public", "items"));
            Check.eq(0, pk.size(), "primary key columns of items");
        });
        Check.run("meta-index-info", () -> {
            List<Check.Row> ix = Check.rows(md.getIndexInfo(null, "public", "items", false, true));
            Check.eq(0, ix.size(), "index rows of items");
        });
        Check.run("meta-imported-exported-keys", () -> {
            Check.eq(0, Check.rows(md.getImportedKeys(null, "public", "items")).size(), "imported keys");
            Check.eq(0, Check.rows(md.getExportedKeys(null, "public", "items")).size(), "exported keys");
            Check.eq(0, Check.rows(md.getCrossReference(null, "public", "items", null, "public", "item_totals")).size(),
                    "cross reference");
        });
        Check.run("meta-schemas", () -> {
            List<String> s = Check.column(Check.rows(md.getSchemas()), "table_schem");
            for (String want : List.of("public", "pg_catalog", "information_schema")) {
                Check.that(s.contains(want), "getSchemas lacks " + want + ": " + s);
            }
            List<String> p = Check.column(Check.rows(md.getSchemas(null, "pub%")), "table_schem");
            Check.eq(List.of("public"), p, "getSchemas(null, pub%)");
        });
        Check.run("meta-catalogs", () -> {
            List<String> c = Check.column(Check.rows(md.getCatalogs()), "table_cat");
            Check.that(c.contains(Check.database()), "getCatalogs lacks " + Check.database() + ": " + c);
        });
        Check.run("meta-type-info", () -> {
            Map<String, Check.Row> t = Check.byName(Check.rows(md.getTypeInfo()), "type_name");
            Object[][] want = {{"int4", Types.INTEGER}, {"int8", Types.BIGINT}, {"text", Types.VARCHAR},
                {"numeric", Types.NUMERIC}, {"bool", Types.BIT}, {"timestamp", Types.TIMESTAMP},
                {"float8", Types.DOUBLE}, {"varchar", Types.VARCHAR}};
            for (Object[] w : want) {
                Check.Row r = t.get((String) w[0]);
                Check.that(r != null, "getTypeInfo lacks " + w[0]);
                Check.eq((long) (int) w[1], r.num("data_type"), w[0] + " DATA_TYPE");
            }
        });
        Check.run("meta-table-types", () -> {
            List<String> tt = Check.column(Check.rows(md.getTableTypes()), "table_type");
            for (String want : List.of("TABLE", "VIEW", "MATERIALIZED VIEW", "SYSTEM TABLE")) {
                Check.that(tt.contains(want), "getTableTypes lacks " + want + ": " + tt);
            }
        });
        Check.run("meta-functions", () -> {
            List<Check.Row> f = Check.rows(md.getFunctions(null, "pg_catalog", "lower"));
            Check.that(!f.isEmpty(), "getFunctions(pg_catalog, lower) is empty");
            for (Check.Row r : f) {
                Check.eq("lower", r.str("function_name"), "FUNCTION_NAME");
                Check.eq("pg_catalog", r.str("function_schem"), "FUNCTION_SCHEM");
            }
            List<Check.Row> cols = Check.rows(md.getFunctionColumns(null, "pg_catalog", "lower", null));
            Check.that(!cols.isEmpty(), "getFunctionColumns(pg_catalog, lower) is empty");
        });
        Check.run("meta-procedures", () -> {
            // pgjdbc 42.7 lists only procedures (prokind 'p') here, and the
            // fixture has none; functions are getFunctions' (above)
            Check.eq(0, Check.rows(md.getProcedures(null, "public", "%")).size(), "procedures in public");
            Check.eq(0, Check.rows(md.getProcedureColumns(null, "public", "%", null)).size(), "procedure columns in public");
        });
        Check.run("meta-sql-keywords", () -> {
            List<String> kw = Arrays.asList(md.getSQLKeywords().split(","));
            Check.that(kw.contains("analyze") && kw.contains("limit"), "getSQLKeywords: " + kw);
        });
    }

    static void prepared() {
        Check.run("prepared-typed-params", () -> {
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT id, name, price, qty, added FROM items WHERE id = ? AND price = ? AND name = ? AND added = ?")) {
                ps.setLong(1, 1);
                ps.setBigDecimal(2, new BigDecimal("1.25"));
                ps.setString(3, "apple");
                ps.setTimestamp(4, Timestamp.valueOf("2026-01-01 10:00:00"));
                try (ResultSet rs = ps.executeQuery()) {
                    Check.that(rs.next(), "no row");
                    Check.eq(1L, rs.getLong("id"), "id");
                    Check.eq("apple", rs.getString("name"), "name");
                    Check.eq(0, new BigDecimal("1.25").compareTo(rs.getBigDecimal("price")), "price compared with 1.25");
                    Check.eq(10, rs.getInt("qty"), "qty");
                    Check.eq(Timestamp.valueOf("2026-01-01 10:00:00"), rs.getTimestamp("added"), "added");
                    Check.eq(Long.class, rs.getObject("id").getClass(), "id class");
                    Check.eq(String.class, rs.getObject("name").getClass(), "name class");
                    Check.eq(BigDecimal.class, rs.getObject("price").getClass(), "price class");
                    Check.eq(Integer.class, rs.getObject("qty").getClass(), "qty class");
                    Check.eq(Timestamp.class, rs.getObject("added").getClass(), "added class");
                    Check.that(!rs.next(), "more than one row");
                }
            }
        });
        Check.run("prepared-null-boolean", () -> {
            try (PreparedStatement ps = conn.prepareStatement("SELECT CAST(? AS text) AS n, CAST(? AS boolean) AS b, ? AS l")) {
                ps.setNull(1, Types.VARCHAR);
                ps.setBoolean(2, true);
                ps.setLong(3, 9007199254740993L);
                try (ResultSet rs = ps.executeQuery()) {
                    Check.that(rs.next(), "no row");
                    Check.eq(null, rs.getString("n"), "null text");
                    Check.that(rs.wasNull(), "wasNull after the NULL");
                    Check.eq(true, rs.getBoolean("b"), "boolean");
                    Check.eq(9007199254740993L, rs.getLong("l"), "int8 beyond 2^53");
                }
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT name FROM items WHERE (qty > 8) = ? ORDER BY id")) {
                ps.setBoolean(1, true);
                Check.eq(List.of("apple", "plum"), Check.column(Check.rows(ps.executeQuery()), "name"), "qty > 8");
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT count(*) AS c FROM items WHERE ? IS NULL OR name = ?")) {
                ps.setNull(1, Types.VARCHAR);
                ps.setNull(2, Types.VARCHAR);
                Check.eq(3L, Check.rows(ps.executeQuery()).get(0).num("c"), "count with NULL parameters");
            }
        });
        Check.run("prepared-timestamp-range", () -> {
            try (PreparedStatement ps = conn.prepareStatement(
                    "SELECT name FROM items WHERE added >= ? AND added < ? ORDER BY added")) {
                ps.setTimestamp(1, Timestamp.valueOf("2026-01-01 10:30:00"));
                ps.setTimestamp(2, Timestamp.valueOf("2026-01-03 00:00:00"));
                Check.eq(List.of("pear", "plum"), Check.column(Check.rows(ps.executeQuery()), "name"), "names");
            }
        });
    }

    static void resultSetMetadata() {
        Check.run("resultset-metadata", () -> {
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("SELECT id, name, price, qty, added, qty * 2 AS twice FROM items ORDER BY id")) {
                ResultSetMetaData m = rs.getMetaData();
                Check.eq(6, m.getColumnCount(), "column count");
                String[] names = {"id", "name", "price", "qty", "added", "twice"};
                int[] types = {Types.BIGINT, Types.VARCHAR, Types.NUMERIC, Types.INTEGER, Types.TIMESTAMP, Types.INTEGER};
                String[] typeNames = {"int8", "text", "numeric", "int4", "timestamp", "int4"};
                for (int i = 1; i <= 6; i++) {
                    Check.eq(names[i - 1], m.getColumnName(i), "column " + i + " name");
                    Check.eq(names[i - 1], m.getColumnLabel(i), "column " + i + " label");
                    Check.eq(types[i - 1], m.getColumnType(i), names[i - 1] + " getColumnType");
                    Check.eq(typeNames[i - 1], m.getColumnTypeName(i), names[i - 1] + " getColumnTypeName");
                }
                PGResultSetMetaData pm = m.unwrap(PGResultSetMetaData.class);
                // the base table and column come from the row description's
                // table OID and attribute number, looked up in pg_class/pg_attribute
                for (int i = 1; i <= 5; i++) {
                    Check.eq("items", pm.getBaseTableName(i), names[i - 1] + " getBaseTableName");
                    Check.eq("public", pm.getBaseSchemaName(i), names[i - 1] + " getBaseSchemaName");
                    Check.eq(names[i - 1], pm.getBaseColumnName(i), names[i - 1] + " getBaseColumnName");
                    Check.eq(ResultSetMetaData.columnNullable, m.isNullable(i), names[i - 1] + " isNullable");
                }
                Check.eq("", pm.getBaseTableName(6), "twice getBaseTableName");
                Check.eq("items", m.getTableName(1), "getTableName");
                Check.eq(Long.class.getName(), m.getColumnClassName(1), "id class name");
                Check.eq(BigDecimal.class.getName(), m.getColumnClassName(3), "price class name");
                int n = 0;
                while (rs.next()) {
                    n++;
                }
                Check.eq(3, n, "rows");
            }
        });
    }

    static void multiStatement() {
        Check.run("multi-statement-execute", () -> {
            try (Statement st = conn.createStatement()) {
                Check.that(st.execute("SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; SELECT name FROM items ORDER BY id"),
                        "first result is not a result set");
                List<Check.Row> a = Check.rows(st.getResultSet());
                Check.eq(1, a.get(0).get("a"), "first result");
                Check.that(st.getMoreResults(), "no second result set");
                List<Check.Row> b = Check.rows(st.getResultSet());
                Check.eq("x", b.get(0).str("b"), "second result");
                Check.that(st.getMoreResults(), "no third result set");
                Check.eq(List.of("apple", "pear", "plum"), Check.column(Check.rows(st.getResultSet()), "name"), "third result");
                Check.that(!st.getMoreResults() && st.getUpdateCount() == -1, "results after the third");
            }
        });
        Check.run("query-timeout-cancel", () -> {
            try (Statement st = conn.createStatement()) {
                st.setQueryTimeout(1);
                long t0 = System.nanoTime();
                Check.sqlState("57014", () -> st.executeQuery("SELECT pg_sleep(10)"));
                long ms = (System.nanoTime() - t0) / 1_000_000;
                Check.that(ms < 8000, "cancelled after " + ms + " ms");
            }
            Check.eq(1, Check.query(conn, "SELECT 1 AS one").get(0).get("one"), "connection usable after the cancel");
        });
    }

    static void fetchSize() {
        Check.run("fetch-size-portal", () -> {
            conn.setAutoCommit(false);
            try (PreparedStatement ps = conn.prepareStatement("SELECT g, g * 2 AS d FROM generate_series(1, 5000) AS g")) {
                ps.setFetchSize(500);
                try (ResultSet rs = ps.executeQuery()) {
                    long want = 1;
                    while (rs.next()) {
                        Check.eq(want, (long) rs.getInt(1), "row " + want);
                        Check.eq(want * 2, (long) rs.getInt(2), "row " + want + " doubled");
                        want++;
                    }
                    Check.eq(5001L, want, "rows + 1");
                }
            } finally {
                conn.commit();
                conn.setAutoCommit(true);
            }
        });
        Check.run("fetch-size-one-row", () -> {
            conn.setAutoCommit(false);
            try (Statement st = conn.createStatement()) {
                st.setFetchSize(1);
                List<String> names = Check.column(Check.rows(st.executeQuery("SELECT name FROM items ORDER BY id")), "name");
                Check.eq(List.of("apple", "pear", "plum"), names, "names");
            } finally {
                conn.commit();
                conn.setAutoCommit(true);
            }
        });
    }

    static long count(String where) throws Exception {
        return Check.query(conn, "SELECT count(*) AS c FROM writes_jdbc WHERE " + where).get(0).num("c");
    }

    static void batches() {
        Check.run("batch-insert", () -> batch("", 1000, 1));
        Check.run("batch-insert-rewritten", () -> batch("reWriteBatchedInserts=true", 2000, Statement.SUCCESS_NO_INFO));
        Check.run("batch-statements", () -> {
            long before = count("id BETWEEN 2500 AND 2599");
            try (Statement st = conn.createStatement()) {
                st.addBatch("INSERT INTO writes_jdbc VALUES (2500, 'stmt a')");
                st.addBatch("INSERT INTO writes_jdbc (id, note) VALUES (2501, 'stmt b'), (2502, 'stmt c')");
                int[] r = st.executeBatch();
                Check.eq("[1, 2]", Arrays.toString(r), "update counts");
            }
            Check.eq(before + 3, count("id BETWEEN 2500 AND 2599"), "rows written");
        });
    }

    static void batch(String params, int base, int wantCount) throws Exception {
        try (Connection c = Check.connect(params)) {
            long before = count("id BETWEEN " + base + " AND " + (base + 99));
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO writes_jdbc (id, note) VALUES (?, ?)")) {
                for (int i = 0; i < 10; i++) {
                    ps.setLong(1, base + i);
                    ps.setString(2, "batch " + i);
                    ps.addBatch();
                }
                int[] r;
                try {
                    r = ps.executeBatch();
                } catch (BatchUpdateException e) {
                    throw e.getNextException() != null ? e.getNextException() : e;
                }
                Check.eq(10, r.length, "update counts");
                for (int n : r) {
                    Check.eq(wantCount, n, "update count");
                }
            }
            Check.eq(before + 10, count("id BETWEEN " + base + " AND " + (base + 99)), "rows written");
            List<Check.Row> rows = Check.query(c, "SELECT note FROM writes_jdbc WHERE id = ?", (long) base + 7);
            Check.eq("batch 7", rows.get(rows.size() - 1).str("note"), "note of id " + (base + 7));
        }
    }

    static void copy() {
        Check.run("copy-in", () -> {
            long before = count("id BETWEEN 3000 AND 3999");
            long nullsBefore = count("id = 3005 AND note IS NULL");
            CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
            StringBuilder data = new StringBuilder();
            for (int i = 0; i < 100; i++) {
                data.append(3000 + i).append('\t').append(i == 5 ? "\\N" : i == 6 ? "tab\\there" : "copy " + i).append('\n');
            }
            long n = cm.copyIn("COPY writes_jdbc (id, note) FROM STDIN", new StringReader(data.toString()));
            Check.eq(100L, n, "copyIn row count");
            Check.eq(before + 100, count("id BETWEEN 3000 AND 3999"), "rows written");
            Check.eq(nullsBefore + 1, count("id = 3005 AND note IS NULL"), "\\N became NULL");
            List<Check.Row> r = Check.query(conn, "SELECT note FROM writes_jdbc WHERE id = 3006");
            Check.eq("tab\there", r.get(r.size() - 1).str("note"), "escaped tab");
        });
        Check.run("copy-in-csv", () -> {
            long before = count("id BETWEEN 4000 AND 4099");
            CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
            String data = "id,note\n4000,\"csv, quoted\"\n4001,\n4002,plain\n";
            long n = cm.copyIn("COPY writes_jdbc (id, note) FROM STDIN WITH (FORMAT csv, HEADER true)", new StringReader(data));
            Check.eq(3L, n, "copyIn row count");
            Check.eq(before + 3, count("id BETWEEN 4000 AND 4099"), "rows written");
            List<Check.Row> r = Check.query(conn, "SELECT note FROM writes_jdbc WHERE id = 4000");
            Check.eq("csv, quoted", r.get(r.size() - 1).str("note"), "quoted field");
        });
        Check.run("copy-out", () -> {
            CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
            StringWriter w = new StringWriter();
            long n = cm.copyOut("COPY (SELECT id, name, price, qty, added FROM items ORDER BY id) TO STDOUT", w);
            Check.eq(3L, n, "copyOut row count");
            Check.eq("1\tapple\t1.25\t10\t2026-01-01 10:00:00\n"
                    + "2\tpear\t2.50\t5\t2026-01-01 11:00:00\n"
                    + "3\tplum\t0.75\t20\t2026-01-02 09:30:00\n", w.toString(), "text");
        });
        Check.run("copy-out-csv", () -> {
            CopyManager cm = conn.unwrap(PGConnection.class).getCopyAPI();
            StringWriter w = new StringWriter();
            cm.copyOut("COPY (SELECT name, total FROM item_totals ORDER BY name) TO STDOUT WITH (FORMAT csv, HEADER)", w);
            Check.eq("name,total\napple,10\npear,5\nplum,20\n", w.toString(), "csv");
        });
    }

    static void errors() {
        Check.run("sqlstate-undefined-table", () -> {
            Check.sqlState("42P01", () -> Check.query(conn, "SELECT * FROM no_such_relation"));
            Check.eq(1, Check.query(conn, "SELECT 1 AS one").get(0).get("one"), "connection usable after the error");
        });
        Check.run("sqlstate-syntax-error", () -> {
            Check.sqlState("42601", () -> {
                try (Statement st = conn.createStatement()) {
                    st.executeQuery("SELEC 1");
                }
            });
        });
        Check.run("sqlstate-undefined-column", () ->
                Check.sqlState("42703", () -> Check.query(conn, "SELECT nope FROM items")));
        Check.run("sqlstate-aborted-transaction", () -> {
            conn.setAutoCommit(false);
            try {
                Check.sqlState("42P01", () -> Check.query(conn, "SELECT * FROM no_such_relation"));
                Check.sqlState("25P02", () -> Check.query(conn, "SELECT 1"));
                conn.rollback();
                Check.eq(3L, Check.query(conn, "SELECT count(*) AS c FROM items").get(0).num("c"), "after rollback");
            } finally {
                conn.rollback();
                conn.setAutoCommit(true);
            }
        });
    }

    static void transactions() {
        Check.run("transaction-commit", () -> {
            long before = count("id = 5000");
            try (Connection other = Check.connect("")) {
                conn.setAutoCommit(false);
                try (PreparedStatement ps = conn.prepareStatement("INSERT INTO writes_jdbc VALUES (?, ?)")) {
                    ps.setLong(1, 5000);
                    ps.setString(2, "committed");
                    Check.eq(1, ps.executeUpdate(), "update count");
                }
                conn.commit();
                conn.setAutoCommit(true);
                long seen = Check.query(other, "SELECT count(*) AS c FROM writes_jdbc WHERE id = 5000").get(0).num("c");
                Check.eq(before + 1, seen, "rows another session sees after commit");
            } finally {
                conn.setAutoCommit(true);
            }
        });
        Check.run("transaction-rollback", () -> {
            long before = count("id = 5001");
            conn.setAutoCommit(false);
            try {
                try (Statement st = conn.createStatement()) {
                    Check.eq(1, st.executeUpdate("INSERT INTO writes_jdbc VALUES (5001, 'rolled back')"), "update count");
                }
                conn.rollback();
            } finally {
                conn.setAutoCommit(true);
            }
            Check.eq(before, count("id = 5001"), "rows after rollback");
        });
    }

    static void serverPrepared() {
        Check.run("server-prepared-statement", () -> {
            try (Connection c = Check.connect("prepareThreshold=1")) {
                List<String> got = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement("SELECT name, qty FROM items WHERE id = ?")) {
                    for (long id : new long[] {1, 2, 3, 1, 2}) {
                        ps.setLong(1, id);
                        try (ResultSet rs = ps.executeQuery()) {
                            Check.that(rs.next(), "no row for id " + id);
                            got.add(rs.getString(1) + ":" + rs.getInt(2));
                        }
                    }
                    Check.that(ps.unwrap(PGStatement.class).isUseServerPrepare(), "statement is not server-prepared");
                }
                Check.eq(List.of("apple:10", "pear:5", "plum:20", "apple:10", "pear:5"), got, "results of 5 runs");
            }
        });
        Check.run("binary-transfer", () -> {
            // prepareThreshold=-1: named statement and binary results from the first run
            try (Connection c = Check.connect("prepareThreshold=-1");
                 PreparedStatement ps = c.prepareStatement("SELECT id, name, price, qty, added FROM items WHERE id = ?")) {
                for (int run = 0; run < 2; run++) {
                    ps.setLong(1, 3);
                    try (ResultSet rs = ps.executeQuery()) {
                        Check.that(rs.next(), "no row");
                        Check.eq(3L, rs.getLong(1), "id");
                        Check.eq("plum", rs.getString(2), "name");
                        Check.eq(0, new BigDecimal("0.75").compareTo(rs.getBigDecimal(3)), "price compared with 0.75");
                        Check.eq(20, rs.getInt(4), "qty");
                        Check.eq(Timestamp.valueOf("2026-01-02 09:30:00"), rs.getTimestamp(5), "added");
                    }
                }
            }
        });
    }
}
