import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * What DBeaver's PostgreSQL plugin sends when you open a connection and
 * expand the navigator: database, schemas, tables, columns, views and
 * materialized views, data types, sequences, functions, roles; replayed
 * through pgjdbc with the parameters DBeaver binds.
 *
 * The SQL is copied from dbeaver/dbeaver,
 * plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/
 * (model/PostgreDataSource.java, PostgreExecutionContext.java,
 * PostgreDatabase.java, PostgreSchema.java, PostgreDataTypeCache.java,
 * PostgreTableReal.java, PostgreViewBase.java, PostgreSequence.java,
 * PostgreUtils.java), with the branches taken for a PostgreSQL 12+ server
 * and DBeaver's default settings (one database, utility objects hidden,
 * "read all data types" off).
 */
public final class DBeaver {
    static Connection conn;
    static long publicOid;
    static long catalogOid;
    static long itemsOid;
    static long totalsOid;

    static final String APP = "DBeaver 24.2.3 - Main <fvsql>";

    public static void main(String[] args) throws Exception {
        Check.init();
        Check.run("dbv-connect", () -> {
            conn = Check.connect("");
            // PostgreDataSource.openConnection: pgConnection.setClientInfo(ApplicationName, ...),
            // which pgjdbc sends as SET application_name
            conn.setClientInfo("ApplicationName", APP);
            // JDBCExecutionContext: autocommit, then the isolation level it shows
            conn.setAutoCommit(true);
            int iso = conn.getTransactionIsolation();
            Check.that(iso != Connection.TRANSACTION_NONE, "getTransactionIsolation is NONE");
            Check.eq(APP, Check.query(conn, "SHOW application_name").get(0).str("application_name"), "application_name");
        });
        if (conn == null) {
            conn = Check.connect("");
        }
        session();
        database();
        schemas();
        dataTypes();
        tables();
        objects();
        conn.close();
        Check.exit();
    }

    static void session() {
        // PostgreDataSource.readDatabaseServerVersion (DatabaseMetaData) and
        // initialize: SELECT version(), then probes for pg_enum and pg_class.reltype
        // (PostgreUtils.getQueryForSystemColumnChecking)
        Check.run("dbv-server-version", () -> {
            DatabaseMetaData md = conn.getMetaData();
            Check.eq("PostgreSQL", md.getDatabaseProductName(), "getDatabaseProductName");
            Check.that(md.getDatabaseMajorVersion() >= 12, "getDatabaseMajorVersion " + md.getDatabaseMajorVersion());
            String v = Check.query(conn, "SELECT version()").get(0).str("version");
            Check.that(v != null && v.startsWith("PostgreSQL "), "version() " + Check.show(v));
        });
        Check.run("dbv-meta-object-probes", () -> {
            Check.eq(0, Check.query(conn, "SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1").size(), "pg_enum probe rows");
            Check.eq(0, Check.query(conn, "SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1").size(), "pg_class.reltype probe rows");
            Check.eq(0, Check.query(conn, "SELECT typcategory FROM pg_catalog.pg_type WHERE 1<>1 LIMIT 1").size(), "pg_type.typcategory probe rows");
        });
        // PostgreDataSource.SettingCache: standard_conforming_strings is
        // preloaded at connect; the Settings node reads them all
        Check.run("dbv-settings", () -> {
            List<Check.Row> r = Check.query(conn, "select * from pg_catalog.pg_settings where name=?", "standard_conforming_strings");
            Check.eq(1, r.size(), "rows");
            Check.eq("on", r.get(0).str("setting"), "standard_conforming_strings");
            r.get(0).need("unit");
            r.get(0).need("short_desc");
            List<Check.Row> all = Check.query(conn, "select * from pg_catalog.pg_settings");
            List<String> names = Check.column(all, "name");
            for (String want : List.of("search_path", "server_version", "standard_conforming_strings", "TimeZone")) {
                Check.that(names.contains(want), "pg_settings lacks " + want);
            }
        });
        // PostgreExecutionContext.refreshDefaults
        Check.run("dbv-context-defaults", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT current_schema(),session_user");
            Check.eq("public", r.get(0).str("current_schema"), "current_schema()");
            Check.eq(Check.user(), r.get(0).str("session_user"), "session_user");
            String sp;
            try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SHOW search_path")) {
                Check.that(rs.next(), "no row");
                sp = rs.getString(1);
            }
            List<String> parts = new ArrayList<>();
            for (String s : sp.split(",")) {
                parts.add(s.trim());
            }
            Check.that(parts.contains("public"), "search_path " + Check.show(sp) + " lacks public");
        });
        // PostgreExecutionContext.setSearchPath (choosing the default schema):
        // the schema first, then the rest of the default path, quoted
        Check.run("dbv-set-search-path", () -> {
            try (Connection c = Check.connect("")) {
                try (Statement st = c.createStatement()) {
                    st.execute("SET search_path = public,\"$user\"");
                }
                List<Check.Row> r = Check.query(c, "SELECT current_schema(),session_user");
                Check.eq("public", r.get(0).str("current_schema"), "current_schema()");
                Check.eq(3L, Check.query(c, "SELECT count(*) AS n FROM items").get(0).num("n"), "items through the path");
            }
        });
    }

    static void database() {
        // PostgreDatabase.readDatabaseInfo
        Check.run("dbv-database-info", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname=?", Check.database());
            Check.eq(1, r.size(), "rows");
            Check.Row d = r.get(0);
            Check.that(d.num("oid") > 0, "oid " + d.get("oid"));
            Check.eq(Check.database(), d.str("datname"), "datname");
            for (String col : List.of("datdba", "encoding", "datcollate", "datctype", "datistemplate", "datallowconn",
                    "datconnlimit", "dattablespace")) {
                d.need(col);
            }
            Check.eq(false, d.bool("datistemplate"), "datistemplate");
            Check.eq(true, d.bool("datallowconn"), "datallowconn");
        });
        // PostgreDataSource.prepareReadDatabaseListStatement ("show all databases")
        Check.run("dbv-database-list", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE 1 = 1"
                    + " AND datallowconn AND NOT datistemplate OR db.datname =?\nORDER BY db.datname", Check.database());
            Check.one(r, "datname", Check.database());
            Check.eq(0, Check.where(r, "datname", "template0").size(), "template0 listed");
        });
        // PostgreDatabase.getDescription
        Check.run("dbv-database-description", () -> {
            List<Check.Row> r = Check.query(conn, "select description from pg_shdescription "
                    + "join pg_database on objoid = pg_database.oid where datname = ?", Check.database());
            Check.eq(0, r.size(), "descriptions");
        });
        // PostgreDatabase.RoleCache (the Roles node; table owners resolve through it)
        Check.run("dbv-roles", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT a.oid,a.*,pd.description FROM pg_catalog.pg_roles a "
                    + "\nleft join pg_catalog.pg_shdescription pd on a.oid = pd.objoid\nORDER BY a.rolname");
            Check.Row me = Check.one(r, "rolname", Check.user());
            Check.that(me.num("oid") > 0, "role oid");
            Check.eq(true, me.bool("rolcanlogin"), "rolcanlogin");
            List<String> names = Check.column(r, "rolname");
            List<String> sorted = new ArrayList<>(names);
            sorted.sort(null);
            Check.eq(sorted, names, "ORDER BY rolname");
        });
    }

    static void schemas() {
        // PostgreDatabase.SchemaCache
        Check.run("dbv-schemas", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n\n"
                    + "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass\n"
                    + " ORDER BY nspname");
            Map<String, Check.Row> s = Check.byName(r, "nspname");
            for (String want : List.of("public", "pg_catalog", "information_schema")) {
                Check.that(s.containsKey(want), "schemas lack " + want + ": " + s.keySet());
            }
            publicOid = s.get("public").num("oid");
            catalogOid = s.get("pg_catalog").num("oid");
            Check.eq(11L, catalogOid, "pg_catalog oid");
            s.get("public").need("nspowner");
            List<String> names = Check.column(r, "nspname");
            List<String> sorted = new ArrayList<>(names);
            sorted.sort(null);
            Check.eq(sorted, names, "ORDER BY nspname");
        });
        // the same lookup for one schema (JDBCUtils.appendFilterClause: nspname=?)
        Check.run("dbv-schema-lookup", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n\n"
                    + "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass\n"
                    + "WHERE nspname=? ORDER BY nspname", "public");
            Check.eq(List.of("public"), Check.column(r, "nspname"), "schemas");
        });
    }

    // PostgreDatabase.cacheDataTypes and PostgreDataTypeCache.prepareObjectsStatement
    static final String TYPES = "SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description"
            + "\nFROM pg_catalog.pg_type t"
            + "\nLEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem "
            + "\nLEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid"
            + "\nLEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid"
            + "\nWHERE t.typname IS NOT NULL"
            + "\nAND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')";

    static void dataTypes() {
        Check.run("dbv-data-types", () -> {
            List<Check.Row> r = Check.query(conn, TYPES);
            Check.that(r.size() > 20, "only " + r.size() + " data types");
            Object[][] want = {{"int8", 20L, 8L, "N"}, {"int4", 23L, 4L, "N"}, {"text", 25L, -1L, "S"},
                {"numeric", 1700L, -1L, "N"}, {"timestamp", 1114L, 8L, "D"}, {"bool", 16L, 1L, "B"}, {"_int4", 1007L, -1L, "A"}};
            for (Object[] w : want) {
                Check.Row t = Check.one(r, "typname", w[0]);
                Check.eq(w[1], t.num("oid"), w[0] + " oid");
                Check.eq(catalogOid, t.num("typnamespace"), w[0] + " typnamespace");
                Check.eq(w[2], t.num("typlen"), w[0] + " typlen");
                Check.eq(w[3], t.str("typcategory"), w[0] + " typcategory");
                Check.eq(null, t.get("relkind"), w[0] + " relkind");
                Check.eq(null, t.get("base_type_name"), w[0] + " base_type_name");
                for (String col : List.of("typtype", "typelem", "typarray", "typinput", "typoutput", "typbasetype",
                        "typtypmod", "typndims", "typnotnull", "typdelim", "typrelid", "typbyval")) {
                    t.need(col);
                }
            }
            Check.eq(1007L, Check.one(r, "typname", "int4").num("typarray"), "int4 typarray");
            Check.eq(23L, Check.one(r, "typname", "_int4").num("typelem"), "_int4 typelem");
            // a table's row type (typrelid to relkind r) is not a data type
            Check.eq(0, Check.where(r, "typname", "items").size(), "items row type listed");
            Check.eq(0, Check.where(r, "typname", "_items").size(), "items array type listed");
        });
        Check.run("dbv-data-types-by-schema", () -> {
            List<Check.Row> cat = Check.query(conn, TYPES + "\nAND t.typnamespace=? ", catalogOid);
            Check.that(Check.column(cat, "typname").containsAll(List.of("int8", "text", "numeric", "int4")),
                    "pg_catalog's types lack int8/text/numeric/int4");
            List<Check.Row> pub = Check.query(conn, TYPES + "\nAND t.typnamespace=? ", publicOid);
            Check.eq(List.of(), Check.column(pub, "typname"), "public's data types");
        });
        // PostgreDataTypeCache: a column's type not in the cache is read by OID or name
        Check.run("dbv-data-type-lookup", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name FROM pg_catalog.pg_type t"
                    + "\nLEFT OUTER JOIN pg_class c ON c.oid=t.typrelid"
                    + "\nLEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid"
                    + "\nWHERE t.oid=? ", 1700L);
            Check.eq(List.of("numeric"), Check.column(r, "typname"), "type 1700");
            r = Check.query(conn, "SELECT t.oid,t.*,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name FROM pg_catalog.pg_type t"
                    + "\nLEFT OUTER JOIN pg_class c ON c.oid=t.typrelid"
                    + "\nLEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid"
                    + "\nWHERE t.typname=? ", "items");
            Check.eq(1, r.size(), "rows for the items row type");
            Check.eq("c", r.get(0).str("typtype"), "items typtype");
            Check.eq(publicOid, r.get(0).num("typnamespace"), "items typnamespace");
        });
        // PostgreDatabase.EnumValueCache
        Check.run("dbv-enum-values", () ->
                Check.eq(0, Check.query(conn, "SELECT * FROM pg_catalog.pg_enum").size(), "enum values"));
    }

    // PostgreSchema.TableCache.prepareLookupStatement
    static final String TABLES = "SELECT c.oid,c.*,d.description"
            + ",pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr,  pg_catalog.pg_get_partkeydef(c.oid) as partition_key "
            + "\nFROM pg_catalog.pg_class c\n"
            + "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass\n"
            + "WHERE c.relnamespace=? AND c.relkind not in ('i','I','c')";

    // PostgreSchema.TableCache.prepareChildrenStatement (supportsSequences: the pg_depend join)
    static final String COLUMNS = "SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description"
            + ",dep.objid"
            + "\nFROM pg_catalog.pg_attribute a"
            + "\nINNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)"
            + "\nLEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)"
            + "\nLEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)"
            + "\nLEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' "
            + "and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid"
            + "\nWHERE NOT a.attisdropped AND c.relkind not in ('i','I','c')";

    static List<String> userColumns(List<Check.Row> cols, String table) {
        List<String> out = new ArrayList<>();
        for (Check.Row c : Check.where(cols, "relname", table)) {
            if (c.num("attnum") > 0) {
                out.add(c.str("attname") + ":" + c.num("atttypid") + ":" + c.num("attnum"));
            }
        }
        return out;
    }

    static final List<String> ITEMS_COLUMNS = List.of("id:20:1", "name:25:2", "price:1700:3", "qty:23:4", "added:1114:5");
    static final List<String> TOTALS_COLUMNS = List.of("name:25:1", "total:20:2", "n:20:3");

    static void tables() {
        Check.run("dbv-tables", () -> {
            List<Check.Row> r = Check.query(conn, TABLES, publicOid);
            Check.Row items = Check.one(r, "relname", "items");
            Check.Row totals = Check.one(r, "relname", "item_totals");
            Check.one(r, "relname", "writes_jdbc");
            itemsOid = items.num("oid");
            totalsOid = totals.num("oid");
            Check.eq("r", items.str("relkind"), "items relkind");
            Check.eq("m", totals.str("relkind"), "item_totals relkind");
            Check.eq(publicOid, items.num("relnamespace"), "items relnamespace");
            Check.eq(false, items.bool("relispartition"), "items relispartition");
            Check.eq(null, items.get("partition_expr"), "items partition_expr");
            Check.eq(null, items.get("partition_key"), "items partition_key");
            Check.eq(null, items.get("description"), "items description");
            for (String col : List.of("relowner", "reltuples", "reltablespace", "relpersistence", "reloptions", "relhasindex",
                    "reltype", "relacl")) {
                items.need(col);
            }
            // the owner resolves to a role
            List<Check.Row> roles = Check.query(conn, "SELECT a.oid,a.*,pd.description FROM pg_catalog.pg_roles a "
                    + "\nleft join pg_catalog.pg_shdescription pd on a.oid = pd.objoid\nORDER BY a.rolname");
            Check.one(roles, "oid", items.get("relowner"));
            // no index, composite type or sequence in public
            for (Check.Row t : r) {
                Check.that(List.of("r", "m", "v", "p", "f").contains(t.str("relkind")), t.str("relname") + " relkind " + t.str("relkind"));
            }
        });
        Check.run("dbv-table-lookup", () -> {
            List<Check.Row> r = Check.query(conn, TABLES + " AND relname=?", publicOid, "item_totals");
            Check.eq(List.of("item_totals"), Check.column(r, "relname"), "tables");
            Check.eq(totalsOid, r.get(0).num("oid"), "item_totals oid");
        });
        Check.run("dbv-columns-of-schema", () -> {
            List<Check.Row> cols = Check.query(conn, COLUMNS + " AND c.relnamespace=?\nORDER BY a.attnum", publicOid);
            Check.eq(ITEMS_COLUMNS, userColumns(cols, "items"), "items columns");
            Check.eq(TOTALS_COLUMNS, userColumns(cols, "item_totals"), "item_totals columns");
        });
        Check.run("dbv-columns-of-table", () -> {
            List<Check.Row> cols = Check.query(conn, COLUMNS + " AND c.oid=?\nORDER BY a.attnum", itemsOid);
            Check.eq(ITEMS_COLUMNS, userColumns(cols, "items"), "items columns");
            for (Check.Row c : cols) {
                if (c.num("attnum") > 0) {
                    Check.eq(false, c.bool("attnotnull"), c.str("attname") + " attnotnull");
                    Check.eq(null, c.get("def_value"), c.str("attname") + " def_value");
                    Check.eq(null, c.get("objid"), c.str("attname") + " dep.objid");
                    Check.eq("", c.str("attidentity"), c.str("attname") + " attidentity");
                    Check.eq("", c.str("attgenerated"), c.str("attname") + " attgenerated");
                    for (String col : List.of("atttypmod", "attndims", "attinhcount", "attislocal", "attcollation", "attacl")) {
                        c.need(col);
                    }
                }
            }
            // every column's type is in the data type list
            List<Check.Row> types = Check.query(conn, TYPES);
            for (Check.Row c : cols) {
                if (c.num("attnum") > 0) {
                    Check.one(types, "oid", c.get("atttypid"));
                }
            }
            cols = Check.query(conn, COLUMNS + " AND c.oid=?\nORDER BY a.attnum", totalsOid);
            Check.eq(TOTALS_COLUMNS, userColumns(cols, "item_totals"), "item_totals columns");
        });
        // PostgreSchema.ConstraintCache and IndexCache for one table, and
        // PostgreTable's references lookup
        Check.run("dbv-constraints-indexes", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description"
                    + ", case when c.contype='c' then \"substring\"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy"
                    + "\nFROM pg_catalog.pg_constraint c"
                    + "\nINNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid"
                    + "\nLEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid"
                    + "\nLEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass"
                    + "\nWHERE c.conrelid=?\nORDER BY c.oid", itemsOid);
            Check.eq(0, r.size(), "constraints of items");
            r = Check.query(conn, "SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,dsc.description"
                    + ",pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr"
                    + ",pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr"
                    + ",pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size"
                    + ",pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans"
                    + "\nFROM pg_catalog.pg_index i"
                    + "\nINNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid"
                    + "\nINNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid"
                    + "\nLEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid"
                    + "\nWHERE  i.indrelid=? ORDER BY c.relname", itemsOid);
            Check.eq(0, r.size(), "indexes of items");
            r = Check.query(conn, "SELECT DISTINCT connamespace FROM pg_catalog.pg_constraint WHERE confrelid=?", itemsOid);
            Check.eq(0, r.size(), "references to items");
        });
        // PostgreTableReal.TriggerCache and RuleCache (the table's Triggers and Rules nodes)
        Check.run("dbv-triggers-rules", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT x.oid,x.*,p.pronamespace as func_schema_id,d.description"
                    + "\nFROM pg_catalog.pg_trigger x"
                    + "\nLEFT OUTER JOIN pg_catalog.pg_proc p ON p.oid=x.tgfoid "
                    + "\nLEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=x.oid AND d.objsubid=0 "
                    + "\nWHERE x.tgrelid = ? AND NOT x.tgisinternal", itemsOid);
            Check.eq(0, r.size(), "triggers of items");
            for (long oid : new long[] {itemsOid, totalsOid}) {
                r = Check.query(conn, "SELECT r.oid,r.*, pg_get_ruledef(r.oid) AS definition\n"
                        + "FROM pg_rewrite r\n"
                        + "WHERE r.ev_class=" + oid + " AND r.rulename <> '_RETURN'::name");
                Check.eq(0, r.size(), "rules of " + oid);
            }
        });
        // PostgreSchema's inheritance read and collectObjectStatistics,
        // PostgreTableReal.readTableStatistics (the table's Statistics)
        Check.run("dbv-statistics", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT i.inhrelid relid, pc.relnamespace parent_ns, pc.oid parent_oid, i.inhseqno\n"
                    + "FROM pg_catalog.pg_inherits i, pg_class rc, pg_class pc\n"
                    + "WHERE rc.oid=i.inhrelid AND rc.relnamespace=? AND pc.oid=i.inhparent", publicOid);
            Check.eq(0, r.size(), "inheritance rows");
            r = Check.query(conn, "select c.oid,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,"
                    + "pg_catalog.pg_relation_size(c.oid) as rel_size\nFROM pg_class c\nWHERE c.relnamespace=?", publicOid);
            Check.Row items = Check.one(r, "oid", itemsOid);
            Check.that(items.num("total_rel_size") >= items.num("rel_size") && items.num("rel_size") >= 0,
                    "items sizes " + items);
            try (PreparedStatement ps = conn.prepareStatement("select pg_catalog.pg_total_relation_size(?) as total_rel_size,"
                    + "pg_catalog.pg_relation_size(?) as rel_size")) {
                ps.setLong(1, itemsOid);
                ps.setLong(2, itemsOid);
                List<Check.Row> one = Check.rows(ps.executeQuery());
                Check.eq(1, one.size(), "rows");
                Check.that(one.get(0).num("total_rel_size") >= 0, "total_rel_size");
            }
        });
    }

    static void objects() {
        // PostgreViewBase.readDefinition (a materialized view's Source tab)
        Check.run("dbv-matview-definition", () -> {
            String def = Check.query(conn, "SELECT pg_get_viewdef(" + totalsOid + ", true)").get(0).str("pg_get_viewdef");
            Check.that(def != null, "no definition");
            String d = def.toLowerCase();
            Check.that(d.contains("sum(") && d.contains("items") && d.contains("group by"), "definition " + Check.show(def));
        });
        // sequences are relkind S in the table list; PostgreSequence reads one from pg_sequences
        Check.run("dbv-sequences", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT * from pg_catalog.pg_sequences WHERE schemaname=? AND sequencename=?",
                    "public", "items_id_seq");
            Check.eq(0, r.size(), "sequences");
            Check.eq(0, Check.where(Check.query(conn, TABLES, publicOid), "relkind", "S").size(), "sequences in public");
        });
        // PostgreSchema.ProceduresCache (the Functions node)
        Check.run("dbv-functions", () -> {
            String sql = "SELECT p.oid as poid,p.*,pg_catalog.pg_get_expr(p.proargdefaults, 0) as arg_defaults,d.description\n"
                    + "FROM pg_catalog.pg_proc p\n"
                    + "LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=p.oid and d.classoid='pg_proc'::regclass  AND d.objsubid = 0"
                    + "\nWHERE p.pronamespace=?"
                    + "\nORDER BY p.proname";
            List<Check.Row> cat = Check.query(conn, sql, catalogOid);
            List<String> names = Check.column(cat, "proname");
            for (String want : List.of("lower", "now", "count", "sum", "generate_series")) {
                Check.that(names.contains(want), "pg_catalog functions lack " + want);
            }
            Check.Row lower = Check.where(cat, "proname", "lower").get(0);
            Check.eq(25L, lower.num("prorettype"), "lower prorettype");
            for (String col : List.of("prokind", "proargtypes", "proargnames", "proretset", "prolang", "provolatile")) {
                lower.need(col);
            }
            Check.eq(0, Check.query(conn, sql, publicOid).size(), "functions in public");
        });
        // PostgreSchema.AggregateCache (the Aggregate functions node)
        Check.run("dbv-aggregates", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT p.oid AS proc_oid,p.proname AS proc_name,a.*\n"
                    + "FROM pg_catalog.pg_aggregate a,pg_catalog.pg_proc p\n"
                    + "WHERE p.oid=a.aggfnoid AND p.pronamespace=?\n"
                    + "ORDER BY p.proname", catalogOid);
            List<String> names = Check.column(r, "proc_name");
            Check.that(names.contains("sum") && names.contains("count") && !names.contains("lower"), "aggregates " + names.size());
        });
        // PostgreDatabase.ExtensionCache (the Extensions node)
        Check.run("dbv-extensions", () -> {
            List<Check.Row> r = Check.query(conn, "SELECT \n e.oid,\n cfg.tbls,\n  n.nspname as schema_name,\n e.* \n"
                    + "FROM \n pg_catalog.pg_extension e \n join pg_namespace n on n.oid =e.extnamespace\n left join  (\n"
                    + "         select\n            ARRAY_AGG(ns.nspname || '.' ||  cls.relname) tbls, oid_ext\n"
                    + "          from\n            (\n            select\n"
                    + "                unnest(e1.extconfig) oid , e1.oid oid_ext\n            from\n"
                    + "                pg_catalog.pg_extension e1 ) c \n                join    pg_class cls on cls.oid = c.oid \n"
                    + "                join pg_namespace ns on ns.oid = cls.relnamespace\n            group by oid_ext        \n"
                    + "         ) cfg on cfg.oid_ext = e.oid\nORDER BY e.oid");
            // PostgreSQL always has plpgsql; fvsql may have none: assert the shape only
            for (Check.Row e : r) {
                Check.that(e.str("extname") != null && e.str("schema_name") != null, "extension row " + e);
            }
        });
    }
}
