"""Per-call latency from the first query after spawn, and save -> searchable, for stdio sessions on the shared
engine (server/engine/process.py, server/engine/relay.py), at the official MCP SDK client (issue 24's open figures).

    .venv/bin/python benchmarks/engine_client.py latency [--runs 2] [--data DIR] [--json out.json]
    .venv/bin/python benchmarks/engine_client.py paired [--runs 3] [--data DIR] [--json out.json]
    .venv/bin/python benchmarks/engine_client.py save [--sessions 4] [--saves 10] [--standalone] [--json out.json]

latency (nat-brain, its 60 judged questions, limit 10), per run, in this order:
  1. the plain whole-file FTS5 server (benchmarks/plain_server.py), spawned over stdio: every question once;
  2. per mode (fts, hybrid): `oracle serve` with no engine running (cold: the session starts the engine), then
     a new `oracle serve` on the engine the first one left warm, then `oracle serve --standalone`; each session
     runs the questions from the first call after `tools/list`: no warm-up call, no wait for the server to settle;
  3. in this process, on the same index: `run_search` per question (hybrid) with the query-embedding calls and the
     query-expansion step (server/services/capabilities/search/fusion.py `_expand`) timed inside it.
  Figures per series: first call, p50, p95, p95/p50, p50 / the plain server's p50 (medians over runs, and each run).
paired (nat-brain): the plain server and a new session on the warm engine spawned together, each question sent to
  both one right after the other: p50, p95 and their ratio measured at the same moments (read these ratios on a
  busy machine; `latency` runs its series one after another).
save (a copy of the starter knowledge/): N sessions attached to one engine (`--standalone`: N standalone servers,
  for comparison); per save, a new note with a word no other note has is written into the root, and every
  session polls `oracle_search` (fts, then hybrid, alternately) until the note is the first hit: ms from the write
  to the first answer that has it, per session and mode. What a save costs is read from /proc and the index:
  the processes holding an inotify watch (those that can react to a save), each process's CPU time during the
  save, and the number of rows the index wrote for the note's file (a trigger on `documents` in the run's copy).

Every process runs this source tree (`python -m oracle_server.cli`, PYTHONPATH), with private runtime, cache and data
folders; the 1-, 5- and 15-minute load averages are printed with every figure (a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from engine import ORACLE, bench_env, load, oracle_pids, stop_engines  # noqa: E402  (benchmarks/engine.py)

EVAL = REPO.parent / "shared" / "eval-data"
if not EVAL.is_dir():
    EVAL = Path("/work/shared/eval-data")
NATBRAIN = EVAL / "nat-brain-oracle" / "ψ" / "memory"
QUERIES = EVAL / "nat-brain-oracle" / "queries-judged.json"
MODES = ("fts", "hybrid")
LIMIT = 10


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def series_figures(calls: list[float]) -> dict:
    p50, p95 = statistics.median(calls), percentile(calls, 0.95)
    return {"first": round(calls[0], 1), "p50": round(p50, 2), "p95": round(p95, 2), "p95/p50": round(p95 / p50, 2),
            "max": round(max(calls), 1), "n": len(calls)}


# -- latency -----------------------------------------------------------------------------------------------
async def run_session(command: list[str], env: dict[str, str], tool: str, queries: list[str], mode: str | None,
                      expect: str | None = None) -> dict:
    """Spawn a stdio server, list its tools, then time each question from the first call on."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO))
    calls = []
    with open(os.devnull, "w") as errlog:
        spawned = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            await client.list_tools()
            listed = time.perf_counter()
            for q in queries:
                args = {"query": q, "limit": LIMIT, **({"mode": mode} if mode else {})}
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                calls.append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {result.content}")
            serving = None
            if expect is not None:
                serving = (await client.call_tool("oracle_stats", {})).structured_content["serving"]
                assert serving["mode"] == expect, serving
    return {**series_figures(calls), "spawn_to_tools_ms": round((listed - spawned) * 1000, 1), "calls": calls,
            "load": load()}


async def two_sessions(stack: AsyncExitStack, plain_cmd: list[str], env: dict[str, str]) -> tuple:
    """The plain server and a new `oracle serve` on the warm engine, spawned together on `stack`, each past its
    `tools/list`: (plain client, oracle client)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    errlog = stack.enter_context(open(os.devnull, "w"))
    plain = await stack.enter_async_context(Client(stdio_client(StdioServerParameters(
        command=plain_cmd[0], args=plain_cmd[1:], env=env, cwd=str(REPO)), errlog=errlog), read_timeout_seconds=300))
    oracle = await stack.enter_async_context(Client(stdio_client(StdioServerParameters(
        command=ORACLE[0], args=[*ORACLE[1:], "serve"], env=env, cwd=str(REPO)), errlog=errlog),
        read_timeout_seconds=300))
    await plain.list_tools()
    await oracle.list_tools()
    return plain, oracle


async def paired_sessions(plain_cmd: list[str], env: dict[str, str], queries: list[str], mode: str) -> dict:
    """The plain server and a new `oracle serve` on the warm engine, spawned together; each question goes to both,
    one right after the other (which one first alternates), from the first call after `tools/list`. Both see the
    same load at the same moment, so the ratio holds on a busy machine where two series run apart do not."""
    times: dict[str, list[float]] = {"plain": [], "oracle": []}
    async with AsyncExitStack() as stack:
        plain, oracle = await two_sessions(stack, plain_cmd, env)
        for i, q in enumerate(queries):
            pair = [("plain", plain, "search", {"query": q, "limit": LIMIT}),
                    ("oracle", oracle, "oracle_search", {"query": q, "limit": LIMIT, "mode": mode})]
            for name, client, tool, args in (pair if i % 2 == 0 else pair[::-1]):
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                times[name].append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {result.content}")
        serving = (await oracle.call_tool("oracle_stats", {})).structured_content["serving"]
        assert serving["mode"] == "engine", serving
    o, pl = series_figures(times["oracle"]), series_figures(times["plain"])
    return {"oracle": o, "plain": pl, "x plain": round(o["p50"] / pl["p50"], 2),
            "per-query ratio p50": round(statistics.median(a / b for a, b in zip(times["oracle"], times["plain"])), 2),
            "load": load()}


def prepare(data: str, work: Path, env: dict[str, str]) -> Path:
    """A private copy of the nat-brain index (brought up to this code's schema), the handshake cache recorded, and
    the plain server's database built: what every latency series starts from. Returns that database."""
    from plain_server import build

    shutil.copytree(data, work / "data")
    subprocess.run([*ORACLE, "index"], env=env, cwd=REPO, check=True, capture_output=True, timeout=3600)
    subprocess.run([sys.executable, "-m", "oracle_server.mcp.warm"], env=env, cwd=REPO, capture_output=True, timeout=600)
    plain_db = work / "plain.db"
    build(plain_db, NATBRAIN)
    return plain_db


def paired(args: argparse.Namespace) -> dict:
    queries = [q["query"] for q in json.loads(QUERIES.read_text(encoding="utf-8"))]
    work = Path(tempfile.mkdtemp(prefix="oracle-bench-pair-"))
    env = bench_env(work, str(NATBRAIN))
    runs = []
    try:
        plain_db = prepare(args.data, work, env)
        plain_cmd = [sys.executable, str(REPO / "benchmarks" / "plain_server.py"), str(plain_db)]
        # the engine started and warm (a first session made one hybrid search, then left), as for a new agent window
        anyio.run(run_session, [*ORACLE, "serve"], env, "oracle_search", queries[:1], "hybrid", "engine")
        time.sleep(5)
        for n in range(args.runs):
            run = {mode: anyio.run(paired_sessions, plain_cmd, env, queries, mode) for mode in MODES}
            for mode in MODES:
                f = run[mode]
                print(f"run {n + 1} {mode}: oracle first {f['oracle']['first']} p50 {f['oracle']['p50']} p95"
                      f" {f['oracle']['p95']} p95/p50 {f['oracle']['p95/p50']}; plain p50 {f['plain']['p50']}"
                      f" p95 {f['plain']['p95']}; p50 x plain {f['x plain']}, per-query ratio p50"
                      f" {f['per-query ratio p50']} (load {f['load']})", flush=True)
            runs.append(run)
    finally:
        wait_no_engine(env)
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    summary = {mode: {"oracle p50": med(r[mode]["oracle"]["p50"] for r in runs),
                      "oracle p95": med(r[mode]["oracle"]["p95"] for r in runs),
                      "oracle p95/p50": med(r[mode]["oracle"]["p95/p50"] for r in runs),
                      "oracle first": med(r[mode]["oracle"]["first"] for r in runs),
                      "plain p50": med(r[mode]["plain"]["p50"] for r in runs),
                      "x plain": med(r[mode]["x plain"] for r in runs),
                      "per-query ratio p50": med(r[mode]["per-query ratio p50"] for r in runs)} for mode in MODES}
    print(json.dumps(summary, indent=1))
    return {"runs": runs, "summary": summary}


def wait_no_engine(env: dict[str, str], timeout: float = 60) -> None:
    stop_engines(env)
    deadline = time.monotonic() + timeout
    while any(kind == "engine" for kind in oracle_pids(env["ORACLE_DATA_DIR"]).values()):
        if time.monotonic() > deadline:
            raise RuntimeError("the engine did not stop")
        time.sleep(0.1)


def in_process(env: dict[str, str], queries: list[str]) -> dict:
    """Hybrid run_search per question with its embedding calls and `_expand` timed inside (warm, after warm-up)."""
    from oracle_indexer.config import Settings
    from oracle_server.services.capabilities.search import fusion as fusion_module
    from oracle_server.services.capabilities.search import pipeline as search_module
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest

    oracle = Oracle.open(Settings.from_env(root=Path(env["ORACLE_ROOT"]), data_dir=Path(env["ORACLE_DATA_DIR"])))
    timing = {"embed": 0.0, "expand": 0.0}
    original_expand = fusion_module._expand

    def timed(name, fn):
        def wrapper(*a, **k):
            began = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timing[name] += (time.perf_counter() - began) * 1000
        return wrapper

    try:
        for mode in MODES:  # warm-up: loads both models and the segmenter
            for q in queries[:5]:
                search_module.run_search(oracle, SearchRequest(query=q, limit=LIMIT, mode=mode))
        oracle.embedder.embed_query = timed("embed", oracle.embedder.embed_query)
        multi = getattr(getattr(oracle.indexer, "multilingual", None), "embedder", None)
        if multi is not None:
            multi.embed = timed("embed", multi.embed)
        fusion_module._expand = timed("expand", original_expand)
        out: dict = {}
        for mode in MODES:
            rows = []
            for q in queries:
                timing.update(embed=0.0, expand=0.0)
                began = time.perf_counter()
                search_module.run_search(oracle, SearchRequest(query=q, limit=LIMIT, mode=mode))
                rows.append(((time.perf_counter() - began) * 1000, timing["embed"], timing["expand"]))
            total = [r[0] for r in rows]
            out[mode] = {"p50": round(statistics.median(total), 2), "p95": round(percentile(total, 0.95), 2)}
            if mode == "hybrid":
                out[mode].update(
                    embed_p50=round(statistics.median(r[1] for r in rows), 2),
                    embed_p95=round(percentile([r[1] for r in rows], 0.95), 2),
                    expand_p50=round(statistics.median(r[2] for r in rows), 2),
                    expand_p95=round(percentile([r[2] for r in rows], 0.95), 2),
                    embed_share=round(sum(r[1] for r in rows) / sum(total), 3),
                    expand_share=round(sum(r[2] for r in rows) / sum(total), 3),
                    expanded_calls=sum(1 for r in rows if r[2] > 0))
        out["load"] = load()
        return out
    finally:
        fusion_module._expand = original_expand
        oracle.close()


def latency_run(env: dict[str, str], plain_db: Path, queries: list[str]) -> dict:
    run: dict = {"load_start": load()}
    plain = [sys.executable, str(REPO / "benchmarks" / "plain_server.py"), str(plain_db)]
    run["plain"] = anyio.run(run_session, plain, env, "search", queries, None)
    print(f"  plain FTS5: p50 {run['plain']['p50']} p95 {run['plain']['p95']} (load {run['plain']['load']})", flush=True)
    for mode in MODES:
        wait_no_engine(env)
        run[f"engine cold {mode}"] = anyio.run(run_session, [*ORACLE, "serve"], env, "oracle_search", queries, mode,
                                               "engine")
        run[f"engine warm {mode}"] = anyio.run(run_session, [*ORACLE, "serve"], env, "oracle_search", queries, mode,
                                               "engine")
        wait_no_engine(env)
        run[f"standalone {mode}"] = anyio.run(run_session, [*ORACLE, "serve", "--standalone"], env, "oracle_search",
                                              queries, mode, "in-process")
        for kind in ("engine cold", "engine warm", "standalone"):
            f = run[f"{kind} {mode}"]
            print(f"  {kind} {mode}: first {f['first']} p50 {f['p50']} p95 {f['p95']} p95/p50 {f['p95/p50']}"
                  f" x plain {f['p50'] / run['plain']['p50']:.2f} (load {f['load']})", flush=True)
    run["in-process"] = in_process(env, queries)
    print(f"  in-process: {run['in-process']}", flush=True)
    run["load_end"] = load()
    return run


def latency(args: argparse.Namespace) -> dict:
    queries = [q["query"] for q in json.loads(QUERIES.read_text(encoding="utf-8"))]
    work = Path(tempfile.mkdtemp(prefix="oracle-bench-ec-"))
    env = bench_env(work, str(NATBRAIN))
    runs = []
    try:
        plain_db = prepare(args.data, work, env)
        for n in range(args.runs):
            print(f"run {n + 1}/{args.runs} (load {load()})", flush=True)
            runs.append(latency_run(env, plain_db, queries))
    finally:
        wait_no_engine(env)
        shutil.rmtree(work, ignore_errors=True)
    summary = summarise_latency(runs)
    for r in runs:  # per-call figures kept, rounded, to see when the slow calls come
        for v in r.values():
            if isinstance(v, dict) and "calls" in v:
                v["calls"] = [round(c, 1) for c in v["calls"]]
    return {"runs": runs, "summary": summary}


def per_run(runs: list[dict], series: str) -> str:
    return ", ".join(f"{r[series]['p50']} ({r[series]['p95']})" for r in runs)


def summarise_latency(runs: list[dict]) -> dict:
    med = statistics.median
    plain = med(r["plain"]["p50"] for r in runs)
    out = {"plain p50": round(plain, 2), "plain p95": round(med(r["plain"]["p95"] for r in runs), 2)}
    print("\n| series | first call ms | p50 ms | p95 ms | p95/p50 | p50 / plain p50 | per run p50 (p95) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    print(f"| plain FTS5 | {med(r['plain']['first'] for r in runs):.1f} | {plain:.2f} | {out['plain p95']:.2f} |"
          f" {med(r['plain']['p95/p50'] for r in runs):.2f} | 1.00 |"
          f" {per_run(runs, 'plain')} |")
    for mode in MODES:
        for kind in ("engine cold", "engine warm", "standalone"):
            s = f"{kind} {mode}"
            p50, p95 = med(r[s]["p50"] for r in runs), med(r[s]["p95"] for r in runs)
            ratio = med(r[s]["p95/p50"] for r in runs)
            out[s] = {"first": med(r[s]["first"] for r in runs), "p50": p50, "p95": p95, "p95/p50": ratio,
                      "x plain": round(med(r[s]["p50"] / r["plain"]["p50"] for r in runs), 2)}
            print(f"| {s} | {out[s]['first']:.1f} | {p50:.2f} | {p95:.2f} | {ratio:.2f} | {out[s]['x plain']:.2f} |"
                  f" {per_run(runs, s)} |")
    ip = [r["in-process"] for r in runs]
    out["in-process"] = {k: med(x["hybrid"][k] for x in ip) for k in ip[0]["hybrid"]}
    out["in-process fts p50"] = med(x["fts"]["p50"] for x in ip)
    print(f"\nin-process (medians of runs): fts p50 {out['in-process fts p50']} ms; hybrid {out['in-process']}")
    print(f"loads: {[(r['load_start'], r['load_end']) for r in runs]}")
    return out


# -- save -> searchable ----------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watchers(pids: dict[int, str]) -> list[int]:
    """The processes among `pids` that hold an inotify instance (a file watcher)."""
    out = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                    out.append(pid)
                    break
            except OSError:
                continue
    return out


def add_write_counter(db: Path) -> None:
    """A trigger in the run's copy of the index: every section row written (inserted) is counted per file."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_writes (file TEXT, at REAL)")
        conn.execute("CREATE TRIGGER IF NOT EXISTS bench_count AFTER INSERT ON documents BEGIN"
                     " INSERT INTO bench_writes VALUES (NEW.file, julianday('now')); END")
    conn.close()


def writes_for(db: Path, name: str) -> int:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM bench_writes WHERE file LIKE ?", (f"%{name}",)).fetchone()[0]
    finally:
        conn.close()


async def save_run(env: dict[str, str], n: int, saves: int, standalone: bool, timeout: float) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root, data = Path(env["ORACLE_ROOT"]), Path(env["ORACLE_DATA_DIR"])
    rows = []
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(n):
            params = StdioServerParameters(command=ORACLE[0], args=[*ORACLE[1:], "serve",
                                           *(["--standalone"] if standalone else [])], env=env, cwd=str(REPO))
            errlog = stack.enter_context(open(os.devnull, "w"))
            client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300))
            for mode in MODES:  # models loaded, every session past its first call
                await client.call_tool("oracle_search", {"query": "retry backoff", "mode": mode, "limit": 5})
            serving = (await client.call_tool("oracle_stats", {})).structured_content["serving"]
            assert serving["mode"] == ("in-process" if standalone else "engine"), serving
            clients.append(client)
        await anyio.sleep(3.0)  # start-up work done (a standalone server's warm-up and initial sync)
        pids = oracle_pids(str(data))
        watching = watchers(pids)
        kinds = {pid: kind for pid, kind in pids.items()}
        for i in range(saves):
            word = f"zephyrquill{i}x{int(time.time() * 1000) % 100000}"
            name = f"bench-save-{word}.md"
            found: dict[tuple[int, str], float] = {}
            cpu_before = {pid: cpu_seconds(pid) for pid in pids}
            text = (f"# Tide table {word}\n\n## Rule\n\nBoats from {word} harbour leave at high tide, never at low"
                    " tide; the harbour master posts the table each morning.\n")
            written = time.perf_counter()
            (root / "learnings" / name).write_text(text, encoding="utf-8")

            async def poll(k: int, client) -> None:
                turn = 0
                while len([m for m in MODES if (k, m) in found]) < len(MODES):
                    mode = MODES[turn % len(MODES)]
                    turn += 1
                    if (k, mode) in found:
                        continue
                    result = await client.call_tool("oracle_search", {"query": word, "mode": mode, "limit": 3})
                    hits = (result.structured_content or {}).get("hits") or []
                    if hits and word in (hits[0].get("title") or ""):
                        found[(k, mode)] = (time.perf_counter() - written) * 1000
                    elif time.perf_counter() - written > timeout:
                        found.setdefault((k, mode), float("inf"))
                    else:
                        await anyio.sleep(0.02)

            async with anyio.create_task_group() as tg:
                for k, client in enumerate(clients):
                    tg.start_soon(poll, k, client)
            await anyio.sleep(1.0)  # a late second reaction (another watcher) would show in CPU and writes
            cpu = {pid: round(cpu_seconds(pid) - cpu_before[pid], 3) for pid in pids}
            row = {"save": i, "ms": {f"s{k} {m}": round(v, 1) for (k, m), v in sorted(found.items())},
                   "max_ms": {m: round(max(v for (k, mm), v in found.items() if mm == m), 1) for m in MODES},
                   "cpu_s": {f"{kinds[p]} {p}": c for p, c in cpu.items()}, "rows_written": writes_for(data / "oracle.db", name),
                   "load": load()}
            rows.append(row)
            print(f"  save {i}: max fts {row['max_ms']['fts']} ms, max hybrid {row['max_ms']['hybrid']} ms;"
                  f" rows written {row['rows_written']}; cpu {row['cpu_s']} (load {row['load']})", flush=True)
            await anyio.sleep(0.5)
    return {"processes": {str(p): k for p, k in kinds.items()}, "watching": [f"{kinds[p]} {p}" for p in watching],
            "saves": rows}


def save(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="oracle-bench-save-"))
    shutil.copytree(REPO / "knowledge", work / "root")
    env = bench_env(work, str(work / "root"))
    try:
        subprocess.run([*ORACLE, "index"], env=env, cwd=REPO, check=True, capture_output=True, timeout=3600)
        subprocess.run([sys.executable, "-m", "oracle_server.mcp.warm"], env=env, cwd=REPO, capture_output=True, timeout=600)
        add_write_counter(work / "data" / "oracle.db")
        result = anyio.run(save_run, env, args.sessions, args.saves, args.standalone, args.timeout)
    finally:
        wait_no_engine(env)
        shutil.rmtree(work, ignore_errors=True)
    per = {m: [v for r in result["saves"] for k, v in r["ms"].items() if k.endswith(m)] for m in MODES}
    worst = {m: [r["max_ms"][m] for r in result["saves"]] for m in MODES}
    result["summary"] = {m: {"median_ms": round(statistics.median(per[m]), 1), "max_ms": round(max(per[m]), 1),
                             "median_of_worst_session_ms": round(statistics.median(worst[m]), 1),
                             "within_1500ms": f"{sum(1 for v in per[m] if v <= 1500)}/{len(per[m])}"} for m in MODES}
    cpu: dict[str, list[float]] = {}
    for r in result["saves"]:
        for k, v in r["cpu_s"].items():
            cpu.setdefault(k, []).append(v)
    result["summary"]["cpu_s_median_per_process"] = {k: round(statistics.median(v), 3) for k, v in cpu.items()}
    result["summary"]["rows_written_per_save"] = sorted({r["rows_written"] for r in result["saves"]})
    result["summary"]["watching"] = result["watching"]
    print(json.dumps(result["summary"], indent=1))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--runs", type=int, default=2)
    lat.add_argument("--data", default=str(REPO / "benchmarks" / "out" / "natbrain-data"),
                     help="an index of nat-brain, copied (never written)")
    pr = sub.add_parser("paired", help="warm engine and plain server, question by question (ratios on a busy machine)")
    pr.add_argument("--runs", type=int, default=3)
    pr.add_argument("--data", default=str(REPO / "benchmarks" / "out" / "natbrain-data"),
                    help="an index of nat-brain, copied (never written)")
    sv = sub.add_parser("save")
    sv.add_argument("--sessions", type=int, default=4)
    sv.add_argument("--saves", type=int, default=10)
    sv.add_argument("--standalone", action="store_true", help="N standalone servers instead of one engine")
    sv.add_argument("--timeout", type=float, default=30.0)
    for p in (lat, pr, sv):
        p.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    print(f"load average at start: {load()}", flush=True)
    figures = {"latency": latency, "paired": paired, "save": save}[args.what](args)
    print(f"load average at end: {load()}", flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
