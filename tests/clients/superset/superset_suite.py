"""Apache Superset against fvsql (or PostgreSQL): the client suite's Superset program.

This runs Superset's own code, not an imitation of it: the program builds a
real Superset app (superset.app.create_app) with a throw-away metadata
database (in-memory SQLite, its tables made by create_all rather than by
`superset db upgrade`, which is much slower), makes its permissions and an
admin (what `superset init` and `superset fab create-admin` do), logs in
through /api/v1/security/login and then calls, through Flask's test client,
the same REST endpoints that Superset's web UI calls when a person adds the
database, adds `items` as a dataset, builds charts on it and runs SQL Lab:

  POST /api/v1/database/test_connection/   TestConnectionDatabaseCommand: ping
  POST /api/v1/database/                   CreateDatabaseCommand: test + schema perms
  GET  /api/v1/database/<id>/catalogs/     PostgresEngineSpec.get_catalog_names
  GET  /api/v1/database/<id>/schemas/      inspector.get_schema_names
  GET  /api/v1/database/<id>/tables/       TablesDatabaseCommand (tables, views)
  GET  /api/v1/database/<id>/table_metadata/  get_columns, get_pk_constraint,
                                           get_foreign_keys, get_indexes, select_star
  POST /api/v1/dataset/                    CreateDatasetCommand: SqlaTable.fetch_metadata
  PUT  /api/v1/dataset/<id>/refresh        "Sync columns from source"
  POST /api/v1/chart/data                  the SQL a chart generates (SqlaTable.query)
  GET  /api/v1/datasource/table/<id>/column/<col>/values/  a filter's values
  POST /api/v1/sqllab/execute/             SQL Lab, synchronously

Run: <venv>/bin/python tests/clients/superset/superset_suite.py with the PG*
variables and FVSQL_CLIENT_TARGET set (see ../python/check.py, whose ok/FAIL
protocol this program uses). The venv has this directory's requirements.txt.
"""

import contextlib
import datetime
import functools
import json
import os
import shutil
import sys
import tempfile

# check.py lives in ../python (another suite's directory): leave no __pycache__ there.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import check  # noqa: E402
from check import eq, expect  # noqa: E402

# Superset prints to stdout (e.g. "Loaded your LOCAL configuration at ..."),
# and stdout is only for the ok/FAIL lines: everything Superset runs, runs
# with stdout sent to stderr.
quiet = functools.partial(contextlib.redirect_stdout, sys.stderr)

# items as the fixture has it: (id, name, price, qty, added).
ITEMS = [
    (1, "apple", 1.25, 10, datetime.datetime(2026, 1, 1, 10, 0)),
    (2, "pear", 2.50, 5, datetime.datetime(2026, 1, 1, 11, 0)),
    (3, "plum", 0.75, 20, datetime.datetime(2026, 1, 2, 9, 30)),
]
# items' columns as Superset's table metadata (the inspector) names their types...
ITEMS_INSPECTED = [("id", "BIGINT"), ("name", "TEXT"), ("price", "NUMERIC"), ("qty", "INTEGER"),
                   ("added", "TIMESTAMP")]
# ... and as the dataset stores them (str() of the SQLAlchemy type, compiled for PostgreSQL).
ITEMS_DATASET = {"id": "BIGINT", "name": "TEXT", "price": "NUMERIC", "qty": "INTEGER",
                 "added": "TIMESTAMP WITHOUT TIME ZONE"}

ADMIN, ADMIN_PASSWORD = "admin", "admin-password"


def sqlalchemy_uri(**overrides):
    """The target's SQLAlchemy URI as a person would paste it into Superset."""
    u = check.url("postgresql+psycopg2")
    if overrides:
        u = u.set(**overrides)
    return u.render_as_string(hide_password=False)


def write_config(home):
    path = os.path.join(home, "superset_config.py")
    with open(path, "w") as f:
        f.write(
            "from datetime import timedelta\n"
            "SECRET_KEY = %r\n"
            # In-memory SQLite: Flask-SQLAlchemy gives it a single shared
            # connection, and it is several seconds faster than a file here.
            "SQLALCHEMY_DATABASE_URI = 'sqlite://'\n"
            "WTF_CSRF_ENABLED = False\n"
            "TEST_DATABASE_CONNECTION_TIMEOUT = timedelta(seconds=%d)\n"
            "SQLLAB_TIMEOUT = 20\n"
            "SUPERSET_WEBSERVER_TIMEOUT = 20\n"
            "LOG_LEVEL = 'WARNING'\n"
            % (os.urandom(24).hex(), check.CONNECT_TIMEOUT))
    return path


class Superset:
    """A Superset app with an admin logged in; get/post/put return (status, json)."""

    def __init__(self):
        self.home = tempfile.mkdtemp(prefix="superset-suite-")
        os.environ["SUPERSET_HOME"] = self.home
        os.environ["SUPERSET_CONFIG_PATH"] = write_config(self.home)
        with quiet():
            from superset.app import create_app
            self.app = create_app()
            with self.app.app_context():
                from flask_appbuilder import Model

                import superset.connectors.sqla.models  # noqa: F401 - registers the models' tables
                import superset.models.core  # noqa: F401
                import superset.models.dashboard  # noqa: F401
                import superset.models.slice  # noqa: F401
                import superset.models.sql_lab  # noqa: F401
                from superset.extensions import appbuilder, db, security_manager as sm
                Model.metadata.create_all(db.engine)
                appbuilder.add_permissions(update_perms=True)  # `superset init`
                sm.sync_role_definitions()
                sm.add_user(ADMIN, "Ad", "Min", "admin@example.com", sm.find_role("Admin"), password=ADMIN_PASSWORD)
                db.session.commit()
            self.client = self.app.test_client()
            status, body = self.post("/api/v1/security/login", {"username": ADMIN, "password": ADMIN_PASSWORD,
                                                                "provider": "db", "refresh": False}, auth=False)
        eq(status, 200, "login status")
        self.headers = {"Authorization": "Bearer " + body["access_token"]}

    def _call(self, method, path, payload=None, auth=True):
        with quiet():
            r = getattr(self.client, method)(path, json=payload, headers=self.headers if auth else None)
        try:
            body = r.get_json()
        except Exception:  # noqa: BLE001 - not JSON: keep the text for the message
            body = r.get_data(as_text=True)
        return r.status_code, body

    def get(self, path):
        return self._call("get", path)

    def post(self, path, payload, auth=True):
        return self._call("post", path, payload, auth)

    def put(self, path, payload=None):
        return self._call("put", path, payload)

    def close(self):
        shutil.rmtree(self.home, ignore_errors=True)


def ok_status(status, body, want, what):
    if status != want:
        raise AssertionError("%s: HTTP %s, want %s: %s" % (what, status, want, json.dumps(body)[:400]))


def error_types(body):
    """The SupersetErrorType names in an error response."""
    errs = body.get("errors") or [] if isinstance(body, dict) else []
    return [e.get("error_type") for e in errs]


def rison_q(**kw):
    """A rison object of plain identifiers, as Superset's UI puts in ?q=."""
    return "(" + ",".join("%s:%s" % (k, v) for k, v in kw.items()) + ")"


ss = None
state = {}  # ids made by earlier checks


def main():
    global ss
    try:
        ss = Superset()
    except BaseException as e:  # noqa: BLE001 - no app, no check can run
        import traceback
        traceback.print_exc()
        check.fail("superset_app", "could not start Superset: %s" % check._reason(e))
        check.done()

    @check.check("test_connection")
    def _():
        # What the "Test connection" button does: TestConnectionDatabaseCommand,
        # which connects through PostgresEngineSpec and pings (SELECT 1).
        status, body = ss.post("/api/v1/database/test_connection/",
                               {"sqlalchemy_uri": sqlalchemy_uri(), "database_name": "target"})
        ok_status(status, body, 200, "test_connection")
        eq(body, {"message": "OK"}, "response")

    @check.check("test_connection_bad_password")
    def _():
        # Superset maps the server's error text to a SupersetErrorType with the
        # engine spec's regular expressions: this one needs PostgreSQL's
        # 'password authentication failed for user "client"'.
        status, body = ss.post("/api/v1/database/test_connection/",
                               {"sqlalchemy_uri": sqlalchemy_uri(password="wrong-password")})
        expect(status in (400, 422), "HTTP %s, want 400 or 422: %s" % (status, json.dumps(body)[:300]))
        eq(error_types(body), ["CONNECTION_INVALID_PASSWORD_ERROR"], "error types")

    @check.check("test_connection_unknown_database")
    def _():
        # Needs 'database "no_such_db" does not exist' (SQLSTATE 3D000).
        status, body = ss.post("/api/v1/database/test_connection/",
                               {"sqlalchemy_uri": sqlalchemy_uri(database="no_such_db")})
        expect(status in (400, 422), "HTTP %s, want 400 or 422: %s" % (status, json.dumps(body)[:300]))
        eq(error_types(body), ["CONNECTION_UNKNOWN_DATABASE_ERROR"], "error types")

    @check.check("create_database")
    def _():
        # CreateDatabaseCommand: tests the connection again, saves the database,
        # then lists the default catalog's schemas to make a schema_access
        # permission for each (add_permissions).
        status, body = ss.post("/api/v1/database/", {"sqlalchemy_uri": sqlalchemy_uri(), "database_name": "target"})
        ok_status(status, body, 201, "create database")
        state["db"] = body["id"]
        eq(body["result"]["driver"], "psycopg2", "driver")
        eq(body["result"]["parameters"]["database"], check.DBNAME, "parameters.database")
        with quiet(), ss.app.app_context():
            from superset.extensions import security_manager as sm
            perm = "[target].[%s].[public]" % check.DBNAME
            expect(sm.find_permission_view_menu("schema_access", perm) is not None,
                   "no schema_access permission %s: add_permissions did not see schema public" % perm)

    def db_id():
        expect("db" in state, "create_database failed")
        return state["db"]

    @check.check("catalogs")
    def _():
        # PostgresEngineSpec.get_catalog_names: SELECT datname FROM pg_database WHERE datistemplate = false
        status, body = ss.get("/api/v1/database/%d/catalogs/" % db_id())
        ok_status(status, body, 200, "catalogs")
        expect(check.DBNAME in body["result"], "catalogs %r lack %r" % (body["result"], check.DBNAME))

    @check.check("schemas")
    def _():
        status, body = ss.get("/api/v1/database/%d/schemas/?q=(force:!t)" % db_id())
        ok_status(status, body, 200, "schemas")
        expect("public" in body["result"], "schemas %r lack public" % (body["result"],))
        expect("pg_catalog" not in body["result"], "schemas %r list pg_catalog (the dialect hides it)" % (body["result"],))

    @check.check("tables")
    def _():
        # The dataset picker's table list: TablesDatabaseCommand, i.e. the
        # dialect's get_table_names + get_foreign_table_names, get_view_names.
        status, body = ss.get("/api/v1/database/%d/tables/?q=%s" % (db_id(), rison_q(schema_name="public", force="!t")))
        ok_status(status, body, 200, "tables")
        kinds = {t["value"]: t["type"] for t in body["result"]}
        eq(body["count"], len(body["result"]), "count")
        for name in ("items", "writes_psycopg", "writes_sqlalchemy"):
            eq(kinds.get(name), "table", "type of %s" % name)
        expect(kinds.get("item_totals") in ("view", "materialized_view"),
               "item_totals is %r, want a view or materialized_view" % kinds.get("item_totals"))

    @check.check("table_metadata")
    def _():
        # What SQL Lab's table preview and the dataset editor fetch:
        # superset.databases.utils.get_table_metadata.
        status, body = ss.get("/api/v1/database/%d/table_metadata/?name=items&schema=public" % db_id())
        ok_status(status, body, 200, "table_metadata")
        eq([(c["name"], c["type"]) for c in body["columns"]], ITEMS_INSPECTED, "columns")
        eq(body["name"], "items", "name")
        eq(body["indexes"], [], "indexes")
        eq(body["foreignKeys"], [], "foreign keys")
        expect(not body["primaryKey"].get("constrained_columns"), "primary key %r" % body["primaryKey"])
        state["select_star"] = body["selectStar"]
        eq(" ".join(body["selectStar"].split()), "SELECT id, name, price, qty, added FROM public.items LIMIT 100",
           "selectStar")

    def dataset_columns(ds_id):
        status, body = ss.get("/api/v1/dataset/%d" % ds_id)
        ok_status(status, body, 200, "get dataset")
        return body["result"]

    @check.check("dataset_items")
    def _():
        # Adding items as a dataset: CreateDatasetCommand checks that the table
        # exists (has_table) and syncs its columns (SqlaTable.fetch_metadata,
        # get_physical_table_metadata: the inspector's get_columns).
        status, body = ss.post("/api/v1/dataset/", {"database": db_id(), "schema": "public", "table_name": "items"})
        ok_status(status, body, 201, "create dataset")
        state["items"] = body["id"]
        ds = dataset_columns(body["id"])
        eq({c["column_name"]: c["type"] for c in ds["columns"]}, ITEMS_DATASET, "column types")
        eq(sorted(c["column_name"] for c in ds["columns"] if c["is_dttm"]), ["added"], "temporal columns")
        eq(ds["main_dttm_col"], "added", "main_dttm_col")
        eq({c["column_name"]: c["type_generic"] for c in ds["columns"]},
           {"id": 0, "name": 1, "price": 0, "qty": 0, "added": 2}, "generic types (0 numeric, 1 string, 2 temporal)")
        eq([(m["metric_name"], m["expression"]) for m in ds["metrics"]], [("count", "COUNT(*)")], "metrics")

    @check.check("dataset_item_totals")
    def _():
        status, body = ss.post("/api/v1/dataset/", {"database": db_id(), "schema": "public", "table_name": "item_totals"})
        ok_status(status, body, 201, "create dataset")
        ds = dataset_columns(body["id"])
        eq({c["column_name"]: c["type"] for c in ds["columns"]}, {"name": "TEXT", "total": "BIGINT", "n": "BIGINT"},
           "column types")

    def items_id():
        expect("items" in state, "dataset_items failed")
        return state["items"]

    @check.check("dataset_refresh")
    def _():
        # The dataset editor's "Sync columns from source" (RefreshDatasetCommand).
        status, body = ss.put("/api/v1/dataset/%d/refresh" % items_id())
        ok_status(status, body, 200, "refresh")
        ds = dataset_columns(items_id())
        eq({c["column_name"]: c["type"] for c in ds["columns"]}, ITEMS_DATASET, "column types after refresh")

    def chart_data(query, result_type="full"):
        status, body = ss.post("/api/v1/chart/data", {
            "datasource": {"id": items_id(), "type": "table"},
            "force": True,
            "queries": [query],
            "result_format": "json",
            "result_type": result_type,
        })
        ok_status(status, body, 200, "chart data")
        res = body["result"][0]
        expect(not res.get("error"), "chart error: %s" % res.get("error"))
        return res

    def sum_qty():
        return {"expressionType": "SIMPLE", "column": {"column_name": "qty"}, "aggregate": "SUM", "label": "SUM(qty)"}

    @check.check("chart_bar_sum_by_name")
    def _():
        # A bar chart: SUM(qty) by name, sorted by the metric, row limit 10.
        res = chart_data({"columns": ["name"], "metrics": [sum_qty()], "orderby": [[sum_qty(), False]],
                          "row_limit": 10, "filters": [], "extras": {"having": "", "where": ""}})
        sql = " ".join(res["query"].split())
        expect("GROUP BY name" in sql and "LIMIT 10" in sql, "unexpected SQL: %s" % sql)
        eq(res["colnames"], ["name", "SUM(qty)"], "colnames")
        eq([(r["name"], r["SUM(qty)"]) for r in res["data"]], [("plum", 20), ("apple", 10), ("pear", 5)], "rows")
        eq(res["rowcount"], 3, "rowcount")

    @check.check("chart_timeseries_day")
    def _():
        # A time-series chart: COUNT(*) per day of added (DATE_TRUNC('day', added))
        # over a time range, which Superset writes as
        # added >= TO_TIMESTAMP('2026-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US').
        res = chart_data({
            "columns": [{"timeGrain": "P1D", "columnType": "BASE_AXIS", "sqlExpression": "added",
                         "label": "added", "expressionType": "SQL"}],
            "metrics": ["count"],
            "orderby": [["count", False]],
            "filters": [{"col": "added", "op": "TEMPORAL_RANGE", "val": "2026-01-01 : 2026-01-03"}],
            "row_limit": 1000, "extras": {"having": "", "where": ""},
        })
        sql = " ".join(res["query"].split())
        expect("DATE_TRUNC('day', added)" in sql and "TO_TIMESTAMP(" in sql, "unexpected SQL: %s" % sql)
        day = lambda y, m, d: int(datetime.datetime(y, m, d, tzinfo=datetime.timezone.utc).timestamp() * 1000)  # noqa: E731
        eq(sorted((r["added"], r["count"]) for r in res["data"]), [(day(2026, 1, 1), 2), (day(2026, 1, 2), 1)], "rows")

    @check.check("chart_big_number_filtered")
    def _():
        # A big number with a SQL metric and the filters a person adds:
        # name IN ('apple', 'plum') AND qty >= 10, plus a custom WHERE.
        metric = {"expressionType": "SQL", "sqlExpression": "SUM(price * qty)", "label": "revenue"}
        res = chart_data({
            "columns": [], "metrics": [metric, "count"],
            "filters": [{"col": "name", "op": "IN", "val": ["apple", "plum"]}, {"col": "qty", "op": ">=", "val": 10}],
            "extras": {"having": "", "where": "price < 2"}, "row_limit": 10,
        })
        eq(len(res["data"]), 1, "rows")
        row = res["data"][0]
        eq((float(row["revenue"]), row["count"]), (27.5, 2), "revenue, count")  # 1.25*10 + 0.75*20

    @check.check("chart_samples")
    def _():
        # The explore view's "Samples" pane: SELECT * ... LIMIT.
        res = chart_data({"columns": [], "metrics": [], "row_limit": 100, "filters": [], "extras": {}},
                         result_type="samples")
        rows = sorted(res["data"], key=lambda r: r["id"])
        eq([(r["id"], r["name"], float(r["price"]), r["qty"]) for r in rows], [i[:4] for i in ITEMS], "rows")
        eq(rows[0]["added"], int(datetime.datetime(2026, 1, 1, 10, 0, tzinfo=datetime.timezone.utc).timestamp() * 1000),
           "added of id 1 (epoch ms)")

    @check.check("filter_values")
    def _():
        # A native filter's value list: SELECT DISTINCT name FROM ... LIMIT.
        status, body = ss.get("/api/v1/datasource/table/%d/column/name/values/" % items_id())
        ok_status(status, body, 200, "values")
        eq(sorted(body["result"]), ["apple", "pear", "plum"], "values")

    def sqllab(sql, schema="public"):
        return ss.post("/api/v1/sqllab/execute/", {
            "database_id": db_id(), "sql": sql, "schema": schema, "runAsync": False,
            "client_id": os.urandom(5).hex(), "queryLimit": 1000,
        })

    @check.check("sqllab_select_star")
    def _():
        # SQL Lab runs the table preview's SELECT (with the schema chosen in
        # its dropdown, which PostgresEngineSpec turns into
        # `set search_path = "public"` before the query).
        sql = state.get("select_star") or "SELECT id, name, price, qty, added FROM public.items LIMIT 100"
        status, body = sqllab(sql)
        ok_status(status, body, 200, "execute")
        eq(body.get("status"), "success", "status")
        eq([c["column_name"] for c in body["columns"]], ["id", "name", "price", "qty", "added"], "columns")
        rows = sorted(body["data"], key=lambda r: r["id"])
        eq([(r["id"], r["name"], r["qty"]) for r in rows], [(i[0], i[1], i[3]) for i in ITEMS], "rows")

    @check.check("sqllab_unqualified_name")
    def _():
        # An unqualified table name resolves through the search_path SQL Lab set.
        status, body = sqllab("SELECT name, total FROM item_totals ORDER BY name")
        ok_status(status, body, 200, "execute")
        eq([(r["name"], r["total"]) for r in body["data"]], [("apple", 10), ("pear", 5), ("plum", 20)], "rows")

    @check.check("sqllab_error_column")
    def _():
        # The engine spec's COLUMN_DOES_NOT_EXIST_REGEX needs PostgreSQL's text
        # 'column "nosuch" does not exist' followed by libpq's 'LINE 1:' (from
        # the error's position field).
        status, body = sqllab("SELECT nosuch FROM items")
        expect(status >= 400, "HTTP %s: %s" % (status, json.dumps(body)[:300]))
        eq(error_types(body), ["COLUMN_DOES_NOT_EXIST_ERROR"], "error types")

    @check.check("sqllab_error_syntax")
    def _():
        # SYNTAX_ERROR_REGEX: 'syntax error at or near ")"'. Superset parses and
        # rewrites SQL Lab's SQL (sqlglot) before sending it: most typos it
        # rejects itself (INVALID_SQL_ERROR) or mends (a trailing comma); an
        # empty IN list (as a template leaves it) goes through to the server.
        status, body = sqllab("SELECT name FROM items WHERE qty IN ()")
        expect(status >= 400, "HTTP %s: %s" % (status, json.dumps(body)[:300]))
        eq(error_types(body), ["SYNTAX_ERROR"], "error types")
        msg = body["errors"][0]["message"]
        expect('near ")"' in msg, "message %r does not name the token )" % msg)

    ss.close()
    check.done()


if __name__ == "__main__":
    main()
