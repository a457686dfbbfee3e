"""Query expansion from the first ranking's best sections (server/services/capabilities/search/expansion.py), the keyword floor and the
mixing in scoring, and one real search where only expansion finds a note that shares no word with the question."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from _corpus import BUNDLED, open_oracle
from oracle_server.services.capabilities.search import expansion
from oracle_server.services.capabilities.search import scoring
from oracle_server.services.vocabulary.models import SearchRequest
from oracle_server.services.capabilities.search.scoring import LegHit
from oracle_server.services.capabilities.search.pipeline import run_search


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


# -- staying on topic: a near-unique word of the question outranks generic matches ---------------------------
def test_near_unique_terms_are_the_question_words_in_a_few_sections():
    counts = {"users": 40, "502": 1, "roll": 3, "version": 30, "absent": 0}
    assert expansion.near_unique_terms(counts) == frozenset({"502", "roll"})
    assert expansion.near_unique_terms({"new": 400, "absent": 0}) == frozenset()


def test_on_topic_sources_pass_over_generic_matches_above_a_near_unique_one():
    # laptop and release: the keyword leg alone, on generic words; answer holds "502"
    ranked = [("laptop", True), ("release", True), ("answer", True)]
    assert expansion.on_topic_sources(ranked, frozenset({"answer"})) == ["answer"]
    # a section the vector leg backs stays, as does one below the holder
    assert expansion.on_topic_sources([("meaning", False), ("answer", True), ("after", True)],
                                      frozenset({"answer"})) == ["meaning", "answer", "after"]
    # the first holds one, or none does: the sources as they come
    assert expansion.on_topic_sources(ranked, frozenset({"laptop"})) == ["laptop", "release", "answer"]
    assert expansion.on_topic_sources(ranked, frozenset()) == ["laptop", "release", "answer"]


ROLLOUT = """---
title: Route traffic only to containers that are ready
tags: [deploy, load-balancer]
---
# Route traffic only to containers that are ready

During a rolling deploy the load balancer sent requests to containers that were still starting, and
clients got 502 Bad Gateway until the app had warmed up. Fix: a readiness endpoint that answers only once
the app has loaded its caches; the balancer waits for it before routing, and the old containers drain first.
"""
LAPTOP = """---
title: The laptop setup script
tags: [onboarding]
---
# The laptop setup script

Every time someone gets a new laptop they run the setup script. It installs redis, postgres and the
node version we use, so users see the same versions everywhere. When a new version of redis comes out,
bump it in the script first and tell users to run it again.
"""
RELEASE_NOTES = """---
title: Release notes people read
tags: [release]
---
# Release notes people read

People skim. Each release gets three lines at the top: what changed for them, what they must do,
and who to ask. The long changelog comes after.
"""
ROLLOUT_QUESTION = "users see 502 errors every time we roll out a new version"


@pytest.fixture(scope="module")
def rollout_oracle(tmp_path_factory):
    """The issue's failure (issue 37, item 5): the bundled notes, a note answering the question in other words,
    and a set-up script note that shares the question's generic words (users, every time, new version)."""
    root = tmp_path_factory.mktemp("rollout-root")
    for folder in ("principles", "learnings", "retrospectives"):
        shutil.copytree(BUNDLED / folder, root / folder)
    for name, text in (("readiness-before-traffic", ROLLOUT), ("laptop-setup-script", LAPTOP),
                       ("release-notes", RELEASE_NOTES)):
        (root / "learnings" / f"{name}.md").write_text(text, encoding="utf-8")
    oracle = open_oracle(root, tmp_path_factory.mktemp("rollout-data"))
    oracle.indexer.sync()
    yield oracle
    oracle.close()


def test_expansion_takes_its_words_from_the_note_holding_the_near_unique_word(rollout_oracle):
    result = run_search(rollout_oracle, SearchRequest(query=ROLLOUT_QUESTION, mode="hybrid", limit=10))
    files = [h.source_file for h in result.hits]
    assert files[0] == "learnings/readiness-before-traffic.md"
    words = set(result.meta.expanded_with)
    assert words and not words & {"setup", "script", "laptop", "redis", "someone", "everywhere"}
    assert {"containers", "deploy", "traffic"} <= words
    assert "expansion" in result.hits[0].found_by
    # without expansion's help the set-up note led: the answer's own words put it first
    plain = run_search(rollout_oracle, SearchRequest(query=ROLLOUT_QUESTION, mode="hybrid", fusion="rrf", limit=10))
    assert [h.source_file for h in plain.hits][0] == "learnings/laptop-setup-script.md"
