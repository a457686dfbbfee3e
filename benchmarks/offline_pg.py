"""An engine without its database (issue 38, item 3): how long an outage costs a team engine's callers.

    .venv/bin/python benchmarks/offline_pg.py [--notes 1000] [--rounds 5]

A PostgreSQL server of the script's own (tests/_pg.py OwnServer: stopped and started for real with pg_ctl), one
real `oracle serve --http` engine on a folder of `--notes` notes. Each round:

1. the server is stopped; from the moment `pg_ctl stop` returns, A is asked a keyword search every 20 ms until one
   is answered from the working copy (200, `meta.store` set): **down -> first answer from the working copy**;
2. a learning is saved through A (a file, indexed in the working copy's own index);
3. the server is started; from the moment it accepts connections, the database is polled every 20 ms until the
   learning's note is there: **back -> the offline write in the database** (the engine's probe, the sync that
   sends it, and the switch back). Then until A's answers no longer carry the mark: **back -> served from the
   database**.

While the database answers, the engine keeps the working copy's own index in step (a few seconds after start, then
every 5 minutes: server/services/offline.py, TeamLink._prepare); the script waits for that first, unless `--cold`:
then the first outage builds that index from nothing (every note parsed). The first round is printed apart from
the median of the others.
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
POLL = 0.02
CEILING = 300.0


def _wait(check, what: str):
    deadline = time.monotonic() + CEILING
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(POLL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="stop the database before the engine has prepared its"
                        " working copy's index (the first outage then parses every note)")
    args = parser.parse_args()

    import httpx
    import psycopg

    import _pg
    from _procs import serve_http, stop_process

    tmp = Path(tempfile.mkdtemp(prefix="oracle-offline-bench-"))
    root = tmp / "root"
    (root / "learnings").mkdir(parents=True)
    for n in range(args.notes):
        (root / "learnings" / f"n{n:04d}.md").write_text(
            f"# Note {n}\n\n## What\nThe text of note {n}, about the kiwi{n} and its habits.\n\n## Why\n"
            f"Because note {n} records something the team learnt on day {n % 365}.\n", encoding="utf-8")
    server = _pg.OwnServer()
    url = server.new_database("offline_bench")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_DATABASE_URL=url, ORACLE_ENGINE="0", ORACLE_ROOT=str(root),
               ORACLE_DATA_DIR=str(tmp / "data"))
    proc = None
    rows: list[dict[str, float]] = []
    try:
        proc, base = serve_http(env, tmp, tmp / "serve.log", timeout=CEILING)
        client = httpx.Client(timeout=CEILING)
        client.get(base + "/api/stats")  # the start-up sync done (requests wait for it)
        if not args.cold:  # the working copy's own index kept in step while the database answers (TeamLink._prepare)
            _wait(lambda: client.get(base + "/api/stats").json()["team_link"]["prepared"], "the prepared index")

        def search(query: str) -> dict:
            reply = client.get(base + "/api/search", params={"query": query, "mode": "fts", "limit": 1})
            return reply.json() if reply.status_code == 200 else {}

        def in_database(rel: str) -> bool:
            try:
                with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                    return bool(conn.execute("SELECT 1 FROM note_heads WHERE path = %s AND NOT deleted",
                                             [rel]).fetchone())
            except psycopg.Error:
                return False

        for round_no in range(args.rounds):
            server.stop()
            down = time.monotonic()
            answer = _wait(lambda: (lambda body: body if body.get("meta", {}).get("store") else None)(
                search(f"kiwi{round_no}")), "an answer from the working copy")
            to_answer = time.monotonic() - down
            assert answer["hits"], answer
            saved = client.post(base + "/api/learn", json={
                "pattern": f"Offline round {round_no}: the takahe{round_no} is a flightless bird.",
                "title": f"Takahe {round_no}"})
            assert saved.status_code == 201, saved.text
            rel = saved.json()["file"]
            server.start()
            back = time.monotonic()
            _wait(lambda: in_database(rel), "the offline learning in the database")
            to_database = time.monotonic() - back
            _wait(lambda: (lambda body: body and not body["meta"].get("store"))(search(f"takahe{round_no}")),
                  "answers from the database again")
            to_served = time.monotonic() - back
            rows.append({"down_to_answer": to_answer, "back_to_db": to_database, "back_to_served": to_served})
            print(f"round {round_no}: down -> working-copy answer {to_answer:.2f} s; back -> learning in the"
                  f" database {to_database:.2f} s; back -> served from the database {to_served:.2f} s", flush=True)
        client.close()
    finally:
        if proc is not None:
            stop_process(proc)
        server.close()

    first, later = rows[0], rows[1:] or rows[:1]
    print(f"\n{args.notes} notes, {args.rounds} outages (seconds)")
    print(f"  first outage ({'working-copy index built from nothing' if args.cold else 'index prepared'}): down -> answer {first['down_to_answer']:.2f};"
          f" back -> write in the database {first['back_to_db']:.2f}; back -> served from it {first['back_to_served']:.2f}")
    for key, label in (("down_to_answer", "down -> first answer from the working copy"),
                       ("back_to_db", "back -> the offline write in the database"),
                       ("back_to_served", "back -> answers from the database again")):
        values = [r[key] for r in later]
        print(f"  later outages, {label}: median {statistics.median(values):.2f}, max {max(values):.2f}")


if __name__ == "__main__":
    main()
