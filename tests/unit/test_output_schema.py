"""The lean output schemas MCP tools publish (server/registry/schemas.py): the same fields as the result models,
valid JSON Schema, cheap to check, and still refusing a result of the wrong shape."""

from __future__ import annotations

import json

import pytest
from jsonschema.validators import validator_for

from oracle_server.services.models import Hit, ScoreBreakdown, SearchMeta, SearchResult
from oracle_server.registry.schemas import lean_schema
from oracle_server.registry.tools import TOOLS


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_tool_schema_is_valid_and_names_the_model_fields(tool):
    schema = lean_schema(tool.result)
    validator_for(schema).check_schema(schema)
    full = tool.result.model_json_schema(mode="serialization")
    assert set(schema["properties"]) == set(full["properties"])
    assert set(schema.get("required", ())) == set(full.get("required", ()))
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert not _generated_titles(schema)  # a field may be named "title"; pydantic's titles are gone


def _generated_titles(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["title"]] if isinstance(node.get("title"), str) else []
        return found + [t for v in node.values() for t in _generated_titles(v)]
    if isinstance(node, list):
        return [t for v in node for t in _generated_titles(v)]
    return []


def _page() -> dict:
    hit = Hit(id="c_1", type="learning", kind="section", title="T", heading="H", snippet="s", source_file="a.md",
              line_start=1, line_end=3, concepts=["x"], project=None, date=None, content_hash="ab" * 8, score=0.5,
              found_by=["fts"], breakdown=ScoreBreakdown(fused=0.5, bm25_rank=1), also_in_file=["c_2"])
    meta = SearchMeta(mode="fts", fusion=None, took_ms=1.0, fts_matches=1, vector_matches=0)
    return SearchResult(query="q", hits=[hit], total=1, limit=5, offset=0, meta=meta).model_dump(mode="json")


def test_search_page_validates_and_a_wrong_shape_is_refused():
    schema = lean_schema(SearchResult)
    validator = validator_for(schema)(schema)
    page = _page()
    assert not list(validator.iter_errors(page))
    for path, value in ((("hits", 0), "not a hit"), (("hits",), {}), (("meta", "took_ms"), "fast"),
                        (("meta", "unit"), "page"), (("total",), None)):
        bad = json.loads(json.dumps(page))
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        assert list(validator.iter_errors(bad)), path
    del page["hits"][0]["content_hash"]
    assert list(validator.iter_errors(page))


def test_a_hit_is_an_object_with_its_required_fields_and_nothing_an_agent_never_reads():
    hit = lean_schema(SearchResult)["properties"]["hits"]["items"]
    assert hit["type"] == "object" and "properties" not in hit  # no schema per field, re-checked for every hit
    assert set(hit["required"]) == {n for n, f in Hit.model_fields.items() if f.is_required()}
    # the result's own metadata keeps its schema (it is one object, not one per hit), without descriptions
    took = lean_schema(SearchResult)["properties"]["meta"]["properties"]["took_ms"]
    assert took == {"type": "number"}


def _keys(node: object) -> list[tuple[str, object]]:
    if isinstance(node, dict):
        return [(k, v) for k, v in node.items()] + [kv for v in node.values() for kv in _keys(v)]
    if isinstance(node, list):
        return [kv for v in node for kv in _keys(v)]
    return []


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_published_schemas_have_no_type_arrays_titles_or_null_defaults(tool):
    """The MCP Inspector flags `"type": [..., "null"]` as unportable (27 of them before); pydantic's titles and
    `"default": null` are bytes in every agent's context that say nothing."""
    from oracle_server.registry.tools import input_schema

    for schema in (lean_schema(tool.result), input_schema(tool)):
        validator_for(schema).check_schema(schema)
        pairs = _keys(schema)
        assert not [v for k, v in pairs if k == "type" and isinstance(v, list)], tool.name
        assert not _generated_titles(schema)
        assert "$ref" not in json.dumps(schema)
    inputs = input_schema(tool)
    assert not [k for k, v in _keys(inputs) if k == "default" and v is None]
    assert inputs["additionalProperties"] is False
    assert set(inputs["properties"]) == set(tool.request.model_fields)
    assert set(inputs.get("required", ())) == {n for n, f in tool.request.model_fields.items() if f.is_required()}


def test_a_nullable_result_field_still_refuses_the_wrong_value():
    """A nullable field without a type array still refuses a value of the wrong type (meta.fusion), and null
    where the field is not nullable (meta.unit)."""
    schema = lean_schema(SearchResult)
    validator = validator_for(schema)(schema)
    page = _page()
    for field, good, bad in (("fusion", None, 3), ("fusion", "rrf", ["rrf"]), ("unit", "note", None)):
        page["meta"][field] = good
        assert not list(validator.iter_errors(page)), (field, good)
        page["meta"][field] = bad
        assert list(validator.iter_errors(page)), (field, bad)
        page = _page()
