"""One tool call against the Oracle's backend: pinned to one view, retried once on the working copy when the team
database went away under a read, and marked when the working copy answered. The registry's call path runs every
tool through `serve` (server/registry/tools.py `Tool.call`), so the MCP, HTTP and CLI adapters do none of this.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from oracle_indexer.serving.team import reason_of
from oracle_indexer.store.errors import DatabaseUnavailable

if TYPE_CHECKING:
    from oracle_server.services.runtime.app import Oracle

T = TypeVar("T")


def serve(oracle: Oracle, call: Callable[[], T], *, writes: bool) -> T:
    """`call()` on one view of the backend. A read that meets an outage of the team database is answered from the
    working copy (the switch is made at once, not at the link's next probe); a write that meets one is not repeated
    (its file may be saved already) and says what became of it. Every answer served from the working copy says so."""
    backend = oracle.backend
    try:
        with oracle.pinned():
            result = call()
    except DatabaseUnavailable as exc:
        if not backend.team or backend.offline or not backend.lost(str(exc)):
            raise
        if writes:
            raise DatabaseUnavailable(
                f"the team database went away during this write ({reason_of(str(exc))}); this engine now serves its"
                " working copy: whatever was saved as a file stays in the folder and is sent when the database is"
                " back. Look before you retry (oracle_list, oracle_search): it may be saved already") from exc
        oracle.wait_ready()
        with oracle.pinned():
            result = call()
    return marked(oracle, result)


def marked(oracle: Oracle, result: T) -> T:
    """`result` with the working copy's mark (meta.store and a warning, or a warning) while the team database is
    unreachable; as it is otherwise."""
    mark = oracle.backend.mark()
    if not mark:
        return result
    meta = getattr(result, "meta", None)
    holder = meta if isinstance(getattr(meta, "warnings", None), list) else result
    warnings = getattr(holder, "warnings", None)
    if hasattr(holder, "store"):
        holder.store = mark  # type: ignore[union-attr]
    if isinstance(warnings, list) and mark not in warnings:
        warnings.append(mark)
    return result
