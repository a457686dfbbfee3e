"""The short text each tool returns beside its structured result, for models that read text rather than
JSON (the MCP tools' text content, and the CLI's output for commands without a renderer of their own).
Each takes (request, result): some answers say what was asked (files or notes, the truncation limit)."""

from __future__ import annotations

from typing import Any

from oracle_server.registry import render
from oracle_server.registry.render import (
    budget_line,
    phrasings_text,
    printable,
    result_count,
    serving_text,
    try_line,
    warning_lines,
)
from oracle_server.registry.shapes import detail_of
from oracle_server.services.capabilities.stats import Stats
from oracle_server.services.vocabulary.models import (
    ArchiveResult,
    ConceptsResult,
    ConsultResult,
    Document,
    EditResult,
    FeedbackResult,
    HistoryResult,
    LearnResult,
    ListRequest,
    ListResult,
    ReadRequest,
    ReadResult,
    RelationsResult,
    RestoreResult,
    SearchResult,
    SupersedeResult,
    VerifyResult,
    WorkingSetCheck,
)

_n = printable  # a name (file, author, title, heading) as one line, whatever it holds: the CLI prints this text


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def search_text(request: Any, result: SearchResult) -> str:
    """The MCP tool's text: with brief detail (its default) a short index of the page, the hits themselves being
    in the structured content (server/registry/shapes.py), else the page in full."""
    if detail_of(request, "mcp") == "brief":
        return brief_search_text(result)
    out, warnings = render.search(result.model_dump(mode="json"))  # the CLI's rendering, whole (as its --json dump)
    return "\n".join([out[0], *warnings, *out[1:]])


def brief_search_text(result: SearchResult) -> str:
    """One line per hit (rank, title and heading, file and lines, id, and what calls for action), for a
    client that shows the text rather than the structured content, which holds each hit's snippet and hash."""
    lines = [result_count(result.total, result.meta.unit, result.meta.mode, result.meta.took_ms,
                          result.meta.reranked_by)]
    lines += warning_lines(result.meta.warnings)
    for n, hit in enumerate(result.hits, start=result.offset + 1):
        heading = f" › {_n(hit.heading)}" if hit.heading else ""
        flags = [phrasings_text(hit.phrasings).removeprefix(", ")] if hit.phrasings else []
        flags += ["weak match"] if hit.weak else []
        flags += [f"SUPERSEDED by {_n(hit.superseded_by.source_file)}"] if hit.superseded_by else []
        flags += [f"STALE since {hit.stale_since}"] if hit.stale else []
        more = f"; {'; '.join(flags)}" if flags else ""
        where = f"{_n(hit.source_file)}:{hit.line_start}-{hit.line_end}"
        lines.append(f"{n}. {_n(hit.title)}{heading} — {where} ({hit.id}{more})")
    if result.try_:
        lines.append(try_line(result.try_))
    if result.hits:
        lines.append("snippets and hashes: structured content; detail=full adds ranking and sections")
    return "\n".join(lines)


def stale_text(since: str | None, verified: str | None) -> str:
    """One line for a stale note: since when, and when it was last verified."""
    return (f"STALE since {since} (last verified {verified or 'never'}): check it, then oracle_verify "
            "mark_verified")


def consult_text(request: Any, result: ConsultResult) -> str:
    budget = budget_line(result.budget_tokens, result.budget_from, result.mode)
    return (result.guidance + (budget + "\n" if budget else "")
            + "".join(f"{w}\n" for w in warning_lines(result.warnings))
            + (f"working_set_id={result.working_set_id}\n" if result.working_set_id else ""))


def reflect_text(request: Any, doc: Document) -> str:
    heading = f" › {_n(doc.heading)}" if doc.heading else ""
    return f"[{doc.type}] {_n(doc.title)}{heading} ({_n(doc.source_file)})\n\n{doc.content}"


def learn_text(request: Any, result: LearnResult) -> str:
    text = f"Saved {_n(result.file)}{_by(result.author)} (id {result.id}, embedded: {result.embedded})."
    if result.supersedes:
        text += f" It supersedes {_n(result.supersedes)}."
    if result.near_duplicates:
        text += " Similar existing learnings: " + "; ".join(
            f"{_n(d.title)} ({_n(d.source_file)}, similarity {d.similarity:.2f})" for d in result.near_duplicates
        )
    return text


def list_text(request: ListRequest, result: ListResult) -> str:
    lines = [plural(result.total, result.unit), *warning_lines(result.warnings)]
    lines += [
        f"- [{i.type}] {_n(i.title)}{' › ' + _n(i.heading) if i.heading else ''} ({_n(i.source_file)},"
        f" {i.date or 'undated'}, id {i.id})"
        for i in result.items
    ]
    return "\n".join(lines)


def _counts(by_type: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in by_type.items())


def stats_text(request: Any, result: Stats) -> str:
    docs = result.documents
    return (
        f"{plural(result.files.total, 'note')} ({', '.join(f'{k}: {v}' for k, v in result.files.by_type.items())}), "
        f"{plural(docs.total, 'section')}; "
        f"embeddings {result.embeddings.coverage:.1%}"
        + (f" ({result.embeddings.scripts})" if result.embeddings.scripts else "")
        + f"; vector store {'ok' if result.vector_store.ok else 'DOWN'}; "
        f"drift: {'none' if result.drift.in_sync else 'yes, run oracle index'}; "
        f"{result.usage.searches} searches, {result.usage.consultations} consultations,"
        f" {result.usage.learnings} learnings"
        + (f"; stale notes: {result.freshness.stale} ({_counts(result.freshness.stale_by_type)})"
           if result.freshness and result.freshness.stale else "")
        + (f"; served by: {serving_text(result.serving.model_dump())}" if result.serving else "")
        + (f"; team store: {plural(result.working_copy.notes, 'note')}, {result.working_copy.tombstones} deleted,"
           f" {result.working_copy.conflicts} conflict copies"
           if result.working_copy else "")
    )


def concepts_text(request: Any, result: ConceptsResult) -> str:
    if not result.concepts:
        return "no concepts yet"
    return "notes carrying each concept: " + ", ".join(f"{c.concept} ({c.count})" for c in result.concepts)


def feedback_text(request: Any, result: FeedbackResult) -> str:
    return (f"Recorded {result.verdict} for {_n(result.title)} ({_n(result.source_file)}): "
            f"{result.helpful} helpful, {result.misleading} misleading; ranking factor {result.feedback_factor}.")


def supersede_text(request: Any, result: SupersedeResult) -> str:
    if result.new is None:
        return f"Undone: {_n(result.old.source_file)} is no longer marked superseded by this tool."
    return (f"{_n(result.old.source_file)} ({result.old.scope}) is now superseded by "
            f"{_n(result.new.source_file)} (id {result.new.id}).")


def relations_text(request: Any, result: RelationsResult) -> str:
    lines = [f"{result.total} relations"]
    lines += [f"- {r.subject} — {r.predicate} — {r.object} ({_n(r.source_file)}, id {r.id})" for r in result.relations]
    return "\n".join(lines)


def read_text(request: ReadRequest, result: ReadResult) -> str:
    head = f"{_n(result.source_file)}:{result.line_start}-{result.line_end}"
    if result.superseded_by:
        head += f" (SUPERSEDED by {_n(result.superseded_by.source_file)})"
    if result.stale:
        head += f" ({stale_text(result.stale_since, result.last_verified)})"
    if result.truncated:
        head += f" (truncated to {request.max_chars:,} characters: max_chars={request.max_chars * 4} reads more)"
    return f"{head}\n\n{result.content}"


def working_set_text(ws: WorkingSetCheck) -> str:
    """One line: does a logged consultation reproduce, and if not, what moved."""
    head = f"working set {ws.working_set_id[:12]}…: {ws.status.upper()}"
    if ws.status == "reproduces":
        return head
    parts = [f"now {ws.current_id[:12]}…"]
    parts += [f"{label}: {', '.join(ids)}" for label, ids in (
        ("changed", ws.changed_sources), ("vanished", ws.vanished_sources), ("added", ws.added_sources),
        ("dropped", ws.dropped_sources)) if ids]
    parts += ["order changed"] if ws.reordered else []
    parts += ["guidance changed"] if ws.guidance_changed and not (ws.changed_sources or ws.added_sources
                                                                   or ws.dropped_sources) else []
    parts += ["other notes in the index changed"] if ws.index_changed else []
    return f"{head} ({'; '.join(parts)})"


def verify_text(request: Any, result: VerifyResult) -> str:
    lines = [f"{result.unchanged} unchanged, {result.changed} changed, {result.gone} gone"] if result.results else []
    lines += [f"- {r.id}: {r.status}" + (f" (now {r.current_hash})" if r.status == "changed" else "")
              for r in result.results]
    if result.working_set is not None:
        lines.append(working_set_text(result.working_set))
    lines += [f"verified {_n(v.source_file)}: last_verified {v.last_verified}"
              + ("" if v.changed else " (already)") for v in result.verified]
    return "\n".join(lines)


def _by(author: str | None) -> str:
    return f" by {_n(author)}" if author else ""


def edit_text(request: Any, result: EditResult) -> str:
    lines = [f"edited {_n(result.source_file)} ({result.op}){_by(result.author)}:"
             f" file_hash {result.previous_hash[:12]}…"
             f" -> {result.file_hash} ({plural(len(result.chunk_ids), 'section')} indexed)"]
    return "\n".join(lines + warning_lines(result.warnings))


def archive_text(request: Any, result: ArchiveResult) -> str:
    line = (f"archived {_n(result.source_file)}{_by(result.author)} to {_n(result.archived_to)} (out of the index:"
            f" {plural(result.removed_chunks, 'section')} removed; the file is kept)")
    return "\n".join([line] + warning_lines(result.warnings))


def history_text(request: Any, result: HistoryResult) -> str:
    lines = [f"{_n(result.file)}: {plural(len(result.revisions), 'revision')}"]
    for r in result.revisions:
        what = "deleted" if r.deleted else f"{(r.file_hash or '')[:12]} ({plural(r.bytes or 0, 'byte')})"
        lines.append(f"  {r.revision}  {r.at}  {_n(r.author or '?')}  {what}")
    return "\n".join(lines)


def restore_text(request: Any, result: RestoreResult) -> str:
    if request.deleted_since is not None:
        head = f"brought back {plural(len(result.brought_back), 'note')} deleted since {request.deleted_since}"
        return head + "".join(f"\n  {_n(f)}" for f in result.brought_back) + "".join(
            f"\n  your unsynced edit kept as a conflict copy: {_n(c)}" for c in result.conflicts)
    line = (f"restored revision {result.restored} of {_n(result.file)}{_by(result.author)}"
            f" as revision {result.revision}"
            f" ({result.file_hash[:12]}; {plural(len(result.chunk_ids), 'section')} indexed)")
    return line + "".join(f"\n  your unsynced edit kept as a conflict copy: {_n(c)}" for c in result.conflicts)
