"""Two stores' indexes of the same generated base (two `benchmarks/scale.py --keep` runs, e.g. SQLite and
PostgreSQL) searched in one run, alternately, so that both meet the same load: per round and store the warm
in-process latencies of `scale.py` (fts, vector, hybrid, filters, the hybrid legs), and the ratio of their hybrid
p50s. A PostgreSQL store is measured twice a round (`--pg-keyword both`, the default): its keyword leg read from the
working copy's own index (what an engine does once that index follows the database) and in SQL (its fallback).

    .venv/bin/python benchmarks/scale_pair.py --size 100000 --work /tmp/kb-sqlite --work /tmp/kb-pg \
        [--rounds 2] [--queries 100] [--warmup 10] [--json out.json]

Each `--work` is a folder an earlier `scale.py --sizes SIZE --keep --work DIR` run left (its `kb-SIZE/store.json`
says which store, and the PostgreSQL database's URL). The SciFact training queries are scale.py's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import scale  # noqa: E402  (benchmarks/ on sys.path: scale.py sets up the import paths it needs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--work", type=Path, action="append", required=True, help="a scale.py --keep folder (twice)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--data", type=Path, default=scale.DEFAULT_DATA, help="the SciFact folder")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pg-keyword", choices=("both", "working-copy", "database"), default="both")
    args = parser.parse_args()
    corpus = scale.load_corpus(args.data, args.queries)
    rounds: list[list[dict]] = []
    for n in range(args.rounds):
        this: list[dict] = []
        for work in args.work:
            kept = json.loads((work / f"kb-{args.size}" / "store.json").read_text(encoding="utf-8"))
            ways = ([None] if kept["store"] != "postgresql" else
                    ["working-copy", "database"] if args.pg_keyword == "both" else [args.pg_keyword])
            for way in ways:
                figures = scale.search_again(corpus, args.size, work, args.warmup, way or "working-copy")
                figures["work"] = str(work)
                if way:
                    figures["store"] += f" (keyword leg: {way})"
                this.append(figures)
                scale.log(f"round {n + 1} {figures['store']}: hybrid {figures['search']['hybrid']['p50_ms']} /"
                          f" {figures['search']['hybrid']['p95_ms']} ms, load {figures['load']}")
        rounds.append(this)
    print("| round | store | fts p50 / p95 | vector p50 / p95 | hybrid p50 / p95 | keyword leg p50 | vector query p50"
          " | hybrid total p50 | load start → end |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, this in enumerate(rounds, 1):
        for f in this:
            s, legs = f["search"], f["search"]["hybrid_legs"]
            print(f"| {n} | {f['store']} | {s['fts']['p50_ms']} / {s['fts']['p95_ms']} | {s['vector']['p50_ms']} /"
                  f" {s['vector']['p95_ms']} | {s['hybrid']['p50_ms']} / {s['hybrid']['p95_ms']} |"
                  f" {legs['keyword_leg']['p50_ms']} | {legs['chroma_query']['p50_ms']} | {legs['hybrid_total']['p50_ms']}"
                  f" | {f['load']['start'][0]} → {f['load']['end'][0]} |")
        first = this[0]["search"]["hybrid"]["p50_ms"]
        for f in this[1:]:
            print(f"| {n} | ratio {f['store']} / {this[0]['store']}, hybrid p50 | | |"
                  f" ×{f['search']['hybrid']['p50_ms'] / first:.2f} | | | | |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": " ".join(sys.argv), "size": args.size, "rounds": rounds},
                                        indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
