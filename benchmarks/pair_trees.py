"""Two source trees' searches in-process, question by question: each tree's `run_search` in its own worker process,
on its own copy of one index, every question asked of both in turn (the order alternated), so that a noisy machine
slows both alike. Prints each tree's p50, the median of the per-question differences (B - A) and ratios (B / A), and
how many questions got different hits or scores (the same ranking should give 0).

    git worktree add /tmp/before REV            # or: git archive REV | tar -x -C /tmp/before
    cp -r DATA_COPY /tmp/data-a; cp -r DATA_COPY /tmp/data-b
    .venv/bin/python benchmarks/pair_trees.py /tmp/before /tmp/data-a . /tmp/data-b [--rounds 6] [--mode hybrid]

Why not two series one after the other: on the 2-core machine, the p50 of one tree moved 19-25 ms between runs of a
minute apart, while the paired difference of two trees stayed within ~0.3 ms of itself (an A/A run: +0.03 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NATBRAIN = REPO.parent / "shared" / "eval-data" / "nat-brain-oracle"
WARM_QUESTIONS = 15


def worker(tree: str, data: str, root: str) -> None:
    """Answer one JSON question per line of stdin with {"t": ms, "hits": [[id, score], ...]} on stdout."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from trees import importable

    sys.path.insert(0, importable(tree))
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search import pipeline

    oracle = Oracle.open(Settings.from_env(root=Path(root), data_dir=Path(data)))
    try:
        for line in sys.stdin:
            ask = json.loads(line)
            began = time.perf_counter()
            result = pipeline.run_search(oracle, SearchRequest(query=ask["query"], limit=10, mode=ask["mode"]))
            took = (time.perf_counter() - began) * 1000
            print(json.dumps({"t": took, "hits": [(h.id, h.score) for h in result.hits]}), flush=True)
    finally:
        oracle.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree_a")
    parser.add_argument("data_a")
    parser.add_argument("tree_b")
    parser.add_argument("data_b")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--root", default=str(NATBRAIN / "ψ" / "memory"))
    parser.add_argument("--queries", default=str(NATBRAIN / "queries-judged.json"))
    if sys.argv[1:2] == ["--worker"]:  # one tree's side: --worker TREE DATA ROOT
        worker(*sys.argv[2:5])
        return 0
    args = parser.parse_args()
    questions = [q["query"] for q in json.loads(Path(args.queries).read_text(encoding="utf-8"))]
    procs = {name: subprocess.Popen(
        [sys.executable, __file__, "--worker", tree, data, args.root],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, stderr=subprocess.DEVNULL)
        for name, tree, data in (("A", args.tree_a, args.data_a), ("B", args.tree_b, args.data_b))}

    def ask(name: str, question: str) -> dict:
        proc = procs[name]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"query": question, "mode": args.mode}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    try:
        for question in questions[:WARM_QUESTIONS]:  # models, segmenter, caches
            ask("A", question), ask("B", question)
        times: dict[str, list[float]] = {"A": [], "B": []}
        differing = 0
        for r in range(args.rounds):
            for i, question in enumerate(questions):
                answers = {name: ask(name, question) for name in ("AB" if (i + r) % 2 == 0 else "BA")}
                for name in "AB":
                    times[name].append(answers[name]["t"])
                differing += answers["A"]["hits"] != answers["B"]["hits"]
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
    a, b = times["A"], times["B"]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{args.mode}: A p50 {statistics.median(a):.2f} ms, B p50 {statistics.median(b):.2f} ms; per question B - A"
          f" median {statistics.median(y - x for x, y in zip(a, b)):+.2f} ms, B / A median"
          f" {statistics.median(y / x for x, y in zip(a, b)):.3f}; {differing} of {len(a)} searches differ"
          f" (load {load})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
