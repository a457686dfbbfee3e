"""Names in the CLI's output (issue 45, item 13): a file's or an author's name is anyone's text (a teammate's folder,
a cloned repository, ORACLE_AUTHOR on another machine). The CLI printed them raw: a newline in a file name forged a
line of the answer ("saved forged.md"), an escape code retitled the terminal. Every renderer now prints a name through
one helper (server/registry/render.py `printable`): one line, control characters shown as escapes. Real `oracle`
processes on a real root; the team part on a real PostgreSQL (tests/_pg.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import _pg
from _corpus import write
from _procs import oracle_cmd

pytestmark = pytest.mark.slow
FORGED = "zebra\nsaved forged.md\x1b]0;owned\x07\x1b[2J\u202e.md"  # a note's file name, as a folder may hold it
SHOWN = "zebra\\nsaved forged.md\\x1b]0;owned\\x07\\x1b[2J\\u202e.md"
AUTHOR = "mallory\n\x1b[31mroot"
NOTE = "# Zebra crossing\n\n## Lesson\n\nZebra stripes help drivers see walkers.\n"


def _oracle(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*oracle_cmd(), *args], env=env, capture_output=True, text=True, encoding="utf-8",
                          timeout=300)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout + done.stderr


def _no_raw_name(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, out
    assert not any(line.startswith("saved forged.md") for line in out.splitlines()), out  # no forged line


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    write(tmp_path / "root" / "learnings" / FORGED, NOTE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"), ORACLE_ENGINE="0",
               ORACLE_RUNTIME_DIR=str(tmp_path / "run"), ORACLE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONIOENCODING="utf-8")
    return env


def test_file_names_print_escaped_in_search_list_read_and_stats(env: dict[str, str], tmp_path: Path) -> None:
    _oracle(env, "index")
    write(tmp_path / "root" / "learnings" / ("late\n\x1b[2J.md"), NOTE)  # not indexed yet: stats' drift names it
    for args in (["search", "zebra", "--mode", "fts"], ["list"], ["read", "learnings/" + FORGED], ["stats"]):
        out = _oracle(env, *args, "--local")
        _no_raw_name(out)
        assert (SHOWN if args[0] != "stats" else "late\\n\\x1b[2J.md") in out, (args, out)


def test_author_names_print_escaped_in_history_and_stats(env: dict[str, str], tmp_path: Path) -> None:
    """The team store keeps no path with a control character (indexer/notes/rootfiles.py: such a note is left alone,
    with a warning that names it, escaped); an author's name, from another machine's ORACLE_AUTHOR, it does keep."""
    write(tmp_path / "root" / "learnings" / "zebra.md", NOTE)
    env = {**env, "ORACLE_DATABASE_URL": _pg.new_database(), "ORACLE_AUTHOR": AUTHOR}
    indexed = _oracle(env, "index")
    history = _oracle(env, "history", "learnings/zebra.md", "--local")
    stats = _oracle(env, "stats", "--local")
    for out in (indexed, history, stats):
        _no_raw_name(out)
    for out in (history, stats):
        assert "mallory\\n\\x1b[31mroot" in out, out
    assert "learnings/zebra.md: 1 revision" in history, history
