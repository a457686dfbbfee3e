"""Issue 26, should-fix: the data dir holds every note's text and every logged query, so it is created 0700 and its
databases 0600 (SQLite's -wal and -shm follow the database), under the usual umask 022; a data dir an older version
left world-readable is narrowed on the next open. A real `oracle index`, then a real `oracle search` (which logs)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from _corpus import write
from _procs import oracle_cmd


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([*oracle_cmd(), *args], env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0o022))
    assert done.returncode == 0, done.stderr[-2000:]


def _env(tmp_path: Path) -> dict[str, str]:
    write(tmp_path / "root/learnings/a.md", "# Alpha\n\n## Note\n\nPrivate alpha text.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"))
    return env


def test_a_new_data_dir_and_its_databases_are_private(tmp_path: Path) -> None:
    env = _env(tmp_path)
    _run(env, "index")
    _run(env, "search", "alpha", "--local")
    data = tmp_path / "data"
    assert _mode(data) == 0o700, oct(_mode(data))
    dbs = [p for p in data.iterdir() if p.name.endswith((".db", ".db-wal", ".db-shm"))]
    assert {p.name for p in dbs} >= {"oracle.db", "logs.db"}, sorted(p.name for p in data.iterdir())
    wide = {p.name: oct(_mode(p)) for p in dbs if _mode(p) & 0o077}
    assert not wide, wide


def test_an_older_world_readable_data_dir_is_narrowed(tmp_path: Path) -> None:
    env = _env(tmp_path)
    _run(env, "index")
    data = tmp_path / "data"
    os.chmod(data, 0o755)
    for p in data.iterdir():
        if p.name.endswith((".db", ".db-wal", ".db-shm")):
            os.chmod(p, 0o644)
    _run(env, "index")
    assert _mode(data) == 0o700
    assert _mode(data / "oracle.db") == 0o600 and _mode(data / "logs.db") == 0o600
