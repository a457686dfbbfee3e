"""Memory and first-call latency of stdio sessions on one shared engine (server/engine/process.py) vs standalone servers.

    .venv/bin/python benchmarks/engine.py [--root PATH [--data DIR]] [--sessions 1,4,8] [--standalone 1,4] [--first 5]

Every session is a real `oracle serve` over stdio driven by the official MCP SDK client, and makes one hybrid
`oracle_search` (`--queries FILE`: every question of a judged set, a hybrid run) before memory is read. Figures:
- memory of all Oracle processes of the run (the sessions, plus the engine when there is one), from /proc:
  the sum of RSS (what `ps` shows, shared pages counted in each process) and of PSS (shared pages split);
- first `oracle_search` in a new session while the engine is warm: the call alone, and spawn to answer.
The knowledge base (default: the bundled knowledge/) is indexed once into a temp data dir (`--data DIR`: a copy of
an existing index of the root, e.g. benchmarks/out/natbrain-data for nat-brain, is used instead and DIR is never
written); runtime, cache and data folders are private to the run, and every engine is stopped at the end. Oracle
runs as `python -m oracle_server.cli` from this source tree (PYTHONPATH), so a git worktree measures its own code.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
from trees import importable  # noqa: E402  (benchmarks/ is sys.path[0] for a script)
ORACLE = [sys.executable, "-m", "oracle_server.cli"]  # this tree's code (the environment's PYTHONPATH names REPO)
QUERY = "how should we handle retries and flaky network calls"
QUERIES = [QUERY]  # --queries: a judged set's questions (e.g. nat-brain's 60, Thai ones load the second model)


def proc_mem(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MB."""
    rss = pss = 0.0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("Pss:"):
                pss = int(line.split()[1]) / 1024
    except OSError:
        pass
    return rss, pss


def oracle_pids(data_dir: str) -> dict[int, str]:
    """Every live process of this run: `oracle serve` sessions (by their environment) and engines (by argv)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"engine" in argv and b"run" in argv and data_dir.encode() in argv:
            found[int(proc.name)] = "engine"
        elif b"serve" in argv and f"ORACLE_DATA_DIR={data_dir}".encode() in environ:
            found[int(proc.name)] = "session"
    return found


def memory(data_dir: str) -> dict:
    pids = oracle_pids(data_dir)
    per = {pid: proc_mem(pid) for pid in pids}
    engine = [per[p] for p, kind in pids.items() if kind == "engine"]
    sessions = [per[p] for p, kind in pids.items() if kind == "session"]
    return {"processes": len(pids), "engines": len(engine),
            "rss_total_mb": round(sum(r for r, _ in per.values())), "pss_total_mb": round(sum(p for _, p in per.values())),
            "engine_rss_mb": round(sum(r for r, _ in engine)),
            "session_rss_mb": [round(r, 1) for r, _ in sessions], "session_pss_mb": [round(p, 1) for _, p in sessions]}


async def open_sessions(stack: AsyncExitStack, env: dict[str, str], n: int, args: list[str]) -> list:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    clients = []
    for _ in range(n):
        params = StdioServerParameters(command=ORACLE[0], args=[*ORACLE[1:], "serve", *args], env=env, cwd=str(REPO))
        errlog = stack.enter_context(open(os.devnull, "w"))
        client = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300))
        for query in QUERIES:  # one hybrid run: every model a search needs is loaded
            result = await client.call_tool("oracle_search", {"query": query, "mode": "hybrid", "limit": 10})
            assert not result.is_error, result
        serving = (await client.call_tool("oracle_stats", {})).structured_content["serving"]
        assert serving["mode"] == ("in-process" if "--standalone" in args else "engine"), serving
        clients.append(client)
    return clients


async def measure_sessions(env: dict[str, str], n: int, args: list[str]) -> dict:
    async with AsyncExitStack() as stack:
        await open_sessions(stack, env, n, args)
        await anyio.sleep(1.0)
        return {**memory(env["ORACLE_DATA_DIR"]), "load": load()}


async def first_search(env: dict[str, str]) -> tuple[float, float]:
    """(ms of the first oracle_search call, ms from spawn to its answer) in a new session on the warm engine."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=ORACLE[0], args=[*ORACLE[1:], "serve"], env=env, cwd=str(REPO))
    with open(os.devnull, "w") as errlog:
        spawned = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            start = time.perf_counter()
            result = await client.call_tool("oracle_search", {"query": QUERY, "mode": "hybrid", "limit": 5})
            done = time.perf_counter()
            assert not result.is_error and result.structured_content["hits"], result
            stats = await client.call_tool("oracle_stats", {})
            assert stats.structured_content["serving"]["mode"] == "engine", stats.structured_content["serving"]
    return (done - start) * 1000, (done - spawned) * 1000


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def bench_env(work: Path, root: str) -> dict[str, str]:
    """A run's environment: no ORACLE_* of the caller's, private runtime, cache and data folders, this tree first
    on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=os.path.realpath(root), ORACLE_DATA_DIR=str(work / "data"),
               ORACLE_RUNTIME_DIR=str(work / "run"), ORACLE_CACHE_DIR=str(work / "cache"), PYTHONIOENCODING="utf-8",
               PYTHONPATH=os.pathsep.join([importable(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return env


def stop_engines(env: dict[str, str]) -> None:
    subprocess.run([*ORACLE, "engine", "stop"], env=env, cwd=REPO, capture_output=True, timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=str(REPO / "knowledge"))
    parser.add_argument("--data", help="an existing index of --root, copied (never written)")
    parser.add_argument("--sessions", default="1,4,8")
    parser.add_argument("--standalone", default="1,4")
    parser.add_argument("--first", type=int, default=5, help="new sessions timed on the warm engine")
    parser.add_argument("--queries", help="a judged query set (JSON list of {query}); each session searches them all")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    if args.queries:
        QUERIES[:] = [q["query"] for q in json.loads(Path(args.queries).read_text(encoding="utf-8"))]

    work = Path(tempfile.mkdtemp(prefix="oracle-bench-engine-"))
    env = bench_env(work, args.root)
    figures: dict = {"root": args.root, "standalone": {}, "engine": {}, "load": [load()]}
    try:
        if args.data:
            shutil.copytree(args.data, work / "data")
        subprocess.run([*ORACLE, "index"], env=env, cwd=REPO, check=True, capture_output=True, timeout=3600)
        subprocess.run([sys.executable, "-m", "oracle_server.mcp.warm"], env=env, cwd=REPO, capture_output=True, timeout=600)
        for n in [int(x) for x in args.standalone.split(",") if x]:
            figures["standalone"][n] = anyio.run(measure_sessions, env, n, ["--standalone"])
            print(f"standalone x{n}: {figures['standalone'][n]}", flush=True)
        for n in [int(x) for x in args.sessions.split(",") if x]:
            stop_engines(env)  # each count starts from no engine
            figures["engine"][n] = anyio.run(measure_sessions, env, n, [])
            print(f"engine x{n}: {figures['engine'][n]}", flush=True)
        times = [anyio.run(first_search, env) for _ in range(args.first)]  # the engine is warm from the last count
        figures["first_search_warm_engine_ms"] = {
            "call": [round(c, 1) for c, _ in times], "spawn_to_answer": [round(s, 1) for _, s in times],
            "call_median": round(statistics.median(c for c, _ in times), 1),
            "spawn_to_answer_median": round(statistics.median(s for _, s in times), 1)}
        print(f"first oracle_search in a new session, warm engine: {figures['first_search_warm_engine_ms']}", flush=True)
        figures["load"].append(load())
        print(f"load average (1, 5, 15 min) at start / end: {figures['load']}", flush=True)
    finally:
        stop_engines(env)
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
