"""In-process search latency on one index, and (PostgreSQL) the round trips one search makes.

    .venv/bin/python benchmarks/pg_profile.py ROOT DATA_DIR [--database-url URL] [--queries Q.json]
        [--modes fts,vector,hybrid] [--rounds 3] [--trace N]

Each question of Q.json (a list of {"query": ...} or of strings; default: nat-brain's unjudged questions) is asked
once untimed, then `--rounds` times in every mode through `oracle_server.services.capabilities.search.pipeline.run_search` (limit 10), round after round;
printed per mode: the median over rounds of each round's median, p95, and, on PostgreSQL, the statements sent per
search and the round trips they took (statements sent together in psycopg's pipeline mode are one). `--trace N` prints, for the N-th question in
hybrid mode, every statement in the order sent, with its time (the statement's execute and fetch on the calling
thread; the vector leg runs on a thread of its own, beside the keyword leg).
The machine's load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_QUERIES = REPO.parent / "shared" / "eval-data" / "nat-brain-oracle" / "queries-unjudged.json"


class Trace:
    """Counts and times every statement psycopg sends (Cursor.execute/executemany, and pipeline syncs)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, float]] = []
        self.pipelines = 0
        self.on = False

    def install(self) -> None:
        import psycopg

        trace = self

        def wrap(cls, name):
            original = getattr(cls, name)

            def timed(self, query, *args, **kwargs):
                if not trace.on:
                    return original(self, query, *args, **kwargs)
                t0 = time.perf_counter()
                try:
                    return original(self, query, *args, **kwargs)
                finally:
                    took = (time.perf_counter() - t0) * 1000
                    text = query if isinstance(query, str) else getattr(query, "as_string", lambda c=None: str(query))(None)
                    conn = getattr(self, "connection", None)
                    mark = "[pipelined] " if getattr(conn, "_pipeline", None) is not None else ""
                    with trace.lock:
                        trace.events.append((threading.current_thread().name,
                                             mark + " ".join(str(text).split())[:110], took))
            setattr(cls, name, timed)

        wrap(psycopg.Cursor, "execute")
        wrap(psycopg.Cursor, "executemany")
        original_pipeline = psycopg.Connection.pipeline

        def pipeline(self):  # statements sent inside are one round trip: counted as such (see round_trips)
            if trace.on:
                with trace.lock:
                    trace.pipelines += 1
            return original_pipeline(self)
        psycopg.Connection.pipeline = pipeline


    def take(self) -> list[tuple[str, str, float]]:
        with self.lock:
            out, self.events = self.events, []
        return out

    def take_counted(self) -> tuple[int, int]:
        """(statements, round trips) since the last take."""
        with self.lock:
            events, self.events = self.events, []
            pipelines, self.pipelines = self.pipelines, 0
        inside = sum(1 for _, sql, _ in events if sql.startswith("[pipelined] "))
        return len(events), len(events) - inside + pipelines


def load_queries(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [q if isinstance(q, str) else q["query"] for q in data]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--database-url")
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--modes", default="fts,vector,hybrid")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trace", type=int, default=None, help="print the statements of this question (hybrid)")
    parser.add_argument("--by-statement", action="store_true",
                        help="also print, over one round of hybrid searches, each statement's count and median time")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.vocabulary.models import SearchRequest
    from oracle_server.services.capabilities.search.pipeline import run_search

    trace = Trace()
    if args.database_url:
        trace.install()
    load_start = [round(x, 2) for x in os.getloadavg()]
    extra = {"database_url": args.database_url} if args.database_url else {}
    oracle = Oracle.open(Settings.from_env(root=args.root, data_dir=args.data, **extra))
    queries = load_queries(args.queries)
    modes = [m for m in args.modes.split(",") if m]
    out: dict = {"store": "postgresql" if args.database_url else "sqlite", "queries": len(queries), "modes": {}}
    try:
        for mode in modes:  # warm-up: the model, the pool, the caches
            for q in queries:
                run_search(oracle, SearchRequest(query=q, limit=10, mode=mode))
        if args.trace is not None:
            trace.take()
            trace.on = True
            t0 = time.perf_counter()
            result = run_search(oracle, SearchRequest(query=queries[args.trace], limit=10, mode="hybrid"))
            total = (time.perf_counter() - t0) * 1000
            trace.on = False
            pipelines = trace.pipelines
            events = trace.take()
            trace.pipelines = 0
            inside = sum(1 for _, sql, _ in events if sql.startswith("[pipelined] "))
            print(f"trace: {queries[args.trace]!r}: {len(events)} statements in {len(events) - inside + pipelines}"
                  f" round trips, {sum(e[2] for e in events):.1f} ms in them, search {total:.1f} ms,"
                  f" {len(result.hits)} hits")
            for thread, sql, took in events:
                print(f"  {took:6.2f} ms  {thread[:18]:18}  {sql}")
        if args.by_statement and args.database_url:
            kinds: dict[str, list[float]] = {}
            trace.take()
            trace.on = True
            for q in queries:
                run_search(oracle, SearchRequest(query=q, limit=10, mode="hybrid"))
            trace.on = False
            for _, sql, took in trace.take():
                kinds.setdefault(sql[:70], []).append(took)
            print(f"statements of {len(queries)} hybrid searches: {sum(len(v) for v in kinds.values())},"
                  f" {sum(sum(v) for v in kinds.values()):.1f} ms in all")
            for sql, times in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
                print(f"  {len(times):4d} x  median {statistics.median(times):6.2f} ms  sum {sum(times):7.1f} ms  {sql}")
        per_mode: dict[str, dict] = {m: {"medians": [], "all": [], "statements": [], "round_trips": []} for m in modes}
        for _ in range(args.rounds):
            for mode in modes:
                samples = []
                for q in queries:
                    trace.take()
                    trace.on = bool(args.database_url)
                    t0 = time.perf_counter()
                    run_search(oracle, SearchRequest(query=q, limit=10, mode=mode))
                    samples.append((time.perf_counter() - t0) * 1000)
                    trace.on = False
                    sent, trips = trace.take_counted()
                    per_mode[mode]["statements"].append(sent)
                    per_mode[mode]["round_trips"].append(trips)
                per_mode[mode]["medians"].append(statistics.median(samples))
                per_mode[mode]["all"] += samples
        for mode, f in per_mode.items():
            ordered = sorted(f["all"])
            out["modes"][mode] = {
                "p50_ms": round(statistics.median(f["medians"]), 2),
                "round_p50s_ms": [round(x, 2) for x in f["medians"]],
                "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
                "statements_per_search": round(statistics.fmean(f["statements"]), 2) if args.database_url else None,
                "round_trips_per_search": round(statistics.fmean(f["round_trips"]), 2) if args.database_url else None,
            }
    finally:
        oracle.close()
    out["load"] = {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
