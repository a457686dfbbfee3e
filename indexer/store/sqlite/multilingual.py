"""The multilingual vector cache of the SQLite store: the `ml_vectors` table, what is missing from it, and ranking
by it. The encoder and which query wants it: indexer/models/multilingual.py."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oracle_indexer.models.embed import DIMENSIONS as MAIN_DIMENSIONS
from oracle_indexer.models.multilingual import DIMENSIONS, MODES, OTHER_SCRIPTS, SLICE, MultilingualEmbedder
from oracle_indexer.store.rows import marks
from oracle_indexer.store.sqlite.schema import connect_reader

if TYPE_CHECKING:  # numpy loads on first use: a server answers its handshake without it
    import numpy as np

    from oracle_indexer.store.sqlite.exact import ExactVectors


class MultilingualIndex:
    """The multilingual vectors of one index database: what is missing, and ranking by them.

    Its own table (`ml_vectors`, created with the store's schema) that nothing else reads: the vectors are
    a cache of a pure function of the section text, so a missing row is simply computed again. Reads go
    through a read connection of its own, used under one lock: SQLite's `data_version` of one connection
    is then an exact "has anything committed since I loaded the matrix", whichever thread asks. Writes go
    through the store's writer (`write`, `prune`, inside the caller's transaction)."""

    def __init__(self, db_path: Path, mode: str = "auto", embedder: MultilingualEmbedder | None = None,
                 exact: ExactVectors | None = None):
        if mode not in MODES:
            raise ValueError(f"ORACLE_MULTILINGUAL={mode!r}: use one of {', '.join(MODES)}")
        self.db_path = db_path
        self.mode = mode
        self.embedder = embedder or MultilingualEmbedder()
        self._wanted = False  # sticky: once a base holds other scripts, its vectors are kept up to date
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        # (data_version, ids, multilingual rows, main-model rows or None when they are read from `exact`)
        self._matrix: tuple[object, list[str], np.ndarray, np.ndarray | None] | None = None
        # the main model's matrix, shared (indexer/store/sqlite/exact.py); None: this index reads its own
        self.exact = exact
        # (exact matrix version, the ids list it was made for, the exact matrix's row of each of those ids)
        self._shared: tuple[object, list[str], np.ndarray] | None = None

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        with self._lock:
            return self._reader().execute(sql, args).fetchall()

    def _reader(self) -> sqlite3.Connection:
        """The read connection (opened on first use; the caller holds the lock)."""
        if self._conn is None:
            self._conn = connect_reader(self.db_path)
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._matrix = None

    def wanted(self) -> bool:
        """Whether this base computes multilingual vectors (see the module docstring)."""
        if self.mode != "auto":
            return self.mode == "on"
        if not self._wanted:
            self._wanted = self._holds_other_scripts()
        return self._wanted

    def _holds_other_scripts(self) -> bool:
        """Whether any section's text or title holds a letter of OTHER_SCRIPTS."""
        glob = f"*[{OTHER_SCRIPTS}]*"
        return bool(self._read("SELECT 1 FROM documents WHERE content GLOB ? OR title GLOB ? LIMIT 1", (glob, glob)))

    def pending(self, limit: int = SLICE, files: Iterable[str] | None = None) -> list[tuple[str, str, str, str]]:
        """(key, title, heading, content) of sections whose text has no multilingual vector yet, at most
        `limit` distinct texts, those of `files` only when given."""
        # min(): one row per key in SQLite and PostgreSQL alike (equal keys are equal texts)
        sql = ("SELECT d.embed_key, min(d.title), min(d.heading), min(d.content) FROM documents d"
               " LEFT JOIN ml_vectors m ON m.key = d.embed_key WHERE m.key IS NULL AND d.embed_key IS NOT NULL")
        params: list[object] = []
        if files is not None:
            wanted = sorted(set(files))
            if not wanted:
                return []
            sql += f" AND d.file IN ({marks(len(wanted))})"
            params += wanted
        sql += " GROUP BY d.embed_key ORDER BY d.embed_key LIMIT ?"
        return self._read(sql, [*params, limit])

    def pending_count(self) -> int:
        """Sections without a multilingual vector yet (from the loaded matrix: a search asks this)."""
        ids, _, _ = self._loaded()
        return self._read("SELECT count(*) FROM documents")[0][0] - len(ids)

    def store_vectors(self, store, keys: Sequence[str], vectors: np.ndarray) -> None:  # noqa: ANN001 - a Store
        """Write vectors through the store, in a transaction of their own (the caller holds the writer lock)."""
        with store.transaction() as conn:
            self.write(conn, keys, vectors)

    def prune_vectors(self, store) -> int:  # noqa: ANN001 - a Store
        """Drop vectors of texts no section holds any more, in a transaction of their own."""
        with store.transaction() as conn:
            return self.prune(conn)

    @staticmethod
    def write(conn: sqlite3.Connection, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors (inside the caller's transaction); a key written meanwhile by another process wins."""
        conn.executemany("INSERT OR IGNORE INTO ml_vectors (key, vector) VALUES (?, ?)",
                         [(k, v.astype("float32").tobytes()) for k, v in zip(keys, vectors)])

    @staticmethod
    def prune(conn: sqlite3.Connection) -> int:
        """Drop vectors of texts no section holds any more (inside the caller's transaction)."""
        return conn.execute(
            "DELETE FROM ml_vectors WHERE key NOT IN (SELECT embed_key FROM documents WHERE embed_key IS NOT NULL)"
        ).rowcount

    def _loaded(self) -> tuple[list[str], np.ndarray, np.ndarray | None]:
        """(section ids, multilingual matrix, main-model matrix) of every section with a multilingual
        vector, reloaded after any commit. The main model's rows come from its embedding cache (zeros for
        a section it has not embedded yet): a query mixing scripts is ranked by both (see `nearest`). The
        main-model matrix is None while the exact vector leg holds those rows (see `_main_similarities`)."""
        import numpy as np

        shared = self.exact is not None and self.exact.matrix() is not None
        with self._lock:
            version = self._data_version()
            if self._matrix is None or self._matrix[0] != version or (self._matrix[3] is None) != shared:
                self._shared = None
                if shared:
                    rows = self._rows("SELECT d.id, m.vector FROM documents d JOIN ml_vectors m ON m.key = d.embed_key"
                                      " ORDER BY d.id")
                    multi = np.zeros((len(rows), DIMENSIONS), dtype=np.float32)
                    for n, (_, blob) in enumerate(rows):
                        multi[n] = np.frombuffer(blob, dtype=np.float32)
                    self._matrix = (version, [r[0] for r in rows], multi, None)
                    return self._matrix[1], self._matrix[2], None
                rows = self._rows(
                    "SELECT d.id, m.vector, e.vector FROM documents d JOIN ml_vectors m ON m.key = d.embed_key"
                    " LEFT JOIN embeddings e ON e.key = d.embed_key ORDER BY d.id")
                multi = np.zeros((len(rows), DIMENSIONS), dtype=np.float32)
                width = next((len(r[2]) // 4 for r in rows if r[2] is not None), MAIN_DIMENSIONS)  # the main model's
                main = np.zeros((len(rows), width), dtype=np.float32)
                for n, (_, blob, main_blob) in enumerate(rows):
                    multi[n] = np.frombuffer(blob, dtype=np.float32)
                    if main_blob is not None:
                        main[n] = np.frombuffer(main_blob, dtype=np.float32)
                self._matrix = (version, [r[0] for r in rows], multi, main)
            return self._matrix[1], self._matrix[2], self._matrix[3]

    def _main_similarities(self, ids: list[str], main: np.ndarray | None, vector: np.ndarray) -> np.ndarray:
        """The main model's similarity of each of `ids` to `vector` (0 for a section it has not embedded): from
        our own matrix, or from the exact leg's, whose row of each id is looked up once per index change
        (the exact leg's matrix is not held here: a reload there frees the old one)."""
        import numpy as np

        if main is not None:
            return main @ vector
        assert self.exact is not None
        matrix = self.exact.matrix()
        if matrix is None:  # the base grew past the exact leg's limit since _loaded: our own rows from now on
            again, _, main = self._loaded()
            if again == ids and main is not None:
                return main @ vector
            # and a commit came meanwhile: this one query loses its English share
            return np.zeros(len(ids), dtype=np.float32)
        shared = self._shared
        if shared is None or shared[0] != matrix.version or shared[1] is not ids:
            shared = (matrix.version, ids, np.array([matrix.row.get(i, -1) for i in ids], dtype=np.int64))
            self._shared = shared
        rows = shared[2]
        sims = matrix.vectors @ vector
        return np.where(rows >= 0, sims[rows], np.float32(0))

    def _data_version(self) -> object:
        """Changes whenever anything committed since it was last read (the caller holds the lock)."""
        return self._reader().execute("PRAGMA data_version").fetchone()[0]

    def _rows(self, sql: str) -> list[tuple]:
        """One read on the reader (the caller holds the lock)."""
        return self._reader().execute(sql).fetchall()

    def ready(self) -> bool:
        """Vectors exist to rank by (the base wants them and at least some are computed)."""
        return self.wanted() and bool(self._read("SELECT 1 FROM ml_vectors LIMIT 1"))

    def nearest(self, query: str, n: int, main_vector: np.ndarray | None = None, main_share: float = 0.0
                ) -> list[tuple[str, float]]:
        """The n sections nearest the query, best first, ties by id. Each model counts in proportion to the
        query letters it reads: similarity = s x main + (1 - s) x multilingual, s = `main_share` (the
        caller's covered_share(query); the main model's query vector is needed when s > 0), so
        "ทำไม ... context-finder ... main agent" keeps what the English model knows of its English words
        (nat-brain's 10 Thai questions: 0.672 with the multilingual model alone, 0.700 shared)."""
        import numpy as np

        ids, multi, main = self._loaded()
        if not ids:
            return []
        share = main_share if main_vector is not None else 0.0
        query_vector = self.embedder.embed([query])[0]
        sims = (1.0 - share) * (multi @ query_vector)  # on one BLAS thread (indexer/blas.py)
        if share > 0 and main_vector is not None:  # share is 0 without a main vector
            sims += share * self._main_similarities(ids, main, main_vector)
        n = min(n, len(ids))
        top = np.argpartition(-sims, n - 1)[:n] if n < len(ids) else np.arange(len(ids))
        return sorted(((ids[i], float(sims[i])) for i in top), key=lambda p: (-p[1], p[0]))
