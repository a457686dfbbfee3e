"""Load benchmark: concurrent clients on loopback against /api/search of a real `oracle serve --http`.

    .venv/bin/python benchmarks/load.py                      # a temp copy of the bundled knowledge/
    .venv/bin/python benchmarks/load.py --root /work/shared/eval-data/nat-brain-oracle/ψ/memory
    options: --concurrency 1,8,32  --duration 15  --mode hybrid|fts|vector  --limit 10
             --data-dir DIR (reuse an index)  --queries FILE.json  --json out.json
             --database-url URL (the PostgreSQL store)  --engines N (N servers on that one database; the
             clients take turns between them)

The script indexes the knowledge base with `oracle index` (the data directory lives under benchmarks/out/,
gitignored, and is reused between runs of the same --root so only the first run pays for embeddings),
starts `oracle serve --http --port <free>` as a subprocess, warms it up with one untimed pass over the
queries (model load, caches), then for each concurrency level runs that many clients (httpx.AsyncClient,
one connection each) for --duration seconds. Each client takes the next query of a shared rotation of
real queries and sends GET /api/search. Reported per level: requests, requests/s, p50/p90/p99/max latency
(client-measured, wall clock per request) and errors (any non-200 status or transport error). The exit
status is 1 if any request failed: zero errors are required.

Client and server share the machine: on a small box the client's own CPU use lowers the figures a little.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _procs import free_port, oracle_cmd, stop_process  # noqa: E402  (shared with the tests)

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
BUNDLED = PROJECT / "knowledge"
NAT_BRAIN_QUERIES = PROJECT.parent / "shared" / "eval-data" / "nat-brain-oracle" / "queries-unjudged.json"

# Real questions about the bundled knowledge (what an agent asks before a decision).
BUNDLED_QUERIES = [
    "quote fts5 terms",
    "how do I quote search terms for FTS5",
    "should tests mock the database",
    "rebase before review",
    "webhook signature verification and clock skew",
    "splitting markdown with code fences",
    "download the embedding model ahead of time",
    "flaky timed test on CI",
    "sort keys before serialising json",
    "note paths must stay inside the knowledge root",
    "installer ran twice",
    "supersede a stale learning",
    "a test that could not fail",
    "retrieved note gave orders to the agent",
    "cite your sources with line numbers",
    "deterministic output",
    "idempotent install script",
    "measure performance with benchmarks",
    "small commits with one purpose",
    "treat input as hostile",
    "work offline by default",
    "billing export migration retrospective",
    "hybrid search first release",
    "what did we learn in the offline install rehearsal",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def load_queries(path: Path | None, root_is_bundled: bool) -> list[str]:
    if path is None:
        if root_is_bundled:
            return BUNDLED_QUERIES
        path = NAT_BRAIN_QUERIES
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("queries", list(data.values()))
    queries = [q if isinstance(q, str) else (q.get("query") or q.get("text")) for q in data]
    queries = [q for q in queries if q and q.strip()]
    if not queries:
        raise SystemExit(f"no queries in {path}")
    return queries


def start_server(env: dict[str, str], port: int, log_path: Path) -> subprocess.Popen:
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([*oracle_cmd(), "serve", "--http", "--port", str(port), "--no-watch"], env=env,
                                cwd=PROJECT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited:\n{log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"/health never answered:\n{log_path.read_text()[-3000:]}")


async def run_level(bases: list[str], queries: list[str], clients: int, duration: float, params: dict) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    counter = 0
    stop_at = time.perf_counter() + duration

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal counter
        while time.perf_counter() < stop_at:
            query = queries[counter % len(queries)]
            counter += 1
            t0 = time.perf_counter()
            try:
                resp = await client.get("/api/search", params={"query": query, **params})
                ok = resp.status_code == 200 and isinstance(resp.json().get("hits"), list)
                if not ok:
                    errors.append(f"{resp.status_code} {resp.text[:120]}")
            except (httpx.HTTPError, ValueError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            latencies.append((time.perf_counter() - t0) * 1000)

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    timeout = httpx.Timeout(120.0)
    pool = [httpx.AsyncClient(base_url=bases[n % len(bases)], limits=limits, timeout=timeout) for n in range(clients)]
    try:
        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for client in pool:
                group.create_task(client_loop(client))
        elapsed = time.perf_counter() - started
    finally:
        for client in pool:
            await client.aclose()
    done = len(latencies)
    return {
        "clients": clients,
        "requests": done,
        "errors": len(errors),
        "error_samples": errors[:5],
        "seconds": round(elapsed, 2),
        "rps": round(done / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p90_ms": round(percentile(latencies, 0.90), 1) if latencies else None,
        "p95_ms": round(percentile(latencies, 0.95), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99), 1) if latencies else None,
        "max_ms": round(max(latencies), 1) if latencies else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="knowledge root (default: a temp copy of the bundled knowledge/)")
    parser.add_argument("--data-dir", type=Path, help="index directory (default: benchmarks/out/load-<root hash>)")
    parser.add_argument("--queries", type=Path, help="JSON list of queries (strings or {query: ...})")
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated client counts")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per concurrency level")
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "fts", "vector"])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--database-url", help="ORACLE_DATABASE_URL: the PostgreSQL store instead of SQLite + Chroma")
    parser.add_argument("--engines", type=int, default=1, help="servers on the one store (PostgreSQL only for >1)")
    args = parser.parse_args()
    if args.engines > 1 and not args.database_url:
        parser.error("--engines > 1 needs --database-url (engines share a PostgreSQL store)")
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]

    out = HERE / "out"
    out.mkdir(exist_ok=True)
    temp_root: Path | None = None
    if args.root is None:
        temp_root = Path(tempfile.mkdtemp(prefix="load-root-", dir=out))
        root = temp_root / "knowledge"
        shutil.copytree(BUNDLED, root)
    else:
        root = args.root.resolve()
        if not root.is_dir():
            raise SystemExit(f"--root {root} is not a directory")
    key = hashlib.sha256(str(root if temp_root is None else "bundled").encode()).hexdigest()[:10]
    data_dir = (args.data_dir or out / f"load-data-{key}").resolve()
    queries = load_queries(args.queries, root_is_bundled=args.root is None)

    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data_dir), PYTHONIOENCODING="utf-8")
    if args.database_url:
        env["ORACLE_DATABASE_URL"] = args.database_url
    print(f"indexing {root} into {data_dir} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    done = subprocess.run([*oracle_cmd(), "index", "--json"], env=env, cwd=PROJECT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"oracle index failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    print(f"indexed in {time.perf_counter() - t0:.1f} s: {report['added']} added, {report['unchanged']} unchanged,"
          f" {report['chunks_written']} chunks written", file=sys.stderr, flush=True)

    procs: list[subprocess.Popen] = []
    bases: list[str] = []
    params = {"mode": args.mode, "limit": args.limit}
    results: list[dict] = []
    try:
        for n in range(args.engines):  # each engine its own data dir (its registry, caches); one store
            port = free_port()
            engine_env = dict(env, ORACLE_DATA_DIR=str(data_dir) + (f"-engine{n}" if n else ""))
            procs.append(start_server(engine_env, port, out / f"load-serve{n or ''}.log"))
            bases.append(f"http://127.0.0.1:{port}")
        health = httpx.get(bases[0] + "/health", timeout=10).json()
        # Warm-up, untimed: loads the embedding model and fills the caches (of every engine).
        for base in bases:
            for q in queries:
                resp = httpx.get(base + "/api/search", params={"query": q, **params}, timeout=180)
                if resp.status_code != 200:
                    raise SystemExit(f"warm-up search failed: {resp.status_code} {resp.text[:300]}")
        for clients in levels:
            print(f"{clients} client(s) for {args.duration:.0f} s ...", file=sys.stderr, flush=True)
            results.append(asyncio.run(run_level(bases, queries, clients, args.duration, params)))
    finally:
        for proc in procs:
            stop_process(proc)
        if temp_root is not None:
            shutil.rmtree(temp_root, ignore_errors=True)

    figures = {
        "root": str(args.root or "bundled knowledge/ (temp copy)"),
        "files": health["files"],
        "chunks": health["chunks"],
        "queries": len(queries),
        "mode": args.mode,
        "limit": args.limit,
        "store": "postgresql" if args.database_url else "sqlite",
        "engines": args.engines,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
        "duration_s": args.duration,
        "levels": results,
    }
    print(f"\n{figures['root']}: {health['files']} files, {health['chunks']} chunks; {len(queries)} queries rotating;"
          f" mode={args.mode} limit={args.limit}; {os.cpu_count()} CPUs")
    print(f"store={figures['store']} engines={args.engines}")
    print(f"{'clients':>7} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}")
    for r in results:
        print(f"{r['clients']:>7} {r['requests']:>9} {r['rps']:>8} {r['p50_ms']!s:>8} {r['p95_ms']!s:>8}"
              f" {r['p99_ms']!s:>8} {r['max_ms']!s:>8} {r['errors']:>7}")
        for sample in r["error_samples"]:
            print(f"        error: {sample}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False), encoding="utf-8")
    failed = sum(r["errors"] for r in results)
    if failed:
        print(f"FAILED: {failed} request(s) failed; zero errors are required", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
