"""Append-only usage logs (the store's second file; services reach it as `oracle.logs`): searches, consultations,
learnings and which documents went to whom.

They live in their own SQLite file (`logs.db` beside the index) because the index can always be rebuilt
from the markdown and the logs cannot: a corrupt or deleted index never takes the logs with it.
Rows are only ever inserted; the dashboard and stats read them back through the functions below.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from oracle_indexer.safe_write import private_dir, private_file
from oracle_indexer.store.errors import StoreClosed
from oracle_indexer.store.rows import batched, marks
from oracle_indexer.store.sqlite.schema import Connection, ThreadReaders, opened, set_aside

BUSY_TIMEOUT_MS = 10_000
MAX_TEXT = 20_000  # a logged field longer than this is cut; the log is a record, not an archive

_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_log (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, tool TEXT, query TEXT, params TEXT,
    mode TEXT, total INTEGER, results TEXT, latency_ms REAL, warnings TEXT
);
CREATE TABLE IF NOT EXISTS consult_log (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, decision TEXT, context TEXT, found TEXT,
    guidance TEXT, tokens INTEGER, latency_ms REAL, working_set_id TEXT, working_set TEXT
);
CREATE TABLE IF NOT EXISTS learn_log (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, file TEXT, title TEXT, concepts TEXT,
    project TEXT, source TEXT, chunk_ids TEXT, embedded INTEGER
);
CREATE TABLE IF NOT EXISTS document_access (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, tool TEXT, doc_id TEXT, rank INTEGER
);
CREATE TABLE IF NOT EXISTS feedback_log (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, doc_id TEXT NOT NULL, verdict TEXT NOT NULL,
    note TEXT, content_hash TEXT
);
CREATE INDEX IF NOT EXISTS feedback_log_doc ON feedback_log(doc_id);
-- a client's verdicts this hour (server/services/capabilities/feedback.py)
CREATE INDEX IF NOT EXISTS feedback_log_at ON feedback_log(at);
CREATE TABLE IF NOT EXISTS supersede_log (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, old_ref TEXT NOT NULL, new_ref TEXT,
    reason TEXT, action TEXT NOT NULL
);
-- edits and archives of existing notes (server/services/capabilities/edit.py): who changed which note from which
-- hash to which
CREATE TABLE IF NOT EXISTS edit_log (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT, author TEXT, action TEXT NOT NULL, file TEXT NOT NULL,
    old_hash TEXT, new_hash TEXT, moved_to TEXT, reason TEXT
);
CREATE TRIGGER IF NOT EXISTS edit_log_append_only BEFORE UPDATE ON edit_log
    BEGIN SELECT RAISE(ABORT, 'edit_log is append-only'); END;
-- learn's idempotency keys: which learning a key saved (file NULL while the learn that claimed it runs)
CREATE TABLE IF NOT EXISTS learn_keys (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, file TEXT, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS document_access_doc ON document_access(doc_id);
CREATE INDEX IF NOT EXISTS search_log_at ON search_log(at);
CREATE INDEX IF NOT EXISTS consult_log_at ON consult_log(at);
CREATE TRIGGER IF NOT EXISTS search_log_append_only BEFORE UPDATE ON search_log
    BEGIN SELECT RAISE(ABORT, 'search_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS consult_log_append_only BEFORE UPDATE ON consult_log
    BEGIN SELECT RAISE(ABORT, 'consult_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS learn_log_append_only BEFORE UPDATE ON learn_log
    BEGIN SELECT RAISE(ABORT, 'learn_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS document_access_append_only BEFORE UPDATE ON document_access
    BEGIN SELECT RAISE(ABORT, 'document_access is append-only'); END;
CREATE TRIGGER IF NOT EXISTS feedback_log_append_only BEFORE UPDATE ON feedback_log
    BEGIN SELECT RAISE(ABORT, 'feedback_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS supersede_log_append_only BEFORE UPDATE ON supersede_log
    BEGIN SELECT RAISE(ABORT, 'supersede_log is append-only'); END;
"""

LOG_TABLES = ("search_log", "consult_log", "learn_log", "document_access", "feedback_log", "supersede_log",
              "edit_log")
AUTHORED_TABLES = ("learn_log", "feedback_log", "supersede_log")  # `author`: the named token (team mode)
# Usage records, pruned by age and count. Verdicts and supersessions are not: search ranks by them.
PRUNED_TABLES = ("search_log", "consult_log", "learn_log", "document_access")
PRUNE_EVERY_SECONDS = 3600.0
# A learn that claimed an idempotency key and has not settled it after this long died (a killed process):
# its claim lapses, and a retry with the key writes the learning.
KEY_CLAIM_SECONDS = 120.0


def _cut(text: str | None) -> str | None:
    return None if text is None else text[:MAX_TEXT]


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


MAX_QUEUED = 500  # batches queued before the caller writes them itself (an Oracle nobody started)


class Logs:
    """Searches and consultations are queued and written in batches, so a search never waits for a log
    transaction. The queue is written by `tick()`, which a started Oracle's maintenance worker calls every
    FLUSH_INTERVAL (indexer/worker/maintenance.py; this class runs no thread of its own), by `close()`, and by
    every read here, so this process reads its own writes. An Oracle that was never started (a one-shot
    CLI command, a test) writes its queue at close, on a read, or when MAX_QUEUED batches wait. A crash
    loses what is queued: at most FLUSH_INTERVAL plus the worker's current step. Learnings, verdicts and
    supersessions are rare and written at once."""

    def __init__(self, path: Path, retention_days: int = 365, max_rows: int = 1_000_000, *,
                 prune: bool = True) -> None:
        """`prune=False` leaves retention to the first write or maintenance tick: at 1M rows a log it scans
        (document_access, learn_log) costs ~0.1 s, which a server must not spend before its handshake."""
        private_dir(path.parent)
        self.path: Path | None = path  # None in PgLogs: its logs are tables of the store
        self.retention_days = retention_days
        self.max_rows = max_rows
        self._pruned_at = 0.0
        self._lock = threading.Lock()
        self._queue: list[tuple[str, list[tuple]]] = []
        self._queue_lock = threading.Lock()
        self._conn_closed = False
        self._supersessions: tuple[int | None, dict] | None = None
        self.dropped = 0  # queued rows this process could not write and gave up (see flush)
        try:
            self.conn = self._connect(path)
        except sqlite3.DatabaseError as exc:
            # Logs that cannot be read are kept on disk for a person to inspect; new ones start afresh.
            set_aside(path, exc)
            self.conn = self._connect(path)
        self._readers = ThreadReaders(path)  # reads: one connection per thread (every search reads here)
        if prune:
            self._maybe_prune()

    def _connect(self, path: Path) -> sqlite3.Connection:
        private_file(path)  # logged queries and decisions: the owner's alone
        conn = opened(sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                      check_same_thread=False, factory=Connection))
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(_SCHEMA)
            if "cold" not in {r[1] for r in conn.execute("PRAGMA table_info(search_log)")}:
                # 1: the search loaded the embedding model first (a process's first search), 0: warm,
                # NULL: logged before this column (counted as warm).
                conn.execute("ALTER TABLE search_log ADD COLUMN cold INTEGER")
            columns = {row[1] for row in conn.execute("PRAGMA table_info(consult_log)")}
            for column in ("working_set_id", "working_set"):  # logs from before reproducible consults (issue 28)
                if column not in columns:
                    conn.execute(f"ALTER TABLE consult_log ADD COLUMN {column} TEXT")
            conn.execute("CREATE INDEX IF NOT EXISTS consult_log_working_set ON consult_log(working_set_id)")
            for table in AUTHORED_TABLES:  # logs from before team mode (issue 25)
                if "author" not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN author TEXT")
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        """Write the queue, then close. The maintenance worker must be stopped first (Oracle.close). A queue
        that cannot be written (a full disk) is given up with one line on stderr: a shutdown must not fail,
        nor print a traceback, for usage records."""
        try:
            self.flush()
        except sqlite3.Error as exc:
            lost = sum(len(rows) for _, rows in self._queue)
            self._queue = []
            print(f"oracle: {lost} usage log rows could not be written ({exc}); they are lost", file=sys.stderr)
        self._readers.close()
        with self._lock:  # a write in progress ends first; later ones raise StoreClosed
            self._conn_closed = True
            self.conn.close()

    def _enqueue(self, sql: str, rows: list[tuple]) -> None:
        if not rows:
            return
        with self._queue_lock:
            self._queue.append((sql, rows))
            backlog = len(self._queue) >= MAX_QUEUED
        if backlog:  # nobody ticks (an Oracle that was never started): write them here, once per MAX_QUEUED
            self.tick()

    def queued(self) -> bool:
        """Rows wait to be written (the worker's long jobs make way for the next tick)."""
        return bool(self._queue)

    def tick(self) -> None:
        """The logs' share of maintenance: write the queue, and apply retention at most once an hour.
        Never raises for a locked or full disk: the rows stay queued for the next tick."""
        try:
            self.flush()
        except sqlite3.Error:
            pass
        self._maybe_prune()

    def _settle(self) -> None:
        """Before a read: write the queue so that the read counts it, if the disk lets us. A full or locked
        disk leaves the rows queued and the read answers from what is written: a read (stats, the dashboard)
        never fails because a write cannot be made now (issue 26: /api/stats was a 500 on a full disk)."""
        try:
            self.flush()
        except sqlite3.Error:
            pass

    def flush(self) -> None:
        """Write every queued row in one transaction. When the store refuses a row for what it holds (text
        with no UTF-8 form, a number out of range: not a locked or full disk, which `transient` tells apart),
        the batch is written row by row and each row that cannot be written is dropped and counted
        (`dropped`): put back on the queue it failed every later write, and stats, the dashboard's logs and
        every search or consult log after it failed until a restart (issue 39)."""
        with self._queue_lock:
            batch, self._queue = self._queue, []
        if not batch:
            return
        try:
            self._write(batch)
        except BaseException as exc:
            if self.transient(exc):
                with self._queue_lock:
                    self._queue = batch + self._queue
                raise
            self._write_each(batch)

    def _write_each(self, batch: list[tuple[str, list[tuple]]]) -> None:
        """Each row of `batch` in a transaction of its own; a row the store refuses is dropped and counted. A
        transient failure puts the rows not yet written back on the queue and raises."""
        dropped, reason = 0, ""
        for n, (sql, rows) in enumerate(batch):
            for m, row in enumerate(rows):
                try:
                    self._write([(sql, [row])])
                except BaseException as exc:
                    if self.transient(exc):
                        with self._queue_lock:
                            self._queue = [(sql, rows[m:]), *batch[n + 1:], *self._queue]
                        self._count_dropped(dropped, reason)
                        raise
                    dropped += 1
                    reason = f"{type(exc).__name__}: {exc}"
        self._count_dropped(dropped, reason)

    def _count_dropped(self, dropped: int, reason: str = "") -> None:
        if dropped:
            self.dropped += dropped
            print(f"oracle: {dropped} usage log row(s) could not be stored and were dropped ({reason[:200]});"
                  f" {self.dropped} dropped since start", file=sys.stderr)

    @staticmethod
    def transient(exc: BaseException) -> bool:
        """Whether a failed log write may succeed later as it is (a locked, busy or full disk, a shutdown, an
        interrupt), so its rows stay queued; anything else is about the rows themselves."""
        if isinstance(exc, (sqlite3.IntegrityError, sqlite3.DataError, sqlite3.ProgrammingError)):
            return False  # a value the table or the driver refuses: the row's own
        return isinstance(exc, (sqlite3.DatabaseError, StoreClosed)) or not isinstance(exc, Exception)

    def prune(self, now: float | None = None) -> dict[str, int]:
        """Delete usage records older than `retention_days` and beyond the newest `max_rows` of each usage
        log (0 disables either); rows deleted per table. Without this logs.db grew without limit."""
        now = time.time() if now is None else now
        deleted: dict[str, int] = {}
        self.flush()  # queued rows count too
        with self._lock:
            for table in PRUNED_TABLES:
                count = 0
                if self.retention_days:
                    count += self.conn.execute(f"DELETE FROM {table} WHERE at < ?",
                                               (now - self.retention_days * 86400,)).rowcount
                if self.max_rows:
                    count += self.conn.execute(
                        f"DELETE FROM {table} WHERE id <= (SELECT id FROM {table} ORDER BY id DESC LIMIT 1 OFFSET ?)",
                        (self.max_rows,)).rowcount
                deleted[table] = count
            if self.retention_days:  # a key is remembered as long as the learn log that records its learning
                deleted["learn_keys"] = self.conn.execute("DELETE FROM learn_keys WHERE at < ?",
                                                          (now - self.retention_days * 86400,)).rowcount
            self._pruned_at = time.monotonic()
        return deleted

    def _maybe_prune(self) -> None:
        """At start-up and then at most once an hour, from whichever write comes along."""
        if time.monotonic() - self._pruned_at >= PRUNE_EVERY_SECONDS or not self._pruned_at:
            try:
                self.prune()
            except sqlite3.OperationalError:  # busy beyond the timeout: the next chance will do
                pass

    def _insert(self, sql: str, rows: Sequence[tuple]) -> None:
        self._maybe_prune()
        self._write([(sql, rows)])

    def _write(self, batch: Sequence[tuple[str, Sequence[tuple]]]) -> None:
        """Every (statement, rows) of the batch in one immediate transaction, or none of them."""
        with self._lock:
            if self._conn_closed:
                raise StoreClosed("the logs are closed: this process is shutting down")
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, rows in batch:
                    self.conn.executemany(sql, rows)
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # SQLite rolls back by itself on SQLITE_FULL: a second ROLLBACK raised
                    self.conn.execute("ROLLBACK")
                raise

    # -- writes -----------------------------------------------------------------------------------
    def log_search(self, client: str, tool: str, query: str, params: dict, mode: str, total: int,
                   results: list[tuple[str, float]], latency_ms: float, warnings: list[str],
                   cold: bool = False) -> None:
        now = time.time()
        self._enqueue(
            "INSERT INTO search_log (at, client, tool, query, params, mode, total, results, latency_ms, warnings,"
            " cold) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(now, client, tool, _cut(query), _json(params), mode, total, _json(results), latency_ms,
              _json(warnings), int(cold))],
        )
        self._enqueue(*self._access_rows(client, tool, [doc_id for doc_id, _ in results], now))

    def log_consult(self, client: str, decision: str, context: str | None, found: list[dict], guidance: str,
                    tokens: int, latency_ms: float, working_set_id: str | None = None,
                    working_set: str | None = None) -> None:
        """`working_set` is the consult's canonical JSON (server/services/capabilities/working_set.py),
        `working_set_id` its SHA-256."""
        now = time.time()
        self._enqueue(
            "INSERT INTO consult_log (at, client, decision, context, found, guidance, tokens, latency_ms,"
            " working_set_id, working_set) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(now, client, _cut(decision), _cut(context), _json(found), _cut(guidance), tokens, latency_ms,
              working_set_id, working_set)],
        )
        self._enqueue(*self._access_rows(client, "consult", [f["id"] for f in found], now))

    def log_learn(self, client: str, file: str, title: str, concepts: list[str], project: str | None,
                  source: str | None, chunk_ids: list[str], embedded: bool, author: str | None = None) -> None:
        self._insert(
            "INSERT INTO learn_log (at, client, file, title, concepts, project, source, chunk_ids, embedded, author)"
            " VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(time.time(), client, file, _cut(title), _json(concepts), project, _cut(source), _json(chunk_ids),
              int(embedded), author)],
        )

    def log_edit(self, client: str, author: str | None, action: str, file: str, old_hash: str | None,
                 new_hash: str | None, moved_to: str | None = None, reason: str | None = None) -> None:
        """An edit or archive of an existing note (written at once: rare, and a record of who changed what)."""
        self._insert(
            "INSERT INTO edit_log (at, client, author, action, file, old_hash, new_hash, moved_to, reason)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            [(time.time(), client, author, action, file, old_hash, new_hash, moved_to, _cut(reason))],
        )

    def claim_learn_key(self, key: str, fingerprint: str, now: float | None = None) -> tuple[str, str | None]:
        """Claim an idempotency key for a learn, atomically across threads and processes.

        ("new", None): the caller holds the key and must `settle_learn_key` it; ("done", file): a learn with
        this key and the same request saved `file`; ("busy", None): one is running now; ("other", file): the
        key was used for a different learning. Written at once, not queued: a retry may come within ms.
        """
        now = time.time() if now is None else now
        with self._lock:
            if self._conn_closed:
                raise StoreClosed("the logs are closed: this process is shutting down")
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                row = self.conn.execute("SELECT fingerprint, file, at FROM learn_keys WHERE key = ?", (key,)).fetchone()
                if row is None or (row[1] is None and now - row[2] > KEY_CLAIM_SECONDS):
                    self.conn.execute("INSERT OR REPLACE INTO learn_keys (key, fingerprint, file, at)"
                                      " VALUES (?,?,NULL,?)", (key, fingerprint, now))
                    state: tuple[str, str | None] = ("new", None)
                elif row[0] != fingerprint:
                    state = ("other", row[1])
                else:
                    state = ("done", row[1]) if row[1] is not None else ("busy", None)
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # SQLite rolls back by itself on SQLITE_FULL: a second ROLLBACK raised
                    self.conn.execute("ROLLBACK")
                raise
        return state

    def settle_learn_key(self, key: str, file: str | None) -> None:
        """Record the learning a claimed key saved, or (file None: nothing was saved) release the claim."""
        if file is None:
            self._write([("DELETE FROM learn_keys WHERE key = ? AND file IS NULL", [(key,)])])
        else:
            self._write([("UPDATE learn_keys SET file = ?, at = ? WHERE key = ?", [(file, time.time(), key)])])

    @staticmethod
    def _access_rows(client: str, tool: str, doc_ids: Sequence[str], at: float) -> tuple[str, list[tuple]]:
        return (
            "INSERT INTO document_access (at, client, tool, doc_id, rank) VALUES (?,?,?,?,?)",
            [(at, client, tool, doc_id, rank) for rank, doc_id in enumerate(doc_ids, start=1)],
        )

    def log_access(self, client: str, tool: str, doc_ids: Sequence[str], at: float | None = None) -> None:
        if doc_ids:
            self._insert(*self._access_rows(client, tool, doc_ids, at or time.time()))

    def log_feedback(self, client: str, doc_id: str, verdict: str, note: str | None, content_hash: str | None,
                     author: str | None = None, keep: int = 0) -> int:
        """Append one verdict; return how many verdicts this document now has. `keep` > 0: the document keeps
        only its newest `keep` verdicts (the oldest go in the same transaction), so no section's log grows
        without bound however many clients judge it."""
        self._maybe_prune()
        batch: list[tuple[str, Sequence[tuple]]] = [(
            "INSERT INTO feedback_log (at, client, doc_id, verdict, note, content_hash, author) VALUES (?,?,?,?,?,?,?)",
            [(time.time(), client, doc_id, verdict, _cut(note), content_hash, author)])]
        if keep > 0:
            batch.append(("DELETE FROM feedback_log WHERE doc_id = ? AND id <= (SELECT id FROM feedback_log"
                          " WHERE doc_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)", [(doc_id, doc_id, keep)]))
        self._write(batch)
        return self._readers.fetch("SELECT count(*) FROM feedback_log WHERE doc_id = ?", (doc_id,))[0][0]

    def verdicts_by(self, client: str, author: str | None, since: float) -> int:
        """How many verdicts one client (its kind and named token) gave since `since` (epoch seconds)."""
        return self._readers.fetch("SELECT count(*) FROM feedback_log WHERE client = ? AND coalesce(author, '') = ?"
                                   " AND at >= ?", (client, author or "", since))[0][0]

    def log_supersede(self, client: str, old_ref: str, new_ref: str | None, reason: str | None, action: str,
                      author: str | None = None) -> None:
        self._insert(
            "INSERT INTO supersede_log (at, client, old_ref, new_ref, reason, action, author) VALUES (?,?,?,?,?,?,?)",
            [(time.time(), client, old_ref, new_ref, _cut(reason), action, author)],
        )

    # -- reads ------------------------------------------------------------------------------------
    def feedback_counts(self, doc_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(helpful, misleading) per document that has any verdict."""
        out: dict[str, tuple[int, int]] = {}
        ids = list(dict.fromkeys(doc_ids))
        for part in batched(ids):
            rows = self._readers.fetch(
                "SELECT doc_id, sum(verdict = 'helpful'), sum(verdict = 'misleading') FROM feedback_log"
                f" WHERE doc_id IN ({marks(len(part))}) GROUP BY doc_id",
                part,
            )
            out.update({doc_id: (int(h), int(m)) for doc_id, h, m in rows})
        return out

    def has_feedback(self) -> bool:
        """Whether any verdict was ever given (a search skips the per-note sums when none was)."""
        return bool(self._readers.fetch("SELECT 1 FROM feedback_log LIMIT 1"))

    def feedback_totals(self) -> list[tuple[str, int, int, float, list[str]]]:
        """(doc_id, helpful, misleading, last verdict time, the named tokens that gave verdicts, sorted) for
        every document with a verdict."""
        rows = self._readers.fetch(
            "SELECT doc_id, sum(verdict = 'helpful'), sum(verdict = 'misleading'), max(at),"
            " group_concat(author, char(31))"
            " FROM feedback_log GROUP BY doc_id ORDER BY doc_id"
        )
        return [(d, int(h), int(m), at, sorted(set(a.split("\x1f"))) if a else []) for d, h, m, at, a in rows]

    def supersessions(self) -> dict[str, tuple[str, str | None, float, str, str | None]]:
        """old ref -> (new ref, reason, when, client, author) for supersessions not revoked since: the last entry
        for an old ref wins. Every search asks, so the answer is kept until the log grows (it is append-only
        and never pruned; another process's entry shows as a new last id)."""
        last = self._readers.fetch("SELECT max(id) FROM supersede_log")[0][0]
        cached = self._supersessions
        if cached is not None and cached[0] == last:
            return dict(cached[1])
        current = self._read_supersessions()
        self._supersessions = (last, current)
        return dict(current)

    def _read_supersessions(self) -> dict[str, tuple[str, str | None, float, str, str | None]]:
        current: dict[str, tuple[str, str | None, float, str, str | None]] = {}
        for old, new, reason, at, client, action, author in self._readers.fetch(
            "SELECT old_ref, new_ref, reason, at, client, action, author FROM supersede_log ORDER BY id"
        ):
            if action == "revoke":
                current.pop(old, None)
            else:
                current[old] = (new, reason, at, client or "", author)
        return current

    def counts(self) -> dict[str, int]:
        self._settle()
        return {t: self._readers.fetch(f"SELECT count(*) FROM {t}")[0][0] for t in LOG_TABLES}

    def search_latency(self, last: int = 1000, cold: bool = False) -> dict[str, float | None]:
        """p50/p95 of the last `last` warm searches, or (cold=True) of the cold starts among them: a search
        that first loaded the model (each stdio session's first, each lone CLI search) takes seconds, and
        mixed in it showed a p50 of 963 ms for searches that took 70-180 ms."""
        self._settle()
        rows = [v for v, c in self._readers.fetch(
            "SELECT latency_ms, cold FROM search_log ORDER BY id DESC LIMIT ?", (last,))
            if v is not None and bool(c) == cold]
        if not rows:
            return {"p50_ms": None, "p95_ms": None, "samples": 0}
        rows.sort()
        p95 = rows[min(len(rows) - 1, int(round(0.95 * (len(rows) - 1))))]
        return {"p50_ms": round(statistics.median(rows), 2), "p95_ms": round(p95, 2), "samples": len(rows)}

    def search_latency_by_process(self, last: int = 1000) -> dict[str, dict[str, float | None]]:
        """Latency per kind of process that ran the search: "server" (MCP, HTTP, and CLI calls a running
        server answered) and "cli" (a CLI process on its own, which pays for loading the model each time).
        Mixed, a few 3 s CLI cold starts made a 40 ms server look like a 3 s one."""
        self._settle()
        rows = self._readers.fetch(
            "SELECT CASE WHEN client = 'cli' THEN 'cli' ELSE 'server' END, latency_ms FROM search_log"
            " ORDER BY id DESC LIMIT ?", (last,))
        out: dict[str, dict[str, float | None]] = {}
        for proc in ("server", "cli"):
            values = sorted(v for p, v in rows if p == proc and v is not None)
            if values:
                p95 = values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]
                out[proc] = {"p50_ms": round(statistics.median(values), 2), "p95_ms": round(p95, 2),
                             "samples": len(values)}
        return out

    def recent(self, table: str, limit: int = 20) -> list[dict]:
        self._settle()
        if table not in LOG_TABLES:
            raise ValueError(f"unknown log {table!r}; one of {', '.join(LOG_TABLES)}")
        out = []
        for item in self._readers.fetch_dicts(f"SELECT * FROM {table} ORDER BY id DESC LIMIT ?", (limit,)):
            for key in ("params", "results", "warnings", "found", "concepts", "chunk_ids"):
                if isinstance(item.get(key), str):
                    item[key] = json.loads(item[key])
            out.append(item)
        return out

    def consult_by_working_set(self, working_set_id: str) -> dict | None:
        """The latest logged consultation with this working set id (its canonical JSON under `working_set`)."""
        self._settle()
        rows = self._readers.fetch_dicts(
            "SELECT id, at, client, working_set_id, working_set FROM consult_log WHERE working_set_id = ?"
            " ORDER BY id DESC LIMIT 1", (working_set_id,))
        return rows[0] if rows else None

    def per_day(self, table: str, days: int = 30) -> list[dict]:
        self._settle()
        if table not in LOG_TABLES:
            raise ValueError(f"unknown log {table!r}")
        since = time.time() - days * 86400
        rows = self._readers.fetch(
            f"SELECT date(at, 'unixepoch') AS day, count(*) FROM {table} WHERE at >= ? GROUP BY day ORDER BY day",
            (since,),
        )
        return [{"day": day, "count": n} for day, n in rows]

    def per_hour(self, table: str, hours: int = 48) -> list[dict]:
        """Counts per UTC hour ("YYYY-MM-DDTHH") over the last `hours`: a day or two of use is one bar per
        day, so the dashboard draws hours when all the activity is that recent."""
        self._settle()
        if table not in LOG_TABLES:
            raise ValueError(f"unknown log {table!r}")
        since = time.time() - hours * 3600
        rows = self._readers.fetch(
            f"SELECT strftime('%Y-%m-%dT%H', at, 'unixepoch') AS hour, count(*) FROM {table} WHERE at >= ?"
            " GROUP BY hour ORDER BY hour",
            (since,),
        )
        return [{"hour": hour, "count": n} for hour, n in rows]

    def overview(self, limit: int = 20, days: int = 30) -> dict:
        """Recent entries of each log, counts per day, and counts per hour of the last 48 hours, as the
        dashboard shows them."""
        return {
            "searches": self.recent("search_log", limit),
            "consultations": self.recent("consult_log", limit),
            "learnings": self.recent("learn_log", limit),
            "feedback": self.recent("feedback_log", limit),
            "supersessions": self.recent("supersede_log", limit),
            "edits": self.recent("edit_log", limit),
            "per_day": {
                "searches": self.per_day("search_log", days),
                "consultations": self.per_day("consult_log", days),
                "learnings": self.per_day("learn_log", days),
            },
            "per_hour": {
                "searches": self.per_hour("search_log"),
                "consultations": self.per_hour("consult_log"),
                "learnings": self.per_hour("learn_log"),
            },
        }
