"""The vector leg on PostgreSQL: pgvector, an HNSW index with cosine distance, in the store's database.

It keeps the interface of the Chroma store (indexer/store/sqlite/vectors.py), health reporting included, so the indexer,
the maintenance worker and search do not know which one they have. The table is made at the first upsert,
with the embedding model's dimension (an HNSW index needs one); `reset` drops it (a change of model).
Search breadth: a base of up to EXACT_SCAN_MAX sections is ranked exactly (every vector's distance, no index), so
two builds of the same files answer alike and as the SQLite store's exact leg does; a larger one through the HNSW
index with hnsw.ef_search = db.EF_SEARCH, and, with a filter or a pool beyond it, iterative scans (pgvector 0.8)
that go on until enough rows pass (session settings of the pool, indexer/store/pg/db.py). One statement either way:
the section count gates which branch runs. Ties break by section id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oracle_indexer.store.errors import VectorStoreUnavailable
from oracle_indexer.store.pg.db import Database, _safe, database
from oracle_indexer.store.sqlite.vectors import SELF_CHECK_NEIGHBOURS, SELF_MATCH, StoreHealth
from oracle_indexer.store.types import VectorHit

if TYPE_CHECKING:
    import numpy as np

TABLE = "chunk_vectors"
# Sections up to which the vector leg ranks every vector exactly: ~24 ms at nat-brain's 7,300 (load ~20), about an
# HNSW search's cost at that size; beyond, the HNSW index.
EXACT_SCAN_MAX = 10_000
_METADATA = ("type", "file", "project")  # what Chroma kept as metadata; `where` filters on these


def _literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text form: float32 values written in full (repr), so nothing is rounded."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _where_sql(where: dict | None) -> tuple[str, list]:
    """Chroma's `where` (as server/services/capabilities/search/pipeline.py writes it: field equality, $in,
    $and) as SQL over the metadata."""
    if not where:
        return "TRUE", []
    if "$and" in where:
        parts = [_where_sql(w) for w in where["$and"]]
        return " AND ".join(f"({s})" for s, _ in parts), [a for _, args in parts for a in args]
    clauses, args = [], []
    for key, cond in where.items():
        if key not in _METADATA:
            raise ValueError(f"unknown vector metadata field {key!r}")
        if isinstance(cond, dict) and "$in" in cond:
            clauses.append(f"{key} = ANY(%s)")
            args.append(list(cond["$in"]))
        elif isinstance(cond, dict) and "$eq" in cond:
            clauses.append(f"{key} = %s")
            args.append(cond["$eq"])
        else:
            clauses.append(f"{key} = %s")
            args.append(cond)
    return " AND ".join(clauses) or "TRUE", args


class PgVectorStore(StoreHealth):
    """Vectors in PostgreSQL. A failed call marks the store down and in need of repair, as the Chroma store
    does; the maintenance worker's probe (`reopen`) brings it back."""

    url: str | None

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.db: Database = database(url)
        self.path = None
        self.collection_name = TABLE
        self._closed = False
        self._table_seen = False

    # -- calls, failures and recovery (the Chroma store's contract) ------------------------------------
    def _call(self, what: str, fn, read: bool = False):
        self._refuse_if_down()
        try:
            return fn()
        except VectorStoreUnavailable:
            raise
        except Exception as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            message = f"vector store {what} failed ({_safe(self.url or '')}): {reason}"
            raise VectorStoreUnavailable(self._failed(message, down=read)) from exc

    def _hint(self) -> str:
        return "is the PostgreSQL server running? (ORACLE_DATABASE_URL)"

    def _after_failure(self, down: bool) -> None:
        self._table_seen = False  # another engine may have dropped it (a change of model)

    def reopen(self) -> None:
        with self.repairing():
            self.count()

    @property
    def opened(self) -> bool:
        """Always: the vectors are tables of the database the store already opened (nothing loads on first use)."""
        return True

    @property
    def damaged(self) -> bool:
        return False  # PostgreSQL's files are never ours to move aside

    def move_aside(self) -> None:
        return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()

    # -- the table -------------------------------------------------------------------------------------
    def _exists(self) -> bool:
        """Whether the table is there; once seen, remembered until a failure or a reset (a round trip saved
        per search)."""
        if not self._table_seen:
            self._table_seen = bool(self.db.run("SELECT to_regclass(%s) IS NOT NULL", [TABLE])[0][0])
        return self._table_seen

    def _create(self, dimension: int) -> None:
        """The table and its HNSW index, for vectors of `dimension` (concurrent creators wait on the lock)."""
        with self.db.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('oracle:vectors', 0))")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (id text COLLATE \"C\" PRIMARY KEY,"
                f" embedding vector({int(dimension)}) NOT NULL, type text, file text, project text)")
            conn.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_hnsw ON {TABLE} USING hnsw (embedding vector_cosine_ops)")

    # -- the operations ----------------------------------------------------------------------------------
    def upsert(self, ids: Sequence[str], vectors: np.ndarray, metadatas: Sequence[dict]) -> None:
        if not len(ids):
            return

        def run() -> None:
            if not self._exists():
                self._create(len(vectors[0]))
            with self.db.transaction() as conn:
                conn.execute(
                    f"INSERT INTO {TABLE} (id, embedding, type, file, project) SELECT i, e::vector, t, f, p FROM"
                    " unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[]) AS u(i, e, t, f, p)"
                    " ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding, type = excluded.type,"
                    " file = excluded.file, project = excluded.project",
                    [list(ids), [_literal(v) for v in vectors], *([m.get(k) for m in metadatas] for k in _METADATA)])

        self._call("upsert", run)

    def delete(self, ids: Sequence[str]) -> None:
        if not len(ids):
            return
        self._call("delete", lambda: self._exists()
                   and self.db.run(f"DELETE FROM {TABLE} WHERE id = ANY(%s)", [list(ids)]))

    def count(self) -> int:
        return int(self._call("count", lambda: self.db.run(f"SELECT count(*) FROM {TABLE}")[0][0]
                              if self._exists() else 0, read=True))

    def all_ids(self) -> set[str]:
        return set(self._call("listing", lambda: [r[0] for r in self.db.run(f"SELECT id FROM {TABLE}")]
                              if self._exists() else [], read=True))

    def query(self, vector: np.ndarray, n: int, where: dict | None = None) -> list[VectorHit]:
        """The n nearest sections by cosine similarity (1 - distance), best first, ties by id.

        The same statement says which of them the index still holds: a search asks that next (the store's
        `filtered_ids` without filters, server/search.py) and takes the answer from here (Database.stash)."""
        clause, args = _where_sql(where)

        def run() -> list[tuple]:
            if not self._exists():
                return []
            literal = _literal(vector)
            # Exactly (the distance `+ 0` is no index's order) on a small base, else through the HNSW index, whose
            # hnsw.ef_search and iterative scans are the pool's session settings (db.py); the section count is a
            # one-time filter, so only one branch runs.
            small = "(SELECT n FROM fts_stats WHERE tbl = 0)"
            return self.db.run(
                f"WITH v AS ((SELECT id, embedding <=> %s::vector AS d FROM {TABLE} WHERE {clause} AND {small} <= %s"
                f" ORDER BY (embedding <=> %s::vector) + 0, id LIMIT %s) UNION ALL"
                f" (SELECT id, embedding <=> %s::vector AS d FROM {TABLE} WHERE {clause} AND {small} > %s"
                " ORDER BY d, id LIMIT %s))"
                # which of them the index holds: a probe each (EXISTS was planned as a hash of every section's id)
                " SELECT v.id, v.d, x.id IS NOT NULL FROM v LEFT JOIN documents x ON x.id = v.id ORDER BY v.d, v.id",
                [literal, *args, EXACT_SCAN_MAX, literal, int(n), literal, *args, EXACT_SCAN_MAX, int(n)])

        rows = self._call("query", run, read=True)
        hits = [VectorHit(id=i, similarity=1.0 - float(d)) for i, d, _ in rows]
        self.db.stash("indexed_ids", tuple(h.id for h in hits), {i for i, _, indexed in rows if indexed})
        return hits

    def reset(self) -> None:
        """Drop the vectors and their table (a change of model may change the dimension)."""
        self._call("reset", lambda: self.db.run(f"DROP TABLE IF EXISTS {TABLE}"))
        self._table_seen = False

    def self_check(self, samples: Sequence[tuple[str, np.ndarray]]) -> str | None:
        for chunk_id, vector in samples:
            hits = self.query(vector, SELF_CHECK_NEIGHBOURS)
            if not hits or hits[0].similarity < SELF_MATCH:
                found = f"its nearest is at similarity {hits[0].similarity:.2f}" if hits else "it finds nothing"
                return f"the vector store does not find its own vectors (chunk {chunk_id}: {found})"
        return None

    def probe(self) -> tuple[bool, str]:
        try:
            return True, f"{self.count()} vectors"
        except VectorStoreUnavailable as exc:
            return False, str(exc)
