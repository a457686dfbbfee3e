"""A search's `detail` through every surface (issue 40, the context an agent pays): a real MCP client on the real
server (in-memory transport), the real FastAPI app, and the CLI's JSON, on one small real index. Over MCP an answer
is brief by default: each hit's id, title, heading, snippet, file, lines, short hash and score in the structured
content, one line per hit in the text, no resource links; `detail=full` brings back the score breakdown, found_by,
sections and links. HTTP and the CLI answer in full unless asked. The notes and their order never depend on it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

import pytest

from _corpus import indexed_oracle
from oracle_server.registry.shapes import BRIEF_HIT
from tests.contract.test_where_surfaces import http, mcp

NOTES = {
    "learnings/2026-03-01_rollout-502.md": "---\ntags: [deploy]\n---\n# Bad gateway during rollouts\n\n## Lesson\n"
                                           "**Drain** connections before the load balancer swaps the pods, as "
                                           "[[0001-use-postgres|the database ADR]] says, every rollout.\n",
    "learnings/2026-03-03_cache.md": "# Cache warming\n\n## Lesson\nWarm the cache after every rollout.\n",
    "principles/craft.md": "# Craft\n\n### Ship small\n- Small rollouts go out more often and break less.\n",
}
ASK = {"query": "rollout drain connections", "mode": "fts", "limit": 10}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = indexed_oracle(tmp_path_factory, "detail-surfaces", NOTES)
    yield o
    o.close()


def _ids(hits: list[dict]) -> list[str]:
    return [h["id"] for h in hits]


def test_mcp_answers_brief_by_default_and_full_when_asked(oracle: Any) -> None:
    brief = mcp(oracle, lambda c: c.call_tool("oracle_search", ASK))
    full = mcp(oracle, lambda c: c.call_tool("oracle_search", {**ASK, "detail": "full"}))
    assert not brief.is_error and not full.is_error
    hits, whole = brief.structured_content["hits"], full.structured_content["hits"]
    assert _ids(hits) == _ids(whole) and len(hits) == 3  # the same notes, in the same order
    assert all(set(BRIEF_HIT) <= set(h) and "breakdown" not in h and "found_by" not in h for h in hits)
    assert whole[0]["breakdown"]["bm25_rank"] and whole[0]["found_by"] and "sections" in whole[0]
    assert whole[0]["content_hash"].startswith(hits[0]["content_hash"]) and len(whole[0]["content_hash"]) == 64
    top = hits[0]
    assert top["snippet"].startswith("Drain connections") and "the database ADR" in top["snippet"]
    assert "**" not in top["snippet"] and "[[" not in top["snippet"]  # plain text, not markdown
    text = brief.content[0].text
    assert [b.type for b in brief.content] == ["text"] and top["snippet"] not in text
    assert f"1. Bad gateway during rollouts › Lesson — {top['source_file']}:" in text and top["id"] in text
    assert [b.type for b in full.content].count("resource_link") == 3 and top["snippet"] in full.content[0].text
    assert brief.structured_content["total"] == full.structured_content["total"]
    assert brief.structured_content["meta"].keys() == full.structured_content["meta"].keys() - {"expanded_with"}
    assert len(json.dumps(brief.model_dump(mode="json", by_alias=True, exclude_none=True))) < len(
        json.dumps(full.model_dump(mode="json", by_alias=True, exclude_none=True))) / 2


def test_http_and_the_cli_answer_in_full_unless_asked(oracle: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from oracle_server.cli import spec as clispec
    from oracle_server.cli.commands import run_tool
    from tests.contract.test_registry import cli_parser

    full = http(oracle, "/api/search", ASK).json()
    brief = http(oracle, "/api/search", {**ASK, "detail": "brief"})
    assert brief.status_code == 200 and _ids(brief.json()["hits"]) == _ids(full["hits"])
    assert "breakdown" in full["hits"][0] and "breakdown" not in brief.json()["hits"][0]
    spec = clispec.derive()["search"]
    for argv, has_breakdown in ((["search", "rollout", "drain", "connections", "--mode", "fts", "--json"], True),
                                (["search", "rollout", "drain", "--mode", "fts", "--detail", "brief", "--json"], False)):
        args: argparse.Namespace = cli_parser().parse_args(argv)
        assert run_tool(oracle, args, spec) == 0
        out = json.loads(capsys.readouterr().out)
        assert ("breakdown" in out["hits"][0]) is has_breakdown
    args = cli_parser().parse_args(["search", "rollout", "drain", "--mode", "fts", "--detail", "brief"])
    assert run_tool(oracle, args, spec) == 0
    assert "Bad gateway during rollouts" in capsys.readouterr().out  # the person's rendering reads a brief hit too
