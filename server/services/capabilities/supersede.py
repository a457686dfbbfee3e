"""Supersede: a newer note replaces an older one without deleting it.

Two sources say that a note is superseded, and search treats them the same:
- the `oracle_supersede` tool, recorded in the append-only `supersede_log` (the last entry for a note wins,
  so an `undo` revokes);
- `superseded_by:` in a note's frontmatter, for people who edit the files.

A reference is either a chunk id (just that section, with its bullets) or a note's path relative to the
root (every chunk of the note). The old note stays on disk and in the index; search multiplies its score
by `scoring.SUPERSEDED_FACTOR`, places it after its successor, and points every hit at the successor.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from oracle_indexer.notes.parse import CHUNK_ID_RE as _CHUNK_ID
from oracle_server.services.capabilities.files import PathRefused, safe_path
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import ServiceError
from oracle_server.services.vocabulary.models import NoteRef, SupersededBy, SupersedeRequest, SupersedeResult


class SupersedeError(ServiceError, ValueError):
    """The supersession cannot be recorded; the message says why and what to pass instead."""


@dataclass(frozen=True)
class _Target:
    """What a reference points at, resolved against the index."""

    ref: str
    scope: str  # "chunk" | "note"
    id: str
    file: str
    title: str
    chunk_ids: frozenset[str]


def _chunk_target(oracle: Oracle, chunk: str) -> _Target | None:
    family = oracle.store.section_family(chunk)
    head = next((s for s in family if s.id == chunk), None)
    if head is None:
        return None
    return _Target(chunk, "chunk", chunk, head.file, head.title, frozenset(s.id for s in family))


def _note_target(oracle: Oracle, rel: str) -> _Target | None:
    sections = oracle.store.file_sections(rel)
    if not sections:
        return None
    return _Target(rel, "note", sections[0].id, rel, sections[0].title, frozenset(s.id for s in sections))


def resolve(oracle: Oracle, raw: str, what: str) -> _Target:
    """A chunk id or a path (inside the root, indexed) as given to the tool; SupersedeError otherwise."""
    raw = raw.strip()
    if _CHUNK_ID.match(raw):
        target = _chunk_target(oracle, raw)
        if target is None:
            raise SupersedeError(f"{what}: no indexed chunk has id {raw!r}; use an id from a search hit or a"
                                 " note's path")
        return target
    try:
        rel, _ = safe_path(oracle.settings.root, raw, oracle.settings.layout)
    except PathRefused as exc:
        raise SupersedeError(f"{what}: {exc}") from None
    target = _note_target(oracle, rel)
    if target is None:
        raise SupersedeError(f"{what}: {rel!r} is not an indexed note; use a path relative to the root or a chunk id")
    return target


def _frontmatter_target(oracle: Oracle, file: str, raw: str) -> _Target | None:
    """`superseded_by:` may name a chunk id, a root-relative path, or a path relative to the note's folder
    (with or without `.md`). Anything that would leave the root resolves to nothing."""
    raw = unicodedata.normalize("NFC", raw.strip().replace("\\", "/"))
    if _CHUNK_ID.match(raw):
        return _chunk_target(oracle, raw)
    if raw.startswith("/") or "\x00" in raw:
        return None
    names = [raw] if raw.lower().endswith(".md") else [raw, f"{raw}.md"]
    for name in names:
        for candidate in (posixpath.normpath(name), posixpath.normpath(posixpath.join(posixpath.dirname(file), name))):
            if candidate.startswith("..") or candidate == file:
                continue
            target = _note_target(oracle, candidate)
            if target is not None:
                return target
    return None


def _ref(target: _Target) -> NoteRef:
    return NoteRef(ref=target.ref, scope=target.scope, id=target.id, source_file=target.file, title=target.title,  # type: ignore[arg-type]
                   chunks=len(target.chunk_ids))


def _chain_reaches(oracle: Oracle, start: _Target, goal: _Target) -> bool:
    """Would start's own chain of successors lead back to goal (a cycle)?"""
    current = oracle.logs.supersessions()
    seen: set[str] = set()
    node: _Target | None = start
    while node is not None and node.ref not in seen:
        if node.chunk_ids & goal.chunk_ids:
            return True
        seen.add(node.ref)
        entry = current.get(node.ref) or current.get(node.file)
        node = resolve_quietly(oracle, entry[0]) if entry else None
    return False


def resolve_quietly(oracle: Oracle, ref: str) -> _Target | None:
    try:
        return resolve(oracle, ref, "ref")
    except SupersedeError:
        return None


def resolve_logged(oracle: Oracle, ref: str) -> _Target | None:
    """A reference as `supersede` logged it, already resolved when it was written (a chunk id or a
    root-relative path): one indexed lookup, no file-system walk per query. Anything else (a log from an
    older version) goes through the full resolution."""
    if _CHUNK_ID.match(ref):
        return _chunk_target(oracle, ref)
    return _note_target(oracle, ref) or resolve_quietly(oracle, ref)


def supersede(oracle: Oracle, request: SupersedeRequest, client: str = "cli",
              author: str | None = None) -> SupersedeResult:
    """Record (or, undo=true, revoke) a supersession in the log, attributed to `author` (team mode)."""
    old = resolve(oracle, request.old_id, "old_id")
    if request.undo:
        if old.ref not in oracle.logs.supersessions():
            raise SupersedeError(f"old_id: {old.ref!r} has no supersession made with this tool to undo"
                                 " (a `superseded_by:` in frontmatter is undone by editing the file)")
        oracle.logs.log_supersede(client, old.ref, None, request.reason, "revoke", author=author)
        return SupersedeResult(action="undo", old=_ref(old), new=None, reason=request.reason)
    assert request.new_id is not None
    new = resolve(oracle, request.new_id, "new_id")
    if old.chunk_ids & new.chunk_ids or (old.scope == "note" and new.file == old.file):
        raise SupersedeError("new_id is the same note as old_id (or part of it): a note cannot supersede itself")
    if _chain_reaches(oracle, new, old):
        raise SupersedeError(f"new_id {new.ref!r} is itself superseded, directly or through others, by {old.ref!r};"
                             " undo that first")
    oracle.logs.log_supersede(client, old.ref, new.ref, request.reason, "supersede", author=author)
    return SupersedeResult(action="supersede", old=_ref(old), new=_ref(new), reason=request.reason)


class Placed(Protocol):
    """Where a section sits: its note and its parent section (SectionFacts and Section both say, read-only)."""

    @property
    def file(self) -> str: ...
    @property
    def parent_id(self) -> str | None: ...


def successors_for(
    oracle: Oracle, docs: Mapping[str, Placed]
) -> tuple[dict[str, frozenset[str]], dict[str, SupersededBy]]:
    """For the given sections (id -> where it sits): superseded id -> its successor's
    section ids (for ranking), and superseded id -> the pointer every hit carries. A tool entry for the
    section beats one for its note, which beats the note's frontmatter."""
    tool = oracle.logs.supersessions()
    files = sorted({d.file for d in docs.values()})
    frontmatter = oracle.store.superseded_files(files) if files else {}
    if not tool and not frontmatter:
        return {}, {}
    cache: dict[tuple[str, str], _Target | None] = {}
    successors: dict[str, frozenset[str]] = {}
    pointers: dict[str, SupersededBy] = {}
    for doc_id in sorted(docs):
        doc = docs[doc_id]
        parent = doc.parent_id
        entry = tool.get(doc_id) or (tool.get(parent) if parent else None) or tool.get(doc.file)
        if entry:
            key = ("tool", entry[0])
            if key not in cache:
                cache[key] = resolve_logged(oracle, entry[0])
            target, reason, via, raw = cache[key], entry[1], "tool", entry[0]
        elif doc.file in frontmatter:
            raw = frontmatter[doc.file]
            key = (doc.file, raw)
            if key not in cache:
                cache[key] = _frontmatter_target(oracle, doc.file, raw)
            target, reason, via = cache[key], None, "frontmatter"
        else:
            continue
        if target is not None and doc_id in target.chunk_ids:
            continue  # a note pointing at itself is not superseded
        pointers[doc_id] = SupersededBy(
            id=target.id if target else "", source_file=target.file if target else raw,
            title=target.title if target else "", reason=reason, via=via,  # type: ignore[arg-type]
        )
        successors[doc_id] = target.chunk_ids if target else frozenset()
    return successors, pointers


def supersessions_overview(oracle: Oracle) -> list[dict]:
    """Every supersession in force, tool-made and from frontmatter, for the dashboard and the API."""
    out: list[dict] = []
    for old, (new, reason, at, client, author) in sorted(oracle.logs.supersessions().items(), key=lambda kv: -kv[1][2]):
        source, target = resolve_quietly(oracle, old), resolve_quietly(oracle, new)
        out.append({
            "old": old, "old_title": source.title if source else "", "old_file": source.file if source else "",
            "new": new, "new_title": target.title if target else "", "new_file": target.file if target else "",
            "reason": reason, "via": "tool", "at": at, "client": client, "author": author,
        })
    for file, raw in oracle.store.superseded_files().items():
        source, target = _note_target(oracle, file), _frontmatter_target(oracle, file, raw)
        out.append({
            "old": file, "old_title": source.title if source else "", "old_file": file,
            "new": target.ref if target else raw, "new_title": target.title if target else "",
            "new_file": target.file if target else "", "reason": None, "via": "frontmatter", "at": None, "client": None,
            "author": None,
        })
    return out
