"""`oracle init` on a translated vault (issue 27 §9): it sees the language folders, asks nothing, keeps the
user's language(s) (the environment, else the largest folder), leaves every other language out with a line
a person deletes to add it back, suggests leaving release notes out, and `oracle index` then removes what the
new config leaves out without refusing as if the files were gone. Real files, a real index (keyword only)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from _corpus import open_oracle
from _first_hour import build_translated_vault
from oracle_indexer.worker.sync import SyncRefused
from oracle_server.cli.init import init
from oracle_server.services.support.init import choose_languages, survey, user_languages

LANGS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def _locale(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for var in LANGS:
        monkeypatch.delenv(var, raising=False)
    for var, value in values.items():
        monkeypatch.setenv(var, value)


def _config(root: Path) -> dict:
    return tomllib.loads((root / "oracle.toml").read_text(encoding="utf-8"))


def _indexed(root: Path, data: Path) -> set[str]:
    oracle = open_oracle(root, data)
    try:
        oracle.indexer.sync(vectors=False)
        return set(oracle.store.file_states())
    finally:
        oracle.close()


@pytest.mark.parametrize(("env", "expected"), [
    ({"LANG": "th_TH.UTF-8"}, ["th"]), ({"LANG": "C.UTF-8"}, []), ({"LC_ALL": "de_DE@euro", "LANG": "C"}, ["de"]),
    ({"LANGUAGE": "ja:en", "LANG": "ja_JP.UTF-8"}, ["ja", "en"]), ({"LANG": "POSIX"}, []), ({"LANG": "zh_TW"}, ["zh"]),
])
def test_the_users_languages_come_from_the_environment(env, expected):
    assert user_languages(env) == expected


def test_a_thai_user_gets_thai_and_the_exclude_line_never_lists_it(tmp_path, monkeypatch):
    root = tmp_path / "help"
    counts = build_translated_vault(root)
    _locale(monkeypatch, LANG="th_TH.UTF-8")
    _, said = init(root)
    text = (root / "oracle.toml").read_text(encoding="utf-8")
    exclude = _config(root)["index"]["exclude"]
    assert sorted(exclude) == ["/de/", "/en/", "/ja/", "/zh-TW/"]  # active lines, the kept language not among them
    assert '"/th/"' not in text and "delete its line" in text
    assert any("indexing th/" in line and "your language (th" in line for line in said), said
    # release notes of a kept language would be suggested; th has none, en's and de's are left out with them
    assert "Release notes" not in text
    data = tmp_path / "data"
    files = _indexed(root, data)
    assert files == {f"th/{p}" for p in ("Getting started.md", "Plugins/Daily notes.md", "Plugins/Graph view.md")} \
        | {"README.md"}
    assert len(files) == counts["th"] + 1


def test_without_a_language_in_the_environment_the_largest_folder_is_kept(tmp_path, monkeypatch):
    root = tmp_path / "help"
    counts = build_translated_vault(root)
    _locale(monkeypatch, LANG="C.UTF-8")
    _, said = init(root)
    assert max(counts, key=counts.get) == "en"
    assert sorted(_config(root)["index"]["exclude"]) == ["/de/", "/ja/", "/th/", "/zh-TW/"]
    text = (root / "oracle.toml").read_text(encoding="utf-8")
    assert '# "en/Release notes/",    # 6 files' in text  # suggested, not done
    assert any(line.startswith("suggestion: release notes") and "en/Release notes/ (6)" in line for line in said)
    assert any("the largest language folder (11 files" in line for line in said), said


def test_two_languages_from_language_are_both_kept(tmp_path, monkeypatch):
    root = tmp_path / "help"
    build_translated_vault(root)
    _locale(monkeypatch, LANGUAGE="de:en", LANG="de_DE.UTF-8")
    choice = choose_languages(survey(root))[0]
    assert choice.kept == ["de", "en"] and choice.left_out == ["ja", "th", "zh-TW"]
    init(root)
    assert sorted(_config(root)["index"]["exclude"]) == ["/ja/", "/th/", "/zh-TW/"]


def test_a_language_folder_deeper_in_is_anchored_and_nested_names_are_not_caught(tmp_path, monkeypatch):
    """`docs/de/` is excluded as `docs/de/`; an `en/.../it/` folder (Italian code, not a language folder of a
    translated tree) is not left out by a bare `it/` pattern."""
    root = tmp_path / "site"
    for lang in ("en", "it", "fr"):
        (root / "docs" / lang).mkdir(parents=True)
        (root / "docs" / lang / "index.md").write_text(f"# Index {lang}\n\nText.\n", encoding="utf-8")
    (root / "docs" / "en" / "extra.md").write_text("# Extra\n\nMore.\n", encoding="utf-8")
    (root / "notes" / "it").mkdir(parents=True)
    (root / "notes" / "it" / "help-desk.md").write_text("# IT help desk\n\nCall them.\n", encoding="utf-8")
    _locale(monkeypatch, LANG="en_GB.UTF-8")
    init(root)
    assert sorted(_config(root)["index"]["exclude"]) == ["docs/fr/", "docs/it/"]
    assert "notes/it/help-desk.md" in _indexed(root, tmp_path / "data")


def test_an_exclude_added_after_indexing_removes_those_files_without_the_vanished_refusal(tmp_path, monkeypatch):
    """All five languages indexed first (no oracle.toml: every file a learning); then init keeps one: more than
    half of the index goes, but the files are on disk and left out on purpose, so no "really gone" refusal."""
    root, data = tmp_path / "help", tmp_path / "data"
    counts = build_translated_vault(root)
    monkeypatch.setenv("ORACLE_DEFAULT_TYPE", "learning")
    assert len(_indexed(root, data)) == sum(counts.values()) + 1
    monkeypatch.delenv("ORACLE_DEFAULT_TYPE")
    _locale(monkeypatch, LANG="en_US.UTF-8")
    init(root)
    oracle = open_oracle(root, data)
    try:
        report = oracle.indexer.sync(vectors=False)
        assert report.removed == sum(counts.values()) - counts["en"]
        assert {rel.split("/")[0] for rel in oracle.store.file_states()} == {"en", "README.md"}
    finally:
        oracle.close()
    # files that are really gone still meet the guard
    import shutil

    shutil.rmtree(root / "en")
    oracle = open_oracle(root, data)
    try:
        with pytest.raises(SyncRefused, match="really are gone"):
            oracle.indexer.sync(vectors=False)
    finally:
        oracle.close()


def test_the_commented_rerank_and_frontmatter_examples_work_once_uncommented(tmp_path: Path) -> None:
    from oracle_indexer.rootconfig import load_layout

    root = tmp_path / "notes"
    (root / "learnings").mkdir(parents=True)
    (root / "learnings" / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    init(root)
    text = (root / "oracle.toml").read_text(encoding="utf-8")
    block = text[text.index("# [rerank]"):]
    lines = [line[2:] if line.startswith("# ") and ("=" in line or line.startswith("# [")) else line
             for line in block.splitlines()]
    (root / "oracle.toml").write_text(text[: text.index("# [rerank]")] + "\n".join(lines) + "\n", encoding="utf-8")
    layout = load_layout(root)
    assert layout.rerank.model == "models/ms-marco-MiniLM-L-6-v2" and (layout.rerank.top, layout.rerank.weight) == (20, 0.5)
    assert layout.frontmatter.required == ("owner",)
