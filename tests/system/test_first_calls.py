"""A long first call says what it waits for (issue 40, item 9): through a real stdio `oracle serve`, the first
learn after start sends MCP progress notifications naming the embedding model to a client that gave a
progressToken, and the server's log says the same and how long the call took; a later call waits for nothing and
says nothing. (How long each first call takes: benchmarks/first_calls.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from _mcp import Session, index_kb

pytestmark = pytest.mark.slow
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def session(tmp_path: Path):
    shutil.copytree(PROJECT / "knowledge", tmp_path / "root")
    kb, _ = index_kb(tmp_path)
    s = Session(kb)
    yield s
    s.close()


def test_the_first_learn_says_it_loads_the_model(session: Session) -> None:
    told: list[tuple[float, Any, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        told.append((value, total, message))

    result = session.portal.call(
        lambda: session.client.call_tool(
            "oracle_learn", {"pattern": "Drain the load balancer before a deploy so users never see a 502.",
                             "title": "Drain before deploy"}, progress_callback=progress))
    assert not result.is_error, result.content
    assert told, f"no progress notification; server stderr:\n{session.stderr()}"
    assert all(m and m.startswith("oracle_learn waits for") for _, _, m in told), told
    assert "the embedding model" in str(told[0][2])  # what it waits for first; later ones drop what has loaded
    assert [v for v, _, _ in told] == sorted(v for v, _, _ in told)  # progress only grows
    log = session.stderr()
    assert "oracle: oracle_learn waits for" in log and "the embedding model" in log
    assert "oracle: oracle_learn answered after" in log

    told.clear()
    again = session.portal.call(
        lambda: session.client.call_tool("oracle_search", {"query": "drain before deploy"}, progress_callback=progress))
    assert not again.is_error
    assert told == [] and "oracle_search waits for" not in session.stderr()  # loaded once, for every later call


def test_the_first_http_learn_logs_what_it_waits_for(tmp_path: Path) -> None:
    """`POST /api/learn` on a new `oracle serve --http` (15.8 s in issue 40, with nothing said): the server's log
    names what the call waits for and how long it took."""
    import httpx

    from _procs import serve_http, stop_process

    shutil.copytree(PROJECT / "knowledge", tmp_path / "root")
    kb, _ = index_kb(tmp_path)
    log = tmp_path / "serve.log"
    proc, url = serve_http(kb.env, tmp_path, log, timeout=300)
    try:
        answer = httpx.post(url + "/api/learn", timeout=300, json={
            "pattern": "Warm the model before the first deploy of the day.", "title": "Warm before deploy"})
        assert answer.status_code == 201, answer.text
        text = log.read_text()
        assert "oracle: oracle_learn waits for" in text and "oracle: oracle_learn answered after" in text, text
        second = httpx.post(url + "/api/learn", timeout=300, json={
            "pattern": "A second learning waits for nothing.", "title": "Second learning"})
        assert second.status_code == 201 and log.read_text().count("oracle_learn waits for") == 1
    finally:
        stop_process(proc)
