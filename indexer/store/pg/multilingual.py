"""The multilingual vector cache (indexer/store/sqlite/multilingual.py) read from and written to the PostgreSQL
store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oracle_indexer.models.multilingual import OTHER_SCRIPTS
from oracle_indexer.store.sqlite.multilingual import MultilingualIndex

if TYPE_CHECKING:
    import numpy as np

    from oracle_indexer.store.pg.store import PgStore


class PgMultilingualIndex(MultilingualIndex):
    """Reads go through the store's pool; "has anything changed" is the store's change fingerprint plus the
    number of multilingual vectors (SQLite's data_version has no PostgreSQL counterpart across sessions)."""

    def __init__(self, store: PgStore, mode: str = "auto") -> None:
        super().__init__(Path("/dev/null"), mode)
        self.store = store

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        return self.store.fetch(sql, args)

    def _rows(self, sql: str) -> list[tuple]:
        return self.store.fetch(sql)

    def _data_version(self) -> object:
        return (self.store.change_fingerprint(), self.store.fetch("SELECT count(*) FROM ml_vectors")[0][0])

    def _holds_other_scripts(self) -> bool:
        pattern = f"[{OTHER_SCRIPTS}]"
        return bool(self.store.db.run("SELECT 1 FROM documents WHERE content ~ %s OR title ~ %s LIMIT 1",
                                      [pattern, pattern]))

    def close(self) -> None:
        with self._lock:
            self._matrix = None

    def store_vectors(self, store, keys: Sequence[str], vectors: np.ndarray) -> None:  # noqa: ANN001
        store.write_ml_vectors(keys, vectors)

    def prune_vectors(self, store) -> int:  # noqa: ANN001
        return store.prune_ml_vectors()
