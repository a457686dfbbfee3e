"""Request and response models: the parts every tool shares (bounds, the one text check, Request, Triplet, filters)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from oracle_indexer.notes.concepts import tag_parts
from oracle_indexer.notes.fields import FieldCondition, WhereError, canonical_where, parse_where
from oracle_indexer.notes.parse import MAX_TERM_CHARS, relation_term
from oracle_server.services.vocabulary.boundary import defuse_data, defuse_markers

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
# Other phrasings of a search's need (server/services/capabilities/search/variants.py): bounded, so the one question
# they make stays within the keyword and token limits; each stripped, and an empty one refused rather than searched as
# nothing.
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
