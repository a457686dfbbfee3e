"""The linter (ruff, configured in pyproject.toml's [tool.ruff]: pyflakes, pycodestyle errors, import order and
complexity over indexer/ and server/) passes, and it fails on what it is there for: an unused import, imports out
of their stdlib / third-party / first-party blocks, a line over 120 columns and a function over complexity 10,
each in a file checked with the project's own settings. A check that cannot fail proves nothing. `make lint` runs
the same check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
CONFIG = PROJECT / "pyproject.toml"


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    """`ruff check` as `make lint` runs it, without a cache (nothing written into the checkout, no race between
    test workers)."""
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)


def test_indexer_and_server_pass_the_linter():
    run = ruff("indexer", "server")
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_linter_fails_each_kind_of_violation(tmp_path):
    """A module as someone might write it, checked with pyproject.toml's settings: each rule kind the project
    selects names its line. Its 100-column line passes (the project's 120, not ruff's default 88) and the first
    party import sorts after the third-party one (known-first-party), so the settings are the ones read."""
    branches = "".join(f"    if n == {i}:\n        return {i}\n" for i in range(11))
    source = ("import os\nimport json\n\nimport yaml\nfrom oracle_indexer.config import Settings\n\n"
              + "# " + "x" * 98 + "\n"  # line 7: 100 columns
              + "# " + "x" * 119 + "\n"  # line 8: 121 columns
              + "\n\ndef tangled(n: int) -> int:\n" + branches + "    return -1\n"
              + "\n\ndef used() -> object:\n    return yaml, Settings, json\n")
    bad = tmp_path / "bad.py"
    bad.write_text(source, encoding="utf-8")
    run = ruff("--config", str(CONFIG), "--output-format", "concise", str(bad))
    assert run.returncode == 1, run.stdout + run.stderr
    found = {line.split(" ", 2)[1] for line in run.stdout.splitlines() if line.startswith(str(bad))}
    assert {"F401", "I001", "E501", "C901"} <= found, run.stdout
    assert f"{bad}:8:" in run.stdout and f"{bad}:7:" not in run.stdout, run.stdout  # 120 columns, not 88
    assert "`tangled` is too complex (12 > 10)" in run.stdout, run.stdout

    # The same imports in their three blocks, used, and nothing else: clean, so the failures above are the
    # violations' own (and `from oracle_indexer...` counts as first party, after yaml).
    clean = tmp_path / "clean.py"
    clean.write_text("import json\nimport os\n\nimport yaml\n\nfrom oracle_indexer.config import Settings\n\n"
                     "VALUES = (json, os, yaml, Settings)\n", encoding="utf-8")
    run = ruff("--config", str(CONFIG), str(clean))
    assert run.returncode == 0, run.stdout + run.stderr
