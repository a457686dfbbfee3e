"""One engine per root and data dir, whichever way it was started (issue 40, items 7 and 8), through real processes:
`oracle serve --http` and stdio sessions share one Oracle (one process holds the models, the watcher and the writer
lock), a learning written through one is found through the other, and the CLI's read commands (and `oracle index`)
are answered by that process, not by a new one that loads the index and the model again.

    .venv/bin/python -m pytest -q tests/system/test_one_engine.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx

from _procs import serve_http, stop_process
from test_engine import Session, alive, cli, engine_pids, indexed, kb, processes, wait_for  # noqa: F401 (fixtures)


def heavy_pids(env: dict[str, str]) -> list[int]:
    """Every process that holds this test's index open (a file under its data dir: the SQLite database, Chroma's):
    an engine, a standalone server. A stdio relay and a `serve --http` attached to an engine hold none."""
    data = os.path.realpath(env["ORACLE_DATA_DIR"]) + os.sep
    pids = []
    for pid, _args in processes():
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith(data) and target.endswith((".db", ".sqlite3")):
                pids.append(pid)
                break
    return sorted(p for p in pids if alive(p))


def api(url: str, path: str, **params: object) -> dict:
    answer = httpx.get(url + path, params=params, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


def learn(url: str, pattern: str, title: str) -> None:
    answer = httpx.post(url + "/api/learn", json={"pattern": pattern, "title": title}, timeout=120)
    assert answer.status_code == 201, answer.text


def titles(hits: list[dict]) -> list[str]:
    return [h["title"] for h in hits]


def test_serve_http_is_the_engine_that_stdio_sessions_attach_to(kb: dict[str, str], tmp_path: Path) -> None:
    proc, url = serve_http(kb, tmp_path, tmp_path / "http.log")
    session = None
    try:
        session = Session(kb)
        served = session.serving()
        assert served["mode"] == "engine" and served["pid"] == proc.pid  # the HTTP server's own Oracle
        assert heavy_pids(kb) == [proc.pid]  # no second engine was started
        assert api(url, "/api/stats")["serving"]["sessions"] == 1
        status = json.loads(cli(kb, "engine", "status", "--json").stdout)
        assert [s["pid"] for s in status] == [proc.pid] and status[0]["hosted"] is True

        session.ok("oracle_learn", {"pattern": "Tide tables come from the harbour master, not the almanac.",
                                     "title": "Tide tables source"})
        assert "Tide tables source" in titles(api(url, "/api/search", q="tide tables harbour", mode="fts")["hits"])
        learn(url, "Anchor chains are measured in shackles of fifteen fathoms.", "Anchor chain shackles")
        hits = session.ok("oracle_search", {"query": "anchor chain shackles", "mode": "fts"})["hits"]
        assert "Anchor chain shackles" in titles(hits)

        # `oracle engine stop` ends the engine, and with it this server (it is the engine)
        cli(kb, "engine", "stop")
        assert proc.wait(timeout=120) == 0
    finally:
        if session is not None:
            session.close()
        if proc.poll() is None:
            stop_process(proc)


def test_serve_http_attaches_to_the_engine_a_stdio_session_started(kb: dict[str, str], tmp_path: Path) -> None:
    session = Session(kb)
    proc = None
    try:
        engine = session.serving()["pid"]
        assert engine_pids(kb) == [engine]
        proc, url = serve_http(kb, tmp_path, tmp_path / "http.log")
        stats = api(url, "/api/stats")
        assert stats["serving"]["pid"] == engine and stats["serving"]["http"] == [url]  # the engine answers HTTP
        assert heavy_pids(kb) == [engine]  # `serve --http` holds no Oracle of its own
        assert Path(kb["ORACLE_DATA_DIR"], "server.json").exists()

        learn(url, "Sextant sights are reduced with the nautical almanac of the year.", "Sextant sight reduction")
        hits = session.ok("oracle_search", {"query": "sextant sight reduction", "mode": "fts"})["hits"]
        assert "Sextant sight reduction" in titles(hits)
        session.ok("oracle_learn", {"pattern": "Bilge pumps are tested before every passage.",
                                     "title": "Bilge pump check"})
        assert "Bilge pump check" in titles(api(url, "/api/search", q="bilge pumps tested", mode="fts")["hits"])

        stop_process(proc)  # the front goes with its process; the engine and its session stay
        assert proc.returncode == 0
        wait_for(lambda: not Path(kb["ORACLE_DATA_DIR"], "server.json").exists(), "server.json to go")
        try:
            httpx.get(url + "/health", timeout=5)
            raise AssertionError("the front still answers after its `serve --http` ended")
        except httpx.TransportError:
            pass
        assert alive(engine) and session.serving()["pid"] == engine
        assert session.serving().get("http") == []
    finally:
        if proc is not None and proc.poll() is None:
            stop_process(proc)
        session.close()


def test_cli_read_commands_are_answered_by_the_running_server(kb: dict[str, str], tmp_path: Path) -> None:
    alone = {c: cli(kb, c) for c in ("list", "concepts")}  # no server: answered in this process
    for command, done in alone.items():
        assert done.returncode == 0 and done.stdout.strip(), (command, done.stderr)
    assert json.loads(cli(kb, "stats", "--json").stdout)["serving"]["mode"] == "in-process"

    proc, url = serve_http(kb, tmp_path, tmp_path / "http.log")
    try:
        before = api(url, "/api/stats")["serving"]["cli_calls"]
        through = {c: cli(kb, c) for c in ("list", "concepts", "reflect")}
        for command, done in through.items():
            assert done.returncode == 0 and done.stdout.strip(), (command, done.stderr)
            assert "opening the index" not in done.stderr, command
        for command in alone:  # the engine's text is the text the command prints in its own process
            assert through[command].stdout == alone[command].stdout, command
        indexed_now = cli(kb, "index", "--json")
        assert indexed_now.returncode == 0, indexed_now.stderr
        assert json.loads(indexed_now.stdout)["unchanged"] >= 1
        assert api(url, "/api/stats")["serving"]["cli_calls"] == before + 4  # the server answered all four
        assert json.loads(cli(kb, "--local", "list", "--json").stdout)["total"] >= 1  # --local still works alone
        assert api(url, "/api/stats")["serving"]["cli_calls"] == before + 4
    finally:
        stop_process(proc)


def test_serve_http_alone_when_asked(kb: dict[str, str], tmp_path: Path) -> None:
    """`--standalone` (and ORACLE_ENGINE=0) keep the old shape: an HTTP server with its own Oracle, no engine
    socket for sessions to find."""
    proc, url = serve_http(kb, tmp_path, tmp_path / "http.log", "--standalone")
    try:
        assert api(url, "/api/stats")["serving"]["mode"] == "in-process"
        assert not list(Path(kb["ORACLE_RUNTIME_DIR"]).glob("e-*.sock"))
    finally:
        stop_process(proc)
    assert proc.returncode == 0


def test_a_taken_port_through_the_engine_is_one_line_and_exit_1(kb: dict[str, str]) -> None:
    """The engine binds the front's port: a taken one is the same one-line error as a lone server's, and the
    engine goes on serving its session."""
    import socket

    session = Session(kb)
    try:
        engine = session.serving()["pid"]
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            done = cli(kb, "serve", "--http", "--port", str(port))
        assert done.returncode == 1, done.stderr
        assert [line for line in done.stderr.splitlines() if line.strip()] == [
            f"oracle: port {port} on 127.0.0.1 is already in use (another `oracle serve --http`?): stop it, or choose"
            " another with --port or ORACLE_PORT"]
        assert session.serving()["pid"] == engine and session.serving().get("http") == []
    finally:
        session.close()
