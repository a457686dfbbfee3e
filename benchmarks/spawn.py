"""Spawn -> first `tools/list` answered, through the official MCP client (as benchmarks/client.py), for the plain
FTS5 server and `oracle serve` with and without the handshake cache, spawns interleaved so that load hits all alike.

    .venv/bin/python benchmarks/spawn.py [--runs 5] [--before DIR]

--before DIR adds an older Oracle for comparison: a source tree exported with
`git archive <commit> | tar -x -C DIR`, run with this venv (PYTHONPATH=DIR). Workload: nat-brain, indexed in
benchmarks/out/natbrain-data (benchmarks/client.py indexes it on first use).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
EVAL = REPO.parent / "shared" / "eval-data"
OUT = REPO / "benchmarks" / "out"
LAUNCH = "import sys; from server.cli import main; sys.exit(main())"


async def once(command: list[str], env: dict[str, str]) -> float:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(OUT))
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.list_tools()
            return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "benchmarks"))
    from plain_server import build

    root = EVAL / "nat-brain-oracle" / "ψ" / "memory"
    plain_db = OUT / "plain-nat-brain.db"
    if not plain_db.exists():
        build(plain_db, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(OUT / "natbrain-data"))
    here = {**env, "PYTHONPATH": str(REPO)}
    variants = {"plain FTS5": ([sys.executable, str(REPO / "benchmarks" / "plain_server.py"), str(plain_db)], env)}
    if args.before:
        variants["oracle before"] = ([sys.executable, "-c", LAUNCH, "serve", "--no-watch"],
                                     {**env, "PYTHONPATH": str(args.before.resolve())})
    variants["oracle, ORACLE_HANDSHAKE_CACHE=0"] = ([sys.executable, "-c", LAUNCH, "serve", "--no-watch"],
                                                   {**here, "ORACLE_HANDSHAKE_CACHE": "0"})
    variants["oracle"] = ([sys.executable, "-c", LAUNCH, "serve", "--no-watch"], here)
    anyio.run(once, *variants["oracle"])  # writes the handshake cache if the code changed since the last start
    samples: dict[str, list[float]] = {name: [] for name in variants}
    load = [os.getloadavg()[0]]
    for _ in range(args.runs):
        for name, (command, variant_env) in variants.items():
            samples[name].append(anyio.run(once, command, variant_env))
    load.append(os.getloadavg()[0])
    plain = statistics.median(samples["plain FTS5"])
    print(f"load average {load[0]:.2f} -> {load[1]:.2f}; {args.runs} spawns each, seconds")
    print("| server | min / median / max (s) | / plain |\n| --- | --- | --- |")
    for name, values in samples.items():
        print(f"| {name} | {min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} |"
              f" ×{statistics.median(values) / plain:.2f} |")


if __name__ == "__main__":
    main()
