"""How long the first calls take, where they wait for what loads once (issue 40, item 9), with real processes.

    python benchmarks/first_calls.py [--runs 3] [--json out.json]

On a copy of the bundled knowledge/, indexed once by `oracle index`, each run measures:

1. **cold stdio session**: `oracle serve` (the default: a relay that starts the shared engine) with no engine running
   (a fresh ORACLE_RUNTIME_DIR), timed at the official MCP client: spawn -> `tools/list` answered ("connect"), then
   the first `oracle_search` (it waits for the engine's start-up and the embedding model); then a second session
   attaching to that warm engine, the same two figures;
2. **new HTTP server**: `oracle serve --http`: spawn -> `/health` answers, then the first `POST /api/learn` and a
   second one;
3. **first learn after the engine idled out**: ORACLE_ENGINE_IDLE=2; a session searches and leaves, the engine
   exits when idle, then a new session connects and learns (a new engine: models loaded again).

Each first call that waits logs what it waits for (server/services/support/loading.py); over MCP a client with a
progressToken gets progress notifications saying the same (tests/system/test_first_calls.py). Figures: medians
over the runs (min-max), seconds, with the 1-minute load average at the start and end.
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
from pathlib import Path
from typing import Any

import anyio
import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from _procs import free_port, oracle_cmd, stop_engines, stop_process  # noqa: E402

CEILING = 300.0


def _env(root: Path, data: Path, runtime: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), ORACLE_RUNTIME_DIR=str(runtime), **extra)
    return env


async def _session(env: dict[str, str], log: Path, calls: list[tuple[str, dict]]) -> dict[str, float]:
    """Spawn `oracle serve` over stdio; seconds to `tools/list`, then to each call's answer."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp_types import Implementation

    out: dict[str, float] = {}
    params = StdioServerParameters(command=oracle_cmd()[0], args=[*oracle_cmd()[1:], "serve"], env=env)
    with open(log, "a", encoding="utf-8") as errlog:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), client_info=Implementation(name="bench", version="1"),
                          read_timeout_seconds=CEILING) as client:
            await client.list_tools()
            out["connect"] = time.perf_counter() - t0
            for name, args in calls:
                t1 = time.perf_counter()
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content
                out[name] = time.perf_counter() - t1
    return out


def _engine_pids(runtime: Path) -> list[int]:
    pids = []
    for record in runtime.glob("e-*.json"):
        try:
            pid = int(json.loads(record.read_text())["pid"])
            os.kill(pid, 0)
            pids.append(pid)
        except (OSError, ValueError, KeyError):
            continue
    return pids


def cold_stdio(root: Path, data: Path, work: Path) -> dict[str, float]:
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir=work))
    env = _env(root, data, runtime)
    search = ("oracle_search", {"query": "why quote fts5 search terms"})
    try:
        cold = anyio.run(_session, env, work / "stdio.log", [search])
        warm = anyio.run(_session, env, work / "stdio.log", [search])
    finally:
        stop_engines(runtime)
    return {"stdio cold: connect": cold["connect"], "stdio cold: first search": cold["oracle_search"],
            "stdio, engine warm: connect": warm["connect"], "stdio, engine warm: first search": warm["oracle_search"]}


def new_http(root: Path, data: Path, work: Path, run: int) -> dict[str, float]:
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir=work))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(work / "http.log", "a", encoding="utf-8") as errlog:
        t0 = time.perf_counter()
        proc = subprocess.Popen([*oracle_cmd(), "serve", "--http", "--port", str(port)], env=_env(root, data, runtime),
                                stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog)
    try:
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > CEILING:
                raise SystemExit(f"the HTTP server did not start: {(work / 'http.log').read_text()[-2000:]}")
            time.sleep(0.05)
        out = {"http: spawn to /health": time.perf_counter() - t0}
        for label in ("http: first POST /api/learn", "http: second POST /api/learn"):
            t1 = time.perf_counter()
            answer = httpx.post(url + "/api/learn", timeout=CEILING, json={
                "pattern": f"Benchmark learning {run} {label}: drain connections before a deploy.",
                "title": f"Bench {run} {label.split(':')[1].split()[0]}"})
            assert answer.status_code == 201, answer.text
            out[label] = time.perf_counter() - t1
        return out
    finally:
        stop_process(proc)


def after_idle(root: Path, data: Path, work: Path, run: int) -> dict[str, float]:
    runtime = Path(tempfile.mkdtemp(prefix="rt-", dir=work))
    env = _env(root, data, runtime, ORACLE_ENGINE_IDLE="2")
    try:
        anyio.run(_session, env, work / "idle.log", [("oracle_search", {"query": "deploy"})])
        deadline = time.monotonic() + CEILING
        while _engine_pids(runtime):  # the engine exits 2 s after its last session left
            if time.monotonic() > deadline:
                raise SystemExit("the engine never idled out")
            time.sleep(0.2)
        learn = ("oracle_learn", {"pattern": f"After idle {run}: pin the embedding model version.",
                                  "title": f"After idle {run}"})
        again = anyio.run(_session, env, work / "idle.log", [learn])
    finally:
        stop_engines(runtime)
    return {"after idle-out: connect": again["connect"], "after idle-out: first learn": again["oracle_learn"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="oracle-first-calls-"))
    try:
        root, data = work / "root", work / "data"
        shutil.copytree(REPO / "knowledge", root)
        done = subprocess.run([*oracle_cmd(), "index"], env=_env(root, data, work / "rt-index"), capture_output=True,
                              text=True, timeout=CEILING)
        assert done.returncode == 0, done.stderr
        samples: dict[str, list[float]] = {}
        for run in range(args.runs):
            for figures in (cold_stdio(root, data, work), new_http(root, data, work, run),
                            after_idle(root, data, work, run)):
                for key, value in figures.items():
                    samples.setdefault(key, []).append(value)
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr, flush=True)
        # the HTTP server's own log, and each engine's (server/engine/channel.py: in its runtime dir)
        waits, inside = [], {}
        for path in work.rglob("*.log"):
            for line in path.read_text(errors="replace").splitlines():
                if " waits for " in line:
                    waits.append(line)
                elif " answered after " in line:  # "oracle: oracle_learn answered after 9.1 s (first call...)"
                    tool, _, rest = line.removeprefix("oracle: ").partition(" answered after ")
                    inside.setdefault(tool, []).append(float(rest.split()[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_end = os.getloadavg()[0]
    print(f"first calls, {args.runs} runs, load {load_start:.1f} -> {load_end:.1f} ({os.cpu_count()} cores):")
    rows: dict[str, Any] = {}
    for key, values in samples.items():
        rows[key] = {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
                     "max": round(max(values), 2)}
        print(f"  {key:<38} {statistics.median(values):6.2f} s  ({min(values):.2f}-{max(values):.2f})")
    print("what the first calls waited for (server logs):")
    for line in sorted(set(w.split(": ", 1)[1] if ": " in w else w for w in waits)):
        print(f"  {line}")
    print("inside the server, from the call's arrival to its answer, for the calls that waited (medians):")
    for tool, values in sorted(inside.items()):
        print(f"  {tool:<38} {statistics.median(values):6.2f} s  over {len(values)} calls")
    if args.json:
        args.json.write_text(json.dumps({"load": [load_start, load_end], "runs": args.runs, "figures": rows}, indent=2))


if __name__ == "__main__":
    main()
