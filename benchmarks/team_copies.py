"""Working copies on one PostgreSQL (issue 38): how fast a learning reaches another machine's folder, and what a
sync with nothing to do costs.

    .venv/bin/python benchmarks/pg_server.py start /tmp/oracle-pg     # prints ORACLE_DATABASE_URL=...
    ORACLE_DATABASE_URL=... .venv/bin/python benchmarks/team_copies.py [--learnings 20] [--notes 1000]

1. Two real `oracle serve --http` engines, each with its own folder and data dir, on one (new) database: each
   learning is POSTed to A, then B's folder is polled for the file and B's keyword search for the title. Printed:
   from the request to A to the file in B's folder and to the first B search that finds it, median and p95 (and
   the same from A's answer: the learning itself embeds before A answers), and to B's keyword leg reading its
   working copy's own index again, the learning in it (issue 38 item 5: SQL meanwhile).
2. A copy of `--notes` notes synced once, then synced again with nothing to do, in this process (the keyword and
   copy phases; `Indexer.sync(vectors=False)`): median of 5 runs, for the copy that wrote them and for a second
   copy (another folder and data dir) that pulled them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def fresh_database(url: str) -> str:
    """A new database beside the one in `url` (each run starts empty)."""
    from urllib.parse import urlparse, urlunparse

    import psycopg

    name = f"team_copies_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING "UTF8"')
    return urlunparse(urlparse(url)._replace(path="/" + name))


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def learnings(url: str, count: int, tmp: Path) -> None:
    import httpx

    from _procs import serve_http, stop_process

    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_DATABASE_URL=url)
    procs = []
    try:
        engines = {}
        for who in ("a", "b"):
            (tmp / who / "learnings").mkdir(parents=True)
            proc, base = serve_http({**env, "ORACLE_ROOT": str(tmp / who), "ORACLE_DATA_DIR": str(tmp / f"{who}-data")},
                                    tmp, tmp / f"{who}.log")
            procs.append(proc)
            engines[who] = base
        to_file, to_search, after_answer, to_words = [], [], [], []

        def words_from() -> str:
            return client.get(engines["b"] + "/api/stats").json()["team_link"]["keyword_index"]["from"]

        with httpx.Client(timeout=120) as client:
            for base in engines.values():
                client.get(base + "/api/stats")
            began = time.monotonic()
            while words_from() != "working copy":  # B's working copy's own index is built a few seconds after start
                if time.monotonic() - began > 120:
                    raise SystemExit("B's keyword leg never read its working copy's index")
                time.sleep(0.05)
            for n in range(count):
                title = f"Benchmark learning {n} kookaburra{n}"
                started = time.monotonic()
                saved = client.post(engines["a"] + "/api/learn", json={
                    "pattern": f"The kookaburra{n} laughs at dawn; note {n} of the team benchmark.", "title": title})
                answered = time.monotonic()
                rel = saved.json()["file"]
                while not (tmp / "b" / rel).exists():
                    if time.monotonic() - started > 60:
                        raise SystemExit(f"{rel} never reached B's folder")
                    time.sleep(0.005)
                filed = time.monotonic()
                while not client.get(engines["b"] + "/api/search", params={
                        "query": f"kookaburra{n}", "mode": "fts", "limit": 1}).json()["hits"]:
                    time.sleep(0.01)
                found = time.monotonic()
                while words_from() != "working copy" or not client.get(engines["b"] + "/api/search", params={
                        "query": f"kookaburra{n}", "mode": "fts", "limit": 1}).json()["hits"]:
                    if time.monotonic() - started > 60:
                        raise SystemExit("B's keyword leg never came back to its working copy's index")
                    time.sleep(0.01)
                to_words.append(time.monotonic() - started)
                to_file.append(filed - started)
                to_search.append(found - started)
                after_answer.append(max(0.0, filed - answered))
        print(f"learning through A -> file in B's folder: median {statistics.median(to_file) * 1000:.0f} ms,"
              f" p95 {p95(to_file) * 1000:.0f} ms ({count} learnings, from the request to A)")
        print(f"learning through A -> found by B's search: median {statistics.median(to_search) * 1000:.0f} ms,"
              f" p95 {p95(to_search) * 1000:.0f} ms")
        print(f"file in B's folder after A answered: median {statistics.median(after_answer) * 1000:.0f} ms,"
              f" p95 {p95(after_answer) * 1000:.0f} ms (0: it was there before A's answer)")
        print(f"learning through A -> B's keyword leg reads its working copy's index again, holding it: median"
              f" {statistics.median(to_words) * 1000:.0f} ms, p95 {p95(to_words) * 1000:.0f} ms (searches answer from"
              " the database's SQL meanwhile)")
    finally:
        for proc in procs:
            stop_process(proc)


def idle_sync(url: str, notes: int, tmp: Path) -> None:
    from _corpus import open_oracle

    root = tmp / "big"
    for n in range(notes):
        path = root / "learnings" / f"note-{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {n}\n\nThe text of note {n}, about topic {n % 37} and item {n * 7919 % 1000}.\n",
                        encoding="utf-8")
    (tmp / "other" / "learnings").mkdir(parents=True)
    first = open_oracle(root, tmp / "big-data", database_url=url)
    second = open_oracle(tmp / "other", tmp / "other-data", database_url=url)
    try:
        started = time.perf_counter()
        report = first.indexer.sync(vectors=False)
        print(f"first sync of {notes} notes (push + keyword index): {time.perf_counter() - started:.2f} s"
              f" ({report.pushed} pushed)")
        started = time.perf_counter()
        report = second.indexer.sync(vectors=False)
        print(f"second copy's first sync (pull {report.pulled} notes, already indexed):"
              f" {time.perf_counter() - started:.2f} s")
        for name, oracle in (("the copy that wrote them", first), ("the copy that pulled them", second)):
            times = []
            for _ in range(5):
                started = time.perf_counter()
                report = oracle.indexer.sync(vectors=False)
                times.append(time.perf_counter() - started)
                assert (report.pulled, report.pushed, report.added, report.changed) == (0, 0, 0, 0), report.summary()
            print(f"sync with nothing to do, {notes} notes, {name}: median {statistics.median(times) * 1000:.0f} ms"
                  f" (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")
    finally:
        first.close()
        second.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learnings", type=int, default=20)
    parser.add_argument("--notes", type=int, default=1000)
    args = parser.parse_args()
    url = os.environ.get("ORACLE_DATABASE_URL")
    if not url:
        raise SystemExit("set ORACLE_DATABASE_URL (benchmarks/pg_server.py start DIR prints one)")
    with tempfile.TemporaryDirectory(prefix="oracle-team-") as tmp:
        learnings(fresh_database(url), args.learnings, Path(tmp) / "engines")
        idle_sync(fresh_database(url), args.notes, Path(tmp) / "idle")


if __name__ == "__main__":
    main()
