"""oracle_history and oracle_restore: the team store's revisions (server/services/capabilities/history.py)."""

from __future__ import annotations

import datetime as dt
import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

from oracle_server.services.vocabulary.models.base import NoteText, Request


# -- the team store's history (issue 38: indexer/worker/workcopy.py, server/services/capabilities/history.py)
# -------------------
class HistoryRequest(Request):
    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1, max_length=1000, description="The note's path.")


class RevisionEntry(BaseModel):
    """One revision: its number (1 the first; oracle_restore takes it), the note's file_hash then (None for a
    deletion, a tombstone), the hash it was based on, who wrote it (a named token or ORACLE_AUTHOR), when it
    reached the team store (UTC, ISO 8601) and its size."""

    revision: int
    file_hash: str | None
    based_on: str | None = None
    deleted: bool
    author: str | None = None
    at: str
    bytes: int | None = None


class HistoryResult(BaseModel):
    file: NoteText
    revisions: list[RevisionEntry]  # oldest first: the last is the note's current revision


class RestoreRequest(Request):
    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(None, min_length=1, max_length=1000, description="The note's path (with revision).")
    revision: int | None = Field(None, ge=1, description="From oracle_history.")
    deleted_since: str | None = Field(
        None, min_length=2, max_length=40,
        description="Instead of file and revision: bring back every note deleted since then (an ISO date or time"
                    " in UTC, or 30m / 2h / 1d ago), and those whose deletion the guard held.")

    @model_validator(mode="after")
    def _one_way(self) -> "RestoreRequest":
        if self.deleted_since is not None:
            if self.file is not None or self.revision is not None:
                raise ValueError("give either file and revision, or deleted_since, not both")
            since_epoch(self.deleted_since)
        elif self.file is None or self.revision is None:
            raise ValueError("give file and revision (from oracle_history), or deleted_since")
        return self


_AGO = re.compile(r"^(\d{1,6})\s*([mhd])$")


def since_epoch(text: str) -> float:
    """`deleted_since` as epoch seconds: `30m`, `2h`, `1d` ago, or an ISO date / date-time (UTC unless it says)."""
    text = text.strip()
    ago = _AGO.match(text)
    if ago:
        return dt.datetime.now(dt.timezone.utc).timestamp() - int(ago[1]) * {"m": 60, "h": 3600, "d": 86400}[ago[2]]
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"deleted_since {text[:40]!r}: use an ISO date or time (2026-11-28, 2026-11-28T09:30)"
                         " or a span ago (30m, 2h, 1d)") from None
    return (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()


class RestoreResult(BaseModel):
    """`restored`: the revision whose text came back; `revision`: the note's new one (a restore is a revision of
    its own); `chunk_ids`: its sections as indexed before the call returned."""

    file: NoteText = ""
    restored: int = 0
    revision: int = 0
    file_hash: str = ""
    chunk_ids: list[str] = Field(default_factory=list)
    conflicts: list[NoteText] = Field(default_factory=list)  # an unsynced edit here, kept as a conflict copy
    author: str | None = None
    # deleted_since: the notes brought back (tombstoned since then, or held by the deletion guard)
    brought_back: list[NoteText] = Field(default_factory=list)
