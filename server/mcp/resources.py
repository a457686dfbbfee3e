"""The knowledge base as addressable resources: notes by path, sections (chunks) by id, and the stats.

Transport-neutral: this module knows URIs and pages, not MCP types (`server/mcp/surface.py` shapes them).
URIs are built and parsed with one RFC 6570 template each, so a note whose name has spaces or Thai
letters gets a valid, percent-encoded URI that reads back to the same path:

    oracle://note/{+path}   the note's markdown; its frontmatter, type, sha256 and sections as metadata
    oracle://chunk/{id}     one section: its text, content hash, line span and the note it belongs to
    oracle://stats          what `oracle_stats` returns, as JSON
    oracle://field/{name}/{value}   the notes whose frontmatter field `name` holds `value` (a `where` filter's
                            rule: case-insensitive, a list's `*` matches), as JSON; both parts complete

Listing is keyset-paginated by path (the cursor is the last path of the previous page, opaque to the
client), so a page costs one indexed range scan however many notes there are, and a note added or removed
between two pages neither repeats nor skips any other note.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from mcp.shared.uri_template import UriTemplate

from oracle_indexer.notes.fields import FieldCondition, value_key, value_text
from oracle_server.mcp.instructions import CHUNK_TEMPLATE, FIELD_TEMPLATE, NOTE_TEMPLATE, STATS_URI
from oracle_server.services.capabilities.browse import NotFound
from oracle_server.services.capabilities.files import FileNotInRoot, PathRefused
from oracle_server.services.capabilities.read import read_note
from oracle_server.services.capabilities.search.where import resolve_where
from oracle_server.services.capabilities.stats import stats
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.support.resources import SectionNotServed, indexed_notes, notes_after, served_section
from oracle_server.services.vocabulary.boundary import defuse_data, defuse_markers
from oracle_server.services.vocabulary.models import ReadRequest

PAGE_SIZE = 100  # notes per resources/list page: 10k notes are 100 pages, never one response
MAX_NOTE_CHARS = 2_000_000  # ReadRequest's ceiling; larger notes are refused by the indexer anyway
META_PREFIX = "oracle/"  # `_meta` keys need a prefix that is not the protocol's own

_NOTE = UriTemplate.parse(NOTE_TEMPLATE)
_CHUNK = UriTemplate.parse(CHUNK_TEMPLATE)
_FIELD = UriTemplate.parse(FIELD_TEMPLATE)


class BadCursor(ValueError):
    """A pagination cursor this server did not hand out."""


class UnknownResource(LookupError):
    """The URI names no note, section or resource; the message says what does exist."""


def note_uri(rel: str) -> str:
    """Every character but `/` and the unreserved ones percent-encoded: `{+path}` expansion would leave `?` and
    `#` as they are, and such a URI would not read back to its path."""
    return "oracle://note/" + quote(rel, safe="/")


def chunk_uri(chunk_id: str) -> str:
    return _CHUNK.expand({"id": chunk_id})


def field_uri(name: str, value: str) -> str:
    return _FIELD.expand({"name": name, "value": value})


def parse_field_uri(uri: str) -> tuple[str, str] | None:
    """(field name, value) of an oracle://field/... URI, else None."""
    found = _FIELD.match(uri) if uri.startswith("oracle://field/") else None
    name, value = (found.get("name"), found.get("value")) if found else (None, None)
    if not isinstance(name, str) or not isinstance(value, str):
        return None
    return name, value


def parse_uri(uri: str) -> tuple[str, str]:
    """("note", path) | ("chunk", id) | ("stats", "") | ("field", uri), or UnknownResource."""
    if uri == STATS_URI:
        return "stats", ""
    if parse_field_uri(uri):
        return "field", uri
    for kind, template in (("note", _NOTE), ("chunk", _CHUNK)):
        found = template.match(uri)
        if found:
            value = found[next(iter(found))]
            if isinstance(value, str) and value:
                return kind, value
    raise UnknownResource(
        f"unknown resource {uri!r}: use oracle://note/<path relative to the root>, oracle://chunk/<id>,"
        f" oracle://field/<name>/<value> or {STATS_URI}"
    )


# -- listing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NoteEntry:
    path: str
    type: str
    title: str
    size: int
    modified: str | None  # ISO 8601 (UTC) from the file's mtime when it was indexed
    chunks: int

    @property
    def uri(self) -> str:
        return note_uri(self.path)


@dataclass(frozen=True)
class NotePage:
    notes: list[NoteEntry]
    next_cursor: str | None
    total: int


def encode_cursor(after: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        after = data["after"]
        if not isinstance(after, str):
            raise TypeError
        return after
    except Exception:
        raise BadCursor("invalid cursor: pass the nextCursor of the previous page unchanged") from None


def _iso(mtime_ns: int | None) -> str | None:
    if not mtime_ns:
        return None
    return dt.datetime.fromtimestamp(mtime_ns / 1e9, tz=dt.timezone.utc).isoformat(timespec="seconds")


def list_notes(oracle: Oracle, cursor: str | None = None, page_size: int = PAGE_SIZE) -> NotePage:
    """One page of indexed notes in path order, and the cursor of the next page (None on the last)."""
    after = decode_cursor(cursor) if cursor else ""
    rows, total = notes_after(oracle, after, page_size + 1)
    more = len(rows) > page_size
    rows = rows[:page_size]
    notes = [
        NoteEntry(path=r.path, type=r.type, title=r.title or r.path, size=r.size, modified=_iso(r.mtime_ns),
                  chunks=r.chunk_count)
        for r in rows
    ]
    return NotePage(notes=notes, next_cursor=encode_cursor(notes[-1].path) if more and notes else None, total=total)


# -- reading ---------------------------------------------------------------------------------------
@dataclass
class Content:
    """What a read returns: the text, its MIME type, and metadata for the resource's `_meta`."""

    uri: str
    text: str
    mime_type: str
    meta: dict[str, Any] = field(default_factory=dict)


def _meta(**values: Any) -> dict[str, Any]:
    """A resource's `_meta`: titles, headings, paths and frontmatter are the note's author's, so every string in
    it is defused as in the tools' results (server/services/vocabulary/boundary.py)."""
    return defuse_data({META_PREFIX + k: v for k, v in values.items() if v is not None})


def read_note_resource(oracle: Oracle, rel: str, client: str = "mcp") -> Content:
    """The note's markdown as on disk, with its frontmatter parsed into metadata (the read service does both)."""
    try:
        note = read_note(oracle, ReadRequest(file=rel, max_chars=MAX_NOTE_CHARS), client=client)
    except (FileNotInRoot, PathRefused) as exc:
        raise UnknownResource(str(exc)) from None
    return Content(
        uri=note_uri(note.source_file),
        text=note.content,
        mime_type="text/markdown",
        meta=_meta(
            path=note.source_file, type=note.type or None, title=note.title, frontmatter=note.frontmatter,
            sha256=note.file_hash, changed_since_index=note.changed_since_index, truncated=note.truncated or None,
            sections=[{"id": s.id, "uri": chunk_uri(s.id), "heading": s.heading, "kind": s.kind,
                       "line_start": s.line_start, "line_end": s.line_end, "content_hash": s.content_hash}
                      for s in note.sections],
            superseded_by=note.superseded_by.model_dump(mode="json") if note.superseded_by else None,
        ),
    )


def read_chunk_resource(oracle: Oracle, chunk_id: str, client: str = "mcp") -> Content:
    """One section from the index, so its text always matches its content hash (`served_section`: the root's
    rules first, the read logged)."""
    try:
        section = served_section(oracle, chunk_id, client)
    except SectionNotServed as exc:
        raise UnknownResource(str(exc)) from None
    return Content(
        uri=chunk_uri(chunk_id),
        text=defuse_markers(section.content),
        mime_type="text/markdown",
        meta=_meta(
            id=chunk_id, note=note_uri(section.file), path=section.file, type=section.type, kind=section.kind,
            title=section.title, heading=section.heading, line_start=section.line_start, line_end=section.line_end,
            content_hash=section.content_hash, concepts=list(section.concepts), project=section.project,
            date=section.date,
        ),
    )


def read_stats_resource(oracle: Oracle) -> Content:
    return Content(uri=STATS_URI, text=stats(oracle).model_dump_json(indent=2), mime_type="application/json")


def read_field_resource(oracle: Oracle, name: str, value: str) -> Content:
    """The notes whose field `name` holds `value`, by path (at most PAGE_SIZE, with the total): what
    `where={name: value}` lets through, so a completed pair can be checked before it is used as a filter."""
    text = value_text(value)
    if not name.strip() or text is None:
        raise UnknownResource("oracle://field/<name>/<value> needs a field name and a value (both complete)")
    selection, _ = resolve_where(oracle, [FieldCondition(name.strip(), any_of=(value_key(text),))])
    paths = sorted(selection.only or ())
    notes = [{"path": note.path, "uri": note_uri(note.path), "type": note.type, "title": note.title or note.path}
             for note in indexed_notes(oracle, paths[:PAGE_SIZE])]
    body = {"field": name.strip(), "value": text, "total": len(paths), "notes": notes}
    return Content(uri=field_uri(name, value), text=json.dumps(defuse_data(body), ensure_ascii=False, indent=2),
                   mime_type="application/json", meta=_meta(field=name.strip(), total=len(paths)))


def read_resource(oracle: Oracle, uri: str, client: str = "mcp") -> Content:
    """Any Oracle resource by URI; UnknownResource when there is none."""
    kind, value = parse_uri(uri)
    if kind == "stats":
        return read_stats_resource(oracle)
    if kind == "field":
        name, field_value = parse_field_uri(value) or ("", "")
        return read_field_resource(oracle, name, field_value)
    if kind == "chunk":
        return read_chunk_resource(oracle, value, client)
    try:
        return read_note_resource(oracle, value, client)
    except NotFound as exc:
        raise UnknownResource(str(exc)) from None
