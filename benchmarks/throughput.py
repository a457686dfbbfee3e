"""Throughput of the search service under concurrent clients, in-process threads (issue 12 / issue 16).

    .venv/bin/python benchmarks/throughput.py                      # nat-brain, index in benchmarks/out/natbrain-data
    options: --root DIR  --data-dir DIR  --clients 1,8,32  --duration 10  --modes store,fts,hybrid  --json out.json

Why in-process threads rather than HTTP: the question is whether the store lets concurrent requests run
side by side (per-thread WAL read connections) or queues them on one shared connection. HTTP adds the
server's and the client's own CPU on the same 2 cores (benchmarks/load.py measures that path); threads
calling `oracle_server.services.capabilities.search.pipeline.search` - the function every adapter calls, search log included - measure the
service and the store alone; mode `store` runs only the store's reads of a keyword search (keyword leg,
facts of the pool, rows of the page), where the connection design shows without Python ranking around it.

Each client is a thread that takes the next question of a shared rotation (the 60 judged nat-brain
questions) and runs one search, limit 10, for --duration seconds. One untimed pass over the questions warms
the model and caches first. The index is opened as it is (no sync): build it with `oracle index` or copy a
prebuilt one into benchmarks/out/ (gitignored). Reported per level: requests/s, p50/p99 latency, errors.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from oracle_indexer.config import Settings  # noqa: E402  (after the path fix, for a plain `python benchmarks/...`)
from oracle_server.services.runtime.app import Oracle  # noqa: E402
from oracle_server.services.vocabulary.models import SearchRequest  # noqa: E402
from oracle_server.services.capabilities.search.query import build_keyword_query  # noqa: E402
from oracle_server.services.capabilities.search.pipeline import filters_for, search  # noqa: E402

NAT_BRAIN = HERE.parent.parent / "shared" / "eval-data" / "nat-brain-oracle"


def load_queries(path: Path) -> list[str]:
    return [item["query"] for item in json.loads(path.read_text(encoding="utf-8"))]


def store_reads(oracle: Oracle, query: str) -> None:
    """Only the store's part of a keyword search: the keyword leg over a pool of 100, the facts of the
    pool, the page's rows. Python ranking aside, this is where a shared connection made threads queue."""
    from oracle_indexer.store.sqlite import keyword_search  # the module path differs before and after the store split

    kq = build_keyword_query(query)
    ranked, _ = keyword_search(oracle.store, kq.fts_match, kq.trigram_match, kq.short_unsegmented,
                               filters_for(SearchRequest(query=query)), 100)
    ids = [doc_id for doc_id, _ in ranked]
    oracle.store.section_facts(ids)
    oracle.store.documents_by_id(ids[:10])


def one_request(oracle: Oracle, query: str, mode: str) -> None:
    if mode == "store":
        store_reads(oracle, query)
    else:
        search(oracle, SearchRequest(query=query, mode=mode, limit=10), client="bench")


def run_level(oracle: Oracle, queries: list[str], clients: int, duration: float, mode: str) -> dict:
    """`clients` threads searching for `duration` seconds; requests/s and client-side latency."""
    rotation = itertools.cycle(queries)
    rotation_lock = threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    results_lock = threading.Lock()
    start_line = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client() -> None:
        start_line.wait()
        mine: list[float] = []
        while time.perf_counter() < stop_at[0]:
            with rotation_lock:
                query = next(rotation)
            began = time.perf_counter()
            try:
                one_request(oracle, query, mode)
            except Exception as exc:  # counted, not raised: the run reports every failure
                with results_lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            mine.append(time.perf_counter() - began)
        with results_lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    stop_at[0] = began + duration
    start_line.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(0.99 * (len(latencies) - 1)))] if latencies else None
    return {
        "mode": mode, "clients": clients, "requests": len(latencies), "req_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(p99 * 1000, 1) if p99 is not None else None,
        "errors": len(errors), "first_error": errors[0] if errors else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=NAT_BRAIN / "ψ" / "memory")
    parser.add_argument("--data-dir", type=Path, default=HERE / "out" / "natbrain-data")
    parser.add_argument("--queries", type=Path, default=NAT_BRAIN / "queries-judged.json")
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--modes", default="store,fts,hybrid",
                        help="store: the store's reads of a keyword search only; fts, hybrid: the whole search service")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    os.environ.setdefault("ORACLE_LOG_RETENTION_DAYS", "365")
    oracle = Oracle.open(Settings.from_env(root=args.root, data_dir=args.data_dir))
    queries = load_queries(args.queries)
    rows = []
    try:
        for mode in args.modes.split(","):
            for query in queries:  # warm-up: model, caches, Thai segmenter
                one_request(oracle, query, mode)
            for clients in (int(c) for c in args.clients.split(",")):
                row = run_level(oracle, queries, clients, args.duration, mode)
                rows.append(row)
                print(f"{mode:7} clients={clients:3}  {row['req_per_s']:7.1f} req/s  p50 {row['p50_ms']} ms"
                      f"  p99 {row['p99_ms']} ms  errors {row['errors']}" + (f"  ({row['first_error']})" if row["errors"] else ""),
                      flush=True)
    finally:
        oracle.close()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
