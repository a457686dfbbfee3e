"""Feedback: an agent's verdict on a note it was given, kept in the append-only `feedback_log`.

A verdict is given on a chunk id (ids depend only on the file and the section, so a verdict survives edits
of the text) and counts for its whole note: a note marked misleading through one section must not come back
unpenalised through another. Search sums each candidate note's verdicts (`note_feedback`) and applies
`scoring.feedback_factor`, a bounded multiplier, so a note marked misleading drops and one marked helpful rises
without outranking clearly better matches.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from oracle_server.services.capabilities.search.scoring import SCORE_DECIMALS, feedback_factor
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import ServiceError
from oracle_server.services.vocabulary.models import FeedbackRequest, FeedbackResult

# feedback_log is never pruned by age (search ranks by it), so what a client can add is bounded instead (issue
# 26: one client grew it by 3.8 MB/s): a short note (MAX_VERDICT_NOTE_CHARS, server/services/vocabulary/models/use.py),
# at most VERDICTS_PER_HOUR verdicts per client (its transport, and its named token in team mode) and hour, and each
# section keeps its newest VERDICTS_PER_SECTION. Repeats are not merged: without tokens every local agent is the
# same client ("mcp"), and their separate verdicts on one note must all count.
VERDICTS_PER_HOUR = 600
VERDICTS_PER_SECTION = 1000


class FeedbackError(ServiceError, LookupError):
    """The id names no indexed chunk; the message says where ids come from."""

    error_kind = "not_found"


class FeedbackLimit(ServiceError, RuntimeError):
    """This client gave too many verdicts this hour; the message says when it may give more."""

    error_kind = "too_many"


def record_feedback(oracle: Oracle, request: FeedbackRequest, client: str = "cli",
                    author: str | None = None) -> FeedbackResult:
    """Log the verdict (attributed to `author`, the named token in team mode) and return the note's counts."""
    doc = oracle.store.sections_by_id([request.id]).get(request.id)
    if doc is None:
        raise FeedbackError(
            f"id: no indexed chunk has id {request.id!r}; use the id of a search hit or consult source"
        )
    if oracle.logs.verdicts_by(client, author, time.time() - 3600) >= VERDICTS_PER_HOUR:
        raise FeedbackLimit(f"{VERDICTS_PER_HOUR} verdicts in the last hour from this client ({client}"
                            f"{', ' + author if author else ''}): give more later; a verdict per note you actually"
                            " used is plenty")
    oracle.logs.log_feedback(client, request.id, request.verdict, request.note, doc.content_hash, author=author,
                             keep=VERDICTS_PER_SECTION)
    helpful, misleading = note_feedback(oracle, [doc.file]).get(doc.file, (0, 0))
    return FeedbackResult(
        id=request.id, verdict=request.verdict, title=doc.title, source_file=doc.file,
        helpful=helpful, misleading=misleading,
        feedback_factor=round(feedback_factor(helpful, misleading), SCORE_DECIMALS),
    )


def note_feedback(oracle: Oracle, files: Iterable[str]) -> dict[str, tuple[int, int]]:
    """note path -> (helpful, misleading) summed over the verdicts on every section it holds now, for the
    notes that have any. One read of the note's section ids and one of the log; nothing when no verdict was
    ever given."""
    paths = sorted(set(files))
    if not paths or not oracle.logs.has_feedback():
        return {}
    sections = oracle.store.section_hashes(paths)
    counts = oracle.logs.feedback_counts([i for p in paths for i in sections.get(p, {})])
    out: dict[str, tuple[int, int]] = {}
    for path in paths:
        verdicts = [counts[i] for i in sections.get(path, {}) if i in counts]
        if verdicts:
            out[path] = (sum(h for h, _ in verdicts), sum(m for _, m in verdicts))
    return out


def feedback_overview(oracle: Oracle, limit: int = 10) -> dict[str, list[dict]]:
    """The most helpful and the most misleading notes (by net verdicts), for the dashboard and the API."""
    totals = oracle.logs.feedback_totals()
    docs = oracle.store.sections_by_id([t[0] for t in totals])
    rows: list[dict[str, Any]] = [  # the API's JSON rows
        {
            "id": doc_id, "title": docs[doc_id].title if doc_id in docs else "",
            "heading": docs[doc_id].heading if doc_id in docs else "",
            "source_file": docs[doc_id].file if doc_id in docs else None,
            "helpful": helpful, "misleading": misleading, "last_at": last,
            "feedback_factor": round(feedback_factor(helpful, misleading), SCORE_DECIMALS),
            "authors": authors,
        }
        for doc_id, helpful, misleading, last, authors in totals
    ]
    most_helpful = sorted((r for r in rows if r["helpful"] > r["misleading"]),
                          key=lambda r: (-(r["helpful"] - r["misleading"]), -r["helpful"], r["id"]))
    most_misleading = sorted((r for r in rows if r["misleading"] > r["helpful"]),
                             key=lambda r: (-(r["misleading"] - r["helpful"]), -r["misleading"], r["id"]))
    return {"helpful": most_helpful[:limit], "misleading": most_misleading[:limit]}
