"""server/registry/render.py: one rendering of a search page for the CLI and for the MCP text with detail=full
(issue 46: `oracle search` hid that a note is superseded, which the MCP text showed). Pure: built from models."""

from __future__ import annotations

from types import SimpleNamespace

from oracle_server.registry import render, text
from oracle_server.services.vocabulary.models import Hit, SearchMeta, SearchResult, SupersededBy, Triplet


def page() -> SearchResult:
    hit = Hit.model_validate({
        "id": "c_1", "type": "learning", "kind": "section", "title": "Old way", "heading": "Deploys",
        "snippet": "we deploy on Fridays", "source_file": "learnings/old.md", "line_start": 3, "line_end": 9,
        "content_hash": "a" * 64, "score": 0.5, "concepts": [], "found_by": ["fts"], "project": None,
        "date": None, "breakdown": {"fused": 0.5},
        "superseded_by": SupersededBy(id="c_2", source_file="learnings/new.md", title="New way", via="tool"),
        "relations": [Triplet(subject="deploys", predicate="happen on", object="Tuesdays")],
    })
    return SearchResult(query="deploy day", hits=[hit], total=1, offset=0, limit=10,
                        meta=SearchMeta(mode="hybrid", fusion="rrf", took_ms=1.0, fts_matches=1, vector_matches=0,
                                        warnings=["a warning"]))


def test_the_cli_shows_what_the_mcp_text_shows() -> None:
    result = page()
    out, warnings = render.search(result.model_dump(mode="json"))
    cli = "\n".join(out)
    assert "SUPERSEDED by learnings/new.md (id c_2)" in cli
    assert "relation: deploys — happen on — Tuesdays" in cli and any("a warning" in w for w in warnings)
    mcp = text.search_text(SimpleNamespace(detail="full"), result)
    assert all(line in mcp for line in out) and all(w in mcp for w in warnings)
