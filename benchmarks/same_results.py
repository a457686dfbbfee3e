"""Does one index answer the same in two processes? Dumps every search's full result (took_ms aside) for the
judged and natural nat-brain questions x 3 modes x 3 request shapes (1,143 searches), plus each question's
raw vector leg (the 100 nearest sections and their similarities), to a JSON file; run it twice, in two
processes, and compare the files with --compare.

    .venv/bin/python benchmarks/same_results.py --data DATA_COPY --out A.json
    .venv/bin/python benchmarks/same_results.py --data DATA_COPY --out B.json
    .venv/bin/python benchmarks/same_results.py --compare A.json B.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
NATBRAIN = Path("/work/shared/eval-data/nat-brain-oracle")  # the shared evaluation data
QUESTIONS = (NATBRAIN / "queries-judged.json", Path(__file__).resolve().parent / "natural-questions.json")
SHAPES = ({"limit": 10}, {"limit": 10, "unit": "section"}, {"limit": 5, "type": "learning"})


def dump(root: Path, data: Path) -> dict:
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search import legs, pipeline, plan

    queries = [q["query"] for f in QUESTIONS for q in json.loads(f.read_text(encoding="utf-8"))]
    oracle = Oracle.open(Settings.from_env(root=root, data_dir=data))
    out: dict = {"vector": {}, "search": {}}
    try:
        for q in queries:
            hits = legs._vector_leg(oracle, q, pipeline.filters_for(SearchRequest(query=q)), plan.POOL)
            out["vector"][q] = [[h.id, round(h.score, 6)] for h in hits]
            for mode in ("hybrid", "fts", "vector"):
                for n, shape in enumerate(SHAPES):
                    result = pipeline.run_search(oracle, SearchRequest(query=q, mode=mode, **shape))
                    body = result.model_dump(mode="json")
                    body.get("meta", {}).pop("took_ms", None)
                    out["search"][f"{mode}|{n}|{q}"] = body
    finally:
        oracle.close()
    return out


def compare(a: dict, b: dict) -> int:
    vec = sum(1 for q in a["vector"] if a["vector"][q] != b["vector"].get(q))
    vec_order = sum(1 for q in a["vector"] if [i for i, _ in a["vector"][q]] != [i for i, _ in b["vector"].get(q, [])])
    diff = [k for k in a["search"] if json.dumps(a["search"][k], sort_keys=True) != json.dumps(b["search"].get(k), sort_keys=True)]
    print(f"vector legs: {vec} of {len(a['vector'])} differ ({vec_order} in their order of ids)")
    print(f"searches: {len(diff)} of {len(a['search'])} differ")
    for k in diff[:10]:
        print("  ", k[:100])
    return 1 if diff or vec else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(NATBRAIN / "ψ" / "memory"))
    parser.add_argument("--data")
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2)
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare)
        return compare(a, b)
    Path(args.out).write_text(json.dumps(dump(Path(args.root), Path(args.data)), ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
