"""Ranking quality on real notes: the judged nat-brain questions, file-level nDCG@10, per mode and language.

Run from the repository root:

    .venv/bin/python benchmarks/notes.py [--mcp] [--json out.json] [--compare before.json]

What it does:
1. indexes the knowledge base (default: `../shared/eval-data/nat-brain-oracle/ψ/memory`) into a reused data
   folder (`benchmarks/out/natbrain-data`), so a rerun costs a stat per file;
2. asks every judged question (queries-judged.json: 50 English, 10 Thai) for 10 results, in-process through
   `run_search` or, with `--mcp`, through a real `oracle serve` over stdio with the official MCP client;
3. scores the answer as the judged set's README says: hits de-duplicated to files in rank order, nDCG@10
   with graded gains (2 / 1), log2 discount, ideal ranking from every judged file; Recall@10 and MRR@10 on
   grade-2 files; the mean number of distinct notes in a page of 10;
4. scores a plain baseline measured in the same run: SQLite FTS5 bm25 over whole files (title + body,
   porter tokenizer, quoted OR-query of the words; Thai and other unsegmented runs through a trigram
   table), no chunks, no vectors, no Thai segmentation;
5. scores off-topic questions (gibberish and other domains, written for this benchmark): how many still get
   a page that is not marked weak, and how many judged questions lose their relevant notes to the weak mark.

`--compare before.json` prints per-query wins and losses against an earlier `--json` output.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from oracle_indexer.config import Settings  # noqa: E402
from oracle_indexer.notes.parse import split_frontmatter, title_for  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.query import STOPWORDS, is_unsegmented, quote, split_terms  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import run_search  # noqa: E402

EVAL = REPO.parent / "shared" / "eval-data" / "nat-brain-oracle"
DEFAULT_ROOT = EVAL / "ψ" / "memory"
DEFAULT_JUDGED = EVAL / "queries-judged.json"
DEFAULT_DATA = REPO / "benchmarks" / "out" / "natbrain-data"
CUTOFF = 10
MODES = ("hybrid", "fts", "vector")
JUDGED_FOLDERS = ("learnings/", "resonance/", "retrospectives/")

# Questions no note in an agent's engineering memory answers: gibberish, and other walks of life.
OFF_TOPIC = (
    "asdkjh qwpoeiru zxmcnv",
    "qwerty uiop lkjhg fdsa",
    "zzyzx plorb vanthe quimble",
    "how long should I boil an egg for a soft yolk",
    "best sourdough starter hydration ratio",
    "who won the 1998 football world cup final",
    "symptoms of vitamin D deficiency in adults",
    "how to prune tomato plants in summer",
    "what is the capital of Mongolia",
    "knitting pattern for a cable scarf",
    "migration route of the arctic tern",
    "tax deduction rules for home office in Germany",
    "how many moons does Neptune have",
    "recipe for green papaya salad with peanuts",
    "train schedule from Lyon to Marseille on Sunday",
    "what causes the northern lights aurora borealis",
    "how to change a flat bicycle tyre",
    "baroque harpsichord tuning temperament",
    "พยากรณ์อากาศเชียงใหม่พรุ่งนี้",
    "วิธีทำต้มยำกุ้งน้ำข้น",
    "ราคาทองคำวันนี้เท่าไหร่",
    "วิธีเลี้ยงปลากัดให้สีสวย",
    "ผลฟุตบอลพรีเมียร์ลีกเมื่อคืน",
    "สูตรขนมชั้นใบเตย",
)


# -- metrics ----------------------------------------------------------------------------------------
def to_files(files: Sequence[str]) -> list[str]:
    """Hits' files in rank order, each once (the judged set's rule)."""
    return list(dict.fromkeys(files))


def ndcg(ranked: Sequence[str], grades: dict[str, int]) -> float:
    dcg = sum(grades.get(f, 0) / math.log2(i + 2) for i, f in enumerate(ranked[:CUTOFF]))
    ideal = sorted(grades.values(), reverse=True)[:CUTOFF]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall2(ranked: Sequence[str], grades: dict[str, int]) -> float:
    best = {f for f, g in grades.items() if g == 2}
    return len(best.intersection(ranked[:CUTOFF])) / len(best) if best else 0.0


def mrr2(ranked: Sequence[str], grades: dict[str, int]) -> float:
    return next((1.0 / i for i, f in enumerate(ranked[:CUTOFF], start=1) if grades.get(f) == 2), 0.0)


# -- systems: each maps a question to (files of the page in rank order, which hits are marked weak) -----
Page = tuple[list[str], list[bool]]


def oracle_inprocess(oracle: Oracle, mode: str) -> Callable[[str], Page]:
    def ask(query: str) -> Page:
        result = run_search(oracle, SearchRequest(query=query, limit=CUTOFF, mode=mode))
        return [h.source_file for h in result.hits], [bool(getattr(h, "weak", False)) for h in result.hits]
    return ask


class McpOracle:
    """A real `oracle serve` over stdio, driven by the official MCP client from this thread."""

    def __init__(self, env: dict[str, str]) -> None:
        import anyio.from_thread
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._stack = ExitStack()
        errlog = self._stack.enter_context(open(os.devnull, "w"))
        self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
        oracle = REPO / ".venv" / "bin" / "oracle"
        params = StdioServerParameters(command=str(oracle), args=["serve", "--standalone", "--no-watch"], env=env, cwd=str(REPO))
        client = Client(stdio_client(params, errlog=errlog))
        self.client = self._stack.enter_context(self.portal.wrap_async_context_manager(client))

    def search(self, mode: str) -> Callable[[str], Page]:
        def ask(query: str) -> Page:
            args = {"query": query, "limit": CUTOFF, "mode": mode}
            result = self.portal.call(self.client.call_tool, "oracle_search", args)
            if result.is_error:
                raise RuntimeError(f"oracle_search failed for {query!r}: {result.content}")
            data = result.structured_content or {}
            hits = data.get("hits", [])
            return [h["source_file"] for h in hits], [bool(h.get("weak", False)) for h in hits]
        return ask

    def close(self) -> None:
        self._stack.close()


def whole_file_baseline(root: Path) -> Callable[[str], Page]:
    """Plain SQLite FTS5 over whole files of the judged folders: bm25(title, body), same query terms."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(path UNINDEXED, title, body, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(path UNINDEXED, body, tokenize='trigram')")
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith(JUDGED_FOLDERS) or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        meta, body, _, _ = split_frontmatter(text)
        title = title_for(meta, body.split("\n"), rel)
        conn.execute("INSERT INTO f VALUES (?, ?, ?)", (rel, title, body))
        conn.execute("INSERT INTO t VALUES (?, ?)", (rel, f"{title}\n{body}"))

    def ask(query: str) -> Page:
        words, runs = plain_terms(query)
        scores: dict[str, float] = {}
        for table, terms, weights in (("f", words, "0, 3, 1"), ("t", runs, "")):
            if not terms:
                continue
            match = " OR ".join(quote(t) for t in terms)
            for rel, s in conn.execute(f"SELECT path, -bm25({table}{', ' + weights if weights else ''}) FROM {table}"
                                       f" WHERE {table} MATCH ?", (match,)):
                scores[rel] = scores.get(rel, 0.0) + s
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:CUTOFF]
        return [rel for rel, _ in ranked], [False] * len(ranked)
    return ask


def plain_terms(query: str) -> tuple[list[str], list[str]]:
    """The baseline's own query terms, fixed whatever Oracle's query builder does: spaced-script words
    without English stop words for the word table, runs of unsegmented script (3+ characters) for the
    trigram table."""
    words: list[str] = []
    runs: list[str] = []
    for term in split_terms(unicodedata.normalize("NFC", query)):
        if any(is_unsegmented(c) for c in term):
            if len(term) >= 3 and term not in runs:
                runs.append(term)
        elif term.casefold() not in STOPWORDS and term.casefold() not in words:
            words.append(term.casefold())
    return words, runs


# -- running ----------------------------------------------------------------------------------------
def run_system(ask: Callable[[str], Page], judged: list[dict]) -> dict:
    per_query: dict[str, dict] = {}
    latencies: list[float] = []
    for q in judged:
        started = time.perf_counter()
        files, weak = ask(q["query"])
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = to_files(files)
        grades = q["relevant"]
        per_query[q["id"]] = {
            "lang": q["lang"], "kind": q.get("kind"), "answerable": bool(grades),
            "ndcg": ndcg(ranked, grades), "recall2": recall2(ranked, grades),
            "mrr2": mrr2(ranked, grades), "notes": len(ranked), "hits": len(files), "empty": not files,
            "weak": bool(weak) and all(weak), "top": ranked[:3],
            # relevant notes on the page that are marked weak: consult would leave them out
            "relevant_weak": sum(1 for f, w in zip(files, weak) if w and grades.get(f)),
        }
    return {"per_query": per_query, "p50_ms": statistics.median(latencies)}


def summarise(run: dict) -> dict:
    rows = run["per_query"].values()

    def mean(field: str, lang: str | None = None) -> float:
        values = [r[field] for r in rows if lang is None or r["lang"] == lang]
        return sum(values) / len(values) if values else 0.0

    return {
        "ndcg_all": mean("ndcg"), "ndcg_en": mean("ndcg", "en"), "ndcg_th": mean("ndcg", "th"),
        "recall2": mean("recall2"), "mrr2": mean("mrr2"),
        "notes_per_page": sum(r["notes"] for r in rows) / len(rows),
        "distinct_share": sum(r["notes"] for r in rows) / max(1, sum(r["hits"] for r in rows)),
        "th_empty": sum(1 for r in rows if r["lang"] == "th" and r["empty"]),
        "weak_judged": sum(1 for r in rows if r["weak"]),
        "lose_relevant": sum(1 for r in rows if r.get("relevant_weak")),
        "p50_ms": run["p50_ms"],
    }


def off_topic_rate(ask: Callable[[str], Page]) -> tuple[int, int]:
    """(off-topic questions answered with a page not marked weak, off-topic questions asked)."""
    answered = 0
    for query in OFF_TOPIC:
        files, weak = ask(query)
        answered += bool(files) and not all(weak)
    return answered, len(OFF_TOPIC)


def print_table(results: dict[str, dict]) -> None:
    print("| system | all 60 | English 50 | Thai 10 | R@10 (grade 2) | MRR@10 (grade 2) | notes / page of 10 |"
          " Thai empty | pages marked weak | questions with a relevant note marked weak | p50 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, run in results.items():
        s = summarise(run)
        print(f"| {name} | {s['ndcg_all']:.3f} | {s['ndcg_en']:.3f} | {s['ndcg_th']:.3f} | {s['recall2']:.3f} |"
              f" {s['mrr2']:.3f} | {s['notes_per_page']:.1f} | {s['th_empty']} | {s['weak_judged']} |"
              f" {s['lose_relevant']} | {s['p50_ms']:.1f} |")


def print_compare(results: dict[str, dict], before: dict[str, dict]) -> None:
    for name, run in results.items():
        if name not in before:
            continue
        old, new = before[name]["per_query"], run["per_query"]
        diffs = sorted(((new[q]["ndcg"] - old[q]["ndcg"], q) for q in new if q in old), reverse=True)
        wins = [(d, q) for d, q in diffs if d > 1e-9]
        losses = [(d, q) for d, q in diffs if d < -1e-9]
        print(f"\n{name}: {len(wins)} wins, {len(losses)} losses, {len(diffs) - len(wins) - len(losses)} ties"
              f" (mean {statistics.fmean(d for d, _ in diffs):+.4f})")
        for d, q in wins[:8] + losses[-8:]:
            print(f"  {q} {new[q]['lang']} {old[q]['ndcg']:.3f} -> {new[q]['ndcg']:.3f} ({d:+.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--judged", type=Path, default=DEFAULT_JUDGED)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--mcp", action="store_true", help="ask through a real oracle serve over stdio")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    judged = json.loads(args.judged.read_text(encoding="utf-8"))
    settings = Settings.from_env(root=args.root, data_dir=args.data)
    oracle = Oracle.open(settings)
    started = time.perf_counter()
    report = oracle.indexer.sync()
    print(f"index: {report.summary()} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    modes = [m for m in args.modes.split(",") if m]
    results: dict[str, dict] = {}
    off: dict[str, tuple[int, int]] = {}
    client = None
    if args.mcp:
        oracle.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
        env.update(ORACLE_ROOT=str(args.root), ORACLE_DATA_DIR=str(args.data), PYTHONIOENCODING="utf-8")
        client = McpOracle(env)
    try:
        for mode in modes:
            ask = client.search(mode) if client else oracle_inprocess(oracle, mode)
            name = f"oracle {mode}" + (" (MCP)" if client else "")
            results[name] = run_system(ask, judged)
            off[name] = off_topic_rate(ask)
    finally:
        if client:
            client.close()
        else:
            oracle.close()
    baseline = whole_file_baseline(args.root)
    results["plain FTS5, whole files"] = run_system(baseline, judged)
    print_table(results)
    print("\noff-topic questions answered with a page not marked weak:")
    for name, (answered, asked) in off.items():
        print(f"  {name}: {answered}/{asked}")
    if args.compare:
        print_compare(results, json.loads(args.compare.read_text(encoding="utf-8"))["results"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"results": results, "off_topic": off}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
