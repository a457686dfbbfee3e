"""A working copy against rows of the team database that no machine should act on (issue 45 items 1, 5, 7, 12).

The team database is shared, not trusted: a row written straight into `note_revisions` / `note_heads` (a stolen
laptop, a DBA, a database a cloned folder named) must not make an engine read, replace or delete a file outside
its folder, alias a real note, write through a symlinked folder, or stop later pulls. Real PostgreSQL (tests/_pg.py),
real folders, engines opened in this process; rows planted with plain SQL, as an attacker with the URL would.
"""

from __future__ import annotations

import hashlib
import os
import time
import unicodedata
from pathlib import Path

import psycopg
import pytest

import _pg
from oracle_server.services.capabilities.stats import stats as read_stats
from test_workcopy import ALICE, BOB, copy, files, sync

NOTE_DEFAULT = '[index]\ndefault_type = "note"\n'
SECRET = b"# secret\n\napi key: hunter2\n"


def plant(url: str, path: str, content: bytes | None, author: str = "mallory") -> None:
    """A head for `path` written straight into the tables, past every engine's checks."""
    digest = hashlib.sha256(content).hexdigest() if content is not None else None
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT coalesce(max(revision), 0) FROM note_revisions WHERE path = %s", [path]).fetchone()
        revision = int(row[0]) + 1
        seq = conn.execute(
            "INSERT INTO note_revisions (path, revision, hash, base, content, deleted, author, machine, at)"
            " VALUES (%s, %s, %s, NULL, %s, %s, %s, 'evil', %s) RETURNING seq",
            [path, revision, digest, content, content is None, author, time.time()]).fetchone()[0]
        conn.execute(
            "INSERT INTO note_heads (path, revision, seq, hash, deleted, author, at) VALUES (%s,%s,%s,%s,%s,%s,%s)"
            " ON CONFLICT (path) DO UPDATE SET revision = excluded.revision, seq = excluded.seq, hash = excluded.hash,"
            " deleted = excluded.deleted, author = excluded.author, at = excluded.at",
            [path, revision, seq, digest, content is None, author, time.time()])


def revisions_of(url: str, path: str) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM note_revisions WHERE path = %s", [path]).fetchone()[0])


@pytest.fixture()
def team(tmp_path: Path):
    url = _pg.new_database()
    # `oracle init` writes default_type = "note": any markdown path without a dot folder is a note
    a = copy(tmp_path, "alice", url, {"learnings/alice.md": ALICE, "oracle.toml": NOTE_DEFAULT})
    b = copy(tmp_path, "bob", url, {"learnings/bob.md": BOB, "oracle.toml": NOTE_DEFAULT})
    sync(a), sync(b), sync(a)
    yield url, a, b, tmp_path
    a.close()
    b.close()


def outside_files(tmp: Path) -> dict[str, Path]:
    """Files beside the folders, as a user's other files would be: a note-shaped secret and a script."""
    out = tmp / "elsewhere"
    (out / "bin").mkdir(parents=True)
    secret = out / "secret.md"
    secret.write_bytes(SECRET)
    script = out / "bin" / "run.sh"
    script.write_bytes(b"#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    return {"secret": secret, "script": script}


def test_a_planted_path_outside_the_folder_is_never_read_replaced_or_deleted(team) -> None:
    url, a, b, tmp = team
    victims = outside_files(tmp)
    hostile = [
        str(victims["secret"]),  # absolute: `root / rel` used to drop the root
        str(tmp / "elsewhere" / "planted.md"),  # ... and so wrote a new file wherever the row said
        "../elsewhere/secret.md", "learnings/../../elsewhere/secret.md",  # climbing out
        "../" * 2 + "elsewhere/bin/run.sh",  # not markdown either
        "bin/tool.conf",  # not markdown: with default_type = "note" any path without a dot folder was typed
        "learnings/.hidden.md", "./learnings/x.md", "learnings\\x.md", "learnings/a\nb.md",
    ]
    for path in hostile:
        plant(url, path, b"# planted\n\nreplaced by mallory\n")
    plant(url, str(victims["secret"]).lstrip("/") + "/../../x.md", None)  # a tombstone with `..` in it
    reports = [sync(oracle) for oracle in (b, a, b)]
    assert victims["secret"].read_bytes() == SECRET
    assert victims["script"].read_bytes() == b"#!/bin/sh\necho hi\n" and victims["script"].stat().st_mode & 0o111
    assert not (tmp / "elsewhere" / "planted.md").exists()
    assert revisions_of(url, str(victims["secret"])) == 1  # only mallory's: no engine pushed the file's text up
    for oracle in (a, b):
        assert set(files(oracle)) == {"learnings/alice.md", "learnings/bob.md"}
        assert not (oracle.settings.root / "bin").exists()
    for oracle, report in zip((b, a), reports):
        for path in hostile:
            assert path in oracle.indexer.copy.refused, (path, report.warnings)
        assert any("left alone" in w for w in report.warnings)
    shown = read_stats(a).working_copy
    assert shown is not None and shown.left_alone >= len(hostile)
    assert all("\n" not in line for line in shown.left_alone_recent)  # names are printed escaped


def test_non_canonical_spellings_do_not_alias_a_real_note(team) -> None:
    url, a, b, tmp = team
    plant(url, "learnings//alice.md", b"# Alice\n\nplanted over alice\n")
    nfd = unicodedata.normalize("NFD", "learnings/café.md")
    (a.settings.root / "learnings/café.md").write_text("# Café\n\nthe real one\n", encoding="utf-8")
    sync(a)
    plant(url, nfd, b"# Cafe\n\nan NFD twin\n")
    for oracle in (b, a, b):
        sync(oracle)
    for oracle in (a, b):
        assert files(oracle)["learnings/alice.md"] == ALICE
        assert files(oracle)["learnings/café.md"] == "# Café\n\nthe real one\n"
        assert not any("conflict" in name for name in files(oracle))
    for oracle in (a, b):
        assert {"learnings//alice.md", nfd} <= set(oracle.indexer.copy.refused)


def test_a_pull_never_writes_through_a_symlinked_folder(team) -> None:
    url, a, b, tmp = team
    linked = tmp / "their-folder"
    linked.mkdir()
    (linked / "notes.md").write_text("# theirs\n", encoding="utf-8")
    os.symlink(linked, b.settings.root / "shared")
    (a.settings.root / "shared").mkdir()
    (a.settings.root / "shared/notes.md").write_text("# from alice\n\noverwrites theirs?\n", encoding="utf-8")
    (a.settings.root / "shared/new.md").write_text("# new\n\nlands in their folder?\n", encoding="utf-8")
    sync(a)
    report = sync(b)
    assert (linked / "notes.md").read_text(encoding="utf-8") == "# theirs\n"
    assert not (linked / "new.md").exists()
    assert {"shared/notes.md", "shared/new.md"} <= set(b.indexer.copy.refused), report.warnings
    assert files(b)["learnings/alice.md"] == ALICE  # the rest of the sync went on


def test_a_row_that_cannot_be_applied_does_not_stop_later_pulls(team) -> None:
    url, a, b, tmp = team
    plant(url, "learnings/bob.md/inside.md", b"# under a file\n")  # its folder is a file here: cannot be written
    first = b.indexer.pull()
    assert "learnings/bob.md/inside.md" in b.indexer.copy.refused, first.warnings
    (a.settings.root / "learnings/later.md").write_text("# Later\n\nwritten after the bad row\n", encoding="utf-8")
    sync(a)
    b.indexer.pull()
    assert files(b)["learnings/later.md"] == "# Later\n\nwritten after the bad row\n"
    assert (b.settings.root / "learnings/bob.md").read_text(encoding="utf-8") == BOB


def test_notes_over_the_size_limit_are_neither_pushed_nor_pulled(tmp_path: Path) -> None:
    url = _pg.new_database()
    limit = 64 * 1024
    a = copy(tmp_path, "alice", url, {"learnings/alice.md": ALICE})
    with pytest.MonkeyPatch.context() as env:  # the limit is a setting of the environment (ORACLE_MAX_FILE_BYTES)
        env.setenv("ORACLE_MAX_FILE_BYTES", str(limit))
        b = copy(tmp_path, "bob", url, {"learnings/bob.md": BOB})
    try:
        big = b"# Big\n\n" + b"lorem ipsum dolor sit amet\n" * 8000  # ~216 KB: over bob's limit, under alice's
        (b.settings.root / "learnings/big-here.md").write_bytes(big)
        report = sync(b)
        assert revisions_of(url, "learnings/big-here.md") == 0, report.warnings
        assert "learnings/big-here.md" in b.indexer.copy.refused
        (a.settings.root / "learnings/big-there.md").write_bytes(big)
        sync(a)
        assert revisions_of(url, "learnings/big-there.md") == 1
        report = sync(b)
        assert not (b.settings.root / "learnings/big-there.md").exists()
        assert any("big-there.md" in w and "limit" in w for w in report.warnings), report.warnings
        assert files(b)["learnings/alice.md"] == ALICE
    finally:
        a.close()
        b.close()

