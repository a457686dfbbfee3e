"""Who the HTTP server lets in, through the real adapters (the FastAPI app's Guard and routes in Starlette's
TestClient, the CLI's own `oracle token` function) on a small real index, in both stores (tokens.json, and the team
store's `named_tokens` table on a real PostgreSQL, tests/_pg.py). Nothing is mocked.

- a server that needs a token (bound beyond loopback, or ORACLE_REQUIRE_TOKEN=1) and has none left fails closed:
  503 "no token exists", never an anonymous 200 or 201; `oracle token revoke` warns when it removes the last one;
- ORACLE_REQUIRE_TOKEN=1 makes a loopback server demand a token too (without it every local account gets in);
- a token revoked before an outage of the team store stays refused during it (the table is re-read on a timer);
- a damaged `named_tokens` row is skipped with a warning, never a 500, and never lets its token in; names print
  escaped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from _corpus import open_oracle
from _procs import free_port
from conftest import STORES, store_overrides

NOTE_REL = "learnings/2026-01-05_wombat-burrows.md"
NOTE = "---\ntitle: Wombat burrows\n---\n# Wombat burrows\n\nA burrow has two exits.\n"


@pytest.fixture(params=STORES)
def kb(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    monkeypatch.delenv("ORACLE_REQUIRE_TOKEN", raising=False)
    oracle = one_note_oracle(tmp_path, **store_overrides(request.param))
    oracle.indexer.sync(vectors=False)
    yield oracle
    oracle.close()


def one_note_oracle(tmp_path: Path, **overrides: Any) -> Any:
    """An Oracle over `tmp_path/root` holding NOTE (not indexed yet), its data dir beside it."""
    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / NOTE_REL).write_text(NOTE, encoding="utf-8")
    return open_oracle(root, tmp_path / "data", **overrides)


def tokens_of(oracle: Any) -> Any:
    """The token store the CLI would use for this Oracle (another object than the server's, as another process)."""
    from oracle_server.services.capabilities.team import token_store

    return token_store(oracle.settings.database_url, oracle.settings.data_dir)


def client_for(oracle: Any, host: str = "127.0.0.1") -> Any:
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    port = free_port()
    return TestClient(build_app(oracle, host=host, port=port), base_url=f"http://127.0.0.1:{port}")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def until(check: Callable[[], bool], seconds: float) -> None:
    """Wait for `check` (a revocation reaches a team store's engine within DB_TOKENS_SECONDS)."""
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)


def notes(oracle: Any) -> list[str]:
    return sorted(p.name for p in (oracle.settings.root / "learnings").iterdir())


def assert_closed(client: Any, *tokens: str) -> None:
    """Every request that needs a token is a 503 that says what to do: anonymous or not, read or write."""
    asks = [client.get("/api/stats"), client.post("/api/learn", json={"pattern": "Anyone may write here."}),
            client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]
    asks += [client.get("/api/stats", headers=bearer(t)) for t in tokens]
    for resp in asks:
        assert resp.status_code == 503, (resp.request.url, resp.status_code, resp.text)
        message = resp.json()["error"]
        assert "no token exists" in message and "oracle token add" in message, message
    assert client.get("/health").status_code == 200  # liveness stays open


# -- revoking the last token (issue 45, item 3) ----------------------------------------------------------------------
def test_a_public_server_whose_last_token_is_revoked_fails_closed(kb: Any) -> None:
    from oracle_server.http.app import build_app
    from oracle_server.services.runtime.app import ServerConfigError
    from oracle_server.services.capabilities.team import DB_TOKENS_SECONDS

    cli = tokens_of(kb)
    alice = cli.add("alice", "write")
    before = notes(kb)
    try:
        with client_for(kb, host="0.0.0.0") as client:
            assert client.get("/api/stats", headers=bearer(alice)).status_code == 200
            assert client.get("/api/stats").status_code == 401
            cli.revoke("alice")
            until(lambda: client.get("/api/stats", headers=bearer(alice)).status_code != 200, DB_TOKENS_SECONDS + 5)
            assert_closed(client, alice)
            assert notes(kb) == before  # nothing was written
            bob = cli.add("bob", "read")  # a new token opens it again, to its holder only
            until(lambda: client.get("/api/stats", headers=bearer(bob)).status_code == 200, DB_TOKENS_SECONDS + 5)
            assert client.get("/api/stats", headers=bearer(bob)).status_code == 200
            assert client.get("/api/stats").status_code == 401
            cli.revoke("bob")
        with pytest.raises(ServerConfigError, match="oracle token add"):  # and start-up refuses that state
            build_app(kb, host="0.0.0.0", port=free_port())
    finally:
        cli.close()


def test_token_revoke_warns_when_it_removes_the_last_token(kb: Any, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.cli.commands import build_parser, cmd_token

    if kb.settings.database_url:
        monkeypatch.setenv("ORACLE_DATABASE_URL", kb.settings.database_url)
    data = ["--data-dir", str(kb.settings.data_dir), "--root", str(kb.settings.root)]
    parser = build_parser()
    for name in ("alice", "bob"):
        assert cmd_token(parser.parse_args(["token", "add", name, "--write", *data])) == 0
    capsys.readouterr()
    assert cmd_token(parser.parse_args(["token", "revoke", "alice", *data])) == 0
    first = capsys.readouterr()
    assert "revoked alice" in first.out and "last named token" not in first.err, first
    assert cmd_token(parser.parse_args(["token", "revoke", "bob", *data])) == 0
    last = capsys.readouterr()
    assert "revoked bob" in last.out
    assert "last named token" in last.err and "503" in last.err and "oracle token add" in last.err, last.err


# -- a loopback server and the local accounts (issue 45, item 11) ----------------------------------------------------
def test_a_loopback_server_without_tokens_serves_anyone_unless_a_token_is_required(
        kb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.http.app import build_app
    from oracle_server.services.runtime.app import ServerConfigError
    from oracle_server.services.capabilities.team import DB_TOKENS_SECONDS

    with client_for(kb) as client:  # the default, as docs/security.md says: any local account reads and writes
        assert client.get("/api/stats").status_code == 200
    monkeypatch.setenv("ORACLE_REQUIRE_TOKEN", "1")
    with pytest.raises(ServerConfigError, match="ORACLE_REQUIRE_TOKEN"):
        build_app(kb, port=free_port())
    cli = tokens_of(kb)
    try:
        alice = cli.add("alice", "write")
        with client_for(kb) as client:
            assert client.get("/api/stats").status_code == 401
            assert client.get("/api/stats", headers=bearer(alice)).status_code == 200
            cli.revoke("alice")  # the last: a loopback server that requires a token fails closed too
            until(lambda: client.get("/api/stats").status_code == 503, DB_TOKENS_SECONDS + 5)
            assert_closed(client, alice)
    finally:
        cli.close()
    monkeypatch.setenv("ORACLE_REQUIRE_TOKEN", "yes please")
    with pytest.raises(ServerConfigError, match="ORACLE_REQUIRE_TOKEN"):
        build_app(kb, port=free_port(), token="shared-shared-shared-token")


def test_the_docs_say_who_a_loopback_server_serves_and_how_to_require_a_token() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    configuration = (docs / "configuration.md").read_text(encoding="utf-8")
    assert "| `ORACLE_REQUIRE_TOKEN` |" in configuration
    security = (docs / "security.md").read_text(encoding="utf-8")
    assert "every local account" in security and "ORACLE_REQUIRE_TOKEN" in security


# -- damaged rows in the team store's token table (issue 45, item 10) ------------------------------------------------
def test_a_damaged_token_row_is_skipped_with_a_warning_and_names_print_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import _pg
    from oracle_server.cli.commands import build_parser, cmd_token

    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    url = _pg.new_database()
    kb = one_note_oracle(tmp_path, database_url=url)
    root = kb.settings.root
    cli = tokens_of(kb)
    try:
        alice = cli.add("alice", "write")
        mallory = cli.add("mallory", "write")  # a token whose row is then damaged, or copied under a planted name
        salt, digest = psycopg.connect(url).execute("SELECT salt, digest FROM named_tokens WHERE name = 'mallory'"
                                                    ).fetchone()
        with psycopg.connect(url, autocommit=True) as conn:  # what anyone with the team URL can write
            conn.execute("UPDATE named_tokens SET salt = 'zz-not-hex' WHERE name = 'mallory'")
            for name, access, s, d in [("evil\x1b[2J\x1b]0;pwned\x07", "write", salt, digest),
                                       ("eve\nauthor: alice", "write", salt, digest),
                                       ("root", "admin", salt, digest),
                                       ("short", "write", salt, "abcd")]:
                conn.execute("INSERT INTO named_tokens (name, access, salt, digest, created) VALUES"
                             " (%s, %s, %s, %s, '2026-01-01T00:00:00+00:00')", [name, access, s, d])
        monkeypatch.setenv("ORACLE_DATABASE_URL", url)
        capsys.readouterr()
        with client_for(kb, host="0.0.0.0") as client:
            assert client.get("/api/stats", headers=bearer(alice)).status_code == 200  # was a 500 for everyone
            assert client.get("/api/stats", headers=bearer(mallory)).status_code == 401  # no damaged row lets in
        err = capsys.readouterr().err
        assert "mallory" in err and "skipped" in err and "\\x1b[2J" in err, err
        assert "\x1b" not in err and "\x07" not in err and "\neve" not in err

        data = ["--data-dir", str(kb.settings.data_dir), "--root", str(root)]
        parser = build_parser()
        assert cmd_token(parser.parse_args(["token", "list", *data])) == 0
        listed = capsys.readouterr()
        assert listed.out.split("\t")[0] == "alice" and "mallory" not in listed.out, listed.out
        assert "\\x1b[2J" in listed.err and "\x1b" not in listed.out + listed.err
        # a damaged row can still be revoked by its name, and the name is printed escaped
        assert cmd_token(parser.parse_args(["token", "revoke", "evil\x1b[2J\x1b]0;pwned\x07", *data])) == 0
        revoked = capsys.readouterr()
        assert "\\x1b[2J" in revoked.out and "\x1b" not in revoked.out + revoked.err, revoked
    finally:
        cli.close()
        kb.close()


# -- a token revoked before an outage of the team store (issue 45, item 4) -------------------------------------------
def test_a_token_revoked_before_an_outage_stays_refused_during_it(tmp_path: Path, own_pg: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.services.capabilities.team import DB_TOKENS_SECONDS

    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    url = own_pg.new_database()
    kb = one_note_oracle(tmp_path, database_url=url)
    cli = tokens_of(kb)
    try:
        alice, bob = cli.add("alice", "write"), cli.add("bob", "read")
        with client_for(kb, host="0.0.0.0") as client:
            assert client.get("/api/stats", headers=bearer(alice)).status_code == 200  # read: alice confirmed
            cli.revoke("alice")  # on another machine; no request reaches this server before the outage
            time.sleep(DB_TOKENS_SECONDS * 3)
            own_pg.stop()
            time.sleep(DB_TOKENS_SECONDS + 0.5)  # past the table's trusted age: the server must ask again
            refused = client.get("/api/stats", headers=bearer(alice))  # before: let through (the route's outage 503)
            assert refused.status_code == 401 and "wrong token" in refused.json()["error"], refused.text
            assert client.get("/api/stats", headers=bearer(bob)).status_code != 401  # confirmed by the last read
        restarted = tokens_of(kb)  # an engine started in the outage: the last good read's copy, alice not in it
        try:
            assert restarted.identify(alice) is None and restarted.identify(bob) is not None
        finally:
            restarted.close()
        own_pg.start()
    finally:
        cli.close()
        kb.close()
