"""Copy the embedding caches (main model and multilingual) of an existing SQLite index into a new store, so
that indexing the same notes again computes no vector: a parity run of another store costs writes, not model time.

    .venv/bin/python benchmarks/seed_cache.py FROM.db --data-dir DIR          # into DIR/oracle.db (SQLite)
    .venv/bin/python benchmarks/seed_cache.py FROM.db --database-url URL      # into the PostgreSQL store

The cache is keyed by the embedded text's hash and the model's id, so a seeded store gives every note the vector
the model would give it; nothing else is copied.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="an oracle.db to read (opened read-only)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", type=Path)
    where.add_argument("--database-url")
    args = parser.parse_args()
    src = sqlite3.connect(f"file:{args.source}?mode=ro", uri=True)
    tables = {t: src.execute(f"SELECT key, vector FROM {t}").fetchall() for t in ("embeddings", "ml_vectors")}
    model = src.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
    if args.database_url:
        from oracle_indexer.store.pg.store import PgStore

        store = PgStore(args.database_url)
        for table, rows in tables.items():
            if rows:
                store.db.run(f"INSERT INTO {table} (key, vector) SELECT * FROM unnest(%s::text[], %s::bytea[])"
                             " ON CONFLICT DO NOTHING", [[k for k, _ in rows], [bytes(v) for _, v in rows]])
    else:
        from oracle_indexer.store.sqlite import Store

        store = Store(args.data_dir / "oracle.db")
        with store.transaction() as conn:
            for table, rows in tables.items():
                conn.executemany(f"INSERT OR IGNORE INTO {table} (key, vector) VALUES (?, ?)", rows)
    if model:
        store.set_meta("embedding_model", model[0])
    store.close()
    print(", ".join(f"{t}: {len(r)}" for t, r in tables.items()))


if __name__ == "__main__":
    main()
