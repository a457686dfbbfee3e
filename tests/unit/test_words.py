"""One word, one meaning (issue 27 item 3): a "note" is a file, a "section" is a chunk of one, in every count
and every text a tool returns. On the REAL bundled index (SQLite + vectors).

Before, `oracle_concepts` counted sections while its description said notes (`engineering (138)` in a
33-note base) and `oracle_list` said "304 notes" when it listed sections.
"""

from __future__ import annotations

from server.browse import concepts, list_documents
from server.models import ConceptsRequest, ListRequest
from server.stats import stats
from server.tool_text import concepts_text, list_text, stats_text


def test_concepts_count_notes_not_sections(bundled) -> None:
    oracle, _ = bundled
    notes = oracle.store.note_count()
    result = concepts(oracle, ConceptsRequest(limit=500))
    assert result.concepts and all(1 <= c.count <= notes for c in result.concepts)
    carried: dict[str, set[str]] = {}
    for file, concept in oracle.store.note_concepts():
        carried.setdefault(concept, set()).add(file)
    assert {c.concept: c.count for c in result.concepts} == {c: len(f) for c, f in carried.items()}
    assert concepts_text(ConceptsRequest(), result).startswith("notes carrying each concept: ")


def test_list_lists_notes_by_default_and_says_which_unit(bundled) -> None:
    oracle, _ = bundled
    notes, sections = oracle.store.note_count(), oracle.store.chunk_count()
    assert sections > notes  # the bundled base has notes of several sections
    by_note = list_documents(oracle, ListRequest(limit=100))
    assert by_note.total == notes and by_note.unit == "note"
    assert len({i.source_file for i in by_note.items}) == len(by_note.items)
    assert sum(i.sections for i in by_note.items) == sections
    assert list_text(ListRequest(), by_note).splitlines()[0] == f"{notes} notes"
    for request in (ListRequest(unit="section"), ListRequest(group_by_file=False)):
        by_section = list_documents(oracle, request)
        assert by_section.total == sections and by_section.unit == "section"
        assert list_text(request, by_section).splitlines()[0] == f"{sections} sections"
    assert list_documents(oracle, ListRequest(group_by_file=True)).total == notes


def test_stats_text_counts_notes_and_sections(bundled) -> None:
    oracle, _ = bundled
    text = stats_text(None, stats(oracle))
    assert text.startswith(f"{oracle.store.note_count()} notes (")
    assert f", {oracle.store.chunk_count()} sections;" in text
    assert "chunk" not in text and "files" not in text
