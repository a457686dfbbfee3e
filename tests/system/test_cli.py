"""The real `oracle` command, run as a subprocess against a temp root and data dir."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _corpus import PROJECT, write
from oracle_indexer.notes.parse import parse_markdown

SCRIPT = Path(sys.executable).parent / "oracle"  # the console script pip installed next to the interpreter
FILES = {
    "learnings/2026-04-01_pangolin.md": (
        "learning",
        "---\ntitle: Pangolin scales\ntags: [wildlife]\nproject: zoo\n---\n# Pangolin scales\n\n"
        "## Context\n\nThe pangolin rolls into a ball when threatened.\n\n## Lesson\n\nKeep calm and wait.\n",
    ),
    "principles/be-patient.md": (
        "principle",
        "# Be patient\n\nPatience pays.\n\n### Wait\n\nGive it time.\n\n- Count to ten.\n- Breathe.\n",
    ),
    "retrospectives/2026-04-02_zoo-week.md": (
        "retro",
        "# Zoo week\n\n## What happened\n\nWe fed the tortoise and cleaned the aviary.\n",
    ),
}
CHUNKS = sum(len(parse_markdown(text, rel, t).chunks) for rel, (t, text) in FILES.items())


def oracle_cmd() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "oracle_server.cli"]


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-root")
    for rel, (_, text) in FILES.items():
        write(root / rel, text)
    (root / "learnings/empty.md").write_bytes(b"")
    write(root / "drafts/unsorted.md", "# unsorted\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(tmp_path_factory.mktemp("cli-data")), PYTHONIOENCODING="utf-8")
    return env


def oracle(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*oracle_cmd(), *args], env=env, cwd=PROJECT, capture_output=True, text=True, encoding="utf-8", timeout=timeout
    )


@pytest.fixture(scope="module")
def indexed(cli_env):
    """The first `oracle index` run (everything else in this module reads the index it built)."""
    return oracle(cli_env, "index")


def test_console_script_is_installed():
    assert SCRIPT.exists(), f"{SCRIPT} missing: run `make install`"
    result = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "index" in result.stdout and "search" in result.stdout


def test_index_prints_the_summary_line(indexed):
    assert indexed.returncode == 0, indexed.stderr
    lines = indexed.stdout.splitlines()
    assert re.fullmatch(
        rf"notes: 3 added, 0 changed, 0 removed, 0 unchanged; 1 skipped; sections written: {CHUNKS};"
        rf" embeddings: {CHUNKS} computed, 0 cached; \d+\.\d\ds \(keyword \d+\.\d\ds, vector \d+\.\d\ds\)",
        lines[0],
    ), lines[0]
    assert "skipped learnings/empty.md: empty file" in lines
    assert "not indexed (no type): 1 file: drafts/ 1" in lines


def test_second_index_run_is_unchanged(indexed, cli_env):
    assert indexed.returncode == 0
    again = oracle(cli_env, "index")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        "notes: 0 added, 0 changed, 0 removed, 3 unchanged; 1 skipped; sections written: 0;"
        " embeddings: 0 computed, 0 cached;"
    )


def test_search_json(indexed, cli_env):
    assert indexed.returncode == 0
    result = oracle(cli_env, "search", "pangolin", "ball", "--json", "--limit", "3")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["query"] == "pangolin ball" and data["meta"]["mode"] == "hybrid"
    assert len(data["hits"]) == 3 and data["limit"] == 3
    top = data["hits"][0]
    assert top["source_file"] == "learnings/2026-04-01_pangolin.md" and top["heading"] == "Context"
    assert top["found_by"] == ["fts", "vector"] and top["project"] == "zoo"
    assert top["line_start"] == 10 and top["line_end"] == 10


def test_search_fts_json_total(indexed, cli_env):
    assert indexed.returncode == 0
    result = oracle(cli_env, "search", "pangolin", "--mode", "fts", "--json", "--limit", "10", "--unit", "section")
    data = json.loads(result.stdout)
    # title "Pangolin scales" is in both chunks of the file; the word nowhere else
    assert data["total"] == 2 and [h["source_file"] for h in data["hits"]] == ["learnings/2026-04-01_pangolin.md"] * 2
    notes = json.loads(oracle(cli_env, "search", "pangolin", "--mode", "fts", "--json", "--limit", "10").stdout)
    assert notes["total"] == 1 and notes["meta"]["unit"] == "note"
    (hit,) = notes["hits"]
    assert [s["id"] for s in hit["sections"]] == [h["id"] for h in data["hits"] if h["id"] != hit["id"]]
    human = oracle(cli_env, "search", "pangolin", "--mode", "fts", "--limit", "10")
    assert human.stdout.startswith("1 note (fts") and "also: " in human.stdout


def test_stats_json(indexed, cli_env):
    assert indexed.returncode == 0
    result = oracle(cli_env, "stats", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["documents"]["total"] == CHUNKS
    assert data["documents"]["by_type"] == {"learning": 2, "principle": 4, "retro": 1}
    assert data["files"]["total"] == 3
    assert data["files"]["skipped"] == {"learnings/empty.md": "empty file"}
    assert data["embeddings"]["embedded_chunks"] == CHUNKS and data["embeddings"]["coverage"] == 1.0
    assert data["vector_store"]["ok"] is True
    assert data["drift"]["in_sync"] is True and data["drift"]["unmapped_folders"] == {"drafts": 1}
    assert Path(data["root"]) == Path(cli_env["ORACLE_ROOT"]).resolve()


@pytest.mark.parametrize(
    "query, message",
    [
        ("", "oracle: invalid input: query: String should have at least 1 character"),
        ("   ", "oracle: invalid input: query: Value error, query is empty: pass a few words"),
    ],
)
def test_empty_query_fails_with_a_clear_message(indexed, cli_env, query, message):
    assert indexed.returncode == 0
    result = oracle(cli_env, "search", query)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)


def test_limit_above_100_is_rejected(indexed, cli_env):
    assert indexed.returncode == 0
    result = oracle(cli_env, "search", "pangolin", "--limit", "101")
    assert result.returncode == 2 and "limit" in result.stderr and result.stdout == ""


def test_missing_root_is_a_clear_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "nope"), ORACLE_DATA_DIR=str(tmp_path / "data"))
    result = oracle(env, "index")
    assert result.returncode == 2
    assert f"{tmp_path / 'nope'} (ORACLE_ROOT=" in result.stderr and "does not exist" in result.stderr


@pytest.mark.parametrize("args", [("stats",), ("search", "anything"), ("serve",), ("list",)])
def test_a_mistyped_root_stops_every_command_naming_the_path(tmp_path, args):
    """Issue 27 item 8: `oracle --root ~/notse stats` said "0 notes" and "drift: none" and made a data dir;
    `oracle serve` on a missing root died with an error that named no path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_DATA_DIR=str(tmp_path / "data"))
    missing = tmp_path / "notse"
    result = subprocess.run([*oracle_cmd(), "--root", str(missing), *args], env=env, cwd=PROJECT, capture_output=True,
                            text=True, encoding="utf-8", timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stderr
    assert f"the knowledge root {missing} (--root={missing}) does not exist" in result.stderr
    assert result.stdout == "" and not (tmp_path / "data").exists()
    (tmp_path / "a-file.md").write_text("# not a folder\n")
    env.update(ORACLE_ROOT=str(tmp_path / "a-file.md"))
    result = subprocess.run([*oracle_cmd(), *args], env=env, cwd=PROJECT, capture_output=True, text=True,
                            encoding="utf-8", timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and "is not a folder" in result.stderr and str(tmp_path / "a-file.md") in result.stderr


@pytest.mark.slow
def test_a_port_in_use_is_one_line_and_exit_1(indexed, cli_env):
    """Not an abort (SIGABRT, exit 134) or a log line after start-up work began: one line saying what to do."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = oracle(cli_env, "serve", "--http", "--no-index", "--port", str(port), timeout=120)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [f"oracle: port {port} on 127.0.0.1 is already in use (another `oracle serve --http`?): "
                     "stop it, or choose another with --port or ORACLE_PORT"], done.stderr


# -- what a new user types (issue 27, "Small") --------------------------------------------------------------
def test_version_and_global_options_after_the_command(indexed, cli_env, tmp_path):
    from oracle_server import __version__

    version = oracle(cli_env, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"oracle {__version__}"
    # `oracle index --root X` as well as `oracle --root X index`; after the command wins, as it is read last.
    env = {k: v for k, v in cli_env.items() if k != "ORACLE_ROOT"}
    after = oracle(env, "stats", "--json", "--root", cli_env["ORACLE_ROOT"], "--data-dir", cli_env["ORACLE_DATA_DIR"])
    before = oracle(env, "--root", cli_env["ORACLE_ROOT"], "--data-dir", cli_env["ORACLE_DATA_DIR"], "stats", "--json")
    assert after.returncode == before.returncode == 0, after.stderr + before.stderr
    assert json.loads(after.stdout)["root"] == json.loads(before.stdout)["root"] == cli_env["ORACLE_ROOT"]
    assert json.loads(after.stdout)["files"]["total"] == 3
    missing = oracle(env, "--root", cli_env["ORACLE_ROOT"], "stats", "--root", str(tmp_path / "nope"))
    assert missing.returncode == 2 and str(tmp_path / "nope") in missing.stderr


def test_read_takes_a_path_or_an_id(indexed, cli_env):
    rel = next(iter(FILES))
    by_path = oracle(cli_env, "read", rel)
    assert by_path.returncode == 0, by_path.stderr
    assert by_path.stdout.startswith(f"{rel}:1-")
    hit = json.loads(oracle(cli_env, "read", rel, "--json").stdout)["sections"][0]["id"]
    by_id = oracle(cli_env, "read", hit, "--json")
    assert by_id.returncode == 0 and json.loads(by_id.stdout)["source_file"] == rel
    assert oracle(cli_env, "read", "--id", hit, "--section", "--json").returncode == 0
    nothing = oracle(cli_env, "read")
    assert nothing.returncode == 2 and "give exactly one of id" in nothing.stderr
