"""`oracle_list` newest first down to the time of day, on a REAL index (SQLite + vectors) of a temp root.

Three retrospectives of one day named in Oracle v2's way (`retrospectives/2026-01/05/HH.MM_slug.md`) sort
by path as 00.27, 10.32, 21.40: listing by day then path (the old order) shows the night one first. The
time also comes from `YYYY-MM-DD_HH-MM_slug.md` names and from a datetime in frontmatter.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from _corpus import open_oracle, write
from oracle_indexer.notes.parse import note_timestamp
from oracle_server.services.capabilities.browse import list_documents
from oracle_server.services.vocabulary.models import ListRequest

NOTES = {
    "retrospectives/2026-01/05/00.27_night-fix.md": "# Night fix\n\n## What happened\n\nA night fix.\n",
    "retrospectives/2026-01/05/10.32_morning-review.md": "# Morning review\n\n## What happened\n\nA review.\n",
    "retrospectives/2026-01/05/21.40_evening-deploy.md": "# Evening deploy\n\n## What happened\n\nA deploy.\n",
    "learnings/2026-01-04_09-05_early-note.md": "# Early note\n\nWritten at nine.\n",
    "learnings/2026-01-04_aa-frontmatter-late.md": (
        "---\ntitle: Late note\ndate: 2026-01-04 23:10:00\n---\n\n# Late note\n\nWritten at night.\n"),
    "learnings/2026-01-04_12-21_noon-note.md": "# Noon note\n\nWritten at noon.\n",
    "learnings/2026-01-04_zz-no-time.md": "# No time\n\nOnly a day.\n",
}
NEWEST_FIRST = [
    "retrospectives/2026-01/05/21.40_evening-deploy.md",
    "retrospectives/2026-01/05/10.32_morning-review.md",
    "retrospectives/2026-01/05/00.27_night-fix.md",
    "learnings/2026-01-04_aa-frontmatter-late.md",
    "learnings/2026-01-04_12-21_noon-note.md",
    "learnings/2026-01-04_09-05_early-note.md",
    "learnings/2026-01-04_zz-no-time.md",  # a known time of the same day comes first
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("list-order") / "root"
    for rel, text in NOTES.items():
        write(root / rel, text)
    return root


def _listed(oracle) -> list[str]:
    return [i.source_file for i in list_documents(oracle, ListRequest(group_by_file=True, limit=50)).items]


def test_list_orders_by_time_of_day(root: Path, tmp_path: Path) -> None:
    oracle = open_oracle(root, tmp_path / "data")
    try:
        assert not oracle.indexer.sync().vector_failed
        assert _listed(oracle) == NEWEST_FIRST
        chunks = [i.source_file for i in list_documents(oracle, ListRequest(limit=50)).items]
        assert list(dict.fromkeys(chunks)) == NEWEST_FIRST
    finally:
        oracle.close()


def test_an_index_from_before_timestamps_gains_them_on_the_next_sync(root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    oracle = open_oracle(root, data)
    oracle.indexer.sync()
    oracle.close()
    with sqlite3.connect(data / "oracle.db") as conn:  # the index as an older Oracle left it
        conn.execute("ALTER TABLE documents DROP COLUMN timestamp")
    oracle = open_oracle(root, data)
    try:
        oracle.indexer.sync()
        assert _listed(oracle) == NEWEST_FIRST
    finally:
        oracle.close()


@pytest.mark.parametrize(("meta", "file", "date", "expected"), [
    ({}, "retrospectives/2026-01/05/10.32_x.md", "2026-01-05", "2026-01-05T10:32:00"),
    ({}, "learnings/2026-01-04_12-21_x.md", "2026-01-04", "2026-01-04T12:21:00"),
    ({"date": "2026-01-04T07:08:09+07:00"}, "learnings/x.md", "2026-01-04", "2026-01-04T07:08:09"),
    ({"date": "2026-01-04"}, "learnings/2026-01-04_12-21_x.md", "2026-01-04", "2026-01-04T12:21:00"),
    ({"date": "2026-02-01"}, "learnings/2026-01-04_12-21_x.md", "2026-02-01", None),  # another day's time
    ({}, "learnings/2026-01-04_10-steps.md", "2026-01-04", None),
    ({}, "learnings/2026-01-04_25-10_x.md", "2026-01-04", None),  # not a time
    ({}, "learnings/x.md", None, None),
])
def test_note_timestamp(meta: dict, file: str, date: str | None, expected: str | None) -> None:
    assert note_timestamp(meta, file, date) == expected
