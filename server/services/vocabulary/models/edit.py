"""oracle_edit and oracle_archive: editing and retiring notes (server/services/capabilities/edit.py)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle_server.services.vocabulary.models.base import NoteText, Request
from oracle_server.services.vocabulary.models.learn import MAX_PATTERN_CHARS, MAX_TITLE_CHARS
from oracle_server.services.vocabulary.models.use import CHUNK_ID, MAX_NOTE_CHARS

# -- editing and retiring notes (server/services/capabilities/edit.py)
# ---------------------------------------------------------
EditOp = Literal["append", "prepend", "replace_section", "replace_text"]
ExpectedHash = Annotated[str, Field(
    min_length=12, max_length=64, pattern=r"^[0-9a-fA-F]+$",
    description="The note's file_hash as you read it (oracle_read): a conflict if it changed since.")]


class _NoteTarget(Request):
    """One existing note, by a chunk id of it or its path, with the hash the caller last read."""

    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(default=None, max_length=1000,
                             description="The note's path relative to the knowledge root.")
    id: str | None = Field(default=None, pattern=CHUNK_ID, description="Or a chunk id of the note (from a hit).")
    expected_hash: ExpectedHash

    @model_validator(mode="before")
    @classmethod
    def _an_id_where_a_path_goes(cls, data: object) -> object:
        """`oracle archive c_...`: a chunk id given as the file is the id (a note's path ends in .md)."""
        if isinstance(data, dict) and data.get("id") is None and isinstance(data.get("file"), str) \
                and re.fullmatch(CHUNK_ID, data["file"].strip()):
            data = {**{k: v for k, v in data.items() if k != "file"}, "id": data["file"].strip()}
        return data

    @model_validator(mode="after")
    def _one_target(self) -> "_NoteTarget":
        if (self.id is None) == (self.file is None):
            raise ValueError("give exactly one of file (a note's path relative to the root) or id (a chunk id of it)")
        return self


class EditRequest(_NoteTarget):
    op: EditOp = Field(description="append, prepend (after the title), replace_section (under `heading`),"
                       " replace_text (the one `find`).")
    text: str = Field(max_length=MAX_PATTERN_CHARS, description="The markdown to add, or to put in place.")
    heading: str | None = Field(default=None, max_length=MAX_TITLE_CHARS,
                                description="replace_section: the section's heading text, without the #s.")
    find: str | None = Field(default=None, min_length=1, max_length=MAX_PATTERN_CHARS,
                             description="replace_text: the exact text to replace; it must occur once in the body.")

    @field_validator("text", "find")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("contains NUL bytes; send plain text")
        return value

    @model_validator(mode="after")
    def _op_arguments(self) -> "EditRequest":
        if self.op == "replace_section" and not (self.heading and self.heading.strip()):
            raise ValueError("replace_section needs heading: the text of the heading whose section to replace")
        if self.op == "replace_text" and self.find is None:
            raise ValueError("replace_text needs find: the exact text to replace")
        if self.op in ("append", "prepend") and not self.text.strip():
            raise ValueError(f"{self.op}: text is empty; give the markdown to add")
        if self.op != "replace_section" and self.heading is not None:
            raise ValueError("heading is only for op=replace_section")
        if self.op != "replace_text" and self.find is not None:
            raise ValueError("find is only for op=replace_text")
        return self


class EditResult(BaseModel):
    source_file: NoteText
    op: str
    previous_hash: str = Field(description="The note's file_hash before the edit.")
    file_hash: str = Field(description="The note's file_hash now: pass it as expected_hash to edit it again.")
    chunk_ids: list[str] = Field(description="The note's sections as indexed now (before this call returned).")
    author: str | None = Field(default=None, description="The named token that made the edit (team mode).")
    warnings: list[NoteText] = Field(default_factory=list)


class ArchiveRequest(_NoteTarget):
    reason: str | None = Field(default=None, max_length=MAX_NOTE_CHARS, description="Why it is retired.")


class ArchiveResult(BaseModel):
    source_file: NoteText
    archived_to: NoteText = Field(
        description="Where the file is now, relative to the root (out of the index; never deleted).")
    file_hash: str
    removed_chunks: int = Field(description="How many sections left the index.")
    author: str | None = None
    reason: str | None = None
    warnings: list[NoteText] = Field(default_factory=list)
