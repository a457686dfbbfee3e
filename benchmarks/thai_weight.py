"""Sweep the vector weight of multilingual (Thai) queries on both nat-brain sets' Thai questions, in-process over
the index benchmarks/notes.py builds; prints nDCG@10 per weight and per-query wins/losses against the first weight.

    .venv/bin/python benchmarks/thai_weight.py 0.5 0.6 0.7 0.8 1.0
"""
import json, sys, statistics
from pathlib import Path
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO)); sys.path.insert(0, str(REPO / "benchmarks"))
import notes
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.runtime.app import Oracle
from oracle_indexer.config import Settings
sets = {"judged": [q for q in json.load(open(notes.DEFAULT_JUDGED)) if q["lang"] == "th"],
        "natural": [q for q in json.load(open(REPO / "benchmarks" / "natural-questions.json", encoding="utf-8")) if q["lang"] == "th"]}
oracle = Oracle.open(Settings.from_env(root=notes.DEFAULT_ROOT, data_dir=notes.DEFAULT_DATA))
base = scoring.semantic_weight
ask = notes.oracle_inprocess(oracle, "hybrid")
per = {}
for w in [float(x) for x in sys.argv[1:]]:
    scoring.semantic_weight = lambda method, multilingual, fts, bar, w=w: w if (multilingual and method == "weighted") else base(method, multilingual, fts, bar)
    row = []
    for name, qs in sets.items():
        scores = [notes.ndcg(notes.to_files(ask(q["query"])[0]), q["relevant"]) for q in qs]
        per[(w, name)] = scores
        row.append(f"{name} {statistics.mean(scores):.3f}")
    print(w, *row, flush=True)
ws = [float(x) for x in sys.argv[1:]]
for name in sets:
    for w in ws[1:]:
        a, b = per[(ws[0], name)], per[(w, name)]
        print(name, ws[0], "->", w, "wins", sum(y > x + 1e-9 for x, y in zip(a, b)), "losses", sum(y < x - 1e-9 for x, y in zip(a, b)))
oracle.close()
