"""`variants` through every surface: a real MCP client on the real server (in-memory transport), the real
FastAPI app (Starlette's TestClient), the CLI's parser (`--also`), and the service, on one small real index.
A note that only a variant's words reach is found, says which phrasings' words it holds, and is the same everywhere;
a search without variants is byte for byte what it was."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from _corpus import indexed_oracle
from oracle_server.services.vocabulary.models import ConsultRequest, SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search
from tests.contract.test_where_surfaces import cli, http, mcp

NOTES = {
    "learnings/2026-03-01_rollout-502.md": "---\ntags: [deploy]\n---\n# Bad gateway during rollouts\n\n## Lesson\n"
                                           "Drain connections before the load balancer swaps the pods; otherwise "
                                           "clients see 502 bad gateway while the release goes out.\n",
    "learnings/2026-03-02_redis.md": "# Redis on a laptop\n\n## Setup\nRun the setup script to start redis locally.\n",
    "learnings/2026-03-03_cache.md": "# Cache warming\n\n## Lesson\nWarm the cache after every release so users wait less.\n",
    "principles/craft.md": "# Craft\n\n### Ship small\n- Small releases go out more often and break less.\n",
}
ROLLOUT = "learnings/2026-03-01_rollout-502.md"
QUESTION = "users get errors whenever we ship a new version"
VARIANTS = ["502 bad gateway rollout", "drain connections load balancer"]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = indexed_oracle(tmp_path_factory, "variants-surfaces", NOTES)
    yield o
    o.close()


def _files(hits: list) -> list[str]:
    return [h["source_file"] if isinstance(h, dict) else h.source_file for h in hits]


def test_variants_find_the_note_the_question_alone_misses_first(oracle: Any) -> None:
    alone = run_search(oracle, SearchRequest(query=QUESTION, limit=4, mode="fts"))
    assert ROLLOUT not in _files(alone.hits)[:1]
    fused = run_search(oracle, SearchRequest(query=QUESTION, variants=VARIANTS, limit=4, mode="fts"))
    assert _files(fused.hits)[0] == ROLLOUT
    top = fused.hits[0]
    assert top.phrasings == [1, 2] and fused.meta.phrasings == 3
    assert all(h.phrasings is not None and set(h.phrasings) <= {0, 1, 2} for h in fused.hits)
    assert [h.score for h in fused.hits] == sorted((h.score for h in fused.hits), reverse=True)


def test_hybrid_variants_are_deterministic_and_page_like_a_search(oracle: Any) -> None:
    ask = SearchRequest(query=QUESTION, variants=VARIANTS, limit=2)
    one, two = run_search(oracle, ask), run_search(oracle, ask)
    assert one.model_dump(exclude={"meta": {"took_ms"}}) == two.model_dump(exclude={"meta": {"took_ms"}})
    assert _files(one.hits)[0] == ROLLOUT
    page2 = run_search(oracle, SearchRequest(query=QUESTION, variants=VARIANTS, limit=2, offset=2))
    whole = run_search(oracle, SearchRequest(query=QUESTION, variants=VARIANTS, limit=4))
    assert _files(one.hits) + _files(page2.hits) == _files(whole.hits)


def test_without_variants_or_with_only_repeats_the_result_is_unchanged(oracle: Any) -> None:
    plain = run_search(oracle, SearchRequest(query=QUESTION, limit=4, mode="fts"))
    repeated = run_search(oracle, SearchRequest(query=QUESTION, variants=[QUESTION.upper(), f"  {QUESTION} "],
                                                limit=4, mode="fts"))
    drop = {"meta": {"took_ms"}}
    assert plain.model_dump(exclude=drop) == repeated.model_dump(exclude=drop)
    assert plain.meta.phrasings is None and all(h.phrasings is None for h in plain.hits)


@pytest.mark.parametrize("variants, said", [
    (["a", "b", "c", "d", "e"], "at most 4"),
    (["x" * 201], "at most 200"),
    (["   "], "at least 1"),
])
def test_bad_variants_are_refused_with_a_clear_message(variants: list[str], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        SearchRequest(query="q", variants=variants)
    with pytest.raises(ValidationError, match=said):
        ConsultRequest(decision="q", variants=variants)


def test_the_same_variants_give_the_same_notes_over_mcp_http_and_cli(oracle: Any) -> None:
    args = {"query": QUESTION, "variants": VARIANTS, "mode": "fts", "limit": 3}
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", args))
    assert not over_mcp.is_error
    hits = over_mcp.structured_content["hits"]
    assert hits[0]["source_file"] == ROLLOUT and hits[0]["phrasings"] == [1, 2]
    assert "words of v1+v2" in over_mcp.content[0].text
    over_http = http(oracle, "/api/search", {"query": QUESTION, "variants": VARIANTS, "mode": "fts", "limit": 3})
    assert over_http.status_code == 200 and _files(over_http.json()["hits"]) == _files(hits)
    over_cli = cli(oracle, "search", *QUESTION.split(), "--also", VARIANTS[0], "--also", VARIANTS[1],
                   "--mode", "fts", "--limit", "3")
    assert _files(over_cli.hits) == _files(hits)
    too_many = http(oracle, "/api/search", {"query": "q", "variants": ["a", "b", "c", "d", "e"]})
    assert too_many.status_code == 422


def test_consult_uses_the_variants_too(oracle: Any) -> None:
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_consult", {
        "decision": "how should we ship the new version", "variants": ["502 bad gateway rollout drain"]}))
    assert not over_mcp.is_error
    assert ROLLOUT in [s["source_file"] for s in over_mcp.structured_content["learnings"]]
