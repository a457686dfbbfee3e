"""A server stopped while its maintenance worker indexes ends cleanly: exit 0, nothing alarming on stderr.

`Oracle.close()` stops and joins the worker before any store closes, so shutdown never meets
"Cannot operate on a closed database". Each case stops a real `oracle serve` at a different point of its
first index of a few hundred notes: during the keyword phase, and during the vector backlog.

    .venv/bin/python -m pytest -q tests/system/test_clean_exit.py
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from _corpus import BUNDLED, write
from _procs import free_port, oracle_cmd
from _seed import seed_data_dir
from test_live import oracle_env

NOTES = 400
ALARMS = ("closed database", "Traceback", "terminate called", "maintenance:", "background index failed")


@pytest.fixture
def kb(tmp_path: Path) -> dict[str, str]:
    root = tmp_path / "root"
    for n in range(NOTES):
        write(root / f"retrospectives/2026-03-01_retro-{n:03d}.md",
              f"# Retro {n}\n\n## What happened\n\nThe harbour crane {n} lifted containers all night.\n\n"
              f"## Next\n\nService crane {n} before the storm season.\n")
    return oracle_env(root, tmp_path / "data")


def indexed(data: Path) -> tuple[int, int]:
    """(files in the index, chunks in the vector store) as another process sees them; (0, 0) before."""
    try:
        with sqlite3.connect(f"file:{data / 'oracle.db'}?mode=ro", uri=True, timeout=5) as db:
            files = db.execute("SELECT count(*) FROM files").fetchone()[0]
            embedded = db.execute("SELECT count(*) FROM documents WHERE in_vector = 1").fetchone()[0]
            return files, embedded
    except sqlite3.Error:
        return 0, 0


def wait_until(check, what: str, proc: subprocess.Popen, log: Path, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert proc.poll() is None, f"the server exited early:\n{log.read_text(errors='replace')}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{log.read_text(errors='replace')}"
        time.sleep(0.02)


def finish(proc: subprocess.Popen, log: Path) -> str:
    try:
        proc.wait(90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the server did not exit within 90 s:\n{log.read_text(errors='replace')}")
    text = log.read_text(errors="replace")
    assert proc.returncode == 0, text
    assert not [alarm for alarm in ALARMS if alarm in text], text
    return text


@pytest.mark.parametrize("when", ["keyword-phase", "vector-backlog"])
def test_sigterm_during_the_first_index_exits_cleanly(tmp_path: Path, kb: dict[str, str], when: str) -> None:
    data = Path(kb["ORACLE_DATA_DIR"])
    log = tmp_path / "serve.log"
    with open(log, "w", encoding="utf-8") as errlog:
        proc = subprocess.Popen([*oracle_cmd(), "serve", "--http", "--port", str(free_port())], env=kb,
                                stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog)
    try:
        if when == "keyword-phase":
            wait_until(lambda: indexed(data)[0] > 0, "the first files in the index", proc, log)
        else:
            wait_until(lambda: indexed(data)[0] == NOTES and indexed(data)[1] > 0, "the vector backlog", proc, log)
        proc.send_signal(signal.SIGTERM)
        finish(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    files, embedded = indexed(data)
    print(f"\nstopped during the {when}: {files} files indexed, {embedded} chunks embedded")
    if when == "vector-backlog":
        assert files == NOTES  # what was done is kept; the next start goes on from there


def test_a_stdio_client_that_leaves_during_the_first_index_ends_the_server_cleanly(tmp_path: Path,
                                                                                     kb: dict[str, str]) -> None:
    data = Path(kb["ORACLE_DATA_DIR"])
    log = tmp_path / "serve.log"
    with open(log, "w", encoding="utf-8") as errlog:
        proc = subprocess.Popen([*oracle_cmd(), "serve", "--standalone"], env=kb, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        wait_until(lambda: indexed(data)[0] > 0, "the first files in the index", proc, log)
        assert proc.stdin is not None
        proc.stdin.close()
        finish(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- a short stdio session (issue 27 item 6) ----------------------------------------------------------
CLIENT_GRACE = 2.0  # what clients wait after closing stdin before they send SIGTERM (Claude Desktop, the SDKs)


def _rpc(proc: subprocess.Popen, message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen, id_: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout"
        message = json.loads(line)
        if message.get("id") == id_:
            return message


def _searches_logged(data: Path) -> int:
    with sqlite3.connect(data / "logs.db") as db:
        return db.execute("SELECT count(*) FROM search_log").fetchone()[0]


@pytest.fixture(scope="module")
def bundled_kb(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> dict[str, str]:
    """The bundled knowledge (it holds Thai text: a server warms the Thai dictionary and the multilingual
    model, seconds of loading) indexed once by a real `oracle index`."""
    base = tmp_path_factory.mktemp("short-sessions")
    root = base / "root"
    shutil.copytree(BUNDLED, root)
    env = oracle_env(root, seed_data_dir(embedding_seed, base / "data"))
    done = subprocess.run([*oracle_cmd(), "index"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return env


def test_a_short_stdio_session_exits_before_the_client_signals_and_keeps_its_logs(bundled_kb: dict[str, str],
                                                                                   tmp_path: Path) -> None:
    """A client that makes a few calls and closes stdin: the server exits within the client's grace period,
    with every search logged. Before: ~4.4 s to exit (joining the worker's model warm-up, then the
    interpreter's teardown), so the client's SIGTERM came first and cut the close short: 0 of 3 logged."""
    data = Path(bundled_kb["ORACLE_DATA_DIR"])
    exits = []
    for session in range(3):
        before = _searches_logged(data)
        log = tmp_path / f"serve-{session}.log"
        with open(log, "w", encoding="utf-8") as errlog:
            proc = subprocess.Popen([*oracle_cmd(), "serve", "--standalone"], env=bundled_kb, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=errlog, text=True, encoding="utf-8")
        try:
            _rpc(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "short", "version": "1"}}})
            _answer(proc, 0)
            _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            _answer(proc, 1)
            for n in range(3):
                _rpc(proc, {"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                            "params": {"name": "oracle_search", "arguments": {"query": f"quote fts5 terms {n}"}}})
                assert "error" not in _answer(proc, 10 + n)
            assert proc.stdin is not None
            closed = time.monotonic()
            proc.stdin.close()
            try:
                proc.wait(CLIENT_GRACE)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)  # as the client does; the server must still keep its logs
                proc.wait(30)
            exits.append(round(time.monotonic() - closed, 2))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        text = log.read_text(errors="replace")
        assert proc.returncode == 0, text
        assert not [alarm for alarm in ALARMS if alarm in text], text
        assert _searches_logged(data) - before == 3, (exits, text)
    print(f"\nstdio exit after stdin closed: {exits} s")
    assert max(exits) < CLIENT_GRACE, exits
