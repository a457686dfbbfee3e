"""What one working copy knows of itself: for each note, the revision its file was last in step with.

The database holds the team's notes (indexer/store/pg/revisions.py); this small SQLite file in the engine's data
dir (`workcopy.db`) holds, per path, the hash the file had when it last matched a revision (its *base*) and the
file's stat then. The base is what tells a deletion from a file the folder never had, and an edit here from an
edit elsewhere (indexer/worker/workcopy.py); the stat lets a sync with nothing to do cost one stat a file and
no read. It is per machine, never shared: a fresh data dir knows no bases, so nothing is taken for deleted and
a file that differs from the database becomes a conflict copy, never an overwrite.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from oracle_indexer.safe_write import private_file
from oracle_indexer.store.types import Base


class CopyState:
    """`workcopy.db`: bases per path, and which database (and how far into its commits) they refer to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        private_file(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.execute("CREATE TABLE IF NOT EXISTS bases (path TEXT PRIMARY KEY, hash TEXT NOT NULL,"
                           " mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL)")
        self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def bases(self, paths: Iterable[str] | None = None) -> dict[str, Base]:
        with self._lock:
            if paths is None:
                rows = self._conn.execute("SELECT path, hash, mtime_ns, size FROM bases").fetchall()
            else:
                rows = []
                wanted = sorted(set(paths))
                for start in range(0, len(wanted), 500):
                    part = wanted[start:start + 500]
                    rows += self._conn.execute(
                        f"SELECT path, hash, mtime_ns, size FROM bases WHERE path IN ({','.join('?' * len(part))})",
                        part).fetchall()
        return {p: Base(h, m, s) for p, h, m, s in rows}

    def count(self) -> int:
        """How many paths this copy has synced (the deletion guard's measure)."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM bases").fetchone()[0])

    def update(self, changed: dict[str, Base | None]) -> None:
        """Set (a Base) or forget (None) each path's base, in one transaction."""
        if not changed:
            return
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO bases (path, hash, mtime_ns, size) VALUES (?,?,?,?)",
                                       [(p, b.hash, b.mtime_ns, b.size) for p, b in changed.items() if b])
                self._conn.executemany("DELETE FROM bases WHERE path = ?", [(p,) for p, b in changed.items() if not b])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def reset(self, database_id: str) -> None:
        """Bases of another database mean nothing here: forget them all (nothing is then taken for deleted)."""
        with self._lock:
            self._conn.execute("DELETE FROM bases")
            self._conn.execute("DELETE FROM meta")
            self._conn.execute("INSERT INTO meta (key, value) VALUES ('database', ?)", (database_id,))
