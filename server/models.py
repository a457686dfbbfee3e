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
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValueError("concepts must be a list of strings or a comma-separated string")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError("each concept must be a string")
        tag = " ".join(item.strip().lstrip("#").split()).lower()
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
