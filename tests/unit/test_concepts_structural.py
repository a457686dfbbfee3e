"""Issue 40 (also a): generic section names (`## Context`, `## Decision`, `## What happened`, `**Status**:`) are not
concepts; a heading that names a subject still gives its keywords. Pure rule (indexer/notes/concepts.py) and the
parser that applies it."""

from __future__ import annotations

import pytest

from oracle_indexer.notes.concepts import concept_text, extract_concepts, is_structural_heading
from oracle_indexer.notes.parse import parse_markdown


@pytest.mark.parametrize("heading", ["Context", "## Context".lstrip("# "), "2. Decision", "What Happened",
                                     "The Pattern", "Lessons Learned (REQUIRED)", "Status:", "**Consequences**",
                                     "Next steps", "Review"])
def test_section_names_are_structural(heading: str) -> None:
    assert is_structural_heading(heading)


@pytest.mark.parametrize("heading", ["Context switching costs", "Rollback", "Postgres failover", "Decision log tooling",
                                     "Code review checklist", "Testing the parser"])
def test_headings_about_something_are_not(heading: str) -> None:
    assert not is_structural_heading(heading)


def test_concept_text_drops_section_names_and_labels_only() -> None:
    text = concept_text("Use PostgreSQL", "Context", "## Context\n\n**Status**: accepted\n- **Review:** done\n"
                        "We need a database with a schema.\n## Caching layer\n")
    assert "Context" not in text and "Status" not in text and "Review" not in text
    assert "accepted" in text and "done" in text and "Caching layer" in text and "database" in text
    assert extract_concepts(text) == ["database", "schema"]


def test_an_adr_and_a_retro_carry_no_section_name_concepts() -> None:
    adr = ("---\ntitle: ADR 7\n---\n# ADR 7: Use a queue\n\n## Status\n\nAccepted\n\n## Context\n\nOrders arrive in"
           " bursts.\n\n## Decision\n\nA queue in front of the database.\n\n## Consequences\n\nOne more thing to run.\n")
    retro = ("# Retro\n\n## What happened\n\nThe deploy failed.\n\n## What went well\n\nRollback was quick.\n\n"
             "## Lessons learned\n\nTest the migration first.\n")
    adr_concepts = {c for chunk in parse_markdown(adr, "decisions/0007.md", "principle").chunks for c in chunk.concepts}
    retro_concepts = {c for chunk in parse_markdown(retro, "retros/r.md", "retro").chunks for c in chunk.concepts}
    assert "context" not in adr_concepts and "database" in adr_concepts
    assert {"learning", "retrospective", "review"}.isdisjoint(retro_concepts)
    assert {"deploy", "rollback", "migration", "test"} <= retro_concepts
    # a word of the text is still a concept: only the section's name is dropped
    body = parse_markdown("# N\n\n## Context\n\nThe context window fills up.\n", "n.md", "learning").chunks
    assert "context" in {c for chunk in body for c in chunk.concepts}
