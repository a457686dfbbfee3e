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
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from oracle_indexer.safe_write import private_dir
from oracle_indexer.store.errors import StoreClosed
from oracle_indexer.store.sqlite.keyword import (
    BM25_WEIGHTS,
    MERGED_TABLES,
    TIE_SLACK,
    SectionCounts,
    count_embedded,
    filtered_ids,
    keyword_matching_ids,
    keyword_search,
    merge_segments,
    note_keyword_scores,
    section_counts,
    segment_count,
    terms_matched,
)
from oracle_indexer.store.sqlite.reads import Reads
from oracle_indexer.store.sqlite.schema import (
    BUSY_TIMEOUT_MS,
    SCHEMA_VERSION,
    ThreadReaders,
    connect,
    connect_reader,
    create_or_migrate,
    set_aside,
)
from oracle_indexer.store.sqlite.writes import Writes, body_hash

# The SQLite backend's own names; the neutral ones (rows, filters, errors) come from indexer/store/rows.py,
# types.py and errors.py, whichever backend answers.
__all__ = [
    "BM25_WEIGHTS", "BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "TIE_SLACK", "Store", "body_hash", "count_embedded",
    "filtered_ids", "keyword_matching_ids", "keyword_search", "note_keyword_scores", "section_counts", "set_aside",
    "terms_matched",
]

class Store(Reads, Writes):
    """One SQLite database per knowledge root. Cheap to open; safe to open in several processes.

    `check=False` leaves the integrity check (`PRAGMA quick_check`, which reads the whole file: ~0.1 s on
    nat-brain, ~0.7 s at 100k sections) to a later `verify()`: a server opens its index before it answers the
    MCP handshake, and its maintenance worker verifies once the handshake is done. A file that is not a
    database at all still fails at open, and is moved aside then.
    """

    segmented_tables = MERGED_TABLES  # the word tables the maintenance worker merges (SegmentedIndex)

    def __init__(self, path: Path, *, check: bool = True, model_id: str | None = None) -> None:
        private_dir(path.parent)
        self.path = path
        # the embedding model whose id enters each section's embed key (indexer/models/embed.py text_key); the
        # Indexer sets it to its embedder's and re-keys an index built with another (Indexer.adopt_model)
        from oracle_indexer.models.embed import MODEL_ID

        self.model_id = model_id or MODEL_ID
        self._write_lock = threading.RLock()  # one writer connection, shared by this process's threads
        self._readers = ThreadReaders(path)
        self.section_count_cache = SectionCounts()  # query expansion's document frequencies (keyword.py)
        self.recovered_from: Path | None = None
        self.verified = False  # quick_check passed (or the file was made new) in this process
        existed = path.exists()
        try:
            if check:
                self._check()
            self._connect()
        except sqlite3.DatabaseError as exc:
            # The index is derived data: move the broken file aside and rebuild from the markdown.
            self.recovered_from = set_aside(path, exc)
            self._connect()
        self.verified = check or not existed or self.recovered_from is not None

    def _check(self) -> None:
        """Raise sqlite3.DatabaseError unless `PRAGMA quick_check` finds the file sound (a missing file is)."""
        if not self.path.exists():
            return
        conn = connect_reader(self.path)
        try:
            result = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
        if result != "ok":
            raise sqlite3.DatabaseError(f"integrity check failed: {result}")

    def verify(self) -> bool:
        """The integrity check a `Store(check=False)` left out; a damaged index is moved aside and a new, empty
        one takes its place (the next sync rebuilds it from the markdown). Returns True when that happened."""
        if self.verified:
            return False
        try:
            self._check()
        except sqlite3.DatabaseError as exc:
            with self._write_lock:  # no write in flight; reads in flight finish first (ThreadReaders.close)
                self._readers.close()
                self.conn.close()
                self.recovered_from = set_aside(self.path, exc)
                self._readers = ThreadReaders(self.path)
                self.section_count_cache = SectionCounts()  # a new file: its states say nothing of the old one's
                self._connect()
            self.verified = True
            return True
        self.verified = True
        return False

    def _connect(self) -> None:
        conn = connect(self.path)
        try:
            fresh, reparse = create_or_migrate(conn)
        except BaseException:
            conn.close()
            raise
        self.conn = conn  # the writer (tests read through it too; services never touch it)
        if reparse:
            self.forget_file_states()  # parsing gained fields: the next sync re-parses every note
        self.set_meta("schema_version", SCHEMA_VERSION)
        if fresh:
            # A new (or rebuilt) index knows nothing of the vectors already stored: compare them first.
            self.set_meta("vectors_dirty", "1")

    def close(self) -> None:
        """Refuse new reads and writes, let the ones in flight finish, then close every connection.
        Idempotent."""
        if self._readers.closed:
            return
        self._readers.close()
        with self._write_lock:  # a transaction in progress ends first
            self.conn.close()

    dialect = "sqlite"
    team = False

    # -- the keyword leg: keyword.py's functions as methods, so a service calls the store it has (the
    # PostgreSQL store has its own, indexer/store/pg/keyword.py) --------------------------------------
    keyword_search = keyword_search
    keyword_matching_ids = keyword_matching_ids
    terms_matched = terms_matched
    note_keyword_scores = note_keyword_scores
    filtered_ids = filtered_ids
    count_embedded = count_embedded
    section_counts = section_counts
    # the maintenance worker's (indexer/worker/maintenance.py): the PostgreSQL store has no segments to merge
    segment_count = segment_count
    merge_segments = merge_segments

    # -- reading ------------------------------------------------------------------------------------
    def reading(self) -> AbstractContextManager[sqlite3.Connection]:
        """This thread's read connection, counted as in flight until the block ends."""
        return self._readers.reading()

    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]:
        """Every row of one read on this thread's connection (see ThreadReaders)."""
        return self._readers.fetch(sql, args)

    def write_state(self) -> int:
        """A number that changes whenever a commit lands in the index, from any connection of any process, as
        seen from this thread's reader (`PRAGMA data_version`): equal on one thread means nothing was written
        between the two reads. The maintenance worker's idle look for pending vectors is skipped while it holds."""
        return int(self.fetch("PRAGMA data_version")[0][0])

    def fetch_dicts(self, sql: str, args: Sequence = ()) -> list[dict]:
        return self._readers.fetch_dicts(sql, args)

    # -- writing ------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: take the write lock up front so two writers queue instead of deadlocking."""
        with self._write_lock:
            if self._readers.closed:
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
