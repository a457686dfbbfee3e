"""Search with the agent's other phrasings (`variants`), per set and language, with per-question wins and losses.

Run from the repository root (the nat-brain index is built once into --data and reused):

    .venv/bin/python benchmarks/variants.py [--data /tmp/natbrain-main] [--sets natural,judged]
        [--systems question,v1,v2,v3,v4,fused] [--json out.json]
    .venv/bin/python benchmarks/variants.py --latency [--rounds 3]     # at a real MCP client over stdio

Systems, each asking for 10 notes (file-level nDCG@10, benchmarks/notes.py's scoring):
- `question`: the question alone (today's search);
- `v1`..`v4`: each blind variant alone (benchmarks/variants/: keywords, heading, other language, other terms);
- `fused`: the question with its four variants in one call (`SearchRequest.variants`: searched as one question).

`--latency` runs `oracle serve` over stdio beside benchmarks/plain_server.py and times, question by question and
alternated, a search without variants, the same with its four variants, and the plain server's search.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import notes  # noqa: E402
from oracle_indexer.config import Settings  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import run_search  # noqa: E402

EVAL = REPO.parent / "shared" / "eval-data" / "nat-brain-oracle"
ROOT = EVAL / "ψ" / "memory"
SETS = {"natural": REPO / "benchmarks" / "natural-questions.json", "judged": EVAL / "queries-judged.json"}


def load_set(name: str) -> list[dict]:
    questions = json.loads(SETS[name].read_text(encoding="utf-8"))
    blind = {v["id"]: v["variants"] for v in json.loads((REPO / "benchmarks" / "variants" / f"{name}.json").read_text(encoding="utf-8"))}
    for q in questions:
        q["variants"] = blind[q["id"]]
    return questions


def ask_fn(oracle: Oracle, system: str, by_id: dict[str, dict]):
    def ask(query: str) -> notes.Page:
        q = by_id[query]
        if system == "question":
            request = SearchRequest(query=q["query"], limit=notes.CUTOFF)
        elif system == "fused":
            request = SearchRequest(query=q["query"], variants=q["variants"], limit=notes.CUTOFF)
        else:
            request = SearchRequest(query=q["variants"][int(system[1:]) - 1], limit=notes.CUTOFF)
        result = run_search(oracle, request)
        return [h.source_file for h in result.hits], [h.weak for h in result.hits]
    return ask


def languages(run: dict) -> dict[str, float]:
    out: dict[str, list[float]] = {"all": []}
    for q in run["per_query"].values():
        out["all"].append(q["ndcg"])
        out.setdefault(q["lang"], []).append(q["ndcg"])
    return {lang: statistics.fmean(v) for lang, v in out.items()}


def wins_losses(base: dict, new: dict, eps: float = 1e-9) -> tuple[int, int, int]:
    w = l = t = 0
    for qid, q in new["per_query"].items():
        d = q["ndcg"] - base["per_query"][qid]["ndcg"]
        w, l, t = (w + 1, l, t) if d > eps else (w, l + 1, t) if d < -eps else (w, l, t + 1)
    return w, l, t


def quality(args: argparse.Namespace) -> None:
    oracle = Oracle.open(Settings.from_env(root=ROOT, data_dir=Path(args.data)))
    report = oracle.indexer.sync()
    print(f"index: {report.summary()}", file=sys.stderr)
    systems = args.systems.split(",")
    dump: dict = {}
    try:
        for name in args.sets.split(","):
            questions = load_set(name)
            by_id = {q["query"]: q for q in questions}
            runs = {s: notes.run_system(ask_fn(oracle, s, by_id), questions) for s in systems}
            dump[name] = runs
            langs = sorted({q["lang"] for q in questions})
            print(f"\n{name} ({len(questions)} questions)")
            print(f"| system | all | {' | '.join(langs)} | wins/losses/ties vs question | p50 ms |")
            print("| --- | --- | " + " | ".join("---" for _ in langs) + " | --- | --- |")
            for s in systems:
                by = languages(runs[s])
                wl = wins_losses(runs["question"], runs[s]) if s != "question" and "question" in runs else ("", "", "")
                print(f"| {s} | {by['all']:.3f} | " + " | ".join(f"{by.get(lang, 0):.3f}" for lang in langs)
                      + f" | {'/'.join(map(str, wl)) if s != 'question' else '-'} | {runs[s]['p50_ms']:.1f} |")
    finally:
        oracle.close()
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1, ensure_ascii=False), encoding="utf-8")


async def _triples(plain_cmd: list[str], env: dict[str, str], questions: list[dict]) -> dict[str, list[float]]:
    """One plain-server session and one Oracle session (on the warm engine); each question goes to the plain
    server, to Oracle without variants and to Oracle with its four, one right after the other, the order rotating."""
    from contextlib import AsyncExitStack

    from engine_client import two_sessions

    times: dict[str, list[float]] = {"plain": [], "oracle": [], "oracle + 4 variants": []}
    async with AsyncExitStack() as stack:
        plain, oracle = await two_sessions(stack, plain_cmd, env)
        for i, q in enumerate(questions):
            calls = [("plain", plain, "search", {"query": q["query"], "limit": notes.CUTOFF}),
                     ("oracle", oracle, "oracle_search", {"query": q["query"], "limit": notes.CUTOFF}),
                     ("oracle + 4 variants", oracle, "oracle_search",
                      {"query": q["query"], "limit": notes.CUTOFF, "variants": q["variants"]})]
            for name, client, tool, args in calls[i % 3:] + calls[:i % 3]:
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                times[name].append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {result.content}")
    return times


def latency(args: argparse.Namespace) -> None:
    """p50 at a real MCP client over stdio: no variants, four variants, and the plain server, alternated."""
    import shutil
    import tempfile

    import anyio

    sys.path.insert(0, str(REPO / "benchmarks"))
    from engine import ORACLE, bench_env, load, stop_engines
    from engine_client import prepare

    questions = load_set("natural") + load_set("judged")
    work = Path(tempfile.mkdtemp(prefix="oracle-bench-variants-"))
    env = bench_env(work, str(ROOT))
    try:
        plain_db = prepare(args.data, work, env)
        plain_cmd = [sys.executable, str(REPO / "benchmarks" / "plain_server.py"), str(plain_db)]
        for n in range(args.rounds):
            times = anyio.run(_triples, plain_cmd, env, questions)
            p50 = {k: statistics.median(v) for k, v in times.items()}
            ratio = statistics.median(a / b for a, b in zip(times["oracle + 4 variants"], times["oracle"]))
            print(f"round {n + 1} ({len(questions)} questions, load {load()}): p50 plain {p50['plain']:.1f} ms, "
                  f"oracle {p50['oracle']:.1f} ms, oracle + 4 variants {p50['oracle + 4 variants']:.1f} ms; "
                  f"4 variants / none: x{p50['oracle + 4 variants'] / p50['oracle']:.2f} (per-question median "
                  f"x{ratio:.2f}), oracle / plain x{p50['oracle'] / p50['plain']:.2f}")
    finally:
        stop_engines(env)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="/tmp/natbrain-main")
    parser.add_argument("--sets", default="natural,judged")
    parser.add_argument("--systems", default="question,v1,v2,v3,v4,fused")
    parser.add_argument("--json")
    parser.add_argument("--latency", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.latency:
        latency(args)
    else:
        quality(args)


if __name__ == "__main__":
    main()
