"""Query expansion from the first ranking's best sections (server/services/search/expansion.py), the keyword floor and the
mixing in scoring, and one real search where only expansion finds a note that shares no word with the question."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from _corpus import BUNDLED, open_oracle
from oracle_server.services.search import expansion
from oracle_server.services.search import scoring
from oracle_server.services.models import SearchRequest
from oracle_server.services.search.scoring import LegHit
from oracle_server.services.search.pipeline import run_search


# -- pure: the words --------------------------------------------------------------------------------------
def test_section_words_keep_spaced_script_words_only():
    text = "The Clipboard API: navigator.clipboard.writeText() in v2, see ไม่ต้อง 剪贴板 Übergröße ok"
    assert expansion.section_words(text) == ["clipboard", "api", "navigator", "clipboard", "writetext", "see",
                                             "übergrösse"]


def test_section_words_are_bounded_per_section():
    text = "alpha " * 10 + "x" * expansion.MAX_SOURCE_CHARS + " omega"
    assert "omega" not in expansion.section_words(text)


def test_word_weights_favour_the_best_section_and_skip_the_query():
    weight = expansion.word_weights(["clipboard writetext clipboard", "clipboard fallback"], frozenset({"fallback"}))
    assert weight == Counter({"clipboard": 2 / 3 + 1 / 2 / 2, "writetext": 1 / 3})


def test_expansion_terms_want_words_rare_in_the_index_but_not_unique():
    weight = Counter({"common": 0.9, "unique": 0.8, "rare": 0.5, "rarer": 0.5, "absent": 0.4})
    counts = {"common": 50, "unique": 1, "rare": 4, "rarer": 2}
    # common: in 50 of 100 sections (over MAX_DOCUMENT_SHARE); unique: only its own section; absent: none
    assert expansion.expansion_terms(weight, counts, sections=100) == ("rarer", "rare")


def test_expansion_terms_break_ties_by_frequency_rank_then_word():
    weight = Counter({"beta": 0.5, "alpha": 0.5})
    assert expansion.expansion_terms(weight, {"alpha": 3, "beta": 3}, sections=100) == ("alpha", "beta")
    assert expansion.candidate_words(weight) == ["alpha", "beta"]


def test_expansion_terms_are_capped():
    weight = Counter({f"w{chr(97 + i)}ord": 1.0 - i / 100 for i in range(26)})
    terms = expansion.expansion_terms(weight, dict.fromkeys(weight, 3), sections=1000, limit=5)
    assert terms == ("waord", "wbord", "wcord", "wdord", "weord")


# -- pure: the scores ---------------------------------------------------------------------------------------
def test_a_weak_best_keyword_match_no_longer_counts_as_a_perfect_one():
    fts = [LegHit("chance", 4.0)]
    vec = [LegHit("answer", 0.7), LegHit("chance", 0.4), LegHit("other", 0.1)]
    plain = scoring.weighted(fts, vec, semantic_weight=0.5)
    floored = scoring.weighted(fts, vec, semantic_weight=0.5, keyword_floor=16.0)
    assert [(f.id, f.score) for f in plain][:2] == [("chance", 0.75), ("answer", 0.5)]
    assert [(f.id, f.score) for f in floored][:2] == [("answer", 0.5), ("chance", 0.5 * 4.0 / 16.0 + 0.25)]
    # a strong best keeps its own scale
    assert scoring.weighted([LegHit("a", 20.0)], [], keyword_floor=16.0)[0].score == round(0.7, 6)
    assert scoring.keyword_floor(14.0) == scoring.KEYWORD_FLOOR * 14.0


def test_with_expansion_mixes_into_the_keyword_part():
    fused = scoring.weighted([LegHit("a", 10.0)], [LegHit("a", 0.9), LegHit("b", 0.5)], semantic_weight=0.3)
    a_before = next(f.score for f in fused if f.id == "a")
    out = scoring.with_expansion(fused, [LegHit("c", 8.0), LegHit("a", 4.0)], semantic_weight=0.3, share=0.5)
    by_id = {f.id: f for f in out}
    part = 0.5 * 0.7
    assert by_id["a"].score == round((1 - part) * a_before + part * 0.5, 6)
    assert by_id["c"].score == round(part * 1.0, 6) and by_id["c"].found_by == ["expansion"]
    assert by_id["a"].found_by == ["expansion", "fts", "vector"] and by_id["a"].expansion_score == 4.0
    assert by_id["b"].expansion_score is None
    assert [f.id for f in out] == sorted(by_id, key=lambda i: (-by_id[i].score, i))


def test_with_expansion_without_hits_changes_nothing():
    fused = scoring.weighted([LegHit("a", 1.0)], [LegHit("b", 0.5)])
    assert scoring.with_expansion(fused, [], semantic_weight=0.3) is fused


# -- a real search ----------------------------------------------------------------------------------------
CLIPBOARD = """---
type: learning
---
# Copy buttons: navigator.clipboard.writeText

A copy button should call navigator.clipboard.writeText(text). It needs a secure context; where the
Clipboard API is missing, fall back to document.execCommand('copy') on a hidden textarea.
"""
SESSION = """---
type: retrospective
---
# Friday session

## Evening
Shipped the writeText fallback: execCommand when navigator.clipboard is undefined on plain http.
"""


@pytest.fixture(scope="module")
def paraphrase_oracle(tmp_path_factory):
    root = tmp_path_factory.mktemp("expansion-root")
    for folder in ("principles", "learnings", "retrospectives"):
        shutil.copytree(BUNDLED / folder, root / folder)
    (root / "learnings" / "copy-buttons.md").write_text(CLIPBOARD, encoding="utf-8")
    (root / "retrospectives" / "friday-session.md").write_text(SESSION, encoding="utf-8")
    oracle = open_oracle(root, tmp_path_factory.mktemp("expansion-data"))
    oracle.indexer.sync()
    yield oracle
    oracle.close()


QUESTION = "my button that puts a snippet into the paste buffer does nothing"


def test_expansion_finds_a_note_sharing_no_word_with_the_question(paraphrase_oracle):
    keyword = run_search(paraphrase_oracle, SearchRequest(query=QUESTION, mode="fts", limit=50))
    assert "retrospectives/friday-session.md" not in [h.source_file for h in keyword.hits]
    result = run_search(paraphrase_oracle, SearchRequest(query=QUESTION, mode="hybrid", limit=10))
    files = [h.source_file for h in result.hits]
    assert files[0] == "learnings/copy-buttons.md"
    assert {"clipboard", "writetext", "execcommand"} <= set(result.meta.expanded_with)
    session = result.hits[files.index("retrospectives/friday-session.md")]
    assert session.found_by[0] == "expansion" and session.breakdown.expansion_score > 0
    # deterministic: the same question gives the same bytes
    again = run_search(paraphrase_oracle, SearchRequest(query=QUESTION, mode="hybrid", limit=10))
    assert again.model_dump(exclude={"meta": {"took_ms"}}) == result.model_dump(exclude={"meta": {"took_ms"}})


def test_rrf_fusion_and_single_legs_do_not_expand(paraphrase_oracle):
    for kw in ({"mode": "hybrid", "fusion": "rrf"}, {"mode": "fts"}, {"mode": "vector"}):
        result = run_search(paraphrase_oracle, SearchRequest(query=QUESTION, **kw))
        assert result.meta.expanded_with == []
        assert all("expansion" not in h.found_by for h in result.hits)
