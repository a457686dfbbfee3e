"""oracle_reflect, oracle_stats, oracle_list, oracle_concepts: browsing what the base holds."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from oracle_server.services.vocabulary.models.base import MAX_LIMIT, DocType, NoteText, Request, WhereBrief


class Document(BaseModel):
    id: str
    type: str
    kind: str
    title: NoteText
    heading: NoteText
    content: NoteText
    source_file: NoteText
    line_start: int
    line_end: int
    concepts: list[NoteText]
    project: NoteText | None
    date: NoteText | None
    content_hash: str


class ReflectRequest(Request):
    model_config = ConfigDict(extra="forbid")
    type: Literal["all", "principle", "learning"] = Field(default="all", description="Which kind of note to draw.")


class StatsRequest(Request):
    """oracle_stats takes no arguments; a model still, so an unknown one is refused like anywhere else."""

    model_config = ConfigDict(extra="forbid")


class ListRequest(Request):
    model_config = ConfigDict(extra="forbid")

    type: DocType = Field(default="all", description="Only notes of this type.")
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="Entries per page.")
    offset: int = Field(default=0, ge=0, le=1_000_000)  # unbounded, 2**63 overflowed SQLite: a 500
    unit: Literal["note", "section"] | None = Field(
        default=None, description="note (default): one entry per note; section: every section.")
    group_by_file: bool | None = Field(default=None, description="Older unit: true = note, false = section.")
    where: WhereBrief = None

    @property
    def by_note(self) -> bool:
        """Notes are the unit unless asked otherwise (`unit=section`, or the older `group_by_file=false`)."""
        if self.unit is not None:
            return self.unit == "note"
        return self.group_by_file is not False


class ListItem(BaseModel):
    id: str
    type: str
    title: NoteText
    heading: NoteText
    source_file: NoteText
    date: NoteText | None
    concepts: list[NoteText]
    sections: int = Field(default=1, description="Sections in the note (unit=note), else 1.")


class ListResult(BaseModel):
    items: list[ListItem]
    total: int = Field(description="Notes (unit=note) or sections (unit=section) in all.")
    limit: int
    offset: int
    unit: Literal["note", "section"] = "note"
    warnings: list[NoteText] = Field(default_factory=list, description="Why the page is empty, when it is.")


class ConceptsRequest(Request):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=50, ge=1, le=500, description="How many concepts, most used first.")
    type: DocType = Field(default="all", description="Count only notes of this type.")


class ConceptCount(BaseModel):
    concept: NoteText
    count: int = Field(description="Notes carrying the concept (in any of their sections).")


class ConceptsResult(BaseModel):
    concepts: list[ConceptCount]
    total: int
