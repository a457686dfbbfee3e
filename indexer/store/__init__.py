"""The SQLite side of the index: notes (files), their sections (`documents`), two FTS5 tables, the embedding
cache, skipped files, relations. The store owns every SQL statement; services get typed rows.

- schema.py: tables, connections, migrations;   - writes.py: one transaction per note, on one writer;
- reads.py: typed reads for services;            - keyword.py: the keyword leg of search and filters;
- rows.py: the frozen row types and the batching helper; - logs.py: the usage logs (their own file).

Connections: one writer connection, used under a lock with BEGIN IMMEDIATE (one writer across processes,
too), and one read connection per thread. WAL lets the readers run side by side with each other and with
the writer; one shared connection serialised every request of a server on one SQLite mutex (throughput fell
from 51 to 29 req/s between 1 and 32 clients) and let one thread's open statement hold the snapshot
another thread's BEGIN needed.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from indexer.store.keyword import (
    BM25_WEIGHTS,
    TIE_SLACK,
    Filters,
    count_embedded,
    filtered_ids,
    keyword_matching_ids,
    keyword_search,
    terms_matched,
)
from indexer.store.reads import Pattern, Reads
from indexer.store.rows import FileState, IndexedNote, RelationRow, Section, SectionFacts, batched
from indexer.store.schema import BUSY_TIMEOUT_MS, SCHEMA_VERSION, StoreClosed, connect, connect_reader, create_or_migrate, set_aside
from indexer.store.writes import Writes, body_hash

__all__ = [
    "BM25_WEIGHTS", "BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "TIE_SLACK", "FileState", "Filters", "IndexedNote", "Pattern",
    "RelationRow", "Section", "SectionFacts", "Store", "StoreClosed", "batched", "body_hash", "count_embedded",
    "filtered_ids", "keyword_matching_ids", "keyword_search", "set_aside", "terms_matched",
]

CLOSE_WAIT_SECONDS = 5.0  # how long close() lets reads in flight finish before closing their connections


class Store(Reads, Writes):
    """One SQLite database per knowledge root. Cheap to open; safe to open in several processes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._write_lock = threading.RLock()  # one writer connection, shared by this process's threads
        self._gate = threading.Condition()  # counts reads in flight, so close() can wait for them
        self._active_reads = 0
        self._closed = False
        self._local = threading.local()
        # Every thread's reader, to close at close(); a dead thread's reader is closed when the next one opens.
        self._readers: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self.recovered_from: Path | None = None
        try:
            self._connect()
        except sqlite3.DatabaseError as exc:
            # The index is derived data: move the broken file aside and rebuild from the markdown.
            self.recovered_from = set_aside(path, exc)
            self._connect()

    def _connect(self) -> None:
        conn = connect(self.path)
        try:
            fresh, reparse = create_or_migrate(conn)
        except BaseException:
            conn.close()
            raise
        self.conn = conn  # the writer (tests read through it too; services never touch it)
        if reparse:
            # Parsing gained fields: forget every file's stat and hash so the next sync re-parses it.
            with self.transaction() as c:
                c.execute("UPDATE files SET mtime_ns = 0, file_hash = ''")
        self.set_meta("schema_version", SCHEMA_VERSION)
        if fresh:
            # A new (or rebuilt) index knows nothing of the vectors already stored: compare them first.
            self.set_meta("vectors_dirty", "1")

    def close(self) -> None:
        """Refuse new reads and writes, let the ones in flight finish (up to CLOSE_WAIT_SECONDS), then close
        every connection. Idempotent."""
        with self._gate:
            if self._closed:
                return
            self._closed = True
            self._gate.wait_for(lambda: self._active_reads == 0, timeout=CLOSE_WAIT_SECONDS)
            readers, self._readers = self._readers, []
        for _, reader in readers:
            reader.close()
        with self._write_lock:  # a transaction in progress ends first
            self.conn.close()

    # -- reading ------------------------------------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect_reader(self.path)
            self._local.conn = conn
            with self._gate:
                dead = [c for t, c in self._readers if not t.is_alive()]
                self._readers = [(t, c) for t, c in self._readers if t.is_alive()]
                self._readers.append((threading.current_thread(), conn))
            for c in dead:  # their threads are gone, and with them the only code that used them
                c.close()
        return conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's read connection, counted as in flight until the block ends."""
        with self._gate:
            if self._closed:
                raise StoreClosed("the index is closed: this process is shutting down")
            self._active_reads += 1
        try:
            yield self._reader()
        finally:
            with self._gate:
                self._active_reads -= 1
                if not self._active_reads:
                    self._gate.notify_all()

    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]:
        """Every row of one read on this thread's connection. Fetching all rows ends the statement, so the
        connection never keeps an old snapshot open between calls."""
        with self.reading() as conn:
            return conn.execute(sql, list(args)).fetchall()

    def fetch_dicts(self, sql: str, args: Sequence = ()) -> list[dict]:
        with self.reading() as conn:
            cursor = conn.execute(sql, list(args))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    # -- writing ------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: take the write lock up front so two writers queue instead of deadlocking."""
        with self._write_lock:
            if self._closed:
                raise StoreClosed("the index is closed: this process is shutting down")
            self._begin()
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def _begin(self) -> None:
        """BEGIN IMMEDIATE, waiting out SQLITE_BUSY_SNAPSHOT as the busy timeout waits out other writers.

        If this connection still holds a read snapshot (a test reading through `conn`) and another process
        has committed since, SQLite refuses BEGIN IMMEDIATE at once ("database is locked") without calling
        the busy handler. The read ends in a moment, so retry until the busy timeout (two servers and a
        watcher met this every few hundred learns in tests/test_paths.py).
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
