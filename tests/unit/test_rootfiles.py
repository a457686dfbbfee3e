"""indexer/notes/rootfiles.py: the note-name check (pure) and the root-confined file layer (a real folder)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from oracle_indexer.notes.rootfiles import PathRefused, RootFiles, path_problem

GOOD = ["learnings/x.md", "x.md", "ψ/memory/learnings/ไทย.md", "a b/c (conflict from bob 2026-01-01).markdown"]
BAD = ["", "/etc/x.md", "../x.md", "a/../x.md", "a//x.md", "./x.md", "a/./x.md", "a\\x.md", "a/x.md/",
       "a/\x00.md", "a/x\n.md", "a/\x1b[31m.md", ".git/x.md", "a/.env.md", "~x.md", "bin/tool.conf", "run.sh",
       unicodedata.normalize("NFD", "café.md"), "x" * 2000 + ".md"]


@pytest.mark.parametrize("rel", GOOD)
def test_names_a_machine_may_act_on(rel: str) -> None:
    assert path_problem(rel) is None


@pytest.mark.parametrize("rel", BAD)
def test_names_no_machine_may_act_on(rel: str) -> None:
    assert path_problem(rel)


def test_not_text_is_refused() -> None:
    assert path_problem(None) and path_problem(b"x.md")


@pytest.fixture()
def layout(tmp_path: Path) -> tuple[RootFiles, Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "x.md").write_text("theirs", encoding="utf-8")
    os.symlink(outside, root / "linked")
    os.symlink(outside / "x.md", root / "link.md")
    return RootFiles(root), root, outside


def test_a_symlinked_folder_is_never_written_read_or_deleted_through(layout) -> None:
    files, root, outside = layout
    for act in (lambda: files.write("linked/x.md", b"mine"), lambda: files.write("linked/new.md", b"mine"),
                lambda: files.read("linked/x.md", 1000), lambda: files.unlink("linked/x.md"),
                lambda: files.stat("linked/x.md")):
        with pytest.raises(PathRefused, match="symlink"):
            act()
    assert (outside / "x.md").read_text(encoding="utf-8") == "theirs" and not (outside / "new.md").exists()


def test_a_symlink_at_the_name_is_refused_not_followed(layout) -> None:
    files, root, outside = layout
    for act in (lambda: files.write("link.md", b"mine"), lambda: files.read("link.md", 1000),
                lambda: files.unlink("link.md"), lambda: files.stat("link.md")):
        with pytest.raises(PathRefused):
            act()
    assert (outside / "x.md").read_text(encoding="utf-8") == "theirs" and (root / "link.md").is_symlink()
    assert files.exists("link.md")  # taken: a conflict copy never gets this name


def test_writes_are_atomic_make_folders_and_keep_a_files_bits(layout) -> None:
    files, root, _ = layout
    st = files.write("a/b/new.md", b"one")
    assert (root / "a/b/new.md").read_bytes() == b"one" and st.st_size == 3
    (root / "a/b/new.md").chmod(0o640)
    files.write("a/b/new.md", b"two")
    assert (root / "a/b/new.md").read_bytes() == b"two" and (root / "a/b/new.md").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (root / "a/b").iterdir()) == ["new.md"]  # no temporary left behind
    files.unlink("a/b/new.md")
    assert not (root / "a/b/new.md").exists() and files.stat("a/b/new.md") is None


def test_an_nfd_name_on_disk_is_the_nfc_note(layout) -> None:
    files, root, _ = layout
    (root / unicodedata.normalize("NFD", "café.md")).write_bytes(b"macOS saved me")
    assert files.read("café.md", 1000) == b"macOS saved me"
    files.write("café.md", b"updated")
    assert [p.name for p in root.iterdir() if p.suffix == ".md" and not p.is_symlink()] == [
        unicodedata.normalize("NFD", "café.md")]


def test_reads_stop_at_the_size_limit_and_refuse_special_files(layout) -> None:
    files, root, _ = layout
    (root / "big.md").write_bytes(b"x" * 2048)
    with pytest.raises(PathRefused, match="limit"):
        files.read("big.md", 1024)
    os.mkfifo(root / "fifo.md")
    with pytest.raises(PathRefused, match="regular"):
        files.stat("fifo.md")
    with pytest.raises(PathRefused):
        files.read("fifo.md", 1024)  # opened without blocking, then refused
