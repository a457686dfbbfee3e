"""`where` filters and the [frontmatter] schema on a real index: real markdown files, real SQLite (and, for
the vector leg, Chroma and the ONNX model). The rule itself is tested pure in test_fields.py; these check that
the store keeps every value at index time (so a filter never re-reads a file), that every leg and count of
search applies it, that an older index gains it, and that `oracle index` reports schema violations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from _corpus import write
from oracle_indexer.notes.fields import parse_where
from conftest import STORES, store_overrides
from oracle_indexer.store.sqlite import SCHEMA_VERSION
from oracle_indexer.store.types import Filters
from oracle_server.services.support.suggestions import complete_field_names, complete_field_values
from oracle_server.services.capabilities.browse import list_documents
from oracle_server.services.vocabulary.models import ListRequest, SearchRequest
from oracle_server.mcp.resources import read_resource
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.stats import stats

NOTES = {
    "learnings/2026-01-05_card-retries.md": (
        "---\ntitle: Card payment retries\nindustries: [Finance, health]\nstatus: draft\nowner: ana\n"
        "reviewed: 2026-03-01\n---\n# Card payment retries\n\n## Lesson\nRetry the payment queue with backoff and"
        " jitter.\n"),
    "learnings/2026-01-06_everywhere.md": (
        "---\ntitle: Payment queues everywhere\nindustries: ['*']\nstatus: final\n---\n# Payment queues everywhere"
        "\n\n## Lesson\nEvery payment queue needs a dead letter queue.\n"),
    "learnings/2026-01-07_shop-tills.md": (
        "---\ntitle: Shop tills\nindustries: [retail]\nstatus: Final\nreviewed: 2025-06-01\n---\n# Shop tills\n\n"
        "## Lesson\nThe payment queue of a till must survive a power cut.\n"),
    "principles/payments.md": (
        "---\nindustries: finance\n---\n# Payments\n\n### Idempotency\nEvery payment queue consumer is idempotent.\n"),
}


def hits(oracle, where: object, **params: object) -> list[str]:
    result = run_search(oracle, SearchRequest(query="payment queue", limit=20, where=where, **params))
    return sorted(h.source_file for h in result.hits)


@pytest.fixture(scope="module", params=STORES)
def kb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    from _corpus import open_oracle

    root = tmp_path_factory.mktemp("where-kb")
    for rel, text in NOTES.items():
        write(root / rel, text)
    oracle = open_oracle(root, tmp_path_factory.mktemp("where-data"), **store_overrides(request.param))
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


def test_every_value_is_stored_at_index_time(kb) -> None:
    rows = kb.store.field_rows(["industries", "status"])
    got = [(note, v.field, v.value, v.is_list) for note, v in rows]
    assert ("learnings/2026-01-05_card-retries.md", "industries", "Finance", True) in got
    assert ("learnings/2026-01-06_everywhere.md", "industries", "*", True) in got
    assert ("principles/payments.md", "industries", "finance", False) in got
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)  # in note order: deterministic


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_every_leg_applies_the_filter(kb, mode: str) -> None:
    everything = hits(kb, None, mode=mode)
    assert len(everything) == 4
    assert hits(kb, {"industries": "finance"}, mode=mode) == [
        "learnings/2026-01-05_card-retries.md", "principles/payments.md"]
    assert hits(kb, {"industries": "retail", "status": "final"}, mode=mode) == ["learnings/2026-01-07_shop-tills.md"]
    assert hits(kb, {"owner": {"exists": False}}, mode=mode) == [p for p in everything if "card-retries" not in p]


def test_a_star_in_a_notes_values_is_a_literal_and_only_the_filter_may_ask_for_any_value(kb) -> None:
    """Issue 39: `industries: ['*']` passed every `where industries=...` filter, in both stores (a note could claim
    any status that way). A note's `*` is a literal; the filter's `*` asks for any value."""
    assert "learnings/2026-01-06_everywhere.md" not in hits(kb, {"industries": "retail"})
    assert "learnings/2026-01-06_everywhere.md" not in hits(kb, {"industries": ["health", "defence"]})
    assert hits(kb, {"industries": "*"}) == hits(kb, {"industries": {"exists": True}}) == [
        "learnings/2026-01-05_card-retries.md", "learnings/2026-01-06_everywhere.md",
        "learnings/2026-01-07_shop-tills.md", "principles/payments.md"]
    assert hits(kb, {"status": ["*"], "industries": "*"}) == hits(kb, {"status": {"exists": True}})


def test_dates_exists_and_other_filters_combine(kb) -> None:
    assert hits(kb, {"reviewed": {"after": "2026-01-01"}}) == ["learnings/2026-01-05_card-retries.md"]
    assert hits(kb, {"reviewed": {"before": "2026-01-01"}}) == ["learnings/2026-01-07_shop-tills.md"]
    assert hits(kb, {"reviewed": {"exists": True}}) == ["learnings/2026-01-05_card-retries.md",
                                                        "learnings/2026-01-07_shop-tills.md"]
    assert hits(kb, {"industries": "finance"}, type="principle") == ["principles/payments.md"]
    assert hits(kb, {"status": ["draft", "FINAL"]}, type="learning", mode="fts") == [
        "learnings/2026-01-05_card-retries.md", "learnings/2026-01-06_everywhere.md", "learnings/2026-01-07_shop-tills.md"]


def test_totals_count_only_what_passes_and_results_are_deterministic(kb) -> None:
    for unit in ("note", "section"):
        request = SearchRequest(query="payment queue", where={"industries": "finance"}, unit=unit, limit=1)
        first, again = run_search(kb, request), run_search(kb, request)
        assert first.total == 2
        assert first.model_dump(exclude={"meta"}) == again.model_dump(exclude={"meta"})


def test_a_field_no_note_has_is_said_with_the_fields_that_exist(kb) -> None:
    result = run_search(kb, SearchRequest(query="payment queue", where={"industris": "finance"}))
    assert result.hits == [] and result.total == 0
    assert any("no note has the field 'industris'" in w and "industries" in w for w in result.meta.warnings)


def test_a_large_note_set_needs_no_bound_parameter_per_note(kb) -> None:
    many = frozenset(f"learnings/fake-{i}.md" for i in range(40_000)) | {"principles/payments.md"}
    ranked, total = kb.store.keyword_search('"payment"', None, [], Filters(only_notes=many), 10)
    assert total == 1 and len(ranked) == 1
    ranked, total = kb.store.keyword_search('"payment"', None, [], Filters(excluded_notes=many), 10)
    assert total == 3


def test_completions_offer_field_names_and_values(kb) -> None:
    assert complete_field_names(kb, "ind").values == ["industries"]
    assert complete_field_names(kb, "").total >= 5  # industries, owner, reviewed, status, title
    values = complete_field_values(kb, "industries", "").values
    assert values[0] in ("finance", "Finance") and set(values) >= {"*", "retail", "health"}
    assert complete_field_values(kb, "industries", "RET").values == ["retail"]
    assert complete_field_values(kb, None, "x").values == []


def test_the_field_resource_lists_the_notes_a_filter_would_keep(kb) -> None:
    import json

    body = json.loads(read_resource(kb, "oracle://field/industries/FINANCE").text)
    assert body["total"] == 2 and [n["path"] for n in body["notes"]] == [
        "learnings/2026-01-05_card-retries.md", "principles/payments.md"]


@pytest.mark.parametrize("store", STORES)
def test_edits_and_removals_keep_the_stored_fields_in_step(tmp_path: Path, make_oracle, store: str) -> None:
    root = tmp_path / "kb"
    note = write(root / "learnings/a.md", "---\nstatus: draft\n---\n# A\n\n## B\npayment queue\n")
    oracle = make_oracle(root, tmp_path / "data", **store_overrides(store))
    oracle.indexer.sync(vectors=False)
    assert hits(oracle, {"status": "draft"}, mode="fts") == ["learnings/a.md"]
    write(note, "---\nstatus: final\n---\n# A\n\n## B\npayment queue\n")
    oracle.indexer.sync(vectors=False)
    assert hits(oracle, {"status": "draft"}, mode="fts") == []
    assert hits(oracle, {"status": "final"}, mode="fts") == ["learnings/a.md"]
    note.unlink()
    oracle.indexer.sync(vectors=False)
    assert oracle.store.field_rows(["status"]) == []


def test_an_older_index_gains_the_fields_on_its_next_sync(tmp_path: Path, make_oracle) -> None:
    root = tmp_path / "kb"
    write(root / "learnings/a.md", "---\nstatus: draft\n---\n# A\n\n## B\npayment queue\n")
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    db = oracle.settings.db_path
    oracle.close()
    conn = sqlite3.connect(db)  # what an index of schema 8 looks like: no note_fields
    conn.execute("DROP TABLE note_fields")
    conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    oracle = make_oracle(root, tmp_path / "data")
    assert oracle.store.get_meta("schema_version") == SCHEMA_VERSION and int(SCHEMA_VERSION) >= 9
    report = oracle.indexer.sync(vectors=False)
    assert report.changed == 1  # re-parsed once: the fields come from the markdown
    assert hits(oracle, {"status": "draft"}, mode="fts") == ["learnings/a.md"]


SCHEMA = """[frontmatter]
required = ["owner"]
types = ["learning"]
[frontmatter.allowed]
status = ["draft", "final"]
"""


def test_the_schema_is_checked_by_index_and_reported_like_other_warnings(tmp_path: Path, make_oracle) -> None:
    root = tmp_path / "kb"
    for rel, text in NOTES.items():
        write(root / rel, text)
    write(root / "learnings/2026-01-08_odd.md", "---\nowner: bo\nstatus: Archived\n---\n# Odd\n\n## B\ntext here\n")
    write(root / "oracle.toml", SCHEMA)
    oracle = make_oracle(root, tmp_path / "data")
    report = oracle.indexer.sync(vectors=False)
    missing = [w for w in report.warnings if "'owner' is required" in w]
    assert sorted(w.split(":")[0] for w in missing) == [
        "learnings/2026-01-06_everywhere.md", "learnings/2026-01-07_shop-tills.md"]  # principles are not checked
    assert ("learnings/2026-01-08_odd.md: frontmatter field 'status': 'Archived' not allowed ([frontmatter.allowed]"
            " in oracle.toml: draft, final)") in report.warnings
    assert stats(oracle).files.with_warnings == 3
    again = oracle.indexer.sync(vectors=False)
    assert again.changed == 0 and again.unchanged == 5  # an unchanged schema re-checks nothing
    oracle.close()

    write(root / "oracle.toml", SCHEMA.replace('"draft", "final"', '"draft", "final", "archived"'))
    oracle = make_oracle(root, tmp_path / "data")
    changed = oracle.indexer.sync(vectors=False)
    assert changed.changed == 5  # a changed schema re-checks every note
    assert not any("not allowed" in w for w in changed.warnings)
    assert stats(oracle).files.with_warnings == 2
    oracle.close()

    (root / "oracle.toml").unlink()
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    assert stats(oracle).files.with_warnings == 0


def test_a_filter_is_parsed_once_into_the_request(kb) -> None:
    request = SearchRequest(query="x", where='{"Status": "Draft", "industries": {"in": ["b", "a"]}}')
    assert request.where == {"Status": {"in": ["draft"]}, "industries": {"in": ["a", "b"]}}
    assert parse_where(request.where)[0].field == "Status"  # field names are matched as written


def test_list_applies_the_filter_like_search(kb) -> None:
    def listed(where: object, **params: object) -> tuple[list[str], int, list[str]]:
        result = list_documents(kb, ListRequest(where=where, limit=20, **params))
        return [i.source_file for i in result.items], result.total, result.warnings

    files, total, warnings = listed({"industries": "finance"})
    assert total == 2 and not warnings
    assert files == ["learnings/2026-01-05_card-retries.md", "principles/payments.md"]  # newest first, as unfiltered
    assert listed({"industries": "finance"}, type="principle")[:2] == (["principles/payments.md"], 1)
    sections, total, _ = listed({"status": "final"}, unit="section")
    assert total == len(sections) == 2 and set(sections) == {"learnings/2026-01-06_everywhere.md",
                                                              "learnings/2026-01-07_shop-tills.md"}
    assert listed({"owner": {"exists": False}})[1] == 3
    files, total, warnings = listed({"industris": "finance"})
    assert files == [] and total == 0 and any("no note has the field 'industris'" in w for w in warnings)
