"""What query expansion costs in-process, and a fingerprint of every result (issue 23).

    PYTHONPATH=. .venv/bin/python benchmarks/expansion_cost.py [--data benchmarks/out/natbrain-data]
        [--passes 3] [--cold] [--check] [--json out.json] [--compare before.json]

Asks nat-brain's judged and natural questions (127) in hybrid mode, `--passes` times, through `run_search`, and
times, per call, the expansion step (`fusion._expand`), the document counts of its candidate words
(`store.section_counts`) and its second keyword query. Figures: the median over the questions of each
question's median over the passes, and over the first pass alone (the store's remembered section counts are
then those of the questions before; `--cold` forgets them before every question). The fingerprint is each
result as JSON without `took_ms`: two trees whose fingerprints are equal ranked every question byte for byte
alike. `--compare` prints the other run's medians beside these and the questions whose result differs. Two
runs of one tree already differ on ~2 of 127: the vector leg's 100th candidate moves (HNSW), and with it the
min-max scaling of every similarity; `--check` therefore checks every section count against a fresh one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import notes  # noqa: E402
from benchmarks.sets import NATURAL  # noqa: E402
from oracle_indexer.config import Settings  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search import fusion, pipeline  # noqa: E402

PARTS = ("expand", "counts", "second_query")


class Timer:
    """Per-call milliseconds of the expansion step and of the two store calls it makes."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}
        self.inside = False

    def wrap(self, name: str, fn: Callable[..., Any], only_inside: bool = False) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if only_inside and not self.inside:
                return fn(*args, **kwargs)
            began = time.perf_counter()
            try:
                if name == "expand":
                    self.inside = True
                return fn(*args, **kwargs)
            finally:
                if name == "expand":
                    self.inside = False
                self.last[name] = self.last.get(name, 0.0) + (time.perf_counter() - began) * 1000
        return timed


def comparable(result: Any) -> dict:
    """The result as JSON, without its timing."""
    data = json.loads(result.model_dump_json())
    data["meta"].pop("took_ms", None)
    return data


def fingerprint(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def checked(store: Any, counts: Callable[..., dict[str, int]]) -> Callable[..., dict[str, int]]:
    """`counts` (the store's section_counts), each answer checked against one MATCH per term, uncapped but cut
    at `cap` + 1 (the counting before section counts were remembered)."""
    sql = "SELECT count(*) FROM (SELECT 1 FROM documents_fts WHERE documents_fts MATCH ? LIMIT ?)"

    def check(terms: list[str], cap: int) -> dict[str, int]:
        got = counts(terms, cap)
        fresh = {t: int(store.fetch(sql, [t, cap + 1])[0][0]) for t in terms}
        assert got == fresh, {t: (got[t], fresh[t]) for t in terms if got[t] != fresh[t]}
        return got
    return check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=notes.DEFAULT_ROOT)
    parser.add_argument("--data", type=Path, default=notes.DEFAULT_DATA)
    parser.add_argument("--judged", type=Path, default=notes.DEFAULT_JUDGED)
    parser.add_argument("--natural", type=Path, default=NATURAL)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--cold", action="store_true",
                        help="forget the store's remembered section counts before every question (its worst case)")
    parser.add_argument("--check", action="store_true",
                        help="check every section count the store gives against one counted afresh")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()

    questions = [q["query"] for path in (args.judged, args.natural)
                 for q in json.loads(path.read_text(encoding="utf-8"))]
    oracle = Oracle.open(Settings.from_env(root=args.root, data_dir=args.data))
    timer = Timer()
    fusion._expand = timer.wrap("expand", fusion._expand)  # type: ignore[assignment]
    store = oracle.store
    store.section_counts = timer.wrap("counts", store.section_counts)  # type: ignore[method-assign]
    second = timer.wrap("second_query", store.keyword_search, only_inside=True)
    store.keyword_search = second  # type: ignore[method-assign]
    if args.check:
        store.section_counts = checked(store, store.section_counts)  # type: ignore[method-assign]
    times: dict[str, dict[str, list[float]]] = {q: {p: [] for p in PARTS} for q in questions}
    prints: dict[str, str] = {}
    results: dict[str, dict] = {}
    try:
        pipeline.run_search(oracle, SearchRequest(query="warm up the model and the index", limit=10))
        for _ in range(args.passes):
            for q in questions:
                timer.last = {}
                if args.cold and hasattr(store, "section_count_cache"):
                    store.section_count_cache = type(store.section_count_cache)()
                result = pipeline.run_search(oracle, SearchRequest(query=q, limit=notes.CUTOFF, mode="hybrid"))
                for p in PARTS:
                    times[q][p].append(timer.last.get(p, 0.0))
                results[q] = comparable(result)
                prints[q] = fingerprint(results[q])
    finally:
        oracle.close()
    medians = {p: statistics.median(statistics.median(t[p]) for t in times.values()) for p in PARTS}
    print(f"{len(questions)} questions x {args.passes} passes; load {Path('/proc/loadavg').read_text().split()[:3]}")
    print("median ms: " + ", ".join(f"{p} {medians[p]:.2f}" for p in PARTS))
    first = {p: statistics.median(t[p][0] for t in times.values()) for p in PARTS}
    print("first pass: " + ", ".join(f"{p} {first[p]:.2f}" for p in PARTS))
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        print("before:    " + ", ".join(f"{p} {before['medians'][p]:.2f}" for p in PARTS))
        differ = [q for q in questions if before["prints"].get(q) != prints[q]]
        print(f"results differing from {args.compare}: {len(differ)} of {len(questions)}")
        for q in differ[:10]:
            print(f"  {q}")
    if args.json:
        args.json.write_text(json.dumps({"medians": medians, "first": first, "prints": prints, "times": times,
                                         "results": results}, ensure_ascii=False),
                             encoding="utf-8")


if __name__ == "__main__":
    main()
