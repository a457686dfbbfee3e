"""Ranking quality on several question sets in one run: fts, vector and hybrid, per set and language.

Run from the repository root:

    .venv/bin/python benchmarks/sets.py [--sets judged,natural,scifact] [--modes fts,vector,hybrid]
        [--mcp] [--json out.json] [--compare before.json] [--scifact-max-queries N]
    .venv/bin/python benchmarks/sets.py --check-natural      # the title-word count of the natural set

The sets:
- `judged`: the judged nat-brain questions (`../shared/eval-data/nat-brain-oracle/queries-judged.json`,
  50 English, 10 Thai), written by reading the notes;
- `natural`: our own natural-phrasing questions over the same notes (`benchmarks/natural-questions.json`,
  see benchmarks/NATURAL.md): paraphrased, symptom-first, most sharing no word with the answering note's title;
- `go` (opt-in): 74 questions over the Go design proposals (`../shared/eval-data/go-proposals`: 125 long design
  documents nobody here tuned for), written by reading them (benchmarks/go-questions.json, GO-QUESTIONS.md):
  natural, exact terms, why/how, seven other languages, no answer;
- `scifact` (opt-in, slow on first run: it embeds 5,183 abstracts): BEIR SciFact train through the corpus
  folder `benchmarks/quality.py` writes (`benchmarks/out/scifact`), each abstract a note, its qrels as
  grades.

Every set is scored by the same code as `benchmarks/notes.py` (`run_system`: hits de-duplicated to notes,
nDCG@10 with graded gains, Recall@10 and MRR@10 on grade-2 notes), in-process through `run_search` or, with
`--mcp`, through a real `oracle serve` over stdio. The plain whole-file FTS5 baseline of notes.py is
measured in the same run on every set. SciFact here asks for 10 notes per query, as the other sets do
(quality.py asks for 100 and cuts at 10; for one chunk per abstract the top 10 are the same).

`--json` writes every per-query figure; `--compare before.json` prints, per set and system, the wins and
losses per query against an earlier `--json` output.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import notes  # noqa: E402
from oracle_indexer.config import Settings  # noqa: E402
from oracle_indexer.notes.parse import split_frontmatter, title_for  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.capabilities.search.query import STOPWORDS, is_unsegmented, split_terms  # noqa: E402

NATURAL = REPO / "benchmarks" / "natural-questions.json"
GO_QUESTIONS = REPO / "benchmarks" / "go-questions.json"
GO_ROOT = REPO.parent / "shared" / "eval-data" / "go-proposals"
GO_DATA = REPO / "benchmarks" / "out" / "go-data"
SCIFACT_DATA = REPO.parent / "shared" / "eval-data" / "scifact"
SCIFACT_WORK = REPO / "benchmarks" / "out" / "scifact"
BASELINE = "plain FTS5, whole files"
SETS = ("judged", "natural", "go", "scifact")


# -- the sets ---------------------------------------------------------------------------------------
def scifact_questions(data: Path, work: Path, max_queries: int | None) -> list[dict]:
    """SciFact train as a judged set over `<work>/root` (written by quality.py's code when missing)."""
    from benchmarks import quality

    dataset = quality.load_dataset(data, max_queries)
    written = quality.write_corpus(dataset, work / "root")
    if written:
        print(f"scifact: wrote {written} abstracts to {work / 'root'}", file=sys.stderr)
    return [{"id": f"sf-{qid}", "query": text, "lang": "en", "kind": "claim",
             "relevant": {f"learnings/{cid}.md": g for cid, g in dataset.qrels[qid].items() if g > 0}}
            for qid, text in dataset.queries.items()]


def score_root(root: Path, data: Path, sets: dict[str, list[dict]], modes: list[str], mcp: bool,
               keyword_from: str = "working-copy") -> dict:
    """Index `root` into `data` (reused), then ask every set's questions in each mode and the baseline.
    Returns {set: {system: run}} with notes.run_system's runs. With the team store (ORACLE_DATABASE_URL), the
    keyword leg reads the working copy's own index as an engine's does once it follows the database
    (`keyword_from="working-copy"`), or the database's SQL (`"database"`)."""
    settings = Settings.from_env(root=root, data_dir=data)
    oracle = Oracle.open(settings, offline_ok=bool(settings.database_url))
    started = time.perf_counter()
    report = oracle.indexer.sync()
    print(f"index {root}: {report.summary()} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    if oracle.backend.team and keyword_from == "working-copy" and not mcp:
        oracle.backend.prepare_now()  # type: ignore[attr-defined]  # a TeamBackend
    source = getattr(oracle.store, "keyword_source", lambda: "this index")()
    print(f"keyword leg reads: {source}", file=sys.stderr)
    out: dict[str, dict] = {name: {} for name in sets}
    client = None
    if mcp:
        oracle.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
        env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), PYTHONIOENCODING="utf-8")
        client = notes.McpOracle(env)
    try:
        for mode in modes:
            ask = client.search(mode) if client else notes.oracle_inprocess(oracle, mode)
            ask("warm up the model and the index")
            for name, questions in sets.items():
                print(f"  {name}: {mode} ({len(questions)} questions)", file=sys.stderr)
                out[name][f"oracle {mode}" + (" (MCP)" if client else "")] = notes.run_system(ask, questions)
    finally:
        if client:
            client.close()
        else:
            oracle.close()
    baseline = notes.whole_file_baseline(root)
    for name, questions in sets.items():
        out[name][BASELINE] = notes.run_system(baseline, questions)
    return out


# -- reporting --------------------------------------------------------------------------------------
def by_language(run: dict) -> dict[str, tuple[float, int]]:
    """nDCG@10 over all questions and per language: {key: (mean, count)}."""
    rows = [r for r in run["per_query"].values() if r.get("answerable", True)]  # no-answer questions: by_kind
    groups: dict[str, list[float]] = {"all": [r["ndcg"] for r in rows]}
    for r in rows:
        groups.setdefault(r["lang"], []).append(r["ndcg"])
    return {k: (statistics.fmean(v) if v else 0.0, len(v)) for k, v in groups.items()}


def by_kind(run: dict) -> dict[str, tuple[float, int]]:
    """nDCG@10 per kind of question (natural, exact, why-how, other-language...): {kind: (mean, count)}; for the
    questions with no answer in the notes, the share of pages marked weak (every hit weak) instead."""
    groups: dict[str, list[float]] = {}
    for r in run["per_query"].values():
        if r.get("answerable", True):
            groups.setdefault(r.get("kind") or "?", []).append(r["ndcg"])
        else:
            groups.setdefault("no answer: weak", []).append(1.0 if r["weak"] else 0.0)
    return {k: (statistics.fmean(v), len(v)) for k, v in sorted(groups.items())}


def print_kinds(results: dict[str, dict]) -> None:
    for name, systems in results.items():
        kinds = sorted({k for run in systems.values() for k in by_kind(run)})
        if len(kinds) < 2:
            continue
        counts = by_kind(next(iter(systems.values())))
        print(f"\n### {name}, per kind of question\n")
        print("| system | " + " | ".join(f"{k} {counts.get(k, (0, 0))[1]}" for k in kinds) + " |")
        print("|" + " --- |" * (len(kinds) + 1))
        for system, run in systems.items():
            figures = by_kind(run)
            print(f"| {system} | " + " | ".join(f"{figures[k][0]:.3f}" if k in figures else "" for k in kinds) + " |")


def print_tables(results: dict[str, dict]) -> None:
    for name, systems in results.items():
        langs = sorted({k for run in systems.values() for k in by_language(run)} - {"all"})
        first = next(iter(systems.values()))
        counts = by_language(first)
        head = [f"all {counts['all'][1]}"] + [f"{lang} {counts[lang][1]}" for lang in langs if lang in counts]
        print(f"\n### {name}\n")
        print("| system | " + " | ".join(head) + " | R@10 (grade 2) | MRR@10 (grade 2) | p50 ms |")
        print("|" + " --- |" * (len(head) + 4))
        for system, run in systems.items():
            figures = by_language(run)
            s = notes.summarise(run)
            cells = [f"{figures['all'][0]:.3f}"] + [f"{figures[lang][0]:.3f}" if lang in figures else "" for lang in langs]
            print(f"| {system} | " + " | ".join(cells) + f" | {s['recall2']:.3f} | {s['mrr2']:.3f} | {s['p50_ms']:.1f} |")


def print_compare(results: dict[str, dict], before: dict) -> None:
    for name, systems in results.items():
        if name in before.get("sets", {}):
            print(f"\n## {name}")
            notes.print_compare(systems, before["sets"][name])


# -- the natural set's title-word check --------------------------------------------------------------
def _stem(word: str) -> str:
    """A light English stem, enough to see "files"/"file" or "rotating"/"rotate" as one word."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def content_words(text: str) -> set[str]:
    """Content words of a text: English words without stop words (stemmed), Thai words without Thai
    function words (segmented with the indexer's segmenter)."""
    from oracle_indexer.notes.segment import thai_stopwords, thai_words

    words: set[str] = set()
    for term in split_terms(unicodedata.normalize("NFC", text)):
        if any(is_unsegmented(c) for c in term):
            words.update(w for w in thai_words(term) if w not in thai_stopwords() and len(w) > 1)
        else:
            w = term.casefold()
            if w not in STOPWORDS and len(w) > 1 and not w.isdigit():
                words.add(_stem(w))
    return words


def note_title(root: Path, rel: str) -> str:
    meta, body, _, _ = split_frontmatter((root / rel).read_text(encoding="utf-8", errors="replace"))
    return title_for(meta, body.split("\n"), rel)


def check_natural(questions: list[dict], root: Path) -> None:
    """Print, per question, the content words it shares with the title of any grade-2 note, and the count
    of questions that share none."""
    clean = 0
    by_lang: dict[str, list[int]] = {}
    for q in questions:
        words = content_words(q["query"])
        shared: set[str] = set()
        for rel, grade in q["relevant"].items():
            if grade == 2:
                shared |= words & content_words(note_title(root, rel))
        none = not shared
        clean += none
        by_lang.setdefault(q["lang"], [0, 0])
        by_lang[q["lang"]][0] += none
        by_lang[q["lang"]][1] += 1
        if shared:
            print(f"  {q['id']} {q['lang']} shares {sorted(shared)}: {q['query']}")
    langs = ", ".join(f"{lang} {n}/{total}" for lang, (n, total) in sorted(by_lang.items()))
    print(f"questions sharing no content word with any grade-2 note's title: {clean}/{len(questions)} ({langs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="judged,natural", help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument("--modes", default="fts,vector,hybrid")
    parser.add_argument("--root", type=Path, default=notes.DEFAULT_ROOT, help="the nat-brain notes")
    parser.add_argument("--data", type=Path, default=notes.DEFAULT_DATA, help="the nat-brain index (reused)")
    parser.add_argument("--judged", type=Path, default=notes.DEFAULT_JUDGED)
    parser.add_argument("--natural", type=Path, default=NATURAL)
    parser.add_argument("--go", type=Path, default=GO_QUESTIONS)
    parser.add_argument("--go-root", type=Path, default=GO_ROOT)
    parser.add_argument("--go-data", type=Path, default=GO_DATA, help="the go-proposals index (reused)")
    parser.add_argument("--scifact-data", type=Path, default=SCIFACT_DATA)
    parser.add_argument("--scifact-work", type=Path, default=SCIFACT_WORK)
    parser.add_argument("--scifact-max-queries", type=int, default=None)
    parser.add_argument("--mcp", action="store_true", help="ask through a real oracle serve over stdio")
    parser.add_argument("--keyword-from", choices=("working-copy", "database"), default="working-copy",
                        help="with ORACLE_DATABASE_URL: where the keyword leg reads (in-process runs)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--check-natural", action="store_true", help="only print the natural set's title-word count")
    args = parser.parse_args()

    if args.check_natural:
        check_natural(json.loads(args.natural.read_text(encoding="utf-8")), args.root)
        return
    chosen = [s for s in args.sets.split(",") if s]
    unknown = set(chosen) - set(SETS)
    if unknown:
        parser.error(f"unknown sets: {', '.join(sorted(unknown))}")
    modes = [m for m in args.modes.split(",") if m]
    nat_sets: dict[str, list[dict]] = {}
    if "judged" in chosen:
        nat_sets["judged"] = json.loads(args.judged.read_text(encoding="utf-8"))
    if "natural" in chosen:
        nat_sets["natural"] = json.loads(args.natural.read_text(encoding="utf-8"))
    results: dict[str, dict] = {}
    if nat_sets:
        results.update(score_root(args.root, args.data, nat_sets, modes, args.mcp, args.keyword_from))
    if "go" in chosen:  # the folder has no oracle.toml: typed as `oracle init` types a folder of documents
        os.environ.setdefault("ORACLE_DEFAULT_TYPE", "note")
        go = {"go": json.loads(args.go.read_text(encoding="utf-8"))}
        results.update(score_root(args.go_root, args.go_data, go, modes, args.mcp, args.keyword_from))
    if "scifact" in chosen:
        sf = {"scifact": scifact_questions(args.scifact_data, args.scifact_work, args.scifact_max_queries)}
        results.update(score_root(args.scifact_work / "root", args.scifact_work / "data", sf, modes, args.mcp,
                                  args.keyword_from))
    print_tables(results)
    print_kinds(results)
    if args.compare:
        print_compare(results, json.loads(args.compare.read_text(encoding="utf-8")))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        load = os.getloadavg()
        meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "load": [round(x, 2) for x in load],
                "argv": sys.argv[1:]}
        args.json.write_text(json.dumps({"meta": meta, "sets": results}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
