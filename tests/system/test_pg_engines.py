"""Two real `oracle serve --http` engines on one PostgreSQL database (a server the tests start, tests/_pg.py):
a learning saved through one is found through the other within 2 s, in every search mode (a killed indexer's
lock taken over: tests/unit/test_pg_store.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx

import _pg
from _procs import serve_http, stop_process


def test_two_engines_share_one_store(tmp_path: Path) -> None:
    root = _pg.write_root(tmp_path / "root")
    url = _pg.new_database()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_ROOT=str(root), ORACLE_DATABASE_URL=url)
    procs = []
    try:
        a, a_url = serve_http({**env, "ORACLE_DATA_DIR": str(tmp_path / "a")}, tmp_path, tmp_path / "a.log")
        procs.append(a)
        b, b_url = serve_http({**env, "ORACLE_DATA_DIR": str(tmp_path / "b")}, tmp_path, tmp_path / "b.log")
        procs.append(b)
        with httpx.Client(timeout=30) as client:
            for base in (a_url, b_url):  # both engines up, their initial syncs done (requests wait for them)
                assert client.get(base + "/api/search", params={"query": "router"}).json()["hits"]
            saved = client.post(a_url + "/api/learn", json={
                "pattern": "Wombats dig burrows with their claws; a burrow keeps them cool.", "title": "Wombat burrows"})
            assert saved.status_code == 201, saved.text
            # Visible at once: every mode's first search through B that starts after A's answer finds it (the
            # clock is read when each search starts: on a loaded machine one answer may itself take a second or two).
            # Each mode is timed from its own first search (the modes are asked one after another), so a slow
            # answer in one mode does not count against the next.
            started = time.monotonic()
            found: dict[str, float] = {}
            first: dict[str, float] = {}
            for mode in ("fts", "vector", "hybrid"):
                while mode not in found and time.monotonic() - started < 10:
                    asked = time.monotonic() - started
                    first.setdefault(mode, asked)
                    hits = client.get(b_url + "/api/search", params={"query": "wombat burrows", "mode": mode,
                                                                     "limit": 1}).json()["hits"]
                    if hits and hits[0]["title"] == "Wombat burrows":
                        found[mode] = round(asked - first[mode], 3)
                    else:
                        time.sleep(0.05)
            print("found through the other engine, seconds after that mode's first search:", found)
            assert set(found) == {"fts", "vector", "hybrid"}, found
            assert all(seconds < 2.0 for seconds in found.values()), found  # learn stores both legs before answering
            stats = client.get(b_url + "/api/stats").json()
            assert stats["files"]["total"] == len(_pg.NOTES) + 1, stats
    finally:
        for proc in procs:
            stop_process(proc)
