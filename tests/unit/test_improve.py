"""Knowledge that improves with use: feedback, supersede, relations, read and verify.

Pure parts (the ranking adjustment, relation parsing) are tested without a database; the services run
on a real index (SQLite FTS5 + embedded ChromaDB + the ONNX model) of the bundled knowledge plus a few
notes written for these tests. The MCP tools are tested through a real client in test_mcp_improve.py.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from _corpus import BUNDLED, open_oracle, write
from oracle_indexer.notes.parse import Relation, parse_markdown, parse_relations
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.browse import NotFound, graph
from oracle_server.services.capabilities.consult import consult
from oracle_server.services.capabilities.feedback import FeedbackError, feedback_overview, record_feedback
from oracle_server.services.capabilities.files import PathRefused
from oracle_server.services.capabilities.learn import learn
from oracle_server.services.vocabulary.models import (
    ConsultRequest,
    FeedbackRequest,
    LearnRequest,
    ReadRequest,
    RelationsRequest,
    SearchRequest,
    SupersedeRequest,
    Triplet,
    VerifyRequest,
)
from oracle_server.services.capabilities.read import read_note
from oracle_server.services.capabilities.relations import find_relations
from oracle_server.services.capabilities.search.pipeline import search
from oracle_server.services.capabilities.supersede import SupersedeError, supersede, supersessions_overview
from oracle_server.services.capabilities.verify import verify

LOW, HIGH = 1 - scoring.FEEDBACK_BOUND, 1 + scoring.FEEDBACK_BOUND

NOTES = {
    "learnings/2026-09-01_kestrel-cache-timeout.md": (
        "---\ntitle: Kestrel cache invalidation by timeout\ntags: [kestrel, cache]\n"
        "relations:\n  - [Billing service, depends on, Postgres]\n  - [billing service, owned by, Team Kestrel]\n---\n\n"
        "# Kestrel cache invalidation by timeout\n\n"
        "Kestrel cache invalidation uses a fixed timeout: entries expire sixty seconds after the kestrel cache "
        "wrote them. Kestrel cache invalidation by timeout is simple.\n"
    ),
    "learnings/2026-09-02_kestrel-cache-events.md": (
        "---\ntitle: Kestrel cache invalidation by change events\ntags: [kestrel]\n"
        "relations:\n  - subject: Kestrel cache\n    predicate: depends on\n    object: postgres\n---\n\n"
        "# Kestrel cache invalidation by change events\n\n"
        "Listen to change events from the database and drop the matching entries.\n"
    ),
    "learnings/2026-09-03_wombat-deploy-blue-green.md": (
        "---\ntitle: Wombat deploys use blue green\nsuperseded_by: 2026-09-04_wombat-deploy-canary.md\n---\n\n"
        "# Wombat deploys use blue green\n\nThe wombat deploy switches all traffic from blue to green at once.\n"
    ),
    "learnings/2026-09-04_wombat-deploy-canary.md": (
        "---\ntitle: Wombat deploys use canary releases\n---\n\n"
        "# Wombat deploys use canary releases\n\nThe wombat deploy sends five percent of traffic to the canary.\n"
    ),
    "learnings/2026-09-05_numbat-notes.md": (
        "---\ntitle: Numbat notes\n---\n\n# Numbat notes\n\n## Feeding\n\nNumbats eat termites every morning.\n\n"
        "## Habitat\n\nNumbats live in eucalyptus woodland.\n"
    ),
}
OLD = "learnings/2026-09-01_kestrel-cache-timeout.md"
NEW = "learnings/2026-09-02_kestrel-cache-events.md"
FM_OLD = "learnings/2026-09-03_wombat-deploy-blue-green.md"
FM_NEW = "learnings/2026-09-04_wombat-deploy-canary.md"
NUMBAT = "learnings/2026-09-05_numbat-notes.md"


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("improve")
    root = base / "root"
    shutil.copytree(BUNDLED, root)
    for rel, text in NOTES.items():
        write(root / rel, text)
    oracle = open_oracle(root, base / "data")
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


def hits(oracle, query: str, **params) -> list:
    """Section hits: verdicts and supersessions act on sections, so these tests look at sections."""
    params.setdefault("unit", "section")
    return search(oracle, SearchRequest(query=query, limit=params.pop("limit", 30), **params)).hits


def first_chunk(oracle, rel: str) -> str:
    return oracle.store.file_chunk_ids(rel)[0]


# -- pure: the ranking adjustment ---------------------------------------------------------------------
def test_feedback_factor_is_bounded_monotonic_and_neutral_without_votes() -> None:
    assert scoring.feedback_factor(0, 0) == 1.0
    assert scoring.feedback_factor(5, 5) == 1.0
    ups = [scoring.feedback_factor(n, 0) for n in range(1, 200)]
    downs = [scoring.feedback_factor(0, n) for n in range(1, 200)]
    assert ups == sorted(ups) and downs == sorted(downs, reverse=True)
    assert all(1.0 < f < HIGH for f in ups) and all(LOW < f < 1.0 for f in downs)
    assert scoring.feedback_factor(1, 0) == pytest.approx(1 + scoring.FEEDBACK_BOUND / 3)


def test_scaled_helps_negative_scores_in_the_same_direction() -> None:
    assert scoring.scaled(-0.5, 1.2) > -0.5 and scoring.scaled(-0.5, 0.8) < -0.5
    assert scoring.scaled(0.5, 1.2) > 0.5 and scoring.scaled(0.5, 0.8) < 0.5


def _fused(*pairs: tuple[str, float]) -> list[scoring.Fused]:
    return [scoring.Fused(i, s) for i, s in pairs]


def test_adjust_without_feedback_or_supersession_returns_the_list_untouched() -> None:
    items = _fused(("a", 0.9), ("b", 0.5))
    assert scoring.adjust(items, {}, {}) is items
    assert [(i.id, i.score, i.relevance) for i in items] == [("a", 0.9, None), ("b", 0.5, None)]


def test_adjust_applies_feedback_then_resorts() -> None:
    out = scoring.adjust(_fused(("a", 1.0), ("b", 0.9)), {"a": (0, 50), "b": (50, 0)}, {})
    assert [i.id for i in out] == ["b", "a"]
    assert out[0].relevance == 0.9 and out[0].score <= 0.9 * HIGH
    assert out[1].relevance == 1.0 and out[1].score >= 1.0 * LOW


def test_relevance_dominates_beyond_the_bound() -> None:
    """A hit with less than LOW/HIGH of the top relevance never overtakes it, whatever the votes."""
    out = scoring.adjust(_fused(("top", 1.0), ("weak", 0.66)), {"top": (0, 10_000), "weak": (10_000, 0)}, {})
    assert [i.id for i in out] == ["top", "weak"]


def test_superseded_hit_goes_below_its_successor_and_chains_settle() -> None:
    items = _fused(("old", 1.0), ("older", 0.95), ("x", 0.4), ("new", 0.2))
    out = scoring.adjust(items, {}, {"old": frozenset({"new"}), "older": frozenset({"old"})})
    order = [i.id for i in out]
    assert order.index("new") < order.index("old") < order.index("older")
    assert next(i for i in out if i.id == "old").score == 0.5


def test_superseded_cycle_terminates() -> None:
    out = scoring.adjust(_fused(("a", 1.0), ("b", 0.5)), {}, {"a": frozenset({"b"}), "b": frozenset({"a"})})
    assert sorted(i.id for i in out) == ["a", "b"]


# -- pure: relations and superseded_by in frontmatter -------------------------------------------------
def test_relations_accept_lists_mappings_and_strings_and_report_bad_entries() -> None:
    relations, warnings = parse_relations([
        ["Oracle", "stores index in", "SQLite"],
        {"subject": "FTS5", "predicate": "is part of", "object": "SQLite"},
        "ChromaDB | stores | vectors",
        "no separators here",
        ["only", "two"],
        [None, "x", "y"],
        ["a" * 201, "p", "o"],
        ["Oracle", "stores index in", "SQLite"],  # a duplicate is kept once
    ])
    assert relations == [
        Relation("Oracle", "stores index in", "SQLite"),
        Relation("FTS5", "is part of", "SQLite"),
        Relation("ChromaDB", "stores", "vectors"),
    ]
    assert len(warnings) == 4 and all("ignored" in w for w in warnings)


def test_parse_markdown_reads_relations_and_superseded_by() -> None:
    parsed = parse_markdown(NOTES[OLD], OLD, "learning")
    assert parsed.relations[0] == Relation("Billing service", "depends on", "Postgres")
    assert parse_markdown(NOTES[FM_OLD], FM_OLD, "learning").superseded_by == "2026-09-04_wombat-deploy-canary.md"
    odd = parse_markdown("---\nsuperseded_by: [a, b]\nrelations: 7\n---\n# T\n\nx\n", "learnings/t.md", "learning")
    assert odd.superseded_by is None and odd.relations == []
    assert any("superseded_by" in w for w in odd.warnings) and any("relations entry 1" in w for w in odd.warnings)


def test_triplet_model_accepts_three_shapes_and_rejects_others() -> None:
    assert Triplet.model_validate(["a", "b", "c"]) == Triplet.model_validate("a | b | c")
    assert Triplet.model_validate({"subject": " a  x ", "predicate": "b", "object": "c"}).subject == "a x"
    for bad in (["a", "b"], "a | b", {"subject": "", "predicate": "b", "object": "c"}, ["a", "b", 3], 5):
        with pytest.raises(ValidationError):
            Triplet.model_validate(bad)


# -- feedback ------------------------------------------------------------------------------------------
def test_feedback_moves_a_hit_in_the_stated_direction_and_within_the_bound(oracle) -> None:
    query = "numbats termites eucalyptus woodland"
    before = hits(oracle, query)
    assert before[0].source_file == NUMBAT
    top = before[0]
    runner = next(h for h in before if h.source_file != NUMBAT)  # verdicts count per note: another note's
    for _ in range(40):
        record_feedback(oracle, FeedbackRequest(id=top.id, verdict="misleading", note="wrong woodland"))
        record_feedback(oracle, FeedbackRequest(id=runner.id, verdict="helpful"))
    after = {h.id: h for h in hits(oracle, query)}
    down, up = after[top.id], after[runner.id]
    assert down.breakdown.misleading == 40 and up.breakdown.helpful == 40
    assert down.breakdown.relevance == top.score and up.breakdown.relevance == runner.score  # relevance unchanged
    assert LOW < down.breakdown.feedback_factor < 1 < up.breakdown.feedback_factor < HIGH
    assert down.score < top.score and up.score > runner.score
    assert down.score >= round(top.score * LOW, 6) and up.score <= round(runner.score * HIGH, 6)
    for hit in after.values():  # every hit: final score within the feedback bound of its relevance
        base = hit.breakdown.relevance * hit.breakdown.superseded_factor
        assert base * LOW - 1e-6 <= hit.score <= base * HIGH + 1e-6
    order, before_order = [h.id for h in hits(oracle, query)], [h.id for h in before]
    assert order.index(top.id) >= before_order.index(top.id) and order.index(runner.id) <= before_order.index(runner.id)


def test_a_verdict_counts_for_every_section_of_its_note(oracle) -> None:
    """A note marked misleading through one section does not come back unpenalised through another (issue
    27): every section of the note carries the note's verdicts, and the note's hit does too."""
    query = "numbats termites eucalyptus woodland"
    sections = [h for h in hits(oracle, query) if h.source_file == NUMBAT]
    assert len(sections) >= 2
    marked, other = sections[0], sections[1]
    earlier = other.breakdown.misleading  # the module's index keeps earlier tests' verdicts
    for _ in range(3):
        record_feedback(oracle, FeedbackRequest(id=marked.id, verdict="misleading"))
    again = {h.id: h for h in hits(oracle, query)}
    assert again[other.id].breakdown.misleading == earlier + 3 and again[other.id].breakdown.feedback_factor < 1
    note = next(h for h in search(oracle, SearchRequest(query=query, limit=30)).hits if h.source_file == NUMBAT)
    assert note.breakdown.misleading == earlier + 3 and note.breakdown.feedback_factor < 1


def test_feedback_reaches_consult_and_the_overview(oracle) -> None:
    target = hits(oracle, "wombat deploy canary traffic")[0]
    record_feedback(oracle, FeedbackRequest(id=target.id, verdict="helpful"))
    overview = feedback_overview(oracle)
    assert target.id in [row["id"] for row in overview["helpful"]]
    assert all(row["misleading"] > row["helpful"] for row in overview["misleading"])


def test_feedback_on_an_unknown_id_is_refused_and_not_logged(oracle) -> None:
    before = oracle.logs.counts()["feedback_log"]
    with pytest.raises(FeedbackError, match="no indexed chunk"):
        record_feedback(oracle, FeedbackRequest(id="c_" + "0" * 20, verdict="helpful"))
    assert oracle.logs.counts()["feedback_log"] == before
    for bad in ({"id": "../x", "verdict": "helpful"}, {"id": "c_" + "0" * 20, "verdict": "meh"},
                {"id": "c_" + "0" * 20, "verdict": "helpful", "note": "x" * 10_001}):
        with pytest.raises(ValidationError):
            FeedbackRequest.model_validate(bad)


def test_feedback_log_is_append_only(oracle) -> None:
    conn = sqlite3.connect(oracle.logs.path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE feedback_log SET verdict = 'helpful'")
    conn.close()


# -- supersede -----------------------------------------------------------------------------------------
def test_supersede_ranks_the_old_note_below_its_successor_with_a_pointer_and_undo_restores(oracle) -> None:
    query = "kestrel cache invalidation timeout"
    before = hits(oracle, query)
    files = [h.source_file for h in before]
    assert files.index(OLD) < files.index(NEW)  # the old note matches the query better
    result = supersede(oracle, SupersedeRequest(old_id=OLD, new_id=NEW, reason="we moved to events"))
    assert result.old.scope == "note" and result.new and result.new.source_file == NEW
    during = hits(oracle, query)
    files = [h.source_file for h in during]
    assert files.index(NEW) < files.index(OLD)
    old_hit = next(h for h in during if h.source_file == OLD)
    assert old_hit.superseded_by and old_hit.superseded_by.source_file == NEW
    notes = [h.source_file for h in search(oracle, SearchRequest(query=query, limit=30)).hits]
    assert notes.index(OLD) == notes.index(NEW) + 1  # a page of notes: the old one right after its successor
    assert old_hit.superseded_by.reason == "we moved to events" and old_hit.superseded_by.via == "tool"
    assert old_hit.breakdown.superseded_factor == scoring.SUPERSEDED_FACTOR
    assert (oracle.settings.root / OLD).is_file() and oracle.store.file_chunk_ids(OLD)  # stays on disk and indexed
    assert any(s["old"] == OLD and s["via"] == "tool" for s in supersessions_overview(oracle))
    guidance = consult(oracle, ConsultRequest(decision="How should the kestrel cache invalidation work, by timeout?"))
    old_sources = [s for s in guidance.learnings if s.source_file == OLD]
    assert all(s.superseded_by and s.superseded_by.source_file == NEW for s in old_sources)
    supersede(oracle, SupersedeRequest(old_id=OLD, undo=True))
    after = hits(oracle, query)
    assert [h.model_dump() for h in after] == [h.model_dump() for h in before]  # byte-identical again


def test_supersede_one_section_by_chunk_id_leaves_the_rest_of_the_note(oracle) -> None:
    feeding, habitat = oracle.store.file_chunk_ids(NUMBAT)[-2:]
    canary = first_chunk(oracle, FM_NEW)
    result = supersede(oracle, SupersedeRequest(old_id=feeding, new_id=canary))
    assert result.old.scope == "chunk" and result.old.chunks == 1
    found = {h.id: h for h in hits(oracle, "numbats termites eucalyptus woodland")}
    assert found[feeding].superseded_by is not None and found[habitat].superseded_by is None
    supersede(oracle, SupersedeRequest(old_id=feeding, undo=True))


def test_frontmatter_superseded_by_has_the_same_effect(oracle) -> None:
    found = hits(oracle, "wombat deploy blue green traffic")
    files = [h.source_file for h in found]
    assert files.index(FM_NEW) < files.index(FM_OLD)
    old_hit = next(h for h in found if h.source_file == FM_OLD)
    assert old_hit.superseded_by and old_hit.superseded_by.via == "frontmatter"
    assert old_hit.superseded_by.id == first_chunk(oracle, FM_NEW)
    assert any(s["old"] == FM_OLD and s["via"] == "frontmatter" for s in supersessions_overview(oracle))


@pytest.mark.parametrize(("old", "new", "message"), [
    (OLD, OLD, "cannot supersede itself"),
    ("c_" + "0" * 20, NEW, "no indexed chunk"),
    ("../outside.md", NEW, "'..' is refused"),
    ("/etc/passwd.md", NEW, "absolute paths are refused"),
    (OLD, "learnings/missing.md", "not an indexed note"),
])
def test_supersede_refuses_bad_references_and_logs_nothing(oracle, old: str, new: str, message: str) -> None:
    before = oracle.logs.counts()["supersede_log"]
    with pytest.raises(SupersedeError, match=message):
        supersede(oracle, SupersedeRequest(old_id=old, new_id=new))
    assert oracle.logs.counts()["supersede_log"] == before


def test_supersede_refuses_a_cycle_and_an_undo_with_nothing_to_undo(oracle) -> None:
    supersede(oracle, SupersedeRequest(old_id=OLD, new_id=NEW))
    try:
        with pytest.raises(SupersedeError, match="itself superseded"):
            supersede(oracle, SupersedeRequest(old_id=NEW, new_id=OLD))
    finally:
        supersede(oracle, SupersedeRequest(old_id=OLD, undo=True))
    with pytest.raises(SupersedeError, match="nothing|no supersession"):
        supersede(oracle, SupersedeRequest(old_id=OLD, undo=True))
    with pytest.raises(ValidationError, match="new_id is required"):
        SupersedeRequest(old_id=OLD)


# -- relations -----------------------------------------------------------------------------------------
def test_relations_match_case_and_spacing_insensitively(oracle) -> None:
    found = find_relations(oracle, RelationsRequest(subject="billing  SERVICE"))
    assert {(r.predicate, r.object) for r in found.relations} == {("depends on", "Postgres"), ("owned by", "Team Kestrel")}
    assert all(r.source_file == OLD and r.id == first_chunk(oracle, OLD) for r in found.relations)
    depends = find_relations(oracle, RelationsRequest(predicate="depends on", object="POSTGRES"))
    assert sorted(r.source_file for r in depends.relations) == [OLD, NEW]
    assert find_relations(oracle, RelationsRequest(object="postgre")).total == 0  # whole terms only
    assert find_relations(oracle, RelationsRequest()).total >= 3


def test_search_starts_from_a_triplet_and_falls_back_to_text_and_vectors(oracle) -> None:
    result = search(oracle, SearchRequest(query="numbats termites", object="postgres", limit=10))
    lead = result.hits[:2]
    assert {h.source_file for h in lead} == {OLD, NEW}
    assert all(h.found_by[0] == "relation" and h.relations for h in lead)
    assert all(r.object.casefold() == "postgres" for h in lead for r in h.relations)
    assert NUMBAT in [h.source_file for h in result.hits[2:]]  # text and vectors fill the rest
    assert not result.meta.warnings
    none = search(oracle, SearchRequest(query="numbats termites", subject="nobody states this", limit=5))
    assert none.hits[0].source_file == NUMBAT
    assert any("no note states a relation" in w for w in none.meta.warnings)


def test_learn_writes_relations_into_frontmatter_and_they_are_found(oracle) -> None:
    result = learn(oracle, LearnRequest(
        pattern="The quoll importer reads CSV exports nightly.", title="Quoll importer schedule",
        relations=[["Quoll importer", "reads", "CSV exports"], "quoll importer | runs | nightly"],
    ))
    text = (oracle.settings.root / result.file).read_text(encoding="utf-8")
    assert "- [Quoll importer, reads, CSV exports]" in text
    found = find_relations(oracle, RelationsRequest(subject="quoll importer"))
    assert {r.object for r in found.relations} == {"CSV exports", "nightly"}
    assert all(r.source_file == result.file for r in found.relations)


def test_graph_shows_relations_between_entities(oracle) -> None:
    g = graph(oracle)
    edges = [(e.source, e.label, e.target) for e in g.edges if e.kind == "relation"]
    assert ("entity:billing service", "depends on", "entity:postgres") in edges
    labels = {n.id: n.label for n in g.nodes if n.kind == "entity"}
    assert labels["entity:postgres"] in ("Postgres", "postgres")


# -- read ----------------------------------------------------------------------------------------------
def test_read_by_id_returns_the_whole_note_with_its_sections(oracle) -> None:
    feeding = oracle.store.file_chunk_ids(NUMBAT)[-2]
    note = read_note(oracle, ReadRequest(id=feeding))
    assert note.content == NOTES[NUMBAT] and note.source_file == NUMBAT and note.focus_id == feeding
    assert note.line_start == 1 and note.line_end == NOTES[NUMBAT].count("\n") + 1
    assert [s.heading for s in note.sections][-2:] == ["Feeding", "Habitat"]
    lines = note.content.split("\n")
    for section in note.sections:  # the spans point at the same lines as in the index
        assert "Numbat" in "\n".join(lines[section.line_start - 1 : section.line_end]) or section.kind == "intro"
    part = read_note(oracle, ReadRequest(id=feeding, section=True))
    assert part.content == "Numbats eat termites every morning." and part.content_hash == note.sections[-2].content_hash


def test_read_by_path_carries_frontmatter_relations_and_supersession(oracle) -> None:
    note = read_note(oracle, ReadRequest(file=OLD))
    assert note.frontmatter["title"] == "Kestrel cache invalidation by timeout"
    assert [t.object for t in note.relations] == ["Postgres", "Team Kestrel"]
    old = read_note(oracle, ReadRequest(file=FM_OLD))
    assert old.superseded_by and old.superseded_by.source_file == FM_NEW
    assert read_note(oracle, ReadRequest(file=OLD, max_chars=1000)).truncated is False


@pytest.mark.parametrize("path", ["../etc/passwd.md", "/etc/passwd.md", "learnings/../../x.md", "~/x.md",
                                  "learnings/x.txt", "learnings\\..\\..\\x.md", "learnings/%2e%2e/x.md"])
def test_read_never_leaves_the_root(oracle, path: str) -> None:
    with pytest.raises(PathRefused):
        read_note(oracle, ReadRequest(file=path))


def test_read_errors_say_what_to_pass(oracle) -> None:
    with pytest.raises(NotFound, match="search hit"):
        read_note(oracle, ReadRequest(id="c_" + "0" * 20))
    for bad in ({}, {"id": "c_" + "0" * 20, "file": OLD}, {"file": OLD, "section": True}, {"id": "nope"}):
        with pytest.raises(ValidationError):
            ReadRequest.model_validate(bad)


# -- verify --------------------------------------------------------------------------------------------
def test_verify_says_unchanged_changed_and_gone_after_edits(oracle) -> None:
    root = oracle.settings.root
    rel = "learnings/2026-09-06_bilby-notes.md"
    write(root / rel, "# Bilby notes\n\n## Diet\n\nBilbies eat seeds.\n\n## Burrows\n\nBilbies dig spiral burrows.\n\n"
                      "## Ears\n\nBilbies have long ears.\n")
    oracle.indexer.sync_paths([rel])
    cited = {h.heading: h for h in hits(oracle, "bilbies seeds burrows ears") if h.source_file == rel}
    citations = [{"id": h.id, "content_hash": h.content_hash} for h in cited.values()]
    assert verify(oracle, VerifyRequest(citations=citations)).unchanged == 3
    # Diet changes, Burrows keeps its text under a new heading (a new id), Ears is unchanged.
    write(root / rel, "# Bilby notes\n\n## Diet\n\nBilbies eat seeds and insects.\n\n## Tunnels\n\n"
                      "Bilbies dig spiral burrows.\n\n## Ears\n\nBilbies have long ears.\n")
    oracle.indexer.sync_paths([rel])
    result = verify(oracle, VerifyRequest(citations=citations))
    status = {r.id: r for r in result.results}
    diet, burrows, ears = (status[cited[k].id] for k in ("Diet", "Burrows", "Ears"))
    assert diet.status == "changed" and diet.current_hash != cited["Diet"].content_hash
    assert burrows.status == "gone" and burrows.same_content_in == oracle.store.file_chunk_ids(rel)[1:2]
    assert ears.status == "unchanged"
    assert (result.unchanged, result.changed, result.gone) == (1, 1, 1)
    short = verify(oracle, VerifyRequest(citations=[{"id": ears.id, "content_hash": ears.content_hash[:12]}]))
    assert short.results[0].status == "unchanged"  # a 12-digit prefix is enough


def test_verify_rejects_malformed_citations() -> None:
    for bad in ({"citations": []}, {"citations": [{"id": "c_1", "content_hash": "xyz"}]},
                {"citations": [{"id": "c_1", "content_hash": "ab"}]}, {"citations": [{"id": "c_1"}]}):
        with pytest.raises(ValidationError):
            VerifyRequest.model_validate(bad)


# -- the index migrates once ---------------------------------------------------------------------------
def test_an_index_of_schema_1_reparses_every_file_once(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    write(root / OLD, NOTES[OLD])
    oracle = open_oracle(root, data)
    oracle.indexer.sync()
    with oracle.store.transaction() as conn:  # what an index built before relations looked like
        conn.execute("DELETE FROM relations")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    oracle.close()
    reopened = open_oracle(root, data)
    try:
        report = reopened.indexer.sync()
        assert report.changed == 1
        assert report.embedded + report.embeddings_cached == 0  # same chunks, same text: vectors kept
        assert find_relations(reopened, RelationsRequest(subject="billing service")).total == 2
        assert reopened.indexer.sync(vectors=False).unchanged == 1
    finally:
        reopened.close()


def test_an_edit_re_embeds_only_the_sections_whose_text_changed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    rel = "learnings/2026-09-07_echidna.md"
    write(root / rel, "# Echidna\n\n## Diet\n\nAnts and termites.\n\n## Spines\n\nKeratin spines.\n\n## Eggs\n\nOne egg.\n")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        first = oracle.indexer.sync()
        assert first.embedded + first.embeddings_cached == 3
        write(root / rel, "# Echidna\n\n## Diet\n\nAnts, termites and beetle larvae.\n\n## Spines\n\nKeratin spines.\n\n"
                          "## Eggs\n\nOne egg.\n")
        second = oracle.indexer.sync()
        assert second.changed == 1 and second.embedded + second.embeddings_cached == 1  # only Diet
        assert oracle.store.pending_count() == 0
        diet = next(h for h in hits(oracle, "beetle larvae", mode="vector", limit=3) if h.heading == "Diet")
        assert diet.source_file == rel
    finally:
        oracle.close()
