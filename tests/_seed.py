"""A data dir whose embedding cache already holds the bundled knowledge's vectors.

Many system modules start their server on a copy of the bundled knowledge, and each first ran a real
`oracle index` that embedded all of it again (~300 sections through two models: most of a module's setup).
The index keeps an embedding cache keyed by content hash (indexer/worker/sync.py), exactly so that an unchanged
section is never embedded twice; a user re-indexing meets it every day. The session builds one seed from
the bundled index it already made in-process with the real ONNX model (`bundled` in conftest.py): a SQLite
file holding only the two cache tables. A module copies it into its empty data dir, then runs the real
`oracle index` as before: every section, file, FTS row and Chroma vector is still written by that process;
only the arithmetic it would repeat comes from the cache. Tests about a first index's embedding (counts of
computed vectors, the model's first load in a process) do not seed.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

CACHE_TABLES = ("embeddings", "ml_vectors")  # indexer/store/sqlite/schema.py: the MiniLM and multilingual caches


def build_seed(index_db: Path, target: Path) -> Path:
    """Copy the cache tables of the index at `index_db` (which may be open in WAL mode) into a new file."""
    conn = sqlite3.connect(target)
    try:
        conn.execute("ATTACH DATABASE ? AS src", (str(index_db),))
        for table in CACHE_TABLES:
            conn.execute(f"CREATE TABLE {table} (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            conn.execute(f"INSERT INTO {table} SELECT key, vector FROM src.{table}")
        conn.commit()
        count = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        conn.execute("DETACH DATABASE src")
    finally:
        conn.close()
    assert count > 0, f"no cached embeddings in {index_db}"
    return target


def seed_data_dir(seed: Path | None, data_dir: Path) -> Path:
    """`data_dir` (created) with the seed as its index file, so the first `oracle index` finds the cache."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if seed is not None:
        shutil.copyfile(seed, data_dir / "oracle.db")
    return data_dir
