"""Improving with use: oracle_feedback, oracle_supersede, oracle_relations, oracle_read, oracle_verify."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle_indexer.notes.parse import MAX_TERM_CHARS
from oracle_server.services.vocabulary.models.base import NoteData, NoteText, Request, Triplet, one_line
from oracle_server.services.vocabulary.models.search import SupersededBy

# -- improving with use: feedback, supersede, relations, read, verify ------------------------------
CHUNK_ID = r"^c_[0-9a-f]{20}$"
MAX_NOTE_CHARS = 10_000
MAX_VERDICT_NOTE_CHARS = 1_000  # a verdict's note is kept for ever (issue 26: 10,000 characters a verdict was 3.8 MB/s)


class FeedbackRequest(Request):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=CHUNK_ID, description="A hit's or consult source's id.")
    verdict: Literal["helpful", "misleading"] = Field(description="Did the note help or mislead you?")
    note: str | None = Field(default=None, max_length=MAX_VERDICT_NOTE_CHARS,
                             description="Why, in a sentence.")


class FeedbackResult(BaseModel):
    id: str
    verdict: str
    title: NoteText
    source_file: NoteText
    helpful: int
    misleading: int
    feedback_factor: float


class SupersedeRequest(Request):
    model_config = ConfigDict(extra="forbid")

    old_id: str = Field(min_length=1, max_length=1000, description="A chunk id, or a note's path relative to the root.")
    new_id: str | None = Field(default=None, max_length=1000, description="The chunk id or path of the successor.")
    reason: str | None = Field(default=None, max_length=MAX_NOTE_CHARS)
    undo: bool = Field(default=False, description="Revoke an earlier supersession of old_id by this tool.")

    @model_validator(mode="after")
    def _needs_successor(self) -> "SupersedeRequest":
        if not self.undo and not (self.new_id and self.new_id.strip()):
            raise ValueError("new_id is required: the chunk id or path of the note that replaces old_id")
        return self


class NoteRef(BaseModel):
    ref: str  # what was given, normalised: a chunk id or a path
    scope: Literal["chunk", "note"]
    id: str  # the chunk id, or the note's first chunk id
    source_file: NoteText
    title: NoteText
    chunks: int


class SupersedeResult(BaseModel):
    action: Literal["supersede", "undo"]
    old: NoteRef
    new: NoteRef | None
    reason: NoteText | None


class RelationsRequest(Request):
    model_config = ConfigDict(extra="forbid")

    subject: str | None = Field(default=None, max_length=MAX_TERM_CHARS)
    predicate: str | None = Field(default=None, max_length=MAX_TERM_CHARS)
    object: str | None = Field(default=None, max_length=MAX_TERM_CHARS)
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=100_000)

    @field_validator("subject", "predicate", "object")
    @classmethod
    def _terms(cls, value: str | None) -> str | None:
        return one_line(value)


class RelationHit(BaseModel):
    subject: NoteText
    predicate: NoteText
    object: NoteText
    id: str  # the stating note's first chunk
    source_file: NoteText
    title: NoteText
    type: str


class RelationsResult(BaseModel):
    relations: list[RelationHit]
    total: int
    limit: int
    offset: int


class ReadRequest(Request):
    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, pattern=CHUNK_ID, description="A chunk id from a hit.")
    file: str | None = Field(default=None, max_length=1000, description="A note's path relative to the knowledge root.")
    section: bool = Field(default=False, description="With id: only that section.")
    max_chars: int = Field(default=20_000, ge=1000, le=2_000_000, description=(
        "At most this many characters; `truncated` says the note is longer."))

    @model_validator(mode="before")
    @classmethod
    def _an_id_where_a_path_goes(cls, data: object) -> object:
        """`oracle read c_...`: a chunk id given as the file is the id (no note's path looks like one: a
        note ends in .md)."""
        if isinstance(data, dict) and data.get("id") is None and isinstance(data.get("file"), str) \
                and re.fullmatch(CHUNK_ID, data["file"].strip()):
            data = {**{k: v for k, v in data.items() if k != "file"}, "id": data["file"].strip()}
        return data

    @model_validator(mode="after")
    def _one_target(self) -> "ReadRequest":
        if (self.id is None) == (self.file is None):
            raise ValueError("give exactly one of id (a chunk id from a hit) or file (a path relative to the root)")
        if self.section and self.id is None:
            raise ValueError("section=true needs an id: the chunk whose section to return")
        return self


class SectionRef(BaseModel):
    id: str
    kind: str
    heading: NoteText
    line_start: int
    line_end: int
    content_hash: str


class ReadResult(BaseModel):
    source_file: NoteText
    type: str
    title: NoteText
    frontmatter: NoteData
    content: NoteText
    line_start: int
    line_end: int
    truncated: bool
    focus_id: str | None
    content_hash: str | None  # the section's hash when section=true, else None
    file_hash: str
    changed_since_index: bool
    sections: list[SectionRef]
    relations: list[Triplet]
    superseded_by: SupersededBy | None = None
    stale: bool = Field(default=False, description="Past its freshness window (last_verified / review_after, "
                        "[freshness] in oracle.toml): check it before relying on it.")
    stale_since: str | None = Field(default=None, description="When stale: YYYY-MM-DD the note fell due for review.")
    last_verified: str | None = Field(default=None, description="YYYY-MM-DD the note was last verified, if it says.")


class Citation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=100)
    content_hash: str = Field(min_length=12, max_length=64, pattern=r"^[0-9a-fA-F]+$",
                              description="The sha256 the hit carried (at least 12 leading hex digits).")


class VerifyRequest(Request):
    model_config = ConfigDict(extra="forbid")

    citations: list[Citation] = Field(default_factory=list, max_length=500,
                                      description="[{id, content_hash}] from hits or consult sources.")
    mark_verified: list[str] = Field(
        default_factory=list, max_length=100,
        description="Notes (ids or paths) you checked and found true: stamped last_verified today.")
    working_set_id: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$",
                                       description="A consult's working_set_id: does it still reproduce?")

    @field_validator("mark_verified")
    @classmethod
    def _refs(cls, value: list[str]) -> list[str]:
        for ref in value:
            if not ref.strip() or len(ref) > 1000:
                raise ValueError("each entry is a chunk id or a note's path relative to the root (1-1000 characters)")
        return value

    @model_validator(mode="after")
    def _something(self) -> "VerifyRequest":
        if not self.citations and not self.mark_verified and not self.working_set_id:
            raise ValueError("give citations to check, a consult's working_set_id, or notes to mark_verified")
        return self


class CitationStatus(BaseModel):
    id: str
    content_hash: str
    status: Literal["unchanged", "changed", "gone"]
    current_hash: str | None = None
    source_file: NoteText | None = None
    line_start: int | None = None
    line_end: int | None = None
    same_content_in: list[str] = Field(default_factory=list, description="Chunks that now hold exactly the cited text.")


class WorkingSetCheck(BaseModel):
    working_set_id: str
    status: Literal["reproduces", "changed"]
    current_id: str = Field(description="The working set id the same consultation gives now.")
    sources: list[CitationStatus] = Field(description="Each source the logged consultation used, checked now.")
    changed_sources: list[str] = Field(default_factory=list)
    vanished_sources: list[str] = Field(default_factory=list)
    added_sources: list[str] = Field(default_factory=list,
                                     description="Sources the consultation now uses that it did not.")
    dropped_sources: list[str] = Field(default_factory=list, description="Sources it used that it no longer does.")
    reordered: bool = False
    guidance_changed: bool = False
    index_changed: bool = Field(default=False, description="Some note in the index changed, appeared or vanished.")


class VerifiedNote(BaseModel):
    ref: str  # as given
    source_file: NoteText
    last_verified: str  # the day written (today)
    previous: str | None = Field(default=None, description="The last_verified the note carried before, if any.")
    changed: bool = Field(description="False when the note already said it was verified today: nothing was written.")


class VerifyResult(BaseModel):
    results: list[CitationStatus]
    unchanged: int
    changed: int
    gone: int
    verified: list[VerifiedNote] = Field(default_factory=list, description="The notes marked verified today.")
    working_set: WorkingSetCheck | None = None
