"""Streamable HTTP MCP sessions: half-open ones expire in seconds, one client holds a bounded share.

The MCP SDK keeps every session an `initialize` opened until it has been idle for 30 minutes, up to 10,000 of
them. A client that sends `initialize` and never speaks again costs ~38 KB per session, and 10,000 of them
locked every new client out (503 "Too many open sessions") for half an hour. This guard sits in front of the
SDK's endpoint and applies three limits:

- a session that has seen no request after the one that opened it (the `notifications/initialized` every
  client sends next, or any call) within PENDING_SECONDS is closed: a half-done handshake costs seconds;
- one client address holds at most PER_CLIENT sessions at once; beyond that a new `initialize` is refused
  with 503 and a message (its own half-open sessions expire quickly, the others' are untouched);
- the server as a whole holds at most MAX_SESSIONS (the SDK's ceiling, lowered from 10,000).

What it does not stop: a client that completes each handshake keeps up to PER_CLIENT sessions for the SDK's
idle timeout; behind a reverse proxy every client has the proxy's address, so PER_CLIENT then applies to all
of them together. The guard closes sessions through the SDK's session manager (`_server_instances`,
`_discard_session`: the SDK has no public call to close a session server-side; requirements.lock pins it).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PENDING_SECONDS = 10.0
PER_CLIENT = 64
MAX_SESSIONS = 1000
SWEEP_SECONDS = 1.0
_SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Session:
    client: str
    opened: float
    confirmed: bool = False  # a request after the opening one has arrived


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class SessionGuard:
    """ASGI wrapper around the SDK's /mcp endpoint that admits, tracks and expires sessions (see module doc)."""

    def __init__(self, app: ASGIApp, manager: Any, *, pending_seconds: float = PENDING_SECONDS,
                 per_client: int = PER_CLIENT, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.manager = manager
        self.pending_seconds = pending_seconds
        self.per_client = per_client
        self.clock = clock
        self.sessions: dict[str, _Session] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.sweep()
        session_id = _header(scope.get("headers", []), _SESSION_HEADER)
        if session_id is not None:
            known = self.sessions.get(session_id)
            if known is not None:
                known.confirmed = True
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown",))[0]
        if self.held_by(client) >= self.per_client:
            await _refuse(send, f"Too many open sessions from this client ({self.per_client}): close sessions you no"
                                " longer use (HTTP DELETE /mcp); half-open ones expire after"
                                f" {self.pending_seconds:g} s")
            return

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = _header(message.get("headers", []), _SESSION_HEADER)
                if opened is not None:
                    self.sessions[opened] = _Session(client, self.clock())
            await send(message)

        await self.app(scope, receive, record)

    def held_by(self, client: str) -> int:
        """Sessions this client address holds now."""
        return Counter(s.client for s in self.sessions.values())[client]

    async def sweep(self) -> int:
        """Forget sessions the SDK has ended; close those still half-open after PENDING_SECONDS. Returns how
        many were closed."""
        live: dict[str, Any] = getattr(self.manager, "_server_instances", {})
        now = self.clock()
        closed = 0
        for session_id, session in list(self.sessions.items()):
            transport = live.get(session_id)
            if transport is None:
                self.sessions.pop(session_id, None)
            elif not session.confirmed and now - session.opened > self.pending_seconds:
                self.sessions.pop(session_id, None)
                await self.manager._discard_session(session_id, transport)
                closed += 1
        return closed

    async def run(self) -> None:
        """Sweep every SWEEP_SECONDS, so half-open sessions are released even when no new request arrives."""
        while True:
            await anyio.sleep(SWEEP_SECONDS)
            await self.sweep()


async def _refuse(send: Send, message: str) -> None:
    """A JSON-RPC error with HTTP 503, as the SDK answers at its own session limit."""
    import json

    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"10")]})
    await send({"type": "http.response.body", "body": body})
