"""Latency where an agent waits: `oracle serve` over stdio, measured at an MCP client, beside the same searches
in-process and a plain whole-file FTS5 server behind the same SDK, all in one run.

    .venv/bin/python benchmarks/client.py [--runs 3] [--scifact] [--json out.json] [--before DIR] [--no-validate]

Per run and workload:
1. the plain server (benchmarks/plain_server.py) is spawned over stdio with the official MCP client: time from
   spawn to the first `tools/list` answer, then every question as a `search` call (limit 10);
2. `oracle serve --no-watch` is spawned the same way (same client, same questions): spawn -> `tools/list`,
   then `oracle_search` (limit 10) per question in fts and hybrid mode, after three warm-up calls per mode and
   once the server is idle (its CPU time still for a second: the model warm-up after the handshake is over;
   the plain server is timed the same way); before it, one spawn -> `tools/list` with ORACLE_HANDSHAKE_CACHE=0 (the SDK answers the handshake itself,
   as on the first start after an install or upgrade);
3. with `--before DIR`, an older Oracle from a source tree (`git archive REV | tar -x -C DIR`) the same way;
4. the same questions through `run_search` in this process (warm), so `client - in-process` is what the
   tool layer and the transport cost.
`--no-validate` (a diagnostic) has the client skip checking each result against the tool's output schema.
Figures are the median of the per-run p50s (and p95s), with min and max across runs, and the 1-minute load
average at the start and end: on a shared machine read the ratios to the plain server, measured in the same
run, more than the milliseconds.

Workloads: nat-brain (its 60 judged questions; `benchmarks/out/natbrain-data`, indexed on first use) and, with
`--scifact`, the SciFact abstracts indexed by benchmarks/quality.py (`benchmarks/out/scifact`; its first 100
training queries).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from oracle_indexer.config import Settings  # noqa: E402
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import run_search  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from plain_server import build  # noqa: E402

EVAL = REPO.parent / "shared" / "eval-data"
OUT = REPO / "benchmarks" / "out"
ORACLE = REPO / ".venv" / "bin" / "oracle"
MODES = ("fts", "hybrid")
LIMIT = 10
WARMUP = 3


@dataclass
class Workload:
    name: str
    root: Path
    data: Path
    queries: list[str]


@dataclass
class RunFigures:
    """One run of one workload: spawn times (s) and per-call latencies (ms) per system."""

    spawn: dict[str, float] = field(default_factory=dict)
    settle_s: dict[str, float] = field(default_factory=dict)  # warm-ups done -> server idle
    calls: dict[str, list[float]] = field(default_factory=dict)


def workloads(scifact: bool) -> list[Workload]:
    judged = json.loads((EVAL / "nat-brain-oracle" / "queries-judged.json").read_text(encoding="utf-8"))
    out = [Workload("nat-brain", EVAL / "nat-brain-oracle" / "ψ" / "memory", OUT / "natbrain-data",
                    [q["query"] for q in judged])]
    if scifact:
        lines = (EVAL / "scifact" / "queries-train.jsonl").read_text(encoding="utf-8").splitlines()
        queries = [json.loads(line)["text"] for line in lines if line.strip()][:100]
        out.append(Workload("scifact", OUT / "scifact" / "root", OUT / "scifact" / "data", queries))
    return out


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's children: the spawned server."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in kids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def settle(quiet_s: float = 1.0, limit_s: float = 60.0) -> float:
    """Wait until the spawned server's start-up work (the model warm-up after the handshake) is done: its CPU
    time grows by under 2 % of a core over `quiet_s`. Returns the seconds waited."""
    began = time.perf_counter()
    last = _children_cpu()
    while time.perf_counter() - began < limit_s:
        await anyio.sleep(quiet_s)
        now = _children_cpu()
        if now - last < 0.02 * quiet_s:
            break
        last = now
    return time.perf_counter() - began


async def measure_server(command: list[str], env: dict[str, str], calls: list[tuple[str, str, dict]],
                         figures: RunFigures, label: str, validate: bool = True) -> None:
    """Spawn a stdio MCP server, time spawn -> tools/list, run the warm-up calls (series ""), wait until the
    server is idle, then time each (series, tool, arguments) call."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO))
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.list_tools()
            figures.spawn[label] = time.perf_counter() - started
            if not validate:  # diagnostic: what the SDK client's output-schema check costs
                async def no_check(name: str, result: object) -> None:
                    return None
                client.session.validate_tool_result = no_check  # type: ignore[method-assign]
            settled = False
            for series, tool, args in calls:
                if series and not settled:
                    figures.settle_s[label] = await settle()
                    settled = True
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                elapsed = (time.perf_counter() - began) * 1000
                if result.is_error:
                    raise RuntimeError(f"{label} {tool} failed: {result.content}")
                if series:
                    figures.calls.setdefault(series, []).append(elapsed)


def oracle_calls(queries: list[str], label: str = "oracle") -> list[tuple[str, str, dict]]:
    """Warm-up calls in every mode first (the first hybrid call loads the model), then the timed series."""
    calls: list[tuple[str, str, dict]] = []
    for mode in MODES:
        calls += [("", "oracle_search", {"query": q, "limit": LIMIT, "mode": mode}) for q in queries[:WARMUP]]
    for mode in MODES:
        calls += [(f"{label} {mode} (MCP)", "oracle_search", {"query": q, "limit": LIMIT, "mode": mode}) for q in queries]
    return calls


def in_process(workload: Workload, figures: RunFigures) -> None:
    oracle = Oracle.open(Settings.from_env(root=workload.root, data_dir=workload.data))
    try:
        for mode in MODES:
            for q in workload.queries[:WARMUP]:
                run_search(oracle, SearchRequest(query=q, limit=LIMIT, mode=mode))
            series = figures.calls.setdefault(f"oracle {mode} (in-process)", [])
            for q in workload.queries:
                began = time.perf_counter()
                run_search(oracle, SearchRequest(query=q, limit=LIMIT, mode=mode))
                series.append((time.perf_counter() - began) * 1000)
    finally:
        oracle.close()


# `oracle` from the tree on PYTHONPATH: with -c, sys.path[0] is the working directory (this repository), dropped
from trees import LAUNCH, importable  # noqa: E402


def one_run(workload: Workload, validate: bool = True, before: Path | None = None) -> RunFigures:
    figures = RunFigures()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8")
    plain_db = OUT / f"plain-{workload.name}.db"
    if not plain_db.exists():
        build(plain_db, workload.root)
    plain = [sys.executable, str(REPO / "benchmarks" / "plain_server.py"), str(plain_db)]
    plain_calls = [("", "search", {"query": q, "limit": LIMIT}) for q in workload.queries[:WARMUP]]
    plain_calls += [("plain FTS5 (MCP)", "search", {"query": q, "limit": LIMIT}) for q in workload.queries]
    anyio.run(measure_server, plain, env, plain_calls, figures, "plain FTS5", validate)
    oracle_env = {**env, "ORACLE_ROOT": str(workload.root), "ORACLE_DATA_DIR": str(workload.data)}
    # Without the handshake cache (server/mcp/stdio_front.py): what a first start after an install or upgrade costs.
    anyio.run(measure_server, [str(ORACLE), "serve", "--standalone", "--no-watch"], {**oracle_env, "ORACLE_HANDSHAKE_CACHE": "0"}, [],
              figures, "oracle, SDK only (no handshake cache)")
    anyio.run(measure_server, [str(ORACLE), "serve", "--standalone", "--no-watch"], oracle_env, oracle_calls(workload.queries),
              figures, "oracle", validate)
    if before is not None:  # an older Oracle (a source tree, e.g. `git archive REV | tar -x -C DIR`), same run
        anyio.run(measure_server, [sys.executable, "-c", LAUNCH, "serve", "--no-watch"],
                  {**oracle_env, "ORACLE_ENGINE": "0", "PYTHONPATH": importable(before)}, oracle_calls(workload.queries, "oracle before"),
                  figures, "oracle before", validate)
    in_process(workload, figures)
    return figures


def summarise(runs: list[RunFigures]) -> dict:
    """Per series: p50 and p95 of each run as (min, median, max) across runs; spawn times the same way."""
    def spread(values: list[float]) -> list[float]:
        return [round(min(values), 2), round(statistics.median(values), 2), round(max(values), 2)]

    series = sorted({s for run in runs for s in run.calls})
    out: dict = {"calls": {}, "spawn_s": {}}
    for s in series:
        out["calls"][s] = {
            "p50": spread([statistics.median(run.calls[s]) for run in runs]),
            "p95": spread([percentile(run.calls[s], 0.95) for run in runs]),
        }
    for label in sorted({k for run in runs for k in run.spawn}):
        out["spawn_s"][label] = spread([run.spawn[label] for run in runs])
    out["settle_s"] = {label: spread([run.settle_s[label] for run in runs])
                       for label in sorted({k for run in runs for k in run.settle_s})}
    return out


def print_summary(name: str, summary: dict, loads: list[float]) -> None:
    calls = summary["calls"]
    plain = calls["plain FTS5 (MCP)"]["p50"][1]
    print(f"\n## {name} (load average {loads[0]:.2f} -> {loads[-1]:.2f})")
    print("| series | p50 ms (min / median / max) | p95 ms (min / median / max) | p50 / plain FTS5 |")
    print("| --- | --- | --- | --- |")
    for s, f in calls.items():
        ratio = f["p50"][1] / plain if plain else float("nan")
        print(f"| {s} | {' / '.join(map(str, f['p50']))} | {' / '.join(map(str, f['p95']))} | ×{ratio:.2f} |")
    for mode in MODES:
        for label in ("oracle", "oracle before"):
            mcp, local = calls.get(f"{label} {mode} (MCP)"), calls.get(f"oracle {mode} (in-process)")
            if mcp and local:
                print(f"| overhead of MCP over in-process, {label}, {mode} (p50) | {mcp['p50'][1] - local['p50'][1]:.2f} | | |")
    for label, spread in summary["spawn_s"].items():
        print(f"| spawn -> first tools/list, {label} (s) | {' / '.join(map(str, spread))} | | |")
    for label, spread in summary.get("settle_s", {}).items():
        print(f"| warm-ups done -> server idle, {label} (s) | {' / '.join(map(str, spread))} | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scifact", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--before", type=Path, help="also measure an older Oracle from this source tree, same run")
    parser.add_argument("--no-validate", action="store_true",
                        help="diagnostic: the client skips checking results against the tools' output schemas")
    args = parser.parse_args()
    report: dict = {}
    for workload in workloads(args.scifact):
        oracle = Oracle.open(Settings.from_env(root=workload.root, data_dir=workload.data))
        try:
            print(f"{workload.name}: {oracle.indexer.sync().summary()}", file=sys.stderr)
        finally:
            oracle.close()
        loads = [os.getloadavg()[0]]
        runs: list[RunFigures] = []
        for n in range(args.runs):
            runs.append(one_run(workload, validate=not args.no_validate, before=args.before))
            loads.append(os.getloadavg()[0])
            print(f"{workload.name}: run {n + 1}/{args.runs} done", file=sys.stderr)
        summary = summarise(runs)
        print_summary(workload.name, summary, loads)
        report[workload.name] = {**summary, "load_average": loads, "queries": len(workload.queries)}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
