"""Issue 38, item 3: an engine without its database keeps working. Real `oracle serve --http` engines, each with its
own folder (a working copy), on a PostgreSQL server of the test's own (tests/_pg.py: OwnServer), stopped and
started for real with pg_ctl.

- An engine started while the database is down serves its working copy: keyword search answers, every answer and
  stats say where it came from (`working copy (team database unreachable since ...)`), a learning is saved as a
  file; once the database is started, the learning reaches it and another engine's folder, and the mark goes away.
- The database stopped while two engines run (and search): answers are either hits or a clear one-line message,
  never a bare 500 or a hang; searches then answer from the working copies; a note edited in both folders meanwhile
  ends, after the restart, as one winner plus a conflict copy in both folders and in the database: nothing lost.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from _procs import serve_http, stop_process
from test_pg_engines import ALICE, BOB, SHARED, _folder, _notes  # the working-copy notes and folder helpers

pytestmark = pytest.mark.slow
HANG = 120.0  # a ceiling that only catches a hang
def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_DATABASE_URL=url, ORACLE_ENGINE="0")
    return env


def _until(check, what: str, ceiling: float = HANG):
    deadline = time.monotonic() + ceiling
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _heads(url: str) -> dict[str, bool]:
    """The database's notes: path -> deleted."""
    with psycopg.connect(url, autocommit=True) as conn:
        return dict(conn.execute("SELECT path, deleted FROM note_heads").fetchall())


def _team_tile(url: str) -> str:
    """The dashboard's *Team store* tile as a real Chromium shows it (no token: a loopback server without tokens)."""
    from playwright.sync_api import sync_playwright

    from test_dashboard import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = chromium.new_context(viewport={"width": 1280, "height": 800}, service_workers="block").new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url + "/", wait_until="load")
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_selector("#tile-team:not([hidden])")
            return page.text_content("[data-stat='working_copy.conflicts']") or ""
        finally:
            chromium.close()


def _serving(client: httpx.Client, base: str) -> str:
    return client.get(base + "/api/stats").json()["team_link"]["serving"]


def test_an_engine_started_without_its_database_serves_its_working_copy(tmp_path: Path, own_pg) -> None:
    url = own_pg.new_database()
    a = _folder(tmp_path / "a", {"learnings/alice.md": ALICE})
    b = (tmp_path / "b")
    (b / "learnings").mkdir(parents=True)
    env = _env(url)
    own_pg.stop()
    procs = []
    try:
        pa, a_url = serve_http({**env, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "ad")}, tmp_path,
                               tmp_path / "a.log", timeout=HANG)
        procs.append(pa)
        with httpx.Client(timeout=HANG) as client:
            health = client.get(a_url + "/health").json()
            assert health["status"] == "working copy" and health["database"]["reachable"] is False, health
            found = client.get(a_url + "/api/search", params={"query": "flamingo migration", "mode": "fts"})
            assert found.status_code == 200, found.text
            body = found.json()
            assert body["hits"] and body["hits"][0]["source_file"] == "learnings/alice.md", body
            mark = body["meta"]["store"]
            assert mark.startswith("working copy (team database unreachable since "), body["meta"]
            assert mark in body["meta"]["warnings"], body["meta"]
            hybrid = client.get(a_url + "/api/search", params={"query": "flamingo migration"})  # the default mode
            assert hybrid.status_code == 200 and hybrid.json()["hits"][0]["source_file"] == "learnings/alice.md"
            assert hybrid.json()["meta"]["store"] == mark, hybrid.json()["meta"]
            stats = client.get(a_url + "/api/stats").json()
            assert stats["store"] == mark and stats["team_link"]["serving"] == "working copy", stats["team_link"]
            concepts = client.get(a_url + "/api/concepts")  # an answer without warnings: marked in a header
            assert concepts.status_code == 200 and concepts.headers["x-oracle-store"] == mark, concepts.headers
            assert _team_tile(a_url) == "database unreachable"  # the dashboard's Team store tile, in a real Chromium
            saved = client.post(a_url + "/api/learn", json={
                "pattern": "Wombats dig burrows with their claws; a burrow keeps them cool.", "title": "Wombat burrows"})
            assert saved.status_code == 201, saved.text
            rel = saved.json()["file"]
            assert mark in saved.json()["warnings"], saved.json()
            assert (a / rel).is_file()
            hits = client.get(a_url + "/api/search", params={"query": "wombat burrows", "mode": "fts"}).json()["hits"]
            assert hits and hits[0]["source_file"] == rel  # searchable in the working copy at once
            history = client.get(a_url + "/api/history", params={"file": "learnings/alice.md"})
            assert history.status_code == 503 and "history is kept in the team database" in history.json()["error"]

            own_pg.start()  # the database comes back: the learning goes up, the mark goes away, no restart
            _until(lambda: _serving(client, a_url) == "team database", "A never went back to the database")
            assert _heads(url).get(rel) is False and _heads(url).get("learnings/alice.md") is False
            again = client.get(a_url + "/api/search", params={"query": "wombat burrows", "mode": "fts"}).json()
            assert again["hits"] and again["hits"][0]["source_file"] == rel and again["meta"]["store"] == ""
            assert not any("working copy" in w for w in again["meta"]["warnings"]), again["meta"]
            stats = client.get(a_url + "/api/stats").json()
            assert stats["team_link"]["last_return"]["pushed"] >= 2, stats["team_link"]
            assert client.get(a_url + "/health").json()["status"] == "ok"
            assert "x-oracle-store" not in client.get(a_url + "/api/concepts").headers

            pb, b_url = serve_http({**env, "ORACLE_ROOT": str(b), "ORACLE_DATA_DIR": str(tmp_path / "bd")}, tmp_path,
                                   tmp_path / "b.log", timeout=HANG)
            procs.append(pb)
            _until(lambda: (b / rel).exists(), "the learning never reached B's folder")
            assert _notes(b) == _notes(a)
            hits = client.get(b_url + "/api/search", params={"query": "wombat burrows", "mode": "fts"}).json()["hits"]
            assert hits and hits[0]["source_file"] == rel
    finally:
        for proc in procs:
            stop_process(proc)


def test_the_database_stopped_under_running_engines(tmp_path: Path, own_pg) -> None:
    url = own_pg.new_database()
    a = _folder(tmp_path / "a", {"learnings/alice.md": ALICE, "learnings/shared.md": SHARED})
    b = _folder(tmp_path / "b", {"learnings/bob.md": BOB})
    env = _env(url)
    procs = []
    try:
        pa, a_url = serve_http({**env, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "ad")}, tmp_path,
                               tmp_path / "a.log", timeout=HANG)
        procs.append(pa)
        pb, b_url = serve_http({**env, "ORACLE_ROOT": str(b), "ORACLE_DATA_DIR": str(tmp_path / "bd")}, tmp_path,
                               tmp_path / "b.log", timeout=HANG)
        procs.append(pb)
        _until(lambda: _notes(a) == _notes(b) and len(_notes(a)) == 3, "the two folders never converged")

        # Searches run through A while the database stops under them: each answer is hits or one clear line.
        answers: list[tuple[int, dict]] = []
        done = threading.Event()

        def ask() -> None:
            with httpx.Client(timeout=HANG) as client:
                while not done.is_set():
                    reply = client.get(a_url + "/api/search", params={"query": "flamingo", "mode": "fts"})
                    answers.append((reply.status_code, reply.json()))

        asker = threading.Thread(target=ask)
        asker.start()
        try:
            _until(lambda: len(answers) >= 3, "no search answered before the stop")
            stopped_at = time.monotonic()
            own_pg.stop()
            with httpx.Client(timeout=HANG) as client:
                first = _until(lambda: (lambda r: r if r.status_code == 200 and r.json()["meta"]["store"] else None)(
                    client.get(a_url + "/api/search", params={"query": "flamingo", "mode": "fts"})),
                    "A never answered from its working copy")
            print(f"seconds from the stop to the first answer from the working copy: {time.monotonic() - stopped_at:.2f}")
        finally:
            done.set()
            asker.join(HANG)
        for status, body in answers:
            if status == 200:
                assert body["hits"] and body["hits"][0]["source_file"] == "learnings/alice.md", body
            else:  # the one that met the stop: a clear one-line reason, never a bare 500
                assert status == 503 and "PostgreSQL" in body["error"], (status, body)
        assert first.json()["hits"][0]["source_file"] == "learnings/alice.md"

        with httpx.Client(timeout=HANG) as client:
            _until(lambda: _serving(client, b_url) == "working copy", "B never noticed the outage")
            # Meanwhile: the shared note is edited in both folders, and a learning is saved through B.
            (a / "learnings/shared.md").write_text(SHARED + "\nAlice: not in the week of a release.\n", encoding="utf-8")
            (b / "learnings/shared.md").write_text(SHARED + "\nBob: never after 4 pm.\n", encoding="utf-8")
            saved = client.post(b_url + "/api/learn", json={
                "pattern": "The echidna lays eggs and eats ants.", "title": "Echidna facts"})
            assert saved.status_code == 201, saved.text
            rel = saved.json()["file"]
            for base, text in ((a_url, "release"), (b_url, "4 pm")):  # each copy's own edit is searchable there
                _until(lambda: client.get(base + "/api/search", params={"query": text, "mode": "fts"}).json()["hits"],
                       f"the offline edit never became searchable through {base}")
            assert pa.poll() is None and pb.poll() is None

            own_pg.start()
            for base in (a_url, b_url):
                _until(lambda: _serving(client, base) == "team database", f"{base} never went back to the database")

            def converged() -> bool:
                na, nb = _notes(a), _notes(b)
                return na == nb and len(na) == 5
            _until(converged, f"the folders never converged: {sorted(_notes(a))} vs {sorted(_notes(b))}")
            notes = _notes(a)
            copies = [p for p in notes if "(conflict from" in p]
            assert len(copies) == 1 and copies[0].startswith("learnings/shared (conflict from "), sorted(notes)
            texts = notes["learnings/shared.md"] + notes[copies[0]]
            assert "Alice: not in the week of a release." in texts and "Bob: never after 4 pm." in texts
            assert rel in notes
            heads = _heads(url)
            assert {p for p, deleted in heads.items() if not deleted} == set(notes), heads
            for base in (a_url, b_url):
                found = client.get(base + "/api/search", params={"query": "echidna", "mode": "fts"}).json()
                assert found["hits"] and found["hits"][0]["source_file"] == rel and found["meta"]["store"] == ""
                stats = client.get(base + "/api/stats").json()
                assert stats["working_copy"]["conflicts"] == 1 and stats["store"].startswith("postgresql"), stats
    finally:
        for proc in procs:
            stop_process(proc)


def test_the_database_stopped_mid_sync(tmp_path: Path, own_pg) -> None:
    """An engine's start-up sync of a 400-note folder, the database stopped while it indexes: the engine switches
    to its working copy and answers; after the restart the sync goes on and every note is in the database once,
    each head the file's own bytes (no partial note, none doubled), and searchable through the database."""
    import hashlib

    url = own_pg.new_database()
    notes = {f"learnings/n{n:03d}.md": f"# Note {n}\n\nThe text of note {n}: a numbat{n} fact.\n" for n in range(400)}
    a = _folder(tmp_path / "a", notes)
    env = _env(url)

    def indexed() -> int:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                return conn.execute("SELECT count(*) FROM files").fetchone()[0]
        except psycopg.Error:
            return 0

    procs = []
    try:
        pa, a_url = serve_http({**env, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "ad")}, tmp_path,
                               tmp_path / "a.log", timeout=HANG)
        procs.append(pa)
        _until(lambda: indexed() > 0, "the start-up sync never indexed a note")
        at_stop = indexed()
        own_pg.stop()
        print(f"database stopped with {at_stop} of 400 notes indexed")
        with httpx.Client(timeout=HANG) as client:
            found = _until(lambda: (lambda r: r.json() if r.status_code == 200 and r.json()["hits"] else None)(
                client.get(a_url + "/api/search", params={"query": "numbat399", "mode": "fts"})),
                "the working copy never answered")
            assert found["hits"][0]["source_file"] == "learnings/n399.md"
            assert found["meta"]["store"].startswith("working copy (team database unreachable since "), found["meta"]
            own_pg.start()
            _until(lambda: _serving(client, a_url) == "team database", "A never went back to the database")
            _until(lambda: indexed() == 400, "the sync never finished after the restart")
            hits = client.get(a_url + "/api/search", params={"query": "numbat399", "mode": "fts"}).json()
            assert hits["hits"][0]["source_file"] == "learnings/n399.md" and hits["meta"]["store"] == ""
        with psycopg.connect(url, autocommit=True) as conn:
            heads = dict(conn.execute("SELECT path, hash FROM note_heads WHERE NOT deleted").fetchall())
            assert conn.execute("SELECT count(*), count(DISTINCT path) FROM note_revisions").fetchone() == (400, 400)
        assert heads == {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in notes.items()}
        assert _notes(a) == notes  # nothing written into the folder: no conflict copy, no partial file
    finally:
        for proc in procs:
            stop_process(proc)
