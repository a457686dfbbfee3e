"""What the multilingual vector leg costs on nat-brain: computing its vectors, and a Thai query's latency.

Run from the repository root, after `benchmarks/notes.py` has built `benchmarks/out/natbrain-data`:

    .venv/bin/python benchmarks/multilingual.py [--rounds 4] [--backfill]

1. Thai query latency: the 10 judged Thai questions through `run_search` (hybrid, limit 10), 5 times each per
   round, rounds alternating the leg on (ORACLE_MULTILINGUAL=auto) and off, so both see the same machine; prints
   the median of each round and the load average.
2. With `--backfill`: copies the index to a temporary folder, drops its multilingual vectors and computes them
   again (wall and CPU seconds of this process, which is the one thread doing it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from oracle_indexer.config import Settings  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import run_search  # noqa: E402

EVAL = REPO.parent / "shared" / "eval-data" / "nat-brain-oracle"
ROOT = EVAL / "ψ" / "memory"
DATA = REPO / "benchmarks" / "out" / "natbrain-data"


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def latency(oracle: Oracle, queries: list[str], rounds: int) -> None:
    for query in queries:  # warm both models and the matrix
        run_search(oracle, SearchRequest(query=query))
    leg = oracle.indexer.multilingual
    medians: dict[str, list[float]] = {"on": [], "off": []}
    for n in range(rounds):
        state = "on" if n % 2 == 0 else "off"
        leg.mode = "auto" if state == "on" else "off"
        leg._wanted = False  # noqa: SLF001 - re-read the setting as a fresh process would
        times = []
        for _ in range(5):
            for query in queries:
                started = time.perf_counter()
                run_search(oracle, SearchRequest(query=query))
                times.append((time.perf_counter() - started) * 1000)
        medians[state].append(statistics.median(times))
    leg.mode, leg._wanted = "auto", False  # noqa: SLF001
    for state, values in medians.items():
        print(f"Thai hybrid query, multilingual leg {state}: medians per round "
              f"{', '.join(f'{v:.1f}' for v in values)} ms")
    print(f"load average: {load()}")


def backfill(data: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(data, copy)
        with sqlite3.connect(copy / "oracle.db") as conn:
            conn.execute("DELETE FROM ml_vectors")
        oracle = Oracle.open(Settings.from_env(root=ROOT, data_dir=copy))
        try:
            print(f"load average before: {load()}")
            wall, cpu = time.perf_counter(), time.process_time()
            report = oracle.indexer.flush_vectors()
            print(f"multilingual vectors: {report.multilingual_embedded} computed in "
                  f"{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU; load average {load()}")
        finally:
            oracle.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--backfill", action="store_true")
    args = parser.parse_args()
    judged = json.loads((EVAL / "queries-judged.json").read_text(encoding="utf-8"))
    oracle = Oracle.open(Settings.from_env(root=ROOT, data_dir=args.data))
    try:
        latency(oracle, [q["query"] for q in judged if q["lang"] == "th"], args.rounds)
    finally:
        oracle.close()
    if args.backfill:
        backfill(args.data)


if __name__ == "__main__":
    main()
