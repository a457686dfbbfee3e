"""Connections to the PostgreSQL store: one psycopg 3 pool per process, and the store's SQL dialect bridge.

The SQLite store's reads (indexer/store/sqlite/reads.py) are plain SQL with `?` placeholders; the PostgreSQL store
runs the same statements (one copy of each query) through `pg_sql`, which turns `?` into psycopg's `%s` and
doubles a literal `%`. Statements that differ between the two dialects (GLOB, FTS5, upserts, date functions)
are the PostgreSQL store's own.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from oracle_indexer.store.errors import DatabaseUnavailable

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

POOL_MIN = 1
POOL_MAX = 16  # a server's request threads and its maintenance worker; PostgreSQL's default allows 100 in all
CONNECT_TIMEOUT = 5.0  # seconds to wait for the server to answer a new connection
# Every pooled session's settings: the vector leg's search breadth over the HNSW index and, when more rows are asked
# than that or a filter drops some, iterative index scans that go on until enough rows pass (pgvector 0.8). A base of
# up to EXACT_SCAN_MAX sections is ranked exactly instead (indexer/store/pg/vectors.py), as the SQLite store ranks its
# own small bases (indexer/store/sqlite/exact.py): ef_search then only matters for larger bases, where 1000
# (pgvector's largest) cost ~125 ms a search at 100,000 sections (BENCHMARKS.md). Twice the usual pool of 100: on
# 100,000 random unit vectors (the scale benchmark's, no clusters: HNSW's worst case) at load ~17, 1000 / 400 / 200
# took 401 / 166 / 90 ms p50 (an exact scan 196 ms), recall@100 0.66 / 0.49 / 0.40. Set once per connection.
EF_SEARCH = 200
SESSION_SETTINGS = {"hnsw.ef_search": str(EF_SEARCH), "hnsw.iterative_scan": "strict_order"}
POOL_WAIT = 30.0  # seconds a request waits for a free connection when all are busy (32 clients on 2 cores)
# An outage: a request waiting for a connection asks the server directly every WAIT_SLICE seconds (PROBE_TIMEOUT at
# most, libpq's smallest connect_timeout); one that cannot connect is answered "cannot be reached" at once instead
# of after POOL_WAIT. While the store is known down, each request probes at most once per DOWN_RECHECK seconds
# (shared by all threads) and fails at once otherwise.
WAIT_SLICE = 1.0
PROBE_TIMEOUT = 2
DOWN_RECHECK = 1.0
CLOSE_WAIT = 1.0  # seconds closing the pool waits for its background workers (a reconnect in an outage)
LOST_STATES = ("08", "57P01", "57P02", "57P03")  # SQLSTATE of a connection lost or refused (class 08, shutdowns)
# How long a read fetched ahead (Database.stash) may wait for the call that uses it: the reads of one search come
# within milliseconds of each other; a stash older than this, or made before any write of this process, is
# dropped and the read runs again (see Database.stash).
STASH_SECONDS = 1.0


def check_url(url: str) -> str:
    """`url` if it names a PostgreSQL database; a DatabaseUnavailable that says what a good one looks like
    otherwise (a typo used to surface as a psycopg parse error naming no variable)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgresql", "postgres"):
        raise DatabaseUnavailable(
            f"ORACLE_DATABASE_URL={_safe(url)!r} is not a PostgreSQL URL: use"
            " postgresql://USER:PASSWORD@HOST:5432/DATABASE (or unset it to keep the embedded SQLite store)")
    return url


def _safe(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parsed = urlparse(url)
    if parsed.password:
        return url.replace(f":{parsed.password}@", ":***@", 1)
    return url


@lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """A statement written for sqlite3 (`?` placeholders) as psycopg wants it (`%s`; a literal `%` doubled).
    `?` inside a quoted literal is left alone."""
    out: list[str] = []
    quote: str | None = None
    for char in sql:
        if quote:
            if char == quote:
                quote = None
            out.append("%%" if char == "%" else char)
            continue
        if char in ("'", '"'):
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        else:
            out.append(char)
    return "".join(out)


def _imports():
    try:
        import psycopg
        from psycopg_pool import ConnectionPool
    except ImportError as exc:  # pragma: no cover - the test extra installs both
        from oracle_indexer.installed import install_extra

        raise DatabaseUnavailable(
            f"ORACLE_DATABASE_URL is set but psycopg is not installed: {install_extra('postgres')}"
            " (adds psycopg[binary] and psycopg-pool to this Oracle), or unset ORACLE_DATABASE_URL") from exc
    return psycopg, ConnectionPool


class Database:
    """One pool of connections to one PostgreSQL database, shared by the store, its vectors and its logs.

    Every call takes a connection for one statement or one transaction and gives it back: nothing holds a
    snapshot between calls, so a write committed by another engine is seen by the next read."""

    def __init__(self, url: str, *, min_size: int = POOL_MIN, max_size: int = POOL_MAX) -> None:
        self.url = check_url(url)
        psycopg, pool_class = _imports()
        self._psycopg = psycopg
        self._closed = False
        self._users = 0
        self._lock = threading.Lock()
        self.generation = 0  # bumped by every write of this process (transactions, and writing statements)
        self._stashes = threading.local()
        self._down: tuple[float, str] | None = None  # (since, why) while the server cannot be reached
        self._probed = 0.0  # time.monotonic() of the last probe
        self._probe_lock = threading.Lock()
        try:  # one plain connection first: its error names the cause (a pool's says only "incomplete")
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT)).close()
        except Exception as exc:
            raise DatabaseUnavailable(
                f"cannot connect to the PostgreSQL store at {_safe(url)} (ORACLE_DATABASE_URL): {_why(exc)}."
                " Is the server running and the URL right (user, password, host, port, database)?") from exc
        try:
            self.pool: ConnectionPool = pool_class(
                url, min_size=min_size, max_size=max_size, timeout=POOL_WAIT, open=False,
                kwargs={"autocommit": True, "connect_timeout": int(CONNECT_TIMEOUT)}, configure=_configure,
                name="oracle",
            )
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT)
        except Exception as exc:
            raise DatabaseUnavailable(
                f"cannot connect to the PostgreSQL store at {_safe(url)} (ORACLE_DATABASE_URL): {_why(exc)}."
                " Is the server running and the URL right (user, password, host, port, database)?") from exc

    def retain(self) -> "Database":
        """One more owner (store, vectors, logs): the pool closes when the last one lets go."""
        with self._lock:
            self._users += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.pool.close(timeout=CLOSE_WAIT)  # in an outage a worker may be reconnecting: never wait it out

    # -- the server's state: an outage is said at once ------------------------------------------------
    def probe(self) -> str | None:
        """None when a new connection to the server can be made now, else why not. Asked at most once per
        DOWN_RECHECK seconds while the server is down (the answer is shared); a server that comes back has the
        pool's stale connections dropped."""
        with self._probe_lock:
            now = time.monotonic()
            if self._down is not None and now - self._probed < DOWN_RECHECK:
                return self._down[1]
            self._probed = now
            try:
                self._psycopg.connect(self.url, connect_timeout=PROBE_TIMEOUT).close()
            except Exception as exc:  # noqa: BLE001 - any failure to connect is the answer
                self._mark_down(_why(exc))
                return self._down[1] if self._down else _why(exc)
            was_down, self._down = self._down is not None, None
        if was_down:
            with contextlib.suppress(Exception):
                self.pool.check()  # connections from before the outage are broken: replaced before they are used
        return None

    def _mark_down(self, why: str) -> None:
        since = self._down[0] if self._down is not None else time.time()
        self._down = (since, why)
        self._probed = time.monotonic()

    def state(self) -> dict:
        """What /health says of the database: reachable or not, since when, and why (asks the server now, unless
        it was found down less than DOWN_RECHECK seconds ago)."""
        why = self.probe()
        if why is None:
            return {"backend": "postgresql", "reachable": True, "since": None, "error": None}
        since = self._down[0] if self._down is not None else time.time()
        return {"backend": "postgresql", "reachable": False, "since": _iso(since),
                "error": str(self._unreachable(why))}

    def _unreachable(self, why: str) -> DatabaseUnavailable:
        since = f" since {_iso(self._down[0])}" if self._down is not None else ""
        return DatabaseUnavailable(
            f"the PostgreSQL store at {_safe(self.url)} (ORACLE_DATABASE_URL) cannot be reached{since}: {why}."
            " Nothing was read or written; Oracle reconnects by itself once the database is back: check that the"
            " server is running and reachable, then retry.")

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A connection in autocommit mode for one or more statements."""
        if self._closed:
            from oracle_indexer.store.errors import StoreClosed

            raise StoreClosed("the PostgreSQL store is closed: this process is shutting down")
        if self._down is not None:  # known down: ask the server (at most once a second in all), else fail at once
            why = self.probe()
            if why is not None:
                raise self._unreachable(why)
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + POOL_WAIT
        with contextlib.ExitStack() as stack:
            while True:
                try:
                    conn = stack.enter_context(self.pool.connection(
                        timeout=max(0.01, min(WAIT_SLICE, deadline - time.monotonic()))))
                    break
                except PoolTimeout:
                    why = self.probe()  # no connection yet: a busy pool, or a server that cannot be reached?
                    if why is not None:
                        raise self._unreachable(why) from None
                    if time.monotonic() >= deadline:
                        raise
            try:
                yield conn
            except self._psycopg.OperationalError as exc:
                if not (conn.broken or conn.closed or (exc.sqlstate or "").startswith(LOST_STATES)):
                    raise  # a statement's own failure (a timeout, a lock): not the connection's
                self._mark_down(_why(exc))
                raise self._unreachable(_why(exc)) from exc

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        """A connection inside one transaction: committed when the block ends, rolled back if it raises."""
        self.wrote()
        try:
            with self.connection() as conn:
                with conn.transaction():
                    yield conn
        finally:
            self.wrote()

    # -- reads fetched ahead: fewer round trips per search --------------------------------------------
    def wrote(self) -> None:
        """This process writes (or wrote): every read fetched ahead on any thread is stale from now on."""
        with self._lock:
            self.generation += 1

    def stash(self, key: str, match: object, value: object) -> None:
        """Keep `value`, read ahead on this thread in the round trip of another read, for the next `take(key,
        match)` on this thread. A search reads in a known order (server/search.py: the candidates' facts, then
        their notes' supersessions; the page's sections, then their notes' dates); what the next call will ask
        can ride along with the current one instead of costing a round trip of its own."""
        stashes = getattr(self._stashes, "entries", None)
        if stashes is None:
            stashes = self._stashes.entries = {}
        stashes[key] = (self.generation, time.monotonic(), match, value)

    def take(self, key: str, match: object) -> tuple[bool, Any]:  # Any: what the caller's own read stashed
        """(True, value) of the stash under `key` if it was read for exactly `match`, on this thread, less than
        STASH_SECONDS ago, and this process has written nothing since; (False, None) otherwise (the caller reads).
        A stash is used once. Another engine's write in that second is seen by the next search, as it would be
        by a read that ran a moment earlier."""
        stashes = getattr(self._stashes, "entries", None)
        entry = stashes.pop(key, None) if stashes else None
        if entry is None:
            return False, None
        generation, at, wanted, value = entry
        if generation != self.generation or time.monotonic() - at > STASH_SECONDS or wanted != match:
            return False, None
        return True, value

    def fetch_many(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple]]:
        """Every row of each statement (PostgreSQL's dialect), sent together in one round trip (psycopg's
        pipeline mode) on one connection."""
        with self.connection() as conn:
            if len(statements) == 1:
                sql, args = statements[0]
                return [conn.execute(sql, list(args)).fetchall()]
            with conn.pipeline():
                cursors = [conn.execute(sql, list(args)) for sql, args in statements]
            return [cur.fetchall() for cur in cursors]

    def fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """Every row of one read, written in sqlite3's dialect (see `pg_sql`)."""
        with self.connection() as conn:
            return conn.execute(pg_sql(sql), list(args)).fetchall()

    def fetch_dicts(self, sql: str, args: Sequence[Any] = ()) -> list[dict]:
        with self.connection() as conn:
            cur = conn.execute(pg_sql(sql), list(args))
            names = [d.name for d in cur.description or ()]
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """One statement in PostgreSQL's own dialect (`%s`), its rows (none for a statement without)."""
        if sql.split(None, 1)[0].upper() not in ("SELECT", "WITH"):  # the store's reads (no CTE of it writes)
            self.wrote()
        with self.connection() as conn:
            cur = conn.execute(sql, list(args))
            return cur.fetchall() if cur.description else []


def _configure(conn: psycopg.Connection) -> None:
    """A new pooled connection's session settings (SESSION_SETTINGS)."""
    for name, value in SESSION_SETTINGS.items():
        conn.execute("SELECT set_config(%s, %s, false)", [name, value])


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _why(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


_databases: dict[str, Database] = {}
_databases_lock = threading.Lock()


def database(url: str) -> Database:
    """The process's pool for `url` (the store, the vector leg and the logs share it), retained once for the
    caller, who must `release()` it."""
    with _databases_lock:
        db = _databases.get(url)
        if db is None or db.closed:
            db = _databases[url] = Database(url)
        return db.retain()
