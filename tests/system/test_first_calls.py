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
    assert all(m and m.startswith("oracle_learn waits") for _, _, m in told), told
    # what it waits for: the server's start-up if the call came first (said by the stdio front), then the model
    assert any("the embedding model" in str(m) for _, _, m in told), told
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


def test_a_cold_session_says_it_waits_for_the_engine(tmp_path: Path) -> None:
    """The default `oracle serve` is a relay to the shared engine: with none running, the first call waits for one to
    start (issue 40: 7.3 s to connect, 2.5 s more for the first search, in silence). The relay says so at once, in a
    progress notification (progress 0) and on its stderr; the engine then says what it loads."""
    import anyio.from_thread
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp_types import Implementation

    from _procs import oracle_cmd, stop_engines

    shutil.copytree(PROJECT / "knowledge", tmp_path / "root")
    kb, _ = index_kb(tmp_path)
    runtime = tmp_path / "runtime"
    env = dict(kb.env, ORACLE_RUNTIME_DIR=str(runtime))
    told: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        told.append((value, message))

    async def first_search() -> bool:
        params = StdioServerParameters(command=oracle_cmd()[0], args=[*oracle_cmd()[1:], "serve"], env=env)
        with open(tmp_path / "relay.stderr", "w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), client_info=Implementation(name="t", version="1"),
                              read_timeout_seconds=300) as client:
                result = await client.call_tool("oracle_search", {"query": "quote fts5 terms"},
                                                progress_callback=progress)
                return bool(result.is_error)

    try:
        with anyio.from_thread.start_blocking_portal() as portal:
            assert portal.call(first_search) is False
    finally:
        stop_engines(runtime)
    assert told and told[0][0] == 0 and "shared Oracle engine" in str(told[0][1]), told
    assert [v for v, _ in told] == sorted(v for v, _ in told)
    assert "oracle: oracle_search waits: the shared Oracle engine" in (tmp_path / "relay.stderr").read_text()
