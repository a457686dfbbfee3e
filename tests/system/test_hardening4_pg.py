"""Issue 39, item 8: a PostgreSQL outage while Oracle runs, caused for real (the test's own PostgreSQL server,
stopped with pg_ctl, then started again).

Before: every request, /health included, waited 30 s for a pooled connection and then answered a bare "Internal
Server Error"; an engine that lived through an outage took more than 26 s to end after SIGTERM. Now /health
answers at once with the database's state (503, "unreachable"), other requests fail fast with a message that says
the database cannot be reached (503), requests work again once the database is back (no restart), and SIGTERM
ends the server within a few seconds.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

import _pg
from _procs import serve_http, stop_process

pytestmark = pytest.mark.slow
HANG = 120.0  # a ceiling that only catches a hang


@pytest.fixture
def own_pg():
    server = _pg.OwnServer()
    try:
        yield server
    finally:
        server.close()


def test_an_outage_is_reported_at_once_and_sigterm_still_ends_the_server(tmp_path: Path, own_pg) -> None:
    root = _pg.write_root(tmp_path / "root")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(tmp_path / "data"),
               ORACLE_DATABASE_URL=own_pg.new_database())
    proc, url = serve_http(env, tmp_path, tmp_path / "serve.log")
    figures = {}
    try:
        with httpx.Client(timeout=HANG) as client:
            assert client.get(url + "/api/search", params={"query": "router", "mode": "fts"}).json()["hits"]
            own_pg.stop()
            began = time.monotonic()
            health = client.get(url + "/health")
            figures["health"] = time.monotonic() - began
            assert health.status_code == 503, (health.status_code, health.text)
            body = health.json()
            assert body["status"] == "unavailable" and body["database"]["reachable"] is False, body
            assert "PostgreSQL" in body["database"]["error"], body
            for _ in range(3):
                began = time.monotonic()
                found = client.get(url + "/api/search", params={"query": "router", "mode": "fts"})
                figures.setdefault("search", []).append(round(time.monotonic() - began, 2))
                assert found.status_code == 503, (found.status_code, found.text)
                message = found.json()["error"]
                assert "PostgreSQL" in message and "cannot be reached" in message, message
            own_pg.start()
            deadline = time.monotonic() + HANG
            while client.get(url + "/health").status_code != 200:
                assert time.monotonic() < deadline, "the server never saw the database come back"
                time.sleep(0.2)
            assert client.get(url + "/api/search", params={"query": "router", "mode": "fts"}).json()["hits"]
            own_pg.stop()  # and down again: SIGTERM must still end the server
            assert client.get(url + "/health").status_code == 503
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(HANG)
        figures["sigterm"] = time.monotonic() - began
        print("seconds:", {k: (round(v, 2) if isinstance(v, float) else v) for k, v in figures.items()})
    finally:
        if proc.poll() is None:
            stop_process(proc)


