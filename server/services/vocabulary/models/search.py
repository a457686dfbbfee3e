"""oracle_search: the request, its hits and their score breakdown, the page."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from oracle_indexer.notes.parse import MAX_TERM_CHARS
from oracle_server.services.capabilities.search.query import MAX_QUERY_CHARS
from oracle_server.services.vocabulary.models.base import (
    LANG_CODE,
    MAX_LIMIT,
    ConceptList,
    Detail,
    DocType,
    Fusion,
    NoteText,
    Request,
    SearchMode,
    Triplet,
    Variants,
    Where,
    check_date_range,
    one_line,
    split_concepts,
)


class SearchRequest(Request):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for, in plain words.")
    type: DocType = Field(default="all", description="Only notes of this type.")
    limit: int = Field(default=5, ge=1, le=MAX_LIMIT, description="Hits per page.")
    offset: int = Field(default=0, ge=0, le=10_000, description="Hits to skip.")
    mode: SearchMode = Field(default="hybrid",
                             description="hybrid (keyword + semantic), fts (keyword) or vector (semantic).")
    concepts: ConceptList = Field(default_factory=list, description="Keep hits carrying any of these concepts.")
    project: str | None = Field(default=None, max_length=200, description="Only notes of this project.")
    date_from: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$",
                                  description="YYYY-MM-DD: notes dated on or after.")
    date_to: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$",
                                description="YYYY-MM-DD: notes dated on or before.")
    unit: Literal["note", "section"] | None = Field(
        default=None,
        description="note (default): one hit per note; section: one per section.",
    )
    group_by_file: bool | None = Field(default=None, description="Older unit: true = note, false = section.")
    fusion: Fusion | None = Field(default=None, description="How the two legs are fused (default: the measured best).")
    subject: str | None = Field(default=None, max_length=MAX_TERM_CHARS,
                                description="Notes stating a relation with this subject first.")
    predicate: str | None = Field(default=None, max_length=MAX_TERM_CHARS, description="... with this predicate.")
    object: str | None = Field(default=None, max_length=MAX_TERM_CHARS, description="... with this object.")
    lang: str | None = Field(default=None, max_length=35,
                             description="Only notes in this language (en, th, ...).")
    prefer_fresh: bool = Field(default=False, description="Stale notes (past their freshness window) last.")
    fresh_only: bool = Field(default=False, description="Leave out stale notes.")
    where: Where = None
    variants: Variants = Field(
        default_factory=list,
        description="Other phrasings (the notes' words and language), searched with the query.")
    detail: Detail | None = Field(
        default=None, description="brief (MCP's default): hits to read and cite; full: also ranking and sections.")

    @field_validator("lang")
    @classmethod
    def _lang(cls, value: str | None) -> str | None:
        """`zh-TW`, `ZH` -> `zh`: notes are filed under their primary language code (indexer/notes/language.py).
        Anything else is kept as written, for the search to refuse naming the accepted form and the languages
        the notes are in (issue 40: `--lang thai` answered with the raw regex; the model cannot see the index)."""
        if not value or not value.strip():
            return None
        value = value.strip()
        return value[:2].lower() if LANG_CODE.fullmatch(value) else value

    @field_validator("concepts", mode="before")
    @classmethod
    def _concepts(cls, value: Any) -> list[str]:  # `object` is a field here
        return split_concepts(value)

    @field_validator("subject", "predicate", "object")
    @classmethod
    def _relation_terms(cls, value: str | None) -> str | None:
        return one_line(value)

    @model_validator(mode="after")
    def _date_range(self) -> "SearchRequest":
        check_date_range(self.date_from, self.date_to)
        return self

    @property
    def by_note(self) -> bool:
        """Notes are the unit unless asked otherwise (`unit=section`, or the older `group_by_file=false`)."""
        if self.unit is not None:
            return self.unit == "note"
        return self.group_by_file is not False

    @property
    def relation_pattern(self) -> tuple[str | None, str | None, str | None] | None:
        pattern = (self.subject, self.predicate, self.object)
        return pattern if any(pattern) else None

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.replace("\x00", "").strip():
            raise ValueError("query is empty: pass a few words describing what you are looking for")
        return value

    @field_validator("date_from", "date_to")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        """The pattern's \\d also matches other scripts' digits, and 2026-99-99 matches it too."""
        if value is None:
            return None
        try:
            if not value.isascii():
                raise ValueError
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a calendar date: use YYYY-MM-DD, e.g. 2026-01-31") from None
        return value


class ScoreBreakdown(BaseModel):
    fused: float  # the final score: relevance x feedback_factor x superseded_factor x language_factor
    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_similarity: float | None = None
    relevance: float | None = None  # the fused relevance before feedback, supersession and language
    helpful: int = 0
    misleading: int = 0
    feedback_factor: float = 1.0
    superseded_factor: float = 1.0
    language_factor: float = 1.0  # below 1 for a note in another language than the query's (scoring.prefer_languages)
    # bm25 for the query expanded with words of the best notes (server/services/capabilities/search/expansion.py)
    expansion_score: float | None = None
    rerank_score: float | None = None  # the cross-encoder's score ([rerank]); the hit's score blends it with `fused`


class SupersededBy(BaseModel):
    """Where a superseded note's successor is. `id` is empty when the successor is not indexed."""

    id: str
    source_file: NoteText
    title: NoteText
    reason: NoteText | None = None
    via: Literal["tool", "frontmatter"]


class MatchedSection(BaseModel):
    id: str
    heading: NoteText
    line_start: int
    line_end: int
    score: float


class DuplicateRef(BaseModel):
    id: str
    source_file: NoteText


class TranslationRef(BaseModel):
    """The same page in another language, folded under the hit in the asker's language."""

    id: str
    source_file: NoteText
    lang: str | None = None


class Hit(BaseModel):
    id: str
    type: str
    kind: str
    title: NoteText
    heading: NoteText
    snippet: NoteText
    source_file: NoteText
    line_start: int
    line_end: int
    concepts: list[NoteText]
    project: NoteText | None
    date: NoteText | None
    content_hash: str
    score: float
    found_by: list[str]
    breakdown: ScoreBreakdown
    also_in_file: list[str] = Field(default_factory=list, description="Ids of the note's other matching sections.")
    sections: list[MatchedSection] = Field(
        default_factory=list, description="The note's other matching sections, best first (unit=note)."
    )
    duplicates: list[DuplicateRef] = Field(
        default_factory=list, description="Other hits with identical content, folded into this one."
    )
    weak: bool = Field(default=False, description="The match is weak: probably not what was asked for.")
    superseded_by: SupersededBy | None = None
    relations: list[Triplet] = Field(default_factory=list,
                                     description="Relations of this note that matched the search's triplet.")
    lang: str | None = Field(default=None, description="The note's language (ISO 639-1), when known.")
    stale: bool = Field(default=False, description="Past its freshness window (last_verified / review_after, "
                        "[freshness] in oracle.toml): check it before relying on it.")
    stale_since: str | None = Field(default=None, description="When stale: YYYY-MM-DD the note fell due for review.")
    last_verified: str | None = Field(default=None, description="YYYY-MM-DD the note was last verified, if it says.")
    phrasings: list[int] | None = Field(default=None, description="Phrasings whose words it holds (0: the query).")
    translations: list[TranslationRef] = Field(
        default_factory=list, description="The same page in other languages, folded into this one."
    )


class SearchMeta(BaseModel):
    mode: str
    fusion: str | None
    took_ms: float
    fts_matches: int
    vector_matches: int
    unit: Literal["note", "section"] = "note"
    semantic_weight: float | None = Field(default=None, description="The vector leg's weight in this fusion.")
    semantic_model: str | None = Field(
        default=None, description="The embedding model that ranked the vector leg: the English one, or the "
        "multilingual one for a query mostly in other scripts (Thai, CJK, ...).")
    weak: bool = Field(default=False, description="Even the best match is weak: nothing relevant was found.")
    languages: list[str] | None = Field(
        default=None, description="The query's language(s), preferred over the others' notes in a base translated "
        "into several languages (null: no preference).")
    expanded_with: list[NoteText] = Field(
        default_factory=list, description="Words of the first ranking's best notes added to a second keyword "
        "query (hybrid search): how the answer's own vocabulary was found for a question phrased otherwise.")
    reranked_by: str | None = Field(
        default=None, description="The cross-encoder that reordered the first results ([rerank] in oracle.toml);"
        " null when none is configured or it failed (see warnings).")
    warnings: list[NoteText] = Field(default_factory=list)
    store: str = ""  # in an outage of the team database: "working copy (... unreachable since ...)" (docs/team.md)
    phrasings: int | None = None  # with variants: how many distinct phrasings ran
    sampled_variants: list[NoteText] | None = Field(default=None, description="Variants your model wrote (sampling).")


class SearchResult(BaseModel):
    # `try` is a Python keyword: the attribute is `try_`, the field's name in JSON (and its schema) is `try`.
    model_config = ConfigDict(serialize_by_alias=True)

    query: str
    hits: list[Hit]
    total: int
    limit: int
    offset: int
    meta: SearchMeta
    try_: list[NoteText] = Field(
        default_factory=list, serialization_alias="try", validation_alias=AliasChoices("try", "try_"),
        description="When the page is weak or empty: words and titles of the"
        " notes nearest to the query (their concepts, titles, headings; the query's script first), to ask with next.")
