"""The fusion of a search's phrasings (server/services/search/variants.py), pure: no database."""

from __future__ import annotations

from oracle_server.services.search.variants import distinct_phrasings, fuse


def test_a_note_several_phrasings_find_outranks_one_that_a_single_phrasing_ranks_first():
    fused = fuse([["a", "b", "c"], ["c", "d"], ["c", "e"]], [1.0, 1.0, 1.0], k=60)
    assert [f.key for f in fused][:2] == ["c", "a"]
    c = fused[0]
    assert c.phrasings == (0, 1, 2) and c.best_rank == 0
    assert abs(c.score - (1 / 63 + 1 / 61 + 1 / 61)) < 1e-12


def test_weights_favour_the_question_as_asked():
    equal = fuse([["a"], ["b"]], [1.0, 1.0])
    heavier = fuse([["a"], ["b"]], [2.0, 1.0])
    assert [f.key for f in equal] == ["a", "b"]  # a tie: the earlier phrasing first
    assert heavier[0].key == "a" and heavier[0].score > 1.9 * heavier[1].score


def test_ties_break_the_same_way_every_time_and_on_the_key_last():
    rankings = [["x", "y"], ["y", "x"]]
    first = fuse(rankings, [1.0, 1.0])
    assert [(f.key, f.score) for f in first] == [(f.key, f.score) for f in fuse(rankings, [1.0, 1.0])]
    assert [f.key for f in first] == ["x", "y"]  # same score, same best rank: the query's first found wins
    assert [f.key for f in fuse([["n"], ["m"]], [1.0, 1.0], k=0)] == ["n", "m"]
    assert [f.key for f in fuse([["n", "m"]], [1.0]) ] == ["n", "m"]


def test_a_key_twice_in_one_ranking_counts_once_at_its_better_rank():
    fused = fuse([["a", "a", "b"]], [1.0], k=60)
    assert [f.key for f in fused] == ["a", "b"] and abs(fused[0].score - 1 / 61) < 1e-12
    assert fused[0].phrasings == (0,)


def test_no_rankings_fuse_to_nothing():
    assert fuse([[], []], [1.0, 1.0]) == []


def test_phrasings_that_repeat_the_query_are_dropped():
    assert distinct_phrasings("Deploy rollback", ["deploy   ROLLBACK", " 502 on deploy ", "502 on deploy"]) == [
        "Deploy rollback", "502 on deploy"]
