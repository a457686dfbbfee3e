"""A client's broken answer to the server's sampling request (issue 45, item 13), through a real `oracle serve` over
stdio, alone (`--standalone`) and as a relay session on the shared engine, spoken to in raw lines (the SDK's own
client never sends these). The MCP SDK drops an answer it cannot read (a bare string as the result, a lone surrogate
in the text: no UTF-8 form) or one whose id matches none of its requests, so the search waited out the full sampling
deadline (10 s) each time. Now the answer is read for what it is: a failed sampling request, at once, and the search
answers without variants, saying why."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _procs import indexed_folder, private_copy
from _wire import Wire

pytestmark = pytest.mark.slow
FAST = 5.0  # seconds from the broken answer to the search's; the sampling deadline it used to wait out is 10 s
QUESTION = "users get errors whenever we ship a new version"
GOOD = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "502 bad gateway rollout"}}
BROKEN = {  # json.dumps writes a lone surrogate as the escape \ud800, as a client's JSON encoder may
    "a bare string": lambda asked: json.dumps({"jsonrpc": "2.0", "id": asked, "result": "502 bad gateway rollout"}),
    "a lone surrogate": lambda asked: json.dumps({"jsonrpc": "2.0", "id": asked, "result": {
        **GOOD, "content": {"type": "text", "text": "502 \ud800 rollout"}}}),
    "a wrong id": lambda asked: json.dumps({"jsonrpc": "2.0", "id": f"not-{asked}", "result": GOOD}),
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    notes = {"learnings/rollout.md": "# Bad gateway during rollouts\n\n## Lesson\n\nDrain connections first.\n"}
    return indexed_folder(tmp_path_factory.mktemp("sampling-replies"), notes)


@pytest.fixture
def env(indexed: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    yield from private_copy(indexed, tmp_path, ORACLE_SAMPLING="1")


def _handshake(wire: Wire) -> None:
    wire.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}}, "clientInfo": {"name": "t", "version": "1"}}})
    assert "result" in wire.answer("init")
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _search_answered_with(wire: Wire, call_id: int, reply) -> tuple[dict, float]:
    """Search; answer the server's sampling request with `reply(its id)`; (the search's answer, seconds it took
    after the reply)."""
    wire.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {
        "name": "oracle_search", "arguments": {"query": QUESTION, "mode": "fts"}}})
    while True:
        message = wire.next()
        if message.get("method") == "sampling/createMessage":
            break
        assert message.get("id") != call_id, f"the search answered without sampling: {message}"
    replied = time.monotonic()
    wire.send(reply(message["id"]))
    answer = wire.answer(call_id)
    return answer, time.monotonic() - replied


@pytest.mark.parametrize("mode", ["--standalone", "engine"])
def test_a_sampling_answer_the_sdk_cannot_read_fails_the_request_at_once(env: dict[str, str], mode: str) -> None:
    wire = Wire(env, *([mode] if mode == "--standalone" else []))
    try:
        _handshake(wire)
        for n, (what, reply) in enumerate(BROKEN.items(), start=1):
            answer, took = _search_answered_with(wire, n, reply)
            meta = answer["result"]["structuredContent"]["meta"]
            assert took < FAST, f"{what}: the search waited {took:.1f} s for an answer already given"
            assert any(w.startswith("sampling:") for w in meta["warnings"]), (what, meta["warnings"])
            assert meta["sampled_variants"] is None, (what, meta)  # searched as asked: the question's words alone
        # and a good answer still becomes the search's variants, after all that
        answer, _ = _search_answered_with(wire, 9, lambda asked: {"jsonrpc": "2.0", "id": asked, "result": GOOD})
        found = answer["result"]["structuredContent"]
        assert found["meta"]["sampled_variants"] == ["502 bad gateway rollout"] and found["hits"], found
    finally:
        assert wire.close() == 0, wire.stderr()
