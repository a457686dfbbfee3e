"""oracle.toml and the environment decide which markdown files are notes and of which type (indexer/rootconfig.py),
and discovery applies it: most specific folder wins, default type, excludes, .gitignore, symlinks as one note.
Real files in tmp_path; no index needed, so these are fast."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _first_hour import build_adr_repo, build_obsidian_vault, write
from oracle_indexer.notes.discover import discover, note_type
from oracle_indexer.notes.parse import parse_markdown
from oracle_indexer.rootconfig import ConfigError, Layout, compile_glob, load_layout

V2_BRAIN = Path("/work/shared/eval-data/nat-brain-oracle/ψ/memory")


def layout_for(root: Path, toml: str | None = None, **env: str) -> Layout:
    if toml is not None:
        write(root / "oracle.toml", toml)
    return load_layout(root, env)


# -- types by folder ------------------------------------------------------------------------------------
def test_the_most_specific_folder_wins_and_unmapped_files_take_the_default(tmp_path):
    layout = layout_for(tmp_path, '[index]\ndefault_type = "learning"\n[types]\n"locales" = "retro"\n'
                                  '"locales/en" = "principle"\n')
    assert layout.type_for("locales/en/decisions/x/index.md") == "principle"  # deeper path beats "locales"
    assert layout.type_for("locales/fr/index.md") == "retro"
    assert layout.type_for("README.md") == "learning"  # a root file: the default type
    assert layout.type_for("docs/learnings/x.md") == "learning"  # built-in names still work
    assert layout.type_for("learnings/retrospectives/x.md") == "retro"  # innermost built-in name wins


def test_a_path_key_beats_a_name_at_the_same_depth_and_bare_names_are_top_level_paths(tmp_path):
    layout = layout_for(tmp_path, '[types]\n"notes" = "principle"\n"**/journal" = "retro"\n"a/learnings" = "principle"\n')
    assert layout.type_for("notes/x.md") == "principle"
    assert layout.type_for("deep/notes/x.md") is None  # "notes" in oracle.toml is the top-level folder only
    assert layout.type_for("deep/journal/2026-01-01.md") == "retro"  # "**/journal": any depth
    assert layout.type_for("a/learnings/x.md") == "principle"  # the path key, not the built-in name
    assert layout.type_for("b/learnings/x.md") == "learning"


def test_environment_overrides_the_file(tmp_path):
    toml = '[index]\ndefault_type = "learning"\n[types]\n"logs" = "learning"\n'
    layout = layout_for(tmp_path, toml, ORACLE_FOLDER_TYPES="logs=retro,docs/adr=principle", ORACLE_DEFAULT_TYPE="none")
    assert layout.type_for("logs/x.md") == "retro"
    assert layout.type_for("x/logs/y.md") == "retro"  # a bare name in the variable: any depth, as before
    assert layout.type_for("docs/adr/1.md") == "principle"
    assert layout.type_for("README.md") is None


# -- mistakes are named with file and line ----------------------------------------------------------------
@pytest.mark.parametrize(("toml", "line", "words"), [
    ('[index]\ndefault_type = "learning"\n[types]\n"docs" = "lesson"\n', 4, "is not a type"),
    ('[index]\ndefault_tpye = "learning"\n', 2, "unknown key 'default_tpye'"),
    ('# c\n[typs]\n"docs" = "learning"\n', 2, "unknown section or key 'typs'"),
    ('[index]\ndefault_type = learning\n', 2, "not valid TOML"),
    ('[types]\n"." = "learning"\n', 2, "default_type"),
    ('[types]\n"docs/*" = "learning"\n', 2, "no globs here"),
    ('[index]\nexclude = "drafts/"\ngitignore = "yes"\n', 3, "gitignore must be true or false"),
])
def test_a_bad_oracle_toml_is_an_error_naming_file_and_line(tmp_path, toml, line, words):
    with pytest.raises(ConfigError) as err:
        layout_for(tmp_path, toml)
    message = str(err.value)
    assert f"{tmp_path / 'oracle.toml'}:{line}" in message or f"line {line}" in message, message
    assert words in message


def test_a_bad_environment_entry_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="ORACLE_FOLDER_TYPES entry 'docs=lesson'"):
        layout_for(tmp_path, ORACLE_FOLDER_TYPES="docs=lesson")
    with pytest.raises(ConfigError, match="ORACLE_DEFAULT_TYPE"):
        layout_for(tmp_path, ORACLE_DEFAULT_TYPE="notes")


def test_a_key_that_matches_no_folder_is_a_warning_with_its_line(tmp_path):
    write(tmp_path / "locales/en/a.md", "# a\n")
    layout = layout_for(tmp_path, '[types]\n"locales/en" = "learning"\n"locale/fr" = "learning"\n',
                        ORACLE_FOLDER_TYPES="logz=retro")
    found = discover(tmp_path, layout)
    assert [f.rel for f in found.files] == ["locales/en/a.md"]
    assert len(found.warnings) == 2
    assert found.warnings[0].startswith(f"{tmp_path / 'oracle.toml'}:3: path 'locale/fr' (learning) matches no folder")
    assert found.warnings[1].startswith("ORACLE_FOLDER_TYPES: folder name 'logz' (retro) matches no folder")


# -- globs, excludes, .gitignore ------------------------------------------------------------------------------
def test_gitignore_syntax():
    cases = {
        "*.md": [("a.md", False, True), ("x/y/a.md", False, True), ("a.txt", False, False)],
        "drafts/": [("drafts", True, True), ("x/drafts", True, True), ("drafts", False, False)],
        "/drafts": [("drafts", True, True), ("x/drafts", True, False)],
        "docs/**/*.md": [("docs/a.md", False, True), ("docs/a/b/c.md", False, True), ("x/docs/a.md", False, False)],
        "a?c[0-9].md": [("abc1.md", False, True), ("abcx.md", False, False), ("a/c1.md", False, False)],
    }
    for pattern, checks in cases.items():
        glob = compile_glob(pattern)
        for rel, is_dir, expected in checks:
            assert glob.matches(rel, is_dir) is expected, (pattern, rel)
    assert compile_glob("# comment") is None and compile_glob("   ") is None
    assert compile_glob("!keep.md").negated


def test_excludes_gitignore_and_include(tmp_path):
    write(tmp_path / ".gitignore", "build/\n*.tmp.md\n!keep.tmp.md\n")
    for rel in ("notes/a.md", "notes/b.tmp.md", "notes/keep.tmp.md", "build/out.md", "private/secret.md",
                "node_modules/lib/README.md", ".trash/old.md", "archive/old.md"):
        write(tmp_path / rel, f"# {rel}\n")
    layout = layout_for(tmp_path, '[index]\ndefault_type = "learning"\nexclude = ["private/"]\ninclude = ["notes/", "archive/"]\n')
    found = discover(tmp_path, layout)
    assert [f.rel for f in found.files] == ["archive/old.md", "notes/a.md", "notes/keep.tmp.md"]
    assert found.excluded == {".gitignore": 1}  # notes/b.tmp.md; pruned folders are not walked at all
    assert note_type(tmp_path, "build/out.md", layout) is None and note_type(tmp_path, "notes/a.md", layout) == "learning"
    no_git = layout_for(tmp_path, '[index]\ndefault_type = "learning"\ngitignore = false\n')
    assert "build/out.md" in {f.rel for f in discover(tmp_path, no_git).files}


# -- the two fixtures -----------------------------------------------------------------------------------------------
def test_the_adr_repository_is_each_note_once(tmp_path):
    expected = build_adr_repo(tmp_path)
    bare = discover(tmp_path, load_layout(tmp_path, {}))
    assert bare.files == [] and bare.unmapped == {"locales": 12, ".": 2}  # README symlinks are not counted twice
    layout = layout_for(tmp_path, '[index]\ndefault_type = "learning"\n')
    found = discover(tmp_path, layout)
    rels = [f.rel for f in found.files]
    assert len(rels) == expected["notes"] and len(set(rels)) == len(rels)
    assert not any(r.endswith("README.md") and r != "README.md" for r in rels)
    assert len(found.aliases) == expected["symlinks"]
    assert found.aliases["locales/fr/decisions/adopt-kafka/README.md"] == "locales/fr/decisions/adopt-kafka/index.md"
    assert not any(r.startswith(("drafts/", "node_modules/", ".git/")) or r.endswith(".draft.md") for r in rels)
    for link in found.aliases:  # the watcher's path agrees: a symlink to a note is not a note
        assert note_type(tmp_path, link, layout) is None


def test_a_symlink_to_an_unindexed_file_is_indexed_once_under_its_first_name(tmp_path):
    write(tmp_path / "attic/real.md", "# Real\n\nokapi\n")
    write(tmp_path / "learnings/.keep", "")
    os.symlink("../attic/real.md", tmp_path / "learnings/a.md")
    os.symlink("../attic/real.md", tmp_path / "learnings/b.md")
    found = discover(tmp_path, load_layout(tmp_path, {}))
    assert [f.rel for f in found.files] == ["learnings/a.md"]
    assert found.aliases == {"learnings/b.md": "learnings/a.md"}


def test_the_obsidian_vault_leaves_out_obsidian_state_and_trash(tmp_path):
    expected = build_obsidian_vault(tmp_path)
    found = discover(tmp_path, layout_for(tmp_path, '[index]\ndefault_type = "learning"\n[types]\n"Daily" = "retro"\n'))
    types = {f.rel: f.type for f in found.files}
    assert len(types) == expected["notes"]
    assert types["Daily/2026-01-05.md"] == "retro" and types["Welcome.md"] == "learning"
    assert not any(r.startswith((".obsidian", ".trash")) for r in types)


# -- parsing: Obsidian and Oracle v2 ------------------------------------------------------------------------------
def test_wikilinks_become_links_to_relations_and_aliases_are_titles():
    text = ("---\naliases:\n  - Lizard uploader\n  - gk\n---\n# Gecko\n\nWrites to [[Object store]], reads"
            " [[Queue#Retries|the queue]], [[Object store.md]] again.\n\n```\n[[Not a link]]\n```\n"
            "`[[inline code]]` ![[diagram.png]] ![[Embedded note]]\n")
    parsed = parse_markdown(text, "Projects/Gecko.md", "learning")
    assert [(r.subject, r.predicate, r.object) for r in parsed.relations] == [
        ("Gecko", "links_to", "Object store"), ("Gecko", "links_to", "Queue"), ("Gecko", "links_to", "Embedded note")]
    assert parsed.chunks[0].aliases == ("Lizard uploader", "gk")
    assert parsed.title == "Gecko" and parsed.warnings == []
    assert parse_markdown("---\naliases: books\n---\nx\n", "r.md", "learning").chunks[0].aliases == ("books",)


def test_oracle_v2_frontmatter_parses_without_warnings():
    text = ("---\ntitle: # Meshtastic ESP32-S3 Setup\ntags: [lora]\ncreated: 2026-01-12\n"
            "source: rrr: 15.00_trace-poster-learn\n---\n\n# # Meshtastic ESP32-S3 Setup\n\n## Pattern\n\nflash it\n")
    parsed = parse_markdown(text, "learnings/2026-01-12_mesh.md", "learning")
    assert parsed.warnings == [] and parsed.title == "Meshtastic ESP32-S3 Setup"
    assert parsed.frontmatter["source"] == "rrr: 15.00_trace-poster-learn"
    for line, value in (("title: Handoff System:", "Handoff System:"), ("title: **Bold** claim", "**Bold** claim"),
                        ('title: "The Oracle" is about: freedom', '"The Oracle" is about: freedom'),
                        ("source: Session 2026-01-12: flash success", "Session 2026-01-12: flash success")):
        meta = parse_markdown(f"---\n{line}\n---\nbody\n", "learnings/x.md", "learning")
        assert meta.warnings == [] and next(iter(meta.frontmatter.values())) == value, line


@pytest.mark.skipif(not V2_BRAIN.is_dir(), reason="the real Oracle v2 brain is not on this machine")
def test_a_real_oracle_v2_brain_parses_without_frontmatter_warnings():
    files = sorted(V2_BRAIN.rglob("*.md"))
    warned = []
    for path in files:
        parsed = parse_markdown(path.read_text(encoding="utf-8", errors="replace"), path.name, "learning")
        if any(w.startswith("frontmatter") for w in parsed.warnings) or parsed.title.startswith("#"):
            warned.append((path.name, parsed.warnings, parsed.title))
    assert len(files) > 1000 and warned == []


def test_search_sampling_is_off_unless_turned_on(tmp_path, monkeypatch):
    """[search] sampling (issue 37): off by default, true turns it on, ORACLE_SAMPLING wins, mistakes name the line."""
    import pytest as _pytest

    from oracle_indexer.config import ConfigError, Settings
    from oracle_indexer.rootconfig import load_layout

    assert load_layout(tmp_path, {}).sampling is False
    (tmp_path / "oracle.toml").write_text("[search]\nsampling = true\n", encoding="utf-8")
    assert load_layout(tmp_path, {}).sampling is True
    monkeypatch.setenv("ORACLE_SAMPLING", "0")
    assert Settings.from_env(root=tmp_path, data_dir=tmp_path / "d").sampling is False
    monkeypatch.delenv("ORACLE_SAMPLING")
    assert Settings.from_env(root=tmp_path, data_dir=tmp_path / "d").sampling is True
    (tmp_path / "oracle.toml").write_text("[search]\nsampling = \"yes\"\n", encoding="utf-8")
    with _pytest.raises(ConfigError, match=r"oracle.toml:2: sampling must be true or false"):
        load_layout(tmp_path, {})
    (tmp_path / "oracle.toml").write_text("[search]\nsampler = true\n", encoding="utf-8")
    with _pytest.raises(ConfigError, match="unknown key 'sampler' in \\[search\\]"):
        load_layout(tmp_path, {})
    (tmp_path / "oracle.toml").unlink()
    monkeypatch.setenv("ORACLE_SAMPLING", "maybe")
    with _pytest.raises(ConfigError, match="ORACLE_SAMPLING='maybe'"):
        Settings.from_env(root=tmp_path, data_dir=tmp_path / "d")


def test_reloading_oracle_toml_applies_live_settings_and_names_the_rest(tmp_path: Path) -> None:
    """Issue 40 item 3 (the running server: tests/system/test_config_reload.py): what a re-read takes up at once,
    what waits for a restart (compared with what runs, so undoing the edit clears it), and the environment's word."""
    from oracle_indexer.config import Settings, reload_settings

    (tmp_path / "oracle.toml").write_text('[index]\ndefault_type = "learning"\n', encoding="utf-8")
    running = Settings(root=tmp_path, data_dir=tmp_path / ".data", layout=load_layout(tmp_path, {}))
    (tmp_path / "oracle.toml").write_text('[index]\ndefault_type = "learning"\nexclude = ["drafts/"]\n\n'
                                          '[embedding]\nmodel = "minilm"\nquery_prefix = "query: "\n\n[database]\nurl = "postgresql://h/db"\n'
                                          '\n[search]\nsampling = true\n', encoding="utf-8")
    fresh, outcome = reload_settings(running, {})
    assert outcome.applied == ("[index] exclude", "[search] sampling") and fresh.sampling is True
    assert outcome.restart == ("[embedding]", "[database] url")
    assert outcome.message == ("oracle.toml reloaded: [index] exclude, [search] sampling applied; oracle.toml changed"
                               " since start: restart to apply [embedding], [database] url")
    assert fresh.layout.exclude and fresh.layout.embedding_model is None and fresh.database_url is None  # kept
    # the environment names the database and sampling: the file's values are not waiting for anything
    fresh, outcome = reload_settings(running, {"ORACLE_DATABASE_URL": "postgresql://x/y", "ORACLE_SAMPLING": "0"})
    assert outcome.restart == ("[embedding]",) and fresh.sampling is False
    (tmp_path / "oracle.toml").write_text("[index\n", encoding="utf-8")
    same, outcome = reload_settings(fresh, {})
    assert same is fresh and outcome.error and "cannot be read" in outcome.message
