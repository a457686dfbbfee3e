"""server/cli/commands.py `words_last`: a question that begins with `-` (a flag it is about) is searched, not taken
for an unknown option (issue 48 item 7: `oracle search -Zbuild-std` was an argparse error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle_server.cli.commands import build_parser, main, words_last


@pytest.mark.parametrize(("argv", "expected"), [
    (["search", "-Zbuild-std"], ["search", "--", "-Zbuild-std"]),
    (["search", "--json", "-Zbuild-std", "--limit", "2"], ["search", "--json", "--limit", "2", "--", "-Zbuild-std"]),
    (["--root", "notes", "search", "why", "-x", "--type=learning"],
     ["--root", "notes", "search", "--type=learning", "--", "why", "-x"]),
    (["search", "--", "-x"], ["search", "--", "-x"]),  # said already
    (["stats", "--json"], ["stats", "--json"]),  # no words
    (["search", "plain", "words"], ["search", "--", "plain", "words"]),
])
def test_words_go_after_the_options(argv: list[str], expected: list[str]) -> None:
    assert words_last(build_parser(), argv) == expected


def test_a_question_that_begins_with_a_dash_is_searched(tmp_path: Path, capsys) -> None:
    root = tmp_path / "notes"
    (root / "learnings").mkdir(parents=True)
    (root / "learnings/build-std.md").write_text(
        "# Rebuilding the standard library\n\nPass -Zbuild-std to cargo to rebuild core for a custom target.\n",
        encoding="utf-8")
    where = ["--root", str(root), "--data-dir", str(tmp_path / "data")]
    assert main([*where, "index"]) == 0
    capsys.readouterr()
    assert main([*where, "search", "-Zbuild-std", "--json", "--mode", "fts", "--local"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["query"] == "-Zbuild-std" and result["hits"][0]["source_file"] == "learnings/build-std.md"
