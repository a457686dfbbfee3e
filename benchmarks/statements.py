"""A search's trips to the store: every SQL statement one search runs (index, logs.db, the exact and multilingual
readers; any thread), traced with sqlite3's trace callback (indexer/store/sqlite/schema.py `trace_statements`),
over the 60 judged nat-brain questions. Each question is searched once to warm the process (the first search of
a process loads the vector matrices), then once traced. Prints the count per search (median, range), the
statements every search runs the most, and writes every result (took_ms aside) to --out, so two trees' results can
be compared byte for byte (--compare A.json B.json).

    python benchmarks/statements.py --data /tmp/natbrain-data --out A.json [--mode hybrid] [--show 15]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
from pathlib import Path

NATBRAIN = Path("/work/shared/eval-data/nat-brain-oracle")


def shape(sql: str) -> str:
    """A statement with its literals and IN-lists folded, so the same statement counts as one kind."""
    sql = re.sub(r"'(?:[^']|'')*'", "?", " ".join(sql.split()))
    sql = re.sub(r"\b\d+(?:\.\d+)?\b", "N", sql)
    return re.sub(r"\((?:\s*\?\s*,)+\s*\?\s*\)", "(?...)", sql)[:150]


def run(root: Path, data: Path, mode: str, show: int) -> dict:
    from oracle_indexer.config import Settings
    from oracle_indexer.store.sqlite.schema import trace_statements
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search import pipeline

    questions = json.loads((NATBRAIN / "queries-judged.json").read_text(encoding="utf-8"))
    oracle = Oracle.open(Settings.from_env(root=root, data_dir=data))
    counts: list[int] = []
    kinds: collections.Counter[str] = collections.Counter()
    results: dict[str, object] = {}
    try:
        for q in questions:
            pipeline.search(oracle, SearchRequest(query=q["query"], mode=mode), client="bench")
        for q in questions:
            with trace_statements() as statements:
                result = pipeline.search(oracle, SearchRequest(query=q["query"], mode=mode), client="bench")
            counts.append(len(statements))
            kinds.update(shape(s) for s in statements)
            body = result.model_dump(mode="json")
            body.get("meta", {}).pop("took_ms", None)
            results[q["id"]] = body
    finally:
        oracle.close()
    print(f"{len(counts)} {mode} searches: statements per search median {statistics.median(counts):g}, "
          f"min {min(counts)}, max {max(counts)}, mean {statistics.mean(counts):.1f}")
    for kind, n in kinds.most_common(show):
        print(f"  {n / len(counts):6.2f} per search  {kind}")
    return {"counts": counts, "results": results}


def compare(a: dict, b: dict) -> int:
    differ = [k for k in a["results"] if json.dumps(a["results"][k], sort_keys=True)
              != json.dumps(b["results"].get(k), sort_keys=True)]
    print(f"results: {len(differ)} of {len(a['results'])} differ {differ[:10]}")
    print(f"statements per search: median {statistics.median(a['counts']):g} -> {statistics.median(b['counts']):g}")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(NATBRAIN / "ψ" / "memory"))
    parser.add_argument("--data")
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--show", type=int, default=15)
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2)
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare)
        return compare(a, b)
    out = run(Path(args.root), Path(args.data), args.mode, args.show)
    if args.out:
        Path(args.out).write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
