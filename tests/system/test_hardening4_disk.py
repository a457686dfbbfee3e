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
