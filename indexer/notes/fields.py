"""Frontmatter fields as filters: what a note's fields hold, what a `where` filter asks, and whether a note
matches (pure functions, no database), plus the optional frontmatter schema of oracle.toml.

Every frontmatter field is stored at index time (the store's `note_fields`: one row per value), so a filter
never re-reads a file. A value is kept as written (for completions) and by a *key* (NFKC, case-folded,
spaces collapsed) that filters compare, so `Finance`, `finance` and `FINANCE` are one value. Nested mappings
are flattened to dotted names (`author.name`); lists of scalars are one row per item.

A `where` filter names fields and says, for each, what the note must hold (every field must hold):

    {"industries": "finance"}                          equals (a scalar value)
    {"status": ["draft", "review"]}                    any of
    {"owner": {"exists": true}}                        has a value (false: has none)
    {"reviewed": {"after": "2026-01-01", "before": "2026-07-01"}}   a date strictly between
    {"status": {"in": ["draft"], "exists": true}}      the operator form; eq and in are the same test

Only the filter may use a wildcard: `{"industries": "*"}` (or `*` among the values of an any-of) asks for any
value, as `{"exists": true}` does. A `*` in a note's own values is a literal, never a wildcard: a note holding
`status: ["*"]` was kept by every `where status=...` filter (issue 39), so a note could claim any status.
The matching rule lives here once (`matches`, `select_notes`); the stores only store and fetch rows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from oracle_indexer.notes.freshness import parse_day

WILDCARD = "*"
OPERATORS = ("eq", "in", "exists", "before", "after")
MAX_WHERE_FIELDS = 20  # fields one filter may name
MAX_WHERE_VALUES = 100  # values one any-of may list
MAX_FIELD_CHARS = 100  # a field name (dotted path included)
MAX_VALUE_CHARS = 200  # a value kept for filtering; longer text is prose, not metadata
MAX_NOTE_FIELDS = 64  # fields stored per note (after flattening)
MAX_FIELD_VALUES = 100  # values stored per field
MAX_FLATTEN_DEPTH = 3  # `a.b.c`; deeper mappings are not filterable
MAX_WHERE_JSON_CHARS = 10_000  # a where filter sent as a JSON string (HTTP query, CLI option)
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class FieldValue:
    """One value of one frontmatter field of a note, as stored."""

    field: str
    value: str  # as written (a date as YYYY-MM-DD, true/false, numbers as YAML read them)
    key: str  # what filters compare: value_key(value)
    is_list: bool  # the field is a list


def value_key(text: str) -> str:
    """The comparison form of a value: NFKC, case-folded, inner whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def value_text(value: object) -> str | None:
    """A scalar frontmatter (or filter) value as text; None for what is not a scalar (a list, a mapping,
    null) or is empty. Dates print as YYYY-MM-DD (a datetime as its ISO form), booleans as true/false."""
    if value is None or isinstance(value, (dict, list, tuple)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    text = " ".join(str(value).replace("\x00", " ").split())
    return text or None


# Over complexity 10 on purpose: one walk over the frontmatter, each limit (depth, names, values, length) where it
# applies.
def note_fields(meta: Mapping[str, object]) -> tuple[list[FieldValue], list[str]]:  # noqa: C901
    """Every filterable value of a note's frontmatter, in field order, and warnings for what was cut.

    Scalars are one value, lists of scalars one value per item (items that are not scalars are left out),
    mappings are flattened to dotted names down to MAX_FLATTEN_DEPTH. Values longer than MAX_VALUE_CHARS are
    cut, and a note keeps at most MAX_NOTE_FIELDS fields of at most MAX_FIELD_VALUES values each: the limits
    keep one generated note from filling the index with rows nobody filters on."""
    out: list[FieldValue] = []
    warnings: list[str] = []
    names: list[str] = []

    def walk(prefix: str, node: Mapping[str, object], depth: int) -> None:
        for raw_name, value in node.items():
            name = f"{prefix}{raw_name}"
            if isinstance(value, Mapping):
                if depth < MAX_FLATTEN_DEPTH:
                    walk(f"{name}.", value, depth + 1)
                continue
            if not name.strip() or len(name) > MAX_FIELD_CHARS:
                continue
            items = list(value) if isinstance(value, (list, tuple)) else [value]
            texts = [t for t in map(value_text, items) if t is not None]
            if not texts:
                continue
            if len(names) >= MAX_NOTE_FIELDS:
                names.append(name)  # counted, not stored
                continue
            names.append(name)
            if len(texts) > MAX_FIELD_VALUES:
                warnings.append(f"frontmatter field {name!r} has {len(texts)} values; the first {MAX_FIELD_VALUES}"
                                " are filterable")
            seen: set[str] = set()
            for text in texts[:MAX_FIELD_VALUES]:
                text = text[:MAX_VALUE_CHARS]
                key = value_key(text)
                if key and key not in seen:
                    seen.add(key)
                    out.append(FieldValue(name, text, key, isinstance(value, (list, tuple))))

    walk("", meta, 1)
    if len(names) > MAX_NOTE_FIELDS:
        warnings.append(f"{len(names)} frontmatter fields; the first {MAX_NOTE_FIELDS} are filterable")
    return out, warnings


# -- where filters ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldCondition:
    """What one field must hold. Every part given must hold: `any_of` (keys; the filter's own `*` asks for
    any value), `exists`, and a date strictly `after` / `before` (ISO days) held by one and the same value."""

    field: str
    any_of: tuple[str, ...] = ()
    exists: bool | None = None
    after: str | None = None
    before: str | None = None

    def as_json(self) -> dict[str, object]:
        """The canonical operator form (what a validated request holds)."""
        out: dict[str, object] = {}
        if self.any_of:
            out["in"] = list(self.any_of)
        if self.exists is not None:
            out["exists"] = self.exists
        if self.after:
            out["after"] = self.after
        if self.before:
            out["before"] = self.before
        return out


class WhereError(ValueError):
    """A where filter that cannot be read; the message says what to send instead."""


def _scalar_filter_value(field_name: str, value: object) -> str:
    if isinstance(value, (dict, list, tuple)) or value is None:
        raise WhereError(f"where[{field_name!r}]: values must be strings, numbers or booleans, not"
                         f" {type(value).__name__}")
    text = value_text(value)
    if text is None:
        raise WhereError(f"where[{field_name!r}]: an empty value matches nothing; use {{\"exists\": false}} for"
                         " notes without the field")
    if len(text) > MAX_VALUE_CHARS:
        raise WhereError(f"where[{field_name!r}]: a value is at most {MAX_VALUE_CHARS} characters")
    return value_key(text)


def _values(field_name: str, value: object) -> tuple[str, ...]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise WhereError(f"where[{field_name!r}]: an empty list matches nothing; give at least one value")
    if len(items) > MAX_WHERE_VALUES:
        raise WhereError(f"where[{field_name!r}]: at most {MAX_WHERE_VALUES} values")
    return tuple(sorted({_scalar_filter_value(field_name, v) for v in items}))


def _day(field_name: str, op: str, value: object) -> str:
    if not isinstance(value, str) or not _DAY.match(value.strip()) or parse_day(value.strip()) is None:
        raise WhereError(f"where[{field_name!r}][{op!r}]: a calendar date YYYY-MM-DD, e.g. 2026-01-31")
    return value.strip()


# Over complexity 10 on purpose: one where[] field's checks, each with its own message, in the order a caller reads
# them.
def _condition(field_name: object, spec: object) -> FieldCondition:  # noqa: C901
    if not isinstance(field_name, str):
        raise WhereError(f"where: field names must be strings, not {type(field_name).__name__}")
    name = field_name.strip()
    if not name or len(name) > MAX_FIELD_CHARS or any(unicodedata.category(c)[0] == "C" for c in name):
        raise WhereError(f"where: a field name is 1-{MAX_FIELD_CHARS} printable characters (got {field_name[:40]!r})")
    if not isinstance(spec, Mapping):
        return FieldCondition(name, any_of=_values(name, spec))
    unknown = [k for k in spec if k not in OPERATORS]
    if unknown:
        raise WhereError(f"where[{name!r}]: unknown operator {str(unknown[0])[:40]!r}; operators: "
                         f"{', '.join(OPERATORS)} (or give the value, or a list of values, directly)")
    if not spec:
        raise WhereError(f"where[{name!r}]: give an operator ({', '.join(OPERATORS)})")
    any_of: set[str] = set()
    for op in ("eq", "in"):
        if op in spec:
            if op == "eq" and isinstance(spec[op], (list, tuple)):
                raise WhereError(f"where[{name!r}]['eq']: one value; use 'in' for a list")
            any_of.update(_values(name, spec[op]))
    exists = spec.get("exists")
    if exists is not None and not isinstance(exists, bool):
        raise WhereError(f"where[{name!r}]['exists']: true or false")
    after = _day(name, "after", spec["after"]) if spec.get("after") is not None else None
    before = _day(name, "before", spec["before"]) if spec.get("before") is not None else None
    if not any_of and exists is None and not after and not before:
        raise WhereError(f"where[{name!r}]: every operator given is null; give a value to one of"
                         f" {', '.join(OPERATORS)}")
    if exists is False and (any_of or after or before):
        raise WhereError(f"where[{name!r}]: exists false means the note has no value, so no other operator can hold")
    if after and before and after >= before:
        raise WhereError(f"where[{name!r}]: after {after} is not before {before}: nothing can match")
    return FieldCondition(name, any_of=tuple(sorted(any_of)), exists=exists, after=after, before=before)


def parse_where(where: object) -> tuple[FieldCondition, ...]:
    """A where filter (a mapping, or its JSON text) as conditions sorted by field, or WhereError.

    Anything a client can send is answered with a message: a non-mapping, too many fields, non-string names,
    unknown operators, nesting beyond `field -> operator -> value(s)`, a date that is not a date."""
    if where is None:
        return ()
    if isinstance(where, str):
        if len(where) > MAX_WHERE_JSON_CHARS:
            raise WhereError(f"where: at most {MAX_WHERE_JSON_CHARS} characters of JSON")
        try:
            where = json.loads(where) if where.strip() else {}
        except (ValueError, RecursionError):
            raise WhereError('where: not a JSON object; e.g. {"status": "draft", "industries": ["finance", "health"]}'
                             ) from None
    if not isinstance(where, Mapping):
        raise WhereError('where: an object of field -> value; e.g. {"status": "draft"}')
    if len(where) > MAX_WHERE_FIELDS:
        raise WhereError(f"where: at most {MAX_WHERE_FIELDS} fields")
    conditions = [_condition(name, spec) for name, spec in where.items()]
    names = [c.field for c in conditions]
    if len(set(names)) < len(names):
        raise WhereError("where: each field once (names are compared without surrounding spaces)")
    return tuple(sorted(conditions, key=lambda c: c.field))


def canonical_where(conditions: Sequence[FieldCondition]) -> dict[str, dict[str, object]]:
    return {c.field: c.as_json() for c in conditions}


def matches(values: Sequence[FieldValue], condition: FieldCondition) -> bool:
    """Whether a note whose values of `condition.field` are `values` meets the condition."""
    if condition.exists is False:
        return not values
    if not values:
        return False
    if condition.any_of and WILDCARD not in condition.any_of:  # the note's own `*` is a literal
        if not any(v.key in condition.any_of for v in values):
            return False
    if condition.after or condition.before:
        days = [d.isoformat() for d in (parse_day(v.value) for v in values) if d is not None]
        if not any((not condition.after or d > condition.after) and (not condition.before or d < condition.before)
                   for d in days):
            return False
    return True


@dataclass(frozen=True)
class NoteSelection:
    """The notes a where filter lets through: `only` (None: not restricted to a set) minus `excluded`."""

    only: frozenset[str] | None = None
    excluded: frozenset[str] = frozenset()


def select_notes(rows: Iterable[tuple[str, FieldValue]], conditions: Sequence[FieldCondition]) -> NoteSelection:
    """The notes meeting every condition, from (note, value) rows of the fields the conditions name.

    A note without any of those fields is absent from the rows; whether it passes is `matches` on no values
    (true only when every condition is `exists: false`). Then the answer is every note but those that fail
    (`excluded`), else only those that pass (`only`): either way no list of every note is needed."""
    by_note: dict[str, dict[str, list[FieldValue]]] = {}
    for note, value in rows:
        by_note.setdefault(note, {}).setdefault(value.field, []).append(value)

    def ok(fields: Mapping[str, Sequence[FieldValue]]) -> bool:
        return all(matches(fields.get(c.field, ()), c) for c in conditions)

    if not conditions:
        return NoteSelection()
    if ok({}):
        return NoteSelection(excluded=frozenset(n for n, f in by_note.items() if not ok(f)))
    return NoteSelection(only=frozenset(n for n, f in by_note.items() if ok(f)))


# -- the frontmatter schema of oracle.toml ---------------------------------------------------------
@dataclass(frozen=True)
class FrontmatterSchema:
    """`[frontmatter]` in oracle.toml: fields every note (of the listed types) must have, and the values
    some fields may take. Checked when a note is indexed; a violation is a warning on the note, reported by
    `oracle index` and counted by `oracle stats` like other frontmatter problems, never a refusal.

        [frontmatter]
        required = ["owner", "status"]
        types = ["principle", "learning"]      # optional: which note types are checked (default: all)
        [frontmatter.allowed]
        status = ["draft", "review", "final"]
        industries = ["finance", "health", "*"]
    """

    required: tuple[str, ...] = ()
    allowed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (field, allowed values as written), sorted
    types: tuple[str, ...] = ()  # empty: every type

    @property
    def active(self) -> bool:
        return bool(self.required or self.allowed)

    @property
    def digest(self) -> str:
        """Identifies the rules: a change re-checks every note (the index forgets its files' states)."""
        if not self.active:
            return ""
        text = json.dumps([self.required, self.allowed, self.types], sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def check(self, values: Sequence[FieldValue], doc_type: str) -> list[str]:
        """The note's violations, as warnings that say what to change."""
        if not self.active or (self.types and doc_type not in self.types):
            return []
        by_field: dict[str, list[FieldValue]] = {}
        for v in values:
            by_field.setdefault(v.field, []).append(v)
        out = [f"frontmatter field {name!r} is required ([frontmatter] in oracle.toml); add it"
               for name in self.required if name not in by_field]
        for name, allowed in self.allowed:
            keys = {value_key(a) for a in allowed}
            bad = [v.value for v in by_field.get(name, ()) if v.key not in keys]
            if bad:
                out.append(f"frontmatter field {name!r}: {', '.join(repr(b) for b in bad[:5])} not allowed"
                           f" ([frontmatter.allowed] in oracle.toml: {', '.join(allowed)})")
        return out

    @classmethod
    def parse(cls, value: object, where: str, known_types: Sequence[str]) -> FrontmatterSchema:
        """From `[frontmatter]` of oracle.toml; ValueError names the problem and the place."""
        if not isinstance(value, dict):
            raise ValueError(f"{where}: `frontmatter` must be a table ([frontmatter])")
        unknown = sorted(set(value) - {"required", "allowed", "types"})
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r} in [frontmatter]; known keys: allowed, required,"
                             " types")

        def names(key: str, items: object) -> tuple[str, ...]:
            if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
                raise ValueError(f"{where}: [frontmatter] {key} must be a list of names, e.g. {key} = [\"owner\"]")
            return tuple(dict.fromkeys(i.strip() for i in items))

        required = names("required", value.get("required", []))
        types = names("types", value.get("types", []))
        for t in types:
            if t not in known_types:
                raise ValueError(f"{where}: [frontmatter] types: {t!r} is not a note type ({', '.join(known_types)})")
        allowed_table = value.get("allowed", {})
        if not isinstance(allowed_table, dict):
            raise ValueError(f"{where}: [frontmatter.allowed] must be a table of field = [values]")
        allowed: list[tuple[str, tuple[str, ...]]] = []
        for name, items in allowed_table.items():
            if not isinstance(items, list) or not items or not all(value_text(i) for i in items):
                raise ValueError(f"{where}: [frontmatter.allowed] {name} must be a non-empty list of values,"
                                 f" e.g. {name} = [\"draft\", \"final\"]")
            allowed.append((name, tuple(value_text(i) or "" for i in items)))
        allowed.sort()
        return cls(required=required, allowed=tuple(allowed), types=types)
