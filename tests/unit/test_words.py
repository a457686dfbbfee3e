"""One word, one meaning (issue 27 item 3): a "note" is a file, a "section" is a chunk of one, in every count
and every text a tool returns. On the REAL bundled index (SQLite + vectors).

Before, `oracle_concepts` counted sections while its description said notes (`engineering (138)` in a
33-note base) and `oracle_list` said "304 notes" when it listed sections.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from oracle_server.services.capabilities.browse import concepts, list_documents
from oracle_server.mcp.client_config import write as write_mcp_config
from oracle_server.services.vocabulary.models import ConceptsRequest, ListRequest, SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.stats import stats
from oracle_server.registry.text import concepts_text, list_text, stats_text


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


# -- empty pages say why (issue 27, "Small") --------------------------------------------------------------
def test_a_reversed_date_range_is_refused_saying_so() -> None:
    with pytest.raises(ValidationError, match="date_from 2026-05-01 is after date_to 2026-01-01"):
        SearchRequest(query="x", date_from="2026-05-01", date_to="2026-01-01")
    SearchRequest(query="x", date_from="2026-01-01", date_to="2026-01-01")  # one day is a range


def test_an_offset_past_the_end_says_where_the_last_page_starts(bundled) -> None:
    oracle, _ = bundled
    result = run_search(oracle, SearchRequest(query="mock the database", mode="fts", limit=5, offset=900))
    assert result.hits == [] and result.total > 0
    last = (result.total - 1) // 5 * 5
    assert f"offset 900 is past the end: {result.total} in all, so the last page starts at offset {last}" \
        in result.meta.warnings
    assert run_search(oracle, SearchRequest(query="mock the database", mode="fts", limit=5, offset=last)).hits
    listed = list_documents(oracle, ListRequest(limit=10, offset=500))
    assert listed.items == [] and listed.warnings == [
        f"offset 500 is past the end: {listed.total} in all, so the last page starts at offset 30"]
    assert "past the end" in list_text(ListRequest(offset=500), listed)
    assert list_documents(oracle, ListRequest(limit=10)).warnings == []


def test_mcp_json_names_oracle_by_an_absolute_path(tmp_path) -> None:
    """Issue 27: the committed mcp.json said `.venv/bin/oracle`, which a client started in another folder
    cannot find; `make install` writes mcp.json and Claude Code's .mcp.json with the absolute path."""
    from pathlib import Path

    written = write_mcp_config(tmp_path)
    assert [p.name for p in written] == ["mcp.json", ".mcp.json"]
    for path in written:
        server = json.loads(path.read_text())["mcpServers"]["oracle"]
        command = Path(server["command"])
        assert command.is_absolute() and command.name == "oracle" and server["args"] == ["serve"]
        assert command.exists(), command  # this venv's console script
        root = Path(server["env"]["ORACLE_ROOT"])  # issue 40: which folder it serves, said in the file
        assert root.is_absolute() and root.is_dir(), root
    assert write_mcp_config(tmp_path) == []  # idempotent
    written = write_mcp_config(tmp_path, root=tmp_path)
    assert json.loads(written[0].read_text())["mcpServers"]["oracle"]["env"] == {"ORACLE_ROOT": str(tmp_path)}
