"""The client's answers to the server's own requests (sampling), read before the MCP SDK reads them.

The SDK drops an answer it cannot read (a bare string as the result, a lone surrogate in its text: the line fails
its validation) and one whose id matches none of its requests: the request that asked then waits out its deadline
(issue 45: a search waited the full 10 s of sampling, server/mcp/sampling.py, for an answer already given). So each
stdio session (standalone: server/mcp/stdio_front.py; in the shared engine: server/engine/process.py) passes the lines
it writes and reads through one `Replies`: an answer to a request of the server's that the SDK would drop becomes a
JSON-RPC error for that request, which fails it at once, saying why. An answer under an id the server never used,
while exactly one of its requests waits, is that request's (nothing else was asked); with several waiting it cannot be
told whose, and is left to the SDK. An answer under an id the server used before (a late one, after a timeout) is
left alone too.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from mcp.shared.dispatcher import coerce_request_id
from mcp_types import jsonrpc_message_adapter

UNREADABLE = -32603  # JSON-RPC internal error: the request failed, in the client's answer
USED_KEPT = 1000  # ids of the server's finished requests remembered (a late answer to one is not a wrong id)


def _parse(line: str) -> dict | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def _readable(line: str) -> str | None:
    """Why the SDK cannot read this line (its own parser), or None when it can."""
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - any refusal of the SDK's: its first line says what
        return str(exc).splitlines()[0][:200]
    return None


def _key(request_id: Any) -> Any:
    """The id as the SDK correlates it ("7" and 7 are one); anything else that is no id, as text."""
    if isinstance(request_id, (int, str)) and not isinstance(request_id, bool):
        return coerce_request_id(request_id)
    return json.dumps(request_id)


class Replies:
    """One session's requests to the client that still wait for an answer, and the ids it used."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: OrderedDict[Any, Any] = OrderedDict()  # key -> the id as sent
        self._used: OrderedDict[Any, None] = OrderedDict()

    def sent(self, line: str) -> None:
        """A line the server writes: note a request of its own, and forget one it gave up (a cancel)."""
        if '"method"' not in line:
            return  # an answer or an error: the server asks nothing
        message = _parse(line)
        if message is None or not isinstance(message.get("method"), str):
            return
        with self._lock:
            if "id" in message:
                self._waiting[_key(message["id"])] = message["id"]
            elif message["method"] == "notifications/cancelled":
                params = message.get("params")
                if isinstance(params, dict) and "requestId" in params:
                    self._finish(_key(params["requestId"]))

    def received(self, line: str) -> str:
        """A line from the client, as the SDK should read it: the line itself, or for an answer the SDK would drop
        while a request of the server's waits for it, a JSON-RPC error that fails that request now."""
        if not self._waiting:
            return line
        message = _parse(line)
        if message is None or "method" in message or "id" not in message:
            return line
        key = _key(message["id"])
        with self._lock:
            if key in self._waiting:
                why = _readable(line)
                sent = self._finish(key)
                return line if why is None else _error(sent, f"the client's answer could not be read ({why})")
            if key in self._used or len(self._waiting) != 1:
                return line
            sent = self._finish(next(iter(self._waiting)))
        return _error(sent, f"the client answered under id {message['id']!r}, which this server never used, while"
                            f" its request {sent!r} waited")

    def _finish(self, key: Any) -> Any:
        """Forget a request that is answered or given up; the id as sent (None when it was not waiting)."""
        sent = self._waiting.pop(key, None)
        self._used[key] = None
        while len(self._used) > USED_KEPT:
            self._used.popitem(last=False)
        return sent


def _error(request_id: Any, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": UNREADABLE, "message": message}},
                      ensure_ascii=True)
