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


def live_instructions(oracle: Oracle, base: str) -> str:
    """The static instructions plus what the knowledge base holds right now and whether it is healthy.

    Claude Code truncates server instructions at 2 KB, so this stays short; the counts are two queries.
    """
    try:
        by_type = oracle.store.notes_by_type()
        counts = oracle.store.counts()
    except Exception as exc:  # a database being rebuilt must not break the handshake
        return f"{base}\nStatus: the index cannot be read right now ({type(exc).__name__})."
    names = {"principle": "principles", "learning": "learnings", "retro": "retrospectives"}
    parts = ", ".join(f"{n} {names.get(t, t)}" for t, n in by_type.items()) or "no notes yet"
    coverage = counts["embedded"] / counts["chunks"] if counts["chunks"] else 1.0
    health = []
    down = oracle.vectors.down
    health.append(f"vector store DOWN ({down[:160]}): keyword search only" if down else "vector store ok")
    if not oracle.ready.is_set():
        health.append("start-up indexing in progress (calls wait for it)")
    last = oracle.store.get_meta("last_indexed")
    when = ""
    if last:
        when = time.strftime(", last indexed %Y-%m-%d %H:%M UTC", time.gmtime(float(last)))
    return (
        f"{base}\n\nRight now: {counts['files']} notes ({parts}), {counts['chunks']} sections, embeddings"
        f" {coverage:.0%}; {'; '.join(health)}{when}. Notes are also resources ({NOTE_TEMPLATE}, {STATS_URI});"
        " prompts: consult, reflect, retrospective, learn-from-session."
    )

