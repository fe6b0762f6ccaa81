"""The ok/FAIL protocol of the client suite (tests/clients/suite_test.go).

Each suite program imports this module, runs its checks with check() (or
acheck() for coroutines) and ends with done(). A check prints one line on
stdout, "ok <name>" or "FAIL <name>: <reason>"; an exception in a check is
its failure, with the traceback on stderr, and the program goes on. done()
exits 0 iff every check passed.

The connection comes from libpq's environment variables (PGHOST, PGPORT,
PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE); FVSQL_CLIENT_TARGET says
whether the server is fvsql or postgres.
"""

import asyncio
import datetime
import os
import sys
import threading
import traceback
from decimal import Decimal

TARGET = os.environ.get("FVSQL_CLIENT_TARGET", "fvsql")

# The rows of items in fixture/fvsql.sql and fixture/postgres.sql, as the
# drivers return them, and the query that reads them in that order.
ITEMS = [
    (1, "apple", Decimal("1.25"), 10, datetime.datetime(2026, 1, 1, 10, 0)),
    (2, "pear", Decimal("2.50"), 5, datetime.datetime(2026, 1, 1, 11, 0)),
    (3, "plum", Decimal("0.75"), 20, datetime.datetime(2026, 1, 2, 9, 30)),
]
ITEMS_SQL = "SELECT id, name, price, qty, added FROM items ORDER BY id"

HOST = os.environ.get("PGHOST", "127.0.0.1")
PORT = int(os.environ.get("PGPORT", "5432"))
USER = os.environ.get("PGUSER", "client")
PASSWORD = os.environ.get("PGPASSWORD", "")
DBNAME = os.environ.get("PGDATABASE", "fvsql")
SSLMODE = os.environ.get("PGSSLMODE", "require")

CONNECT_TIMEOUT = 10  # seconds
STATEMENT_TIMEOUT_MS = 20000
# The whole program is bounded: past this, the watchdog fails it and exits.
PROGRAM_DEADLINE = 50  # seconds


def conninfo(**extra):
    """A libpq keyword/value connection string from the environment."""
    params = dict(host=HOST, port=PORT, user=USER, password=PASSWORD, dbname=DBNAME,
                  sslmode=SSLMODE, connect_timeout=CONNECT_TIMEOUT,
                  options="-c statement_timeout=%d" % STATEMENT_TIMEOUT_MS)
    params.update(extra)
    return " ".join("%s='%s'" % (k, str(v).replace("\\", "\\\\").replace("'", "\\'"))
                    for k, v in params.items())


def url(dialect):
    """A SQLAlchemy URL, e.g. url("postgresql+psycopg")."""
    from sqlalchemy.engine import URL
    return URL.create(dialect, username=USER, password=PASSWORD, host=HOST, port=PORT, database=DBNAME,
                      query={"sslmode": SSLMODE, "connect_timeout": str(CONNECT_TIMEOUT),
                             "options": "-c statement_timeout=%d" % STATEMENT_TIMEOUT_MS})


_failed = 0
_ran = 0
_lock = threading.Lock()


def _line(s):
    with _lock:
        sys.stdout.write(s + "\n")
        sys.stdout.flush()


def _reason(e):
    sqlstate = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
    orig = getattr(e, "orig", None)  # SQLAlchemy wraps the driver's error
    if not sqlstate and orig is not None:
        sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    msg = str(e).strip() or repr(e)
    if isinstance(e, AssertionError):
        r = msg
    else:
        r = "%s%s: %s" % (type(e).__name__, " [%s]" % sqlstate if sqlstate else "", msg)
    r = " | ".join(part.strip() for part in r.splitlines() if part.strip())
    return r[:600]


def _record(name, err):
    global _failed, _ran
    _ran += 1
    if err is None:
        _line("ok " + name)
        return True
    _failed += 1
    _line("FAIL %s: %s" % (name, _reason(err)))
    sys.stderr.write("--- %s\n%s\n" % (name, "".join(traceback.format_exception(err))))
    sys.stderr.flush()
    return False


def check(name, fn=None):
    """Runs fn() as the check name; returns whether it passed.

    As a decorator (@check("name")) it runs the function at once.
    """
    if fn is None:
        return lambda f: check(name, f)
    try:
        fn()
    except BaseException as e:  # noqa: BLE001 - every failure is the check's
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return _record(name, e)
    return _record(name, None)


async def acheck(name, fn):
    """Awaits fn() as the check name; returns whether it passed."""
    try:
        await fn()
    except asyncio.CancelledError:
        raise
    except BaseException as e:  # noqa: BLE001
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return _record(name, e)
    return _record(name, None)


def fail(name, reason):
    """Records name as failed without running it (a check whose setup failed)."""
    _record(name, AssertionError(reason))


def eq(got, want, what="value"):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def done():
    if _ran == 0:
        _line("FAIL checks: no check ran")
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: no driver's atexit or finalizer may hang the program or print.
    os._exit(1 if _failed else 0)


def _watchdog():
    _line("FAIL deadline: the program did not finish in %ds" % PROGRAM_DEADLINE)
    sys.stderr.write("watchdog: stack of every thread:\n")
    for tid, frame in sys._current_frames().items():
        sys.stderr.write("thread %s:\n%s" % (tid, "".join(traceback.format_stack(frame))))
    sys.stderr.flush()
    os._exit(2)


_timer = threading.Timer(PROGRAM_DEADLINE, _watchdog)
_timer.daemon = True
_timer.start()
