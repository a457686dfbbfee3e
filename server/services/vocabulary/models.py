"""Request and response models shared by every adapter: one definition of each parameter's bounds."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
import re
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints,
                      WithJsonSchema, field_validator, model_validator)

from oracle_indexer.notes.concepts import tag_parts
from oracle_indexer.notes.fields import FieldCondition, WhereError, canonical_where, parse_where
from oracle_indexer.notes.parse import MAX_TERM_CHARS, relation_term
from oracle_server.services.vocabulary.boundary import defuse_data, defuse_markers
from oracle_server.services.capabilities.search.query import MAX_QUERY_CHARS

DocType = Literal["all", "principle", "learning", "retro", "note"]
LANG_CODE = re.compile(r"[A-Za-z]{2}(?:[-_][A-Za-z0-9]{2,4})?")  # en, th, zh-TW, pt_BR: what `lang` accepts
SearchMode = Literal["hybrid", "fts", "vector"]
Fusion = Literal["rrf", "weighted"]
# How much of each search hit an answer carries (server/registry/shapes.py): `brief` is what an agent needs to
# judge and cite a hit, `full` adds how it was ranked. Not given: the surface's default (brief over MCP).
Detail = Literal["brief", "full"]
MAX_LIMIT = 100
# Text a note's author wrote (titles, headings, snippets, bodies, paths from frontmatter), as every result
# model returns it: nothing in it may read as a consult boundary marker (server/services/vocabulary/boundary.py).
NoteText = Annotated[str, AfterValidator(defuse_markers)]
# Objects holding such text (frontmatter, log rows): every string in them, keys included, at any depth, defused.
NoteData = Annotated[dict, AfterValidator(defuse_data)]


def _concepts_schema(max_items: int | None = None) -> WithJsonSchema:
    """Concepts arrive as a list or a comma-separated string (split_concepts): the schema clients see says
    both, so a client that checks arguments against it does not refuse what the server accepts."""
    array: dict = {"type": "array", "items": {"type": "string"}}
    if max_items is not None:
        array["maxItems"] = max_items
    return WithJsonSchema({"anyOf": [array, {"type": "string"}]})


ConceptList = Annotated[list[str], _concepts_schema()]


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
        if not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:  # pydantic checks str fields, but not values a before-validator returns
                raise ValueError("each concept must be valid Unicode text (it contains a lone surrogate)") from None
        for tag in tag_parts(item):  # the indexer's rule: ?concepts=a,b, a;b and ?concepts=a&concepts=b agree
            if tag not in out:
                out.append(tag)
    return out


def one_line(value: str | None) -> str | None:
    """Collapse whitespace and drop NULs; an empty result means the value was not given."""
    if value is None:
        return None
    cleaned = " ".join(value.replace("\x00", " ").split())
    return cleaned or None


def _text_fault(text: str) -> str | None:
    """What makes `text` unfit to store: "nul" (PostgreSQL's text cannot hold a NUL; no note needs one),
    "surrogate" (a lone UTF-16 surrogate has no UTF-8 form), or None."""
    if "\x00" in text:
        return "nul"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "surrogate"
    return None


def text_fault(value: object, path: str = "") -> tuple[str, str] | None:
    """(where, what) for the first string in `value` (a request's input or its validated fields: text, mappings,
    lists, models) that no log, file or database can store (`_text_fault`), as a dotted path ("" for the value
    itself); None when every string is fine."""
    if isinstance(value, str):
        fault = _text_fault(value)
        return None if fault is None else (path, fault)
    if isinstance(value, BaseModel):
        value = dict(value)
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (fault := _text_fault(key)) is not None:
                return (path or "a field name", fault)
            found = text_fault(item, inner)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple, set, frozenset)):
        for n, item in enumerate(value):
            found = text_fault(item, f"{path}.{n}" if path else str(n))
            if found is not None:
                return found
    return None


_REFUSED = {
    "surrogate": "holds a lone surrogate (such as \\ud800), which is not text: send valid Unicode as UTF-8",
    "nul": "holds a NUL character (\\u0000), which no note, log or team database keeps: leave it out",
}


def unstorable_text(value: object, fields: Sequence[str] = ()) -> str | None:
    """Why `value` (arguments of a tool or a prompt) is refused, naming where, or None when its text is fine. A
    field name that cannot be printed is named by the fields there are (`fields`: the request's)."""
    found = text_fault(value)
    if found is None:
        return None
    where, fault = found
    known = f" (the fields are: {', '.join(fields)})" if where == "a field name" and fields else ""
    return f"{where or 'the input'}{known} {_REFUSED[fault]}; nothing was done"


def _refuse_unstorable_text(value: object, fields: Sequence[str] = ()) -> None:
    problem = unstorable_text(value, fields)
    if problem is not None:
        raise ValueError(problem)


class Request(BaseModel):
    """Every tool's request. One check of all its text, at every edge (MCP, HTTP, CLI, prompts): a lone UTF-16
    surrogate or a NUL is refused, naming the field (issue 39: a surrogate in a `where` value reached the usage
    log, which could not write it, and stats, logs and every later search log failed until a restart; issue 45: a
    NUL in search's `project` or history's `file` was a 500 on PostgreSQL, whose text cannot hold one, and a
    consult's kept it out of the shared log). Checked on the input, and again on the validated fields, where text
    decoded inside a field (the `where` filter as JSON text) shows."""

    @model_validator(mode="before")
    @classmethod
    def _text_in(cls, data: object) -> object:
        _refuse_unstorable_text(data, list(cls.model_fields))
        return data

    @model_validator(mode="after")
    def _text_out(self) -> "Request":
        _refuse_unstorable_text(self)
        return self


class Triplet(BaseModel):
    """(subject, predicate, object). Also accepted as a 3-item list or the string "subject | predicate | object"."""

    model_config = ConfigDict(extra="forbid")

    subject: NoteText = Field(min_length=1, max_length=MAX_TERM_CHARS)
    predicate: NoteText = Field(min_length=1, max_length=MAX_TERM_CHARS)
    object: NoteText = Field(min_length=1, max_length=MAX_TERM_CHARS)

    @model_validator(mode="before")
    @classmethod
    def _shapes(cls, value: Any) -> Any:  # `object` is a field here
        if isinstance(value, str):
            parts = [p.strip() for p in value.split("|")]
            if len(parts) != 3:
                raise ValueError('a relation string must look like "subject | predicate | object"')
            value = parts
        if isinstance(value, (list, tuple)):
            if len(value) != 3:
                raise ValueError("a relation needs exactly three parts: subject, predicate, object")
            return dict(zip(("subject", "predicate", "object"), value))
        return value

    @field_validator("subject", "predicate", "object", mode="before")
    @classmethod
    def _term(cls, value: Any) -> Any:  # `object` is a field here
        if not isinstance(value, str):
            return value  # pydantic reports the wrong type
        term = relation_term(value.replace("\x00", " "))
        if term is None:
            raise ValueError(f"must be non-empty text of at most {MAX_TERM_CHARS} characters")
        return term


# The filter's full grammar (values, lists, operators) is the validator's (indexer/notes/fields.py parse_where) and
# the description's; the schema states its bounds only: every tool's schema is read into an agent's context
# (issue 40: tools/list under 16 KB, tests/contract/test_registry.py).
_WHERE_SCHEMA: dict = {
    "anyOf": [{"type": "object", "maxProperties": 20}, {"type": "string", "maxLength": 10_000}, {"type": "null"}],
    "default": None,
    "description": (
        'Frontmatter fields the notes must all have: a value, a list (any of) or {"eq"|"in"|"exists"|"before"|'
        '"after"}; "*": any value. E.g. {"status": "draft", "reviewed": {"after": "2026-01-01"}}.'
    ),
}


def _where(value: object) -> dict | None:
    """A where filter (mapping or JSON text) in its canonical form: {field: {in, exists, after, before}},
    sorted by field, so equal filters are equal requests (logs, working sets) and the service reads it back
    with `where_conditions` without checking again."""
    if value is None:
        return None
    try:
        conditions = parse_where(value)
    except WhereError as exc:
        raise ValueError(str(exc)) from None
    return canonical_where(conditions) or None


# A dict to Python, any JSON to a client: FastAPI's query-string models take it as one string parameter.
Where = Annotated[Any, BeforeValidator(_where), WithJsonSchema(_WHERE_SCHEMA)]

MAX_VARIANTS = 4
MAX_VARIANT_CHARS = 200
# Other phrasings of a search's need (server/services/capabilities/search/variants.py): bounded, so the one question they make
# stays within the keyword and token limits; each stripped, and an empty one refused rather than searched as nothing.
Variants = Annotated[
    list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_VARIANT_CHARS)]],
    Field(max_length=MAX_VARIANTS),
]
# The same filter where a tool's schema only points at search's (every tool's schema is read into an agent's
# context: tests/contract/test_registry.py holds tools/list under 31 KB); validated by the same rule.
_WHERE_BRIEF: dict = {
    "anyOf": [{"type": "object", "maxProperties": 20}, {"type": "string", "maxLength": 10_000}, {"type": "null"}],
    "default": None,
    "description": 'Frontmatter filter, as oracle_search\'s: {"status": "draft"}.',
}
WhereBrief = Annotated[Any, BeforeValidator(_where), WithJsonSchema(_WHERE_BRIEF)]


def where_conditions(where: dict | None) -> tuple[FieldCondition, ...]:
    """The validated (canonical) where filter of a request as conditions for the store."""
    return parse_where(where) if where else ()


def past_the_end(offset: int, total: int, limit: int) -> str:
    """Why a page is empty when there are results: the offset is past the last of them."""
    last = (total - 1) // limit * limit
    return (f"offset {offset} is past the end: {total} in all, so the last page starts at offset {last}")


def check_date_range(date_from: str | None, date_to: str | None) -> None:
    if date_from and date_to and date_from > date_to:
        raise ValueError(f"date_from {date_from} is after date_to {date_to}: nothing can match; swap them")


class SearchRequest(Request):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for, in plain words.")
    type: DocType = Field(default="all", description="Only notes of this type.")
    limit: int = Field(default=5, ge=1, le=MAX_LIMIT, description="Hits per page.")
    offset: int = Field(default=0, ge=0, le=10_000, description="Hits to skip.")
    mode: SearchMode = Field(default="hybrid", description="hybrid (keyword + semantic), fts (keyword) or vector (semantic).")
    concepts: ConceptList = Field(default_factory=list, description="Keep hits carrying any of these concepts.")
    project: str | None = Field(default=None, max_length=200, description="Only notes of this project.")
    date_from: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD: notes dated on or after.")
    date_to: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD: notes dated on or before.")
    unit: Literal["note", "section"] | None = Field(
        default=None,
        description="note (default): one hit per note; section: one per section.",
    )
    group_by_file: bool | None = Field(default=None, description="Older unit: true = note, false = section.")
    fusion: Fusion | None = Field(default=None, description="How the two legs are fused (default: the measured best).")
    subject: str | None = Field(default=None, max_length=MAX_TERM_CHARS, description="Notes stating a relation with this subject first.")
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
    expansion_score: float | None = None  # bm25 for the query expanded with words of the best notes (server/services/capabilities/search/expansion.py)
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
    relations: list[Triplet] = Field(default_factory=list, description="Relations of this note that matched the search's triplet.")
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
        default_factory=list, serialization_alias="try", validation_alias=AliasChoices("try", "try_"), description="When the page is weak or empty: words and titles of the"
        " notes nearest to the query (their concepts, titles, headings; the query's script first), to ask with next.")


MAX_PATTERN_CHARS = 50_000
MAX_TITLE_CHARS = 200
MAX_CONCEPTS = 20
MAX_LEARN_RELATIONS = 50


LearnConcepts = Annotated[list[str], _concepts_schema(MAX_CONCEPTS)]


class LearnRequest(Request):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS, description="The learning, in markdown.")
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS, description="A short title (default: the first line).")
    concepts: LearnConcepts = Field(default_factory=list, max_length=MAX_CONCEPTS, description="Tags: a list or a comma string.")
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


# -- editing and retiring notes (server/services/capabilities/edit.py) ---------------------------------------------------------
EditOp = Literal["append", "prepend", "replace_section", "replace_text"]
ExpectedHash = Annotated[str, Field(
    min_length=12, max_length=64, pattern=r"^[0-9a-fA-F]+$",
    description="The note's file_hash as you read it (oracle_read): a conflict if it changed since.")]


class _NoteTarget(Request):
    """One existing note, by a chunk id of it or its path, with the hash the caller last read."""

    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(default=None, max_length=1000, description="The note's path relative to the knowledge root.")
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
    archived_to: NoteText = Field(description="Where the file is now, relative to the root (out of the index; never deleted).")
    file_hash: str
    removed_chunks: int = Field(description="How many sections left the index.")
    author: str | None = None
    reason: str | None = None
    warnings: list[NoteText] = Field(default_factory=list)


# -- the team store's history (issue 38: indexer/worker/workcopy.py, server/services/capabilities/history.py) -------------------
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
