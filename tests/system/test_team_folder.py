"""Issue 40, items 1 and 2, through the real `oracle` command: a team's own folder (tests/fixtures/team-notes:
ADRs in decisions/, learnings/, dated retros, runbooks with `last_verified`, a handbook in en/th/ja, wikilinks,
tags) is indexed whole after `oracle init` + `oracle index`, each folder typed by what it looks like and init
saying so; the README's own example, `search "why did we pick postgres"`, answers with the ADR first; and the
runbook verified in 2023 is flagged stale by default while notes that never claimed a check are not."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from _procs import oracle_cmd

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "team-notes"


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*oracle_cmd(), *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_team_folder_is_indexed_whole_typed_by_its_look_and_answers_the_readme_question(tmp_path: Path) -> None:
    root, data = tmp_path / "notes", tmp_path / "data"
    shutil.copytree(FIXTURE, root)
    # the recently checked runbook is checked today, so the test does not age
    tls = root / "runbooks" / "rotate-tls-certificates.md"
    tls.write_text(tls.read_text(encoding="utf-8").replace("last_verified: 2026-11-01",
                                                           f"last_verified: {dt.date.today().isoformat()}"),
                   encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_") and k not in ("LANGUAGE", "LC_ALL")}
    env.update(ORACLE_DATA_DIR=str(data), LANG="en_US.UTF-8")

    said = run(env, "init", str(root)).stdout
    lines = said.splitlines()
    # every folder is typed, and init says which type and why
    assert "type: decisions/ (5) -> principle: decisions (ADRs), named decisions/; 5 of 5 files look like ADRs" in lines
    assert "type: runbooks/ (3) -> learning: runbooks, named runbooks/" in lines
    assert "type: retros/ (4) -> retro: retrospectives, named retros/" in lines
    assert any(line.startswith("type: handbook/ (2) -> note: notes") for line in lines), said
    assert "type: learnings/ (5) -> learning: learnings, built in" in lines
    # one language of the handbook (the user's), and nothing else left out: no self-contradiction
    assert any(line.startswith("languages in handbook/: indexing en/") for line in lines), said
    assert "not indexed" not in said, said
    assert "will index 20 notes (8 learning, 3 note, 5 principle, 4 retro)" in lines, said

    index = run(env, "--root", str(root), "index").stdout
    assert "notes: 20 added" in index, index

    answer = json.loads(run(env, "--root", str(root), "search", "why did we pick postgres", "--json").stdout)
    assert answer["hits"][0]["source_file"] == "decisions/0001-use-postgres.md", \
        [h["source_file"] for h in answer["hits"]]
    assert answer["hits"][0]["type"] == "principle"

    # consult draws on the handbook too (typed `note`): guidance is not only principles and learnings
    consulted = json.loads(run(env, "--root", str(root), "consult", "how should we review pull requests",
                               "--json").stdout)
    assert "handbook/en/code-review.md" in [s["source_file"] for s in consulted["learnings"]], consulted

    # freshness by default: the runbook verified 2023-01-10 is stale; notes that never claimed a check are not
    hits = json.loads(run(env, "--root", str(root), "search", "runbook steps verification oncall", "--limit", "20",
                          "--json").stdout)["hits"]
    by_file = {h["source_file"]: h for h in hits}
    assert by_file["runbooks/postgres-failover.md"]["stale"] is True
    assert by_file["runbooks/postgres-failover.md"]["stale_since"] == "2024-01-10"
    assert by_file["runbooks/rotate-tls-certificates.md"]["stale"] is False
    stats = json.loads(run(env, "--root", str(root), "stats", "--json").stdout)
    assert stats["freshness"]["stale"] == 1, stats["freshness"]
    assert stats["freshness"]["window_days"]["learning"] == 365
