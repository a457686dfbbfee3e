"""Incremental sync: bring the index in step with the files on disk.

New and changed files are re-parsed and re-indexed, vanished files are removed, unchanged files cost a
stat (and a hash when only the mtime moved). Embeddings are looked up in the cache by the exact text
embedded, so an unchanged chunk is never embedded twice, even after `--full`. The keyword index never
waits for the vector side: if the model or ChromaDB fails, chunks stay marked as not yet in the vector
store and the next run retries them.
"""

from __future__ import annotations

import codecs
import dataclasses
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from oracle_indexer.config import ConfigReload, Settings, reload_settings
from oracle_indexer.models.embed import MODEL_ID as MINILM_ID
from oracle_indexer.models.embed import Embedder, EmbeddingUnavailable
from oracle_indexer.models.multilingual import SLICE as ML_SLICE
from oracle_indexer.notes.discover import (
    Discovery,
    Found,
    Unreadable,
    discover,
    note_type,
    on_disk,
    read_inside,
    too_large,
    unindexable,
)
from oracle_indexer.notes.parse import PARSER_VERSION, ParsedFile, compose_embed_text, parse_markdown
from oracle_indexer.store.backends import open_exact, open_multilingual, open_store, open_vectors, writer_lock
from oracle_indexer.store.errors import StoreError, VectorStoreUnavailable
from oracle_indexer.store.protocols import IndexStore, VectorIndex
from oracle_indexer.store.rows import FileState, parser_version
from oracle_indexer.worker.workcopy import CopyRefused, CopyReport, WorkingCopy

FILE_BATCH = 64  # files parsed and embedded together: fewer, fuller model batches
# Chunks embedded and upserted per step, each step under the writer lock on its own: a learn or a saved
# note waits for at most one step (about a second on two cores), never for a whole big note.
VECTOR_SLICE = 96
SLICE_PAUSE = 0.01  # seconds between steps, so a thread or process waiting for the lock gets it
EMBED_STEP = 32  # texts embedded and cached at a time inside a slice: what a stopped process keeps
INLINE_EMBED_CHUNKS = 256  # sync_paths embeds files up to this many pending chunks at once; bigger ones queue
DELETE_GUARD_MIN = 3  # an index smaller than this many files is not guarded


class SyncRefused(RuntimeError):
    """The run would remove more than half of the index; a mis-mounted root must not wipe it."""

    error_kind = "invalid"  # what it means to a caller (server/services/vocabulary/errors.py: classify)


@dataclass
class SyncReport:
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    unmapped: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # symlink -> the note indexed under its real name
    excluded: dict[str, int] = field(default_factory=dict)  # rule -> markdown files it left out
    chunks_written: int = 0
    embedded: int = 0
    embeddings_cached: int = 0
    multilingual_embedded: int = 0
    keyword_seconds: float = 0.0
    vector_seconds: float = 0.0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    vector_failed: bool = False
    # the working copy (team store, indexer/worker/workcopy.py): notes written into the folder from the database,
    # sent to it, deleted here because deleted elsewhere, deletions sent, and conflict copies ("note -> copy")
    pulled: int = 0
    pushed: int = 0
    deleted_here: int = 0
    tombstoned: int = 0
    conflicts: list[str] = field(default_factory=list)

    def summary(self) -> str:
        line = (
            f"files: {self.added} added, {self.changed} changed, {self.removed} removed, {self.unchanged} unchanged;"
            f" {len(self.skipped)} skipped; chunks written: {self.chunks_written};"
            f" embeddings: {self.embedded} computed, {self.embeddings_cached} cached;"
            f" {self.seconds:.2f}s (keyword {self.keyword_seconds:.2f}s, vector {self.vector_seconds:.2f}s)"
        )
        if self.multilingual_embedded:
            line += f"; multilingual vectors: {self.multilingual_embedded} computed"
        if self.pulled or self.pushed or self.deleted_here or self.tombstoned or self.conflicts:
            line += (f"; working copy: {self.pulled} pulled, {self.pushed} pushed, {self.deleted_here} deleted here,"
                     f" {self.tombstoned} deletions sent, {len(self.conflicts)} conflicts")
            line += "".join(f"\n  conflict: {c}" for c in self.conflicts)
        return line

    def take_copy(self, copy: CopyReport) -> None:
        """Count what the working copy's reconciliation did."""
        self.pulled += len(copy.pulled)
        self.pushed += len(copy.pushed)
        self.deleted_here += len(copy.deleted_here)
        self.tombstoned += len(copy.tombstoned)
        self.conflicts += copy.conflicts
        self.warnings += copy.warnings

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def file_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _looks_utf16(data: bytes) -> bool:
    """UTF-16 without a byte-order mark: mostly-ASCII text has a NUL in every other byte (one parity only)."""
    head = data[:4096]
    if len(head) < 4 or b"\x00" not in head:
        return False
    even, odd = head[0::2].count(0), head[1::2].count(0)
    return max(even, odd) >= len(head) // 4 and min(even, odd) == 0


def decode_markdown(data: bytes, max_bytes: int) -> tuple[str | None, str | None]:
    """(text, None) for an indexable file, (None, reason) for one to skip: empty, huge, binary."""
    if not data.strip():
        return None, "empty file"
    if len(data) > max_bytes:
        return None, too_large(len(data), max_bytes)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or _looks_utf16(data):
        return None, "UTF-16 text: save it as UTF-8"
    if b"\x00" in data:  # anywhere, not only near the start: NUL bytes have no place in an index
        return None, "binary file (NUL bytes)"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    return text.replace("\r\n", "\n").replace("\r", "\n"), None


class Indexer:
    """Owns the store, vector store and embedder for one knowledge root."""

    def __init__(
        self,
        settings: Settings,
        store: IndexStore | None = None,
        vectors: VectorIndex | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self.store = store or open_store(settings)
        self.vectors = vectors or open_vectors(settings)
        self.embedder = embedder or Embedder(settings.embedding)
        # A main model that reads every script needs no second one for Thai or CJK queries: `auto` is off then.
        multilingual = ("off" if settings.multilingual == "auto" and self.embedder.multilingual
                        else settings.multilingual)
        # the vector leg of a small SQLite base (indexer/store/sqlite/exact.py)
        self.exact = open_exact(settings, self.store)
        self.multilingual = open_multilingual(settings, self.store, multilingual, self.exact)
        self.model_change: str | None = None  # "old -> new" once adopt_model re-keyed the index in this process
        try:
            self.store.model_id = self.embedder.model_id
        except EmbeddingUnavailable:  # a model folder that is not there: keys stay those of the index's model
            self.store.model_id = self.store.get_meta("embedding_model") or MINILM_ID
        self.lock = writer_lock(settings, self.store)
        # With the team store, the folder is a working copy of the database's notes, synced both ways
        # (indexer/worker/workcopy.py); with SQLite the folder is the only truth and there is nothing to sync.
        self.copy: WorkingCopy | None = (
            WorkingCopy(settings, self.store) if self.store.team else None)
        self.last_repair: SyncReport | None = None  # what the last repair_vectors() did

    def reload_config(self) -> ConfigReload:
        """oracle.toml changed while this process runs (the watcher saw it): take up what can change under a
        running server (which files are notes, their types, freshness, the frontmatter schema, sampling) and name
        what waits for a restart (indexer/config.py `reload_settings`). The caller syncs afterwards, so a folder
        now excluded leaves the index and one now typed enters it."""
        fresh, outcome = reload_settings(self.settings)
        self.settings = fresh
        if self.copy is not None:
            self.copy.settings = fresh
        return outcome

    # -- writes hold the cross-process writer lock: keyword phases whole, vector work one slice at a time
    def _locked(self, work: Callable[[], SyncReport]) -> SyncReport:
        """Run a write under the writer lock, with crash recovery for the vector store.

        SQLite rolls back an interrupted file on its own. The vector store is written outside SQLite's
        transactions, so a write in progress is flagged; if a process died with the flag set (kill -9),
        the next writer compares both stores and repairs the difference before doing its own work.
        """
        with self.lock:
            self.adopt_model()
            if self.store.get_meta("vectors_dirty") == "1":
                self.reconcile_vectors()
            self.store.set_meta("vectors_dirty", "1")
            report = work()
            self.store.set_meta("vectors_dirty", "1" if report.vector_failed else "0")
            return report

    def adopt_model(self) -> bool:
        """Make the index the embedder's: when it was built with another model (the id recorded in the store's
        meta; an index without one was built with MiniLM), give every section the new model's embed key, empty
        the vector store and leave every section pending, so the vector backlog re-embeds them (from the
        embedding cache where this model embedded the same text before). The keyword index is untouched and
        answers throughout; searches leave the vector leg out until the store records the new model (see
        server/services/capabilities/search/pipeline.py). Called under the writer lock by every write. True when it
        re-keyed."""
        try:
            current = self.embedder.model_id
        except EmbeddingUnavailable:
            return False  # a model folder gone missing: keep the index as it is, vectors and all
        stored = self.store.get_meta("embedding_model")
        if stored == current:
            self.store.model_id = current
            return False
        if stored is None:
            if not self.store.chunk_count():  # a new index
                self.store.set_meta("embedding_model", current)
                self.store.model_id = current
                return False
            stored = MINILM_ID  # indexes from before the model was configurable
            if stored == current:
                self.store.set_meta("embedding_model", current)
                self.store.model_id = current
                return False
        try:
            self.vectors.reset()
        except VectorStoreUnavailable:  # nothing changed (keys stay the old model's); the next write tries again
            self.store.model_id = stored
            return False
        sections = self.store.rekey(current)
        self.store.model_id = current
        self.model_change = f"{stored} -> {current} ({sections} sections to embed again)"
        return True

    def reconcile_vectors(self) -> tuple[int, int]:
        """Delete vectors whose chunk is gone and re-queue chunks whose vector is missing: (deleted, requeued)."""
        try:
            return self._reconcile()
        except VectorStoreUnavailable:
            return 0, 0

    def _vector_diff(self) -> tuple[list[str], list[str]]:
        """(orphans: vectors whose chunk is gone, missing: chunks marked embedded whose vector is not there)."""
        in_store = self.vectors.all_ids()
        flags = self.store.in_vector_flags()
        orphans = sorted(in_store - flags.keys())
        missing = sorted(i for i, flag in flags.items() if flag and i not in in_store)
        return orphans, missing

    def _reconcile(self) -> tuple[int, int]:
        orphans, missing = self._vector_diff()
        self.vectors.delete(orphans)
        self.store.mark_in_vector(missing, 0)
        return len(orphans), len(missing)

    def index_replaced(self) -> None:
        """The store moved a damaged index aside and opened a new file (Store.verify): the exact and multilingual
        readers keep connections of their own, still on the old file; they let go now and open the new one on next
        use (a stats call right after the check met "database disk image is malformed" through them)."""
        if self.exact is not None:
            self.exact.close()
        self.multilingual.close()

    def repair_vectors(self) -> bool:
        """Put back what the vector store lost, once it answers again after an outage or a failed write
        (the maintenance worker calls this inside `vectors.repairing()`): requeue what it lost (a server
        restarted without its data loses everything), serve searches again, then embed (mostly from the
        cache) and upsert every pending chunk, including those learnt meanwhile. True when nothing is left
        pending. Never called from a read: stats and searches only report the store's health."""
        if not self._vector_diff()[1]:
            self.vectors.resume()  # nothing lost: searches need not wait for the writer lock

        def work() -> SyncReport:
            report = SyncReport()
            started = time.perf_counter()
            try:
                self._reconcile()
            except VectorStoreUnavailable as exc:
                report.vector_failed = True
                report.warnings.append(str(exc))
                return report
            self.vectors.resume()  # missing chunks are pending now, and searches say so
            self._flush_pending_vectors(report)
            report.seconds = time.perf_counter() - started
            return report

        self.last_repair = report = self._locked(work)
        return not report.vector_failed

    SELF_CHECK_SAMPLES = 3

    def check_vectors(self) -> str | None:
        """Why the vector store is broken although it answers, or None: a few stored vectors (oldest to
        newest, from the embedding cache) must each find themselves. Raises VectorStoreUnavailable when the
        store does not answer at all. A read: it repairs nothing (`rebuild_vectors` does)."""
        sample = self.store.embedded_sample(self.SELF_CHECK_SAMPLES)
        cached = self.store.cached_vectors([key for _, key in sample])
        return self.vectors.self_check([(cid, cached[key]) for cid, key in sample if key in cached])

    def rebuild_vectors(self, reason: str) -> SyncReport:
        """Move a broken embedded vector store aside and build a fresh one from the embedding cache (no model
        call for what was embedded before), as a damaged SQLite index is. For the maintenance worker; a
        Chroma server's files are not ours, so there only the lost vectors are requeued (`repair_vectors`)."""
        def work() -> SyncReport:
            report = SyncReport()
            started = time.perf_counter()
            moved = self.vectors.move_aside()
            if moved is not None:
                report.warnings.append(f"vector store moved aside to {moved.name} and rebuilt: {reason}")
                self.store.mark_all_out_of_vector()
            self.vectors.resume()
            self._flush_pending_vectors(report)
            report.seconds = time.perf_counter() - started
            return report

        self.last_repair = report = self._locked(work)
        return report

    # -- whole-root sync --------------------------------------------------------------------------
    def sync(
        self,
        full: bool = False,
        force: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        keyword_ready: Callable[[], None] | None = None,
        vectors: bool = True,
        stop_vectors: Callable[[], bool] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> SyncReport:
        """Keyword index first for every file, then the vectors: keyword search is complete early,
        and `keyword_ready` fires at that point (the server lets requests in then). The keyword phase holds
        the writer lock throughout; the vectors follow in slices, each under the lock on its own, small
        files first, until `stop_vectors()` says other work waits. With vectors=False the vector work is
        left for `flush_vectors()` (the server runs it once start-up is over). `cancel()` (the process is
        shutting down) abandons the keyword phase between batches of files: each file is its own
        transaction, so the next run simply goes on from there."""
        started = time.perf_counter()
        report = self._locked(lambda: self._sync_keyword(full, force, progress, keyword_ready, cancel))
        if vectors:
            self._flush_both(report, progress, stop=stop_vectors, prune=True)
        self._mark_indexed(report)
        for rel, reason in self.store.skipped().items():
            report.skipped.setdefault(rel, reason)
        report.skipped = dict(sorted(report.skipped.items()))
        report.seconds = time.perf_counter() - started
        return report

    def _sync_keyword(
        self,
        full: bool,
        force: bool,
        progress: Callable[[str, int, int], None] | None,
        keyword_ready: Callable[[], None] | None,
        cancel: Callable[[], bool] | None = None,
    ) -> SyncReport:
        """The keyword half of `sync`, under the writer lock: every file on disk and in the index agree. In
        phases, one method each so that each can be read (and its order seen) on its own: list the folder (after
        the working copy), find what is gone, reset or recover the vectors, classify, remove, index in batches."""
        started = time.perf_counter()
        report = SyncReport()
        root = self.settings.root
        if not root.is_dir():
            raise FileNotFoundError(f"knowledge root {root} does not exist or is not a folder (set ORACLE_ROOT)")
        found, live = self._listed(root, force, report)
        self._check_frontmatter_schema()
        self._take_up_parser(whole_folder=True)
        known, vanished = self._known_and_vanished(root, found, live, force)
        if full:
            known = {}
        self._prepare_vectors(full, report)
        to_index = self._classified(found, known, report, progress)
        stale_vectors = self._removed(found, vanished, report)
        if not self._indexed_in_batches(to_index, known, report, progress, cancel, stale_vectors):
            return report
        if keyword_ready:
            keyword_ready()

        self._delete_vectors(stale_vectors, report)
        report.seconds = time.perf_counter() - started
        return report

    def _listed(self, root: Path, force: bool, report: SyncReport) -> tuple[Discovery, set[str] | None]:
        """The folder's files, and with a working copy the paths with a live head in the team store (None
        without one). The folder and the database are brought in step first, so that the index follows both;
        when that wrote or deleted files here the folder is listed again."""
        live: set[str] | None = None
        found = discover(root, self.settings.layout)
        if self.copy is not None:  # the folder and the database in step first; then the index follows both
            try:
                copied = self.copy.reconcile(force=force, found=found)
            except CopyRefused as exc:
                raise SyncRefused(str(exc)) from None
            report.take_copy(copied)
            live = copied.live
            if copied.touched_folder:  # files written or deleted here: list the folder again
                found = discover(root, self.settings.layout)
        report.unmapped = dict(sorted(found.unmapped.items()))
        report.aliases, report.excluded = found.aliases, dict(sorted(found.excluded.items()))
        report.warnings.extend(found.warnings)
        return found, live

    def _check_frontmatter_schema(self) -> None:
        """[frontmatter] in oracle.toml changed: every note is checked again (re-parsed; vectors stay), since
        the file states recorded say nothing of the rules the notes were checked against."""
        schema = self.settings.layout.frontmatter.digest
        if (self.store.get_meta("frontmatter_schema") or "") != schema:
            self.store.forget_file_states()
            self.store.set_meta("frontmatter_schema", schema)

    def _known_and_vanished(self, root: Path, found: Discovery, live: set[str] | None,
                            force: bool) -> tuple[dict[str, FileState], list[str]]:
        """The index's file states and the indexed paths that left the folder; refuses (SyncRefused) to remove
        most of the index in one run, which is what a mistyped or unmounted root looks like."""
        known = self.store.file_states()
        present = {f.rel for f in found.files}
        vanished = sorted(set(known) - present)
        if live is not None:
            # The shared index holds every machine's notes: only a note without a live head leaves it (a note
            # this machine's rules keep out of its folder stays for the others).
            assert self.copy is not None
            known = self.copy.index_states(known)
            vanished = [rel for rel in vanished if rel not in live]
        # The guard is for files that are gone (a mistyped or unmounted root); a file still on disk that the
        # rules now leave out (an exclude added to oracle.toml, a folder no longer typed) is removed as asked.
        gone = [rel for rel in vanished if not on_disk(root, rel).exists()]
        if (
            not force
            and live is None  # a working copy guards its deletions itself (they would be the team's)
            and len(known) >= DELETE_GUARD_MIN
            and len(gone) * 2 > len(known)
        ):
            raise SyncRefused(
                f"refusing to remove {len(gone)} of {len(known)} indexed files in one run: is ORACLE_ROOT"
                f" ({root}) the right folder? Run `oracle index --force` if the files really are gone."
            )
        return known, vanished

    def _prepare_vectors(self, full: bool, report: SyncReport) -> None:
        """A full run empties the index and the vector store; otherwise vectors the store lost while it was
        closed are queued again, so that the vector leg is whole once the flush has run."""
        if full:
            self.store.clear()
            try:
                self.vectors.reset()
            except VectorStoreUnavailable as exc:
                report.warnings.append(str(exc))

        elif (lost := self.vectors.lost_while_closed()) == "all":
            self.store.mark_all_out_of_vector()  # re-added from the embedding cache, not embedded again
        elif lost == "some":
            self._requeue_lost_vectors()

    def _classified(self, found: Discovery, known: dict[str, FileState], report: SyncReport,
                    progress: Callable[[str, int, int], None] | None) -> list[tuple[Found, FileState, str]]:
        """The files to index and what with (`_classify`), reporting progress per batch of files: a stat each,
        a hash when the mtime moved."""
        to_index: list[tuple[Found, FileState, str]] = []
        for n, item in enumerate(found.files, 1):
            outcome = self._classify(item, known.get(item.rel), report)
            if outcome is not None:
                to_index.append(outcome)
            if progress and (n % FILE_BATCH == 0 or n == len(found.files)):
                progress("files", n, len(found.files))  # a stat each, a hash when the mtime moved
        return to_index

    def _removed(self, found: Discovery, vanished: list[str], report: SyncReport) -> list[str]:
        """Vanished files out of the index and skipped ones recorded (symlinks out of the root, FIFOs: kept for
        stats); returns the ids whose vectors are to be deleted once the keyword phase is over."""
        stale_vectors: list[str] = []
        for rel in vanished:
            stale_vectors += self.store.remove_file(rel)
            report.removed += 1
        for rel, reason in found.skipped.items():  # symlinks out of the root, FIFOs: kept for stats
            stale_vectors += self.store.record_skip(rel, reason)
            report.skipped[rel] = reason
        self.store.forget_skips({f.rel for f in found.files} | found.skipped.keys())
        return stale_vectors

    def _indexed_in_batches(self, to_index: list[tuple[Found, FileState, str]], known: dict[str, FileState],
                            report: SyncReport, progress: Callable[[str, int, int], None] | None,
                            cancel: Callable[[], bool] | None, stale_vectors: list[str]) -> bool:
        """Index the files FILE_BATCH at a time, adding the ids whose vectors go to `stale_vectors`. False when
        `cancel` stopped it between batches (the stale vectors deleted and the stop reported then): each file
        is its own transaction, so the next run goes on from there."""
        for start in range(0, len(to_index), FILE_BATCH):
            if cancel and cancel():
                self._delete_vectors(stale_vectors, report)
                report.warnings.append(f"stopped after {start} of {len(to_index)} files (shutting down)")
                return False
            batch = to_index[start : start + FILE_BATCH]
            stale_vectors += self._index_batch(batch, known, report)
            if progress:
                progress("keyword", min(start + FILE_BATCH, len(to_index)), len(to_index))
        return True

    def sync_paths(self, rels: list[str], embed_limit: int | None = INLINE_EMBED_CHUNKS,
                   author: str | None = None, vectors: bool = True) -> SyncReport:
        """Re-index just these files (the learn tool, the watcher): present -> indexed, gone -> removed.

        Files are checked by hash like a full run, so a path named twice or unchanged costs nothing.
        The keyword index is updated for every file first; then the vectors of those files with at most
        `embed_limit` pending chunks (None: all), smallest first. A bigger file's chunks stay pending for
        `flush_vectors()` (the watcher runs it between batches), so a note saved beside a 20,000-bullet
        principle is searchable in both legs at once instead of minutes later.

        With the team store these paths are first reconciled with the database (pushed, pulled, tombstoned or
        copied aside: indexer/worker/workcopy.py); `author` is who their new revisions are from (a named token).
        `vectors=False`: the keyword index only (the working copy's own index following the database's,
        indexer/serving/team.py: its vectors are the database's).
        """
        started = time.perf_counter()
        touched = set(rels)
        report = self._locked(lambda: self._sync_paths_keyword(rels, author, touched))
        if vectors:
            self._flush_pending_vectors(report, files=touched, max_file_chunks=embed_limit)
            self._flush_multilingual(report, files=touched)
        if report.added or report.changed or report.removed:
            self._mark_indexed(report)
        self._refresh_exact(report)
        report.seconds = time.perf_counter() - started
        return report

    def _refresh_exact(self, report: SyncReport) -> None:
        """After a write that changed sections or their vectors, bring the exact vector leg's matrix (when this
        process has one: it searches) up to date here, on the writer's thread, rather than in the next search: the
        rebuild (reading the section list, copying the vectors) cost that search 20-50 ms on nat-brain
        (indexer/store/sqlite/exact.py). A failure here is the next search's to meet, as before."""
        if self.exact is None or not (report.added or report.changed or report.removed or report.embedded
                                      or report.embeddings_cached):
            return
        try:
            self.exact.refresh()
        except StoreError:
            pass

    def pull(self) -> SyncReport:
        """Another engine committed (a NOTIFY, indexer/store/pg/listen.py): bring the heads committed since this
        copy last looked into the folder, and the index in step for them. Nothing to do without the team store."""
        if self.copy is None:
            return SyncReport()
        since = self.copy.last_seq
        heads = self.copy.revisions.heads(since=since)
        if heads:
            report = self.sync_paths(sorted(heads))
        else:  # only rows no machine may apply: said once, in the warnings and in stats
            report = SyncReport()
            refused = CopyReport()
            self.copy.take_refused(refused)
            report.take_copy(refused)
        # past every row read, those refused too: a row no machine may apply is reported once, not read forever
        newest = max(self.copy.revisions.read_seq, *(h.seq for h in heads.values()))
        if newest > self.copy.last_seq:
            self.copy.state.set_meta("seq", str(newest))
        return report

    def restore(self, rel: str, revision: int, author: str | None = None) -> SyncReport:
        """Bring back revision `revision` of `rel` as a new revision, then into this folder and the index (an
        edit made here and not yet synced becomes a conflict copy beside it: nothing is overwritten)."""
        if self.copy is None:
            raise LookupError("history and restore need the team store (ORACLE_DATABASE_URL): without it the"
                              " folder is the only copy, and its history is your version control's")
        with self.lock:
            first = self._sync_paths_keyword([rel], author, set())  # an edit here goes up (or aside) first
            self.copy.restore(rel, revision, author)
        report = self.sync_paths([rel], embed_limit=None, author=author)
        report.conflicts = first.conflicts + report.conflicts
        return report

    def restore_many(self, wanted: list[tuple[str, int]], author: str | None = None) -> tuple[SyncReport, list[str]]:
        """Several notes' revisions back at once (`oracle restore --deleted-since`), and the notes whose deletion the
        guard held pulled back into this folder; then one sync of them all. (report, the held paths released)."""
        if self.copy is None:
            raise LookupError("history and restore need the team store (ORACLE_DATABASE_URL): without it the"
                              " folder is the only copy, and its history is your version control's")
        rels = [rel for rel, _ in wanted]
        with self.lock:
            first = self._sync_paths_keyword(rels, author, set())  # an edit here goes up (or aside) first
            for rel, revision in wanted:
                self.copy.restore(rel, revision, author)
            released = self.copy.release_held()
        report = self.sync_paths(sorted({*rels, *released}), embed_limit=None, author=author)
        report.conflicts = first.conflicts + report.conflicts
        return report, released

    def _take_up_parser(self, whole_folder: bool) -> None:
        """Under the writer lock, before a write: an index parsed by an older Oracle (meta `parser_version` below
        PARSER_VERSION) has every note parsed again, once, by the next sync of the whole folder (the embedding cache
        keeps unchanged sections' vectors); a new, empty index records this parser's version at its first write, so
        notes written one by one (a learn) are not taken for old. Only older: a team database that a newer engine
        re-parsed is not parsed back by this one."""
        if parser_version(self.store.get_meta("parser_version")) >= PARSER_VERSION:
            return
        if self.store.note_count() == 0:
            self.store.set_meta("parser_version", str(PARSER_VERSION))
        elif whole_folder:
            self.store.forget_file_states()
            self.store.set_meta("parser_version", str(PARSER_VERSION))

    def _sync_paths_keyword(self, rels: list[str], author: str | None = None,
                            touched: set[str] | None = None) -> SyncReport:
        self._take_up_parser(whole_folder=False)
        report = SyncReport()
        root = self.settings.root
        live: set[str] | None = None
        if self.copy is not None:
            copied = self.copy.reconcile(rels, author=author)
            report.take_copy(copied)
            extra = [c.split(" -> ", 1)[1] for c in copied.conflicts]
            rels = [*rels, *extra]
            if touched is not None:
                touched.update(extra)
            live = copied.live
        known = self.store.file_states()
        if self.copy is not None:
            known = self.copy.index_states(known, rels)
        to_index: list[tuple[Found, FileState, str]] = []
        stale: list[str] = []
        for rel in sorted(set(rels)):
            path = on_disk(root, rel)
            doc_type = note_type(root, rel, self.settings.layout)
            reason = unindexable(path, root, self.settings.layout) if doc_type is not None else None
            if reason:  # a FIFO, a folder named x.md, a symlink out of the root: as `sync` records them
                stale += self.store.record_skip(rel, reason)
                report.skipped[rel] = reason
                report.removed += rel in known
                continue
            if doc_type is None or not path.is_file():
                if rel in known and (live is None or rel not in live):
                    stale += self.store.remove_file(rel)
                    report.removed += 1
                continue
            outcome = self._classify(Found(rel=rel, path=path, type=doc_type), known.get(rel), report)
            if outcome is not None:
                to_index.append(outcome)
        if to_index:
            stale += self._index_batch(to_index, known, report)
        self._delete_vectors(stale, report)
        return report

    def _classify(self, item: Found, state: FileState | None,
                  report: SyncReport) -> tuple[Found, FileState, str] | None:
        """None when the file is unchanged (or skipped), else what to index it with."""
        try:
            st = item.path.stat()
            if state and state.mtime_ns == st.st_mtime_ns and state.size == st.st_size:
                report.unchanged += 1
                return None
            data = read_inside(item.path, self.settings.root, self.settings.max_file_bytes, self.settings.layout,
                               twins=False)  # ruled out by discover / unindexable
        except (FileNotFoundError, NotADirectoryError):  # deleted between discovery and now: gone, not skipped
            self._delete_vectors(self.store.remove_file(item.rel), report)
            report.removed += state is not None
            report.warnings.append(f"{item.rel}: deleted while indexing")
            return None
        except Unreadable as exc:
            self._delete_vectors(self.store.record_skip(item.rel, str(exc)), report)
            report.skipped[item.rel] = str(exc)
            return None
        except OSError as exc:
            reason = f"cannot read: {exc.strerror or exc}"
            self._delete_vectors(self.store.record_skip(item.rel, reason), report)
            report.skipped[item.rel] = reason
            return None
        digest = file_hash(data)
        if state and state.file_hash == digest:
            if self.copy is None:  # a working copy's stat is its own (workcopy.db), not the shared index's
                self.store.touch_file(item.rel, st.st_mtime_ns, st.st_size)
            report.unchanged += 1
            return None
        text, refused = decode_markdown(data, self.settings.max_file_bytes)
        if refused is not None:
            self._delete_vectors(self.store.record_skip(item.rel, refused), report)
            report.skipped[item.rel] = refused
            return None
        assert text is not None
        return item, FileState(st.st_mtime_ns, st.st_size, digest), text

    def _index_batch(
        self, batch: list[tuple[Found, FileState, str]], known: dict[str, FileState], report: SyncReport
    ) -> list[str]:
        t0 = time.perf_counter()
        parsed: list[tuple[Found, FileState, ParsedFile]] = []
        stale: list[str] = []
        for item, state, text in batch:
            try:
                result = parse_markdown(text, item.rel, item.type)
            except Exception as exc:  # a parser bug must cost one file, not the run
                reason = f"could not parse: {type(exc).__name__}: {exc}"
                stale += self.store.record_skip(item.rel, reason)
                report.skipped[item.rel] = reason
                continue
            schema = self.settings.layout.frontmatter.check(result.fields, item.type)
            if schema:
                result = dataclasses.replace(result, warnings=[*result.warnings, *schema])
            parsed.append((item, state, cap_chunks(result, self.settings.max_chunks_per_file)))
        for item, state, result in parsed:
            stale += self.store.replace_file(
                item.rel, item.type, result.title, state, result.chunks, result.warnings,
                relations=result.relations, superseded_by=result.superseded_by, language=result.language,
                verified=(result.last_verified, result.review_after), fields=result.fields,
            )
            report.chunks_written += len(result.chunks)
            if item.rel in known:
                report.changed += 1
            else:
                report.added += 1
            if result.warnings:
                report.warnings += [f"{item.rel}: {w}" for w in result.warnings]
        report.keyword_seconds += time.perf_counter() - t0
        return stale

    # -- vectors ----------------------------------------------------------------------------------
    def _requeue_lost_vectors(self) -> None:
        """A Chroma server may have been restarted without its data while no Oracle was running: when it
        holds fewer vectors than the index says are there, find which and queue them again."""
        try:
            if self.vectors.count() < self.store.counts()["embedded"]:
                self._reconcile()
        except VectorStoreUnavailable:
            pass  # the flush that follows says so

    def _delete_vectors(self, ids: list[str], report: SyncReport) -> None:
        if not ids:
            return
        t0 = time.perf_counter()
        try:
            self.vectors.delete(ids)
        except VectorStoreUnavailable as exc:
            report.vector_failed = True
            report.warnings.append(f"stale vectors not deleted (search ignores them): {exc}")
        report.vector_seconds += time.perf_counter() - t0

    def flush_vectors(self, stop: Callable[[], bool] | None = None) -> SyncReport:
        """Embed and upsert every chunk still missing from the vector store, in slices (each under the
        writer lock on its own), until `stop()` says other work waits."""
        report = SyncReport()
        started = time.perf_counter()
        self._flush_both(report, stop=stop)
        if report.embedded or report.embeddings_cached:  # an idle worker calls this every second: not then
            self._mark_indexed(report)
            self._refresh_exact(report)
        report.seconds = time.perf_counter() - started
        return report

    def _mark_indexed(self, report: SyncReport) -> None:
        """`last_indexed` (what `oracle stats` shows) is when everything was done, vectors included: set once
        nothing is left pending, or when the vector side failed (nothing more can be done now; stats shows the
        coverage). A keyword phase alone used to set it, minutes before the vectors of a first index were in."""
        if report.vector_failed or self.store.pending_count() == 0:
            with self.lock:
                self.store.set_meta("last_indexed", f"{time.time():.3f}")

    def _flush_both(
        self, report: SyncReport, progress: Callable[[str, int, int], None] | None = None,
        stop: Callable[[], bool] | None = None, prune: bool = False,
    ) -> None:
        """The main model's vectors and the multilingual ones at the same time, the latter in a thread of
        its own. The main model keeps one single-threaded session per core busy; the multilingual encoder
        is NumPy on one BLAS thread (indexer/models/multilingual.py), so run after it, it left the other core idle
        (nat-brain: ~100 s of one core after ~220 s of two). Both are mostly C code that lets go of the GIL,
        and each writes its own rows under the writer lock, one slice at a time, so the two only wait for
        each other's short writes (the main model embeds inside its slice: the multilingual thread then
        waits, and the main model has both cores meanwhile)."""
        if not self.multilingual.wanted():
            self._flush_pending_vectors(report, progress, stop=stop)
            return
        side = SyncReport()  # the thread's own counters and warnings, merged when both are done
        started, before = time.perf_counter(), report.vector_seconds
        with ThreadPoolExecutor(1, thread_name_prefix="oracle-multilingual") as pool:
            future = pool.submit(self._flush_multilingual, side, stop=stop, prune=prune)
            try:
                self._flush_pending_vectors(report, progress, stop=stop)
            finally:
                future.result()
        report.multilingual_embedded += side.multilingual_embedded
        report.warnings += side.warnings
        report.vector_seconds = before + time.perf_counter() - started  # wall time, not the two threads' sum

    def _flush_multilingual(
        self, report: SyncReport, files: set[str] | None = None, stop: Callable[[], bool] | None = None,
        prune: bool = False,
    ) -> None:
        """Compute the multilingual vectors a base that wants them lacks (indexer/models/multilingual.py), a slice
        at a time. The model runs outside the writer lock; each slice's rows are written in one short
        transaction under it, so keyword and main-vector work never wait behind this."""
        if not self.multilingual.wanted():
            return
        t0 = time.perf_counter()
        try:
            while not (stop and stop()):
                rows = self.multilingual.pending(ML_SLICE, files)
                if not rows:
                    break
                vectors = self.multilingual.embedder.embed([compose_embed_text(*row[1:]) for row in rows])
                with self.lock:
                    self.multilingual.store_vectors(self.store, [row[0] for row in rows], vectors)
                report.multilingual_embedded += len(rows)
            if prune:
                with self.lock:
                    self.multilingual.prune_vectors(self.store)
        except EmbeddingUnavailable as exc:
            report.warnings.append(f"multilingual vectors not computed (queries in other scripts use the English"
                                   f" model meanwhile): {exc}")
        finally:
            report.vector_seconds += time.perf_counter() - t0

    def _flush_pending_vectors(
        self,
        report: SyncReport,
        progress: Callable[[str, int, int], None] | None = None,
        files: set[str] | None = None,
        max_file_chunks: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        """Embed (or take from cache) chunks not yet in the vector store and upsert them, one slice at a
        time, the chunks of small files first. Each slice takes the writer lock on its own and the lock is
        let go between slices, so a learn or a saved note never queues behind a big note's embeddings;
        a crash loses at most one slice of work. `files` and `max_file_chunks` narrow what is embedded."""
        total = len(self._pending(files, max_file_chunks))
        done = 0
        tried: set[str] = set()
        while total and not report.vector_failed and not (stop and stop()):
            taken: list[str] = []

            def one_slice() -> SyncReport:
                rows = [r for r in self._pending(files, max_file_chunks) if r[0] not in tried][:VECTOR_SLICE]
                taken.extend(r[0] for r in rows)
                if rows:
                    self._flush_slice(rows, report, stop)
                return report

            self._locked(one_slice)
            if not taken:
                break
            tried.update(taken)  # a chunk the store would not take is not retried in this run
            done += len(taken)
            if progress:
                progress("vectors", min(done, total), total)
            if len(taken) < VECTOR_SLICE:
                break  # that was the last slice: no pause, no further round under the lock
            time.sleep(SLICE_PAUSE)

    def _pending(self, files: set[str] | None,
                 max_file_chunks: int | None) -> list[tuple[str, str, str, str, str | None]]:
        """Pending chunks, those of files with fewer pending chunks first (then by file and position)."""
        pending = self.store.pending_vectors()
        if files is not None:
            pending = [row for row in pending if row[3] in files]
        counts = Counter(row[3] for row in pending)
        if max_file_chunks is not None:
            pending = [row for row in pending if counts[row[3]] <= max_file_chunks]
        pending.sort(key=lambda row: (counts[row[3]], row[3]))  # stable: a file's chunks keep their order
        return pending

    def _flush_slice(
        self, pending: list[tuple[str, str, str, str, str | None]], report: SyncReport,
        stop: Callable[[], bool] | None = None,
    ) -> None:
        """Embed what the cache lacks, EMBED_STEP texts at a time, each step's vectors committed to the cache as
        soon as they exist; then upsert the rows that have a vector. When `stop()` says so (the process is
        ending), the slice ends after the current step with what it has: a short `oracle serve` session used
        to embed a whole slice, get stopped before storing any of it, and leave the next session (and the
        next `oracle index`) to compute the same vectors again (issue 27 §11)."""
        t0 = time.perf_counter()
        try:
            keys = [row[1] for row in pending]
            cached = self.store.cached_vectors(sorted(set(keys)))
            missing = [row for row in pending if row[1] not in cached]
            if missing:
                texts = self.store.embed_texts([row[0] for row in missing])
                unique: dict[str, str] = {}
                for cid, key, *_ in missing:
                    unique.setdefault(key, texts[cid])
                order = sorted(unique, key=lambda k: len(unique[k]))  # steps of similar lengths pad least
                for start in range(0, len(order), EMBED_STEP):
                    step = order[start : start + EMBED_STEP]
                    fresh = dict(zip(step, self.embedder.embed([unique[k] for k in step])))
                    self.store.cache_vectors(fresh)
                    cached.update(fresh)
                    report.embedded += len(fresh)
                    if stop and stop() and start + EMBED_STEP < len(order):
                        break
            ready = [row for row in pending if row[1] in cached]
            computed = {row[0] for row in missing}
            report.embeddings_cached += sum(1 for row in ready if row[0] not in computed)
            if not ready:
                return
            import numpy as np

            matrix = np.stack([cached[row[1]] for row in ready])
            metas = [{"type": t, "file": f, "project": p or ""} for _, _, t, f, p in ready]
            ids = [row[0] for row in ready]
            self.vectors.upsert(ids, matrix, metas)
            self.store.mark_in_vector(ids)
        except (EmbeddingUnavailable, VectorStoreUnavailable) as exc:
            report.vector_failed = True
            when = ("retried in the background until the vector store takes them"
                    if isinstance(exc, VectorStoreUnavailable) else "retried at the next index run")
            report.warnings.append(
                f"{self.store.pending_count()} chunks left pending for the vector index (keyword search has them;"
                f" {when}): {exc}"
            )
        finally:
            report.vector_seconds += time.perf_counter() - t0


def cap_chunks(result: ParsedFile, cap: int) -> ParsedFile:
    """At most `cap` chunks of one file, the first ones (a bullet only with its section), with a warning
    stored on the file and reported by the run. A 20,000-bullet principle held the pipeline for minutes."""
    if len(result.chunks) <= cap:
        return result
    kept: list = []
    ids: set[str] = set()
    for chunk in result.chunks:
        if len(kept) == cap:
            break
        if chunk.parent_id is None or chunk.parent_id in ids:
            kept.append(chunk)
            ids.add(chunk.id)
    warning = (f"{len(result.chunks)} chunks, more than ORACLE_MAX_CHUNKS_PER_FILE={cap}: only the first"
               f" {len(kept)} are indexed; split the note")
    return dataclasses.replace(result, chunks=kept, warnings=[*result.warnings, warning])

