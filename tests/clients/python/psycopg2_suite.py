"""psycopg2 against fvsql (or PostgreSQL): the client suite's psycopg2 program.

(Not named psycopg2.py: that would shadow the driver it imports.)
Run: <venv>/bin/python tests/clients/python/psycopg2_suite.py with the PG*
variables and FVSQL_CLIENT_TARGET set (see check.py).
"""

import datetime
import io
import random
from decimal import Decimal

import psycopg2
import psycopg2.errors
import psycopg2.extensions as ext
import psycopg2.extras

import check
from check import eq, expect

ITEMS, ITEMS_SQL = check.ITEMS, check.ITEMS_SQL

# This run's rows in writes_psycopg2 have ids from BASE on.
BASE = random.randrange(1, 1 << 40) * 1000


def connect():
    return psycopg2.connect(check.conninfo())


def own_rows(cur, lo, hi):
    cur.execute("SELECT id, note FROM writes_psycopg2 WHERE id >= %s AND id < %s ORDER BY id", (BASE + lo, BASE + hi))
    return cur.fetchall()


conn = None


@check.check("connect_tls")
def _():
    global conn
    conn = connect()
    conn.autocommit = True
    eq(conn.closed, 0, "closed")
    eq(conn.info.ssl_in_use, True, "info.ssl_in_use")
    eq(conn.info.dbname, check.DBNAME, "dbname")
    expect(conn.server_version >= 100000, "server_version %r" % conn.server_version)
    eq(conn.encoding, "UTF8", "encoding")
    eq(conn.get_parameter_status("standard_conforming_strings"), "on", "standard_conforming_strings")


if conn is None:
    check.done()


@check.check("simple_query")
def _():
    cur = conn.cursor()
    cur.execute(ITEMS_SQL)
    eq([d.name for d in cur.description], ["id", "name", "price", "qty", "added"], "column names")
    eq([d.type_code for d in cur.description], [20, 25, 1700, 23, 1114], "column type oids")
    eq(cur.fetchall(), ITEMS, "rows")
    eq(cur.rowcount, 3, "rowcount")
    eq(cur.statusmessage, "SELECT 3", "statusmessage")


@check.check("params_roundtrip")
def _():
    # psycopg2 interpolates parameters into the SQL text on the client:
    # what the server gets is literals (42, 'text', '...'::timestamp, true, NULL).
    vals = (42, 9007199254740993, Decimal("12345.678901"), "héllo 'q' \\ \"", datetime.datetime(2026, 3, 4, 5, 6, 7, 890000),
            True, False, None)
    cur = conn.cursor()
    cur.execute("SELECT %s, %s, %s, %s, %s, %s, %s, %s", vals)
    row = cur.fetchone()
    eq(row, vals, "row")
    eq([type(v) for v in row], [int, int, Decimal, str, datetime.datetime, bool, bool, type(None)], "python types")
    cur.execute("SELECT %(i)s::integer, %(b)s::bigint, %(n)s::numeric, %(t)s::text, %(ts)s::timestamp, %(f)s::boolean, %(z)s::text",
                dict(i=7, b=-(2 ** 62), n=Decimal("-0.5"), t="", ts=datetime.datetime(1999, 12, 31, 23, 59, 59), f=False, z=None))
    eq([d.type_code for d in cur.description], [23, 20, 1700, 25, 1114, 16, 25], "type oids")
    eq(cur.fetchone(), (7, -(2 ** 62), Decimal("-0.5"), "", datetime.datetime(1999, 12, 31, 23, 59, 59), False, None), "typed row")
    cur.execute("SELECT name FROM items WHERE id IN %s AND price < %s ORDER BY id", ((1, 2, 3), Decimal("2")))
    eq(cur.fetchall(), [("apple",), ("plum",)], "IN tuple")


@check.check("named_cursor_itersize")
def _():
    with connect() as c:  # a named cursor needs a transaction (psycopg2 begins one)
        cur = c.cursor("items_cur")
        cur.itersize = 1
        cur.execute("SELECT id, name FROM items ORDER BY id")
        eq(list(cur), [(1, "apple"), (2, "pear"), (3, "plum")], "iterated rows")
        cur.close()
        cur = c.cursor("items_cur2")
        cur.execute("SELECT id, qty FROM items WHERE qty >= %s ORDER BY id", (5,))
        eq(cur.fetchmany(2), [(1, 10), (2, 5)], "first fetchmany(2)")
        eq(cur.fetchone(), (3, 20), "fetchone")
        eq(cur.fetchmany(2), [], "fetchmany after the end")
        cur.close()
        c.rollback()
    c.close()


@check.check("executemany_insert")
def _():
    cur = conn.cursor()
    rows = [(BASE + i, "many %d" % i) for i in range(4)]
    cur.executemany("INSERT INTO writes_psycopg2 (id, note) VALUES (%s, %s)", rows)
    eq(cur.rowcount, 4, "rowcount")  # psycopg2 sums the statements' counts
    eq(own_rows(cur, 0, 100), rows, "rows read back")


@check.check("execute_values_insert")
def _():
    cur = conn.cursor()
    rows = [(BASE + 100 + i, "values %d" % i) for i in range(7)]
    psycopg2.extras.execute_values(cur, "INSERT INTO writes_psycopg2 (id, note) VALUES %s", rows, page_size=3)
    eq(own_rows(cur, 100, 200), rows, "rows read back")


@check.check("execute_values_fetch")
def _():
    # execute_values' other use: a VALUES list as a relation, results fetched.
    cur = conn.cursor()
    got = psycopg2.extras.execute_values(cur, "SELECT v.a, v.b FROM (VALUES %s) AS v (a, b) ORDER BY v.a",
                                         [(2, "b"), (1, "a")], fetch=True)
    eq(got, [(1, "a"), (2, "b")], "execute_values with fetch")


COPY_ROWS = [(BASE + 200, "plain"), (BASE + 201, "tab\there"), (BASE + 202, "new\nline"),
             (BASE + 203, "back\\slash"), (BASE + 204, None), (BASE + 205, "ünïcode ✓")]


def copy_text(rows):
    def field(v):
        if v is None:
            return "\\N"
        return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
    return "".join("\t".join(field(v) for v in r) + "\n" for r in rows)


@check.check("copy_expert_from_stdin")
def _():
    cur = conn.cursor()
    cur.copy_expert("COPY writes_psycopg2 (id, note) FROM STDIN", io.StringIO(copy_text(COPY_ROWS)))
    eq(cur.rowcount, len(COPY_ROWS), "rowcount")
    eq(own_rows(cur, 200, 300), COPY_ROWS, "rows read back")


@check.check("copy_expert_to_stdout")
def _():
    cur = conn.cursor()
    out = io.StringIO()
    cur.copy_expert("COPY items (id, name, price, qty, added) TO STDOUT", out)
    eq(sorted(out.getvalue().splitlines()), ["1\tapple\t1.25\t10\t2026-01-01 10:00:00", "2\tpear\t2.50\t5\t2026-01-01 11:00:00",
                                             "3\tplum\t0.75\t20\t2026-01-02 09:30:00"], "COPY items")
    out = io.StringIO()
    cur.copy_expert("COPY writes_psycopg2 (id, note) TO STDOUT", out)
    mine = [l for l in out.getvalue().splitlines() if BASE + 200 <= int(l.split("\t")[0]) < BASE + 300]
    eq(sorted(mine), sorted(copy_text(COPY_ROWS).splitlines()), "COPY writes_psycopg2 (this run's rows)")
    out = io.StringIO()
    cur.copy_expert("COPY (SELECT name, qty FROM items WHERE id < 3 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER true)", out)
    eq(out.getvalue().splitlines(), ["name,qty", "apple,10", "pear,5"], "COPY (query) TO STDOUT csv")


@check.check("copy_from_copy_to")
def _():
    # copy_from/copy_to send the old syntax:
    # COPY "writes_psycopg2" ("id","note") FROM stdin WITH DELIMITER AS '|' NULL AS '\N'
    cur = conn.cursor()
    rows = [(BASE + 300, "pipe a"), (BASE + 301, None)]
    cur.copy_from(io.StringIO("%d|pipe a\n%d|\\N\n" % (BASE + 300, BASE + 301)), "writes_psycopg2", sep="|", columns=("id", "note"))
    eq(own_rows(cur, 300, 400), rows, "rows read back")
    out = io.StringIO()
    cur.copy_to(out, "items", sep="|", columns=("id", "name"))
    eq(sorted(out.getvalue().splitlines()), ["1|apple", "2|pear", "3|plum"], "copy_to items")


@check.check("real_dict_cursor")
def _():
    cur = conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor)
    cur.execute("SELECT id, name, price FROM items WHERE id = %s", (2,))
    row = cur.fetchone()
    eq(dict(row), {"id": 2, "name": "pear", "price": Decimal("2.50")}, "row")
    eq(list(row.keys()), ["id", "name", "price"], "key order")
    cur = conn.cursor(cursor_factory=psycopg2.extras.NamedTupleCursor)
    cur.execute("SELECT name, qty FROM items ORDER BY qty DESC")
    eq([(r.name, r.qty) for r in cur.fetchall()], [("plum", 20), ("apple", 10), ("pear", 5)], "NamedTupleCursor")


@check.check("error_pgcode_undefined_table")
def _():
    with connect() as c:
        cur = c.cursor()
        try:
            cur.execute("SELECT * FROM no_such_relation_xyz")
            raise AssertionError("no error")
        except psycopg2.Error as e:
            eq(e.pgcode, "42P01", "pgcode")
            expect(isinstance(e, psycopg2.errors.UndefinedTable), "class %s" % type(e).__name__)
            eq(e.diag.sqlstate, "42P01", "diag.sqlstate")
        eq(c.get_transaction_status(), ext.TRANSACTION_STATUS_INERROR, "transaction status")
        c.rollback()
        cur.execute("SELECT count(*) FROM items")
        eq(cur.fetchone(), (3,), "after rollback")
    c.close()


@check.check("error_pgcode_division_by_zero")
def _():
    cur = conn.cursor()
    try:
        cur.execute("SELECT qty / (id - id) FROM items")
        raise AssertionError("no error")
    except psycopg2.Error as e:
        eq(e.pgcode, "22012", "pgcode")
        expect(isinstance(e, psycopg2.errors.DivisionByZero), "class %s" % type(e).__name__)
    cur.execute("SELECT 1")
    eq(cur.fetchone(), (1,), "after the error (autocommit)")


@check.check("transaction_commit_rollback")
def _():
    with connect() as c:
        cur = c.cursor()
        cur.execute("INSERT INTO writes_psycopg2 (id, note) VALUES (%s, %s)", (BASE + 400, "committed"))
        eq(c.get_transaction_status(), ext.TRANSACTION_STATUS_INTRANS, "status before commit")
        c.commit()
        cur.execute("INSERT INTO writes_psycopg2 (id, note) VALUES (%s, %s)", (BASE + 401, "rolled back"))
        c.rollback()
        eq(c.get_transaction_status(), ext.TRANSACTION_STATUS_IDLE, "status after rollback")
    c.close()
    eq(own_rows(conn.cursor(), 400, 500), [(BASE + 400, "committed")], "rows seen by another connection")


check.done()
