"""psycopg 3 against fvsql (or PostgreSQL): the client suite's psycopg program.

Run: <venv>/bin/python tests/clients/python/psycopg3.py with the PG*
variables and FVSQL_CLIENT_TARGET set (see check.py).
"""

import datetime
import random
from decimal import Decimal

import psycopg
from psycopg import errors, sql
from psycopg.types import TypeInfo

import check
from check import eq, expect

ITEMS, ITEMS_SQL = check.ITEMS, check.ITEMS_SQL
# PostgreSQL's type OIDs of items' columns: int8, text, numeric, int4, timestamp.
ITEMS_OIDS = [20, 25, 1700, 23, 1114]

# This run's rows in writes_psycopg have ids from BASE on, so that a second
# run against the same server counts only its own rows.
BASE = random.randrange(1, 1 << 40) * 1000


def connect(**kw):
    return psycopg.connect(check.conninfo(), **kw)


def own_rows(conn, lo, hi):
    """This run's rows of writes_psycopg with ids in [BASE+lo, BASE+hi)."""
    return conn.execute("SELECT id, note FROM writes_psycopg WHERE id >= %s AND id < %s ORDER BY id",
                        (BASE + lo, BASE + hi)).fetchall()


conn = None


@check.check("connect_tls")
def _():
    global conn
    conn = connect(autocommit=True)
    eq(conn.info.status, psycopg.pq.ConnStatus.OK, "status")
    eq(conn.pgconn.ssl_in_use, True, "pgconn.ssl_in_use")
    eq(conn.info.dbname, check.DBNAME, "dbname")
    eq(conn.info.user, check.USER, "user")


if conn is None:
    check.done()


@check.check("server_parameters")
def _():
    # What psycopg reads from ParameterStatus: the version it branches on
    # and the encoding it decodes text with.
    expect(conn.info.server_version >= 100000, "server_version %r" % conn.info.server_version)
    eq(conn.info.parameter_status("client_encoding"), "UTF8", "client_encoding")
    eq(conn.info.parameter_status("standard_conforming_strings"), "on", "standard_conforming_strings")
    eq(conn.info.encoding, "utf-8", "info.encoding")
    eq(conn.info.vendor, "PostgreSQL", "info.vendor")


@check.check("simple_query")
def _():
    cur = conn.execute(ITEMS_SQL)
    eq([d.name for d in cur.description], ["id", "name", "price", "qty", "added"], "column names")
    eq([d.type_code for d in cur.description], ITEMS_OIDS, "column type oids")
    eq(cur.fetchall(), ITEMS, "rows")
    eq(cur.rowcount, 3, "rowcount")
    eq(cur.statusmessage, "SELECT 3", "statusmessage")


@check.check("matview_query")
def _():
    rows = conn.execute("SELECT name, total, n FROM item_totals ORDER BY name").fetchall()
    eq(rows, [("apple", 10, 1), ("pear", 5, 1), ("plum", 20, 1)], "item_totals")


@check.check("params_roundtrip")
def _():
    vals = (42, 9007199254740993, Decimal("12345.678901"), "héllo 'q' \\ \"", datetime.datetime(2026, 3, 4, 5, 6, 7, 890000),
            True, False, None)
    # Untyped placeholders: psycopg sends each parameter's OID (int2/int4/
    # int8/numeric by value, text, timestamp, bool) and the server infers.
    cur = conn.execute("SELECT %s, %s, %s, %s, %s, %s, %s, %s", vals)
    row = cur.fetchone()
    eq(row, vals, "row")
    eq([type(v) for v in row], [int, int, Decimal, str, datetime.datetime, bool, bool, type(None)], "python types")
    # Typed casts: the result columns' types are the casts'.
    cur = conn.execute("SELECT %s::integer, %s::bigint, %s::numeric, %s::text, %s::timestamp, %s::boolean, %s::text",
                       (7, -(2 ** 62), Decimal("-0.5"), "", datetime.datetime(1999, 12, 31, 23, 59, 59), False, None))
    eq([d.type_code for d in cur.description], [23, 20, 1700, 25, 1114, 16, 25], "type oids")
    eq(cur.fetchone(), (7, -(2 ** 62), Decimal("-0.5"), "", datetime.datetime(1999, 12, 31, 23, 59, 59), False, None), "typed row")


@check.check("params_in_where")
def _():
    rows = conn.execute("SELECT name FROM items WHERE id >= %s AND price < %s AND added < %s AND name <> %s ORDER BY id",
                        (1, Decimal("2.00"), datetime.datetime(2026, 1, 3), "nope")).fetchall()
    eq(rows, [("apple",), ("plum",)], "rows")
    eq(conn.execute("SELECT count(*) FROM items WHERE name = %s", (None,)).fetchone(), (0,), "= NULL matches nothing")


@check.check("binary_cursor")
def _():
    cur = conn.cursor(binary=True)
    cur.execute(ITEMS_SQL)
    eq([cur.pgresult.fformat(i) for i in range(5)], [1] * 5, "result formats (1 = binary)")
    eq(cur.fetchall(), ITEMS, "rows")
    cur.execute("SELECT %s::bigint, %s::numeric, %s::text, %s::boolean, %s::timestamp",
                (-5, Decimal("3.14159"), "bin", True, datetime.datetime(2026, 1, 1)))
    eq(cur.fetchone(), (-5, Decimal("3.14159"), "bin", True, datetime.datetime(2026, 1, 1)), "binary params row")


@check.check("server_side_cursor")
def _():
    with connect() as c:  # a named cursor lives in a transaction
        with c.cursor(name="items_cur") as cur:
            cur.itersize = 1
            cur.execute("SELECT id, name FROM items ORDER BY id")
            eq([d.name for d in cur.description], ["id", "name"], "description")
            eq(list(cur), [(1, "apple"), (2, "pear"), (3, "plum")], "iterated rows")
        with c.cursor(name="items_cur2") as cur:
            cur.execute("SELECT id, price FROM items WHERE id > %s ORDER BY id", (0,))
            eq(cur.fetchmany(2), [(1, Decimal("1.25")), (2, Decimal("2.50"))], "first fetchmany(2)")
            eq(cur.fetchmany(2), [(3, Decimal("0.75"))], "second fetchmany(2)")
            eq(cur.fetchmany(2), [], "third fetchmany(2)")
        c.rollback()


@check.check("executemany_insert")
def _():
    rows = [(BASE + i, "many %d" % i) for i in range(5)]
    cur = conn.cursor()
    cur.executemany("INSERT INTO writes_psycopg (id, note) VALUES (%s, %s)", rows)
    eq(cur.rowcount, 5, "rowcount")
    eq(own_rows(conn, 0, 100), rows, "rows read back")


COPY_ROWS = [(BASE + 100, "plain"), (BASE + 101, "tab\there"), (BASE + 102, "new\nline"),
             (BASE + 103, "back\\slash"), (BASE + 104, None), (BASE + 105, "ünïcode ✓")]


@check.check("pipeline_mode")
def _():
    # Pipeline mode: several Parse/Bind/Execute sent before one Sync, the
    # results read afterwards (executemany uses it too).
    with connect(autocommit=True) as c:
        with c.pipeline():
            c1 = c.execute("SELECT name FROM items WHERE id = %s", (1,))
            c2 = c.execute("INSERT INTO writes_psycopg (id, note) VALUES (%s, %s)", (BASE + 50, "pipelined"))
            c3 = c.execute("SELECT count(*) FROM items WHERE qty > %s", (6,))
        eq(c1.fetchone(), ("apple",), "first result")
        eq(c2.rowcount, 1, "insert rowcount")
        eq(c3.fetchone(), (2,), "third result")
    eq(own_rows(conn, 50, 51), [(BASE + 50, "pipelined")], "pipelined insert read back")


@check.check("copy_from_stdin")
def _():
    cur = conn.cursor()
    with cur.copy("COPY writes_psycopg (id, note) FROM STDIN") as cp:
        for r in COPY_ROWS:
            cp.write_row(r)
    eq(cur.rowcount, len(COPY_ROWS), "rowcount")
    eq(own_rows(conn, 100, 200), COPY_ROWS, "rows read back")


@check.check("copy_to_stdout")
def _():
    cur = conn.cursor()
    got = []
    with cur.copy("COPY writes_psycopg (id, note) TO STDOUT") as cp:
        cp.set_types(["int8", "text"])
        for row in cp.rows():
            if BASE + 100 <= row[0] < BASE + 200:
                got.append(row)
    eq(sorted(got, key=lambda r: r[0]), COPY_ROWS, "rows")
    # The raw text format of a fixed table.
    data = bytearray()
    with cur.copy("COPY items (id, name, price, qty, added) TO STDOUT") as cp:
        for block in cp:
            data += block
    lines = sorted(bytes(data).decode().splitlines())
    eq(lines, ["1\tapple\t1.25\t10\t2026-01-01 10:00:00", "2\tpear\t2.50\t5\t2026-01-01 11:00:00",
               "3\tplum\t0.75\t20\t2026-01-02 09:30:00"], "COPY items text")


@check.check("copy_query_to_stdout")
def _():
    cur = conn.cursor()
    with cur.copy("COPY (SELECT id, name FROM items WHERE qty > 5 ORDER BY id) TO STDOUT") as cp:
        cp.set_types(["int8", "text"])
        eq(list(cp.rows()), [(1, "apple"), (3, "plum")], "rows")


@check.check("copy_binary_to_stdout")
def _():
    cur = conn.cursor()
    with cur.copy("COPY items (id, name, price, qty, added) TO STDOUT (FORMAT BINARY)") as cp:
        cp.set_types(["int8", "text", "numeric", "int4", "timestamp"])
        eq(sorted(cp.rows()), ITEMS, "rows")


@check.check("transaction_commit")
def _():
    with connect() as c:
        with c.transaction():
            c.execute("INSERT INTO writes_psycopg (id, note) VALUES (%s, %s)", (BASE + 200, "committed"))
            eq(c.info.transaction_status, psycopg.pq.TransactionStatus.INTRANS, "status inside")
        eq(c.info.transaction_status, psycopg.pq.TransactionStatus.IDLE, "status after commit")
    # Another connection sees the committed row.
    eq(own_rows(conn, 200, 201), [(BASE + 200, "committed")], "row seen by another connection")


@check.check("transaction_error_rollback")
def _():
    with connect() as c:
        c.execute("INSERT INTO writes_psycopg (id, note) VALUES (%s, %s)", (BASE + 300, "rolled back"))
        try:
            c.execute("SELECT 1 / 0")
            raise AssertionError("1/0 did not fail")
        except errors.DivisionByZero as e:
            eq(e.sqlstate, "22012", "sqlstate of 1/0")
        eq(c.info.transaction_status, psycopg.pq.TransactionStatus.INERROR, "status after the error")
        try:
            c.execute("SELECT 1")
            raise AssertionError("a statement in the failed transaction did not fail")
        except errors.InFailedSqlTransaction as e:
            eq(e.sqlstate, "25P02", "sqlstate in the failed transaction")
        c.rollback()
        eq(c.info.transaction_status, psycopg.pq.TransactionStatus.IDLE, "status after rollback")
        eq(c.execute("SELECT name FROM items WHERE id = %s", (2,)).fetchone(), ("pear",), "query after rollback")
        c.rollback()
    eq(own_rows(conn, 300, 301), [], "the rolled-back insert")


@check.check("prepared_statements")
def _():
    q = "SELECT id, name, price FROM items WHERE id = %s"
    want = {i[0]: (i[0], i[1], i[2]) for i in ITEMS}
    cur = conn.cursor()
    for i in (1, 2, 3, 2, 1):
        cur.execute(q, (i,), prepare=True)
        eq(cur.fetchall(), [want[i]], "row of id %d" % i)
    # The threshold route: prepared automatically on the second use.
    with connect(autocommit=True, prepare_threshold=1) as c:
        for i in (3, 1, 2):
            eq(c.execute("SELECT name FROM items WHERE id = %s", (i,)).fetchone(), (want[i][1],), "auto-prepared %d" % i)


@check.check("typeinfo_fetch")
def _():
    for name, oid, array_oid in (("numeric", 1700, 1231), ("text", 25, 1009), ("int8", 20, 1016),
                                 ("timestamp", 1114, 1115)):
        info = TypeInfo.fetch(conn, name)
        expect(info is not None, "TypeInfo.fetch(%r) found nothing" % name)
        eq((info.name, info.oid, info.array_oid, info.delimiter), (name, oid, array_oid, ","), "TypeInfo %s" % name)
    eq(TypeInfo.fetch(conn, "no_such_type_xyz"), None, "TypeInfo of a missing type")


@check.check("error_sqlstate")
def _():
    try:
        conn.execute("SELECT * FROM no_such_relation_xyz")
        raise AssertionError("no error")
    except errors.UndefinedTable as e:
        eq(e.sqlstate, "42P01", "sqlstate")
        eq(e.diag.sqlstate, "42P01", "diag.sqlstate")
    eq(conn.execute("SELECT 1").fetchone(), (1,), "after the error (autocommit)")


@check.check("sql_composition")
def _():
    q = sql.SQL("SELECT {col} FROM {tbl} WHERE {key} = {val}").format(
        col=sql.Identifier("name"), tbl=sql.Identifier("items"), key=sql.Identifier("id"), val=sql.Literal(3))
    eq(conn.execute(q).fetchall(), [("plum",)], "rows")


check.done()
