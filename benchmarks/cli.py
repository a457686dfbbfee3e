"""CLI latency: `oracle search` alone (a new process loads everything) against `oracle search` answered by a
running `oracle serve --http` for the same root (server/cli/remote.py).

    .venv/bin/python benchmarks/cli.py [--root PATH] [--runs 20]

Wall time of the whole command, as a person at a shell sees it: process start, imports, request, output.
The root defaults to the bundled knowledge/; the data directory lives under benchmarks/out/ (gitignored).
Prints figures; never asserts (a timed test would fail on a busy machine, not on a slow program).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT / "tests"))

from _procs import oracle_cmd, serve_http, stop_process  # noqa: E402

QUERIES = ["quote fts5 search terms", "mock the database in tests", "embedding model version", "retrospective",
           "search memory before starting", "pin dependencies"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(env: dict[str, str], args: list[str], runs: int) -> list[float]:
    out = []
    for n in range(runs):
        start = time.perf_counter()
        proc = subprocess.run([*oracle_cmd(), *args, QUERIES[n % len(QUERIES)]], env=env, capture_output=True,
                              text=True)
        out.append((time.perf_counter() - start) * 1000)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
    return out


def line(label: str, values: list[float]) -> str:
    return (f"{label:<44} p50 {statistics.median(values):7.1f} ms  p95 {percentile(values, 0.95):7.1f} ms"
            f"  min {min(values):7.1f} ms  (n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=str(PROJECT / "knowledge"))
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    data = HERE / "out" / "cli-data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=args.root, ORACLE_DATA_DIR=str(data))
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True)
    print(f"root {args.root}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    bare = []
    for _ in range(args.runs):  # the floor: an interpreter that starts and exits
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append((time.perf_counter() - start) * 1000)
    alone = {mode: timed(env, ["--local", "search", "--mode", mode], max(3, args.runs // 4)) for mode in ("fts", "hybrid")}
    proc, _ = serve_http(env, HERE / "out", HERE / "out" / "cli-serve.log", "--no-watch")
    try:
        time.sleep(3)  # the server loads the model after start-up
        timed(env, ["search"], 2)  # warm the server's first queries
        served = {mode: timed(env, ["search", "--mode", mode], args.runs) for mode in ("fts", "hybrid")}
    finally:
        stop_process(proc)
    print(line("python -c pass (interpreter start, the floor)", bare))
    for mode in ("fts", "hybrid"):
        print(line(f"oracle search --mode {mode}, CLI alone", alone[mode]))
        print(line(f"oracle search --mode {mode}, through the server", served[mode]))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
