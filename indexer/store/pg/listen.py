"""Hearing other engines' writes at once: a thread that LISTENs on the note channel (indexer/store/pg/revisions.py).

A running engine pulls another machine's learning within a second or so of its commit instead of at its next
sweep. The listener only records that something was committed (the highest sequence number heard from another
machine) and calls `on_notify`; the maintenance worker does the pull (indexer/worker/maintenance.py). A lost
connection (the database restarted) is reopened every RETRY_SECONDS, and `heard` is raised then too, since
notifications sent meanwhile are lost: the pull that follows asks for every head above the last one it saw.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from oracle_indexer.store.pg.revisions import CHANNEL

RETRY_SECONDS = 2.0
POLL_SECONDS = 0.5  # how often the thread looks at its stop flag between notifications


class Listener:
    """LISTEN on CHANNEL on a connection of its own, until `stop()`."""

    def __init__(self, url: str, machine: str, on_notify: Callable[[], None]) -> None:
        self.url = url
        self.machine = machine
        self.on_notify = on_notify
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._heard = False
        self._thread = threading.Thread(target=self._run, name="oracle-listen", daemon=True)

    def start(self) -> "Listener":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(POLL_SECONDS * 4)

    def take(self) -> bool:
        """Whether another machine committed since the last call (and forget it)."""
        with self._lock:
            heard, self._heard = self._heard, False
            return heard

    def _hear(self) -> None:
        with self._lock:
            self._heard = True
        self.on_notify()

    def _run(self) -> None:
        import psycopg

        first = True
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    if not first:  # what was committed while we were not listening
                        self._hear()
                    first = False
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=POLL_SECONDS, stop_after=1):
                            _, _, machine = note.payload.partition(" ")
                            if machine != self.machine:
                                self._hear()
            except Exception:  # noqa: BLE001 - the database went away: listen again once it is back
                first = False
                self._stop.wait(RETRY_SECONDS)
