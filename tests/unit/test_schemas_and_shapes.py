"""What `tools/list` and a search answer carry (issue 40, the context an agent pays), checked without a server:
the input schemas MCP publishes (server/registry/schemas.py) and the brief shape of a search result
(server/registry/shapes.py). The same over a real MCP client, HTTP and the CLI: tests/contract/test_detail_surfaces.py."""

from __future__ import annotations

import json

import pytest
from jsonschema.validators import validator_for

from oracle_server.registry.shapes import BRIEF_HIT, SHORT_HASH, brief_search, detail_of
from oracle_server.registry.tools import TOOLS, input_schema
from oracle_server.services.vocabulary.models import (DuplicateRef, Hit, ScoreBreakdown, SearchMeta, SearchRequest, SearchResult,
                                           SupersededBy)


def _keys(node: object) -> list[tuple[str, object]]:
    if isinstance(node, dict):
        return [(k, v) for k, v in node.items()] + [kv for v in node.values() for kv in _keys(v)]
    if isinstance(node, list):
        return [kv for v in node for kv in _keys(v)]
    return []


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_input_schemas_are_valid_and_carry_no_type_arrays_titles_or_null_defaults(tool):
    """The MCP Inspector flags `"type": [..., "null"]` as unportable (27 of them before); pydantic's titles and
    `"default": null` are bytes in every agent's context that say nothing; a parameter's parts (a list's entries,
    an object's fields) are not described again: the parameter's description says what they are."""
    schema = input_schema(tool)
    validator_for(schema).check_schema(schema)
    pairs = _keys(schema)
    assert not [v for k, v in pairs if k == "type" and isinstance(v, list)], tool.name
    assert not [v for k, v in pairs if k == "title" and isinstance(v, str)], tool.name
    assert "$ref" not in json.dumps(schema)
    assert not [k for k, v in pairs if k == "default" and v is None]
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(tool.request.model_fields)
    assert set(schema.get("required", ())) == {n for n, f in tool.request.model_fields.items() if f.is_required()}
    for name, prop in schema["properties"].items():
        inner = {k: v for k, v in prop.items() if k != "description"}
        assert not [k for k, v in _keys(inner) if k == "description" and isinstance(v, str)], (tool.name, name)


def _hit(n: int, **extra: object) -> Hit:
    return Hit(id=f"c_{n:020d}", type="learning", kind="section", title=f"T{n}", heading="H", snippet="s",
               source_file=f"learnings/n{n}.md", line_start=1, line_end=3, concepts=["x"], project=None, date=None,
               content_hash="ab" * 32, score=0.5 - n / 100, found_by=["fts"],
               breakdown=ScoreBreakdown(fused=0.5, bm25_rank=1), also_in_file=["c_2"], **extra)


def _result(*hits: Hit) -> SearchResult:
    meta = SearchMeta(mode="fts", fusion=None, took_ms=1.0, fts_matches=1, vector_matches=0)
    return SearchResult(query="q", hits=list(hits), total=len(hits), limit=5, offset=0, meta=meta)


def test_a_brief_hit_keeps_what_an_agent_judges_and_cites_and_what_calls_for_action():
    successor = SupersededBy(id="c_" + "9" * 20, source_file="learnings/new.md", title="New", via="tool")
    plain, flagged = _hit(1), _hit(2, weak=True, superseded_by=successor, stale=True, stale_since="2026-01-01",
                                   duplicates=[DuplicateRef(id="c_" + "3" * 20, source_file="b.md")], phrasings=[0, 2])
    data = brief_search(_result(plain, flagged))
    first, second = data["hits"]
    assert list(first) == list(BRIEF_HIT)  # nothing else: no breakdown, found_by, concepts, sections, defaults
    assert first["content_hash"] == "ab" * 8 and len(first["content_hash"]) == SHORT_HASH
    assert "ab" * 32 == plain.content_hash and plain.content_hash.startswith(first["content_hash"])
    assert second["weak"] is True and second["superseded_by"]["source_file"] == "learnings/new.md"
    assert second["stale"] and second["stale_since"] == "2026-01-01" and second["phrasings"] == [0, 2]
    assert second["duplicates"] == [{"id": "c_" + "3" * 20, "source_file": "b.md"}]
    assert "breakdown" not in second and "sections" not in second and "last_verified" not in second
    full = _result(plain, flagged).model_dump(mode="json")
    assert {k: v for k, v in data.items() if k not in ("hits", "meta")} == {
        k: v for k, v in full.items() if k not in ("hits", "meta")}
    assert data["meta"] == {k: v for k, v in full["meta"].items() if k != "expanded_with"}
    assert [h["id"] for h in data["hits"]] == [h["id"] for h in full["hits"]]


def test_the_detail_is_the_asked_one_else_the_surfaces_default():
    assert detail_of(SearchRequest(query="q"), "mcp") == "brief"
    assert detail_of(SearchRequest(query="q"), "http") == detail_of(SearchRequest(query="q"), "cli") == "full"
    assert detail_of(SearchRequest(query="q", detail="full"), "mcp") == "full"
    assert detail_of(SearchRequest(query="q", detail="brief"), "http") == "brief"
    search = next(t for t in TOOLS if t.name == "oracle_search")
    result = _result(_hit(1))
    assert "breakdown" not in search.dump(SearchRequest(query="q"), result, "mcp")["hits"][0]
    assert search.dump(SearchRequest(query="q"), result, "cli") == result.model_dump(mode="json")
