"""The client's answers to the server's own requests (server/mcp/replies.py): which answers the SDK would drop are
turned into an error for the request that waits, and which are left to the SDK. The SDK's real parser decides."""

from __future__ import annotations

import json

from oracle_server.mcp.replies import Replies

GOOD = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "502 bad gateway"}}


def _asked(replies: Replies, request_id: object) -> None:
    replies.sent(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage", "params": {}}))


def _answer(request_id: object, result: object = GOOD) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def test_a_readable_answer_and_the_clients_own_requests_pass_as_they_are() -> None:
    replies = Replies()
    _asked(replies, 1)
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}})
    assert replies.received(call) == call  # the client's request 1 is not an answer
    assert replies.received(_answer("1")) == _answer("1")  # "1" and 1 are one id, as the SDK correlates them


def test_an_unreadable_answer_becomes_an_error_for_its_request() -> None:
    replies = Replies()
    _asked(replies, 7)
    error = json.loads(replies.received(_answer(7, "just a string")))
    assert error["id"] == 7 and "could not be read" in error["error"]["message"]


def test_a_wrong_id_fails_the_one_waiting_request_but_not_one_of_several() -> None:
    replies = Replies()
    _asked(replies, 3)
    error = json.loads(replies.received(_answer("nope")))
    assert error["id"] == 3 and "never used" in error["error"]["message"]
    _asked(replies, 4)
    _asked(replies, 5)
    assert replies.received(_answer("nope")) == _answer("nope")  # whose? the SDK drops it; the deadline decides


def test_a_late_answer_after_a_cancel_is_not_taken_for_another_requests() -> None:
    replies = Replies()
    _asked(replies, 1)
    replies.sent(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}))
    _asked(replies, 2)
    assert replies.received(_answer(1)) == _answer(1)  # late, for 1: the SDK drops it, request 2 still waits
    assert replies.received(_answer(2)) == _answer(2)
