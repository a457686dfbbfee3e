"""Who the HTTP server lets in, through the real adapters (the FastAPI app's Guard and routes in Starlette's
TestClient, the CLI's own `oracle token` function) on a small real index, in both stores (tokens.json, and the team
store's `named_tokens` table on a real PostgreSQL, tests/_pg.py). Nothing is mocked.

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
    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / NOTE_REL).write_text(NOTE, encoding="utf-8")
    oracle = open_oracle(root, tmp_path / "data", **store_overrides(request.param))
    oracle.indexer.sync(vectors=False)
    yield oracle
    oracle.close()


def tokens_of(oracle: Any) -> Any:
    """The token store the CLI would use for this Oracle (another object than the server's, as another process)."""
    from oracle_server.services.team import token_store

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


# -- item 10: damaged rows in the team store's token table ----------------------------------------------------
def test_a_damaged_token_row_is_skipped_with_a_warning_and_names_print_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import _pg
    from oracle_server.cli.commands import build_parser, cmd_token

    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    url = _pg.new_database()
    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / NOTE_REL).write_text(NOTE, encoding="utf-8")
    kb = open_oracle(root, tmp_path / "data", database_url=url)
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

