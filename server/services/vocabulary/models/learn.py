"""oracle_learn and oracle_consult: writing a learning, and guidance for a decision."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle_server.services.vocabulary.models.base import (
    NoteText,
    Request,
    Triplet,
    Variants,
    WhereBrief,
    _concepts_schema,
    one_line,
    split_concepts,
)
from oracle_server.services.vocabulary.models.search import SupersededBy

MAX_PATTERN_CHARS = 50_000
MAX_TITLE_CHARS = 200
MAX_CONCEPTS = 20
MAX_LEARN_RELATIONS = 50


LearnConcepts = Annotated[list[str], _concepts_schema(MAX_CONCEPTS)]


class LearnRequest(Request):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS, description="The learning, in markdown.")
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS,
                              description="A short title (default: the first line).")
    concepts: LearnConcepts = Field(default_factory=list, max_length=MAX_CONCEPTS,
                                    description="Tags: a list or a comma string.")
    source: str | None = Field(default=None, max_length=500, description="Where it came from (session, PR, URL).")
    project: str | None = Field(default=None, max_length=200)
    relations: list[Triplet] = Field(
        default_factory=list, max_length=MAX_LEARN_RELATIONS,
        description='Relations it states: {subject, predicate, object}, [s, p, o] or "s | p | o".',
    )
    idempotency_key: str | None = Field(
        default=None, min_length=8, max_length=200, pattern=r"^[\x21-\x7e]+$",
        description="A unique key (a UUID): a retry with it returns the learning saved the first time.",
    )
    revises: str | None = Field(
        default=None, min_length=1, max_length=1000,
        description="A note (path or chunk id) this learning supersedes once saved; needs expected_hash.")
    expected_hash: str | None = Field(
        default=None, min_length=12, max_length=64, pattern=r"^[0-9a-fA-F]+$",
        description="revises' file_hash as you read it: a conflict, nothing saved, if it changed since.")
    allow_duplicate: bool = Field(default=False, description="Save even if a learning says the same text.")

    @field_validator("concepts", mode="before")
    @classmethod
    def _concepts(cls, value: object) -> list[str]:
        tags = split_concepts(value)
        if any(len(t) > 64 for t in tags):
            raise ValueError("each concept must be at most 64 characters")
        return tags

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("pattern is empty: write the learning itself (what you found and when it applies)")
        if "\x00" in value:
            raise ValueError("pattern contains NUL bytes; send plain text")
        return value

    @field_validator("title", "source", "project")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return one_line(value)

    @model_validator(mode="after")
    def _revision(self) -> "LearnRequest":
        if (self.revises is None) != (self.expected_hash is None):
            raise ValueError("revises and expected_hash go together: the note this learning replaces, and its"
                             " file_hash as you read it (oracle_read)")
        return self


class NearDuplicate(BaseModel):
    id: str
    title: NoteText
    source_file: NoteText
    similarity: float


class LearnResult(BaseModel):
    id: str
    chunk_ids: list[str]
    file: str
    title: str
    concepts: list[str]
    embedded: bool
    warnings: list[NoteText] = Field(default_factory=list)
    near_duplicates: list[NearDuplicate] = Field(default_factory=list)
    replayed: bool = Field(default=False, description="True when an idempotency key had already saved this learning:"
                           " nothing new was written.")
    author: str | None = Field(default=None, description="The named token that wrote it (team mode), as its"
                               " frontmatter's author: says.")
    supersedes: str | None = Field(default=None, description="With revises: the note this learning now supersedes.")


class ConsultRequest(Request):
    model_config = ConfigDict(extra="forbid")

    decision: str = Field(min_length=1, max_length=2_000, description="The decision you are about to make.")
    context: str | None = Field(default=None, max_length=10_000, description="What you know about the situation.")
    budget_tokens: int | None = Field(default=None, ge=100, le=8000, description="Guidance size in tokens "
                                      "(default: 15% of context_window, else 1200).")
    context_window: int | None = Field(
        default=None, ge=1_000, le=10_000_000,
        description="Your context window in tokens: the budget is 15% of it; under 30,000, principles only.")
    where: WhereBrief = None
    variants: Variants = Field(
        default_factory=list,
        description="Other phrasings of the decision, searched too.")

    @field_validator("decision")
    @classmethod
    def _decision(cls, value: str) -> str:
        if not value.replace("\x00", "").strip():
            raise ValueError("decision is empty: describe the choice you are about to make")
        return value


class Source(BaseModel):
    id: str
    type: str
    title: NoteText
    heading: NoteText
    source_file: NoteText
    line_start: int
    line_end: int
    content_hash: str
    score: float
    text: NoteText
    truncated: bool = False
    superseded_by: SupersededBy | None = None
    stale: bool = Field(default=False, description="Past its freshness window (last_verified / review_after, "
                        "[freshness] in oracle.toml): check it before relying on it.")
    stale_since: str | None = Field(default=None, description="When stale: YYYY-MM-DD the note fell due for review.")
    last_verified: str | None = Field(default=None, description="YYYY-MM-DD the note was last verified, if it says.")


class ConsultResult(BaseModel):
    decision: str
    principles: list[Source]
    learnings: list[Source]
    guidance: str
    tokens_used: int
    budget_tokens: int = Field(description="The budget the guidance was built within.")
    budget_from: Literal["budget_tokens", "context_window", "default"] = Field(
        default="default", description="Where the budget came from: given, 15% of context_window, or the default.")
    mode: Literal["full", "core"] = Field(
        default="full", description="full: principles and learnings; core: principles only (context_window under "
        "30,000 tokens).")
    warnings: list[NoteText] = Field(default_factory=list)
    working_set_id: str = Field(default="", description="SHA-256 of the canonical JSON of what this consultation used"
                                " (decision, context, budget, sources' ids and hashes in order, guidance, index state);"
                                " oracle_verify(working_set_id=...) says later whether it still reproduces.")
