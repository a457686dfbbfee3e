"""Which store a knowledge base uses: embedded (SQLite + ChromaDB under the data dir, the default) or
PostgreSQL (the whole store in one database, for a team: `ORACLE_DATABASE_URL`, or oracle.toml's `[database] url`
once allowed: indexer/database_choice.py). The one place that names a backend; everything above the store takes
what these return, typed by the contract (indexer/store/protocols.py), and the import contract keeps it so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from oracle_indexer.config import Settings
from oracle_indexer.store.protocols import (
    CopyBases,
    IndexStore,
    Listening,
    RevisionLog,
    TokenTable,
    UsageLogs,
    VectorIndex,
    WriteLock,
)

if TYPE_CHECKING:
    from oracle_indexer.store.sqlite.exact import ExactVectors
    from oracle_indexer.store.sqlite.multilingual import MultilingualIndex


def open_store(settings: Settings, *, check: bool = True) -> IndexStore:
    """The index: `Store` (SQLite) or `PgStore`; both keep the IndexStore contract (indexer/store/protocols.py),
    as every `open_*` here checks statically by returning the Protocol."""
    if settings.database_url:
        from oracle_indexer.store.pg.store import PgStore

        return PgStore(settings.database_url)
    from oracle_indexer.store.sqlite import Store

    return Store(settings.db_path, check=check)


def open_vectors(settings: Settings) -> VectorIndex:
    """The vector leg: Chroma (embedded or ORACLE_CHROMA_URL) or, with the PostgreSQL store, pgvector."""
    if settings.database_url:
        from oracle_indexer.store.pg.vectors import PgVectorStore

        return PgVectorStore(settings.database_url)
    from oracle_indexer.store.sqlite.vectors import VectorStore

    return VectorStore(settings.chroma_path, settings.chroma_url, settings.collection)


def open_logs(settings: Settings, *, prune: bool = True) -> UsageLogs:
    """The usage logs: logs.db beside the SQLite index, or tables of the PostgreSQL store."""
    if settings.database_url:
        from oracle_indexer.store.pg.logs import PgLogs

        return PgLogs(settings.database_url, settings.log_retention_days, settings.log_max_rows, prune=prune)
    from oracle_indexer.store.sqlite.logs import Logs

    return Logs(settings.data_dir / "logs.db", settings.log_retention_days, settings.log_max_rows, prune=prune)


def open_exact(settings: Settings, store: IndexStore) -> ExactVectors | None:
    """The exact vector leg of a small SQLite base (indexer/store/sqlite/exact.py); None for PostgreSQL
    (pgvector's own)."""
    if store.dialect == "postgresql":
        return None
    from oracle_indexer.store.sqlite.exact import ExactVectors

    return ExactVectors(settings.db_path, settings.exact_limit)


def open_multilingual(settings: Settings, store: IndexStore, mode: str,
                      exact: ExactVectors | None = None) -> MultilingualIndex:
    """The multilingual vector cache, read from the store that holds it; with SQLite it takes its main-model
    rows from `exact`'s matrix when that one is loaded."""
    if store.dialect == "postgresql":
        from oracle_indexer.store.pg.multilingual import PgMultilingualIndex
        from oracle_indexer.store.pg.store import PgStore

        assert isinstance(store, PgStore)
        return PgMultilingualIndex(store, mode)
    from oracle_indexer.store.sqlite.multilingual import MultilingualIndex

    return MultilingualIndex(settings.db_path, mode, exact=exact)


def writer_lock(settings: Settings, store: IndexStore) -> WriteLock:
    """One writer at a time: a file lock in the data dir, or (PostgreSQL) an advisory lock in the database,
    which holds across machines."""
    if store.dialect == "postgresql":
        from oracle_indexer.store.pg.store import PgStore

        assert isinstance(store, PgStore)
        return store.writer_lock()
    from oracle_indexer.locks import WriterLock

    return WriterLock(settings.data_dir / "writer.lock")


# -- the team store's own parts (a working copy, its notifications, the named tokens) ---------------------------
def open_revisions(store: IndexStore) -> RevisionLog:
    """The team's notes as revisions, on the PostgreSQL store's pool (a working copy: indexer/worker/workcopy.py)."""
    from oracle_indexer.store.pg.revisions import Revisions
    from oracle_indexer.store.pg.store import PgStore

    assert isinstance(store, PgStore), "revisions live in the team store"
    return Revisions(store.db)


def open_copy_state(path: Path) -> CopyBases:
    """A working copy's own record of its bases (`workcopy.db` in the data dir)."""
    from oracle_indexer.store.sqlite.workcopy import CopyState

    return CopyState(path)


def open_listener(url: str, machine: str, on_notify: Callable[[], None]) -> Listening:
    """Started: hears the other engines' commits on the team database and calls `on_notify`."""
    from oracle_indexer.store.pg.listen import Listener

    return Listener(url, machine, on_notify).start()


def open_token_table(url: str) -> TokenTable:
    """The team database's named tokens (DatabaseUnavailable when it cannot be reached)."""
    from oracle_indexer.store.pg.named_tokens import PgTokenTable

    return PgTokenTable(url)
