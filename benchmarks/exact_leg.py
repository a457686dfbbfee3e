"""The vector look-up alone on an index copy: Chroma's HNSW query against the exact NumPy ranking
(indexer/store/sqlite/exact.py), per question, alternated, plus what loading the exact matrix costs, and bringing it up to date after a commit.

    .venv/bin/python benchmarks/exact_leg.py --data DATA_COPY [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
NATBRAIN = Path("/work/shared/eval-data/nat-brain-oracle")
QUESTIONS = (NATBRAIN / "queries-judged.json", REPO / "benchmarks" / "natural-questions.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(NATBRAIN / "ψ" / "memory"))
    parser.add_argument("--data", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=100)
    args = parser.parse_args()

    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle

    queries = [q["query"] for f in QUESTIONS for q in json.loads(f.read_text(encoding="utf-8"))]
    oracle = Oracle.open(Settings.from_env(root=Path(args.root), data_dir=Path(args.data)))
    try:
        vectors = [oracle.embedder.embed_query(q) for q in queries]
        exact = oracle.indexer.exact
        exact.nearest(vectors[0], args.n)
        oracle.vectors.query(vectors[0], args.n)
        chroma, mine = [], []
        for _ in range(args.rounds):
            for v in vectors:
                t = time.perf_counter()
                oracle.vectors.query(v, args.n)
                chroma.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                exact.nearest(v, args.n)
                mine.append((time.perf_counter() - t) * 1000)
        fresh, after_commit = [], []
        for _ in range(10):
            exact._matrix = None
            t = time.perf_counter()
            exact.matrix()
            fresh.append((time.perf_counter() - t) * 1000)
            object.__setattr__(exact._matrix, "version", -1)  # as if a commit had come: the incremental path
            t = time.perf_counter()
            exact.matrix()
            after_commit.append((time.perf_counter() - t) * 1000)
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        print(f"load {load}; {len(vectors)} questions x {args.rounds}, {args.n} nearest")
        print(f"chroma query  p50 {statistics.median(chroma):6.2f} ms  mean {statistics.fmean(chroma):6.2f}")
        print(f"exact nearest p50 {statistics.median(mine):6.2f} ms  mean {statistics.fmean(mine):6.2f}")
        print(f"exact matrix: first load p50 {statistics.median(fresh):6.1f} ms, brought up to date after a commit"
              f" (no new text) p50 {statistics.median(after_commit):6.1f} ms (10 each)")
    finally:
        oracle.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
