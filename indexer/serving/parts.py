"""What an Oracle serves from (the index, its vectors, the usage logs and the indexer that writes them), and how
they are opened: from the settings' store, or, while the team database cannot be reached, from the working copy's
own index (indexer/serving/team.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from oracle_indexer.config import Settings
from oracle_indexer.models.embed import Embedder
from oracle_indexer.store.backends import open_logs, open_store, open_vectors
from oracle_indexer.store.protocols import IndexStore, UsageLogs, VectorIndex
from oracle_indexer.worker.sync import Indexer


@dataclass
class Parts:
    """What an Oracle serves from: the index, its vectors, the usage logs and the indexer that writes them."""

    store: IndexStore
    vectors: VectorIndex
    logs: UsageLogs
    indexer: Indexer

    def close(self) -> None:
        self.vectors.close()
        self.indexer.multilingual.close()
        if self.indexer.exact is not None:
            self.indexer.exact.close()
        if self.indexer.copy is not None:
            self.indexer.copy.close()
        self.store.close()
        self.logs.close()


def open_parts(settings: Settings, embedder: Embedder, *, check: bool = True) -> Parts:
    """The store, vectors, indexer and logs `settings` name (a PostgreSQL pool is shared by all of them); what
    opened is closed again when a later part fails."""
    store = open_store(settings, check=check)
    opened: list[IndexStore | VectorIndex] = [store]
    try:
        vectors = open_vectors(settings)
        opened.append(vectors)
        indexer = Indexer(settings, store=store, vectors=vectors, embedder=embedder)
        logs = open_logs(settings, prune=check)
    except BaseException:
        for part in reversed(opened):
            part.close()
        raise
    return Parts(store, vectors, logs, indexer)


def offline_settings(settings: Settings) -> Settings:
    """The working copy's own index while the team database cannot be reached: the embedded store (SQLite FTS5,
    and vectors as far as it has embedded them) of the same folder, in `offline/` under the data dir. It stays
    there between outages, so the next one re-reads only the files that changed."""
    return dataclasses.replace(settings, data_dir=settings.data_dir / "offline", database_url=None, chroma_url=None)
