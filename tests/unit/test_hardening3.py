"""Hardening, round three (issue 26): what a hostile repository, a crafted note and a careless client could
still do, on real parts.

Each test here failed on the code before its fix. Services run on real indexes (SQLite FTS5, embedded
ChromaDB, the ONNX model) of small roots written for each test, with real files and real symlinks; the
processes a user meets (`oracle serve --http`, stdio) are in tests/system/test_hardening3_procs.py.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from pathlib import Path

import pytest

from _corpus import write
from server.files import PathRefused, read_file
from server.models import ReadRequest, SearchRequest
from server.read import read_note
from server.resources import UnknownResource, read_resource
from server.search import search

SECRET = "CANARY-" + secrets.token_hex(8)


# -- 1. symlinks must not smuggle secrets into the index ------------------------------------------------
def _secret_repo(root: Path) -> dict[str, str]:
    """A repository with secrets where a teammate keeps them (.git/config, .env, node_modules, a gitignored
    and an excluded folder) and committed note-named symlinks to each. Returns link -> its target."""
    write(root / "oracle.toml", '[index]\nexclude = ["drafts/"]\n')
    write(root / ".gitignore", "private/\n")
    write(root / ".git/config", f"[remote \"origin\"]\n\turl = https://bob:{SECRET}@example.com/x.git\n")
    write(root / ".env", f"API_TOKEN={SECRET}\n")
    write(root / "node_modules/pkg/README.md", f"# Package\n\n## Token\n\n{SECRET}\n")
    write(root / "private/keys.md", f"# Keys\n\n## Token\n\n{SECRET}\n")
    write(root / "drafts/secret.md", f"# Draft\n\n## Token\n\n{SECRET}\n")
    write(root / "config.yaml", f"token: {SECRET}\n")
    write(root / "attic/real.md", "# Attic\n\n## Okapi\n\nokapi stripes are for hiding in the forest\n")
    write(root / "learnings/2026-01-01_ok.md", "---\ntitle: Ok\n---\n# Ok\n\n## Context\n\nordinary note about okapis\n")
    links = {
        "learnings/git-config.md": "../.git/config",
        "learnings/env.md": "../.env",
        "learnings/node.md": "../node_modules/pkg/README.md",
        "learnings/ignored.md": "../private/keys.md",
        "learnings/draft.md": "../drafts/secret.md",
        "learnings/yaml.md": "../config.yaml",
        "learnings/attic.md": "../attic/real.md",  # an unmapped markdown note: indexed under the link's name
    }
    for link, target in links.items():
        os.symlink(target, root / link)
    return links


def _assert_secret_nowhere(oracle) -> None:
    """The canary in no table of the index (read through SQLite, not the service under test)."""
    conn = sqlite3.connect(oracle.settings.db_path)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 (names from sqlite_master)
                assert SECRET not in repr(row), f"the secret reached table {table}"
    finally:
        conn.close()


def test_symlinks_to_secrets_are_skipped_with_a_reason_and_never_indexed(tmp_path: Path, make_oracle) -> None:
    root = tmp_path / "root"
    _secret_repo(root)
    oracle = make_oracle(root, tmp_path / "data")
    report = oracle.indexer.sync()
    for link in ("learnings/git-config.md", "learnings/env.md"):
        assert "hidden" in report.skipped[link], report.skipped
    assert "left out by the rules (exclude)" in report.skipped["learnings/node.md"]
    assert "left out by the rules (.gitignore)" in report.skipped["learnings/ignored.md"]
    assert "left out by the rules (exclude)" in report.skipped["learnings/draft.md"]
    assert "not a markdown file" in report.skipped["learnings/yaml.md"]
    assert set(oracle.store.file_states()) == {"learnings/2026-01-01_ok.md", "learnings/attic.md"}
    hits = search(oracle, SearchRequest(query=SECRET, mode="fts", limit=50)).hits
    assert hits == []
    assert search(oracle, SearchRequest(query="okapi stripes forest", mode="fts")).hits[0].source_file == "learnings/attic.md"
    _assert_secret_nowhere(oracle)


def test_a_symlink_retargeted_at_a_secret_is_dropped_by_the_watchers_path(tmp_path: Path, make_oracle) -> None:
    """The watcher re-indexes one path (`sync_paths`): a note link swapped to `.env` is removed and skipped."""
    root = tmp_path / "root"
    _secret_repo(root)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    link = root / "learnings/attic.md"
    link.unlink()
    os.symlink("../.env", link)
    report = oracle.indexer.sync_paths(["learnings/attic.md"])
    assert "hidden" in report.skipped["learnings/attic.md"]
    assert "learnings/attic.md" not in oracle.store.file_states()
    _assert_secret_nowhere(oracle)


def test_readers_and_the_chunk_resource_apply_the_same_rule(tmp_path: Path, make_oracle) -> None:
    """A link indexed while it pointed at a note and then retargeted at `.env` (no re-index yet): neither the
    path readers (`/api/file`, `oracle_read`, the note resource) nor the chunk resource by id serve the secret."""
    root = tmp_path / "root"
    _secret_repo(root)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    chunk = oracle.store.file_chunk_ids("learnings/attic.md")[0]
    assert "okapi" in read_resource(oracle, f"oracle://chunk/{chunk}").text
    link = root / "learnings/attic.md"
    link.unlink()
    os.symlink("../.env", link)
    for link_name in ("learnings/attic.md", "learnings/env.md", "learnings/git-config.md", "learnings/node.md",
                      "learnings/ignored.md", "learnings/draft.md", "learnings/yaml.md"):
        with pytest.raises(PathRefused):
            read_file(oracle, link_name)
        with pytest.raises(PathRefused):
            read_note(oracle, ReadRequest(file=link_name))
        with pytest.raises(UnknownResource):
            read_resource(oracle, f"oracle://note/{link_name}")
    with pytest.raises(PathRefused):
        read_note(oracle, ReadRequest(id=chunk))
    with pytest.raises(UnknownResource, match="not served"):
        read_resource(oracle, f"oracle://chunk/{chunk}")


def test_path_readers_serve_only_what_the_index_would_hold(tmp_path: Path, make_oracle) -> None:
    """Should-fix of issue 26: gitignored, excluded, node_modules and unmapped markdown is never indexed, so it
    is never served by path either; a link from an unmapped name to a mapped note still reads that note."""
    root = tmp_path / "root"
    _secret_repo(root)
    os.symlink("learnings/2026-01-01_ok.md", root / "README.md")  # unmapped name, mapped target
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync()
    for rel in ("node_modules/pkg/README.md", "private/keys.md", "drafts/secret.md", "attic/real.md"):
        with pytest.raises(PathRefused, match="rules|no mapped folder"):
            read_file(oracle, rel)
        with pytest.raises(PathRefused):
            read_note(oracle, ReadRequest(file=rel))
    assert read_file(oracle, "README.md").path == "learnings/2026-01-01_ok.md"
    assert "okapi" in read_note(oracle, ReadRequest(file="learnings/attic.md")).content
