"""Index time of one knowledge root into each store, back to back: the embedded store (SQLite + Chroma) and the
PostgreSQL store (a new database on the server at --server-url), each into a new data dir.

    .venv/bin/python benchmarks/pg_index.py ROOT --server-url URL [--seed FROM.db] [--keyword-only]

`--seed` copies an existing index's embedding caches into both stores first (benchmarks/seed_cache.py), so the
vector phase measures the stores (cache reads, upserts), not the model; `--keyword-only` stops after the keyword
phase. Prints the keyword and vector phases of each run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--server-url", required=True, help="a PostgreSQL server URL (any database on it)")
    parser.add_argument("--seed", type=Path)
    parser.add_argument("--keyword-only", action="store_true")
    args = parser.parse_args()
    import psycopg

    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle

    name = f"oracle_index_{int(time.time())}"
    with psycopg.connect(args.server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING "UTF8"')
    url = urlunparse(urlparse(args.server_url)._replace(path="/" + name))
    out = {}
    for store, extra in (("sqlite", {}), ("postgresql", {"database_url": url})):
        data = Path(tempfile.mkdtemp(prefix=f"index-{store}-"))
        if args.seed:
            where = ["--database-url", url] if extra else ["--data-dir", str(data)]
            subprocess.run([sys.executable, str(HERE / "seed_cache.py"), str(args.seed), *where], check=True,
                           stdout=subprocess.DEVNULL)
        oracle = Oracle.open(Settings.from_env(root=args.root, data_dir=data, **extra))
        started = time.perf_counter()
        report = oracle.indexer.sync(vectors=not args.keyword_only)
        total = time.perf_counter() - started
        oracle.close()
        out[store] = {"seconds": round(total, 1), "keyword_s": round(report.keyword_seconds, 1),
                      "vector_s": round(report.vector_seconds, 1), "files": report.added,
                      "chunks": report.chunks_written, "embedded": report.embedded,
                      "cached": report.embeddings_cached}
        print(store, json.dumps(out[store]), flush=True)
    print("load", [round(x, 2) for x in os.getloadavg()])


if __name__ == "__main__":
    main()
