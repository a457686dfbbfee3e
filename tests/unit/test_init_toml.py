"""`oracle init` writes folder names into oracle.toml (issue 45, item 8): as `[types]` keys, in the comments that
list each folder, in `exclude` patterns and in the suggested changelog lines. A folder name is anyone's text (a cloned
repository chooses it): a newline in it ended a comment line and made the rest of the name live TOML (a folder could
switch on `[search] sampling = true`), or broke a string so that the file did not parse at all. Every name is now
written as a valid TOML string or an escaped comment, and the lines init prints show names escaped. Real folders, the
real init, the standard library's TOML parser."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from oracle_indexer.rootconfig import load_layout
from oracle_server.cli.init import init

INJECTED = "\n[search]\nsampling = true\n#"
# A folder of generic notes: its [types] line is written commented out, so only the comment can carry a name.
NOTES = "notes" + INJECTED
# A folder of dated notes: typed `retro` by an active [types] line, so the name is a TOML key.
DATED = "journal" + INJECTED
# A parent of language folders: its `exclude` lines name it in strings and in a comment.
LOCALES = "docs\r\n[search]\rsampling = true\x1b[2J\"\\"
# A folder of release notes (a changelog name followed by a newline still reads as one): a commented suggestion.
CHANGELOG = "changelog\n"
HOSTILE = [NOTES, DATED, LOCALES, CHANGELOG, "tab\there", "del\x7fc1\x85 ls\u2028ps\u2029bidi\u202e", 'quote"back\\slash']


def _folder(root: Path, name: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def hostile_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    root = tmp_path / "vault"
    _folder(root, NOTES, {"a.md": "# A\n\nsome text\n", "b.md": "# B\n\nmore text\n"})
    _folder(root, DATED, {f"2026-01-0{d}_day.md": f"# Day {d}\n\nwhat happened\n" for d in range(1, 5)})
    _folder(root, LOCALES, {f"{lang}/page.md": f"# Page {lang}\n\ntext\n" for lang in ("en", "de", "fr")})
    _folder(root, CHANGELOG, {f"v{n}.md": f"# v{n}\n\nfixed things\n" for n in range(3)})
    for name in HOSTILE[4:]:
        _folder(root, name, {"x.md": "# X\n\ntext\n"})
    return root


def test_every_folder_name_is_written_as_valid_toml_and_switches_nothing_on(hostile_root: Path) -> None:
    init(hostile_root)
    text = (hostile_root / "oracle.toml").read_text(encoding="utf-8")
    config = tomllib.loads(text)  # before: "Invalid statement" or a [search] table of the folder's choosing
    assert "search" not in config, config
    assert config["types"] == {DATED: "retro"}, config["types"]  # the name comes back exactly as it is on disk
    assert sorted(config["index"]["exclude"]) == sorted(f"{LOCALES}/{lang}/" for lang in ("de", "fr"))
    assert not any(0 < ord(c) < 0x20 and c not in "\n" or 0x7f <= ord(c) <= 0x9f for c in text), \
        "a control character reached oracle.toml unescaped"
    assert load_layout(hostile_root).type_for(f"{DATED}/2026-01-01_day.md") == "retro"


def test_init_prints_folder_names_escaped(hostile_root: Path) -> None:
    _, lines = init(hostile_root)
    said = "\n".join(lines)
    assert all("\n" not in line and "\r" not in line and "\x1b" not in line for line in lines), said
    assert not any(0 <= ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029\u202e" for c in said.replace(
        "\n", "")), said
    assert "journal\\n[search]\\nsampling = true\\n#/" in said, said  # named, one line, readable


def test_a_folder_name_that_is_not_utf8_is_named_in_a_comment_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    folder = root / "journal\udcff"  # the byte 0xff on disk: no TOML string can hold the name
    for day in range(1, 5):
        _folder(folder, "", {f"2026-01-0{day}_day.md": f"# Day {day}\n\nwhat happened\n"})
    _, lines = init(root)  # before: UnicodeEncodeError while writing oracle.toml, a traceback
    text = (root / "oracle.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text).get("types", {}) == {}
    assert '# (a name that is not UTF-8 on disk, which TOML cannot hold: rename it) "journal\\xff" = "retro"' in text
    assert any("journal\\xff/" in line for line in lines), lines
