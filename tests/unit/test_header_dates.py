"""indexer/notes/blocks.py `header_date`: a design document's header dates it (issue 48 item 6: 648 RFCs came out
undated, listed in file-name order, and date filters filtered nothing). Pure parsing, then the CLI a user meets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle_indexer.notes.blocks import header_date, written_date
from oracle_indexer.notes.parse import parse_markdown
from oracle_server.cli.commands import main

RFC = "- Feature Name: `tracked_caller`\n- Start Date: 2019-10-04\n- RFC PR: rust-lang/rfcs#2091\n\n# Summary\n\nx\n"
GO = ("# Proposal: testing: sub-tests\n\nAuthor: Marcel van Lohuizen\n\n_With input from Sameer._\n\n"
      "Last updated: September 2, 2015\n\nDiscussion at https://golang.org/issue/12166.\n\n## Abstract\n\ny\n")
INLINE = "# Scavenging\n\nAuthor(s): Michael K <m@x.org> Last Updated: 2019-02-20\n\n## Background\n\nz\n"


@pytest.mark.parametrize(("value", "iso"), [
    ("2014-03-11", "2014-03-11"), ("2015/09/02", "2015-09-02"), ("September 2, 2015", "2015-09-02"),
    ("Sept. 2, 2015", "2015-09-02"), ("2 Sep 2015", "2015-09-02"), ("12-Feb-2014", "2014-02-12"),
    ("October, 2015", "2015-10-01"), ("February 2016", "2016-02-01"), ("Feb 30, 2015", None), ("soon", None),
    ("2026-02-30", None)])
def test_written_dates(value: str, iso: str | None) -> None:
    assert written_date(value) == iso


def test_headers_of_rfcs_and_proposals_date_the_note() -> None:
    assert header_date(RFC.split("\n")) == "2019-10-04"
    assert header_date(GO.split("\n")) == "2015-09-02"
    assert header_date(INLINE.split("\n")) == "2019-02-20"
    assert parse_markdown(RFC, "text/2091-track-caller.md", "note").chunks[0].date == "2019-10-04"


def test_dates_in_prose_or_after_the_header_do_not() -> None:
    assert header_date(["# Why", "", "We decided in May 2020 to move.", "", "## Detail", "Date: 2020-05-01"]) is None
    frontmatter = "---\ndate: 2024-01-02\n---\n" + RFC  # the frontmatter's date wins
    assert parse_markdown(frontmatter, "x.md", "note").chunks[0].date == "2024-01-02"


def test_list_and_date_filters_use_header_dates(tmp_path: Path, capsys) -> None:
    root = tmp_path / "rfcs"
    (root / "text").mkdir(parents=True)
    notes = {"0001-old.md": ("2014-03-11", "old"), "0002-new.md": ("2019-10-04", "new"), "0003-mid.md": ("2016-05-20", "mid")}
    for name, (date, word) in notes.items():
        (root / "text" / name).write_text(f"- Feature Name: {word}\n- Start Date: {date}\n\n# Summary\n\nThe {word}"
                                          " proposal about caller tracking.\n", encoding="utf-8")
    (root / "oracle.toml").write_text('[index]\ndefault_type = "note"\n', encoding="utf-8")
    where = ["--root", str(root), "--data-dir", str(tmp_path / "data")]
    assert main([*where, "index"]) == 0
    capsys.readouterr()
    assert main([*where, "list", "--json", "--local"]) == 0
    listed = [item["source_file"] for item in json.loads(capsys.readouterr().out)["items"]]
    assert listed == ["text/0002-new.md", "text/0003-mid.md", "text/0001-old.md"]  # newest first
    assert main([*where, "search", "caller tracking proposal", "--date-from", "2015-01-01", "--mode", "fts",
                 "--json", "--local"]) == 0
    found = {hit["source_file"] for hit in json.loads(capsys.readouterr().out)["hits"]}
    assert found == {"text/0002-new.md", "text/0003-mid.md"}
