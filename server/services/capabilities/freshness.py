"""Freshness in the service layer: which notes are stale (indexer/notes/freshness.py has the rule), the fields each
hit, consult source and read result carries, `prefer_fresh` / `fresh_only` after ranking, stale counts for
stats, and marking a note verified today through the same safe writer as learn.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from oracle_indexer.notes.freshness import Staleness, StampRefused, staleness, stamp_verified
from oracle_indexer.notes.parse import CHUNK_ID_RE, split_frontmatter
from oracle_indexer.safe_write import ChangedMeanwhile, replace_unchanged
from oracle_server.services.capabilities.files import PathRefused, read_bytes, safe_path
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import VerifiedNote

T = TypeVar("T")


def today() -> dt.date:
    """The day freshness is judged on (local date); one function, so tests can fix it."""
    return dt.date.today()


def note_staleness(oracle: Oracle, files: Iterable[str] | None = None,
                   on: dt.date | None = None) -> dict[str, tuple[Staleness, str | None]]:
    """note path -> (its staleness, its last_verified), for `files` (every note when None)."""
    policy = oracle.settings.layout.freshness
    day = on or today()
    rows = oracle.store.note_dates(None if files is None else list(files))
    return {path: (staleness(doc_type, date, verified, review, policy, day), verified)
            for path, (doc_type, date, verified, review) in rows.items()}


def fields(state: tuple[Staleness, str | None] | None) -> dict:
    """The freshness fields of a hit, source or read result (models: stale, stale_since, last_verified)."""
    if state is None:
        return {}
    stale, verified = state
    return {"stale": stale.stale, "stale_since": stale.due if stale.stale else None, "last_verified": verified}


def order_by_freshness(oracle: Oracle, items: Sequence[T], file_of: Callable[[T], str], *, prefer: bool,
                       only: bool) -> tuple[list[T], int]:
    """After ranking: `only` drops the items of stale notes, `prefer` puts them after every fresh one (each
    group keeps its order). Returns (items, how many were dropped)."""
    if not (prefer or only) or not items:
        return list(items), 0
    states = note_staleness(oracle, {file_of(i) for i in items})
    is_stale = [states.get(file_of(i), (Staleness(False, None), None))[0].stale for i in items]
    fresh = [i for i, s in zip(items, is_stale) if not s]
    stale = [i for i, s in zip(items, is_stale) if s]
    if only:
        return fresh, len(stale)
    return fresh + stale, 0


def stale_by_type(oracle: Oracle) -> dict[str, int]:
    """How many notes of each type are stale today (types with none are listed with 0)."""
    counts: dict[str, int] = {}
    rows = oracle.store.note_dates()
    for path, (state, _) in note_staleness(oracle).items():
        doc_type = rows[path][0]
        counts[doc_type] = counts.get(doc_type, 0) + int(state.stale)
    return dict(sorted(counts.items()))


# -- marking notes verified ------------------------------------------------------------------------------
def _note_path(oracle: Oracle, ref: str) -> str:
    """The indexed note a reference (chunk id or root-relative path) names; OracleError otherwise."""
    raw = ref.strip()
    if CHUNK_ID_RE.match(raw):
        section = oracle.store.sections_by_id([raw]).get(raw)
        if section is None:
            raise OracleError("not_found", f"mark_verified: no indexed chunk has id {raw!r}; use an id from a hit"
                              " or a note's path")
        return section.file
    try:
        rel, _ = safe_path(oracle.settings.root, raw, oracle.settings.layout)
    except PathRefused as exc:
        raise OracleError("invalid", f"mark_verified: {exc}") from None
    if oracle.store.note(rel) is None:
        raise OracleError("not_found", f"mark_verified: {rel!r} is not an indexed note")
    return rel


def _stamped(rel: str, data: bytes, day: str) -> tuple[bytes, str | None]:
    """(the new bytes, the last_verified the note had): only `last_verified` may differ in the frontmatter,
    and the body not at all, or the write is refused (OracleError) before anything is written."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise OracleError("invalid", f"mark_verified: {rel} is not UTF-8 text") from None
    try:
        new = stamp_verified(text, day)
    except StampRefused as exc:
        raise OracleError("invalid", f"mark_verified: {rel}: {exc}; nothing was written") from None
    plain = text.lstrip("\ufeff").replace("\r\n", "\n")
    before, body_before, _, _ = split_frontmatter(plain)
    after, body_after, _, _ = split_frontmatter(new.lstrip("\ufeff").replace("\r\n", "\n"))
    others_kept = {k: v for k, v in before.items() if k != "last_verified"} == \
        {k: v for k, v in after.items() if k != "last_verified"}
    if not others_kept or str(after.get("last_verified")) != day or body_before != body_after:
        raise OracleError("invalid", f"mark_verified: {rel}: its frontmatter could not take a last_verified line"
                          " without changing anything else; add `last_verified: YYYY-MM-DD` by hand")
    previous = before.get("last_verified")
    return new.encode("utf-8"), None if previous is None else str(previous)


def mark_verified(oracle: Oracle, refs: Sequence[str], on: dt.date | None = None) -> list[VerifiedNote]:
    """Write `last_verified: <today>` into each note's frontmatter (atomically, never through a symlink,
    refused if the file changed while it was being stamped) and re-index it before returning."""
    day = (on or today()).isoformat()
    root = oracle.settings.root
    out: list[VerifiedNote] = []
    written: list[str] = []
    targets = [(ref, _note_path(oracle, ref)) for ref in refs]  # every reference checked before any write
    for ref, rel in dict.fromkeys(targets):
        _, data = read_bytes(root, rel, oracle.settings.layout)
        new, previous = _stamped(rel, data, day)
        if new == data:
            out.append(VerifiedNote(ref=ref, source_file=rel, last_verified=day, previous=previous, changed=False))
            continue
        _, target = safe_path(root, rel, oracle.settings.layout)
        with oracle.indexer.lock:
            try:  # the check and the write one step (indexer/safe_write.py): a save meanwhile is never overwritten
                replace_unchanged(target, new, data, target.stat().st_mode & 0o777)  # the note keeps its permissions
            except ChangedMeanwhile:
                raise OracleError("conflict", f"mark_verified: {rel} changed while it was being marked; nothing"
                                  " was written to it, try again") from None
        written.append(rel)
        out.append(VerifiedNote(ref=ref, source_file=rel, last_verified=day, previous=previous, changed=True))
    if written:
        oracle.indexer.sync_paths(written, embed_limit=None)
    return out
