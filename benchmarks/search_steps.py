"""Where a search's own time goes: each step of the pipeline (server/services/capabilities/search/pipeline.py) timed in-process,
with the query embedding and query expansion inside them, over a judged question set. In hybrid mode the
question is embedded (_question_vector) and looked up (_nearest) on another thread while the keyword leg runs.

    .venv/bin/python benchmarks/search_steps.py --data DATA_COPY [--root ROOT] [--queries FILE] [--mode hybrid] [--rounds 2]

DATA_COPY is an index of the root (copy one: a newer schema upgrades it in place). Prints medians and means in ms.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NATBRAIN = REPO.parent / "shared" / "eval-data" / "nat-brain-oracle"
STEPS = ("_plan", "_run_legs", "_keyword_leg", "_question_vector", "_nearest", "_fuse", "_expand", "_adjust", "_group", "_page")


def timed(times: dict[str, list[float]], name: str, fn: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            times[name].append((time.perf_counter() - began) * 1000)
    return wrapper


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(NATBRAIN / "ψ" / "memory"))
    parser.add_argument("--data", required=True)
    parser.add_argument("--queries", default=str(NATBRAIN / "queries-judged.json"))
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search import pipeline

    queries = [q["query"] for q in json.loads(Path(args.queries).read_text(encoding="utf-8"))]
    oracle = Oracle.open(Settings.from_env(root=Path(args.root), data_dir=Path(args.data)))
    try:
        for q in queries[:10]:  # warm-up: models, segmenter, caches
            pipeline.run_search(oracle, SearchRequest(query=q, limit=10, mode=args.mode))
        times: dict[str, list[float]] = collections.defaultdict(list)
        for name in STEPS:
            setattr(pipeline, name, timed(times, name, getattr(pipeline, name)))
        oracle.embedder.embed_query = timed(times, "embed_query", oracle.embedder.embed_query)
        with open("/proc/loadavg") as f:
            print(f"load at start: {f.read().split()[:3]}")
        for _ in range(args.rounds):
            for q in queries:
                began = time.perf_counter()
                pipeline.run_search(oracle, SearchRequest(query=q, limit=10, mode=args.mode))
                times["run_search"].append((time.perf_counter() - began) * 1000)
        for name in ("run_search", *STEPS, "embed_query"):
            if times[name]:
                values = times[name]
                print(f"{name:14} p50 {statistics.median(values):7.2f} ms   mean {statistics.fmean(values):7.2f} ms"
                      f"   calls {len(values)}")
        with open("/proc/self/status") as f:  # the process after its searches: models, matrices, caches
            rss = next(line.split()[1] for line in f if line.startswith("VmRSS:"))
        print(f"RSS after the searches: {int(rss) / 1024:.0f} MB")
    finally:
        oracle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
