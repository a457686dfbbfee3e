"""A two-round agent loop over `try` (issue 37, item 3): does a second call built from a weak page's `try` find more?

    .venv/bin/python benchmarks/try_rounds.py [--sets natural,judged] [--data DIR] [--json out.json]

Round 1 asks each question alone (hybrid, 10 notes, in-process `run_search`, as benchmarks/sets.py does). For every
question whose first page is weak (`meta.weak`) or empty, round 2 asks again with a rule fixed before any result
was seen:

- rule A (the one judged): the question, then the first three `try` entries (words or titles, as given), joined by
  spaces;
- rule B (reported beside it): the first three `try` entries alone;
- and the page an agent holding both pages of rule A would read: rounds 1 and 2 fused by reciprocal rank (k=60,
  ties by path).

Figures: nDCG@10 (file level, graded, as benchmarks/notes.py) of round 1 and of each round 2, over the weak
questions, per language, with the questions that won and lost. Questions whose first page is not weak are not
asked again (an agent has no `try` for them); the weak bar is calibrated so that few on-topic questions get a weak
page, so `--every` also asks round 2 for every question, with the words `try` would hold on its first page
(pipeline.words_to_try): what the loop would give if it were offered everywhere.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import notes  # noqa: E402
from benchmarks.sets import NATURAL  # noqa: E402
from oracle_indexer.config import Settings  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import run_search, words_to_try  # noqa: E402

TRY_TAKEN = 3  # `try` entries a round-2 query takes
RRF_K = 60


def ask(oracle: Oracle, query: str, every: bool = False) -> tuple[list[str], bool, list[str]]:
    """(files of the page, whether it is weak, its `try`; with `every`, the words `try` would hold on any page)."""
    result = run_search(oracle, SearchRequest(query=query, limit=notes.CUTOFF))
    offer = list(result.try_)
    if every and not offer and result.hits:
        offer = words_to_try(oracle, result.query, result.hits, oracle.store.chunk_count())
    return [h.source_file for h in result.hits], result.meta.weak, offer


def fused(first: list[str], second: list[str]) -> list[str]:
    score: dict[str, float] = {}
    for page in (first, second):
        for rank, f in enumerate(notes.to_files(page), start=1):
            score[f] = score.get(f, 0.0) + 1 / (RRF_K + rank)
    return sorted(score, key=lambda f: (-score[f], f))[: notes.CUTOFF]


def run(oracle: Oracle, questions: list[dict], every: bool = False) -> dict:
    rows = {}
    for q in questions:
        files, weak, offer = ask(oracle, q["query"], every)
        if not offer or not (weak or every):
            continue
        taken = offer[:TRY_TAKEN]
        files_a, _, _ = ask(oracle, " ".join([q["query"], *taken]))
        files_b, _, _ = ask(oracle, " ".join(taken))
        grades = q["relevant"]
        rows[q["id"]] = {
            "lang": q["lang"], "query": q["query"], "try": offer,
            "round1": notes.ndcg(notes.to_files(files), grades),
            "A": notes.ndcg(notes.to_files(files_a), grades),
            "B": notes.ndcg(notes.to_files(files_b), grades),
            "A+1 fused": notes.ndcg(fused(files, files_a), grades),
        }
    return rows


def report(name: str, rows: dict, asked: int, every: bool = False) -> None:
    what = "got the words `try` would offer on any page" if every else "had a weak first page with `try`"
    print(f"\n### {name}: {len(rows)} of {asked} questions {what}\n")
    if not rows:
        return
    langs = sorted({r["lang"] for r in rows.values()})
    groups = {"all": list(rows.values()), **{lang: [r for r in rows.values() if r["lang"] == lang] for lang in langs}}
    print("| round | " + " | ".join(f"{k} ({len(v)})" for k, v in groups.items()) + " | wins / losses vs round 1 |")
    print("|" + " --- |" * (len(groups) + 2))
    for key in ("round1", "A", "B", "A+1 fused"):
        cells = [f"{statistics.fmean(r[key] for r in v):.3f}" for v in groups.values()]
        wins = sum(1 for r in rows.values() if r[key] > r["round1"] + 1e-9)
        losses = sum(1 for r in rows.values() if r[key] < r["round1"] - 1e-9)
        versus = "" if key == "round1" else f"{wins} / {losses}"
        print(f"| {key} | " + " | ".join(cells) + f" | {versus} |")
    for qid, r in sorted(rows.items()):
        if abs(r["A"] - r["round1"]) > 1e-9:
            print(f"  {qid} {r['lang']} {r['round1']:.3f} -> {r['A']:.3f}: {r['query']} + {r['try'][:TRY_TAKEN]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="natural,judged")
    parser.add_argument("--root", type=Path, default=notes.DEFAULT_ROOT)
    parser.add_argument("--data", type=Path, default=notes.DEFAULT_DATA)
    parser.add_argument("--judged", type=Path, default=notes.DEFAULT_JUDGED)
    parser.add_argument("--natural", type=Path, default=NATURAL)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--every", action="store_true",
                        help="also ask round 2 for every question, with the words `try` would hold on its page")
    args = parser.parse_args()
    oracle = Oracle.open(Settings.from_env(root=args.root, data_dir=args.data))
    oracle.indexer.sync()
    out = {}
    try:
        ask(oracle, "warm up the model and the index")
        for name in args.sets.split(","):
            questions = json.loads((args.natural if name == "natural" else args.judged).read_text(encoding="utf-8"))
            out[name] = run(oracle, questions)
            report(name, out[name], len(questions))
            if args.every:
                out[f"{name} (every page)"] = run(oracle, questions, every=True)
                report(name, out[f"{name} (every page)"], len(questions), every=True)
    finally:
        oracle.close()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
