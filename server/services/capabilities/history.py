"""A note's history in the team store, and bringing an earlier revision back (issue 38).

With `ORACLE_DATABASE_URL`, every change a working copy sends up is a revision (indexer/store/pg/revisions.py);
a deletion is a tombstone whose text stays in the revision before it. `history` lists them; `restore` makes an
earlier one the note's current revision again, as a new revision (nothing is overwritten: the revision it
replaces stays in the history), writes it into this folder and indexes it before it returns. Without the team
store the folder is the only copy and these say so.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from typing import TYPE_CHECKING

from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import (
    HistoryRequest,
    HistoryResult,
    RestoreRequest,
    RestoreResult,
    RevisionEntry,
    since_epoch,
)

if TYPE_CHECKING:
    from oracle_server.services.runtime.app import Oracle

NO_TEAM_STORE = ("history and restore need the team store (ORACLE_DATABASE_URL, docs/team.md): without it this"
                 " folder is the only copy of its notes, and their history is your version control's")


def _rel(oracle: Oracle, file: str) -> str:
    """The path as the store keys it (POSIX, NFC, relative to the root; an absolute path inside it is taken)."""
    text = unicodedata.normalize("NFC", file.strip().replace("\\", "/"))
    root = oracle.settings.root.as_posix().rstrip("/") + "/"
    if text.startswith(root):
        text = text[len(root):]
    return text.lstrip("./") if text.startswith("./") else text


def _copy(oracle: Oracle):
    copy = oracle.indexer.copy
    if copy is None and oracle.backend.offline:  # the history lives in the database
        raise OracleError("unavailable", f"a note's history is kept in the team database, and this engine serves its"
                          f" {oracle.backend.mark()}: ask again once it is back")
    if copy is None:
        raise OracleError("invalid", NO_TEAM_STORE)
    return copy


def history(oracle: Oracle, request: HistoryRequest) -> HistoryResult:
    """Every revision of a note, oldest first, with who wrote it and when."""
    rel = _rel(oracle, request.file)
    revisions = _copy(oracle).revisions.history(rel)
    if not revisions:
        raise OracleError("not_found", f"{rel}: no revision in the team store (is the path relative to the root?)")
    return HistoryResult(file=rel, revisions=[RevisionEntry(
        revision=r.revision, file_hash=r.hash, based_on=r.base, deleted=r.deleted, author=r.author,
        at=dt.datetime.fromtimestamp(r.at, dt.timezone.utc).isoformat(timespec="seconds"), bytes=r.size)
        for r in revisions])


def restore(oracle: Oracle, request: RestoreRequest, author: str | None = None) -> RestoreResult:
    """Revision `request.revision` of the note as its new current revision, in this folder and the index; or, with
    `deleted_since`, every note deleted since then (see `restore_deleted`)."""
    if request.deleted_since is not None:
        return restore_deleted(oracle, since_epoch(request.deleted_since), author)
    assert request.file is not None and request.revision is not None  # the request's own check
    rel = _rel(oracle, request.file)
    copy = _copy(oracle)
    known = {r.revision: r for r in copy.revisions.history(rel)}
    wanted = known.get(request.revision)
    if wanted is None:
        raise OracleError("not_found", f"{rel} has no revision {request.revision}"
                          + (f" (it has 1 to {max(known)})" if known else " (no revision at all)"))
    if wanted.deleted:
        raise OracleError("invalid", f"revision {request.revision} of {rel} is a deletion: restore the one before it")
    if not copy.syncable(rel):
        raise OracleError("invalid", f"{rel} is left out of this folder by its rules (oracle.toml, .archive/):"
                          " restore it from a machine that keeps it")
    report = oracle.indexer.restore(rel, request.revision, author=author)
    head = copy.revisions.heads([rel])[rel]
    return RestoreResult(file=rel, restored=request.revision, revision=head.revision, file_hash=head.hash or "",
                         chunk_ids=oracle.store.file_chunk_ids(rel), conflicts=report.conflicts, author=author)


def restore_deleted(oracle: Oracle, since: float, author: str | None) -> RestoreResult:
    """The bulk undo of a folder moved away or a deletion gone wrong: each note whose head is a deletion made after
    `since` gets its last text back as a new revision, and each note whose deletion the guard held (gone from this
    folder, still live in the database) is pulled back; then all come into this folder and the index at once."""
    copy = _copy(oracle)
    wanted: list[tuple[str, int]] = []
    for head in copy.revisions.deleted_since(since):
        if not copy.syncable(head.path):
            continue
        texts = [r.revision for r in copy.revisions.history(head.path) if not r.deleted]
        if texts:
            wanted.append((head.path, texts[-1]))
    report, released = oracle.indexer.restore_many(wanted, author=author)
    back = sorted({rel for rel, _ in wanted} | set(released))
    return RestoreResult(brought_back=back, conflicts=report.conflicts, author=author)
