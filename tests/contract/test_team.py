"""Team mode and safe edits through the real adapters: the FastAPI app (Starlette's TestClient, the real Guard
and routes), an in-process MCP client on the real server object, and the CLI's own functions, all on a small
real index of real files. Nothing is mocked.

- named tokens: read-only refused on every write with a 403 (and nothing written), writes attributed to the
  token's name (frontmatter, logs, /api/feedback, /api/supersessions), the shared ORACLE_TOKEN still works,
  a revoked token stops working at the next request;
- oracle_edit / oracle_archive: the hash the caller read, a conflict (409 / tool error / exit 4) when the note
  changed, the edit indexed before the call returns, frontmatter byte for byte, archived notes out of search
  and of every reader but kept on disk, traversal and symlinks refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from _corpus import open_oracle
from _procs import free_port
from conftest import STORES, store_overrides

FRONT = b"---\r\ntitle: Wombat burrows\r\ntags: [wombats,   burrows]  # spacing kept\r\ndate: 2026-01-05\r\n---\r\n"
NOTE = FRONT + b"# Wombat burrows\r\n\r\n## Exits\r\nA burrow has two exits.\r\n\r\n## Depth\r\nTwo metres deep.\r\n"
NOTE_REL = "learnings/2026-01-05_wombat-burrows.md"
OTHER_REL = "learnings/2026-01-06_echidna-spines.md"
SHARED = "shared-shared-shared-token"


@pytest.fixture(params=STORES)
def kb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / NOTE_REL).write_bytes(NOTE)
    (root / OTHER_REL).write_text("---\ntitle: Echidna spines\n---\n# Echidna spines\n\nSpines are hair.\n",
                                  encoding="utf-8")
    oracle = open_oracle(root, tmp_path / "data", **store_overrides(request.param))
    oracle.indexer.sync(vectors=False)
    yield oracle
    oracle.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def client_for(oracle: Any, token: str | None = None):
    from starlette.testclient import TestClient

    from oracle_server.http.app import build_app

    port = free_port()
    return TestClient(build_app(oracle, port=port, token=token), base_url=f"http://127.0.0.1:{port}")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def fts_total(client: Any, headers: dict, query: str) -> int:
    resp = client.get("/api/search", params={"query": query, "mode": "fts"}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["total"]


# -- team mode over HTTP ---------------------------------------------------------------------------------
def test_read_only_tokens_are_refused_on_every_write_and_nothing_is_written(kb: Any) -> None:
    from oracle_server.services.capabilities.team import TokenStore

    store = TokenStore(kb.settings.data_dir)
    reader = store.add("bob", "read")
    store.add("alice", "write")
    root = kb.settings.root
    before = {p.name: digest(p) for p in (root / "learnings").iterdir()}
    chunk = kb.store.file_chunk_ids(NOTE_REL)[0]
    h = digest(root / NOTE_REL)
    writes = [
        ("/api/learn", {"pattern": "Bob tries to write."}),
        ("/api/feedback", {"id": chunk, "verdict": "helpful"}),
        ("/api/supersede", {"old_id": NOTE_REL, "new_id": OTHER_REL}),
        ("/api/verify", {"mark_verified": [NOTE_REL]}),
        ("/api/edit", {"file": NOTE_REL, "expected_hash": h, "op": "append", "text": "Bob was here."}),
        ("/api/archive", {"file": NOTE_REL, "expected_hash": h}),
    ]
    with client_for(kb) as client:
        assert client.get("/api/stats").status_code == 401  # named tokens exist: team mode, reads need one too
        assert client.get("/api/stats", headers=bearer(reader + "x")).status_code == 401
        assert client.get("/api/stats", headers=bearer(reader)).status_code == 200
        assert fts_total(client, bearer(reader), "wombat burrow") == 1
        cited = client.post("/api/verify", json={"citations": [{"id": chunk, "content_hash": "0" * 12}]},
                            headers=bearer(reader))
        assert cited.status_code == 200, cited.text  # checking citations is a read
        for path, body in writes:
            resp = client.post(path, json=body, headers=bearer(reader))
            assert resp.status_code == 403, (path, resp.status_code, resp.text)
            message = resp.json()["error"]
            assert "'bob' is read-only" in message and "oracle token add" in message, message
    assert {p.name: digest(p) for p in (root / "learnings").iterdir()} == before
    assert not (root / ".archive").exists()
    assert kb.logs.counts()["feedback_log"] == 0 and kb.logs.supersessions() == {}


def test_writes_are_attributed_to_the_token_name_and_the_shared_token_still_works(kb: Any) -> None:
    import time

    from oracle_server.services.capabilities.team import DB_TOKENS_SECONDS, token_store

    store = token_store(kb.settings.database_url, kb.settings.data_dir)  # the team store's table with PostgreSQL
    alice = store.add("alice", "write")
    root = kb.settings.root
    chunk = kb.store.file_chunk_ids(NOTE_REL)[0]
    with client_for(kb, token=SHARED) as client:
        learned = client.post("/api/learn", json={"pattern": "Platypus bills sense electric fields.",
                                                  "title": "Platypus electroreception"}, headers=bearer(alice))
        assert learned.status_code == 201, learned.text
        assert learned.json()["author"] == "alice"
        text = (root / learned.json()["file"]).read_text(encoding="utf-8")
        assert "\nauthor: alice\n" in text.split("\n---\n")[0] + "\n"
        assert client.post("/api/feedback", json={"id": chunk, "verdict": "helpful"},
                           headers=bearer(alice)).status_code == 201
        assert client.post("/api/supersede", json={"old_id": OTHER_REL, "new_id": NOTE_REL},
                           headers=bearer(alice)).status_code == 201
        # the shared token: a writer without a name
        shared = client.post("/api/learn", json={"pattern": "Quokkas smile.", "title": "Quokka smiles"},
                             headers=bearer(SHARED))
        assert shared.status_code == 201 and shared.json()["author"] is None
        assert "author:" not in (root / shared.json()["file"]).read_text(encoding="utf-8")

        logs = client.get("/api/logs", headers=bearer(alice)).json()
        assert [r["author"] for r in logs["learnings"]] == [None, "alice"]
        assert logs["feedback"][0]["author"] == "alice" and logs["supersessions"][0]["author"] == "alice"
        top = client.get("/api/feedback", headers=bearer(alice)).json()
        assert top["helpful"][0]["authors"] == ["alice"]
        sup = client.get("/api/supersessions", headers=bearer(alice)).json()["supersessions"]
        assert [(s["old"], s["author"]) for s in sup] == [(OTHER_REL, "alice")]

        # revoked (by another process, the CLI): refused at the very next request (a file), or within
        # DB_TOKENS_SECONDS (the team store's table, which every engine re-reads at most that often)
        token_store(kb.settings.database_url, kb.settings.data_dir).revoke("alice")
        deadline = time.monotonic() + (DB_TOKENS_SECONDS + 2 if kb.settings.database_url else 0)
        while client.get("/api/stats", headers=bearer(alice)).status_code != 401 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.get("/api/stats", headers=bearer(alice)).status_code == 401
        assert client.get("/api/stats", headers=bearer(SHARED)).status_code == 200


def test_a_public_bind_starts_with_named_tokens_alone(kb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_server.services.runtime.app import ServerConfigError
    from oracle_server.http.app import build_app
    from oracle_server.services.capabilities.team import TokenStore

    monkeypatch.delenv("ORACLE_TOKEN", raising=False)
    with pytest.raises(ServerConfigError, match="oracle token add"):
        build_app(kb, host="0.0.0.0", port=free_port())
    TokenStore(kb.settings.data_dir).add("alice", "write")
    build_app(kb, host="0.0.0.0", port=free_port())


def test_an_unreadable_tokens_file_closes_the_server(kb: Any) -> None:
    kb.settings.data_dir.mkdir(parents=True, exist_ok=True)  # the PostgreSQL store writes nothing there
    (kb.settings.data_dir / "tokens.json").write_text("{garbage", encoding="utf-8")
    with client_for(kb) as client:
        resp = client.get("/api/stats")
        assert resp.status_code == 503 and "tokens.json" in resp.json()["error"]
        assert client.get("/health").status_code == 200


# -- edit and archive over HTTP --------------------------------------------------------------------------
def test_edit_is_revision_safe_indexed_at_once_and_keeps_the_frontmatter(kb: Any) -> None:
    root = kb.settings.root
    with client_for(kb) as client:
        read = client.get("/api/read", params={"file": NOTE_REL}).json()
        assert read["file_hash"] == digest(root / NOTE_REL)
        assert fts_total(client, {}, "kangaroo") == 0
        resp = client.post("/api/edit", json={"file": NOTE_REL, "expected_hash": read["file_hash"],
                                              "op": "replace_section", "heading": "Depth",
                                              "text": "Deep enough to hide from a kangaroo."})
        assert resp.status_code == 200, resp.text
        edited = resp.json()
        on_disk = (root / NOTE_REL).read_bytes()
        assert on_disk.startswith(FRONT)  # byte for byte, CRLF and odd spacing included
        assert on_disk.endswith(b"## Depth\r\n\r\nDeep enough to hide from a kangaroo.\r\n")
        assert edited["file_hash"] == digest(root / NOTE_REL) and edited["previous_hash"] == read["file_hash"]
        assert fts_total(client, {}, "kangaroo") == 1  # in the index before the call returned
        assert fts_total(client, {}, "metres") == 0

        # the old hash is stale now: a conflict, nothing written
        stale = client.post("/api/edit", json={"file": NOTE_REL, "expected_hash": read["file_hash"],
                                               "op": "append", "text": "Lost update."})
        assert stale.status_code == 409 and "changed since you read it" in stale.json()["error"], stale.text
        assert (root / NOTE_REL).read_bytes() == on_disk
        # someone edits the file by hand: the hash the caller holds no longer matches
        (root / NOTE_REL).write_bytes(on_disk + b"\r\nHand edit.\r\n")
        again = client.post("/api/edit", json={"id": edited["chunk_ids"][0], "expected_hash": edited["file_hash"][:12],
                                               "op": "append", "text": "Agent edit."})
        assert again.status_code == 409, again.text
        assert b"Agent edit" not in (root / NOTE_REL).read_bytes()
        # an edit that cannot apply says why
        missing = client.post("/api/edit", json={"file": NOTE_REL, "expected_hash": digest(root / NOTE_REL),
                                                 "op": "replace_section", "heading": "Nope", "text": "x"})
        assert missing.status_code == 400 and "no heading reads 'Nope'" in missing.json()["error"]
        bad = client.post("/api/edit", json={"file": NOTE_REL, "expected_hash": "abc", "op": "append", "text": "x"})
        assert bad.status_code == 422
    kinds = [r["action"] for r in kb.logs.recent("edit_log")]
    assert kinds == ["edit:replace_section"]


def test_archive_moves_the_note_out_of_the_index_and_keeps_the_file(kb: Any) -> None:
    root = kb.settings.root
    original = (root / NOTE_REL).read_bytes()
    with client_for(kb) as client:
        assert fts_total(client, {}, "wombat") == 1
        stale = client.post("/api/archive", json={"file": NOTE_REL, "expected_hash": "0" * 64})
        assert stale.status_code == 409 and (root / NOTE_REL).exists()
        resp = client.post("/api/archive", json={"file": NOTE_REL, "expected_hash": digest(root / NOTE_REL),
                                                 "reason": "wombats moved"})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["archived_to"] == f".archive/{NOTE_REL}" and body["removed_chunks"] == 2
        assert not (root / NOTE_REL).exists()
        assert (root / body["archived_to"]).read_bytes() == original  # moved, not rewritten
        assert fts_total(client, {}, "wombat") == 0
        assert kb.store.file_chunk_ids(NOTE_REL) == []
        # readers refuse the archive as they refuse every hidden folder
        assert client.get("/api/read", params={"file": body["archived_to"]}).status_code == 400
        assert client.get("/api/file", params={"path": body["archived_to"]}).status_code == 400
        # a new note of the same name archived later does not replace the first
        (root / NOTE_REL).write_bytes(original)
        kb.indexer.sync_paths([NOTE_REL])
        second = client.post("/api/archive", json={"file": NOTE_REL, "expected_hash": digest(root / NOTE_REL)})
        assert second.json()["archived_to"] == ".archive/learnings/2026-01-05_wombat-burrows_2.md"
    assert kb.indexer.sync().removed == 0  # a full sync agrees: the archive is not indexed


def test_an_edit_and_an_archive_whose_log_cannot_be_written_are_kept_and_warn(kb: Any) -> None:
    """The usage logs refuse the record (closed here; a full disk alike): the edit and the archive are done all the
    same, and each says its record is missing, as a learn does."""
    from oracle_server.registry.text import archive_text
    from oracle_server.services.capabilities.edit import archive, edit
    from oracle_server.services.vocabulary.models import ArchiveRequest, EditRequest

    root = kb.settings.root
    kb.logs.close()
    edited = edit(kb, EditRequest(file=NOTE_REL, expected_hash=digest(root / NOTE_REL), op="append",
                                  text="Wombats dig at night."))
    assert edited.warnings == ["the edit log could not be written (StoreClosed); the edit is saved"]
    assert b"Wombats dig at night." in (root / NOTE_REL).read_bytes()
    archived = archive(kb, ArchiveRequest(file=NOTE_REL, expected_hash=edited.file_hash))
    assert archived.warnings == ["the edit log could not be written (StoreClosed); the note is archived"]
    assert (root / archived.archived_to).is_file() and not (root / NOTE_REL).exists()
    assert archive_text(None, archived).endswith("\nwarning: " + archived.warnings[0])


@pytest.mark.parametrize("raw", ["../outside.md", "/etc/passwd.md", "learnings/../../outside.md",
                                 "learnings/%2e%2e/x.md", ".archive/learnings/x.md", "learnings/link.md",
                                 "learnings/out.md", "linked/2026-01-05_wombat-burrows.md", "learnings/nope.md"])
def test_edit_and_archive_refuse_traversal_symlinks_and_unknown_files(kb: Any, raw: str) -> None:
    root = kb.settings.root
    outside = root.parent / "outside.md"
    outside.write_text("# Outside\n\nsecret\n", encoding="utf-8")
    (root / "learnings" / "link.md").symlink_to(root / NOTE_REL)  # a link to a note inside the root
    (root / "learnings" / "out.md").symlink_to(outside)  # a link out of the root
    (root / "linked").symlink_to(root / "learnings", target_is_directory=True)  # a folder link
    kb.indexer.sync(vectors=False)
    before = (digest(root / NOTE_REL), digest(outside))
    h = digest(root / NOTE_REL)
    with client_for(kb) as client:
        for path, body in [("/api/edit", {"file": raw, "expected_hash": h, "op": "append", "text": "pwned"}),
                           ("/api/archive", {"file": raw, "expected_hash": h})]:
            resp = client.post(path, json=body)
            assert resp.status_code in (400, 404), (path, raw, resp.status_code, resp.text)
    assert (digest(root / NOTE_REL), digest(outside)) == before
    assert not (root / ".archive").exists()


def test_a_planted_archive_symlink_is_refused(kb: Any, tmp_path: Path) -> None:
    root = kb.settings.root
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".archive").symlink_to(elsewhere, target_is_directory=True)
    with client_for(kb) as client:
        resp = client.post("/api/archive", json={"file": NOTE_REL, "expected_hash": digest(root / NOTE_REL)})
    assert resp.status_code == 400 and "symlink" in resp.json()["error"]
    assert (root / NOTE_REL).exists() and list(elsewhere.iterdir()) == []


def test_a_planted_symlink_inside_the_archive_is_refused_before_anything_is_made(kb: Any, tmp_path: Path) -> None:
    """Issue 39, item 13: `.archive/learnings` planted as a link out of the archive. Before, the folders on the way
    to the archived name were made first (under the link's target) and the archive refused only then."""
    root = kb.settings.root
    deep = "learnings/deep/er/badger-setts.md"
    (root / deep).parent.mkdir(parents=True)
    (root / deep).write_text("# Badger setts\n\nBadgers dig setts with many entrances.\n", encoding="utf-8")
    kb.indexer.sync(vectors=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".archive").mkdir()
    (root / ".archive" / "learnings").symlink_to(elsewhere, target_is_directory=True)
    with client_for(kb) as client:
        resp = client.post("/api/archive", json={"file": deep, "expected_hash": digest(root / deep)})
    assert resp.status_code == 400 and "symlink" in resp.json()["error"], resp.text
    assert (root / deep).exists() and list(elsewhere.iterdir()) == []


# -- the same over MCP and the CLI ----------------------------------------------------------------------
def test_edit_and_archive_over_an_mcp_session(kb: Any) -> None:
    from mcp import Client

    from oracle_server.mcp.server import build_server

    root = kb.settings.root

    async def session() -> dict:
        out: dict = {}
        async with Client(build_server(kb)) as client:
            read = await client.call_tool("oracle_read", {"file": NOTE_REL})
            h = read.structured_content["file_hash"]
            out["edit"] = await client.call_tool("oracle_edit", {"file": NOTE_REL, "expected_hash": h,
                                                                 "op": "replace_text", "find": "two exits",
                                                                 "text": "two exits and a bolt hole"})
            out["stale"] = await client.call_tool("oracle_edit", {"file": NOTE_REL, "expected_hash": h,
                                                                  "op": "append", "text": "late"})
            out["found"] = await client.call_tool("oracle_search", {"query": "bolt hole", "mode": "fts"})
            new = out["edit"].structured_content["file_hash"]
            out["archive"] = await client.call_tool("oracle_archive", {"file": NOTE_REL, "expected_hash": new})
            out["gone"] = await client.call_tool("oracle_search", {"query": "bolt hole", "mode": "fts"})
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        return out

    out = anyio.run(session)
    assert not out["edit"].is_error, out["edit"].content[0].text
    assert "edited learnings/2026-01-05_wombat-burrows.md (replace_text)" in out["edit"].content[0].text
    assert out["stale"].is_error and "conflict" in out["stale"].content[0].text
    assert out["found"].structured_content["total"] == 1
    assert not out["archive"].is_error and "archived" in out["archive"].content[0].text
    assert out["gone"].structured_content["total"] == 0
    assert (root / ".archive" / NOTE_REL).read_bytes().startswith(FRONT)
    edit_tool = out["tools"]["oracle_edit"]
    assert edit_tool.annotations.read_only_hint is False and edit_tool.annotations.destructive_hint is True
    assert edit_tool.input_schema["properties"]["op"]["enum"] == ["append", "prepend", "replace_section",
                                                                  "replace_text"]


def test_the_cli_edits_archives_and_manages_tokens(kb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from oracle_server.cli import spec as clispec
    from oracle_server.cli.commands import build_parser, cmd_token, run_tool
    from oracle_server.services.vocabulary.errors import classify

    root = kb.settings.root
    data = str(kb.settings.data_dir)
    parser = build_parser()
    h = digest(root / NOTE_REL)
    args = parser.parse_args(["edit", "Burrows", "face", "north.", "--file", NOTE_REL, "--expected-hash", h,
                              "--op", "append", "--json"])
    assert run_tool(kb, args, clispec.derive()["edit"]) == 0
    assert json.loads(capsys.readouterr().out)["file_hash"] == digest(root / NOTE_REL)
    assert (root / NOTE_REL).read_bytes().endswith(b"\r\n\r\nBurrows face north.\r\n")
    stale = parser.parse_args(["archive", NOTE_REL, "--expected-hash", h])
    with pytest.raises(Exception) as raised:
        run_tool(kb, stale, clispec.derive()["archive"])
    error = classify(raised.value)
    assert error is not None and error.kind == "conflict" and error.exit_code == 4

    assert cmd_token(parser.parse_args(["token", "add", "ci-bot", "--read-only", "--data-dir", data])) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("oracle_") and token not in (kb.settings.data_dir / "tokens.json").read_text()
    assert cmd_token(parser.parse_args(["token", "add", "ci-bot", "--write", "--data-dir", data])) == 4
    assert cmd_token(parser.parse_args(["token", "add", "x", "--data-dir", data])) == 2  # say which access
    assert cmd_token(parser.parse_args(["token", "list", "--json", "--data-dir", data])) == 0
    listed = json.loads(capsys.readouterr().out)["tokens"]
    assert listed == [{"name": "ci-bot", "access": "read", "created": listed[0]["created"]}]
    assert cmd_token(parser.parse_args(["token", "revoke", "ci-bot", "--data-dir", data])) == 0
    assert cmd_token(parser.parse_args(["token", "revoke", "ci-bot", "--data-dir", data])) == 3
    assert os.stat(kb.settings.data_dir / "tokens.json").st_mode & 0o777 == 0o600


def test_a_learning_that_revises_a_note_is_refused_when_the_note_changed(kb: Any) -> None:
    root = kb.settings.root
    learnings = root / "learnings"
    with client_for(kb) as client:
        h = client.get("/api/read", params={"file": NOTE_REL}).json()["file_hash"]
        (root / NOTE_REL).write_bytes(NOTE + b"\r\nA person's edit.\r\n")
        before = sorted(p.name for p in learnings.iterdir())
        stale = client.post("/api/learn", json={"pattern": "Burrows have three exits.", "revises": NOTE_REL,
                                                "expected_hash": h})
        assert stale.status_code == 409 and "changed since you read it" in stale.json()["error"], stale.text
        assert sorted(p.name for p in learnings.iterdir()) == before  # nothing was saved
        half = client.post("/api/learn", json={"pattern": "x", "revises": NOTE_REL})
        assert half.status_code == 422 and "go together" in half.json()["error"]
        fresh = client.post("/api/learn", json={"pattern": "Burrows have three exits.", "title": "Three exits",
                                                "revises": NOTE_REL, "expected_hash": digest(root / NOTE_REL)})
        assert fresh.status_code == 201, fresh.text
        assert fresh.json()["supersedes"] == NOTE_REL
        sup = client.get("/api/supersessions").json()["supersessions"]
        assert [(s["old"], s["new"]) for s in sup] == [(NOTE_REL, fresh.json()["file"])]


def test_a_file_where_the_archive_folder_goes_is_refused_not_a_500(kb: Any) -> None:
    root = kb.settings.root
    (root / ".archive").write_text("not a folder", encoding="utf-8")
    with client_for(kb) as client:
        resp = client.post("/api/archive", json={"file": NOTE_REL, "expected_hash": digest(root / NOTE_REL)})
    assert resp.status_code == 400 and "make it a folder" in resp.json()["error"], resp.text
    assert (root / NOTE_REL).exists()

