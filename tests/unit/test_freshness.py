"""Freshness (issue 28, item 1): last_verified / review_after, [freshness] days, stale hits, prefer_fresh and
fresh_only, stale counts in stats, and oracle_verify's mark_verified writing one frontmatter line.

The rule and the frontmatter edit are pure (indexer/notes/freshness.py) and tested without a database; the services
run on a real index (SQLite FTS5 + embedded ChromaDB + the ONNX model) of a few notes written here. "Today" is
fixed (oracle_server.services.capabilities.freshness.today) so every result is the same on any day.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pydantic import ValidationError

from _corpus import open_oracle, write
from oracle_indexer.notes.freshness import (
    DEFAULT_WINDOW_DAYS,
    FreshnessPolicy,
    StampRefused,
    note_freshness_dates,
    parse_day,
    stamp_verified,
    staleness,
)
from oracle_indexer.notes.parse import parse_markdown, split_frontmatter
from oracle_indexer.rootconfig import ConfigError, load_layout
from oracle_server.services.capabilities import freshness
from oracle_server.services.capabilities.consult import consult
from oracle_server.services.vocabulary.errors import OracleError
from oracle_server.services.vocabulary.models import ConsultRequest, ReadRequest, SearchRequest, VerifyRequest
from oracle_server.services.capabilities.read import read_note
from oracle_server.services.capabilities.search.pipeline import search
from oracle_server.services.capabilities.stats import stats
from oracle_server.registry.tools import BY_NAME
from oracle_server.services.capabilities.verify import verify

TODAY = dt.date(2027, 1, 15)
POLICY = FreshnessPolicy({"principle": 90, "learning": 90})


# -- pure: dates, policy, the rule --------------------------------------------------------------------
def test_parse_day_takes_yaml_dates_and_iso_strings_only() -> None:
    assert parse_day(dt.date(2026, 5, 1)) == dt.date(2026, 5, 1)
    assert parse_day(dt.datetime(2026, 5, 1, 10, 30)) == dt.date(2026, 5, 1)
    assert parse_day("2026-05-01") == dt.date(2026, 5, 1)
    assert parse_day("2026-05-01T10:00:00") == dt.date(2026, 5, 1)
    for bad in ("2026-13-01", "yesterday", "", None, 20260501, ["2026-05-01"]):
        assert parse_day(bad) is None


def test_note_dates_warn_about_values_that_are_not_dates() -> None:
    assert note_freshness_dates({"last_verified": dt.date(2026, 1, 2), "review_after": "2026-06-01"}) == (
        "2026-01-02", "2026-06-01", [])
    verified, review, warnings = note_freshness_dates({"last_verified": "last week"})
    assert (verified, review) == (None, None)
    assert warnings == ["last_verified: 'last week' is not a date (YYYY-MM-DD); ignored"]
    parsed = parse_markdown("---\nreview_after: soon\n---\n# T\n\ntext\n", "learnings/t.md", "learning")
    assert parsed.review_after is None and any("review_after" in w for w in parsed.warnings)


def test_policy_default_window_is_365_days_for_every_type_and_days_overrides_it() -> None:
    """Issue 40: without [freshness] a check is good for DEFAULT_WINDOW_DAYS (365) days, every type."""
    assert DEFAULT_WINDOW_DAYS == 365
    every = {"learning": 365, "note": 365, "principle": 365, "retro": 365}
    assert FreshnessPolicy().days == every
    assert FreshnessPolicy.parse({"days": 90}, "x").days == dict.fromkeys(every, 90)
    assert FreshnessPolicy.parse({"days": 0}, "x").days == {}  # off
    assert FreshnessPolicy.parse({"days": {"retro": 30, "learning": 0}}, "x").days == {
        "note": 365, "principle": 365, "retro": 30}
    assert FreshnessPolicy.parse({}, "x").days == every
    for bad in ({"days": "90"}, {"days": True}, {"days": -1}, {"days": {"notes": 5}}, {"weeks": 3}, 5):
        with pytest.raises(ValueError):
            FreshnessPolicy.parse(bad, "oracle.toml")


def test_staleness_rule() -> None:
    def rule(doc_type="learning", date=None, verified=None, review=None, policy=POLICY):
        s = staleness(doc_type, date, verified, review, policy, TODAY)
        return s.stale, s.due, s.reason

    # the window runs from when the note was last verified, never from its date (issue 40)
    assert rule(verified="2026-01-01") == (True, "2026-04-01", "window")
    assert rule(date="2026-01-01") == (False, None, None)  # never claimed a check: never stale
    assert rule(date="2019-01-01") == (False, None, None)
    assert rule(verified="2026-12-01") == (False, "2027-03-01", "window")
    assert rule(date="2025-01-01", verified="2027-01-01") == (False, "2027-04-01", "window")
    assert rule(verified="2026-10-17") == (False, "2027-01-15", "window")  # due today: not yet stale
    assert rule(verified="2026-10-16") == (True, "2027-01-14", "window")
    # the default window: a runbook verified 2023-01-10 is stale with no [freshness] section
    assert rule(verified="2023-01-10", policy=FreshnessPolicy()) == (True, "2024-01-10", "window")
    assert rule(verified="2026-06-01", policy=FreshnessPolicy()) == (False, "2027-06-01", "window")
    # review_after wins until the note is verified on or after it
    assert rule(date="2026-12-20", review="2027-01-10") == (True, "2027-01-10", "review_after")
    assert rule(review="2027-02-01") == (False, "2027-02-01", "review_after")
    assert rule(review="2027-01-10", verified="2027-01-12") == (False, "2027-04-12", "window")
    # a type whose window is off; a note with no dates is never stale
    assert rule("retro", verified="2020-01-01", policy=FreshnessPolicy({"learning": 90})) == (False, None, None)
    assert rule("retro", date="2020-01-01", review="2021-01-01") == (True, "2021-01-01", "review_after")
    assert rule(date=None) == (False, None, None)
    assert rule("note", verified="2020-01-01", policy=FreshnessPolicy()) == (True, "2020-12-31", "window")


# -- pure: writing last_verified, every other byte kept ------------------------------------------------
def test_stamp_inserts_a_line_before_the_closing_marker() -> None:
    text = "---\ntitle: A  # spaced\ntags: [x, y]\n---\n\n# A\n\nbody\n"
    out = stamp_verified(text, "2027-01-15")
    assert out == "---\ntitle: A  # spaced\ntags: [x, y]\nlast_verified: 2027-01-15\n---\n\n# A\n\nbody\n"


def test_stamp_replaces_the_existing_line_and_its_continuation() -> None:
    text = "---\ntitle: A\nlast_verified: 2020-01-01\nz: 1\n---\nbody\n"
    assert stamp_verified(text, "2027-01-15") == "---\ntitle: A\nlast_verified: 2027-01-15\nz: 1\n---\nbody\n"
    folded = "---\nlast_verified:\n  2020-01-01\nz: 1\n---\nbody\n"
    assert stamp_verified(folded, "2027-01-15") == "---\nlast_verified: 2027-01-15\nz: 1\n---\nbody\n"
    quoted = "---\n\"last_verified\": '2020-01-01'\n---\nbody\n"
    assert stamp_verified(quoted, "2027-01-15") == "---\nlast_verified: 2027-01-15\n---\nbody\n"
    empty = "---\n---\nbody\n"
    assert stamp_verified(empty, "2027-01-15") == "---\nlast_verified: 2027-01-15\n---\nbody\n"
    nested = "---\nmeta:\n  last_verified: 2020-01-01\n---\nbody\n"  # not top level: a new line is added
    assert stamp_verified(nested, "2027-01-15") == "---\nmeta:\n  last_verified: 2020-01-01\nlast_verified: 2027-01-15\n---\nbody\n"


def test_stamp_keeps_crlf_bom_and_adds_frontmatter_when_there_is_none() -> None:
    crlf = "\ufeff---\r\ntitle: A\r\n---\r\nbody\r\n"
    assert stamp_verified(crlf, "2027-01-15") == "\ufeff---\r\ntitle: A\r\nlast_verified: 2027-01-15\r\n---\r\nbody\r\n"
    plain = "# A\n\nbody\n"
    assert stamp_verified(plain, "2027-01-15") == "---\nlast_verified: 2027-01-15\n---\n# A\n\nbody\n"
    assert split_frontmatter(stamp_verified(plain, "2027-01-15"))[1] == plain


def test_stamp_refuses_what_it_cannot_edit_safely() -> None:
    with pytest.raises(StampRefused):
        stamp_verified("---\ntitle: A\nbody never closes\n", "2027-01-15")
    with pytest.raises(StampRefused):
        stamp_verified("---\nlast_verified: 1\nlast_verified: 2\n---\nx\n", "2027-01-15")


# -- oracle.toml -------------------------------------------------------------------------------------------
def test_oracle_toml_freshness_section(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text("[freshness]\ndays = { learning = 30, retro = 365 }\n")
    assert load_layout(tmp_path, env={}).freshness.days == {"learning": 30, "note": 365, "principle": 365,
                                                            "retro": 365}
    (tmp_path / "oracle.toml").write_text("[freshness]\ndays = \"often\"\n")
    with pytest.raises(ConfigError, match="oracle.toml:1"):
        load_layout(tmp_path, env={})
    (tmp_path / "oracle.toml").write_text("[index]\ndefault_type = \"learning\"\n")
    assert load_layout(tmp_path, env={}).freshness.days == FreshnessPolicy().days  # the default window


# -- on a real index -----------------------------------------------------------------------------------
NOTES = {
    "learnings/2026-01-01_gizmo-api-v1.md": (
        "---\ntitle: Gizmo API takes a token header\ndate: 2026-01-01\ntags: [gizmo]\nreview_after: 2026-04-01\n---\n\n"
        "# Gizmo API takes a token header\n\nThe gizmo api wants an X-Gizmo-Token header on every request.\n"
    ),
    "learnings/2026-12-01_gizmo-api-v2.md": (
        "---\ntitle: Gizmo API takes bearer tokens\ndate: 2026-12-01\n---\n\n"
        "# Gizmo API takes bearer tokens\n\nThe gizmo api now wants a bearer token in Authorization.\n"
    ),
    "learnings/2025-01-01_gizmo-retries.md": (
        "---\ntitle: Gizmo api retries\ndate: 2025-01-01\nlast_verified: 2027-01-01\n---\n\n"
        "# Gizmo api retries\n\nRetry the gizmo api three times with backoff.\n"
    ),
    "learnings/2026-12-20_gizmo-limits.md": (
        "---\ntitle: Gizmo api rate limits\ndate: 2026-12-20\nreview_after: 2027-01-10\n---\n\n"
        "# Gizmo api rate limits\n\nThe gizmo api allows one hundred requests a minute.\n"
    ),
    "retrospectives/2026-01-02_gizmo-retro.md": (
        "---\ntitle: Gizmo api migration retro\ndate: 2026-01-02\n---\n\n"
        "## What happened\n\nWe moved the gizmo api client to the new token scheme.\n"
    ),
    "principles/gizmo.md": "# Gizmo principles\n\n### Wrap the gizmo api\n\nCall the gizmo api through one client.\n",
}
V1, V2, RETRIES, LIMITS = list(NOTES)[:4]
RETRO, PRINCIPLE = list(NOTES)[4:]
STALE = {V1: "2026-04-01", LIMITS: "2027-01-10"}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("fresh")
    root = base / "root"
    for rel, text in NOTES.items():
        write(root / rel, text)
    (root / "oracle.toml").write_text("[freshness]\ndays = 90\n")
    oracle = open_oracle(root, base / "data")
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


@pytest.fixture(autouse=True)
def fixed_today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freshness, "today", lambda: TODAY)


def _search(oracle, **params):
    return search(oracle, SearchRequest(query="gizmo api", mode="fts", limit=20, **params))


def test_hits_say_stale_and_since_when(oracle) -> None:
    result = _search(oracle)
    by_file = {h.source_file: h for h in result.hits}
    assert set(by_file) == set(NOTES)
    assert {f: h.stale_since for f, h in by_file.items() if h.stale} == STALE
    assert all(h.stale_since is None for h in by_file.values() if not h.stale)
    assert by_file[RETRIES].last_verified == "2027-01-01" and not by_file[RETRIES].stale
    assert not by_file[RETRO].stale  # never verified: never stale, however old its date
    assert not by_file[V2].stale and by_file[V2].stale_since is None
    assert "STALE since 2026-04-01" in BY_NAME["oracle_search"].text(None, result)


def test_fresh_only_leaves_stale_notes_out_and_counts_true(oracle) -> None:
    everything = _search(oracle)
    fresh = _search(oracle, fresh_only=True)
    assert {h.source_file for h in fresh.hits} == set(NOTES) - set(STALE)
    assert fresh.total == everything.total - len(STALE)
    sections = _search(oracle, fresh_only=True, unit="section")
    assert not any(h.stale for h in sections.hits)


def test_prefer_fresh_puts_stale_notes_last_keeping_each_groups_order(oracle) -> None:
    ranked = [h.source_file for h in _search(oracle).hits]
    preferred = [h.source_file for h in _search(oracle, prefer_fresh=True).hits]
    assert preferred == [f for f in ranked if f not in STALE] + [f for f in ranked if f in STALE]
    assert _search(oracle, prefer_fresh=True).model_dump(exclude={"meta"}) == \
        _search(oracle, prefer_fresh=True).model_dump(exclude={"meta"})  # deterministic


def test_new_parameters_reach_every_surface_from_the_registry() -> None:
    props = BY_NAME["oracle_search"].request.model_json_schema()["properties"]
    assert props["fresh_only"]["type"] == "boolean" and props["prefer_fresh"]["default"] is False
    verify_props = BY_NAME["oracle_verify"].request.model_json_schema()["properties"]
    assert "mark_verified" in verify_props
    assert BY_NAME["oracle_verify"].annotations.read_only_hint is False


def test_read_and_consult_carry_freshness(oracle) -> None:
    read = read_note(oracle, ReadRequest(file=V1))
    assert (read.stale, read.stale_since, read.last_verified) == (True, "2026-04-01", None)
    assert not read_note(oracle, ReadRequest(file=RETRIES)).stale
    result = consult(oracle, ConsultRequest(decision="how do I authenticate to the gizmo api with a token"))
    sources = result.principles + result.learnings
    assert sources
    for source in sources:
        assert source.stale == (source.source_file in STALE)
        assert source.stale_since == STALE.get(source.source_file)
    if any(s.stale for s in sources):
        assert "stale since" in result.guidance
        assert any("stale" in w for w in result.warnings)


def test_stats_count_stale_notes_by_type(oracle) -> None:
    fresh = stats(oracle).freshness
    assert fresh is not None
    assert fresh.stale_by_type == {"learning": 2, "principle": 0, "retro": 0}
    assert fresh.stale == 2 and fresh.window_days == {"learning": 90, "note": 90, "principle": 90, "retro": 90}


def test_without_a_freshness_section_an_old_last_verified_is_stale_and_an_unverified_note_is_not(
        tmp_path: Path) -> None:
    """Issue 40 item 2: a runbook verified 2023-01-10 is flagged with no configuration; old notes that never
    claimed a check are not (before: the runbook passed unflagged, and `days = 365` turned 66 % stale)."""
    root = tmp_path / "root"
    write(root / "learnings/runbook.md", "---\ntitle: Failover runbook\nlast_verified: 2023-01-10\n---\n"
                                         "# Failover runbook\n\nPromote the gizmo api replica.\n")
    write(root / "learnings/2019-01-01_old.md", "---\ntitle: Old gizmo api note\ndate: 2019-01-01\n---\n"
                                                "# Old gizmo api note\n\nThe gizmo api was slow.\n")
    write(root / "learnings/recent.md", "---\ntitle: Recent gizmo api check\nlast_verified: 2026-12-01\n---\n"
                                        "# Recent gizmo api check\n\nThe gizmo api answers.\n")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        oracle.indexer.sync(vectors=False)
        hits = {h.source_file: h for h in _search(oracle).hits}
        assert {f: h.stale_since for f, h in hits.items() if h.stale} == {"learnings/runbook.md": "2024-01-10"}
        assert stats(oracle).freshness.window_days["learning"] == DEFAULT_WINDOW_DAYS
    finally:
        oracle.close()


def test_verify_needs_citations_or_notes() -> None:
    with pytest.raises(ValidationError):
        VerifyRequest()
    with pytest.raises(ValidationError):
        VerifyRequest(mark_verified=[" "])


def test_mark_verified_refuses_unknown_notes_before_writing(oracle) -> None:
    before = (oracle.settings.root / V1).read_bytes()
    with pytest.raises(OracleError) as info:
        verify(oracle, VerifyRequest(mark_verified=[V1, "learnings/nope.md"]))
    assert info.value.kind == "not_found"
    with pytest.raises(OracleError):
        verify(oracle, VerifyRequest(mark_verified=["../outside.md"]))
    assert (oracle.settings.root / V1).read_bytes() == before


def test_mark_verified_writes_one_line_and_the_note_is_fresh(tmp_path: Path) -> None:
    """Its own index: this test changes notes."""
    root = tmp_path / "root"
    for rel in (V1, PRINCIPLE, LIMITS):
        write(root / rel, NOTES[rel])
    (root / "oracle.toml").write_text("[freshness]\ndays = 90\n")
    oracle = open_oracle(root, tmp_path / "data")
    try:
        oracle.indexer.sync()
        assert {h.source_file for h in _search(oracle).hits if h.stale} == {V1, LIMITS}
        chunk = oracle.store.file_chunk_ids(LIMITS)[0]
        before = {rel: (root / rel).read_bytes() for rel in (V1, PRINCIPLE, LIMITS)}
        result = verify(oracle, VerifyRequest(mark_verified=[V1, chunk, PRINCIPLE]))
        assert [(v.source_file, v.changed, v.previous) for v in result.verified] == [
            (V1, True, None), (LIMITS, True, None), (PRINCIPLE, True, None)]
        line = b"last_verified: 2027-01-15\n"
        for rel in (V1, LIMITS):  # one line added before the closing marker, nothing else
            head, sep, rest = before[rel].partition(b"\n---\n")
            assert (root / rel).read_bytes() == head + b"\n" + line[:-1] + sep + rest
        assert (root / PRINCIPLE).read_bytes() == b"---\n" + line + b"---\n" + before[PRINCIPLE]
        hits = _search(oracle).hits  # re-indexed before verify returned
        assert hits and not any(h.stale for h in hits)
        assert {h.last_verified for h in hits} == {"2027-01-15"}
        assert stats(oracle).freshness.stale == 0
        # the same day again: nothing written
        again = verify(oracle, VerifyRequest(mark_verified=[V1]))
        assert [v.changed for v in again.verified] == [False]
        assert "verified learnings/2026-01-01_gizmo-api-v1.md" in BY_NAME["oracle_verify"].text(None, again)
        # a later day replaces the line in place
        later = dt.date(2027, 2, 1)
        marked = freshness.mark_verified(oracle, [V1], on=later)
        assert marked[0].previous == "2027-01-15"
        assert (root / V1).read_bytes() == before[V1].replace(b"\n---\n", b"\nlast_verified: 2027-02-01\n---\n", 1)
    finally:
        oracle.close()


def test_http_and_cli_take_the_new_parameters(oracle, tmp_path: Path) -> None:
    """The registry generates them: GET /api/search?fresh_only=true, POST /api/verify {"mark_verified"}, and
    `oracle search --fresh-only`; nothing was written for any adapter."""
    import argparse

    from starlette.testclient import TestClient

    from oracle_server.cli import spec as clispec
    from oracle_server.cli.commands import add_tool_command, tool_values
    from oracle_server.http.app import build_app

    with TestClient(build_app(oracle), base_url="http://127.0.0.1:37778") as client:
        got = client.get("/api/search", params={"query": "gizmo api", "mode": "fts", "limit": 20,
                                                 "fresh_only": "true"})
        assert got.status_code == 200, got.text
        assert {h["source_file"] for h in got.json()["hits"]} == set(NOTES) - set(STALE)
        refused = client.post("/api/verify", json={"mark_verified": ["learnings/none.md"]})
        assert refused.status_code == 404, refused.text
        empty = client.post("/api/verify", json={})
        assert empty.status_code in (400, 422)
        assert client.get("/api/stats").json()["freshness"]["stale_by_type"]["learning"] == 2
    parser = argparse.ArgumentParser(prog="oracle", exit_on_error=False)
    sub = parser.add_subparsers(dest="command", required=True)
    specs = clispec.derive()
    add_tool_command(sub, "search", specs["search"])
    args = parser.parse_args(["search", "gizmo", "api", "--fresh-only", "--prefer-fresh", "--mode", "fts"])
    request = BY_NAME["oracle_search"].parse(tool_values(args, specs["search"]))
    assert request.fresh_only and request.prefer_fresh
