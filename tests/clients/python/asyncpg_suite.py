"""asyncpg against fvsql (or PostgreSQL): the client suite's asyncpg program.

Run: <venv>/bin/python tests/clients/python/asyncpg_suite.py with the PG*
variables and FVSQL_CLIENT_TARGET set (see check.py).
"""

import asyncio
import datetime
import io
import json
import random
from decimal import Decimal

import asyncpg

import check
from check import acheck, eq, expect

ITEMS, ITEMS_SQL = check.ITEMS, check.ITEMS_SQL
BASE = random.randrange(1, 1 << 40) * 1000  # this run's ids in writes_asyncpg

COMMAND_TIMEOUT = check.STATEMENT_TIMEOUT_MS / 1000  # asyncpg's client-side statement timeout


def connect_kw():
    return dict(host=check.HOST, port=check.PORT, user=check.USER, password=check.PASSWORD, database=check.DBNAME,
                ssl=check.SSLMODE, timeout=check.CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT)


async def connect():
    return await asyncpg.connect(**connect_kw())


async def main():
    conn = None

    async def connect_tls():
        nonlocal conn
        conn = await connect()
        ssl_object = conn._transport.get_extra_info("ssl_object")  # asyncpg has no public "is TLS" accessor
        expect(ssl_object is not None, "the connection is not TLS")
        expect(ssl_object.version().startswith("TLS"), "TLS version %r" % ssl_object.version())
        v = conn.get_server_version()
        expect(v.major >= 10, "server version %r" % (v,))
        eq(conn.get_settings().client_encoding, "UTF8", "client_encoding")

    if not await acheck("connect_tls", connect_tls):
        return

    async def own_rows(lo, hi):
        rows = await conn.fetch("SELECT id, note FROM writes_asyncpg WHERE id >= $1 AND id < $2 ORDER BY id",
                                BASE + lo, BASE + hi)
        return [tuple(r) for r in rows]

    async def fetch():
        rows = await conn.fetch(ITEMS_SQL)
        eq([tuple(r) for r in rows], ITEMS, "rows")
        eq(list(rows[0].keys()), ["id", "name", "price", "qty", "added"], "record keys")
        eq((rows[1]["name"], rows[1]["price"]), ("pear", Decimal("2.50")), "record by name")

    async def fetchrow_typed_params():
        vals = (7, -(2 ** 62), Decimal("12345.678901"), "héllo 'q' \\", datetime.datetime(2026, 3, 4, 5, 6, 7, 890000),
                True, None)
        row = await conn.fetchrow("SELECT $1::integer, $2::bigint, $3::numeric, $4::text, $5::timestamp, $6::boolean, $7::text",
                                  *vals)
        eq(tuple(row), vals, "row")
        eq(await conn.fetchrow("SELECT id, name FROM items WHERE id = $1", 99), None, "fetchrow of no row")

    async def fetchval_params_inferred():
        # Untyped parameters: the server infers their types from the query.
        eq(await conn.fetchval("SELECT name FROM items WHERE id = $1", 3), "plum", "id = $1")
        eq(await conn.fetchval("SELECT count(*) FROM items WHERE price > $1 AND added < $2 AND name <> $3",
                               Decimal("1"), datetime.datetime(2026, 1, 2), "x"), 2, "numeric/timestamp/text params")
        eq(await conn.fetchval("SELECT qty FROM items WHERE name = $1", "pear", column=0), 5, "text param")
        eq(await conn.fetchval("SELECT $1::bigint + 1", 41), 42, "bigint arithmetic")

    async def prepared_statements():
        stmt = await conn.prepare("SELECT name, price FROM items WHERE id = $1")
        eq([t.name for t in stmt.get_parameters()], ["int8"], "parameter types")
        eq([(a.name, a.type.name) for a in stmt.get_attributes()], [("name", "text"), ("price", "numeric")], "attributes")
        for i in (1, 2, 3, 2):
            row = await stmt.fetchrow(i)
            eq(tuple(row), (ITEMS[i - 1][1], ITEMS[i - 1][2]), "row of id %d" % i)
        eq(await stmt.fetchval(3), "plum", "fetchval")
        s2 = await conn.prepare("SELECT id FROM items WHERE qty >= $1 ORDER BY id")
        eq([r[0] for r in await s2.fetch(10)], [1, 3], "fetch(10)")
        eq([r[0] for r in await s2.fetch(100)], [], "fetch(100)")

    async def cursor():
        async with conn.transaction():
            got = [tuple(r) async for r in conn.cursor(ITEMS_SQL, prefetch=1)]
            eq(got, ITEMS, "async for, prefetch=1")
            cur = await conn.cursor("SELECT id FROM items WHERE id >= $1 ORDER BY id", 1)
            eq([r[0] for r in await cur.fetch(2)], [1, 2], "cursor.fetch(2)")
            eq((await cur.fetchrow())[0], 3, "cursor.fetchrow")
            eq(await cur.fetchrow(), None, "cursor.fetchrow at the end")

    async def pool():
        p = await asyncpg.create_pool(min_size=1, max_size=2, max_inactive_connection_lifetime=0, **connect_kw())
        try:
            for i in range(5):
                # Each release resets the connection (asyncpg's reset query:
                # pg_advisory_unlock_all, CLOSE ALL, UNLISTEN *, RESET ALL as
                # the server's version allows).
                async with p.acquire() as c:
                    eq(await c.fetchval("SELECT name FROM items WHERE id = $1", i % 3 + 1), ITEMS[i % 3][1], "round %d" % i)
            # Both connections at once.
            a, b = await p.acquire(), await p.acquire()
            try:
                r = await asyncio.gather(a.fetchval("SELECT count(*) FROM items"), b.fetchval("SELECT max(qty) FROM items"))
                eq(r, [3, 20], "two connections")
            finally:
                await p.release(a)
                await p.release(b)
            eq(await p.fetchval("SELECT 1 + $1::int", 1), 2, "pool.fetchval")
            eq(p.get_size(), 2, "pool size")
        finally:
            await asyncio.wait_for(p.close(), 10)

    async def executemany():
        rows = [(BASE + i, "many %d" % i) for i in range(5)]
        await conn.executemany("INSERT INTO writes_asyncpg (id, note) VALUES ($1, $2)", rows)
        eq(await own_rows(0, 100), rows, "rows read back")

    copy_rows = [(BASE + 100, "plain"), (BASE + 101, "tab\there"), (BASE + 102, "new\nline"),
                 (BASE + 103, "back\\slash"), (BASE + 104, None), (BASE + 105, "ünïcode ✓")]

    async def copy_records_to_table():
        # Binary COPY FROM STDIN, after a "SELECT id, note FROM writes_asyncpg LIMIT 1"
        # asyncpg prepares to learn the columns' types.
        r = await conn.copy_records_to_table("writes_asyncpg", records=copy_rows, columns=["id", "note"])
        eq(r, "COPY %d" % len(copy_rows), "status")
        eq(await own_rows(100, 200), copy_rows, "rows read back")

    async def copy_from_query():
        buf = io.BytesIO()
        r = await conn.copy_from_query("SELECT id, name, price FROM items WHERE qty > $1 ORDER BY id", 5,
                                       output=buf, format="csv")
        eq(r, "COPY 2", "status")
        eq(buf.getvalue().decode().splitlines(), ["1,apple,1.25", "3,plum,0.75"], "csv")

    async def copy_from_table():
        buf = io.BytesIO()
        r = await conn.copy_from_table("items", columns=["id", "name", "added"], output=buf, format="text")
        eq(r, "COPY 3", "status")
        eq(sorted(buf.getvalue().decode().splitlines()),
           ["1\tapple\t2026-01-01 10:00:00", "2\tpear\t2026-01-01 11:00:00", "3\tplum\t2026-01-02 09:30:00"], "text")
        buf = io.BytesIO()
        await conn.copy_from_table("writes_asyncpg", columns=["id", "note"], output=buf, format="csv")
        mine = sorted(l for l in buf.getvalue().decode().split("\n") if l and l.split(",")[0].isdigit()
                      and BASE <= int(l.split(",")[0]) < BASE + 100)
        eq(mine, ["%d,many %d" % (BASE + i, i) for i in range(5)], "csv of this run's executemany rows")

    async def array_types():
        # numeric[] and text[]: asyncpg introspects the array type on first use.
        eq(await conn.fetchval("SELECT $1::numeric[]", [Decimal("1.5"), None, Decimal("-2")]),
           [Decimal("1.5"), None, Decimal("-2")], "numeric[]")
        eq(await conn.fetchval("SELECT array_agg(name) FROM (SELECT name FROM items ORDER BY id) t"),
           ["apple", "pear", "plum"], "array_agg(text)")
        eq(await conn.fetchval("SELECT $1::bigint[]", [1, 2 ** 40]), [1, 2 ** 40], "bigint[]")

    async def json_types():
        eq(json.loads(await conn.fetchval("SELECT $1::jsonb", '{"a": [1, 2]}')), {"a": [1, 2]}, "jsonb as text")
        eq(json.loads(await conn.fetchval("SELECT $1::json", '{"b": null}')), {"b": None}, "json as text")

    async def set_type_codec():
        # set_type_codec looks the type up by name in pg_type (asyncpg's
        # introspection query), then decodes with the given function.
        c = await connect()
        try:
            await c.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
            eq(await c.fetchval("SELECT $1::jsonb", {"k": [1, "x"]}), {"k": [1, "x"]}, "jsonb round trip")
            await c.set_type_codec("numeric", encoder=str, decoder=float, schema="pg_catalog", format="text")
            eq(await c.fetchval("SELECT price FROM items WHERE id = 2"), 2.5, "numeric as float")
        finally:
            await c.close(timeout=5)

    async def transaction_rollback():
        c = await connect()
        try:
            tr = c.transaction()
            await tr.start()
            await c.execute("INSERT INTO writes_asyncpg (id, note) VALUES ($1, $2)", BASE + 300, "rolled back")
            try:
                await c.fetchval("SELECT 1 / 0")
                raise AssertionError("1/0 did not fail")
            except asyncpg.exceptions.DivisionByZeroError as e:
                eq(e.sqlstate, "22012", "sqlstate")
            await tr.rollback()
            eq(await c.fetchval("SELECT name FROM items WHERE id = 1"), "apple", "query after rollback")
            async with c.transaction():
                await c.execute("INSERT INTO writes_asyncpg (id, note) VALUES ($1, $2)", BASE + 301, "committed")
        finally:
            await c.close(timeout=5)
        eq(await own_rows(300, 400), [(BASE + 301, "committed")], "rows after rollback and commit")

    async def error_sqlstate():
        try:
            await conn.fetch("SELECT * FROM no_such_relation_xyz")
            raise AssertionError("no error")
        except asyncpg.exceptions.UndefinedTableError as e:
            eq(e.sqlstate, "42P01", "sqlstate")
        eq(await conn.fetchval("SELECT 2"), 2, "after the error")

    for name, fn in [("fetch", fetch), ("fetchrow_typed_params", fetchrow_typed_params),
                     ("fetchval_params_inferred", fetchval_params_inferred), ("prepared_statements", prepared_statements),
                     ("cursor", cursor), ("pool", pool), ("executemany", executemany),
                     ("copy_records_to_table", copy_records_to_table), ("copy_from_query", copy_from_query),
                     ("copy_from_table", copy_from_table), ("array_types", array_types), ("json_types", json_types),
                     ("set_type_codec", set_type_codec), ("transaction_rollback", transaction_rollback),
                     ("error_sqlstate", error_sqlstate)]:
        # Each check bounded: a hung one fails and the program goes on.
        await acheck(name, lambda fn=fn: asyncio.wait_for(fn(), 30))
        if conn.is_closed():
            conn = await connect()
    await conn.close(timeout=5)


asyncio.run(main())
check.done()
