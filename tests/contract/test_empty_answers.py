"""Empty answers say why (issue 40 item 4), the same over MCP (a real client on the real server object), HTTP
(the real app) and the CLI's path: a never-indexed base says "the index is empty: run `oracle index`"; `lang`
naming a language no note is in warns and lists the languages present; `lang` that is no language code is
refused with the accepted form and the languages present, never a raw regex."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _corpus import indexed_oracle, open_oracle
from tests.contract.test_where_surfaces import cli, http, mcp

NOTES = {
    "learnings/2026-03-01_pool.md": "---\nlang: en\n---\n# Connection pools\n\n## Lesson\n\nRelease the database connection before"
                                    " calling another service, or the pool runs dry under load.\n",
    "learnings/2026-03-02_pool-th.md": "---\nlang: th\n---\n# พูลการเชื่อมต่อ\n\n## บทเรียน\n\n"
                                       "คืนการเชื่อมต่อฐานข้อมูลก่อนเรียกบริการอื่น\n",
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    o = indexed_oracle(tmp_path_factory, "empty-answers", NOTES)
    yield o
    o.close()


def test_a_language_no_note_is_in_warns_with_the_languages_present(oracle: Any) -> None:
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "connection pool", "lang": "xx"}))
    assert not over_mcp.is_error and over_mcp.structured_content["total"] == 0
    warning = "no notes in language 'xx'; the notes are in en (1), th (1)"
    assert warning in over_mcp.structured_content["meta"]["warnings"]
    assert warning in over_mcp.content[0].text
    over_http = http(oracle, "/api/search", {"query": "connection pool", "lang": "xx"})
    assert over_http.status_code == 200 and warning in over_http.json()["meta"]["warnings"]
    assert warning in cli(oracle, "search", "connection", "pool", "--lang", "xx").meta.warnings
    found = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "connection pool", "lang": "en"}))
    assert found.structured_content["total"] == 1 and not any(
        w.startswith("no notes in language") for w in found.structured_content["meta"]["warnings"])


def test_a_lang_that_is_no_language_code_is_refused_naming_the_form_and_the_languages(oracle: Any) -> None:
    expected = "lang 'thai' is not a language code: use ISO 639-1, two letters with an optional region (en, th, ja," \
               " zh-TW); the notes are in en (1), th (1)"
    over_mcp = mcp(oracle, lambda c: c.call_tool("oracle_search", {"query": "pool", "lang": "thai"}))
    assert over_mcp.is_error and expected in over_mcp.content[0].text
    assert "pattern" not in over_mcp.content[0].text
    over_http = http(oracle, "/api/search", {"query": "pool", "lang": "thai"})
    assert over_http.status_code == 400 and expected in over_http.text
    with pytest.raises(Exception, match="not a language code"):
        cli(oracle, "search", "pool", "--lang", "thai")
    for code in ("TH", "zh-TW", "pt_BR"):  # the accepted forms still work
        assert http(oracle, "/api/search", {"query": "pool", "lang": code}).status_code == 200


def test_a_never_indexed_base_says_run_oracle_index(tmp_path: Any) -> None:
    root = tmp_path / "root"
    (root / "learnings").mkdir(parents=True)
    (root / "learnings" / "x.md").write_text("# Pools\n\nConnection pools.\n", encoding="utf-8")
    fresh = open_oracle(root, tmp_path / "data")
    try:
        over_mcp = mcp(fresh, lambda c: c.call_tool("oracle_search", {"query": "connection pools"}))
        assert over_mcp.structured_content["total"] == 0
        hint = "the index is empty: run `oracle index`"
        assert any(w.startswith(hint) for w in over_mcp.structured_content["meta"]["warnings"])
        assert hint in over_mcp.content[0].text
        assert any(w.startswith(hint) for w in http(fresh, "/api/search", {"query": "pools"}).json()["meta"]["warnings"])
    finally:
        fresh.close()
