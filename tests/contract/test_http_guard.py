"""Issue 26, should-fix, through the real HTTP app (Starlette's TestClient over a real index): weak tokens are
refused at start, wrong tokens are rate-limited per client address, REST writes check Origin as /mcp does, and the
Host header's case is treated the same on every route."""

from __future__ import annotations

import pytest

from _corpus import two_note_oracle
from _procs import free_port

TOKEN = "Zq8-vL2pXw7_nR4tKc9yBm3"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    oracle = two_note_oracle(tmp_path_factory.mktemp("guard"))
    yield oracle
    oracle.close()


def _client(app, port: int):
    from starlette.testclient import TestClient

    return TestClient(app, base_url=f"http://127.0.0.1:{port}")


@pytest.mark.parametrize("weak", [" " * 24, "\t" * 20, "aaaaaaaaaaaaaaaaaaaa", "1234567890123456", "abcdefghijklmnop",
                                  "passwordpassword", "s3cret-s3cret-s3cret", "correct horse battery staple",
                                  "  Zq8-vL2pXw7_nR4tKc9yBm3"])
def test_weak_tokens_are_refused_at_start(small, weak: str) -> None:
    from oracle_server.services.runtime.app import ServerConfigError
    from oracle_server.http.app import build_app

    with pytest.raises(ServerConfigError, match="ORACLE_TOKEN is refused"):
        build_app(small, host="0.0.0.0", port=free_port(), token=weak)


def test_random_tokens_are_accepted() -> None:
    import secrets

    from oracle_server.services.capabilities.team import weak_token

    assert not [t for t in (secrets.token_urlsafe(n) for n in (12, 16, 32) for _ in range(300)) if weak_token(t)]
    assert weak_token(TOKEN) is None


def test_wrong_tokens_are_rate_limited_per_address(small) -> None:
    from oracle_server.http.app import FAILED_AUTH_LIMIT, build_app

    port = free_port()
    good = {"Authorization": f"Bearer {TOKEN}"}
    with _client(build_app(small, port=port, token=TOKEN), port) as client:
        assert client.get("/api/list", headers=good).status_code == 200
        codes = [client.get("/api/list", headers={"Authorization": f"Bearer guess-{n:04d}-xxxxxxxxxxxx"}).status_code
                 for n in range(FAILED_AUTH_LIMIT + 5)]
        assert codes[:FAILED_AUTH_LIMIT] == [401] * FAILED_AUTH_LIMIT and set(codes[FAILED_AUTH_LIMIT:]) == {429}, codes
        blocked = client.get("/api/list", headers=good)  # no more guesses, not even the right one, until it passes
        assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0, blocked.text
        assert client.get("/health").status_code == 200  # public routes stay open


def test_the_failure_window_passes() -> None:
    from oracle_server.http.app import AuthFailures

    now = [0.0]
    failures = AuthFailures(limit=3, window=10.0, clock=lambda: now[0])
    for _ in range(3):
        failures.failed("10.0.0.1")
    assert failures.wait("10.0.0.1") == pytest.approx(10.0) and failures.wait("10.0.0.2") == 0
    now[0] = 10.5
    assert failures.wait("10.0.0.1") == 0


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example:1"])
def test_rest_writes_from_another_origin_are_refused(small, origin: str) -> None:
    from oracle_server.http.app import build_app

    port = free_port()
    before = len(list((small.settings.root / "learnings").glob("*.md")))
    with _client(build_app(small, port=port, token=None), port) as client:
        learn = client.post("/api/learn", json={"pattern": "Planted by another site."}, headers={"Origin": origin})
        feedback = client.post("/api/feedback", json={"id": "c_" + "0" * 20, "verdict": "misleading"},
                               headers={"Origin": origin})
        mine = client.post("/api/feedback", json={"id": "c_" + "0" * 20, "verdict": "misleading"},
                           headers={"Origin": f"http://127.0.0.1:{port}"})
        read = client.get("/api/list", headers={"Origin": origin})  # reads: CORS keeps the answer from the page
    assert learn.status_code == 403 and "Origin" in learn.json()["error"], learn.text
    assert feedback.status_code == 403
    assert mine.status_code == 404  # our own origin gets through (to the unknown id)
    assert read.status_code == 200
    assert len(list((small.settings.root / "learnings").glob("*.md"))) == before


@pytest.mark.parametrize("host", ["LOCALHOST", "LocalHost", "127.0.0.1"])
def test_host_case_is_the_same_on_every_route(small, host: str) -> None:
    from oracle_server.http.app import build_app

    port = free_port()
    with _client(build_app(small, port=port, token=None), port) as client:
        rest = client.get("/api/stats", headers={"Host": f"{host}:{port}"})
        mcp = client.post("/mcp", json=INIT, headers={**MCP_HEADERS, "Host": f"{host}:{port}"})
        evil = client.post("/mcp", json=INIT, headers={**MCP_HEADERS, "Host": f"EVIL.example:{port}"})
    assert rest.status_code == 200 and mcp.status_code == 200, (rest.text, mcp.text)
    assert evil.status_code == 421


def test_a_tls_proxys_origin_is_its_own(small, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a TLS proxy listed as `oracle.lan:443`, the browser's Origin `https://oracle.lan` may write."""
    from oracle_server.http.app import build_app

    monkeypatch.setenv("ORACLE_ALLOWED_HOSTS", "oracle.lan:443")
    port = free_port()
    with _client(build_app(small, port=port, token=None), port) as client:
        ours = client.post("/api/feedback", json={"id": "c_" + "0" * 20, "verdict": "helpful"},
                           headers={"Host": "oracle.lan:443", "Origin": "https://oracle.lan"})
        theirs = client.post("/api/feedback", json={"id": "c_" + "0" * 20, "verdict": "helpful"},
                             headers={"Host": "oracle.lan:443", "Origin": "https://oracle.lan.evil.example"})
    assert ours.status_code == 404 and theirs.status_code == 403, (ours.text, theirs.text)
