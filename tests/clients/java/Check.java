import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TimeZone;

/**
 * The suite's protocol for the JVM programs (Pgjdbc, Metabase, DBeaver): one
 * line per check on stdout, "ok NAME" or "FAIL NAME: reason"; a check that
 * throws is a FAIL with the exception and the program goes on. Exit status 0
 * iff every check passed. Diagnostics go to stderr.
 *
 * The connection comes from libpq's environment variables (PGHOST, PGPORT,
 * PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE); FVSQL_CLIENT_TARGET says
 * which server it is (fvsql or postgres).
 */
final class Check {
    private static int failed;
    private static int passed;

    private Check() {}

    interface Body {
        void run() throws Exception;
    }

    /** Runs one check and prints its line. */
    static void run(String name, Body body) {
        try {
            body.run();
            passed++;
            System.out.println("ok " + name);
        } catch (Throwable t) {
            failed++;
            System.out.println("FAIL " + name + ": " + oneLine(t));
            System.err.println("--- " + name);
            t.printStackTrace(System.err);
        }
        System.out.flush();
    }

    /** Exits with 0 iff every check passed. */
    static void exit() {
        System.err.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static String oneLine(Throwable t) {
        StringBuilder b = new StringBuilder();
        if (!(t instanceof AssertionError)) {
            b.append(t.getClass().getSimpleName()).append(": ");
        }
        b.append(t.getMessage());
        if (t instanceof SQLException) {
            b.append(" [SQLSTATE ").append(((SQLException) t).getSQLState()).append("]");
        }
        return b.toString().replaceAll("\\s+", " ").trim();
    }

    // ---- assertions ----

    static void that(boolean cond, String message) {
        if (!cond) {
            throw new AssertionError(message);
        }
    }

    static void eq(Object want, Object got, String what) {
        if (!Objects.equals(want, got)) {
            throw new AssertionError(what + ": want " + show(want) + ", got " + show(got));
        }
    }

    static String show(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String) {
            return "\"" + v + "\"";
        }
        return v + " (" + v.getClass().getSimpleName() + ")";
    }

    /** Runs body, which must throw an SQLException with the given SQLSTATE. */
    static void sqlState(String want, Body body) throws Exception {
        try {
            body.run();
        } catch (SQLException e) {
            eq(want, e.getSQLState(), "SQLSTATE (" + e.getMessage() + ")");
            return;
        }
        throw new AssertionError("no error, want SQLSTATE " + want);
    }

    // ---- environment and connections ----

    static String env(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    static String target() {
        return env("FVSQL_CLIENT_TARGET", "fvsql");
    }

    static String user() {
        return env("PGUSER", "client");
    }

    static String database() {
        return env("PGDATABASE", "fvsql");
    }

    /** The JDBC URL of the target with extra URL parameters ("a=b&c=d"). */
    static String url(String extra) {
        String u = "jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/" + database()
                + "?sslmode=" + env("PGSSLMODE", "require")
                + "&connectTimeout=10&loginTimeout=15&socketTimeout=60&cancelSignalTimeout=5";
        return extra == null || extra.isEmpty() ? u : u + "&" + extra;
    }

    static Properties props(String password) {
        Properties p = new Properties();
        p.setProperty("user", user());
        p.setProperty("password", password);
        return p;
    }

    static Connection connect(String extra) throws SQLException {
        return connect(extra, new Properties());
    }

    static Connection connect(String extra, Properties more) throws SQLException {
        Properties p = props(env("PGPASSWORD", ""));
        p.putAll(more);
        return DriverManager.getConnection(url(extra), p);
    }

    /** Makes the JVM's zone UTC, so that timestamps the driver binds have no offset surprises. */
    static void init() {
        TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
        DriverManager.setLoginTimeout(15);
    }

    // ---- result sets ----

    /** A row as column label (lower case) to value. */
    static final class Row extends LinkedHashMap<String, Object> {
        String str(String col) {
            need(col);
            Object v = get(col);
            return v == null ? null : v.toString();
        }

        long num(String col) {
            need(col);
            Object v = get(col);
            if (!(v instanceof Number)) {
                throw new AssertionError("column " + col + " is " + show(v) + ", not a number");
            }
            return ((Number) v).longValue();
        }

        Boolean bool(String col) {
            need(col);
            Object v = get(col);
            if (v != null && !(v instanceof Boolean)) {
                throw new AssertionError("column " + col + " is " + show(v) + ", not a boolean");
            }
            return (Boolean) v;
        }

        void need(String col) {
            if (!containsKey(col)) {
                throw new AssertionError("no column " + col + " in " + keySet());
            }
        }
    }

    static List<Row> rows(ResultSet rs) throws SQLException {
        try (rs) {
            ResultSetMetaData md = rs.getMetaData();
            List<Row> out = new ArrayList<>();
            while (rs.next()) {
                Row r = new Row();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    r.put(md.getColumnLabel(i).toLowerCase(), rs.getObject(i));
                }
                out.add(r);
            }
            return out;
        }
    }

    /** Runs a prepared query with parameters (set with setObject, as clients do) and returns its rows. */
    static List<Row> query(Connection c, String sql, Object... params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setQueryTimeout(30);
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            return rows(ps.executeQuery());
        }
    }

    /** The rows whose column col equals value. */
    static List<Row> where(List<Row> rows, String col, Object value) {
        List<Row> out = new ArrayList<>();
        for (Row r : rows) {
            if (Objects.equals(value, r.get(col))) {
                out.add(r);
            }
        }
        return out;
    }

    /** The one row whose column col equals value. */
    static Row one(List<Row> rows, String col, Object value) {
        List<Row> w = where(rows, col, value);
        if (w.size() != 1) {
            throw new AssertionError(w.size() + " rows with " + col + " = " + show(value) + " (want 1) among " + rows.size());
        }
        return w.get(0);
    }

    static List<String> column(List<Row> rows, String col) {
        List<String> out = new ArrayList<>();
        for (Row r : rows) {
            out.add(r.str(col));
        }
        return out;
    }

    static Map<String, Row> byName(List<Row> rows, String col) {
        Map<String, Row> m = new LinkedHashMap<>();
        for (Row r : rows) {
            m.put(r.str(col), r);
        }
        return m;
    }
}
