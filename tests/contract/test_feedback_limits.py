"""Issue 26, should-fix: feedback_log cannot be grown without bound by one client (it grew 3.8 MB/s): a verdict's
note is at most 1,000 characters, one client gives at most VERDICTS_PER_HOUR verdicts an hour (429 over HTTP, a
tool error over MCP, exit 8 in the CLI), and each section keeps only its newest VERDICTS_PER_SECTION verdicts.
The real HTTP app and MCP server over a real index; the limits are lowered for the test, nothing else is replaced."""

from __future__ import annotations

import anyio
import pytest

from _corpus import two_note_oracle


@pytest.fixture
def small(tmp_path):
    oracle = two_note_oracle(tmp_path)
    yield oracle
    oracle.close()


def _client(oracle):
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    return TestClient(build_app(oracle, token=None), base_url="http://127.0.0.1:37778")


def _ids(client) -> list[str]:
    return [h["id"] for h in client.get("/api/search", params={"query": "quote", "mode": "fts", "unit": "section",
                                                                 "limit": 20}).json()["hits"]]


def test_a_verdicts_note_is_short(small) -> None:
    with _client(small) as client:
        hit = _ids(client)[0]
        long = client.post("/api/feedback", json={"id": hit, "verdict": "helpful", "note": "n" * 1001})
        fine = client.post("/api/feedback", json={"id": hit, "verdict": "helpful", "note": "n" * 1000})
    assert long.status_code == 422 and "note" in long.json()["error"], long.text
    assert fine.status_code == 201, fine.text


def test_one_client_gives_a_bounded_number_of_verdicts_an_hour(small, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp import Client

    import oracle_server.services.capabilities.feedback as feedback
    from oracle_server.mcp.server import build_server

    monkeypatch.setattr(feedback, "VERDICTS_PER_HOUR", 5)
    with _client(small) as client:
        hit = _ids(client)[0]
        codes = [client.post("/api/feedback", json={"id": hit, "verdict": "misleading"}).status_code for _ in range(7)]
        refused = client.post("/api/feedback", json={"id": hit, "verdict": "helpful"})
    assert codes == [201] * 5 + [429] * 2, codes
    assert "verdicts in the last hour" in refused.json()["error"]

    async def run():
        async with Client(build_server(small)) as c:
            return [await c.call_tool("oracle_feedback", {"id": hit, "verdict": "helpful"}) for _ in range(6)]

    results = anyio.run(run)  # another client (mcp): its own hour
    assert [r.is_error for r in results] == [False] * 5 + [True], [r.content[0].text for r in results]
    assert "verdicts in the last hour" in results[-1].content[0].text


def test_a_section_keeps_its_newest_verdicts(small, monkeypatch: pytest.MonkeyPatch) -> None:
    import oracle_server.services.capabilities.feedback as feedback

    monkeypatch.setattr(feedback, "VERDICTS_PER_SECTION", 4)
    with _client(small) as client:
        hit = _ids(client)[0]
        for n in range(10):
            assert client.post("/api/feedback", json={"id": hit, "verdict": "helpful" if n < 7 else "misleading",
                                                      "note": f"verdict {n}"}).status_code == 201
    rows = small.logs.conn.execute("SELECT note FROM feedback_log WHERE doc_id = ? ORDER BY id", (hit,)).fetchall()
    assert [r[0] for r in rows] == ["verdict 6", "verdict 7", "verdict 8", "verdict 9"]
    assert small.logs.feedback_counts([hit])[hit] == (1, 3)
