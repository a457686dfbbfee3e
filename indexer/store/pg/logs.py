"""The usage logs in the PostgreSQL store: the SQLite logs' class (queue, batches, retention, caches) with its
writes and its few SQLite-only reads done in PostgreSQL. Every engine of a team appends to the same tables,
so the dashboard of any of them shows what all of them served."""

from __future__ import annotations

import time
from collections.abc import Sequence

from oracle_indexer.store.errors import StoreClosed
from oracle_indexer.store.pg.db import Database, database, pg_sql
from oracle_indexer.store.rows import batched
from oracle_indexer.store.sqlite.logs import KEY_CLAIM_SECONDS, LOG_TABLES, PRUNED_TABLES, Logs


class _Readers:
    """What Logs reads through (`fetch`, `fetch_dicts`, `close`), on the shared pool."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def fetch(self, sql: str, args: Sequence = ()) -> list[tuple]:
        return self.db.fetch(sql, args)

    def fetch_dicts(self, sql: str, args: Sequence = ()) -> list[dict]:
        return self.db.fetch_dicts(sql, args)

    def close(self) -> None:
        pass


class PgLogs(Logs):
    """Logs in the store's PostgreSQL database (created by its migrations, indexer/store/pg/schema.py)."""

    def __init__(self, url: str, retention_days: int = 365, max_rows: int = 1_000_000, *, prune: bool = True) -> None:
        import threading

        self.path = None
        self.retention_days = retention_days
        self.max_rows = max_rows
        self._pruned_at = 0.0
        self._lock = threading.Lock()
        self._queue: list[tuple[str, list[tuple]]] = []
        self._queue_lock = threading.Lock()
        self._conn_closed = False
        self._supersessions = None
        self.dropped = 0
        self.db = database(url)
        self._readers = _Readers(self.db)  # type: ignore[assignment]
        if prune:
            self._maybe_prune()

    def close(self) -> None:
        self.flush()
        with self._lock:
            if not self._conn_closed:
                self._conn_closed = True
                self.db.release()

    @staticmethod
    def transient(exc: BaseException) -> bool:
        """Logs.transient for PostgreSQL: the server unreachable or busy (OperationalError, a pool timeout), a
        shutdown or an interrupt; a DataError (a NUL, text with no UTF-8 form) is about the row."""
        import psycopg

        return (isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError, psycopg.InternalError, StoreClosed))
                or not isinstance(exc, Exception))

    def tick(self) -> None:
        import psycopg

        try:
            self.flush()
        except psycopg.Error:
            pass  # the rows stay queued for the next tick
        self._maybe_prune()

    def _maybe_prune(self) -> None:
        import psycopg

        if time.monotonic() - self._pruned_at >= 3600.0 or not self._pruned_at:
            try:
                self.prune()
            except psycopg.Error:
                pass

    def _write(self, batch: Sequence[tuple[str, Sequence[tuple]]]) -> None:
        with self._lock:
            if self._conn_closed:
                raise StoreClosed("the logs are closed: this process is shutting down")
            with self.db.transaction() as conn, conn.cursor() as cur:
                for sql, rows in batch:
                    cur.executemany(pg_sql(sql), [list(r) for r in rows])

    def prune(self, now: float | None = None) -> dict[str, int]:
        now = time.time() if now is None else now
        deleted: dict[str, int] = {}
        self.flush()
        with self._lock, self.db.transaction() as conn:
            for table in PRUNED_TABLES:
                count = 0
                if self.retention_days:
                    count += conn.execute(f"DELETE FROM {table} WHERE at < %s",
                                          [now - self.retention_days * 86400]).rowcount
                if self.max_rows:
                    count += conn.execute(
                        f"DELETE FROM {table} WHERE id <= (SELECT id FROM {table} ORDER BY id DESC LIMIT 1 OFFSET %s)",
                        [self.max_rows]).rowcount
                deleted[table] = count
            if self.retention_days:
                deleted["learn_keys"] = conn.execute("DELETE FROM learn_keys WHERE at < %s",
                                                     [now - self.retention_days * 86400]).rowcount
            self._pruned_at = time.monotonic()
        return deleted

    def claim_learn_key(self, key: str, fingerprint: str, now: float | None = None) -> tuple[str, str | None]:
        """Logs.claim_learn_key, atomic across engines: the key's row is locked for the decision."""
        now = time.time() if now is None else now
        with self._lock:
            if self._conn_closed:
                raise StoreClosed("the logs are closed: this process is shutting down")
            with self.db.transaction() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", [key])
                row = conn.execute("SELECT fingerprint, file, at FROM learn_keys WHERE key = %s", [key]).fetchone()
                if row is None or (row[1] is None and now - row[2] > KEY_CLAIM_SECONDS):
                    conn.execute("INSERT INTO learn_keys (key, fingerprint, file, at) VALUES (%s, %s, NULL, %s)"
                                 " ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, file = NULL,"
                                 " at = excluded.at", [key, fingerprint, now])
                    return ("new", None)
                if row[0] != fingerprint:
                    return ("other", row[1])
                return ("done", row[1]) if row[1] is not None else ("busy", None)

    def supersessions(self) -> dict[str, tuple[str, str | None, float, str, str | None]]:
        """Logs.supersessions, whose check of the log's last id also asks whether any verdict was ever given: a
        search asks that next (server/feedback.py), and gets the answer from this round trip (Database.stash)."""
        ((last, any_feedback),) = self.db.run(
            "SELECT (SELECT max(id) FROM supersede_log), EXISTS (SELECT 1 FROM feedback_log)")
        self.db.stash("has_feedback", None, bool(any_feedback))
        cached = self._supersessions
        if cached is not None and cached[0] == last:
            return dict(cached[1])
        current = self._read_supersessions()
        self._supersessions = (last, current)
        return dict(current)

    def has_feedback(self) -> bool:
        hit, value = self.db.take("has_feedback", None)
        return bool(value) if hit else super().has_feedback()

    def feedback_counts(self, doc_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for part in batched(list(dict.fromkeys(doc_ids))):
            rows = self.db.run(
                "SELECT doc_id, count(*) FILTER (WHERE verdict = 'helpful'),"
                " count(*) FILTER (WHERE verdict = 'misleading')"
                " FROM feedback_log WHERE doc_id = ANY(%s) GROUP BY doc_id", [part])
            out.update({doc_id: (int(h), int(m)) for doc_id, h, m in rows})
        return out

    def feedback_totals(self) -> list[tuple[str, int, int, float, list[str]]]:
        """Logs.feedback_totals: (doc_id, helpful, misleading, last verdict time, the named tokens that gave
        verdicts, sorted)."""
        rows = self.db.run(
            "SELECT doc_id, count(*) FILTER (WHERE verdict = 'helpful'),"
            " count(*) FILTER (WHERE verdict = 'misleading'),"
            " max(at), array_agg(DISTINCT author) FILTER (WHERE author IS NOT NULL)"
            " FROM feedback_log GROUP BY doc_id ORDER BY doc_id COLLATE \"C\"")
        return [(d, int(h), int(m), at, sorted(a or [])) for d, h, m, at, a in rows]

    def per_day(self, table: str, days: int = 30) -> list[dict]:
        return self._per(table, time.time() - days * 86400, "YYYY-MM-DD", "day")

    def per_hour(self, table: str, hours: int = 48) -> list[dict]:
        return self._per(table, time.time() - hours * 3600, 'YYYY-MM-DD"T"HH24', "hour")

    def _per(self, table: str, since: float, pattern: str, name: str) -> list[dict]:
        """Counts per UTC day or hour, as the SQLite logs' date()/strftime() give them."""
        self.flush()
        if table not in LOG_TABLES:
            raise ValueError(f"unknown log {table!r}")
        rows = self.db.run(
            f"SELECT to_char(to_timestamp(at) AT TIME ZONE 'UTC', %s) AS k, count(*) FROM {table} WHERE at >= %s"
            " GROUP BY k ORDER BY k", [pattern, since])
        return [{name: k, "count": n} for k, n in rows]
