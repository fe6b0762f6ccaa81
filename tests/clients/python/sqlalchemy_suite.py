"""SQLAlchemy 2.x against fvsql (or PostgreSQL): the client suite's sqlalchemy program.

The postgresql+psycopg dialect carries most checks (its reflection is the
PostgreSQL dialect's pg_catalog queries, sent with server-side parameters);
the postgresql+psycopg2 dialect (client-side parameters) repeats the core of
them.
Run: <venv>/bin/python tests/clients/python/sqlalchemy_suite.py with the PG*
variables and FVSQL_CLIENT_TARGET set (see check.py).
"""

import datetime
import random
import warnings
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

import check
from check import eq, expect

# Reflection warns (stderr) about what it does not recognize; a warning
# is not a failure here, a wrong answer is.
warnings.simplefilter("default")

BASE = random.randrange(1, 1 << 40) * 1000  # this run's ids in writes_sqlalchemy
WRITES = ["writes_psycopg", "writes_psycopg2", "writes_asyncpg", "writes_pandas", "writes_sqlalchemy"]
ITEMS_COLUMNS = [("id", pg.BIGINT), ("name", pg.TEXT), ("price", pg.NUMERIC), ("qty", pg.INTEGER),
                 ("added", pg.TIMESTAMP)]


def engine(dialect):
    return sa.create_engine(check.url(dialect), pool_size=1, max_overflow=0, pool_timeout=10)


eng = None
insp = None


@check.check("psycopg_engine_connect")
def _():
    global eng
    eng = engine("postgresql+psycopg")
    with eng.connect() as c:
        eq(c.execute(sa.text("SELECT 1 + :x"), {"x": 1}).scalar_one(), 2, "SELECT 1 + :x")
    # What the dialect learnt on its first connection (its initialize()).
    expect(eng.dialect.server_version_info >= (10,), "server_version_info %r" % (eng.dialect.server_version_info,))
    eq(eng.dialect.default_schema_name, "public", "default_schema_name")
    eq(eng.dialect.driver, "psycopg", "driver")


if eng is None:
    check.done()


@check.check("inspector")
def _():
    global insp
    insp = sa.inspect(eng)
    eq(insp.default_schema_name, "public", "default_schema_name")


@check.check("get_schema_names")
def _():
    names = insp.get_schema_names()
    expect("public" in names, "public not in %r" % names)
    expect("pg_catalog" not in names, "pg_catalog listed (it is a system schema): %r" % names)


@check.check("get_table_names")
def _():
    names = insp.get_table_names()
    missing = [t for t in ["items"] + WRITES if t not in names]
    expect(not missing, "missing %r in %r" % (missing, names))
    expect("item_totals" not in names, "the materialized view item_totals listed as a table: %r" % names)
    eq(insp.get_table_names(schema="public"), names, "schema='public'")


@check.check("get_view_names")
def _():
    names = insp.get_view_names()
    expect(isinstance(names, list), "not a list: %r" % (names,))
    for t in ["items", "item_totals"]:
        expect(t not in names, "%s listed as a view: %r" % (t, names))
    # The default schema's views only: information_schema's are not in the
    # search path (pg_table_is_visible is false of them).
    for t in ["columns", "tables", "schemata"]:
        expect(t not in names, "information_schema.%s listed as a view of the default schema" % t)


@check.check("get_materialized_view_names")
def _():
    names = insp.get_materialized_view_names()
    expect("item_totals" in names, "item_totals not in %r" % names)
    expect("items" not in names, "items listed as a materialized view: %r" % names)


@check.check("get_columns")
def _():
    cols = insp.get_columns("items")
    eq([c["name"] for c in cols], [n for n, _ in ITEMS_COLUMNS], "names")
    for c, (name, typ) in zip(cols, ITEMS_COLUMNS):
        expect(type(c["type"]) is typ, "%s: type %r, want %s" % (name, c["type"], typ.__name__))
        eq(c["nullable"], True, "%s nullable" % name)
        eq(c["default"], None, "%s default" % name)
    eq(cols[4]["type"].timezone, False, "added: timestamp without time zone")
    eq((cols[2]["type"].precision, cols[2]["type"].scale), (None, None), "price: numeric without typmod")


@check.check("get_columns_matview")
def _():
    cols = insp.get_columns("item_totals")
    eq([(c["name"], type(c["type"])) for c in cols], [("name", pg.TEXT), ("total", pg.BIGINT), ("n", pg.BIGINT)],
       "names and types")


@check.check("get_pk_constraint")
def _():
    pk = insp.get_pk_constraint("items")
    eq(pk["constrained_columns"], [], "constrained_columns")


@check.check("get_foreign_keys")
def _():
    eq(insp.get_foreign_keys("items"), [], "foreign keys")


@check.check("get_indexes")
def _():
    eq(insp.get_indexes("items"), [], "indexes")


@check.check("get_unique_constraints")
def _():
    eq(insp.get_unique_constraints("items"), [], "unique constraints")


@check.check("get_check_constraints")
def _():
    eq(insp.get_check_constraints("items"), [], "check constraints")


@check.check("get_table_comment")
def _():
    eq(insp.get_table_comment("items"), {"text": None}, "comment")


@check.check("has_table")
def _():
    eq(insp.has_table("items"), True, "has_table items")
    eq(insp.has_table("writes_sqlalchemy", schema="public"), True, "has_table public.writes_sqlalchemy")
    eq(insp.has_table("no_such_table_xyz"), False, "has_table no_such_table_xyz")
    # SQLAlchemy 2's has_table is true of views and materialized views too.
    eq(insp.has_table("item_totals"), True, "has_table item_totals")


@check.check("has_schema")
def _():
    eq(insp.has_schema("public"), True, "public")
    eq(insp.has_schema("no_such_schema_xyz"), False, "no_such_schema_xyz")


md = sa.MetaData()


@check.check("metadata_reflect")
def _():
    md.reflect(bind=eng)
    missing = [t for t in ["items"] + WRITES if t not in md.tables]
    expect(not missing, "missing %r in %r" % (missing, sorted(md.tables)))
    items = md.tables["items"]
    eq([(c.name, type(c.type)) for c in items.columns], ITEMS_COLUMNS, "items columns")
    eq(list(items.primary_key.columns), [], "primary key")
    mv = sa.MetaData()
    mv.reflect(bind=eng, views=True, only=["item_totals"])
    eq([c.name for c in mv.tables["item_totals"].columns], ["name", "total", "n"], "item_totals (views=True)")


@check.check("table_autoload")
def _():
    t = sa.Table("items", sa.MetaData(), autoload_with=eng)
    eq([(c.name, type(c.type)) for c in t.columns], ITEMS_COLUMNS, "columns")
    eq([c.nullable for c in t.columns], [True] * 5, "nullable")


@check.check("core_select")
def _():
    t = sa.Table("items", sa.MetaData(), autoload_with=eng)
    q = sa.select(t.c.name, t.c.price, t.c.added).where(t.c.qty >= 10).order_by(t.c.price.desc())
    with eng.connect() as c:
        rows = [tuple(r) for r in c.execute(q)]
        eq(rows, [("apple", Decimal("1.25"), datetime.datetime(2026, 1, 1, 10)),
                  ("plum", Decimal("0.75"), datetime.datetime(2026, 1, 2, 9, 30))], "rows")
        q2 = (sa.select(t.c.id, sa.func.upper(t.c.name).label("u"))
              .where(t.c.name.in_(["pear", "plum"]), t.c.added < datetime.datetime(2026, 1, 2)).order_by(t.c.id))
        eq([tuple(r) for r in c.execute(q2)], [(2, "PEAR")], "IN and timestamp bound")
        agg = sa.select(sa.func.count(), sa.func.sum(t.c.qty), sa.func.max(t.c.price)).select_from(t)
        eq(tuple(c.execute(agg).one()), (3, 35, Decimal("2.50")), "aggregates")


# Declared, not reflected: these two do not depend on reflection's queries.
DECLARED = sa.MetaData()
ITEMS_T = sa.Table("items", DECLARED, sa.Column("id", sa.BigInteger), sa.Column("name", sa.Text),
                   sa.Column("price", sa.Numeric), sa.Column("qty", sa.Integer), sa.Column("added", sa.DateTime))
WRITES_T = sa.Table("writes_sqlalchemy", DECLARED, sa.Column("id", sa.BigInteger), sa.Column("note", sa.Text))


@check.check("core_select_declared")
def _():
    t = ITEMS_T
    q = (sa.select(t.c.name, (t.c.price * t.c.qty).label("value"))
         .where(sa.or_(t.c.name.like("p%"), t.c.id == sa.bindparam("one", 1)), t.c.qty.is_not(None))
         .order_by(sa.desc("value"), t.c.name).limit(2).offset(0))
    with eng.connect() as c:
        eq([tuple(r) for r in c.execute(q)], [("plum", Decimal("15.00")), ("apple", Decimal("12.50"))], "rows")
        sub = sa.select(t.c.name, t.c.qty).where(t.c.qty > 5).subquery()
        eq(c.execute(sa.select(sa.func.count()).select_from(sub)).scalar_one(), 2, "count over a subquery")


@check.check("core_insert")
def _():
    t = WRITES_T
    rows = [{"id": BASE + i, "note": "core %d" % i} for i in range(3)]
    with eng.begin() as c:
        c.execute(sa.insert(t).values(id=BASE + 10, note="single"))
        c.execute(sa.insert(t), rows)  # executemany ("insertmanyvalues")
    with eng.connect() as c:
        got = c.execute(sa.select(t.c.id, t.c.note).where(t.c.id.between(BASE, BASE + 99)).order_by(t.c.id)).all()
    eq([tuple(r) for r in got], [(r["id"], r["note"]) for r in rows] + [(BASE + 10, "single")], "rows read back")


# The psycopg2 dialect: the same reflection queries, parameters
# interpolated on the client.
eng2 = None


@check.check("psycopg2_engine_connect")
def _():
    global eng2
    eng2 = engine("postgresql+psycopg2")
    with eng2.connect() as c:
        eq(c.execute(sa.text("SELECT name FROM items WHERE id = :i"), {"i": 3}).scalar_one(), "plum", "text query")
    eq(eng2.dialect.driver, "psycopg2", "driver")
    expect(eng2.dialect.server_version_info >= (10,), "server_version_info %r" % (eng2.dialect.server_version_info,))


@check.check("psycopg2_inspector")
def _():
    expect(eng2 is not None, "no engine")
    i2 = sa.inspect(eng2)
    names = i2.get_table_names()
    missing = [t for t in ["items"] + WRITES if t not in names]
    expect(not missing, "missing %r in %r" % (missing, names))
    eq(i2.get_materialized_view_names(), [n for n in i2.get_materialized_view_names() if n != "items"], "matviews")
    expect("item_totals" in i2.get_materialized_view_names(), "item_totals not a matview")
    eq([(c["name"], type(c["type"]), c["nullable"]) for c in i2.get_columns("items")],
       [(n, t, True) for n, t in ITEMS_COLUMNS], "get_columns")
    eq(i2.get_pk_constraint("items")["constrained_columns"], [], "pk")
    eq(i2.get_indexes("items"), [], "indexes")
    eq(i2.has_table("items"), True, "has_table")


@check.check("psycopg2_reflect_select")
def _():
    expect(eng2 is not None, "no engine")
    m = sa.MetaData()
    m.reflect(bind=eng2, only=["items"])
    t = m.tables["items"]
    with eng2.connect() as c:
        rows = c.execute(sa.select(t.c.id, t.c.name).where(t.c.price > Decimal("1")).order_by(t.c.id.desc())).all()
    eq([tuple(r) for r in rows], [(2, "pear"), (1, "apple")], "rows")


check.done()
