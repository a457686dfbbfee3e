"""Indexing on request: `oracle index` (in this process or through the engine) and `oracle watch`'s first pass. The
adapters call these rather than the indexer they would otherwise reach through the Oracle (tests/contract/
test_adapters.py keeps them from touching the store, the vectors, the logs or the indexer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oracle_indexer.worker.sync import SyncReport
from oracle_server.services.runtime.app import Oracle


def index(oracle: Oracle, *, full: bool = False, force: bool = False,
          progress: Callable[[str, int, int], None] | None = None) -> SyncReport:
    """One sync of the whole folder with the index (and, with the team store, the database), on this request's view."""
    with oracle.pinned():
        return oracle.indexer.sync(full=full, force=force, progress=progress)


def serves_indexer(oracle: Oracle, indexer: Any) -> bool:
    """Whether `indexer` (a watcher's batch names the one that indexed it) is the one this Oracle serves from now."""
    return indexer is oracle.backend.view().indexer
