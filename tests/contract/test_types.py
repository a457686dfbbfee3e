"""The type checker (mypy, configured in pyproject.toml's [tool.mypy]) passes on server/ and indexer/, and it
catches what it is there for: a store backend that lacks a member of the store's contract
(indexer/store/protocols.py), a service that calls a member only one backend has, and a call with an argument of
the wrong type. `make typecheck` runs the same check."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
CACHE = PROJECT / ".mypy_cache"  # mypy's default, shared with `make typecheck`


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    """mypy over the packages pyproject.toml names, read through benchmarks/trees.py's shim (.oracle-import/: the
    folders install under other names, which mypy cannot map by itself)."""
    spec = importlib.util.spec_from_file_location("trees", PROJECT / "benchmarks" / "trees.py")
    assert spec is not None and spec.loader is not None
    trees = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trees)
    trees.importable(PROJECT)
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=PROJECT, capture_output=True, text=True,
                          timeout=240)


def test_server_and_indexer_type_check():
    run = mypy()
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("Success: no issues found"), run.stdout


def test_the_checker_fails_a_backend_off_the_contract_and_a_wrong_call(tmp_path):
    """Two files as they might be edited, read by mypy in place of the real ones (--shadow-file): PgStore without
    `rekey`, and a service calling the store with an int for a path and a method only PgStore has."""
    store = PROJECT / "indexer" / "store" / "pg" / "store.py"
    text = store.read_text(encoding="utf-8")
    assert text.count("    def rekey(self") == 1
    (tmp_path / "store.py").write_text(text.replace("    def rekey(self", "    def rekey_renamed(self"), encoding="utf-8")
    service = PROJECT / "server" / "services" / "capabilities" / "read.py"
    (tmp_path / "read.py").write_text(service.read_text(encoding="utf-8") + (
        "\n\ndef _off_contract(oracle: Oracle) -> None:\n"
        "    oracle.store.note(42)\n"
        "    oracle.store.writer_lock()\n"), encoding="utf-8")
    cache = tmp_path / "cache"  # a copy of the clean run's cache: only what the two files change is checked again
    if CACHE.is_dir():
        shutil.copytree(CACHE, cache)
    run = mypy("--cache-dir", str(cache), "--shadow-file", str(store), str(tmp_path / "store.py"),
               "--shadow-file", str(service), str(tmp_path / "read.py"))
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "backends.py" in out and '"PgStore" is missing following "IndexStore" protocol member' in out, out
    assert "note:     rekey" in out, out
    assert 'Argument 1 to "note" of "IndexStore" has incompatible type "int"; expected "str"' in out, out
    assert '"IndexStore" has no attribute "writer_lock"' in out, out
    assert "Found 3 errors in 2 files" in out, out
