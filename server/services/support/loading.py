"""What a call is about to wait for, so that a long first call says so instead of hanging in silence (issue 40).

The first calls after a server, an engine or a stdio session starts pay for what later calls find ready: the start-up
sync's keyword phase (every call waits for it: `Oracle.wait_ready`), the embedding model's ONNX sessions (a search, a
consult, a learn or an edit embeds), the embedded vector store (a learn or an edit writes vectors: importing chromadb
is most of a cold learn) and a configured reranker (a search). Measured in benchmarks/first_calls.py: a
cold stdio session, a new HTTP server's first learn, the first learn after the engine idled out.

`waiting_for` reads flags only (no I/O, no lock), so every call may ask. The adapters say it: every one logs a line
to the server's stderr (`log_wait`, from the registry's `Tool.run`); MCP also sends `notifications/progress` while
the call waits, where the client asked for progress (server/mcp/server.py).
"""

from __future__ import annotations

import sys

from oracle_server.services.runtime.app import Oracle

# The tools whose service embeds text (a query or a note's sections) or reranks: they wait for the models.
MODEL_TOOLS = frozenset({"oracle_search", "oracle_consult", "oracle_learn", "oracle_edit"})
# ...and those that write vectors: the embedded vector store opens on first use (a small base's searches rank its
# vectors exactly in NumPy, indexer/store/sqlite/exact.py, and never open it); a write imports chromadb.
WRITE_TOOLS = frozenset({"oracle_learn", "oracle_edit"})


def waiting_for(oracle: Oracle, tool: str) -> list[str]:
    """What a call of `tool` would wait for right now, in the order it waits; empty once all is loaded."""
    out = []
    if not oracle.ready.is_set():
        out.append("the start-up sync of the index (keyword phase)")
    if tool in MODEL_TOOLS:
        if not oracle.embedder.loaded:
            out.append(f"the embedding model ({oracle.embedder.spec.name})")
        if tool in WRITE_TOOLS and not oracle.vectors.opened:
            out.append("the vector store (ChromaDB: imported and opened on first write)")
        if tool == "oracle_search" and oracle.reranker is not None and not oracle.reranker.loaded:
            out.append("the reranker")
    return out


def describe(tool: str, pending: list[str]) -> str:
    """The line said while a call waits: what it waits for, and that only the first calls do."""
    return f"{tool} waits for {' and '.join(pending)}: loading once, after the server started"


def log_wait(tool: str, pending: list[str]) -> None:
    """One line on the server's stderr (its log: the terminal, or an engine's log file)."""
    print(f"oracle: {describe(tool, pending)}", file=sys.stderr, flush=True)


def log_done(tool: str, seconds: float) -> None:
    """The same call's end: how long the first call took, loads included."""
    print(f"oracle: {tool} answered after {seconds:.1f} s (first call: loads included)", file=sys.stderr, flush=True)
