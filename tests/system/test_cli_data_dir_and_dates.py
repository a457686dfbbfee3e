"""Issue 39, items 11 to 13, through the real `oracle` command.

11. Every path that creates the data dir makes it 0700: before, a data dir first created by `oracle token add` or
    `oracle token list` stayed 0755 (its lock files 0644), and so did everything the index later put in it (Chroma's
    folder and files). An older data dir that holds only tokens is narrowed at the next open, as an index's is.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from _corpus import write
from _procs import oracle_cmd


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _run(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([*oracle_cmd(), *args], env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0o022))
    assert not check or done.returncode == 0, done.stderr[-2000:]
    return done


def _env(tmp_path: Path, data: str = "data") -> dict[str, str]:
    write(tmp_path / "root/learnings/a.md", "# Alpha\n\n## Note\n\nPrivate alpha text.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / data))
    return env


def test_a_data_dir_first_made_by_token_commands_is_private(tmp_path: Path) -> None:
    env = _env(tmp_path)
    data = tmp_path / "data"
    _run(env, "token", "add", "alice", "--write")
    assert _mode(data) == 0o700, oct(_mode(data))
    wide = {p.name: oct(_mode(p)) for p in data.iterdir() if _mode(p) & 0o077}
    assert not wide, wide
    _run(env, "index")
    assert _mode(data) == 0o700 and _mode(data / "chroma") == 0o700, (oct(_mode(data)), oct(_mode(data / "chroma")))
    listed = _env(tmp_path, "listed")
    _run(listed, "token", "list")
    if (tmp_path / "listed").exists():
        assert _mode(tmp_path / "listed") == 0o700, oct(_mode(tmp_path / "listed"))


def test_an_older_data_dir_holding_only_tokens_is_narrowed(tmp_path: Path) -> None:
    env = _env(tmp_path)
    data = tmp_path / "data"
    _run(env, "token", "add", "alice", "--write")
    os.chmod(data, 0o755)  # as an older version left it
    _run(env, "index")
    assert _mode(data) == 0o700, oct(_mode(data))


IMPOSSIBLE = {
    "learnings/far.md": "---\ntitle: Far future\ndate: 9999-99-99\ntags: [ops]\n---\n# Far future\n\n## Note\n\n"
                        "The harbour crane lifts containers.\n",
    "learnings/leap.md": "---\ntitle: Not a leap day\ncreated: 2026-02-30\nlast_verified: 2026-02-31\n---\n"
                         "# Not a leap day\n\n## Note\n\nThe harbour pilot boards at dawn.\n",
    "learnings/list.md": "---\ntitle: Listed dates\nreviewed: [2026-02-30, 2026-03-01]\n---\n# Listed dates\n\n## Note\n\n"
                         "The harbour tug pushes the barge.\n",
}


def test_an_impossible_date_drops_the_field_not_the_note(tmp_path: Path) -> None:
    """Item 12: YAML reads `9999-99-99` and `2026-02-30` as timestamps, and building them raised ValueError, which
    dropped the whole note from the index. Now the note is indexed, the field is not, and a warning names both."""
    import json

    env = _env(tmp_path)
    for rel, text in IMPOSSIBLE.items():
        write(tmp_path / "root" / rel, text)
    report = json.loads(_run(env, "index", "--json").stdout)
    text = json.dumps(report)
    for rel in IMPOSSIBLE:
        assert rel in text, (rel, report)
    assert "'9999-99-99' is not a calendar date" in text and "'2026-02-30' is not a calendar date" in text, report
    found = json.loads(_run(env, "search", "harbour", "--mode", "fts", "--json", "--local").stdout)
    titles = {hit["title"] for hit in found["hits"]}
    assert titles == {"Far future", "Not a leap day", "Listed dates"}, found
    listed = json.loads(_run(env, "list", "--json", "--local").stdout)
    dates = {d["title"]: d["date"] for d in listed["items"]}
    assert dates["Not a leap day"] is None and dates["Far future"] is None, listed
