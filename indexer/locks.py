"""One writer at a time across processes: an advisory file lock beside the index.

Several MCP clients each start their own server process on the same knowledge base. SQLite copes with
that on its own (WAL, busy timeout), but embedded ChromaDB does not, and two processes re-indexing the
same file would do the work twice. Every write (sync, single-file update, vector flush) therefore holds
this lock. It is re-entrant within a process and released by the OS if the process dies (kill -9).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from oracle_indexer.safe_write import PRIVATE, private_dir


class WriterLockBusy(RuntimeError):
    """The writer lock stayed held by someone else for the whole wait (the PostgreSQL store's lock,
    indexer/store/pg/store.py PgWriterLock); nothing was written. The message says who holds it, since when,
    and what to do."""

    # what it means to a caller (server/services/vocabulary/errors.py: classify): retry later
    error_kind = "unavailable"


class WriterLock:
    def __init__(self, path: Path) -> None:
        private_dir(path.parent)  # the data dir, when this is the first thing in it (`oracle token add`): 0700
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def __enter__(self) -> "WriterLock":
        self._thread_lock.acquire()
        if self._depth == 0:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                self._thread_lock.release()
                raise
            self._fd = fd
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        self._thread_lock.release()
