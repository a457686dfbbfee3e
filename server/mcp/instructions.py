"""Server instructions as of now, and the resource URIs they name: importable without the MCP SDK, so that
a stdio server can answer its handshake before the SDK has loaded (server/mcp/stdio_front.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle_server.services.app import Oracle

NOTE_TEMPLATE = "oracle://note/{+path}"
CHUNK_TEMPLATE = "oracle://chunk/{id}"
FIELD_TEMPLATE = "oracle://field/{name}/{value}"  # notes whose frontmatter field holds a value
STATS_URI = "oracle://stats"
SURFACE = f" Notes are also resources ({NOTE_TEMPLATE}, {STATS_URI}); prompts: consult, reflect, retrospective, learn-from-session."


def live_instructions(oracle: Oracle, base: str) -> str:
    """The static instructions, then how to ask and what the notes look like (server/services/guide.py), then
    whether the index is healthy: each computed when asked (every handshake), from the index as it is now.

    Claude Code cuts server instructions at 2 KB (guide.INSTRUCTIONS_BYTES): what matters comes first, and the
    notes' description gives way (fewer concepts named) so the whole fits."""
    from oracle_server.services import guide

    try:
        state = guide.health(oracle)
        status = _status(state)
        room = guide.INSTRUCTIONS_BYTES - len(f"{base}\n\n\n{status}".encode())
        notes = guide.guide_lines(oracle, room)
    except Exception as exc:  # a database being rebuilt must not break the handshake
        return f"{base}\nStatus: the index cannot be read right now ({type(exc).__name__})."
    return f"{base}\n\n{notes}\n{status}"


def _status(state: object) -> str:
    """One line: sections, embeddings, vector store, start-up, last indexed, and the MCP extras."""
    from oracle_server.services.guide import Health

    assert isinstance(state, Health)
    health = [f"vector store DOWN ({state.vector_down[:160]}): keyword search only" if state.vector_down
              else "vector store ok"]
    if state.indexing:
        health.append("start-up indexing in progress (calls wait for it)")
    when = time.strftime(", last indexed %Y-%m-%d %H:%M UTC", time.gmtime(state.last_indexed)) if state.last_indexed else ""
    return (f"Right now: {state.sections:,} sections, embeddings {state.coverage:.0%}; {'; '.join(health)}{when}."
            + SURFACE)
