"""Server instructions as of now, and the resource URIs they name: importable without the MCP SDK, so that
a stdio server can answer its handshake before the SDK has loaded (server/mcp/stdio_front.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.services.support.guide import Health, Profile

NOTE_TEMPLATE = "oracle://note/{+path}"
CHUNK_TEMPLATE = "oracle://chunk/{id}"
FIELD_TEMPLATE = "oracle://field/{name}/{value}"  # notes whose frontmatter field holds a value
STATS_URI = "oracle://stats"
SURFACE = (f" Notes are also resources ({NOTE_TEMPLATE}, {STATS_URI}); prompts: consult, reflect, retrospective,"
           " learn-from-session.")
TYPE_NAMES = {"principle": "principles", "learning": "learnings", "retro": "retrospectives", "note": "notes"}


def live_instructions(oracle: Oracle, base: str) -> str:
    """The static instructions (how to use the tools and how to ask), then what the knowledge base holds right
    now: its notes, whether it is healthy, and what the notes look like (languages, folders, main concepts:
    server/services/support/guide.py), each read when asked (every handshake) from the index as it is now."""
    from oracle_server.services.support import guide

    try:
        return compose(base, guide.health(oracle), guide.profile(oracle))
    except Exception as exc:  # a database being rebuilt must not break the handshake
        return f"{base}\nStatus: the index cannot be read right now ({type(exc).__name__})."


def compose(base: str, state: Health, profile: Profile) -> str:
    """The instructions from their parts. Claude Code cuts server instructions at 2 KB (INSTRUCTIONS_BYTES): what
    matters comes first, and the main concepts give way (fewer named) so that the whole fits."""
    from oracle_server.services.support import guide

    parts = ", ".join(f"{n} {TYPE_NAMES.get(t, t)}" for t, n in state.types.items()) or "no notes yet"
    checks = [f"vector store DOWN ({state.vector_down[:160]}): keyword search only" if state.vector_down
              else "vector store ok"]
    if state.multilingual:
        checks.append("Thai/CJK questions are ranked by a multilingual model")
    if state.database:  # whoever can read that database reads what is learned here: the agent should know
        checks.append(f"notes and learnings are shared through the {state.database}")
    if state.indexing:
        checks.append("start-up indexing in progress (calls wait for it)")
    when = (time.strftime(", last indexed %Y-%m-%d %H:%M UTC", time.gmtime(state.last_indexed))
            if state.last_indexed else "")
    status = (f"Right now: {state.notes} notes ({parts}), {state.sections} sections, embeddings"
              f" {state.coverage:.0%}; {'; '.join(checks)}{when}.")
    head = f"{base}\n\n{status}\n"
    room = guide.INSTRUCTIONS_BYTES - len(head.encode("utf-8")) - len(SURFACE.encode("utf-8"))
    return f"{head}{guide.guide_text(profile, room)}{SURFACE}"
