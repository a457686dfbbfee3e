"""What the asking agent is told (issue 37): the words a weak page offers to try next (pure,
server/services/capabilities/search/vocabulary.py), what the notes look like in the instructions (pure,
server/services/support/guide.py), and both on a real index: the search result's `try`, and the live instructions,
bounded to Claude Code's 2 KB on a big base and refreshed when the index changes."""

from __future__ import annotations

import shutil

import pytest

from _corpus import BUNDLED, open_oracle
from oracle_server.mcp.instructions import SURFACE, compose, live_instructions
from oracle_server.mcp.server import INSTRUCTIONS
from oracle_server.registry.render import search as render_search
from oracle_server.registry.text import search_text
from oracle_server.services.support import guide
from oracle_server.services.vocabulary.models import SearchRequest, SearchResult
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.search.vocabulary import Near, try_terms


# -- pure: the words to try ---------------------------------------------------------------------------------
NEAR = [
    Near("Route traffic only to containers that are ready", ("Context", "Readiness probes"),
         ("deploy", "kubernetes", "learning", "readiness")),
    Near("Blue-green cutover checklist", ("Fix",), ("deploy", "load-balancer")),
    Near("บันทึกการ deploy ครั้งแรก", ("สิ่งที่เรียนรู้",), ("deploy", "ระบบ")),
]


def test_try_terms_prefer_rare_concepts_of_the_nearest_notes():
    # deploy: in all three notes but common in the base; readiness: one note, rare
    counts = {"deploy": 400, "kubernetes": 3, "readiness": 2, "load-balancer": 5, "ระบบ": 50}
    words = try_terms("pods restart during rollout", NEAR, counts, sections=1000)
    assert words[:3] == ["readiness", "kubernetes", "load-balancer"]
    assert "learning" not in words  # a type name says nothing about the subject
    assert "deploy" not in words  # on 40% of the sections: says too little
    assert "Context" not in words and "Fix" not in words  # structural headings are left out
    # titles, then headings, in the question's script first: the Thai title waits behind the English heading
    assert words[-3:] == ["Route traffic only to containers that are ready", "Blue-green cutover checklist",
                          "Readiness probes"]


def test_try_terms_leave_out_what_the_question_says_and_repeat_nothing():
    words = try_terms("readiness of kubernetes deploy", NEAR, {}, sections=1000)
    assert not {"readiness", "kubernetes", "deploy"} & {w.casefold() for w in words}
    assert len({w.casefold() for w in words}) == len(words)


def test_try_terms_come_in_the_questions_script_first():
    words = try_terms("deploy ล่มทุกครั้งตอนอัปเดต", NEAR, {"ระบบ": 50}, sections=1000, words=2, phrases=2)
    assert words[0] == "ระบบ"  # the Thai concept before the English ones
    assert words[2] == "บันทึกการ deploy ครั้งแรก"  # and the Thai title before the English titles


def test_try_terms_are_bounded_and_deterministic():
    words = try_terms("rollout", NEAR, {}, sections=1000, words=2, phrases=1)
    assert len(words) == 3
    assert words == try_terms("rollout", list(NEAR), {}, sections=1000, words=2, phrases=1)
    assert try_terms("rollout", [], {}, sections=1000) == []


# -- pure: what the notes look like -------------------------------------------------------------------------
def big_profile() -> guide.Profile:
    """A nat-brain-sized base and more: thousands of long concepts, many folders and languages."""
    concepts = {f"a-rather-long-concept-name-{i:04d}": 2 + i % 97 for i in range(5000)}
    concepts.update({"context": 5000, "problem": 4000, "sqlite": 300})
    folders = {f"folder-{i:02d}": 10 + i for i in range(40)}
    languages = {"en": 1088, "th": 26, "de": 3, "ja": 2, "zh": 2, "pl": 2, "unknown": 99}
    return guide.Profile(notes=1222, sections=7310, languages=languages, folders=folders,
                         types={"learning": 835, "retro": 367, "principle": 20}, concepts=concepts)


def test_guide_text_fits_the_room_and_keeps_what_matters_first():
    p = big_profile()
    text = guide.guide_text(p, room=400)
    assert len(text.encode("utf-8")) <= 400
    assert text.startswith("Languages: en 1,088, unknown 99, th 26, de 3, other 6; folders: folder-39/ 49,")
    assert "main concepts: sqlite" in text  # as many concepts as fit, the most telling first
    assert "context" not in text and "problem" not in text  # structural headings are not concepts
    roomy = guide.guide_text(p)
    assert roomy.count(",", roomy.index("main concepts")) == guide.GUIDE_CONCEPTS - 1
    tight = guide.guide_text(p, room=120)
    assert len(tight.encode("utf-8")) <= 120 and "main concepts" not in tight
    assert guide.guide_text(guide.Profile(0, 0, {}, {}, {}, {})) == "No notes are indexed yet."


def test_instructions_on_a_big_base_stay_within_2_kb_what_matters_first():
    state = guide.Health(notes=1222, types={"learning": 835, "principle": 20, "retro": 367}, sections=7310,
                         coverage=1.0, vector_down="x" * 500, indexing=True, last_indexed=1.8e9)
    text = compose(INSTRUCTIONS, state, big_profile())
    assert len(text.encode("utf-8")) <= guide.INSTRUCTIONS_BYTES == 2048
    order = [text.index(s) for s in ("oracle_consult", "How to ask", "Right now: 1222 notes", "vector store DOWN",
                                     "Languages: en 1,088", "folders: folder-39/", "main concepts: sqlite")]
    assert order == sorted(order)
    assert text.endswith(SURFACE)


def test_how_to_ask_is_in_the_static_instructions():
    assert INSTRUCTIONS.endswith(guide.HOW_TO_ASK)
    assert "variants" in guide.HOW_TO_ASK and "`try`" in guide.HOW_TO_ASK


# -- a real index -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    root = tmp_path_factory.mktemp("vocab-root")
    for folder in ("principles", "learnings", "retrospectives"):
        shutil.copytree(BUNDLED / folder, root / folder)
    oracle = open_oracle(root, tmp_path_factory.mktemp("vocab-data"))
    oracle.indexer.sync()
    yield oracle, root
    oracle.close()


def test_a_weak_page_offers_the_nearest_notes_words(bundled):
    oracle, _ = bundled
    result = run_search(oracle, SearchRequest(query="how long to knead sourdough bread", limit=5))
    assert result.meta.weak and result.try_
    assert len(result.try_) <= 9
    titles = [h.title for h in result.hits]
    assert set(result.try_) & set(titles)  # the nearest notes' titles are among the words offered
    data = result.model_dump(mode="json")
    assert data["try"] == result.try_ and "try_" not in data  # `try` over HTTP and MCP
    assert SearchResult.model_validate(data).try_ == result.try_
    assert "try the notes' own words: " + "; ".join(result.try_) in search_text(None, result)
    assert any(line.strip().startswith("try the notes' own words") for line in render_search(data)[0])
    again = run_search(oracle, SearchRequest(query="how long to knead sourdough bread", limit=5))
    assert again.try_ == result.try_


def test_a_strong_page_offers_nothing_and_an_empty_one_the_main_concepts(bundled):
    oracle, _ = bundled
    strong = run_search(oracle, SearchRequest(query="quote fts5 search terms", limit=5))
    assert not strong.meta.weak and strong.try_ == []
    empty = run_search(oracle, SearchRequest(query="zzqxv", mode="fts"))
    assert not empty.hits and empty.try_ == guide.main_concepts(oracle, 6) and empty.try_


def test_live_instructions_describe_the_notes_and_follow_the_index(bundled):
    oracle, root = bundled
    text = live_instructions(oracle, INSTRUCTIONS)
    assert len(text.encode("utf-8")) <= guide.INSTRUCTIONS_BYTES
    assert text.index("How to ask") < text.index("Right now:") < text.index("Languages: en")
    assert "folders: principles/ 15, learnings/ 14, retrospectives/ 4; main concepts: " in text
    (root / "learnings" / "zz-new.md").write_text(
        "---\ntags: [zebra-crossing]\n---\n# Zebra crossings\n\nPaint zebra crossings white.\n", encoding="utf-8")
    (root / "learnings" / "zz-new-2.md").write_text(
        "---\ntags: [zebra-crossing]\n---\n# More zebra crossings\n\nRepaint them yearly.\n", encoding="utf-8")
    oracle.indexer.sync()
    after = live_instructions(oracle, INSTRUCTIONS)
    assert after != text and f"Right now: {guide.profile(oracle).notes} notes" in after
