"""Hardening of the HTTP API (issue 13): token mode, allowed hosts, body limits, error echoes, dotfiles,
frame headers, learn races over HTTP. In-process apps over a real index (TestClient speaks ASGI to the real
app); what only a real server shows (a slow client, a 200 MB upload) runs against `oracle serve --http`.
"""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path

import pytest

from _corpus import BUNDLED, open_oracle, write
from _procs import free_port

TOKEN = "correct-horse-battery-staple-42"
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("hardening-http")
    root = base / "root"
    (root / "learnings").mkdir(parents=True)
    for name in ("2026-01-14_quote-fts5-search-terms.md", "2026-06-02_sort-before-you-serialise.md"):
        shutil.copy(BUNDLED / "learnings" / name, root / "learnings" / name)
    oracle = open_oracle(root, base / "data")
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


def _client(app, port: int, host: str = "127.0.0.1"):
    from starlette.testclient import TestClient

    return TestClient(app, base_url=f"http://{host}:{port}")


def _app(small, host: str = "0.0.0.0", token: str | None = TOKEN, port: int | None = None):
    from server.http import build_app

    port = port or free_port()
    return build_app(small, host=host, port=port, token=token), port


# -- 2. token mode ------------------------------------------------------------------------------------
READS = [
    ("/api/search", {"query": "quote"}), ("/api/consult", {"decision": "quote fts5 terms?"}), ("/api/reflect", {}),
    ("/api/list", {}), ("/api/stats", {}), ("/api/concepts", {}), ("/api/graph", {}),
    ("/api/file", {"path": "learnings/2026-01-14_quote-fts5-search-terms.md"}),
    ("/api/read", {"file": "learnings/2026-01-14_quote-fts5-search-terms.md"}), ("/api/relations", {}),
    ("/api/feedback", {}), ("/api/supersessions", {}), ("/api/logs", {}), ("/openapi.json", {}),
]


def test_token_mode_guards_every_read_route(small) -> None:
    """Before, every GET answered without the token while /mcp needed it."""
    app, port = _app(small)
    with _client(app, port) as client:
        for path, params in READS:
            resp = client.get(path, params=params)
            assert resp.status_code == 401, (path, resp.status_code)
            assert resp.headers.get("www-authenticate", "").startswith("Bearer")
            assert TOKEN not in resp.text
            assert client.get(path, params=params, headers=GOOD).status_code == 200, path
        # Liveness and the dashboard's shell (no data in it) stay open, so the dashboard can ask for the token.
        for path in ("/health", "/", "/docs", "/static/app.js"):
            assert client.get(path).status_code == 200, path


def test_no_route_is_left_open_in_token_mode(small) -> None:
    """Every route the app declares, except the public shell, answers 401 without the token."""
    from server.http import PUBLIC_PATHS

    app, port = _app(small)
    routes = {r.path for r in app.app.routes if hasattr(r, "path")}  # Guard wraps the FastAPI app
    with _client(app, port) as client:
        for path in sorted(routes - PUBLIC_PATHS):
            if path.startswith("/static"):
                continue
            assert client.get(path).status_code == 401, path
            assert client.post(path, json={}).status_code == 401, path


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_bearer_scheme_is_case_insensitive(small, scheme: str) -> None:
    app, port = _app(small)
    with _client(app, port) as client:
        assert client.get("/api/stats", headers={"Authorization": f"{scheme} {TOKEN}"}).status_code == 200
        assert client.get("/api/stats", headers={"Authorization": f"{scheme} {TOKEN.upper()}"}).status_code == 401


@pytest.mark.parametrize("token", ["short", "fifteen-chars-x", "x" * 15])
def test_short_tokens_are_refused_at_start(small, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from server.app import ServerConfigError
    from server.http import build_app

    with pytest.raises(ServerConfigError, match="at least 16"):
        build_app(small, host="0.0.0.0", port=free_port(), token=token)
    monkeypatch.setenv("ORACLE_TOKEN", token)
    with pytest.raises(ServerConfigError, match="at least 16"):
        build_app(small, host="127.0.0.1", port=free_port())
    build_app(small, host="0.0.0.0", port=free_port(), token="x" * 16)


def test_token_comparison_hashes_both_sides() -> None:
    """Constant time: the comparison is over fixed-length digests, whatever the length of what was sent."""
    from server.http import token_matches

    assert token_matches(f"Bearer {TOKEN}", TOKEN)
    assert token_matches(f"  bearer {TOKEN} ", TOKEN)
    for wrong in ("", "Bearer", f"Basic {TOKEN}", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Bearer{TOKEN}",
                  "Bearer \udcff"):
        assert not token_matches(wrong, TOKEN), wrong


def test_allowed_hosts_add_the_machines_lan_names(small, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a request naming the machine by its LAN name was refused (421) with no way to allow it."""
    monkeypatch.setenv("ORACLE_ALLOWED_HOSTS", "oracle.lan, 192.168.1.20, proxy.example:8443, [fe80::1]")
    app, port = _app(small)
    with _client(app, port) as client:
        for host in (f"oracle.lan:{port}", f"ORACLE.LAN:{port}", f"192.168.1.20:{port}", "proxy.example:8443",
                     f"[fe80::1]:{port}"):
            assert client.get("/api/stats", headers={**GOOD, "Host": host}).status_code == 200, host
        for host in ("evil.com", f"oracle.lan.evil.com:{port}", f"oracle.lan:{port + 1}", "proxy.example:8444"):
            resp = client.get("/api/stats", headers={**GOOD, "Host": host})
            assert resp.status_code == 421, host
            assert "ORACLE_ALLOWED_HOSTS" in resp.json()["error"]
        # MCP's own DNS-rebinding check accepts the same names.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "lan", "version": "1"}}}
        resp = client.post("/mcp", json=init, headers={**GOOD, "Host": f"oracle.lan:{port}",
                                                        "Accept": "application/json, text/event-stream"})
        assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("bad", ["*", "http://oracle.lan", "user@oracle.lan"])
def test_allowed_hosts_refuse_wildcards_and_urls(small, bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from server.app import ServerConfigError

    monkeypatch.setenv("ORACLE_ALLOWED_HOSTS", bad)
    with pytest.raises(ServerConfigError, match="ORACLE_ALLOWED_HOSTS"):
        _app(small)
