"""Issue 40 item 1: folders typed by what they look like (indexer/notes/folders.py, pure), and `oracle init`
indexing a team's folder whole while an Oracle v2 brain keeps exactly what it indexed without init."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from _first_hour import write
from oracle_indexer.notes.discover import discover
from oracle_indexer.notes.folders import classify, looks_like_adr, marks
from oracle_indexer.rootconfig import load_layout
from oracle_server.services.support.init import init

ADR = "# Use Redis\n\n## Status\n\nAccepted\n\n## Context\n\nSessions.\n\n## Decision\n\nRedis.\n"
MADR = ("# Use Redis\n\n* Status: accepted\n* Deciders: ops\n\n## Context and Problem Statement\n\nSessions.\n\n"
        "## Decision Outcome\n\nRedis.\n")
HANDOFF = "# Handoff\n\n**Status**: in progress\n\n## Context\n\nWhere we are.\n\n## Next\n\nTests.\n"
RUNBOOK = "# Restart the queue\n\n## Symptoms\n\nBacklog.\n\n## Steps\n\n1. Drain.\n\n## Rollback\n\nUndo.\n"
PLAIN = "# Team lunch\n\nFridays at noon.\n"


@pytest.mark.parametrize(("folder", "files", "doc_type", "kind"), [
    ("decisions", [("x.md", PLAIN)], "principle", "decisions (ADRs)"),
    ("docs/ADR", [], "principle", "decisions (ADRs)"),
    ("Decision Records", [("x.md", PLAIN)], "principle", "decisions (ADRs)"),
    ("architecture", [("0001-use-redis.md", ADR), ("0002-x.md", MADR), ("index.md", PLAIN)], "principle",
     "decisions (ADRs)"),
    ("runbooks", [("x.md", PLAIN)], "learning", "runbooks"),
    ("ops", [("restart.md", RUNBOOK), ("other.md", RUNBOOK)], "learning", "runbooks"),
    ("retros", [("x.md", PLAIN)], "retro", "retrospectives"),
    ("meetings", [("2024-01-02 standup.md", PLAIN), ("2024-01-03.md", PLAIN), ("x.md", PLAIN)], "retro",
     "retrospectives"),
    ("guidelines", [("x.md", PLAIN)], "principle", "principles"),
    ("lessons-learned", [("x.md", PLAIN)], "learning", "learnings"),
    ("handbook", [("onboarding.md", PLAIN), ("0001-x.md", PLAIN)], "note", "notes"),
    ("archive", [("2025-01-01_handoff.md", ADR), ("2025-01-02_x.md", HANDOFF), ("y.md", ADR)], "retro",
     "retrospectives"),  # dated first: nat-brain's archive/ stays what init always made it
    ("empty", [], "note", "notes"),
])
def test_a_folder_is_typed_by_its_name_then_by_the_shape_most_of_its_files_share(folder, files, doc_type, kind):
    got = classify(folder, files)
    assert (got.type, got.kind) == (doc_type, kind)
    assert got.reason  # always says why


def test_adr_marks_come_from_headings_and_field_lines() -> None:
    assert {"status", "context", "decision"} <= marks(ADR)
    assert {"status", "deciders", "context and problem statement"} <= marks(MADR)
    assert looks_like_adr("0001-use-redis.md", ADR) and looks_like_adr("x.md", MADR)
    assert not looks_like_adr("0001-lunch.md", PLAIN)  # a numbered name alone is not an ADR
    assert not looks_like_adr("handoff.md", HANDOFF)  # Status and Context without a decision: a session note


def test_an_oracle_v2_brain_indexes_the_same_notes_after_init(tmp_path: Path) -> None:
    """nat-brain's shape (ψ/memory with resonance/, learnings/, retrospectives/, logs/, root files): init must
    not change what it indexes (the judged ranking is measured on it without an oracle.toml)."""
    root = tmp_path / "ψ" / "memory"
    write(root / "resonance/identity.md", "# Identity\n\n### Be kind\n\nAlways.\n")
    write(root / "learnings/2025-01-01_x.md", "# X\n\n## What\n\nA learning.\n")
    write(root / "retrospectives/2025/01/01/a.md", "# Retro\n\n## What happened\n\nThings.\n")
    write(root / "CLAUDE.md", "# Claude\n\nInstructions.\n")
    write(root / "archive/old.md", "# Old\n\n## Context\n\nx\n\n## Decision\n\ny\n")
    write(root / "decisions/0001-x.md", ADR)
    before = sorted((f.rel, f.type) for f in discover(root, load_layout(root, env={})).files)
    done = init(root)
    after = sorted((f.rel, f.type) for f in discover(root, load_layout(root, env={})).files)
    assert after == before
    assert ("decisions/0001-x.md", "principle") not in after
    assert all(effective is None for typed, effective in done.folders if typed.folder in ("decisions", "archive", "."))


def test_the_fixture_folder_in_its_unit(tmp_path: Path) -> None:
    """The same folder as tests/system/test_team_folder.py, in-process: every file but the other languages."""
    root = tmp_path / "notes"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "team-notes", root)
    done = init(root)
    typed = {t.folder: (t.kind.type, effective) for t, effective in done.folders}
    assert typed == {".": ("note", "note"), "decisions": ("principle", "principle"), "handbook": ("note", "note"),
                     "learnings": ("learning", "learning"), "retros": ("retro", "retro"),
                     "runbooks": ("learning", "learning")}
    assert not done.found.unmapped
    assert len(done.found.files) == 20


def test_init_lists_at_most_fifteen_folders_and_counts_the_rest(tmp_path: Path) -> None:
    from oracle_server.cli.init import SHOWN_FOLDERS, report

    root = tmp_path / "wide"
    for n in range(20):
        write(root / f"topic-{n:02d}" / "page.md", f"# Topic {n}\n\nText about topic {n}.\n")
    lines = report(init(root))
    typed = [line for line in lines if line.startswith("type: ")]
    assert len(typed) == SHOWN_FOLDERS + 1
    assert typed[-1] == "type: 5 more folders (5 files): each one's type and why are in oracle.toml under [types]"
    assert "will index 20 notes (20 note)" in lines
