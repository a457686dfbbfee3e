"""Hardening of the HTTP API (issue 13): token mode, allowed hosts, body limits, error echoes, dotfiles,
frame headers, learn races over HTTP. In-process apps over a real index (TestClient speaks ASGI to the real
app); what only a real server shows (a slow client, a 200 MB upload) runs against `oracle serve --http`.
"""

from __future__ import annotations

import socket
import time

import pytest

from _corpus import two_note_oracle, write
from _hostile import delete_before_indexing
from _procs import free_port, rss_mb

TOKEN = "correct-horse-battery-staple-42"
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory):
    oracle = two_note_oracle(tmp_path_factory.mktemp("hardening-http"))
    yield oracle
    oracle.close()


def _client(app, port: int, host: str = "127.0.0.1"):
    from starlette.testclient import TestClient

    return TestClient(app, base_url=f"http://{host}:{port}")


def _app(small, host: str = "0.0.0.0", token: str | None = TOKEN, port: int | None = None):
    from oracle_server.http.app import build_app

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
    from oracle_server.http.app import PUBLIC_PATHS

    app, port = _app(small)
    routes = {r.path for r in app.app.app.app.routes if hasattr(r, "path")}  # SecurityHeaders > Guard > BodyLimit > FastAPI
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
    from oracle_server.services.runtime.app import ServerConfigError
    from oracle_server.http.app import build_app

    with pytest.raises(ServerConfigError, match="at least 16"):
        build_app(small, host="0.0.0.0", port=free_port(), token=token)
    monkeypatch.setenv("ORACLE_TOKEN", token)
    with pytest.raises(ServerConfigError, match="at least 16"):
        build_app(small, host="127.0.0.1", port=free_port())
    build_app(small, host="0.0.0.0", port=free_port(), token="Zq8-vL2pXw7_nR4t")  # 16, and not a run (issue 26)


def test_token_comparison_hashes_both_sides() -> None:
    """Constant time: the comparison is over fixed-length digests, whatever the length of what was sent."""
    from oracle_server.http.app import token_matches

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
    from oracle_server.services.runtime.app import ServerConfigError

    monkeypatch.setenv("ORACLE_ALLOWED_HOSTS", bad)
    with pytest.raises(ServerConfigError, match="ORACLE_ALLOWED_HOSTS"):
        _app(small)


# -- 6. request bodies --------------------------------------------------------------------------------
def test_bodies_over_the_cap_are_refused_unread(small) -> None:
    from oracle_server.http.app import MAX_BODY_BYTES

    app, port = _app(small, host="127.0.0.1", token=None)
    learnings = sorted((small.settings.root / "learnings").iterdir())
    with _client(app, port) as client:
        big = b'{"pattern": "' + b"x" * (MAX_BODY_BYTES + 10) + b'"}'
        resp = client.post("/api/learn", content=big, headers={"Content-Type": "application/json"})
        assert resp.status_code == 413 and "too large" in resp.json()["error"]

        def chunks():  # no Content-Length: the cap holds for a streamed body too
            yield b'{"pattern": "'
            for _ in range(40):
                yield b"y" * 65536
            yield b'"}'

        resp = client.post("/api/learn", content=chunks(), headers={"Content-Type": "application/json"})
        assert resp.status_code == 413
        for path in ("/api/verify", "/api/feedback", "/api/supersede", "/mcp"):
            assert client.post(path, content=big, headers={"Content-Type": "application/json"}).status_code == 413
        # Just under the cap is read as usual (and refused for what it says, not for its size).
        ok = b'{"pattern": "' + b"z" * (MAX_BODY_BYTES - 100) + b'"}'
        assert client.post("/api/learn", content=ok, headers={"Content-Type": "application/json"}).status_code == 422
    assert sorted((small.settings.root / "learnings").iterdir()) == learnings


def test_errors_echo_only_an_excerpt_of_the_input(small) -> None:
    """Before, a 5 MB invalid body came back whole in the 422."""
    app, port = _app(small, host="127.0.0.1", token=None)
    with _client(app, port) as client:
        for body in ({"pattern": "p", "title": "t" * 900_000},  # too long a title
                     {"pattern": ["x" * 1000] * 800},  # wrong type, large
                     {"pattern": "p", "k" * 500_000: 1},  # an unknown field with a huge name
                     {"citations": [{"id": "x", "content_hash": "zz"}] * 500}):  # 1,000 errors at once
            path = "/api/verify" if "citations" in body else "/api/learn"
            resp = client.post(path, json=body)
            assert resp.status_code == 422, resp.text[:300]
            assert len(resp.content) < 20_000, len(resp.content)
            assert "invalid input" in resp.json()["error"]
        resp = client.get("/api/search", params={"query": "q", "limit": "9" * 30_000})
        assert resp.status_code == 422 and len(resp.content) < 20_000


def test_a_learning_lost_to_a_race_is_a_409(small, monkeypatch: pytest.MonkeyPatch) -> None:
    """Test double, said so: the file is deleted between write and index, as a racing process would
    (test_hardening.py races for real)."""
    delete_before_indexing(small, monkeypatch)
    app, port = _app(small, host="127.0.0.1", token=None)
    with _client(app, port) as client:
        resp = client.post("/api/learn", json={"pattern": "Raced away before indexing.", "title": "Raced"})
        assert resp.status_code == 409 and "deleted or moved" in resp.json()["error"]


# -- a real server: a huge upload, and clients that stop half-way ---------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    import os

    from _procs import serve_http, stop_process

    base = tmp_path_factory.mktemp("hardening-live")
    root = base / "root"
    write(root / "learnings/2026-01-01_seed.md", "---\ntitle: Seed\n---\n# Seed\n\nSeed note.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(base / "data"))
    proc, url = serve_http(env, base, base / "serve.log", "--no-watch")
    yield proc, url
    stop_process(proc)


def _raw(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


@pytest.mark.slow
def test_a_200_mb_upload_is_cut_off_and_health_stays_quick(live) -> None:
    import httpx

    proc, url = live
    before = rss_mb(proc.pid)
    host = url.removeprefix("http://")
    with _raw(url) as sock:  # declared: refused before a byte of the body is read
        sock.sendall(f"POST /api/learn HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {200 * 1024 * 1024}\r\n\r\n".encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")
    with _raw(url) as sock:  # chunked: read up to the cap, then refused
        sock.sendall(f"POST /api/learn HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode())
        chunk = b"%x\r\n%s\r\n" % (1024 * 1024, b"x" * 1024 * 1024)
        answer = b""
        try:
            for _ in range(200):
                sock.sendall(chunk)
                started = time.monotonic()
                assert httpx.get(url + "/health", timeout=5).status_code == 200
                assert time.monotonic() - started < 5
        except OSError:  # the server answered and closed while we were still sending
            pass
        sock.settimeout(10)
        try:
            answer = sock.recv(4096)
        except OSError:
            pass
        assert answer.startswith(b"HTTP/1.1 413"), answer[:100]
    assert rss_mb(proc.pid) - before < 100  # it took 1.8 GB before


@pytest.mark.slow
def test_half_sent_headers_and_bodies_are_timed_out(live) -> None:
    import httpx

    from oracle_server.http.app import READ_TIMEOUT

    proc, url = live
    host = url.removeprefix("http://")
    trickle, stalled = _raw(url), _raw(url)
    with trickle, stalled:
        trickle.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\n".encode())  # headers never finished
        stalled.sendall(f"POST /api/learn HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                        "Content-Length: 100\r\n\r\n{\"pattern\":".encode())  # a body that stops
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < READ_TIMEOUT + 10:
            try:
                trickle.sendall(b"X")  # one byte every second does not keep the connection alive
            except OSError:
                closed = True
                break
            assert httpx.get(url + "/health", timeout=5).status_code == 200
            time.sleep(1)
        if not closed:
            trickle.settimeout(5)
            closed = trickle.recv(100) == b""
        assert closed and time.monotonic() - started < READ_TIMEOUT + 10
        stalled.settimeout(READ_TIMEOUT + 10)
        assert stalled.recv(4096).startswith(b"HTTP/1.1 408")


# -- should fix: hidden files, frame headers -------------------------------------------------------------
@pytest.mark.parametrize("path", [".hidden.md", "learnings/.secret.md", ".git/notes.md", "learnings/#draft#.md",
                                  "learnings/old.md~", "learnings/.link.md"])
def test_hidden_files_are_never_served(small, path: str) -> None:
    """The indexer skips dotfiles and editor temporaries; /api/file and /api/read served them anyway."""
    root = small.settings.root
    for name in (".hidden.md", "learnings/.secret.md", ".git/notes.md", "learnings/#draft#.md"):
        write(root / name, "# Hidden\n\nNot part of the knowledge base.\n")
    link = root / "learnings/.link.md"
    if not link.is_symlink():
        link.symlink_to(root / "learnings/.secret.md")
    app, port = _app(small, host="127.0.0.1", token=None)
    with _client(app, port) as client:
        for route, params in (("/api/file", {"path": path}), ("/api/read", {"file": path})):
            resp = client.get(route, params=params)
            assert resp.status_code == 400, (route, path, resp.status_code)
            assert "Not part of the knowledge base" not in resp.text


def test_a_visible_name_leading_to_a_hidden_file_is_refused(small) -> None:
    root = small.settings.root
    write(root / "learnings/.secret2.md", "# Hidden\n\nNot part of the knowledge base.\n")
    (root / "learnings/visible.md").symlink_to(root / "learnings/.secret2.md")
    app, port = _app(small, host="127.0.0.1", token=None)
    with _client(app, port) as client:
        resp = client.get("/api/file", params={"path": "learnings/visible.md"})
        assert resp.status_code == 400 and "Not part" not in resp.text
        assert client.get("/api/file", params={"path": "learnings/2026-01-14_quote-fts5-search-terms.md"}).status_code == 200


def test_every_response_refuses_to_be_framed(small) -> None:
    app, port = _app(small)
    with _client(app, port) as client:
        for resp in (client.get("/"), client.get("/docs"), client.get("/health"), client.get("/static/app.js"),
                     client.get("/api/stats"), client.get("/api/stats", headers=GOOD),
                     client.get("/health", headers={"Host": "evil.com"})):
            assert "frame-ancestors 'none'" in resp.headers.get("content-security-policy", ""), resp.url
            assert resp.headers.get("x-frame-options") == "DENY"
            assert resp.headers.get("x-content-type-options") == "nosniff"
