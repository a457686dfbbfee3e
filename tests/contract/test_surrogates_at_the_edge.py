"""Hardening, round four (issue 39), through the adapters: the HTTP app (Starlette's TestClient on the real app
over a real index) and the MCP tools (an in-process MCP client on the real server)."""

from __future__ import annotations

import anyio
import pytest

from _corpus import two_note_oracle
from _procs import free_port


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    oracle = two_note_oracle(tmp_path_factory.mktemp("hardening4-http"))
    yield oracle
    oracle.close()


def _client(small):
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    port = free_port()
    return TestClient(build_app(small, host="127.0.0.1", port=port, token=None), base_url=f"http://127.0.0.1:{port}")


# -- 1. a lone surrogate is refused at every edge, and the logs go on ------------------------------------------
def test_a_lone_surrogate_over_http_is_a_422_naming_the_field_and_stats_and_logs_still_answer(small) -> None:
    with _client(small) as client:
        where = client.get("/api/search", params={"query": "okapi", "where": '{"status": "\\ud800"}'})
        learn = client.post("/api/learn", content=b'{"pattern": "okapis \\ud800 dig", "title": "Okapi"}',
                            headers={"content-type": "application/json"})
        consult = client.get("/api/consult", params={"decision": "Use okapis?", "where": '{"owner": ["ana", "\\udfff"]}'})
        for answer, field in ((where, "where.status"), (learn, "pattern"), (consult, "where.owner")):
            assert answer.status_code == 422, answer.text
            assert "lone surrogate" in answer.json()["error"] and field in answer.json()["error"], answer.text
        fine = client.get("/api/search", params={"query": "okapi"})
        small.logs.tick()
        stats, logs = client.get("/api/stats"), client.get("/api/logs")
    assert fine.status_code == 200 and stats.status_code == 200 and logs.status_code == 200, (stats.text, logs.text)
    assert logs.json()["searches"][0]["query"] == "okapi"
    assert not list((small.settings.root / "learnings").glob("*okapi*"))  # nothing was written


def test_a_lone_surrogate_over_mcp_is_a_tool_error_naming_the_field(small) -> None:
    from mcp import Client

    from oracle_server.mcp.server import build_server

    async def run():
        async with Client(build_server(small)) as client:
            refused = await client.call_tool("oracle_search", {"query": "okapi", "where": '{"status": "\\ud800"}'})
            fine = await client.call_tool("oracle_stats", {})
            return refused, fine

    refused, fine = anyio.run(run)
    text = refused.content[0].text
    assert refused.is_error and "lone surrogate" in text and "where.status" in text, text
    assert not fine.is_error
