"""Exact nearest sections for small bases: the main model's vectors ranked by brute force in NumPy.

Why not Chroma's HNSW for these: at nat-brain's size (7,310 sections) every Chroma query cost a fixed
~3 ms whatever its search breadth, and its answers changed between processes: vectors still in Chroma's
write log rather than its saved HNSW file are re-inserted at every open, and the approximate answer changes
with the graph (5 of 1,143 searches differed between two runs of the same index; benchmarks/HISTORY.md, "Exact vector
search for small bases"). The same files and the same question must give byte-identical results, in any
process. Here the similarity of every embedded section is computed (one float32 matrix-vector product on
one BLAS thread: the same bits in every process) and ties go to the smaller section id.

What ranks: exactly the sections the vector store holds (`documents.in_vector = 1`, what `count_embedded`
and the "not embedded yet" warning count), each with the vector cached for its text in the `embeddings`
table (the vectors Chroma was given). The matrix is brought up to date once per index change (SQLite's
`data_version` on a read connection of its own, as indexer/store/sqlite/multilingual.py does; only new texts' vectors
are read then), 1.5 KB a section (11 MB for nat-brain).
The multilingual index (indexer/store/sqlite/multilingual.py) takes its main-model rows from this matrix rather than
holding a copy of its own.

Above EXACT_LIMIT embedded sections (ORACLE_EXACT_LIMIT, 50,000 by default; 0: always Chroma) the pipeline
asks Chroma as before (`nearest` returns None): at 50,000 the matrix is 75 MB and the product, reading RAM once
the matrix outgrows the caches, costs ~7 ms, about what Chroma's query costs at that size. The exact path reads
SQLite only, so it answers while Chroma is down; sections Chroma did not take meanwhile are not marked
embedded and do not rank (the search warns that they are pending, as before). The PostgreSQL store has no
such object: pgvector's exact search is its own (indexer/store/pg/vectors.py).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from oracle_indexer.blas import one_blas_thread
from oracle_indexer.config import DEFAULT_EXACT_LIMIT as EXACT_LIMIT
from oracle_indexer.store.rows import marks
from oracle_indexer.store.sqlite.schema import connect_reader

if TYPE_CHECKING:  # numpy loads on first use
    import numpy as np



@dataclass(frozen=True)
class Matrix:
    """The main model's vectors of one index state: `ids` sorted, row i of `vectors` is ids[i]'s; `embedded`
    says which rows may rank (in_vector = 1); `row` maps an id to its row, `key_row` an embed key to a row
    holding its vector (what the next reload copies instead of reading it again); `sections` the (id, in_vector,
    embed_key) rows it was built from, when each had its vector (a commit that leaves them as they were keeps
    the matrix; None: some text had no vector yet, and one written since must not be missed)."""

    version: object
    sections: list[tuple[str, int, str]] | None
    ids: list[str]
    vectors: np.ndarray  # float32, (len(ids), dimensions)
    embedded: np.ndarray  # bool, (len(ids),)
    count: int  # embedded rows
    row: dict[str, int]
    key_row: dict[str, int]


KEY_BATCH = 500  # embed keys per `IN (...)` when a reload reads the vectors of new texts


class ExactVectors:
    """The exact vector leg of one SQLite index database (see the module docstring)."""

    def __init__(self, db_path: Path, limit: int | None = None) -> None:
        self.db_path = db_path
        self.limit = EXACT_LIMIT if limit is None else limit
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._matrix: Matrix | None = None
        self._too_many: tuple[object, int] | None = None  # (data_version, embedded count) above the limit

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._matrix = None
            self._too_many = None

    def refresh(self) -> None:
        """Bring a matrix this process has loaded up to date now (the writer, after re-indexing files); one never
        loaded stays unloaded (a one-shot CLI learn does not search)."""
        if self._matrix is not None:
            self.matrix()

    def matrix(self) -> Matrix | None:
        """Every section with a cached main-model vector, as of the last commit; None above the limit."""
        with self._lock:
            if self._conn is None:
                self._conn = connect_reader(self.db_path)
            conn = self._conn
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if self._matrix is not None and self._matrix.version == version:
                return self._matrix
            if self._too_many is not None and self._too_many[0] == version:
                return None
            embedded = conn.execute("SELECT count(*) FROM documents WHERE in_vector = 1").fetchone()[0]
            if embedded > self.limit:
                self._matrix, self._too_many = None, (version, embedded)
                return None
            _one_blas_thread()
            # One read transaction: the sections and the vectors of their texts as of one commit.
            conn.execute("BEGIN")
            try:
                self._matrix = self._load(conn, version, self._matrix)
            finally:
                conn.execute("COMMIT")
            self._too_many = None
            return self._matrix

    @staticmethod
    def _load(conn: sqlite3.Connection, version: object, old: Matrix | None) -> Matrix:
        """The matrix as of now. After a commit only the vectors of texts the previous matrix lacks are read
        (an embed key names one text embedded by one model, and a cached vector never changes): the rest are
        copied from it, so a write costs the next search the section list, not 11 MB of vectors (nat-brain:
        44 ms for the whole read, 27 ms for this). The list comes from a covering index (schema.py
        `documents_sections`: 14 -> 9 ms), and a commit that changed none of it (a note's other fields, the word
        tables' merge, a meta row) keeps the matrix as it is: the first search after it paid 45-75 ms."""
        import numpy as np

        listed = conn.execute("SELECT id, in_vector, embed_key FROM documents INDEXED BY documents_sections"
                              " WHERE embed_key IS NOT NULL ORDER BY id").fetchall()
        if old is not None and listed == old.sections:
            return replace(old, version=version)
        sections = listed
        known = old.key_row if old is not None else {}
        new_keys = sorted({key for _, _, key in sections if key not in known})
        fetched: dict[str, bytes] = {}
        for start in range(0, len(new_keys), KEY_BATCH):
            part = new_keys[start:start + KEY_BATCH]
            fetched.update(conn.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks(len(part))})",
                                        part).fetchall())
        width = (old.vectors.shape[1] if old is not None and any(key in known for _, _, key in sections)
                 else next((len(b) // 4 for b in fetched.values()), 0))
        fetched = {k: b for k, b in fetched.items() if len(b) == 4 * width}  # a stray other-width blob cannot rank
        sections = [r for r in sections if r[2] in known or r[2] in fetched]  # a section whose text has no vector
        vectors = np.empty((len(sections), width), dtype=np.float32)
        copied = [(n, known[key]) for n, (_, _, key) in enumerate(sections) if key in known]
        if copied:
            assert old is not None
            to, frm = np.array(copied, dtype=np.int64).T
            vectors[to] = old.vectors[frm]
        for n, (_, _, key) in enumerate(sections):
            if key not in known:
                vectors[n] = np.frombuffer(fetched[key], dtype=np.float32)
        flags = np.fromiter((r[1] == 1 for r in sections), dtype=bool, count=len(sections))
        ids = [r[0] for r in sections]
        key_row: dict[str, int] = {}
        for n, (_, _, key) in enumerate(sections):
            key_row.setdefault(key, n)
        return Matrix(version, listed if len(sections) == len(listed) else None, ids, vectors, flags,
                      int(flags.sum()), {i: n for n, i in enumerate(ids)}, key_row)

    def nearest(self, vector: np.ndarray, n: int) -> list[tuple[str, float]] | None:
        """The n embedded sections most similar to `vector` (cosine: the vectors are L2-normalised), best
        first, equal similarities by id; None when the base is above the limit (ask Chroma)."""
        matrix = self.matrix()
        if matrix is None:
            return None
        if not matrix.count or n <= 0:
            return []
        import numpy as np

        sims = matrix.vectors @ np.asarray(vector, dtype=np.float32)
        if matrix.count < len(matrix.ids):
            sims[~matrix.embedded] = -np.inf
        return [(matrix.ids[i], float(sims[i])) for i in top(sims, min(n, matrix.count))]


def top(sims: np.ndarray, n: int) -> np.ndarray:
    """Row numbers of the n largest values, largest first, equal values by row number (rows are in id order).
    Every row tied with the n-th value is considered, so which of them make the cut does not depend on how
    argpartition happened to split them."""
    import numpy as np

    if n < len(sims):
        cut = sims[np.argpartition(-sims, n - 1)[n - 1]]
        rows = np.flatnonzero(sims >= cut)
    else:
        rows = np.arange(len(sims))
    return rows[np.lexsort((rows, -sims[rows]))][:n]


_BLAS_SET = False


def _one_blas_thread() -> None:
    """One BLAS thread for the process (indexer/blas.py says why it is process-wide), asked once: a
    matrix-vector product is memory-bound, and one thread gives the same bits every time."""
    global _BLAS_SET
    if not _BLAS_SET:
        one_blas_thread()
        _BLAS_SET = True
