"""Spawn -> first `tools/list` answered, through the official MCP client (as benchmarks/client.py), for the plain
FTS5 server and `oracle serve`, on nat-brain and on SciFact, spawns interleaved so that load hits all alike.

    .venv/bin/python benchmarks/spawn.py [--runs 5] [--workloads nat-brain,scifact] [--before DIR]

Series, per workload (min / median / max of --runs spawns each, and the ratio of medians to the plain server):
- plain FTS5: benchmarks/plain_server.py over the same markdown (whole files, one FTS5 table);
- (a) Oracle, indexed data dir, handshake cache warm: a restart;
- (b) Oracle, a brand-new data dir each spawn, the shared handshake cache warm: the first start on a new root
  after `make install` (the root is never indexed there: the start-up sync begins after the handshake);
- (c) Oracle, ORACLE_HANDSHAKE_CACHE=0 (the SDK answers the handshake), a brand-new data dir each spawn;
- (c') the same on the indexed data dir.
Every Oracle runs `oracle serve` as mcp.json does (the watcher on). The shared cache is a folder of this benchmark
(benchmarks/out/spawn-cache, ORACLE_CACHE_DIR), filled first by `python -m oracle_server.mcp.warm` (what `make install` runs).
Workloads: nat-brain (`benchmarks/out/natbrain-data`) and the SciFact abstracts as notes (`benchmarks/out/scifact`,
written as benchmarks/quality.py writes them), each indexed on first use. --before DIR adds an older Oracle on the
indexed data dir (its per-data-dir cache warmed by a first start) and on new data dirs: a source tree exported
with `git archive <commit> | tar -x -C DIR`, run with this venv.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
EVAL = REPO.parent / "shared" / "eval-data"
OUT = REPO / "benchmarks" / "out"
CACHE = OUT / "spawn-cache"
FRESH = OUT / "spawn-fresh"
from trees import LAUNCH, importable  # noqa: E402
NEW_DATA_DIR = object()  # a variant's data dir: a new, empty one for every spawn


async def once(command: list[str], env: dict[str, str]) -> float:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(OUT))
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.list_tools()
            return time.perf_counter() - started


def workloads(names: list[str]) -> dict[str, tuple[Path, Path]]:
    """name -> (knowledge root, indexed data dir), indexing (and for SciFact writing the notes) on first use."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    out: dict[str, tuple[Path, Path]] = {}
    if "nat-brain" in names:
        out["nat-brain"] = (EVAL / "nat-brain-oracle" / "ψ" / "memory", OUT / "natbrain-data")
    if "scifact" in names:
        import quality

        root = OUT / "scifact" / "root"
        quality.write_corpus(quality.load_dataset(EVAL / "scifact"), root)
        out["scifact"] = (root, OUT / "scifact" / "data")
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle

    for name, (root, data) in out.items():
        oracle = Oracle.open(Settings.from_env(root=root, data_dir=data))
        try:
            report = oracle.indexer.sync()
            if report.added or report.changed:
                print(f"{name}: {report.summary()}", file=sys.stderr)
        finally:
            oracle.close()
    return out


def warm_cache(env: dict[str, str]) -> float:
    """Fill the benchmark's shared handshake cache as `make install` does; seconds it took."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "oracle_server.mcp.warm"], env=env, check=True, cwd=REPO)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workloads", default="nat-brain,scifact")
    parser.add_argument("--before", type=Path)
    args = parser.parse_args()
    load = [os.getloadavg()]
    OUT.mkdir(parents=True, exist_ok=True)
    chosen = workloads(args.workloads.split(","))
    from plain_server import build

    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    base.update(PYTHONIOENCODING="utf-8", ORACLE_CACHE_DIR=str(CACHE), PYTHONPATH=importable(REPO),
                ORACLE_ENGINE="0")  # one standalone process per spawn, as this benchmark has always measured
    warmed = warm_cache(base)
    serve = [sys.executable, "-c", LAUNCH, "serve"]
    series: dict[str, dict[str, tuple[list[str], dict[str, str], object]]] = {}
    for name, (root, data) in chosen.items():
        plain_db = OUT / f"plain-{name}.db"
        if not plain_db.exists():
            build(plain_db, root)
        env = {**base, "ORACLE_ROOT": str(root)}
        variants = {
            "plain FTS5": ([sys.executable, str(REPO / "benchmarks" / "plain_server.py"), str(plain_db)], base, None),
            "(a) Oracle, indexed, cache warm": (serve, env, data),
            "(b) Oracle, new data dir, shared cache warm": (serve, env, NEW_DATA_DIR),
            "(c) Oracle, new data dir, ORACLE_HANDSHAKE_CACHE=0": (serve, {**env, "ORACLE_HANDSHAKE_CACHE": "0"},
                                                                   NEW_DATA_DIR),
            "(c') Oracle, indexed, ORACLE_HANDSHAKE_CACHE=0": (serve, {**env, "ORACLE_HANDSHAKE_CACHE": "0"}, data),
        }
        if args.before:
            older = {**env, "PYTHONPATH": importable(args.before)}
            variants["before (--before), indexed, its cache warm"] = (serve, older, data)
            variants["before (--before), new data dir"] = (serve, older, NEW_DATA_DIR)
        series[name] = variants
        anyio.run(once, serve, {**env, "ORACLE_DATA_DIR": str(data)})  # the index is current before timing
        if args.before:
            anyio.run(once, serve, {**env, "ORACLE_DATA_DIR": str(data), "PYTHONPATH": importable(args.before)})
    samples = {name: {label: [] for label in variants} for name, variants in series.items()}
    load.append(os.getloadavg())
    spawned = 0
    for _ in range(args.runs):
        for name, variants in series.items():
            for label, (command, env, data) in variants.items():
                fresh = None
                if data is NEW_DATA_DIR:
                    spawned += 1
                    fresh = FRESH / f"{name}-{spawned}"
                    shutil.rmtree(fresh, ignore_errors=True)
                    env = {**env, "ORACLE_DATA_DIR": str(fresh)}
                elif data is not None:
                    env = {**env, "ORACLE_DATA_DIR": str(data)}
                samples[name][label].append(anyio.run(once, command, env))
                if fresh is not None:
                    shutil.rmtree(fresh, ignore_errors=True)
    load.append(os.getloadavg())
    shutil.rmtree(FRESH, ignore_errors=True)
    print(f"load average (1/5/15 min): start {fmt(load[0])}, timing {fmt(load[1])}, end {fmt(load[2])};"
          f" warming the shared cache (python -m oracle_server.mcp.warm): {warmed:.1f} s")
    for name, by_label in samples.items():
        plain = statistics.median(by_label["plain FTS5"])
        print(f"\n{name}: {args.runs} spawns each, seconds, spawn -> first tools/list answered")
        print("| server | min / median / max (s) | / plain |\n| --- | --- | --- |")
        for label, values in by_label.items():
            print(f"| {label} | {min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} |"
                  f" ×{statistics.median(values) / plain:.2f} |")


def fmt(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in load)


if __name__ == "__main__":
    main()
