"""Frontmatter fields and `where` filters as pure functions (indexer/notes/fields.py): what a note's frontmatter
stores, how a filter is read (hostile input included), the one matching rule, and the [frontmatter] schema.
No database: the stores only store and fetch what these functions decide on."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle_indexer.notes.fields import (
    MAX_FIELD_VALUES,
    MAX_NOTE_FIELDS,
    MAX_VALUE_CHARS,
    FieldCondition,
    FieldValue,
    FrontmatterSchema,
    NoteSelection,
    WhereError,
    canonical_where,
    matches,
    note_fields,
    parse_where,
    select_notes,
    value_key,
)
from oracle_indexer.notes.parse import parse_markdown


def values(field: str, *items: str, is_list: bool = True) -> list[FieldValue]:
    return [FieldValue(field, v, value_key(v), is_list) for v in items]


# -- what a note stores ----------------------------------------------------------------------------
def test_every_kind_of_frontmatter_value_is_stored_as_text_with_a_key() -> None:
    meta = {"status": "Draft", "industries": ["Finance", "health", "finance"], "reviewed": dt.date(2026, 3, 1),
            "at": dt.datetime(2026, 3, 1, 9, 30), "draft": True, "priority": 2, "owner": None, "empty": [],
            "author": {"name": "Ana", "team": {"name": "core", "deep": {"x": 1}}}, "mixed": ["a", {"b": 1}, ["c"]]}
    stored, warnings = note_fields(meta)
    assert warnings == []
    got = [(v.field, v.value, v.key, v.is_list) for v in stored]
    assert got == [
        ("status", "Draft", "draft", False),
        ("industries", "Finance", "finance", True), ("industries", "health", "health", True),  # one finance
        ("reviewed", "2026-03-01", "2026-03-01", False),
        ("at", "2026-03-01T09:30:00", "2026-03-01t09:30:00", False),
        ("draft", "true", "true", False), ("priority", "2", "2", False),
        ("author.name", "Ana", "ana", False), ("author.team.name", "core", "core", False),
        ("mixed", "a", "a", True),  # nested items in a list are not filterable; depth 3 stops author.team.deep
    ]


def test_a_parsed_note_carries_its_fields() -> None:
    parsed = parse_markdown("---\ntitle: T\nindustries: ['*']\n---\n# T\n\n## A\ntext\n", "learnings/t.md", "learning")
    assert [(f.field, f.value, f.is_list) for f in parsed.fields] == [("title", "T", False), ("industries", "*", True)]


def test_keys_fold_case_width_and_spaces() -> None:
    assert value_key("  Ｆｉｎａｎｃｅ   Team ") == "finance team" == value_key("FINANCE team")


def test_limits_keep_one_generated_note_from_filling_the_index() -> None:
    meta = {f"f{i}": "x" for i in range(MAX_NOTE_FIELDS + 5)}
    meta["f0"] = [str(i) for i in range(MAX_FIELD_VALUES + 20)]
    meta["f1"] = "y" * (MAX_VALUE_CHARS * 3)
    stored, warnings = note_fields(meta)
    assert len({v.field for v in stored}) == MAX_NOTE_FIELDS
    assert sum(v.field == "f0" for v in stored) == MAX_FIELD_VALUES
    assert len(next(v for v in stored if v.field == "f1").value) == MAX_VALUE_CHARS
    assert any("f0" in w and "values" in w for w in warnings)
    assert any(f"{MAX_NOTE_FIELDS + 5} frontmatter fields" in w for w in warnings)


# -- reading a filter ------------------------------------------------------------------------------
def test_the_shorthands_and_the_operator_form_mean_the_same() -> None:
    short = parse_where({"status": "Draft", "industries": ["finance", "Health"], "priority": 2, "draft": True})
    long = parse_where({"status": {"eq": "draft"}, "industries": {"in": ["health", "finance"]},
                        "priority": {"eq": "2"}, "draft": {"eq": "true"}})
    assert short == long
    assert [c.field for c in short] == ["draft", "industries", "priority", "status"]  # sorted: deterministic
    assert canonical_where(short)["industries"] == {"in": ["finance", "health"]}
    assert parse_where(json.dumps({"status": "draft"})) == parse_where({"status": "draft"})
    assert parse_where(canonical_where(short)) == short  # the canonical form reads back to itself
    assert parse_where(None) == () and parse_where("") == () and parse_where({}) == ()


@pytest.mark.parametrize("where, says", [
    ({"a": {"like": "x"}}, "unknown operator 'like'; operators: eq, in, exists, before, after"),
    ({"a": {"in": {"nested": {"deeper": 1}}}}, "values must be strings, numbers or booleans"),
    ({"a": [["x"]]}, "values must be strings, numbers or booleans, not list"),
    ({"a": {"eq": ["x", "y"]}}, "one value; use 'in' for a list"),
    ({"a": []}, "an empty list matches nothing"),
    ({"a": ""}, "an empty value matches nothing"),
    ({"a": None}, "values must be strings"),
    ({"a": {}}, "give an operator"),
    ({"a": {"exists": None, "after": None}}, "every operator given is null"),
    ({"a": {"exists": "yes"}}, "true or false"),
    ({"a": {"exists": False, "eq": "x"}}, "exists false means the note has no value"),
    ({"a": {"after": "2026-02-30"}}, "a calendar date YYYY-MM-DD"),
    ({"a": {"before": 20260101}}, "a calendar date YYYY-MM-DD"),
    ({"a": {"after": "2026-05-01", "before": "2026-01-01"}}, "nothing can match"),
    ({"a": ["v"] * 101}, "at most 100 values"),
    ({f"f{i}": "x" for i in range(21)}, "at most 20 fields"),
    ({1: "x"}, "field names must be strings, not int"),
    ({"": "x"}, "a field name is 1-100 printable characters"),
    ({"a\x00b": "x"}, "printable characters"),
    ({"x" * 101: "x"}, "printable characters"),
    ({"a": "x", " a ": "y"}, "each field once"),
    (["status", "draft"], "an object of field -> value"),
    ("status=draft", "not a JSON object"),
    ("[" * 100_000, "at most 10000 characters"),
    ("[" * 9_000 + "]" * 9_000, "at most 10000 characters"),
    ("[" * 4_000 + "]" * 4_000, "not a JSON object"),  # too deep for the JSON parser: refused, not a crash
    ('{"a": ' * 3000 + "1" + "}" * 3000, "at most 10000 characters"),
    ({"a": "x" * 201}, "at most 200 characters"),
])
def test_hostile_filters_get_a_message_that_says_what_to_send(where: object, says: str) -> None:
    with pytest.raises(WhereError) as err:
        parse_where(where)
    assert says in str(err.value)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
                    max_leaves=30))
def test_any_json_value_is_read_or_refused_with_a_where_error(where: object) -> None:
    try:
        conditions = parse_where(where)
    except WhereError:
        return
    assert parse_where(canonical_where(conditions)) == conditions


# -- the matching rule -----------------------------------------------------------------------------
def test_equals_and_any_of_compare_keys() -> None:
    held = values("industries", "Finance", "health")
    assert matches(held, FieldCondition("industries", any_of=("finance",)))
    assert matches(held, FieldCondition("industries", any_of=("retail", "health")))
    assert not matches(held, FieldCondition("industries", any_of=("retail",)))
    assert not matches([], FieldCondition("industries", any_of=("finance",)))


def test_a_star_in_a_notes_values_is_a_literal_only_the_filter_has_a_wildcard() -> None:
    """Issue 39: a note holding `status: ["*"]` passed every `where status=...` filter."""
    for is_list in (True, False):
        star = values("status", "*", is_list=is_list)
        assert not matches(star, FieldCondition("status", any_of=("approved",)))
        assert not matches(star, FieldCondition("status", any_of=("anything", "else")))
        assert matches(star, FieldCondition("status", any_of=("*",)))  # the filter's star: any value
    held = values("status", "draft")
    assert matches(held, FieldCondition("status", any_of=("*",)))
    assert matches(held, FieldCondition("status", any_of=("final", "*")))
    assert not matches([], FieldCondition("status", any_of=("*",)))  # any value, not no value


def test_exists_true_and_false() -> None:
    assert matches(values("owner", "ana"), FieldCondition("owner", exists=True))
    assert not matches([], FieldCondition("owner", exists=True))
    assert matches([], FieldCondition("owner", exists=False))
    assert not matches(values("owner", "ana"), FieldCondition("owner", exists=False))


def test_dates_are_strictly_before_or_after_and_one_value_must_hold_both() -> None:
    day = values("reviewed", "2026-03-01", is_list=False)
    assert matches(day, FieldCondition("reviewed", after="2026-02-28"))
    assert not matches(day, FieldCondition("reviewed", after="2026-03-01"))  # strict
    assert matches(day, FieldCondition("reviewed", before="2026-03-02"))
    assert not matches(day, FieldCondition("reviewed", before="2026-03-01"))
    stamp = values("reviewed", "2026-03-01T09:30:00", is_list=False)  # a datetime compares by its day
    assert matches(stamp, FieldCondition("reviewed", after="2026-02-28", before="2026-03-02"))
    two = values("seen", "2026-01-01", "2026-12-01")  # neither value lies inside the window
    assert not matches(two, FieldCondition("seen", after="2026-05-01", before="2026-06-01"))
    assert not matches(values("reviewed", "soon", "*"), FieldCondition("reviewed", after="2000-01-01"))


ROWS = [
    ("a.md", FieldValue("industries", "finance", "finance", True)),
    ("a.md", FieldValue("owner", "ana", "ana", False)),
    ("b.md", FieldValue("industries", "*", "*", True)),
    ("c.md", FieldValue("industries", "retail", "retail", True)),
]


def test_select_notes_answers_with_the_passing_notes_or_the_failing_ones() -> None:
    assert select_notes(ROWS, parse_where({"industries": "finance"})) == NoteSelection(only=frozenset({"a.md"}))
    assert select_notes(ROWS, parse_where({"industries": "*"})) == NoteSelection(only=frozenset({"a.md", "b.md", "c.md"}))
    both = parse_where({"industries": "finance", "owner": {"exists": True}})
    assert select_notes(ROWS, both) == NoteSelection(only=frozenset({"a.md"}))
    # only `exists: false`: a note with none of the fields passes, so the answer is who fails
    assert select_notes(ROWS, parse_where({"owner": {"exists": False}})) == NoteSelection(excluded=frozenset({"a.md"}))
    mixed = parse_where({"owner": {"exists": False}, "industries": ["retail"]})
    assert select_notes(ROWS, mixed) == NoteSelection(only=frozenset({"c.md"}))
    assert select_notes(ROWS, ()) == NoteSelection()
    assert select_notes([], parse_where({"x": "y"})) == NoteSelection(only=frozenset())


# -- the frontmatter schema ------------------------------------------------------------------------
def test_schema_reports_missing_and_disallowed_fields() -> None:
    schema = FrontmatterSchema.parse({"required": ["owner", "status"], "allowed": {"status": ["Draft", "final"],
                                     "industries": ["finance", "*"]}}, "oracle.toml", ("principle", "learning", "retro"))
    held = values("status", "draft", is_list=False) + values("industries", "finance", "Retail", "*")
    assert schema.check(held, "learning") == [
        "frontmatter field 'owner' is required ([frontmatter] in oracle.toml); add it",
        "frontmatter field 'industries': 'Retail' not allowed ([frontmatter.allowed] in oracle.toml: finance, *)",
    ]
    assert schema.digest and schema.digest != FrontmatterSchema().digest == ""
    only_learnings = FrontmatterSchema.parse({"required": ["owner"], "types": ["learning"]}, "x", ("learning", "retro"))
    assert only_learnings.check([], "retro") == [] and only_learnings.check([], "learning")


@pytest.mark.parametrize("table, says", [
    ([1], "must be a table"),
    ({"require": ["x"]}, "unknown key 'require' in [frontmatter]"),
    ({"required": "owner"}, "required must be a list of names"),
    ({"types": ["memo"]}, "'memo' is not a note type"),
    ({"allowed": {"status": []}}, "non-empty list of values"),
    ({"allowed": ["status"]}, "must be a table"),
])
def test_a_bad_schema_is_refused_naming_the_key(table: object, says: str) -> None:
    with pytest.raises(ValueError) as err:
        FrontmatterSchema.parse(table, "oracle.toml:3", ("principle", "learning", "retro"))
    assert says in str(err.value) and "oracle.toml:3" in str(err.value)
