"""The one place that chooses what an Oracle serves from (indexer/serving/backend.py says what a backend is)."""

from __future__ import annotations

from oracle_indexer.config import Settings
from oracle_indexer.models.embed import Embedder
from oracle_indexer.serving.backend import Backend, StoreBackend
from oracle_indexer.serving.parts import offline_settings, open_parts
from oracle_indexer.store.errors import DatabaseUnavailable


def open_backend(settings: Settings, embedder: Embedder, *, check: bool = True, offline_ok: bool = False) -> Backend:
    """The one place that chooses what an Oracle serves from: with the team database and `offline_ok` (a server or
    an engine), a `TeamBackend` that serves the working copy while the database cannot be reached, even at start;
    otherwise the parts the settings name."""
    if not (settings.database_url and offline_ok):
        return StoreBackend(open_parts(settings, embedder, check=check))
    from oracle_indexer.serving.team import TeamBackend

    try:
        return TeamBackend(open_parts(settings, embedder, check=check))
    except DatabaseUnavailable as exc:
        if not _unreachable(exc):
            raise
        return TeamBackend(open_parts(offline_settings(settings), embedder, check=check), offline_since=str(exc))


def _unreachable(exc: BaseException) -> bool:
    """The team database cannot be reached (not a wrong URL or a missing package: those must stop the server)."""
    return isinstance(exc, DatabaseUnavailable) and ("cannot connect" in str(exc) or "cannot be reached" in str(exc))
