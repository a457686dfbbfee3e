"""The backend an Oracle serves from, chosen once, and the worker control a switching backend needs.

An Oracle holds one `Backend` for its life. `view()` is what serves *now* (a `Parts`: store, vectors, logs,
indexer); a request takes one view when it starts and keeps it to the end (server/services/runtime/app.py
`Oracle.pinned`), so a switch made meanwhile (the team database lost or back) never splits a request between two stores.
Before, the team link swapped four fields of the Oracle while requests ran, and a search read `oracle.store` afresh at
each of its ~20 store calls.
"""

from __future__ import annotations

import threading
from typing import Protocol

from oracle_indexer.config import Settings
from oracle_indexer.models.embed import Embedder
from oracle_indexer.serving.parts import Parts


class Worker(Protocol):
    """What a backend that switches sides asks of its Oracle: stop the maintenance worker, start it again over the
    side that serves now, and the ready event requests wait on (server/services/runtime/app.py)."""

    settings: Settings
    embedder: Embedder
    ready: threading.Event

    def stop(self, abandon_loads: bool = False) -> None: ...
    def restart_worker(self) -> None: ...  # the backend switched sides: what was derived from the old one goes too
    def wait_ready(self, timeout: float = ...) -> None: ...


class Backend(Protocol):
    """What an Oracle serves from (see the module's docstring)."""

    @property
    def offline(self) -> bool: ...  # serving the working copy because the team database cannot be reached
    @property
    def team(self) -> bool: ...  # the team database with its working copy and the link between them

    def view(self) -> Parts: ...
    def mark(self) -> str: ...  # what every answer carries while offline ("" otherwise)
    def state(self) -> dict: ...  # for stats and /health ({} without a team link)
    def bind(self, worker: Worker) -> None: ...
    def start(self) -> None: ...  # after the Oracle's worker started
    def stop(self) -> None: ...  # before the Oracle's worker stops
    def lost(self, why: str) -> bool: ...  # a request met an outage: switch now; True once the working copy serves
    def close(self) -> None: ...


class StoreBackend:
    """One side for the Oracle's life: the embedded store, or the team database for a command that does not serve
    (a one-shot CLI call: an outage there is an error, not a switch)."""

    offline = False
    team = False

    def __init__(self, parts: Parts) -> None:
        self.parts = parts

    def view(self) -> Parts:
        return self.parts

    def mark(self) -> str:
        return ""

    def state(self) -> dict:
        return {}

    def bind(self, worker: Worker) -> None:
        """Nothing to switch."""

    def start(self) -> None:
        """Nothing runs beside the Oracle's worker."""

    def stop(self) -> None:
        """Nothing to stop."""

    def lost(self, why: str) -> bool:
        return False

    def close(self) -> None:
        self.parts.close()
