"""The real `oracle` command with `where` filters, the [frontmatter] schema and context-aware consults: a
subprocess per call on a temp root and data dir (keyword index only: nothing here needs the vector leg)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _corpus import PROJECT, write

SCRIPT = Path(sys.executable).parent / "oracle"
NOTES = {
    "learnings/2026-03-01_ledger.md": "---\nindustries: [Finance]\nowner: ana\nreviewed: 2026-03-01\n---\n"
                                      "# Ledger locks\n\n## Lesson\nLock the ledger row before the payment queue settles.\n",
    "learnings/2026-03-02_any.md": "---\nindustries: ['*']\nstatus: final\n---\n# Queues for all\n\n## Lesson\n"
                                   "Every payment queue gets a dead letter queue.\n",
    "learnings/2026-03-03_till.md": "---\nindustries: [retail]\nowner: bo\nstatus: shelved\n---\n# Till queue\n\n"
                                    "## Lesson\nThe till's payment queue survives a power cut.\n",
    "principles/craft.md": "# Craft\n\n### Test with real parts\n- Real payment queues in tests, not mocks.\n",
}
SCHEMA = '[frontmatter]\nrequired = ["owner"]\ntypes = ["learning"]\n[frontmatter.allowed]\nstatus = ["draft", "final"]\n'


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], env=env, cwd=PROJECT, capture_output=True, text=True,
                          encoding="utf-8", timeout=120)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("where-root")
    for rel, text in NOTES.items():
        write(root / rel, text)
    write(root / "oracle.toml", SCHEMA)
    out = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    out.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(tmp_path_factory.mktemp("where-data")),
               PYTHONIOENCODING="utf-8")
    return out


@pytest.fixture(scope="module")
def indexed(env: dict) -> subprocess.CompletedProcess:
    return run(env, "index", "--json")


def test_index_reports_schema_violations_like_other_warnings(indexed: subprocess.CompletedProcess) -> None:
    assert indexed.returncode == 0, indexed.stderr
    warnings = json.loads(indexed.stdout)["warnings"]
    assert ("learnings/2026-03-02_any.md: frontmatter field 'owner' is required ([frontmatter] in oracle.toml);"
            " add it") in warnings
    assert any(w.startswith("learnings/2026-03-03_till.md: frontmatter field 'status': 'shelved' not allowed")
               for w in warnings)
    assert not any(w.startswith(("principles/", "learnings/2026-03-01")) for w in warnings)


def test_search_where_from_the_command_line(env: dict, indexed: subprocess.CompletedProcess) -> None:
    found = run(env, "search", "payment queue", "--mode", "fts", "--where", '{"industries": "finance"}', "--json")
    assert found.returncode == 0, found.stderr
    assert sorted(h["source_file"] for h in json.loads(found.stdout)["hits"]) == [
        "learnings/2026-03-01_ledger.md"]  # the note holding `*` is not kept: its star is a literal
    dated = run(env, "search", "payment queue", "--mode", "fts", "--where", '{"reviewed": {"after": "2026-01-01"}}')
    assert dated.returncode == 0 and "2026-03-01_ledger.md" in dated.stdout and "till" not in dated.stdout
    bad = run(env, "search", "payment queue", "--where", '{"industries": {"like": "fin"}}')
    assert bad.returncode == 2 and "unknown operator 'like'" in bad.stderr
    assert "--where" in run(env, "search", "--help").stdout


def test_consult_context_window_from_the_command_line(env: dict, indexed: subprocess.CompletedProcess) -> None:
    done = run(env, "consult", "Should tests use a real payment queue?", "--context-window", "16000", "--json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert (got["budget_tokens"], got["budget_from"], got["mode"], got["learnings"]) == (
        2400, "context_window", "core", [])
    text = run(env, "consult", "Should tests use a real payment queue?", "--context-window", "16000")
    assert "mode: core (principles only" in text.stdout
