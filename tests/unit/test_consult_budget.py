"""Consult budgets as properties, in-process (issue 12): the guidance never exceeds the budget it was given,
whatever the decision, the sources and the budget; sources are taken in order and only the last is cut; every
included source is cited inside one intact trust boundary; a larger budget never includes fewer sources.

`build_guidance` is pure arithmetic over text; the second half runs the real `consult` service on the shared
search index (SQLite FTS5 + Chroma + the ONNX model), so the budget holds end to end without a server process.
"""

from __future__ import annotations

import hashlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _hostile import examples, hostile_text
from oracle_server.services.capabilities.consult import MIN_SOURCE_TOKENS, build_guidance, consult, estimate_tokens
from oracle_server.services.vocabulary.models import ConsultRequest, Source

BUDGETS = st.integers(min_value=100, max_value=8000)  # ConsultRequest's bounds
PURE = settings(deadline=None, derandomize=True, database=None, max_examples=examples(100),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
OPEN, CLOSE = "<<<ORACLE REFERENCE DATA ", "<<<END ORACLE REFERENCE DATA "


@st.composite
def sources(draw: st.DrawFn) -> list[Source]:
    """Up to 8 sources with distinct ids and hashes, bodies from empty to ~20,000 characters (by repetition)."""
    out: list[Source] = []
    for n in range(draw(st.integers(0, 8))):
        body = draw(hostile_text(6)) * draw(st.sampled_from([1, 1, 3, 40, 400]))
        out.append(Source(
            id=f"c_{n:020d}", type=draw(st.sampled_from(["principle", "learning"])), title=draw(hostile_text(3)),
            heading=draw(hostile_text(2)), source_file=f"learnings/note-{n}.md", line_start=1, line_end=n + 1,
            content_hash=hashlib.sha256(f"{n}".encode()).hexdigest(), score=1.0 / (n + 1), text=body,
        ))
    return out


def decisions() -> st.SearchStrategy[str]:
    return hostile_text(8) | st.builds(lambda s, k: (s or "x") * k, hostile_text(3), st.integers(1, 2000))


@settings(PURE)
@given(decisions(), sources(), BUDGETS)
def test_guidance_never_exceeds_the_budget(decision: str, given_sources: list[Source], budget: int) -> None:
    text, included, tokens = build_guidance(decision, given_sources, budget)
    assert tokens == estimate_tokens(text)
    assert tokens <= budget, (tokens, budget)
    # Sources are taken in the given order, none skipped; only the last one taken may be cut short.
    assert [s.id for s in included] == [s.id for s in given_sources[: len(included)]]
    assert not any(s.truncated for s in included[:-1])
    # One intact boundary, every included source cited inside it by id and hash, no other source named.
    assert text.count(OPEN) == 1 and text.count(CLOSE) == 1
    inside = text[text.index(OPEN) : text.index(CLOSE)]
    for s in included:
        assert f"id={s.id} " in inside and f"sha256={s.content_hash}" in inside
    for s in given_sources[len(included):]:
        assert f"id={s.id} " not in text
    # Room for everything (with slack for per-part rounding and the minimum share) means everything, uncut.
    full = build_guidance(decision, given_sources, 10**9)[2]
    if full + len(given_sources) + 2 + MIN_SOURCE_TOKENS <= budget:
        assert len(included) == len(given_sources) and not any(s.truncated for s in included)


@settings(PURE, max_examples=examples(50))
@given(decisions(), sources(), BUDGETS, BUDGETS)
def test_a_larger_budget_never_includes_fewer_sources(decision: str, given_sources: list[Source], a: int,
                                                      b: int) -> None:
    small, large = sorted((a, b))
    assert len(build_guidance(decision, given_sources, small)[1]) <= len(build_guidance(decision, given_sources, large)[1])


@settings(PURE, max_examples=examples(30))
@given(decisions().filter(lambda d: "\x00" not in d and d.strip() and len(d) <= 2000), BUDGETS)  # a NUL: refused
def test_consult_service_keeps_the_budget(search_index, decision: str, budget: int) -> None:
    """The real service on the real shared index: the result reports the budget, stays within it, and lists
    exactly the sources its guidance cites."""
    result = consult(search_index, ConsultRequest(decision=decision, budget_tokens=budget), client="tests")
    assert result.budget_tokens == budget
    assert result.tokens_used == estimate_tokens(result.guidance) <= budget
    cited = [s for s in result.principles + result.learnings]
    assert len({s.id for s in cited}) == len(cited)
    for s in cited:
        assert f"id={s.id} " in result.guidance and f"sha256={s.content_hash}" in result.guidance


def test_consult_on_a_real_question_fills_a_large_budget_but_not_a_small_one(search_index) -> None:
    question = "Should I quote search terms before passing them to FTS5?"
    small = consult(search_index, ConsultRequest(decision=question, budget_tokens=100), client="tests")
    large = consult(search_index, ConsultRequest(decision=question, budget_tokens=8000), client="tests")
    assert small.tokens_used <= 100 < large.tokens_used <= 8000
    assert len(small.principles + small.learnings) <= len(large.principles + large.learnings)
    assert large.principles + large.learnings, "the search corpus answers this question"


def test_a_budget_too_small_for_any_source_says_so_and_what_would_do(bundled) -> None:
    """Issue 27: a budget too small for one source gave guidance with no source and no word why."""
    from oracle_server.registry.text import consult_text

    oracle, _ = bundled
    decision = "Should the search tests use a mocked database?"
    small = consult(oracle, ConsultRequest(decision=decision, budget_tokens=100))
    assert not small.principles and not small.learnings
    said = [w for w in small.warnings if "leaves no room" in w]
    assert len(said) == 1 and "budget of 100 tokens" in said[0], small.warnings
    assert said[0] in consult_text(None, small)
    need = int(said[0].rsplit("budget_tokens=", 1)[1].split()[0])
    enough = consult(oracle, ConsultRequest(decision=decision, budget_tokens=need))
    assert len(enough.principles) + len(enough.learnings) >= 1 and enough.tokens_used <= need
    assert not any("leaves no room" in w for w in enough.warnings)
    assert any("left out to stay within the budget" in w for w in enough.warnings)
    roomy = consult(oracle, ConsultRequest(decision=decision, budget_tokens=8000))
    assert not any("budget" in w for w in roomy.warnings)
