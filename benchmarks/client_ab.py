"""Two Oracles at the client, call by call: the current tree and an older one, both spawned over stdio, questions
asked of each in turn (the order alternated), so that a busy machine slows both alike.

    git archive REV | tar -x -C /tmp/before
    .venv/bin/python benchmarks/client_ab.py /tmp/before [--rounds 3] [--passes 2]

Both servers are started (`oracle serve --no-watch`, nat-brain, `benchmarks/out/natbrain-data`), warmed up in both
modes and left to go idle (benchmarks/client.py's `settle`); then, per round, nat-brain's 60 judged questions
(limit 10) `--passes` times in fts and then hybrid mode. Per round and mode: each server's p50, and the median of
the per-question differences (current − older). Figures: min / median / max over the rounds, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from trees import importable  # noqa: E402
from client import LAUNCH, LIMIT, MODES, ORACLE, WARMUP, settle, workloads  # noqa: E402


async def run(before: Path, rounds: int, passes: int) -> dict[str, dict[str, list[float]]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    work = workloads(False)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_ROOT=str(work.root), ORACLE_DATA_DIR=str(work.data))
    servers = {
        "current": StdioServerParameters(command=str(ORACLE), args=["serve", "--standalone", "--no-watch"], env=env, cwd=str(REPO)),
        "before": StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "serve", "--no-watch"],
                                        env={**env, "ORACLE_ENGINE": "0", "PYTHONPATH": importable(before)}, cwd=str(REPO)),
    }
    out: dict[str, dict[str, list[float]]] = {}
    async with AsyncExitStack() as stack:
        clients = {}
        for name, params in servers.items():
            errlog = stack.enter_context(open(os.devnull, "w"))
            clients[name] = await stack.enter_async_context(Client(stdio_client(params, errlog=errlog)))
            await clients[name].list_tools()
        for mode in MODES:
            for q in work.queries[:WARMUP]:
                for client in clients.values():
                    await client.call_tool("oracle_search", {"query": q, "limit": LIMIT, "mode": mode})
        await settle()
        for _ in range(rounds):
            for mode in MODES:
                times: dict[str, list[float]] = {name: [] for name in clients}
                for i, q in enumerate(work.queries * passes):
                    order = list(clients) if i % 2 else list(reversed(clients))
                    for name in order:
                        began = time.perf_counter()
                        result = await clients[name].call_tool("oracle_search", {"query": q, "limit": LIMIT, "mode": mode})
                        times[name].append((time.perf_counter() - began) * 1000)
                        if result.is_error:
                            raise RuntimeError(f"{name}: {result.content}")
                figures = out.setdefault(mode, {})
                for name, values in times.items():
                    figures.setdefault(f"{name} p50", []).append(statistics.median(values))
                diffs = [a - b for a, b in zip(times["current"], times["before"])]
                figures.setdefault("current - before, paired median", []).append(statistics.median(diffs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    out = anyio.run(run, args.before, args.rounds, args.passes)
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}; ms, min / median / max over {args.rounds} rounds")
    for mode, figures in out.items():
        for label, values in figures.items():
            print(f"| {mode} | {label} | {min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} |")


if __name__ == "__main__":
    main()
