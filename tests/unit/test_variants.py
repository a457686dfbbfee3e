"""A search's phrasings (server/services/capabilities/search/variants.py), pure: no database."""

from __future__ import annotations

from oracle_server.services.capabilities.search.query import build_keyword_query
from oracle_server.services.capabilities.search.variants import distinct_phrasings, holding, joined


def test_phrasings_that_repeat_the_query_are_dropped():
    assert distinct_phrasings("Deploy rollback", ["deploy   ROLLBACK", " 502 on deploy ", "502 on deploy"]) == [
        "Deploy rollback", "502 on deploy"]


def test_the_joined_question_leads_with_the_query_and_keeps_every_phrasing_apart():
    text = joined(["users see 502 errors during deploys", "502 bad gateway rollout", "nginx upstream restart"])
    assert text.startswith("users see 502 errors during deploys")
    assert text.split("\n") == ["users see 502 errors during deploys", "502 bad gateway rollout",
                                "nginx upstream restart"]
    # the keyword query holds the words of every phrasing, the query's first
    terms = build_keyword_query(text).terms
    assert terms[0] == "users" and {"gateway", "rollout", "nginx", "upstream"} <= set(terms)


def test_a_hit_holds_the_phrasings_most_of_whose_words_it_contains():
    terms = [("deploy", "502", "errors"), ("gateway", "rollout"), ("nginx",)]
    assert holding(terms, {0: 2, 1: 1, 2: 1}) == [0, 2]  # 2 of 3 is most; 1 of 2 is not
    assert holding(terms, {1: 2}) == [1]
    assert holding(terms, {}) == []  # found by meaning alone: no phrasing's words
    assert holding([(), ("a",)], {0: 0, 1: 1}) == [1]  # a phrasing without keyword terms holds nothing
