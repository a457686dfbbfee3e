"""Hardening, round three (issue 26), through the adapters: the HTTP app (Starlette's TestClient on the
real app over a real index) and the MCP tools and prompts (an in-process MCP client on the real server)."""

from __future__ import annotations


import pytest

from _corpus import two_note_oracle
from _procs import free_port


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    oracle = two_note_oracle(tmp_path_factory.mktemp("hardening3-http"))
    yield oracle
    oracle.close()


def _client(small):
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    port = free_port()
    return TestClient(build_app(small, host="127.0.0.1", port=port, token=None), base_url=f"http://127.0.0.1:{port}")


# -- 3. a retried learn over HTTP -------------------------------------------------------------------------
def test_a_retried_http_learn_with_an_idempotency_key_saves_one_note(small) -> None:
    body = {"pattern": "Retry a learn with its key.", "title": "Keyed retry", "idempotency_key": "http-key-000001"}
    with _client(small) as client:
        first = client.post("/api/learn", json=body)
        again = client.post("/api/learn", json=body)
        other = client.post("/api/learn", json={**body, "pattern": "A different learning."})
        bad = client.post("/api/learn", json={**body, "idempotency_key": "has space"})
    assert first.status_code == 201 and again.status_code == 201, (first.text, again.text)
    assert again.json()["file"] == first.json()["file"] and again.json()["replayed"] is True
    assert other.status_code == 409 and "different learning" in other.json()["error"]
    assert bad.status_code in (400, 422) and "idempotency_key" in bad.json()["error"]
    assert len(list((small.settings.root / "learnings").glob("*keyed-retry*"))) == 1
