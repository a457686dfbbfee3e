"""Notes as the unit of an answer (issue 11): metadata blocks folded, sections grouped into notes, one copy of
identical content, Thai words, an honest "nothing relevant", relation hits with real scores.

Pure parts (blocks, grouping, weakness) are tested without a database; the rest through the real index
(SQLite FTS5, ChromaDB, the ONNX model) on the shared search corpus or a small knowledge base of its own.
"""

from __future__ import annotations

import json

import pytest

import _corpus
from _corpus import QUOKKA_FILES, QUOKKA_PRINCIPLE, THAI_FILE, write
from oracle_indexer.notes.blocks import block_date, block_tags, is_metadata_block
from oracle_indexer.models.multilingual import covered_share
from oracle_indexer.notes.parse import parse_markdown
from oracle_indexer.store.rows import SectionFacts
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.capabilities.consult import consult
from oracle_server.services.vocabulary.models import ConsultRequest, SearchRequest
from oracle_server.services.capabilities.search.notes import fold_duplicate_notes, fold_duplicate_sections, group_notes
from oracle_server.services.capabilities.search.pipeline import search

GIBBERISH = "asdkjh qwpoeiru zxmcnv"


def run(oracle, query: str, **kw):
    return search(oracle, SearchRequest(query=query, **kw))


def dump(result) -> str:
    return json.dumps(result.model_dump(exclude={"meta": {"took_ms"}}), sort_keys=True, ensure_ascii=False)


# -- which blocks are metadata ------------------------------------------------------------------------
@pytest.mark.parametrize(("heading", "text", "intro"), [
    ("", "**Date**: 2025-12-28\n**Category**: Critical Safety Rule\n**Confidence**: High", True),
    ("Tags", "#kanban #productivity #jump", False),
    ("", "#git #maw", False),
    ("See Also", "- [[004-human-confirmation-loop|Human Confirmation Loop]] - Another pattern\n- [[x|X]]", False),
    ("Related", "- [Session](../retrospectives/x.md) - where it emerged\n- `2025-12-13_subagent.md`", False),
    ("Status", "Accepted", False),
    ("Table of Contents", "1. [What is MAW](#1-what-is-maw)\n2. [Architecture](#2-architecture)", False),
])
def test_metadata_blocks(heading: str, text: str, intro: bool) -> None:
    assert is_metadata_block(heading, text, intro)


@pytest.mark.parametrize(("heading", "text", "intro"), [
    ("Why", "- **Cleaner output** - nobody needs to see osascript\n- **Easier to remember** - the name says it", False),
    ("Meta-Learning", "**Observation**: " + "This pattern validated itself through use, again and again. " * 4, False),
    ("", "Never amend a commit that other agents have already pulled; make a new commit instead.", True),
    ("The Rule", "**NEVER use `git commit --amend` when working with a multi-agent setup.**", False),
    ("Status", "The migration is half done: the old table still takes writes from the importer, and the new "
               "one only serves reads until the backfill finishes next week, when we switch writes over too.",
     False),
])
def test_prose_is_not_metadata(heading: str, text: str, intro: bool) -> None:
    assert not is_metadata_block(heading, text, intro)


def test_tags_and_date_are_read_from_metadata_blocks() -> None:
    assert block_tags("Tags: #git #multi-agent\n#safety") == ["git", "multi-agent", "safety"]
    assert block_date("**Date**: 2025-12-28\n**Source**: retro") == "2025-12-28"
    assert block_date("**Source**: 2025-12-28 retro") is None


HEADER_NOTE = """# Never amend in a multi-agent setup

**Date**: 2025-12-28
**Category**: Critical Safety Rule

## The Rule

Never amend a commit that agents have synced.

## Why It Breaks

Hashes change while content stays the same.

## Tags

#git #maw
"""


def test_header_block_and_tags_fold_into_neighbouring_sections() -> None:
    parsed = parse_markdown(HEADER_NOTE, "learnings/amend.md", "learning")
    chunks = parsed.chunks
    assert [c.heading for c in chunks] == ["The Rule", "Why It Breaks"]
    rule, why = chunks
    assert rule.line_start == 3 and rule.content.startswith("**Date**: 2025-12-28")
    assert "Never amend a commit" in rule.content
    assert why.content.endswith("#git #maw") and why.line_end == 16
    assert {"git", "maw"} <= set(rule.concepts) and rule.date == "2025-12-28"


def test_a_note_of_only_metadata_keeps_it() -> None:
    parsed = parse_markdown("# Links\n\n- [[a|A]]\n- [[b|B]]\n", "learnings/links.md", "learning")
    assert len(parsed.chunks) == 1 and "[[a|A]]" in parsed.chunks[0].content


def test_principle_link_bullets_are_not_chunks_of_their_own() -> None:
    text = "# P\n\n### Rule\n\nKeep it simple.\n\n- Prefer one way.\n- [[other|Other note]]\n"
    kinds = [(c.kind, c.content) for c in parse_markdown(text, "principles/p.md", "principle").chunks]
    assert ("bullet", "- Prefer one way.") in kinds
    assert not any(kind == "bullet" and "[[other" in content for kind, content in kinds)


def test_embedded_text_carries_title_and_heading_path() -> None:
    text = "# Guide\n\n## Setup\n\n### Linux\n\nInstall it.\n"
    chunk = parse_markdown(text, "principles/guide.md", "principle").chunks[-1]
    assert chunk.embed_text().startswith("Guide — Setup > Linux\n")


# -- grouping, pure ------------------------------------------------------------------------------------
def facts(id: str, file: str, kind: str = "section", parent: str | None = None, body: str | None = None,
          content: str | None = None) -> SectionFacts:
    return SectionFacts(id, file, kind, parent, content or f"h-{id}", body or f"b-{file}", id, 1, 2)


def fused(*pairs: tuple[str, float]) -> list[scoring.Fused]:
    return scoring.finish(scoring.Fused(i, s, found_by=["fts"]) for i, s in pairs)


def test_notes_group_their_sections_and_score_as_the_best() -> None:
    table = {"a1": facts("a1", "a.md"), "a2": facts("a2", "a.md"), "b1": facts("b1", "b.md")}
    groups = group_notes(fused(("a1", 0.9), ("b1", 0.8), ("a2", 0.7)), table)
    assert [(g.lead.id, g.score, [o.id for o in g.others]) for g in groups] == [("a1", 0.9, ["a2"]), ("b1", 0.8, [])]


def _keyword(*rows: tuple[str, float, float]) -> list[scoring.Fused]:
    """(id, fused score, keyword score of the section) -> fused candidates found by the keyword leg."""
    return scoring.finish(scoring.Fused(i, s, fts_score=k, found_by=["fts"]) for i, s, k in rows)


def test_a_note_sharing_the_query_between_its_sections_gains_on_one_matching_in_one() -> None:
    """a.md matches in one section (its whole-note bm25 is that section's); b.md's best section matches
    less, but the note as a whole more: the evidence beyond its best section lifts it over a.md."""
    items = _keyword(("a1", 0.8, 10.0), ("b1", 0.7, 6.0), ("b2", 0.5, 4.0))
    note_of = {"a1": "a.md", "b1": "b.md", "b2": "b.md"}
    ranked = scoring.with_note_evidence(items, note_of, {"a.md": 10.0, "b.md": 12.0}, weight=0.5)
    assert [i.id for i in ranked] == ["b1", "a1", "b2"]
    assert all(0.0 <= i.score <= 1.0 for i in ranked)


def test_one_section_notes_rank_as_before_under_note_evidence() -> None:
    """A note of one section (SciFact) has no evidence beyond that section: the order is unchanged, and
    no note evidence at all leaves every score as it was."""
    items = _keyword(("a", 0.9, 3.0), ("b", 0.8, 9.0), ("c", 0.4, 5.0))
    note_of = {"a": "a.md", "b": "b.md", "c": "c.md"}
    before = [(i.id, i.score) for i in items]
    ranked = scoring.with_note_evidence(items, note_of, {"a.md": 3.0, "b.md": 9.0, "c.md": 5.0}, weight=0.5)
    assert [i.id for i in ranked] == ["a", "b", "c"]
    assert [(i.id, i.score) for i in scoring.with_note_evidence(_keyword(("a", 0.9, 3.0), ("b", 0.8, 9.0),
            ("c", 0.4, 5.0)), note_of, {})] == before


def test_a_principle_section_answers_before_its_bullet() -> None:
    table = {"s": facts("s", "p.md"), "b": facts("b", "p.md", kind="bullet", parent="s"),
             "x": facts("x", "q.md", kind="bullet", parent="absent")}
    groups = group_notes(fused(("b", 0.9), ("s", 0.5), ("x", 0.6)), table)
    assert [(g.lead.id, g.score) for g in groups] == [("s", 0.9), ("x", 0.6)]
    assert [o.id for o in groups[0].others] == ["b"]


def test_identical_notes_and_sections_appear_once() -> None:
    table = {"a": facts("a", "en/x.md", body="same", content="c"), "b": facts("b", "th/x.md", body="same", content="c"),
             "c": facts("c", "y.md", content="c")}
    groups = fold_duplicate_notes(group_notes(fused(("a", 0.9), ("b", 0.9), ("c", 0.5)), table), table)
    assert [(g.lead.id, [d.id for d in g.duplicates]) for g in groups] == [("a", ["b"]), ("c", [])]
    kept, folded = fold_duplicate_sections(fused(("a", 0.9), ("b", 0.9), ("c", 0.5)), table)
    assert [k.id for k in kept] == ["a"] and [f.id for f in folded["a"]] == ["b", "c"]


def test_weakness_needs_absolute_evidence() -> None:
    strong_vector = scoring.Fused("v", 1.0, vector_similarity=scoring.WEAK_SIMILARITY)
    strong_keyword = scoring.Fused("k", 1.0, fts_score=scoring.WEAK_BM25)
    faint = scoring.Fused("f", 1.0, fts_score=3.0, vector_similarity=0.2)  # top of its page, still faint
    assert not scoring.is_weak(strong_vector) and not scoring.is_weak(strong_keyword)
    assert scoring.is_weak(faint) and not scoring.is_weak(faint, covered=True)
    assert scoring.covers(1, 1) and scoring.covers(2, 2) and not scoring.covers(1, 2)
    assert scoring.covers(2, 3) and not scoring.covers(3, 5)
    # The bm25 needed grows with the index: idf grows with the log of the number of sections.
    assert scoring.weak_bm25(300) < scoring.weak_bm25(scoring.CALIBRATION_CHUNKS) == scoring.WEAK_BM25
    assert covered_share("how do we quote terms") == 1.0
    assert covered_share("ฟอนต์ภาษาไทย font") < 0.5


# -- the note unit through the real index ------------------------------------------------------------
def test_a_page_holds_distinct_notes_with_their_other_sections(search_index) -> None:
    result = run(search_index, "quokka", mode="fts", limit=10)
    files = [h.source_file for h in result.hits]
    assert result.meta.unit == "note" and len(files) == 10 == len(set(files))
    assert result.total == QUOKKA_FILES
    logs = [h for h in result.hits if h.source_file in _corpus.QUOKKA_LOGS]
    assert logs and all(len(h.sections) == 1 and h.also_in_file == [h.sections[0].id] for h in logs)
    for hit in logs:
        listed = hit.sections[0]
        assert listed.heading in ("Morning count", "Evening notes") and listed.heading != hit.heading
        assert listed.line_start <= listed.line_end and listed.score <= hit.score


def test_section_unit_and_group_by_file_false_keep_sections(search_index) -> None:
    sections = run(search_index, "quokka", mode="fts", limit=100, unit="section")
    legacy = run(search_index, "quokka", mode="fts", limit=100, group_by_file=False)
    assert sections.meta.unit == "section" and dump(sections) == dump(legacy)
    assert len({h.source_file for h in sections.hits}) < len(sections.hits)
    assert run(search_index, "quokka", mode="fts", limit=10, group_by_file=True).meta.unit == "note"


@pytest.mark.parametrize("mode", ["fts", "vector", "hybrid"])
def test_note_pages_are_disjoint_concatenate_and_repeat(search_index, search_twin, mode: str) -> None:
    whole = run(search_index, "quokka care in the shade", mode=mode, limit=12)
    first = run(search_index, "quokka care in the shade", mode=mode, limit=6)
    second = run(search_index, "quokka care in the shade", mode=mode, limit=6, offset=6)
    assert [h.id for h in first.hits + second.hits] == [h.id for h in whole.hits]
    assert dump(whole) == dump(run(search_index, "quokka care in the shade", mode=mode, limit=12))
    assert dump(whole) == dump(run(search_twin, "quokka care in the shade", mode=mode, limit=12))


def test_the_principle_section_leads_its_bullets(search_index) -> None:
    hit = next(h for h in run(search_index, "quokka shade noon", mode="fts", limit=20).hits
               if h.source_file == QUOKKA_PRINCIPLE)
    assert hit.kind == "section" and hit.heading == "Quokka care"
    assert any(s.heading == "Quokka care" for s in hit.sections)  # its bullets, listed


def test_the_index_knows_whether_it_holds_thai(search_index, tmp_path, make_oracle) -> None:
    """A server loads the Thai segmenter ahead of the first query only when some note holds Thai."""
    assert search_index.store.has_thai()
    write(tmp_path / "root/learnings/a.md", "# Café notes\n\n## Body\n\nNaïve résumé, no Thai here.\n")
    english = make_oracle(tmp_path / "root", tmp_path / "data")
    english.indexer.sync()
    assert english.store.chunk_count() == 1 and not english.store.has_thai()


def test_sentence_length_thai_query_finds_the_note(search_index) -> None:
    result = run(search_index, "แมวไปตลาดนัดซื้อมะม่วง", mode="fts", limit=5)
    assert result.hits and result.hits[0].source_file == THAI_FILE


def test_thai_query_says_which_model_ranked_it(search_index) -> None:
    """The corpus holds Thai, so (ORACLE_MULTILINGUAL=auto) it has multilingual vectors for Thai queries."""
    thai = run(search_index, "แมวไปตลาดนัดซื้อมะม่วง", mode="hybrid", limit=5).meta
    assert thai.semantic_model == "use-multilingual-v3" and thai.semantic_weight == 0.5
    # said once, in stats, not on every Thai answer (issue 40): meta.semantic_model names the model
    assert not any("script" in w for w in thai.warnings)
    from oracle_server.services.capabilities.stats import stats
    from oracle_server.mcp.instructions import live_instructions
    assert "multilingual model (use-multilingual-v3)" in stats(search_index).embeddings.scripts
    assert "Thai/CJK questions are ranked by a multilingual model" in live_instructions(search_index, "Oracle.")
    english = run(search_index, "never feed a quokka bread", mode="hybrid").meta
    assert english.semantic_model == "all-MiniLM-L6-v2-int8" and english.semantic_weight == 0.3
    unsure = run(search_index, "quokka", mode="hybrid").meta  # one word in most notes: a weak keyword match
    assert unsure.semantic_model == "all-MiniLM-L6-v2-int8" and unsure.semantic_weight == 0.5
    assert not any("script" in w for w in english.warnings)


def test_gibberish_is_marked_weak_and_a_real_match_is_not(search_index) -> None:
    nothing = run(search_index, GIBBERISH, limit=5)
    assert nothing.hits and nothing.meta.weak and all(h.weak for h in nothing.hits)
    assert any(w.startswith("no strong match") for w in nothing.meta.warnings)
    found = run(search_index, "quokka", limit=5)
    assert not found.meta.weak and not found.hits[0].weak


def test_consult_gives_no_sources_for_gibberish(search_index) -> None:
    result = consult(search_index, ConsultRequest(decision=GIBBERISH))
    assert result.principles == [] and result.learnings == []
    assert "(no relevant principles or learnings found)" in result.guidance
    assert any("no sources given" in w for w in result.warnings)
    real = consult(search_index, ConsultRequest(decision="Should I quote search terms before passing them to FTS5?"))
    assert real.principles or real.learnings


# -- small knowledge bases of their own ---------------------------------------------------------------
COPY = "---\ntitle: Locale copy\n---\n# Locale copy\n\n## Body\n\nThe wombat burrow rule: never block an exit.\n"


def test_identical_notes_fill_one_slot_and_consult_cites_one(tmp_path, make_oracle) -> None:
    root = tmp_path / "root"
    write(root / "learnings/en/wombat.md", COPY)
    write(root / "learnings/th/wombat.md", COPY.replace("---\ntitle", "---\ndate: 2026-01-02\ntitle"))
    write(root / "learnings/other.md", "# Other\n\n## Body\n\nWombat burrows can be long; rangers map each exit.\n")
    write(root / "principles/p.md", "# P\n\n### Burrows\n\nLeave every wombat burrow exit clear.\n")
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    result = run(oracle, "wombat burrow exit", mode="fts", limit=10)
    copies = {"learnings/en/wombat.md", "learnings/th/wombat.md"}
    kept = [h for h in result.hits if h.source_file in copies]
    assert len(kept) == 1 and [d.source_file for d in kept[0].duplicates] == sorted(copies - {kept[0].source_file})
    assert len(result.hits) == 3  # the copy, the other learning, the principle
    sections = run(oracle, "wombat burrow exit", mode="fts", limit=10, unit="section")
    assert len({h.content_hash for h in sections.hits}) == len(sections.hits)
    advice = consult(oracle, ConsultRequest(decision="Can I block a wombat burrow exit?"))
    cited = [s.content_hash for s in advice.principles + advice.learnings]
    assert cited and len(cited) == len(set(cited))


def test_a_relation_hit_leads_with_a_real_score(tmp_path, make_oracle) -> None:
    root = tmp_path / "root"
    write(root / "learnings/a.md", "# Ferries\n\n## Timetable\n\nThe harbour ferry leaves at seven every morning.\n")
    write(root / "learnings/b.md", "# Harbour\n\n## Notes\n\nThe harbour ferry is late in winter storms.\n")
    write(root / "learnings/rel.md", "---\nrelations: [[oracle, stores index in, sqlite]]\n---\n# Storage\n\n"
                                     "## Where\n\nEverything about disks and files.\n")
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    result = run(oracle, "harbour ferry", subject="oracle", limit=5)
    first = result.hits[0]
    assert first.source_file == "learnings/rel.md" and "relation" in first.found_by
    assert first.score > 0 and first.score >= max(h.score for h in result.hits[1:])
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_notes_keep_the_supersession_placement_of_their_sections():
    """A superseded note sits right after its successor on a page of notes (issue 27: grouping used to sort
    the notes by score again, which put an unrelated note between them)."""
    from oracle_server.services.capabilities.search.notes import group_notes

    def fact(i: str, file: str) -> SectionFacts:
        return SectionFacts(i, file, "section", None, i, file, "", 1, 2)

    facts = {"s": fact("s", "new.md"), "o": fact("o", "old.md"), "x": fact("x", "other.md")}
    fused = scoring.adjust([scoring.Fused("o", 1.0), scoring.Fused("s", 0.9), scoring.Fused("x", 0.8)],
                           {}, {"o": frozenset({"s"})})
    assert [f.id for f in fused] == ["s", "o", "x"]  # the section order: o scaled to 0.5, placed after s
    assert [g.lead.id for g in group_notes(fused, facts)] == ["s", "o", "x"]
