"""Context-aware budgets (issue 28 item 5): consult sizes its guidance from the caller's context window (15%,
within consult's bounds) and, under 30,000 tokens, draws on principles only (mode core), saying which. The plan
is pure arithmetic; the rest runs the real consult service on the bundled knowledge base."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle_server.services.capabilities.consult import CORE_BELOW, MAX_BUDGET, MIN_BUDGET, Budget, consult, plan_budget
from oracle_server.services.vocabulary.models import ConsultRequest, VerifyRequest
from oracle_server.registry.text import consult_text
from oracle_server.services.capabilities.verify import verify
from oracle_server.services.capabilities.working_set import working_set_id

DECISION = "Should I mock the database in this test?"


def test_the_plan() -> None:
    assert plan_budget(None, None) == Budget(1200, "default", "full")
    assert plan_budget(None, 16_000) == Budget(2400, "context_window", "core")  # 15 %, and small: core
    assert plan_budget(None, 29_999).mode == "core" and plan_budget(None, 30_000).mode == "full"
    assert plan_budget(None, 200_000) == Budget(MAX_BUDGET, "context_window", "full")  # capped
    assert plan_budget(None, 1_000) == Budget(150, "context_window", "core")
    assert plan_budget(500, 16_000) == Budget(500, "budget_tokens", "core")  # a given budget wins; the window sets the mode
    assert plan_budget(700, None) == Budget(700, "budget_tokens", "full")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.integers(1_000, 10_000_000), st.none() | st.integers(100, 8000))
def test_the_budget_stays_in_bounds_and_grows_with_the_window(window: int, given_budget: int | None) -> None:
    plan = plan_budget(given_budget, window)
    assert MIN_BUDGET <= plan.tokens <= MAX_BUDGET
    assert plan.mode == ("core" if window < CORE_BELOW else "full")
    if given_budget is None:
        assert plan.tokens == min(MAX_BUDGET, max(MIN_BUDGET, int(window * 0.15)))
        assert plan_budget(None, window + 1000).tokens >= plan.tokens


@pytest.mark.parametrize("window", [999, 10_000_001, -5])
def test_a_window_out_of_range_is_refused(window: int) -> None:
    with pytest.raises(ValueError, match="context_window"):
        ConsultRequest(decision=DECISION, context_window=window)


def test_a_small_window_consults_principles_only_and_says_so(bundled) -> None:
    oracle, _ = bundled
    full = consult(oracle, ConsultRequest(decision=DECISION), client="tests")
    assert (full.budget_tokens, full.budget_from, full.mode) == (1200, "default", "full") and full.learnings
    core = consult(oracle, ConsultRequest(decision=DECISION, context_window=16_000), client="tests")
    assert (core.budget_tokens, core.budget_from, core.mode) == (2400, "context_window", "core")
    assert core.principles and not core.learnings and core.tokens_used <= 2400
    assert "budget: 2400 tokens (15% of the context window); mode: core (principles only" in consult_text(None, core)
    assert "budget:" not in consult_text(None, full)  # a consultation without a window reads as before
    large = consult(oracle, ConsultRequest(decision=DECISION, context_window=1_000_000), client="tests")
    assert (large.budget_tokens, large.mode) == (8000, "full") and large.learnings


def test_the_working_set_keeps_the_window_so_verify_reproduces_it(bundled) -> None:
    oracle, _ = bundled
    plain = consult(oracle, ConsultRequest(decision=DECISION, budget_tokens=2400), client="tests")
    core = consult(oracle, ConsultRequest(decision=DECISION, context_window=16_000), client="tests")
    assert core.working_set_id != plain.working_set_id  # same budget, other sources and mode
    checked = verify(oracle, VerifyRequest(working_set_id=core.working_set_id)).working_set
    assert checked is not None and checked.status == "reproduces"
    # a consultation without a window or filter keeps the working set (and id) it had before they existed
    from oracle_server.services.capabilities.consult import run_consult

    _, working_set = run_consult(oracle, ConsultRequest(decision=DECISION))
    assert "context_window" not in working_set and "where" not in working_set
    assert working_set_id(working_set) == consult(oracle, ConsultRequest(decision=DECISION)).working_set_id


def test_consult_takes_a_where_filter(bundled) -> None:
    oracle, _ = bundled
    # the bundled learnings say their project in frontmatter; no principle has one
    ours = consult(oracle, ConsultRequest(decision=DECISION, where={"project": "oracle"}), client="tests")
    assert ours.learnings and not ours.principles
    assert "learnings/2026-05-12_mocked-database-hid-missing-tokenizer.md" in {s.source_file for s in ours.learnings}
    for source in ours.learnings:
        assert "\nproject: oracle\n" in (oracle.settings.root / source.source_file).read_text(encoding="utf-8")
    everyone = consult(oracle, ConsultRequest(decision=DECISION), client="tests")
    assert everyone.principles and ours.working_set_id != everyone.working_set_id
    none = consult(oracle, ConsultRequest(decision=DECISION, where={"no-such-field": "x"}), client="tests")
    assert not none.principles and not none.learnings
    assert any("no note has the field 'no-such-field'" in w for w in none.warnings)
    checked = verify(oracle, VerifyRequest(working_set_id=none.working_set_id)).working_set
    assert checked is not None and checked.status == "reproduces"
