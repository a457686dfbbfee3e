"""Reproducible consults (issue 28, item 2): consult returns working_set_id, the SHA-256 of the canonical JSON of
what it used; the consult log keeps it; oracle_verify(working_set_id=...) says reproduces / changed and which
sources changed, vanished, came or went. Canonical JSON is pure; the rest runs on real indexes (SQLite FTS5 +
embedded ChromaDB + the ONNX model).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from _corpus import open_oracle, write
from oracle_server.services.capabilities import freshness
from oracle_server.services.capabilities.consult import consult
from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import ConsultRequest, VerifyRequest
from oracle_server.registry.tools import BY_NAME
from oracle_server.services.capabilities.verify import verify
from oracle_server.services.capabilities.working_set import canonical_json, working_set_id

NOTES = {
    "learnings/2026-03-01_otter-queue-retries.md": (
        "---\ntitle: Otter queue consumers retry with backoff\n---\n\n# Otter queue consumers retry with backoff\n\n"
        "When an otter queue consumer fails, retry the message with exponential backoff before dead-lettering it.\n"
    ),
    "learnings/2026-03-02_otter-queue-idempotent.md": (
        "---\ntitle: Otter queue handlers must be idempotent\n---\n\n# Otter queue handlers must be idempotent\n\n"
        "Otter queue messages can arrive twice, so every otter queue handler must be idempotent.\n"
    ),
    "principles/otter.md": (
        "# Otter principles\n\n### Retry otter queue work safely\n\nRetrying otter queue work is safe only when the "
        "handler is idempotent.\n"
    ),
}
RETRIES, IDEMPOTENT, PRINCIPLE = NOTES
DECISION = "should the otter queue consumer retry failed messages"


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert canonical_json({"b": [2, 1], "a": "ไทย", "c": None}) == '{"a":"ไทย","b":[2,1],"c":null}'.encode()
    assert working_set_id({"x": 1}) == hashlib.sha256(b'{"x":1}').hexdigest()
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def _kb(base: Path) -> Path:
    root = base / "root"
    for rel, text in NOTES.items():
        write(root / rel, text)
    return root


@pytest.fixture()
def oracle(tmp_path: Path):
    o = open_oracle(_kb(tmp_path), tmp_path / "data")
    o.indexer.sync()
    yield o
    o.close()


def _consult(o, **kw):
    return consult(o, ConsultRequest(decision=DECISION, **kw))


def test_the_same_state_and_question_give_the_same_id_and_it_is_logged(oracle, tmp_path: Path) -> None:
    first = _consult(oracle)
    assert first.principles + first.learnings, first.warnings
    assert len(first.working_set_id) == 64 and first.working_set_id == _consult(oracle).working_set_id
    assert _consult(oracle, budget_tokens=600).working_set_id != first.working_set_id
    with_context = _consult(oracle, context="we use at-least-once delivery")
    assert with_context.working_set_id != first.working_set_id
    row = oracle.logs.consult_by_working_set(first.working_set_id)
    assert row is not None and working_set_id(json.loads(row["working_set"])) == first.working_set_id
    assert oracle.logs.recent("consult_log", 1)[0]["working_set_id"] == with_context.working_set_id
    assert f"working_set_id={first.working_set_id}" in BY_NAME["oracle_consult"].text(None, first)
    # a second, fresh index of the same files (another data dir, another process secret for the tag)
    other = open_oracle(_kb(tmp_path / "copy"), tmp_path / "copy" / "data")
    try:
        other.indexer.sync()
        assert _consult(other).working_set_id == first.working_set_id
    finally:
        other.close()


def test_verify_says_reproduces_then_changed_naming_the_sources(oracle) -> None:
    first = _consult(oracle)
    used = [s.id for s in first.principles + first.learnings]
    same = verify(oracle, VerifyRequest(working_set_id=first.working_set_id)).working_set
    assert same is not None and same.status == "reproduces" and same.current_id == first.working_set_id
    assert not (same.changed_sources or same.vanished_sources or same.index_changed)
    # edit the text of one source: it changed; delete another note: it vanished
    root = oracle.settings.root
    write(root / RETRIES, NOTES[RETRIES].replace("exponential backoff", "exponential backoff and jitter"))
    (root / PRINCIPLE).unlink()
    oracle.indexer.sync_paths([RETRIES, PRINCIPLE])
    result = verify(oracle, VerifyRequest(working_set_id=first.working_set_id.upper()))
    ws = result.working_set
    assert ws is not None and ws.status == "changed" and ws.current_id != first.working_set_id
    retries_id = oracle.store.file_chunk_ids(RETRIES)
    assert set(ws.changed_sources) == {i for i in used if i in retries_id}
    assert ws.vanished_sources == [i for i in used if i not in retries_id
                                   and i not in oracle.store.file_chunk_ids(IDEMPOTENT)]
    assert ws.index_changed and ws.guidance_changed
    assert {s.id for s in ws.sources} == set(used)
    assert "CHANGED" in BY_NAME["oracle_verify"].text(None, result)


def test_marking_a_note_verified_changes_the_working_set(oracle, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime as dt

    monkeypatch.setattr(freshness, "today", lambda: dt.date(2027, 1, 15))
    first = _consult(oracle)
    both = verify(oracle, VerifyRequest(working_set_id=first.working_set_id, mark_verified=[IDEMPOTENT]))
    assert both.working_set.status == "reproduces"  # checked before the mark
    again = verify(oracle, VerifyRequest(working_set_id=first.working_set_id)).working_set
    assert again.status == "changed" and again.index_changed and not again.changed_sources


def test_an_unknown_or_malformed_working_set_id_is_refused(oracle) -> None:
    with pytest.raises(OracleError) as info:
        verify(oracle, VerifyRequest(working_set_id="0" * 64))
    assert info.value.kind == "not_found"
    with pytest.raises(ValidationError):
        VerifyRequest(working_set_id="abc")


def test_over_mcp_consult_gives_an_id_that_verify_reproduces(oracle) -> None:
    """The real MCP server object through an in-process client: the new result field and argument come from
    the registry's models, nothing written for MCP."""
    import anyio
    from mcp import Client

    from oracle_server.mcp.server import OracleMCP
    from oracle_server.services.support.slots import ServiceSlots

    server = OracleMCP(oracle, ServiceSlots(), name="t")
    for name in ("oracle_consult", "oracle_verify", "oracle_search"):
        server.register(BY_NAME[name])

    async def run():
        async with Client(server) as client:
            consulted = await client.call_tool("oracle_consult", {"decision": DECISION})
            wsid = consulted.structured_content["working_set_id"]
            checked = await client.call_tool("oracle_verify", {"working_set_id": wsid})
            fresh = await client.call_tool("oracle_search", {"query": "otter queue", "fresh_only": True})
            return wsid, checked, fresh

    wsid, checked, fresh = anyio.run(run)
    assert len(wsid) == 64
    assert not checked.is_error and checked.structured_content["working_set"]["status"] == "reproduces"
    assert "REPRODUCES" in checked.content[0].text
    assert not fresh.is_error and all(not h.get("stale") for h in fresh.structured_content["hits"])  # brief: set only when stale


def test_the_cli_verify_command_takes_the_working_set_id_and_notes(oracle) -> None:
    import argparse

    from oracle_server.cli import spec as clispec
    from oracle_server.cli.commands import add_tool_command, tool_values
    from oracle_server.registry.tools import Caller

    wsid = _consult(oracle).working_set_id
    parser = argparse.ArgumentParser(prog="oracle", exit_on_error=False)
    sub = parser.add_subparsers(dest="command", required=True)
    spec = clispec.derive()["verify"]
    add_tool_command(sub, "verify", spec)
    tool = BY_NAME["oracle_verify"]
    args = parser.parse_args(["verify", "--working-set-id", wsid, "--mark-verified", IDEMPOTENT])
    request = tool.parse(tool_values(args, spec))
    result = tool.service(oracle, request, Caller("cli", "cli"))
    assert result.working_set.status == "reproduces" and [v.source_file for v in result.verified] == [IDEMPOTENT]


def test_equal_numbers_give_one_working_set_id() -> None:
    """Issue 39, item 13: 0, 0.0 and -0.0 (and 2 and 2.0) are one value to every filter, so they are one value to the
    working set's id (before: three ids for one consultation); a fraction stays a fraction, a boolean a boolean."""
    shapes = [{"where": {"priority": {"any": [n]}}, "budget_tokens": b} for n, b in ((0, 2), (0.0, 2.0), (-0.0, 2))]
    assert len({working_set_id(s) for s in shapes}) == 1, [canonical_json(s) for s in shapes]
    assert canonical_json({"x": [0.5, True, -0.0, 1e3]}) == b'{"x":[0.5,true,0,1000]}'
