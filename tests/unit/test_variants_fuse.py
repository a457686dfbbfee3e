"""The fusion of a search's phrasings (server/services/search/variants.py), pure: no database."""

from __future__ import annotations

from oracle_server.services.search.variants import depth, distinct_phrasings, fuse, weights


def test_a_note_several_phrasings_find_outranks_one_that_a_single_phrasing_ranks_first():
    fused = fuse([[("a", 0.9), ("b", 0.5), ("c", 0.45)], [("c", 0.4), ("d", 0.2)], [("c", 0.7), ("e", 0.6)]],
                 [1.0, 1.0, 1.0])
    assert [f.key for f in fused][:2] == ["c", "a"]
    c = fused[0]
    assert c.phrasings == (0, 1, 2) and c.best_rank == 0
    assert abs(c.score - (0.45 / 0.9 + 1.0 + 1.0)) < 1e-12


def test_each_phrasing_counts_by_its_own_best_score_not_by_its_scale():
    # the second phrasing's scores are ten times smaller: max-normalised, its best counts as much as the first's
    fused = fuse([[("a", 0.8), ("b", 0.2)], [("b", 0.08), ("a", 0.02)]], [1.0, 1.0])
    by_key = {f.key: f.score for f in fused}
    assert abs(by_key["a"] - 1.25) < 1e-12 and abs(by_key["b"] - 1.25) < 1e-12
    assert [f.key for f in fused] == ["a", "b"]  # a tie: same best rank, the earlier phrasing's key first


def test_a_confident_phrasing_outweighs_one_that_barely_prefers_its_first():
    # the first phrasing is sure of x (0.9 vs 0.1), the second hardly prefers y over x (0.50 vs 0.49)
    fused = fuse([[("x", 0.9), ("y", 0.1)], [("y", 0.50), ("x", 0.49)]], [1.0, 1.0])
    assert [f.key for f in fused] == ["x", "y"]


def test_weights_favour_the_question_as_asked():
    equal = fuse([[("a", 1.0)], [("b", 1.0)]], [1.0, 1.0])
    heavier = fuse([[("a", 1.0)], [("b", 1.0)]], [2.0, 1.0])
    assert [f.key for f in equal] == ["a", "b"]  # a tie: the earlier phrasing first
    assert heavier[0].key == "a" and heavier[0].score > 1.9 * heavier[1].score
    assert weights(3) == [1.0, 1.0, 1.0]


def test_ties_break_the_same_way_every_time_and_on_the_key_last():
    rankings = [[("x", 0.5), ("y", 0.5)], [("y", 0.5), ("x", 0.5)]]
    first = fuse(rankings, [1.0, 1.0])
    assert [(f.key, f.score) for f in first] == [(f.key, f.score) for f in fuse(rankings, [1.0, 1.0])]
    assert [f.key for f in first] == ["x", "y"]  # same score, same best rank: the query's first found wins
    assert [f.key for f in fuse([[("n", 0.0)], [("m", 0.0)]], [1.0, 1.0])] == ["n", "m"]


def test_a_key_twice_in_one_ranking_counts_once_at_its_better_rank():
    fused = fuse([[("a", 0.6), ("a", 0.3), ("b", 0.3)]], [1.0])
    assert [f.key for f in fused] == ["a", "b"] and abs(fused[0].score - 1.0) < 1e-12
    assert fused[0].phrasings == (0,)


def test_a_ranking_without_a_positive_score_adds_nothing_but_still_finds():
    fused = fuse([[("a", 0.0), ("b", -1.0)], [("b", 0.4)]], [1.0, 1.0])
    assert [f.key for f in fused] == ["b", "a"] and fused[0].phrasings == (0, 1) and fused[1].score == 0.0


def test_no_rankings_fuse_to_nothing():
    assert fuse([[], []], [1.0, 1.0]) == []


def test_each_phrasing_ranks_at_least_the_page_asked_for():
    assert depth(0, 10) == 20 and depth(15, 10) == 25


def test_phrasings_that_repeat_the_query_are_dropped():
    assert distinct_phrasings("Deploy rollback", ["deploy   ROLLBACK", " 502 on deploy ", "502 on deploy"]) == [
        "Deploy rollback", "502 on deploy"]
