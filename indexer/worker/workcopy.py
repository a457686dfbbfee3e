"""A folder as a working copy of the team's memory (issue 38): two-way sync between the notes on disk and the
revisions in PostgreSQL (indexer/store/pg/revisions.py), so every machine's folder converges and nothing anyone
wrote is lost.

For each path, three hashes decide (L: the file here now, B: its base, the hash it had when it last matched the
database, kept per machine in workcopy.db; H: the database's head):

  L == H                        in step (the base is recorded)
  L == B, H moved               pulled: the head is written into the folder (atomically)
  L == B, H a tombstone         deleted here (the text stays in the history)
  L changed, H == B (or none)   pushed: a new revision based on B
  L changed, H a tombstone      pushed: the edit brings the note back
  L changed, H moved elsewhere  conflict: the database keeps its head, the file here is written beside it as
                                `note (conflict from <author> <date>).md` (a new note, pushed too), and the head
                                takes the file's place: both are searchable, both in the history
  L gone, B known, H == B       a tombstone is pushed (a deletion only where the file had been synced)
  L gone, B known, H moved      pulled: an edit elsewhere wins over a deletion here
  L gone, B unknown             a note this folder never had: pulled, not deleted

A path the rules leave out here (oracle.toml's exclude, `.archive/`, an untyped folder) is neither pulled nor
pushed nor deleted: a machine's own oracle.toml can keep folders out of its copy. The database is shared, not
trusted: a path it names is checked before anything is done with it (indexer/notes/rootfiles.py: relative, NFC,
no `..`, markdown, not hidden), and every read, write and delete in the folder goes through `RootFiles`, opened
beneath the root without following a link; a row that fails, a symlink, a file over the size limit, is skipped
with a warning that names it (`refused`, counted in stats) and never stops the rest of the sync. Every decision is taken
under the writer lock (one writer across engines) and every commit checks that the head is still the one read, so a
race ends as a retry, never as an overwrite.
"""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from oracle_indexer.config import Settings
from oracle_indexer.notes.discover import Discovery, discover, note_type
from oracle_indexer.notes.rootfiles import PathRefused, RootFiles, named_problem, shown
from oracle_indexer.store.backends import open_copy_state, open_revisions
from oracle_indexer.store.errors import Conflict
from oracle_indexer.store.protocols import IndexStore
from oracle_indexer.store.rows import FileState
from oracle_indexer.store.types import Base, Commit, Head

GUARD_MIN = 3  # a copy with fewer synced files than this is not guarded against mass deletion
# Deletions this machine sends within GUARD_WINDOW seconds, by any sync (the watcher's events included), are capped
# at GUARD_BURST or half the synced notes, whichever is less: a subfolder moved away (a failed mount, a checkout)
# trickles in as file events, and each batch alone looked harmless (issue 45 item 6: 450 notes gone from every
# folder within 12 s). Beyond the cap the deletions are held, not sent: `oracle index --force` sends them.
GUARD_WINDOW = 600.0
GUARD_BURST = 50
RETRIES = 3  # a commit that lost a race is decided again this often before it waits for the next sync
PUSH_BATCH = 200  # revisions sent in one transaction (a first sync of a big folder)


def deletion_cap(synced: int) -> int:
    """How many deletions a machine may send within GUARD_WINDOW (see GUARD_BURST)."""
    return min(GUARD_BURST, max(GUARD_MIN, synced // 2))


class CopyRefused(RuntimeError):
    """More than half of the synced files are gone from the folder: a mis-mounted root must not delete the
    team's notes (`oracle index --force` if they really are gone)."""


def digest(data: bytes) -> str:
    """The hash a revision and the index both key a note's bytes by (sync.file_hash)."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class CopyReport:
    """What one reconciliation did to the folder and to the database."""

    pulled: list[str] = field(default_factory=list)  # written into the folder from the database
    pushed: list[str] = field(default_factory=list)  # new revisions from the folder
    deleted_here: list[str] = field(default_factory=list)  # removed from the folder: tombstoned elsewhere
    tombstoned: list[str] = field(default_factory=list)  # deletions pushed from here
    conflicts: list[str] = field(default_factory=list)  # conflict copies written here ("path -> copy")
    held: list[str] = field(default_factory=list)  # deletions not sent: over the guard's cap (GUARD_BURST)
    warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # paths left alone, each with why (also in warnings)
    live: set[str] = field(default_factory=set)  # paths with a live head after the run (of those looked at)

    @property
    def touched_folder(self) -> bool:
        return bool(self.pulled or self.deleted_here or self.conflicts)


def conflict_name(rel: str, author: str, day: dt.date, taken: Iterable[str] = ()) -> str:
    """`folder/note (conflict from alice 2026-12-01).md` beside `folder/note.md`; a number is added when that
    name is taken (two conflicts on one day)."""
    folder, _, name = rel.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, "md"
    who = re.sub(r"[^\w.@-]+", "-", author).strip("-") or "someone"
    taken = set(taken)
    for n in range(1, 1000):
        extra = "" if n == 1 else f" {n}"
        candidate = f"{stem} (conflict from {who} {day.isoformat()}{extra}).{suffix}"
        full = f"{folder}/{candidate}" if folder else candidate
        if full not in taken:
            return full
    raise RuntimeError(f"no free conflict name beside {rel}")


class WorkingCopy:
    """The folder of `settings.root` kept in step with the PostgreSQL store's revisions."""

    def __init__(self, settings: Settings, store: IndexStore) -> None:
        self.settings = settings
        self.root = settings.root
        self.files = RootFiles(settings.root)
        # what the last syncs left alone, path -> why (a bad row, a symlink, a file over the size limit): stats
        self.refused: dict[str, str] = {}
        self.revisions = open_revisions(store)
        self.state = open_copy_state(settings.data_dir / "workcopy.db")
        database = self.revisions.database_id()
        if self.state.get_meta("database") != database:
            self.state.reset(database)  # a new data dir, or another database: no bases, so nothing is deleted
        machine = self.state.get_meta("machine")
        if machine is None:
            machine = uuid.uuid4().hex[:12]
            self.state.set_meta("machine", machine)
        self.machine = machine
        self.author = settings.author or _login()
        self._queue: list[tuple[Commit, Base]] = []  # revisions decided, not sent yet (one reconcile's)
        # tombstones decided: path, head, base, author
        self._deletions: list[tuple[str, str | None, str, str | None]] = []
        self.held: dict[str, str] = {}  # deletions the guard holds: path -> since when (ISO); stats

    def close(self) -> None:
        self.state.close()

    @property
    def last_seq(self) -> int:
        """The highest commit this copy has looked at (a NOTIFY makes it ask for the heads above it)."""
        return int(self.state.get_meta("seq") or 0)

    def syncable(self, rel: str) -> bool:
        """Whether this machine's rules let `rel` into its folder (exclude, .archive/, typed folders)."""
        return note_type(self.root, rel, self.settings.layout) is not None

    # -- the one decision, for every path or a few --------------------------------------------------
    def reconcile(self, paths: Iterable[str] | None = None, *, author: str | None = None,
                  force: bool = False, found: Discovery | None = None) -> CopyReport:
        """Bring the folder and the database in step: every path (None: the whole folder, every head and every
        base) or just `paths` (a file event, a learn, a notification). `found`: the folder as the caller has just
        listed it (a sync lists it once). The caller holds the writer lock."""
        report = CopyReport()
        self._queue, self._deletions = [], []
        if paths is None:
            found = found or discover(self.root, self.settings.layout)
            local = {f.rel for f in found.files if not self._refuse(f.rel, named_problem(f.rel), report)}
            heads = self.revisions.heads()
            bases = self.state.bases()
            candidates = set(local) | set(bases) | set(heads)
            seen = max((h.seq for h in heads.values()), default=0)
            self._guard(bases, local, force)
        else:
            candidates = {rel for rel in paths if not self._refuse(rel, named_problem(rel), report)}
            heads = self.revisions.heads(candidates)
            bases = self.state.bases(candidates)
            local = {rel for rel in candidates if self.syncable(rel) and self._present(rel, report)}
            seen = None
        self.take_refused(report)
        changed: dict[str, Base | None] = {}
        pending: list[tuple[str, Head, bytes | None]] = []  # (rel, head to write here, conflicting bytes here)
        taken = set(candidates)
        for rel in sorted(candidates):
            if rel not in local and not self.syncable(rel):
                if heads.get(rel) and not heads[rel].deleted:
                    report.live.add(rel)
                continue
            self._decide_one(rel, rel in local, bases.get(rel), heads, author, report, changed, pending, taken)
        self._send(report, changed)
        self._send_deletions(report, changed, force, whole_folder=paths is None)
        if pending:
            contents = self.revisions.head_contents([h for _, h, _ in pending], self.settings.max_file_bytes)
            for rel, head, mine in pending:
                try:
                    self._apply(rel, head, contents.get(rel), mine, author, report, changed, taken)
                except (PathRefused, OSError) as exc:
                    self._refuse(rel, _why(rel, exc), report)
        self.state.update(changed)
        if seen is not None and seen > self.last_seq:
            self.state.set_meta("seq", str(seen))
        return report

    def _guard(self, bases: dict[str, Base], local: set[str], force: bool) -> None:
        """CopyRefused when more than half of the synced notes are gone from the folder (see CopyRefused)."""
        gone = [rel for rel in bases if rel not in local and self.syncable(rel)]
        if not force and len(bases) >= GUARD_MIN and len(gone) * 2 > len(bases):
            raise CopyRefused(
                f"refusing to delete {len(gone)} of {len(bases)} synced notes from the team's memory in one"
                f" run: is ORACLE_ROOT ({self.root}) the right folder? Run `oracle index --force` if the files"
                " really were deleted (their text stays in the history: `oracle history PATH`).")

    def _present(self, rel: str, report: CopyReport) -> bool:
        """Whether a note of its own is at `rel` (a symlink or special file there is refused, not a note)."""
        try:
            return self.files.stat(rel) is not None
        except PathRefused as exc:
            self._refuse(rel, _why(rel, exc), report)
            return False

    def _refuse(self, rel: str, message: str | None, report: CopyReport) -> bool:
        """Record that `rel` is left alone, and why (`message` names it), when there is a message; whether
        there was one."""
        if message is None:
            return False
        self.refused[rel] = message
        report.refused.append(message)
        report.warnings.append(f"left alone: {message}")
        return True

    def take_refused(self, report: CopyReport) -> None:
        """The database's rows that named no usable path, as the last read of heads found them, into `report`
        and `refused`."""
        for rel, why in sorted(self.revisions.refused.items()):
            if rel not in self.refused:
                self._refuse(rel, why, report)
        self.revisions.refused.clear()

    def _decide_one(self, rel: str, present: bool, base: Base | None, heads: dict[str, Head], author: str | None,
                    report: CopyReport, changed: dict[str, Base | None],
                    pending: list[tuple[str, Head, bytes | None]], taken: set[str]) -> None:
        """`_decide` for one path, again when a race moved its head; a path that cannot be touched (a symlink
        swapped in, a file over the limit, a full disk) is a warning, never the end of the sync."""
        for _ in range(RETRIES):
            try:
                self._decide(rel, present, base, heads.get(rel), author, report, changed, pending, taken)
                self.refused.pop(rel, None)
                if present:
                    self.held.pop(rel, None)  # back (a remount): nothing is held for it any more
                return
            except Conflict:
                heads[rel] = self.revisions.heads([rel]).get(rel)  # type: ignore[assignment]
            except (PathRefused, OSError) as exc:
                self._refuse(rel, _why(rel, exc), report)
                return
        report.warnings.append(f"{rel}: another engine kept changing it; left for the next sync")

    # Over complexity 10 on purpose: the module's table of cases as one if-chain, to be read against the table.
    def _decide(self, rel: str, present: bool, base: Base | None, head: Head | None, author: str | None,  # noqa: C901
                report: CopyReport, changed: dict[str, Base | None],
                pending: list[tuple[str, Head, bytes | None]], taken: set[str]) -> None:
        """One path's case (see the module's table); pulls are queued in `pending` to read their texts at once."""
        live = head is not None and not head.deleted
        h = head.hash if head is not None and live else None
        if not present:
            if head is not None and live:
                if base is None or h != base.hash:
                    pending.append((rel, head, None))
                    return
                self._deletions.append((rel, h, base.hash, author))  # synced here, deleted here: sent under the guard
                return
            if base is not None:
                changed[rel] = None
            return
        data, stat = self._read(rel, base)
        if data is None and stat is None:  # vanished between the listing and now: the next sync sees it
            return
        if data is None:  # the stat is the base's: the file is the base's text
            assert base is not None
            mine = base.hash
        else:
            mine = digest(data)
        if live and h == mine:
            report.live.add(rel)
            if base is None or base.hash != mine or (base.mtime_ns, base.size) != stat:
                changed[rel] = Base(mine, *stat)  # type: ignore[misc]
            return
        if base is not None and mine == base.hash:  # unchanged here since the last sync
            if head is None:
                data = data if data is not None else self._bytes(rel)
                self._push(rel, data, mine, expect=False, base=None, author=author)
            elif head.deleted:
                if self._unchanged(rel, stat):
                    self.files.unlink(rel)
                    report.deleted_here.append(rel)
                    changed[rel] = None
            else:
                pending.append((rel, head, None))
            return
        data = data if data is not None else self._bytes(rel)
        if head is None:
            self._push(rel, data, mine, expect=False, base=None, author=author)
        elif head.deleted:
            self._push(rel, data, mine, expect=None, base=base.hash if base else None, author=author)
        elif base is not None and h == base.hash:
            self._push(rel, data, mine, expect=h, base=base.hash, author=author)
        else:  # both sides changed (or both created): the database keeps its head, this text goes beside it
            pending.append((rel, head, data))

    def _apply(self, rel: str, head: Head, text: bytes | int | None, mine: bytes | None, author: str | None,
               report: CopyReport, changed: dict[str, Base | None], taken: set[str]) -> None:
        """Write a head into the folder; first, for a conflict, the file's own text as a conflict copy."""
        if text is None:
            report.warnings.append(f"{rel}: the database's revision {head.revision} has no text; not pulled")
            return
        if isinstance(text, int):
            limit = self.settings.max_file_bytes
            raise PathRefused(f"{shown(rel)} is {text:,} bytes in the team database, over this machine's {limit:,}-byte"
                              " limit (ORACLE_MAX_FILE_BYTES): not pulled (its text stays in the history)")
        if mine is not None:
            if not self._copy_aside(rel, head, mine, author, report, changed, taken):
                return  # changed again while we wrote the copy: the next sync decides with the new text
        else:
            st = self.files.stat(rel)
            if st is not None:
                base = self.state.bases([rel]).get(rel)
                if base is None or ((st.st_mtime_ns, st.st_size) != (base.mtime_ns, base.size)
                                    and digest(self._bytes(rel)) != base.hash):
                    return  # made or edited here since we looked: the next sync pushes or copies it, never overwrites
        st = self.files.write(rel, text)
        changed[rel] = Base(head.hash or digest(text), st.st_mtime_ns, st.st_size)
        report.live.add(rel)
        if mine is None:
            report.pulled.append(rel)

    def _copy_aside(self, rel: str, head: Head, mine: bytes, author: str | None, report: CopyReport,
                    changed: dict[str, Base | None], taken: set[str]) -> bool:
        """A conflict: this folder's text of `rel` written (and pushed) as a conflict copy beside it; whether the
        file still holds that text, so the head may take its place."""
        who = author or self.author
        day = dt.datetime.now(dt.timezone.utc).date()
        while True:  # a name no file here, no note of the team and no path of this run has (never overwrite)
            copy = conflict_name(rel, who, day, taken)
            taken.add(copy)
            if not self.files.exists(copy) and not self.revisions.heads([copy]):
                break
        st = self.files.write(copy, mine)
        mine_hash = digest(mine)
        try:
            self._commit(copy, mine, expect=False, base=None, author=who)
        except Conflict:
            report.warnings.append(f"{copy}: written here; pushed at the next sync")
        else:
            changed[copy] = Base(mine_hash, st.st_mtime_ns, st.st_size)
            report.live.add(copy)
        self.revisions.record_conflict(rel, copy, who, self.machine, head.hash, mine_hash)
        report.conflicts.append(f"{rel} -> {copy}")
        now = self.files.stat(rel)
        return now is None or digest(self._bytes(rel)) == mine_hash

    def _push(self, rel: str, data: bytes, mine: str, *, expect: str | None | bool, base: str | None,
              author: str | None) -> None:
        """Queue a revision from the folder (sent by `_send`, PUSH_BATCH at a time)."""
        st = self.files.stat(rel)
        if st is None:
            return  # gone since it was read: the next sync sees it
        self._queue.append((Commit(rel, data, mine, expect, base, author or self.author),
                            Base(mine, st.st_mtime_ns, st.st_size)))

    def _send(self, report: CopyReport, changed: dict[str, Base | None]) -> None:
        """The queued revisions, PUSH_BATCH to a transaction; a batch that meets a moved head is sent one by one,
        and a revision whose head moved is left for the next sync (its base unchanged, so that sync decides
        again: a push or a conflict copy, never an overwrite)."""
        queue, self._queue = self._queue, []
        for start in range(0, len(queue), PUSH_BATCH):
            batch = queue[start:start + PUSH_BATCH]
            try:
                self.revisions.commit_many([c for c, _ in batch], self.machine)
                sent = batch
            except Conflict:
                sent = []
                for item in batch:
                    try:
                        self.revisions.commit_many([item[0]], self.machine)
                        sent.append(item)
                    except Conflict:
                        report.warnings.append(f"{item[0].path}: changed elsewhere meanwhile; decided at the next sync")
            for commit, base in sent:
                changed[commit.path] = base
                report.pushed.append(commit.path)
                report.live.add(commit.path)

    def _send_deletions(self, report: CopyReport, changed: dict[str, Base | None], force: bool,
                        whole_folder: bool) -> None:
        """The tombstones this reconcile decided, unless with those this machine sent in the last GUARD_WINDOW they
        pass the cap: then none is sent, each file's base is kept (its next sync decides again), and the report
        says how to send them. A head that moved meanwhile is left for the next sync."""
        deletions, self._deletions = self._deletions, []
        if not deletions:
            return
        recent = self.revisions.deletions_since(self.machine, time.time() - GUARD_WINDOW)
        cap = deletion_cap(self.state.count())
        # a sync of the whole folder decided every deletion there is; a file event names a few of what went
        gone = len(deletions) if whole_folder else max(len(deletions), self._missing(deletions, cap))
        if not force and recent + gone > cap:
            now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
            for rel, *_ in deletions:
                self.held.setdefault(rel, now)
                report.held.append(rel)
            report.warnings.append(
                f"held {len(deletions)} deletions: with the {recent} this machine sent in the last"
                f" {GUARD_WINDOW / 60:.0f} min they pass the cap of {cap} (a folder moved away, a failed mount, a"
                f" checkout?); the notes stay in the team's memory. If they really were deleted: `oracle index"
                f" --force`; the first: {', '.join(shown(rel) for rel, *_ in deletions[:5])}")
            return
        for rel, expect, base, author in deletions:
            try:
                self._commit(rel, None, expect=expect, base=base, author=author)
            except Conflict:
                report.warnings.append(f"{rel}: changed elsewhere meanwhile; decided at the next sync")
                continue
            self.held.pop(rel, None)
            report.tombstoned.append(rel)
            changed[rel] = None

    def _missing(self, deletions: list[tuple[str, str | None, str, str | None]], cap: int) -> int:
        """How many synced notes are gone from the folders of `deletions` (and below), counted up to just past
        `cap`: a file event names a few of a moved subfolder's notes, the folder tells how many went with them. A stat
        per synced note of those folders only, not of the whole copy."""
        folders = {rel.rpartition("/")[0] for rel, *_ in deletions}
        prefixes = tuple(f + "/" for f in folders if f)
        missing = 0
        for rel in self.state.bases():
            if ("" not in folders and not rel.startswith(prefixes)) or self.files.exists(rel):
                continue
            missing += 1
            if missing > cap:
                break
        return missing

    def _commit(self, rel: str, data: bytes | None, *, expect: str | None | bool, base: str | None,
                author: str | None, digest_: str | None = None) -> Head:
        return self.revisions.commit(rel, data, digest_ or (digest(data) if data is not None else None),
                                     expect=expect, base=base, author=author or self.author, machine=self.machine)

    def _bytes(self, rel: str) -> bytes:
        """The note's bytes, read beneath the root, no more than the size limit (PathRefused beyond it)."""
        return self.files.read(rel, self.settings.max_file_bytes)

    def _read(self, rel: str, base: Base | None) -> tuple[bytes | None, tuple[int, int] | None]:
        """(bytes, stat) of the file; bytes None when its stat is still the base's (nothing to read);
        (None, None) when it is gone."""
        try:
            st = self.files.stat(rel)
            if st is None:
                return None, None
            stat = (st.st_mtime_ns, st.st_size)
            if base is not None and stat == (base.mtime_ns, base.size):
                return None, stat
            return self._bytes(rel), stat
        except (FileNotFoundError, NotADirectoryError):
            return None, None

    def _unchanged(self, rel: str, stat: tuple[int, int] | None) -> bool:
        st = self.files.stat(rel)
        return st is not None and (st.st_mtime_ns, st.st_size) == stat

    # -- what the index and the services ask -------------------------------------------------------
    def index_states(self, known: dict[str, FileState], only: Iterable[str] | None = None) -> dict[str, FileState]:
        """The index's file states as this machine sees them: a note whose indexed hash is this copy's base keeps
        the base's stat (the file's stat here), so an unchanged file costs a stat; any other is read again. (The
        shared index's own mtime is whichever machine wrote last.)"""
        wanted = list(known) if only is None else [rel for rel in set(only) if rel in known]
        bases = self.state.bases(None if only is None else wanted)
        out = dict(known)
        for rel in wanted:
            state = known[rel]
            base = bases.get(rel)
            if base is not None and base.hash == state.file_hash:
                out[rel] = FileState(base.mtime_ns, base.size, state.file_hash)
            else:
                out[rel] = FileState(0, 0, state.file_hash)
        return out

    def release_held(self) -> list[str]:
        """Notes gone from this folder whose deletion was never sent (the guard held it: the head is still the
        file's base): their bases are forgotten, so the next reconcile pulls them back ("a note this folder never
        had"). The paths released."""
        bases = self.state.bases()
        gone = [rel for rel in bases if not self.files.exists(rel)]
        heads = self.revisions.heads(gone)
        released = [rel for rel in gone
                    if rel in heads and not heads[rel].deleted and heads[rel].hash == bases[rel].hash]
        self.state.update({rel: None for rel in released})
        for rel in released:
            self.held.pop(rel, None)
        return released

    def restore(self, rel: str, revision: int, author: str | None) -> Head:
        """Revision `revision` of `rel` as a new revision (the head moves; nothing is overwritten: the head it
        replaces stays in the history). The caller then reconciles `rel` to bring it into the folder."""
        text = self.revisions.revision_content(rel, revision)
        if text is None:
            raise LookupError(f"{rel} has no revision {revision} with text (see `oracle history {rel}`)")
        head = self.revisions.heads([rel]).get(rel)
        expect: str | None | bool = False if head is None else (None if head.deleted else head.hash)
        return self._commit(rel, text, expect=expect, base=head.hash if head else None, author=author)


def _why(rel: str, exc: BaseException) -> str:
    """A refusal's or an OS error's reason, naming the path, as a warning shows it."""
    if isinstance(exc, PathRefused):
        return str(exc)
    return f"{shown(rel)} could not be read or written here: {getattr(exc, 'strerror', None) or exc}"


def _login() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container without a passwd entry)
        return "someone"
