"""The index read as addressable things: notes page by page, one section served by id, notes by path. The MCP
adapter turns them into resources (server/mcp/resources.py: URIs, cursors, `_meta`); the reads, the root's
rules and the access log live here, as for every tool."""

from __future__ import annotations

from collections.abc import Iterable

from oracle_indexer.store.rows import IndexedNote, Section
from oracle_server.services.capabilities.files import PathRefused, safe_path
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import ServiceError


class SectionNotServed(ServiceError, LookupError):
    """No indexed section has the id, or the rules keep its note out; the message says which."""

    error_kind = "not_found"


def notes_after(oracle: Oracle, after: str, limit: int) -> tuple[list[IndexedNote], int]:
    """Up to `limit` indexed notes whose path sorts after `after`, in path order, and how many notes are indexed:
    one indexed range scan per page however many notes there are."""
    return oracle.store.notes_after(after, limit), oracle.store.note_count()


def served_section(oracle: Oracle, chunk_id: str, client: str) -> Section:
    """One section from the index, so its text always matches its content hash; the read is logged.

    The note's path passes the readers' rules first (`safe_path`): an index written before a symlink's
    target was judged (or by another version) must not serve, by id, text the rules now keep out."""
    section = oracle.store.sections_by_id([chunk_id]).get(chunk_id)
    if section is None:
        raise SectionNotServed(f"no indexed section has id {chunk_id!r}; ids come from search hits or a note's"
                               " sections")
    try:
        safe_path(oracle.settings.root, section.file, oracle.settings.layout)
    except PathRefused as exc:
        raise SectionNotServed(f"section {chunk_id!r} is not served: {exc}") from None
    oracle.logs.log_access(client, "read", [chunk_id])
    return section


def indexed_notes(oracle: Oracle, paths: Iterable[str]) -> list[IndexedNote]:
    """The notes at these paths that are indexed, in the order given."""
    return [note for note in map(oracle.store.note, paths) if note is not None]
