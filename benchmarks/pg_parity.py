"""Compare two `benchmarks/sets.py --json` outputs of the same questions, one per store: mean nDCG@10 per set and
mode, its difference, and how many questions ranked differently (their top three notes, or their nDCG).

    .venv/bin/python benchmarks/pg_parity.py benchmarks/out/pg-parity-sqlite.json benchmarks/out/pg-parity-pg.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    first, second = (json.loads(Path(p).read_text(encoding="utf-8"))["sets"] for p in sys.argv[1:3])
    print("| set | mode | SQLite nDCG@10 | PostgreSQL nDCG@10 | difference | questions | top 3 differ | nDCG differs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, systems in first.items():
        for system, run in systems.items():
            if not system.startswith("oracle ") or system not in second.get(name, {}):
                continue
            a, b = run["per_query"], second[name][system]["per_query"]
            common = sorted(set(a) & set(b))
            mean_a = sum(a[q]["ndcg"] for q in common) / len(common)
            mean_b = sum(b[q]["ndcg"] for q in common) / len(common)
            top = sum(a[q]["top"] != b[q]["top"] for q in common)
            ndcg = sum(abs(a[q]["ndcg"] - b[q]["ndcg"]) > 1e-9 for q in common)
            langs = sorted({a[q]["lang"] for q in common})
            by_lang = ""
            if len(langs) > 1:
                parts = []
                for lang in langs:
                    qs = [q for q in common if a[q]["lang"] == lang]
                    parts.append(f"{lang} {sum(a[q]['ndcg'] for q in qs) / len(qs):.4f}/{sum(b[q]['ndcg'] for q in qs) / len(qs):.4f}")
                by_lang = " (" + ", ".join(parts) + ")"
            print(f"| {name} | {system[7:]} | {mean_a:.4f} | {mean_b:.4f}{by_lang} | {mean_b - mean_a:+.4f} | {len(common)}"
                  f" | {top} | {ndcg} |")


if __name__ == "__main__":
    main()
