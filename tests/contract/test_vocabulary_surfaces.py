"""What the asking agent is told, through the generated surfaces (issue 37): a weak page's `try` over a real MCP
client on the real server object (structured content and text, checked against the published output schema),
the real HTTP app and the CLI's path; and the live instructions of an MCP handshake: how to ask, the notes'
languages, folders and concepts, within 2 KB, and new after the index changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _corpus import indexed_oracle, write
from tests.contract.test_where_surfaces import cli, http, mcp

NOTES = {
    "learnings/2026-03-01_readiness.md": "---\ntags: [deploy, readiness-probe]\n---\n# Route traffic only to ready"
                                        " containers\n\n## Rolling deploys\nThe balancer waits for the readiness"
                                        " probe before it routes requests.\n",
    "learnings/2026-03-02_ledger.md": "---\ntags: [ledger, payments]\n---\n# Ledger locks\n\n## Lesson\n"
                                     "Lock the ledger row before the payment queue settles it.\n",
    "principles/craft.md": "# Craft\n\n### Test with real parts\n- Real payment queues in tests, not mocks.\n",
}
OFF_TOPIC = "recipe for a sourdough starter"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = indexed_oracle(tmp_path_factory, "vocabulary-surfaces", NOTES)
    yield o
    o.close()


def test_a_weak_page_says_try_the_same_everywhere(oracle: Any) -> None:
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": OFF_TOPIC}))
    assert not over_mcp.is_error
    offer = over_mcp.structured_content["try"]
    assert over_mcp.structured_content["meta"]["weak"] and offer
    assert "try the notes' own words: " + "; ".join(offer) in over_mcp.content[0].text
    over_http = http(oracle, "/api/search", {"query": OFF_TOPIC})
    assert over_http.status_code == 200 and over_http.json()["try"] == offer
    assert cli(oracle, "search", *OFF_TOPIC.split()).try_ == offer
    strong = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "readiness probe balancer"}))
    assert not strong.structured_content["meta"]["weak"] and strong.structured_content["try"] == []


def test_the_handshake_describes_the_notes_and_follows_the_index(oracle: Any) -> None:
    async def handshake(c: Any) -> str:
        return c.instructions or ""

    text = mcp(oracle, handshake)
    assert len(text.encode("utf-8")) <= 2048
    assert text.index("How to ask") < text.index("Right now: 3 notes") < text.index("Languages: en 3")
    assert "folders: learnings/ 2, principles/ 1" in text and "main concepts:" in text
    write(Path(oracle.settings.root) / "learnings/2026-03-03_more.md", "# More deploys\n\nAnother deploy note.\n")
    oracle.indexer.sync()
    after = mcp(oracle, handshake)
    assert "Right now: 4 notes" in after and "folders: learnings/ 3, principles/ 1" in after
