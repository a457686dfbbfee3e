"""The team's memory on PostgreSQL: every note's revisions and its current head (schema version 3).

A folder is a working copy of what these tables hold (indexer/worker/workcopy.py decides what to push, pull,
delete or copy aside; this module only reads and writes the rows). A revision is the note's exact bytes, the
sha-256 of them (the same hash the index keeps as `files.file_hash`) and the hash it was based on; a tombstone
is a revision without content. `note_revisions` is append-only (a trigger refuses updates): nothing anyone
wrote leaves the history. Every commit notifies `CHANNEL` with its sequence number and the machine that wrote
it, so running engines pull at once instead of at their next sweep.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence

from oracle_indexer.notes.rootfiles import check_path, path_problem, shown
from oracle_indexer.store.errors import Conflict
from oracle_indexer.store.pg.db import Database
from oracle_indexer.store.types import Commit, Head, Revision

CHANNEL = "oracle_notes"  # LISTEN/NOTIFY channel of note commits; payload "<seq> <machine>"
COPY_ID = "workcopy_id"  # meta key: this database's identity, so a working copy notices a different database


_HEAD = "SELECT path, revision, seq, hash, deleted, author, at FROM note_heads"


class Revisions:
    """The revision tables of one PostgreSQL store (shares the store's pool)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # Rows whose path no machine may act on (an absolute path, `..`, `a//b`, NFD, not markdown: written by
        # hand or by a compromised machine), as the last read found them: path -> why. Never returned as heads.
        self.refused: dict[str, str] = {}
        self.read_seq = 0  # the highest sequence number a read of heads saw, refused rows included

    def database_id(self) -> str:
        """This database's identity (made once, kept in meta): a working copy's bases only mean something for
        the database they were synced with."""
        rows = self.db.run("SELECT value FROM meta WHERE key = %s", [COPY_ID])
        if rows:
            return rows[0][0]
        self.db.run("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                    [COPY_ID, uuid.uuid4().hex])
        return self.db.run("SELECT value FROM meta WHERE key = %s", [COPY_ID])[0][0]

    def heads(self, paths: Iterable[str] | None = None, since: int | None = None) -> dict[str, Head]:
        """Current heads: all, those of `paths`, or those committed after sequence number `since`."""
        if paths is not None:
            wanted = sorted(set(paths))
            if not wanted:
                return {}
            rows = self.db.run(_HEAD + " WHERE path = ANY(%s)", [wanted])
        elif since is not None:
            rows = self.db.run(_HEAD + " WHERE seq > %s", [since])
        else:
            rows = self.db.run(_HEAD)
        heads: dict[str, Head] = {}
        for row in rows:
            self.read_seq = max(self.read_seq, int(row[2]))
            problem = path_problem(row[0])
            if problem:
                self.refused[row[0]] = f"the team database names a note {shown(row[0])} that {problem}: skipped"
            else:
                heads[row[0]] = Head(*row)
        return heads

    def last_seq(self) -> int:
        return int(self.db.run("SELECT coalesce(max(seq), 0) FROM note_heads")[0][0])

    def head_contents(self, heads: Sequence[Head], max_bytes: int | None = None) -> dict[str, bytes | int]:
        """The bytes of each (live) head, read in one statement; for a head larger than `max_bytes`, its size
        instead (the text is not sent over the wire: a 30 MB note no machine would index stays in the history)."""
        live = [h for h in heads if not h.deleted]
        if not live:
            return {}
        limit = max_bytes if max_bytes is not None else 2**62
        rows = self.db.run(
            "SELECT r.path, octet_length(r.content), CASE WHEN octet_length(r.content) <= %s THEN r.content END"
            " FROM note_revisions r JOIN unnest(%s::text[], %s::integer[]) AS w(path, revision)"
            " ON r.path = w.path AND r.revision = w.revision",
            [limit, [h.path for h in live], [h.revision for h in live]])
        return {path: (bytes(content) if content is not None else int(size))
                for path, size, content in rows if size is not None}

    def commit(self, path: str, content: bytes | None, digest: str | None, *, expect: str | None | bool,
               base: str | None, author: str | None, machine: str) -> Head:
        """A new revision of `path` (content None: a tombstone), if the head is still what the caller read:
        `expect` is the head's hash then (None for a tombstone), or False for "no head at all". Raises Conflict
        otherwise. One transaction: the revision, the head and the notification commit together."""
        return self.commit_many([Commit(path, content, digest, expect, base, author)], machine)[0]

    def commit_many(self, commits: Sequence["Commit"], machine: str) -> list[Head]:
        """Several commits in one transaction and one notification (a first sync sends a folder up in batches:
        one transaction a note cost ~5 ms each). All or none: a Conflict on any rolls every one back."""
        if not commits:
            return []
        for c in commits:  # checked again where it leaves: no machine commits a name another could not use
            check_path(c.path)
        at = time.time()
        heads: list[Head] = []
        with self.db.transaction() as conn:
            for c in commits:
                row = conn.execute("SELECT revision, hash, deleted FROM note_heads WHERE path = %s FOR UPDATE",
                                   [c.path]).fetchone()
                if row is None:
                    if c.expect is not False:
                        raise Conflict(c.path)
                    # a new path: one writer (two engines creating it at once: the second waits, then conflicts)
                    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", [c.path])
                    if conn.execute("SELECT 1 FROM note_heads WHERE path = %s", [c.path]).fetchone():
                        raise Conflict(c.path)
                    revision = 1
                else:
                    now = None if row[2] else row[1]
                    if c.expect is False or now != c.expect:
                        raise Conflict(c.path)
                    revision = row[0] + 1
                inserted = conn.execute(
                    "INSERT INTO note_revisions (path, revision, hash, base, content, deleted, author, machine, at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
                    [c.path, revision, c.digest, c.base, c.content, c.content is None, c.author, machine, at],
                ).fetchone()
                assert inserted is not None  # RETURNING of one inserted row
                seq = int(inserted[0])
                conn.execute(
                    "INSERT INTO note_heads (path, revision, seq, hash, deleted, author, at)"
                    " VALUES (%s,%s,%s,%s,%s,%s,%s)"
                    " ON CONFLICT (path) DO UPDATE SET revision = excluded.revision, seq = excluded.seq,"
                    " hash = excluded.hash, deleted = excluded.deleted, author = excluded.author, at = excluded.at",
                    [c.path, revision, seq, c.digest, c.content is None, c.author, at])
                heads.append(Head(c.path, revision, seq, c.digest, c.content is None, c.author, at))
            conn.execute("SELECT pg_notify(%s, %s)", [CHANNEL, f"{heads[-1].seq} {machine}"])
        return heads

    def deletions_since(self, machine: str, since: float) -> int:
        """Tombstones `machine` committed after `since` (epoch seconds): the deletion guard's window, whichever
        process of that machine sent them."""
        return int(self.db.run("SELECT count(*) FROM note_revisions WHERE machine = %s AND deleted AND at > %s",
                               [machine, since])[0][0])

    def deleted_since(self, since: float) -> list[Head]:
        """Notes whose head is a tombstone committed after `since`: what a bulk restore brings back."""
        rows = self.db.run(_HEAD + " WHERE deleted AND at > %s ORDER BY path", [since])
        return [Head(*r) for r in rows if path_problem(r[0]) is None]

    def history(self, path: str) -> list[Revision]:
        """Every revision of `path`, oldest first."""
        rows = self.db.run(
            "SELECT path, revision, seq, hash, base, deleted, author, machine, at, octet_length(content)"
            " FROM note_revisions WHERE path = %s ORDER BY revision", [path])
        return [Revision(*r) for r in rows]

    def revision_content(self, path: str, revision: int) -> bytes | None:
        """The bytes of one revision (None for a tombstone or a revision that does not exist)."""
        rows = self.db.run("SELECT content FROM note_revisions WHERE path = %s AND revision = %s", [path, revision])
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else None

    def record_conflict(self, path: str, copy: str, author: str | None, machine: str, kept: str | None,
                        copied: str) -> None:
        self.db.run("INSERT INTO note_conflicts (at, path, copy, author, machine, kept_hash, copy_hash)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s)", [time.time(), path, copy, author, machine, kept, copied])

    def conflicts(self, limit: int = 10) -> tuple[int, list[dict]]:
        """How many conflict copies syncs wrote, and the latest `limit` (path, copy, author, at)."""
        total = int(self.db.run("SELECT count(*) FROM note_conflicts")[0][0])
        rows = self.db.run("SELECT path, copy, author, at FROM note_conflicts ORDER BY id DESC LIMIT %s", [limit])
        return total, [{"path": p, "copy": c, "author": a, "at": at} for p, c, a, at in rows]

    def counts(self) -> dict[str, int]:
        """Notes live and tombstoned, and revisions kept (for stats)."""
        live, dead = self.db.run("SELECT count(*) FILTER (WHERE NOT deleted), count(*) FILTER (WHERE deleted)"
                                 " FROM note_heads")[0]
        revisions = self.db.run("SELECT count(*) FROM note_revisions")[0][0]
        return {"notes": int(live), "tombstones": int(dead), "revisions": int(revisions)}
