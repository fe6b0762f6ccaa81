"""pandas over SQLAlchemy (psycopg 3) against fvsql (or PostgreSQL): the client suite's pandas program.

Run: <venv>/bin/python tests/clients/python/pandas_suite.py with the PG*
variables and FVSQL_CLIENT_TARGET set (see check.py).
"""

import datetime
import random
import warnings
from decimal import Decimal

import pandas as pd
import sqlalchemy as sa

import check
from check import eq, expect

warnings.simplefilter("default")  # warnings to stderr, never a failure

BASE = random.randrange(1, 1 << 40) * 1000  # this run's ids in writes_pandas

ITEMS_SQL = check.ITEMS_SQL


def check_items_frame(df, what):
    eq(list(df.columns), ["id", "name", "price", "qty", "added"], what + " columns")
    eq(len(df), 3, what + " rows")
    eq(str(df["id"].dtype), "int64", what + " id dtype")
    eq(str(df["qty"].dtype), "int64", what + " qty dtype")
    expect(pd.api.types.is_string_dtype(df["name"]), "%s name dtype %s is not a string dtype" % (what, df["name"].dtype))
    expect(pd.api.types.is_datetime64_dtype(df["added"]), "%s added dtype %s is not datetime64" % (what, df["added"].dtype))
    eq(df["id"].tolist(), [1, 2, 3], what + " id")
    eq(df["name"].tolist(), ["apple", "pear", "plum"], what + " name")
    # numeric comes as Python Decimals in an object column.
    eq(df["price"].tolist(), [Decimal("1.25"), Decimal("2.50"), Decimal("0.75")], what + " price")
    eq(df["qty"].tolist(), [10, 5, 20], what + " qty")
    eq([t.to_pydatetime() for t in df["added"]],
       [datetime.datetime(2026, 1, 1, 10), datetime.datetime(2026, 1, 1, 11), datetime.datetime(2026, 1, 2, 9, 30)],
       what + " added")


eng = None


@check.check("engine")
def _():
    global eng
    eng = sa.create_engine(check.url("postgresql+psycopg"), pool_size=1, max_overflow=0, pool_timeout=10)
    with eng.connect() as c:
        eq(c.execute(sa.text("SELECT count(*) FROM items")).scalar_one(), 3, "count(*)")


if eng is None:
    check.done()


@check.check("read_sql_query")
def _():
    check_items_frame(pd.read_sql(ITEMS_SQL, eng), "read_sql")


@check.check("read_sql_params")
def _():
    # A string query goes to the driver as is: psycopg's %(name)s style.
    df = pd.read_sql("SELECT name, qty FROM items WHERE qty >= %(q)s AND added < %(t)s ORDER BY name", eng,
                     params={"q": 10, "t": datetime.datetime(2026, 1, 3)})
    eq(df.values.tolist(), [["apple", 10], ["plum", 20]], "rows")
    # sa.text: SQLAlchemy's :name style, bound by the dialect.
    df = pd.read_sql(sa.text("SELECT id, price FROM items WHERE price > :p ORDER BY id"), eng,
                     params={"p": Decimal("1.00")}, index_col="id")
    eq(df.index.tolist(), [1, 2], "index")
    eq(df["price"].tolist(), [Decimal("1.25"), Decimal("2.50")], "price")


@check.check("read_sql_parse_dates_dtype")
def _():
    df = pd.read_sql_query("SELECT name, added, price FROM items ORDER BY id", eng, parse_dates=["added"],
                           dtype={"price": "float64"})
    eq(str(df["price"].dtype), "float64", "price dtype")
    eq(df["price"].tolist(), [1.25, 2.5, 0.75], "price")
    eq(df["added"].dt.day.tolist(), [1, 1, 2], "added day")


@check.check("read_sql_chunksize")
def _():
    # chunksize: pandas streams the result (SQLAlchemy's stream_results, a
    # psycopg server-side cursor).
    chunks = list(pd.read_sql_query("SELECT id, name FROM items ORDER BY id", eng, chunksize=2))
    eq([len(c) for c in chunks], [2, 1], "chunk sizes")
    eq(pd.concat(chunks)["name"].tolist(), ["apple", "pear", "plum"], "names")


@check.check("read_sql_matview")
def _():
    df = pd.read_sql("SELECT name, total, n FROM item_totals ORDER BY name", eng)
    eq(df.values.tolist(), [["apple", 10, 1], ["pear", 5, 1], ["plum", 20, 1]], "rows")
    eq([str(df[c].dtype) for c in ("total", "n")], ["int64", "int64"], "dtypes")


@check.check("read_sql_table")
def _():
    # read_sql_table reflects the table through SQLAlchemy's inspector.
    # (SELECT without ORDER BY: sorted here by id.)
    df = pd.read_sql_table("items", eng).sort_values("id", ignore_index=True)
    check_items_frame(df, "read_sql_table")
    df = pd.read_sql_table("items", eng, columns=["name", "qty"])
    eq(sorted(df.values.tolist()), [["apple", 10], ["pear", 5], ["plum", 20]], "columns=[name, qty]")


def own_rows(lo, hi):
    return pd.read_sql("SELECT id, note FROM writes_pandas WHERE id >= %(lo)s AND id < %(hi)s ORDER BY id", eng,
                       params={"lo": BASE + lo, "hi": BASE + hi})


@check.check("to_sql_append")
def _():
    df = pd.DataFrame({"id": [BASE + i for i in range(4)], "note": ["frame %d" % i for i in range(4)]})
    # The table exists: to_sql asks the inspector (has_table), then inserts
    # with executemany.
    # (to_sql's return value is SQLAlchemy's rowcount, -1 for an INSERT
    # without preserve_rowcount: the rows read back are the check.)
    df.to_sql("writes_pandas", eng, if_exists="append", index=False)
    got = own_rows(0, 100)
    eq(got.values.tolist(), df.values.tolist(), "rows read back")


@check.check("to_sql_append_multi")
def _():
    df = pd.DataFrame({"id": [BASE + 100 + i for i in range(5)], "note": ["multi %d" % i for i in range(4)] + [None]})
    # method='multi': one INSERT ... VALUES (...), (...) per chunk.
    df.to_sql("writes_pandas", eng, if_exists="append", index=False, method="multi", chunksize=2)
    got = own_rows(100, 200)
    eq(got["id"].tolist(), df["id"].tolist(), "ids read back")
    eq(got["note"].tolist()[:4], df["note"].tolist()[:4], "notes read back")
    expect(pd.isna(got["note"].tolist()[4]), "NULL note read back as %r" % (got["note"].tolist()[4],))


check.done()
