"""Read: from a snippet to the whole note (or one section), by chunk id or by path, inside the root only.

The whole note is read from disk, decoded exactly as the indexer decodes it, so the line spans that hits
carry point at the same lines here. A section comes from the index, so its text always matches its
content hash; `changed_since_index` says when the file on disk has moved on since.
"""

from __future__ import annotations

import json

from oracle_indexer.notes.parse import split_frontmatter
from oracle_indexer.worker.sync import decode_markdown, file_hash
from oracle_server.services.capabilities.browse import NotFound
from oracle_server.services.capabilities.files import MAX_READ_BYTES, FileNotInRoot, read_bytes
from oracle_server.services.capabilities.freshness import fields as freshness_fields
from oracle_server.services.capabilities.freshness import note_staleness
from oracle_server.services.capabilities.relations import stating_files
from oracle_server.services.capabilities.supersede import successors_for
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.models import ReadRequest, ReadResult, SectionRef


def _json_safe(meta: dict) -> dict:
    """Frontmatter as JSON (YAML dates and the like become strings)."""
    return json.loads(json.dumps(meta, default=str, ensure_ascii=False))


def _load(oracle: Oracle, raw: str) -> tuple[str, str, str]:
    """(relative path, text, sha256 of the bytes) of a note inside the root, or PathRefused / FileNotInRoot
    saying why not. The path is checked once, by the read itself: checking the resolved name a second time
    would refuse a link indexed under its own name to a file in no mapped folder."""
    rel, data = read_bytes(oracle.settings.root, raw, oracle.settings.layout)
    text, reason = decode_markdown(data, MAX_READ_BYTES)
    if text is None:
        raise FileNotInRoot(f"{rel!r} cannot be read as a note: {reason}")
    return rel, text, file_hash(data)


def read_note(oracle: Oracle, request: ReadRequest, client: str = "cli") -> ReadResult:
    focus = None
    if request.id is not None:
        focus = oracle.store.sections_by_id([request.id]).get(request.id)
        if focus is None:
            raise NotFound(f"id: no indexed chunk has id {request.id!r}; use an id from a search hit, or pass file")
        rel = focus.file
        _, text, digest = _load(oracle, rel)
    else:
        assert request.file is not None
        rel, text, digest = _load(oracle, request.file)
    indexed = oracle.store.note(rel)
    sections = oracle.store.file_sections(rel)
    meta, _, _, _ = split_frontmatter(text)
    if request.section and focus is not None:
        content, start, end, section_hash = focus.content, focus.line_start, focus.line_end, focus.content_hash
    else:
        content, start, end, section_hash = text, 1, text.count("\n") + 1, None
    truncated = len(content) > request.max_chars
    pointers = successors_for(oracle, {s.id: s for s in sections})[1]
    pointer = pointers.get(focus.id) if focus else next((pointers[s.id] for s in sections if s.id in pointers), None)
    oracle.logs.log_access(client, "read", [focus.id if focus else (sections[0].id if sections else rel)])
    return ReadResult(
        source_file=rel,
        type=indexed.type if indexed else "",
        title=(indexed.title if indexed else None) or (sections[0].title if sections else rel),
        frontmatter=_json_safe(meta),
        content=content[: request.max_chars],
        line_start=start,
        line_end=end,
        truncated=truncated,
        focus_id=focus.id if focus else None,
        content_hash=section_hash,
        file_hash=digest,
        changed_since_index=indexed is not None and indexed.file_hash != digest,
        sections=[
            SectionRef(id=s.id, kind=s.kind, heading=s.heading, line_start=s.line_start,
                       line_end=s.line_end, content_hash=s.content_hash)
            for s in sections
        ],
        relations=[t for ts in stating_files(oracle, (None, None, None), files=[rel]).values() for t in ts]
        if sections else [],
        superseded_by=pointer,
        **freshness_fields(note_staleness(oracle, [rel]).get(rel)),
    )
