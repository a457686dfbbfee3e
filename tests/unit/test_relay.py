"""The relay's reading of the engine's lines (server/engine/relay.py `answered`): which answer ends which call in
flight, read from the head of the line when the SDK wrote it, and from the whole line otherwise."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from mcp import types

from oracle_server.engine.relay import answered

IDS = st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=20))


@given(IDS, st.booleans())
def test_the_sdks_answers_are_read_from_their_head(request_id: int | str, ok: bool) -> None:
    """Lines as the engine's SDK writes them (stdio transport: model_dump_json, by alias, unset left out)."""
    if ok:
        message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"content": [], "structuredContent": {
            "id": 99, "method": "not this one"}})
    else:
        message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=-32603, message="x"))
    line = message.model_dump_json(by_alias=True, exclude_unset=True)
    assert line.startswith('{"jsonrpc":"2.0","id":')
    assert answered(line) == (True, request_id)


def test_requests_and_notifications_of_the_engine_end_no_call() -> None:
    assert answered('{"jsonrpc":"2.0","id":3,"method":"roots/list"}') == (False, None)
    assert answered('{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{}}') == (False, None)
    assert answered("not json") == (False, None)
    assert answered("[1, 2]") == (False, None)


def test_other_shapes_are_parsed_whole() -> None:
    """Another key order or spacing (another writer) still ends its call."""
    assert answered(json.dumps({"id": "x", "jsonrpc": "2.0", "result": {}})) == (True, "x")
    assert answered('{"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "m"}}') == (True, 5)
    assert answered('{"jsonrpc":"2.0","id":"unterminated') == (False, None)
