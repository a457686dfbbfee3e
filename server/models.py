"""Request and response models shared by every adapter: one definition of each parameter's bounds."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from server.query import MAX_QUERY_CHARS

DocType = Literal["all", "principle", "learning", "retro"]
SearchMode = Literal["hybrid", "fts", "vector"]
Fusion = Literal["rrf", "weighted"]
MAX_LIMIT = 100


def split_concepts(value: object) -> list[str]:
    """Concepts arrive as a list or a comma-separated string; both mean the same."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValueError("concepts must be a list of strings or a comma-separated string")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError("each concept must be a string")
        for part in item.split(","):  # ?concepts=a,b and ?concepts=a&concepts=b mean the same
            tag = " ".join(part.strip().lstrip("#").split()).lower()
            if tag and tag not in out:
                out.append(tag)
    return out


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for, in plain words.")
    type: DocType = "all"
    limit: int = Field(default=5, ge=1, le=MAX_LIMIT)
    offset: int = Field(default=0, ge=0, le=10_000)
    mode: SearchMode = "hybrid"
    concepts: list[str] = Field(default_factory=list, description="Keep hits carrying any of these concepts.")
    project: str | None = Field(default=None, max_length=200)
    date_from: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    date_to: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    group_by_file: bool = False
    fusion: Fusion | None = None

    @field_validator("concepts", mode="before")
    @classmethod
    def _concepts(cls, value: object) -> list[str]:
        return split_concepts(value)

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.replace("\x00", "").strip():
            raise ValueError("query is empty: pass a few words describing what you are looking for")
        return value


class ScoreBreakdown(BaseModel):
    fused: float
    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_similarity: float | None = None


class Hit(BaseModel):
    id: str
    type: str
    kind: str
    title: str
    heading: str
    snippet: str
    source_file: str
    line_start: int
    line_end: int
    concepts: list[str]
    project: str | None
    date: str | None
    content_hash: str
    score: float
    found_by: list[str]
    breakdown: ScoreBreakdown
    also_in_file: list[str] = Field(default_factory=list)


class SearchMeta(BaseModel):
    mode: str
    fusion: str | None
    took_ms: float
    fts_matches: int
    vector_matches: int
    warnings: list[str] = Field(default_factory=list)


class SearchResult(BaseModel):
    query: str
    hits: list[Hit]
    total: int
    limit: int
    offset: int
    meta: SearchMeta


MAX_PATTERN_CHARS = 50_000
MAX_TITLE_CHARS = 200
MAX_CONCEPTS = 20


class LearnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS, description="The learning, in markdown.")
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    concepts: list[str] = Field(default_factory=list, max_length=MAX_CONCEPTS)
    source: str | None = Field(default=None, max_length=500)
    project: str | None = Field(default=None, max_length=200)

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
        if value is None:
            return None
        cleaned = " ".join(value.replace("\x00", " ").split())
        return cleaned or None


class NearDuplicate(BaseModel):
    id: str
    title: str
    source_file: str
    similarity: float


class LearnResult(BaseModel):
    id: str
    chunk_ids: list[str]
    file: str
    title: str
    concepts: list[str]
    embedded: bool
    warnings: list[str] = Field(default_factory=list)
    near_duplicates: list[NearDuplicate] = Field(default_factory=list)


class ConsultRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: str = Field(min_length=1, max_length=2_000, description="The decision you are about to make.")
    context: str | None = Field(default=None, max_length=10_000)
    budget_tokens: int = Field(default=1200, ge=100, le=8000)

    @field_validator("decision")
    @classmethod
    def _decision(cls, value: str) -> str:
        if not value.replace("\x00", "").strip():
            raise ValueError("decision is empty: describe the choice you are about to make")
        return value


class Source(BaseModel):
    id: str
    type: str
    title: str
    heading: str
    source_file: str
    line_start: int
    line_end: int
    content_hash: str
    score: float
    text: str
    truncated: bool = False


class ConsultResult(BaseModel):
    decision: str
    principles: list[Source]
    learnings: list[Source]
    guidance: str
    tokens_used: int
    budget_tokens: int
    warnings: list[str] = Field(default_factory=list)


class Document(BaseModel):
    id: str
    type: str
    kind: str
    title: str
    heading: str
    content: str
    source_file: str
    line_start: int
    line_end: int
    concepts: list[str]
    project: str | None
    date: str | None
    content_hash: str


class ReflectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["all", "principle", "learning"] = "all"


class ListRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: DocType = "all"
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    offset: int = Field(default=0, ge=0)
    group_by_file: bool = False


class ListItem(BaseModel):
    id: str
    type: str
    title: str
    heading: str
    source_file: str
    date: str | None
    concepts: list[str]
    chunks: int = 1


class ListResult(BaseModel):
    items: list[ListItem]
    total: int
    limit: int
    offset: int


class ConceptsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=50, ge=1, le=500)
    type: DocType = "all"


class ConceptCount(BaseModel):
    concept: str
    count: int


class ConceptsResult(BaseModel):
    concepts: list[ConceptCount]
    total: int
