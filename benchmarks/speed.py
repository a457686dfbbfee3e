"""Speed benchmark on a real agent knowledge base (Oracle v2 layout, 1,339 files, Thai text, ψ folder).

    .venv/bin/python benchmarks/speed.py [--root PATH] [--runs 50] [--json out.json]

Measures, each in a fresh subprocess where a cold start matters:
- full index from an empty data directory (keyword part and vector part apart), and its peak memory;
- re-index with nothing changed;
- search latency per mode, warm, p50/p95 over the real query strings in queries-unjudged.json;
- MCP start-up: spawn `oracle serve` (stdio) and time until `tools/list` is answered.
The data directory lives under benchmarks/out/ (gitignored); the knowledge base is read in place.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
from trees import importable  # noqa: E402  (benchmarks/ is sys.path[0] for a script)
DEFAULT_ROOT = PROJECT.parent / "shared" / "eval-data" / "nat-brain-oracle" / "ψ" / "memory"
QUERIES = PROJECT.parent / "shared" / "eval-data" / "nat-brain-oracle" / "queries-unjudged.json"
ORACLE = [sys.executable, "-m", "oracle_server.cli"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_index(env: dict[str, str], *extra: str) -> tuple[dict, float, float]:
    """(report, wall seconds, peak RSS MiB) of one `oracle index` subprocess."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    out = subprocess.run([*ORACLE, "index", "--json", *extra], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return json.loads(out.stdout), wall, max(peak, before) / 1024


def search_latency(env: dict[str, str], queries: list[str], runs: int) -> dict[str, dict[str, float]]:
    """Warm in-process latency per mode: one untimed pass loads the model and caches, then `runs` passes."""
    os.environ.update(env)
    sys.path.insert(0, str(PROJECT))
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search.pipeline import search

    oracle = Oracle.open(Settings.from_env())
    figures: dict[str, dict[str, float]] = {}
    for mode in ("fts", "vector", "hybrid"):
        for q in queries:
            search(oracle, SearchRequest(query=q, mode=mode, limit=10))
        samples: list[float] = []
        for _ in range(max(1, runs // len(queries))):
            for q in queries:
                t0 = time.perf_counter()
                search(oracle, SearchRequest(query=q, mode=mode, limit=10))
                samples.append((time.perf_counter() - t0) * 1000)
        figures[mode] = {
            "p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(percentile(samples, 0.95), 2),
            "samples": len(samples),
        }
    oracle.close()
    return figures


def mcp_startup(env: dict[str, str], repeats: int = 5) -> dict[str, float]:
    """Seconds from spawning `oracle serve` to the answer of the first tools/list, over a ready index."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def once() -> float:
        params = StdioServerParameters(command=sys.executable, args=["-m", "oracle_server.cli", "serve", "--standalone"], env=env, cwd=str(PROJECT))
        started = time.perf_counter()
        async with Client(params) as client:
            await client.list_tools()
            return time.perf_counter() - started

    samples = [anyio.run(once) for _ in range(repeats)]
    return {"median_s": round(statistics.median(samples), 3), "max_s": round(max(samples), 3), "runs": repeats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--runs", type=int, default=100, help="timed searches per mode")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    out = HERE / "out"
    out.mkdir(exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="speed-", dir=out))
    env = {**os.environ, "ORACLE_ROOT": str(args.root), "ORACLE_DATA_DIR": str(data_dir), "PYTHONPATH": importable(PROJECT)}
    queries = json.loads(QUERIES.read_text(encoding="utf-8"))
    if isinstance(queries, dict):
        queries = queries.get("queries", list(queries.values()))
    queries = [q if isinstance(q, str) else q.get("query") or q.get("text") for q in queries]

    full, full_wall, full_peak = run_index(env)
    unchanged, unchanged_wall, _ = run_index(env)
    latency = search_latency(env, queries, args.runs)
    startup = mcp_startup(env)

    figures = {
        "root": str(args.root),
        "cpu_count": os.cpu_count(),
        "full_index": {
            "wall_s": round(full_wall, 2),
            "keyword_s": round(full["keyword_seconds"], 2),
            "vector_s": round(full["vector_seconds"], 2),
            "files": full["added"],
            "chunks": full["chunks_written"],
            "embedded": full["embedded"],
            "skipped": len(full["skipped"]),
            "unmapped_files": sum(full["unmapped"].values()),
            "peak_rss_mib": round(full_peak, 1),
        },
        "unchanged_reindex": {"wall_s": round(unchanged_wall, 2), "sync_s": round(unchanged["seconds"], 3),
                              "unchanged": unchanged["unchanged"], "embedded": unchanged["embedded"]},
        "search_warm": latency,
        "mcp_tools_list": startup,
    }
    print(json.dumps(figures, indent=2, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
