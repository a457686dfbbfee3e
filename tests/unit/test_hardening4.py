"""Hardening, round four (issue 39), on real parts: real SQLite (and a real PostgreSQL where the store matters,
tests/_pg.py), real files, real processes where a crash is the point. Each test here failed before its fix."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from _corpus import write
from conftest import STORES, store_overrides
from oracle_server.services import freshness
from oracle_server.services.consult import consult
from oracle_server.services.models import ConsultRequest, SearchRequest
from oracle_server.services.search.pipeline import search
from oracle_server.services.stats import stats


# -- 2. far-future dates must not crash freshness ----------------------------------------------------------
FAR = {
    "learnings/2026-01-01_far-date.md": "---\ntitle: Far date\ndate: 9999-12-31\n---\n# Far date\n\n"
                                        "The okapi ledger closes at night.\n",
    "learnings/2026-01-02_far-verified.md": "---\ntitle: Far verified\ndate: 2026-01-02\nlast_verified: 9999-12-31\n"
                                            "---\n# Far verified\n\nThe okapi ledger reopens at dawn.\n",
    "learnings/2026-01-03_plain.md": "---\ntitle: Plain\ndate: 2026-01-03\n---\n# Plain\n\nThe okapi ledger balances.\n",
}


@pytest.mark.parametrize("store", STORES)
def test_far_future_dates_are_treated_as_absent_for_freshness_with_a_warning(
        tmp_path: Path, make_oracle, store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`[freshness] days = 90` and a note dated (or verified) 9999-12-31: stats, search and consult failed with
    OverflowError (date + 90 days). The date that cannot be used counts as absent; the sync says which note."""
    monkeypatch.setattr(freshness, "today", lambda: dt.date(2027, 1, 15))
    root = tmp_path / "root"
    for rel, text in FAR.items():
        write(root / rel, text)
    (root / "oracle.toml").write_text("[freshness]\ndays = 90\n")
    oracle = make_oracle(root, tmp_path / "data", **store_overrides(store))
    report = oracle.indexer.sync(vectors=False)
    for rel, key in (("learnings/2026-01-01_far-date.md", "date"), ("learnings/2026-01-02_far-verified.md",
                                                                      "last_verified")):
        assert any(w.startswith(f"{rel}: {key}: 9999-12-31") and "freshness" in w for w in report.warnings), \
            report.warnings
    assert stats(oracle).freshness.stale_by_type["learning"] == 2  # far-verified counts from its date; plain
    hits = {h.source_file: h for h in search(oracle, SearchRequest(query="okapi ledger", mode="fts", limit=10)).hits}
    assert set(hits) == set(FAR)
    assert not hits["learnings/2026-01-01_far-date.md"].stale  # no usable date: no claim of staleness
    assert hits["learnings/2026-01-02_far-verified.md"].stale_since == "2026-04-02"  # from its own date
    assert hits["learnings/2026-01-03_plain.md"].stale_since == "2026-04-03"
    assert consult(oracle, ConsultRequest(decision="Does the okapi ledger balance?")).guidance
