"""The deletion guard over a time window, and the bulk restore (issue 45 item 6): a subfolder moved away on one
machine (a failed mount, a `git checkout`) must not delete it from every other folder through file events, and
what a deletion took can be brought back at once. Real PostgreSQL (tests/_pg.py), real folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

import _pg
from oracle_server.services.capabilities.history import restore
from oracle_server.services.vocabulary.models import RestoreRequest
from oracle_server.services.capabilities.stats import stats
from test_workcopy import copy, files, sync

BIG = {f"learnings/big/n{i:03}.md": f"# Note {i}\n\nbody of note {i}\n" for i in range(60)}
REST = {f"learnings/other{i:02}.md": f"# Other {i}\n\nanother body {i}\n" for i in range(70)}


def tombstones(url: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM note_revisions WHERE deleted").fetchone()[0])


@pytest.fixture()
def team(tmp_path: Path):
    url = _pg.new_database()
    a = copy(tmp_path, "alice", url, {**BIG, **REST})
    b = copy(tmp_path, "bob", url, {})
    sync(a), sync(b)
    assert len(files(b)) == 130
    yield url, a, b, tmp_path
    a.close()
    b.close()


def test_a_subfolder_moved_away_is_held_not_deleted_everywhere(team) -> None:
    url, a, b, tmp = team
    shutil.move(b.settings.root / "learnings/big", tmp / "moved-away")
    batches = [sorted(BIG)[i:i + 20] for i in range(0, 60, 20)]  # as the watcher hands them over
    reports = [b.indexer.sync_paths(batch, vectors=False) for batch in batches]
    assert tombstones(url) == 0, [r.warnings for r in reports]
    assert any("held 20 deletions" in w and "oracle index --force" in w for w in reports[0].warnings)
    assert sync(b).tombstoned == 0  # the sweep's whole-folder sync (46 % gone: under the old 50 % rule) holds too
    sync(a)
    assert len(files(a)) == 130  # nothing left alice's folder
    held = stats(b).working_copy
    assert held is not None and held.deletions_held == 60
    done = restore(b, RestoreRequest(deleted_since="1h"))  # the bulk restore pulls the held notes back
    assert len(done.brought_back) == 60 and files(b) == files(a)
    assert stats(b).working_copy.deletions_held == 0  # type: ignore[union-attr]


def test_held_deletions_are_sent_by_a_forced_sync(team) -> None:
    url, a, b, tmp = team
    shutil.rmtree(b.settings.root / "learnings/big")
    assert sync(b).tombstoned == 0
    forced = b.indexer.sync(vectors=False, force=True)
    assert forced.tombstoned == 60 and tombstones(url) == 60
    assert sync(a).deleted_here == 60 and len(files(a)) == 70


def test_a_few_deletions_go_through_and_come_back_with_restore(team) -> None:
    url, a, b, tmp = team
    gone = sorted(REST)[:5]
    for rel in gone:
        (a.settings.root / rel).unlink()
    assert a.indexer.sync_paths(gone, vectors=False).tombstoned == 5  # under the cap: a deletion is a deletion
    assert sync(b).deleted_here == 5
    done = restore(b, RestoreRequest(deleted_since="10m"))
    assert done.brought_back == gone
    sync(a)
    assert files(a) == files(b) and len(files(a)) == 130


@pytest.mark.parametrize("bad", [{}, {"file": "x.md"}, {"deleted_since": "1h", "file": "x.md", "revision": 1},
                                 {"deleted_since": "yesterday"}])
def test_restore_takes_one_way_or_the_other(bad: dict) -> None:
    with pytest.raises(ValueError):
        RestoreRequest(**bad)
