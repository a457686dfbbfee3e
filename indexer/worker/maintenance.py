"""The one background worker of a started Oracle: everything that keeps the index healthy off the request path.

Why one worker: there used to be a start-up thread, a watcher thread, a vector-recovery thread started by
the vector store itself, and a log-writer thread, each with its own loop, sleep and idea of shutdown. The
store could be closed under any of them ("Cannot operate on a closed database" at exit), the vector store
called up into the indexer, and a read (stats) could start a repair. Now `Oracle.start()` starts this one
thread and `Oracle.close()` stops and joins it before any store is closed; the vector store and the logs
only report their state, and reads never repair.

The worker is a tick loop. Each tick runs the due jobs in this order, the urgent first; it then sleeps
until a file event wakes it or TICK_SECONDS pass:

  0. once, before the loop: wait for `hold` (a stdio server's handshake, at most HOLD_MAX_SECONDS), verify the
     index if it was opened unchecked (Store.verify: a damaged one is moved aside and rebuilt), then (sync=True)
     the initial sync's keyword phase, then `on_ready()` (the server's requests wait for it, so the first search
     on a fresh index is not silently empty);
  1. the usage logs' queue is written (every tick, ~FLUSH_INTERVAL) and retention applied (hourly);
  2. watch=True: a settled batch of file events goes to `Indexer.sync_paths` (keywords, then the vectors
     of its own small files: a saved note never waits behind the backlog of job 6);
  2b. the team store: another engine's commit (heard by LISTEN, indexer/store/pg/listen.py) is pulled into this
     working copy (`Indexer.pull`);
  3. vector-store health: a store that is down is probed every RETRY_SECONDS and repaired once it answers
     (`Indexer.repair_vectors`: requeue what it lost, resume searches, upsert what is pending); one that
     failed a write is repaired with backoff; a healthy one is compared with the index once the warm-up is
     done (opening it imports chromadb, which a search beside it would wait on) and then every HEALTH_SECONDS
     (a Chroma server restarted without its data while nobody searched);
  4. once, warm_delay after start and once no search has run for WARM_QUIET_SECONDS (at most
     WARM_DEFER_MAX_SECONDS later): load the models (Thai segmenter, multilingual and embedding models), so the
     first query does not pay for them;
  5. watch=True: the sweep, a full incremental sync every sweep_seconds (what the events missed);
  6. the vector backlog (a first index, a big note): slice by slice, and only until anything above is due;
  7. every MERGE_CHECK_SECONDS, once nothing above has work: an FTS5 word table made of more than MERGE_ABOVE
     segments (each write adds one) is merged into one, MERGE_PAGES pages a slice (Store.merge_segments): every
     question walks each segment, and merged they answer the same in less time.

Long jobs (5, 6, 7 and the initial sync) check `_busy()` / `_stopping()` between slices or batches of files,
so a file event, a log flush or `stop()` waits for one slice at most.

The state involved, and who changes it: the owner's ready event (set by this worker once the initial
keyword phase is done); the vector store's `down` and `needs_repair` (set by any failing call, from any
thread; cleared only here, by a successful repair); and the index's `vectors_dirty` flag, which is not
runtime state but the cross-process crash marker of `Indexer._locked` (a writer killed mid-write leaves it
set and the next writer, in any process, reconciles).
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from oracle_indexer.config import ConfigReload
from oracle_indexer.store.backends import open_listener
from oracle_indexer.store.errors import StoreError, VectorStoreUnavailable
from oracle_indexer.store.protocols import Listening, SegmentedIndex, UsageLogs
from oracle_indexer.store.timing import FLUSH_INTERVAL, RETRY_SECONDS
from oracle_indexer.worker.sync import Indexer, SyncRefused, SyncReport

if TYPE_CHECKING:
    from oracle_indexer.worker.watch import FileEvents

TICK_SECONDS = 0.15  # file events are debounced over DEBOUNCE_SECONDS (0.3 s); a tick is well inside that
HEALTH_SECONDS = 30.0  # a healthy vector store is compared with the index this often
REPAIR_BACKOFF_MAX = 30.0  # a store that answers but keeps failing writes is retried less and less often
BACKLOG_RETRY_SECONDS = 10.0  # after a failed backlog flush (model or store unavailable)
BACKLOG_IDLE_SECONDS = 1.0  # how often an idle worker looks for pending chunks (a learn's big note)
BATCH_RETRY_SECONDS = 1.0  # after a failed batch of file events, before it is tried again
STOP_TIMEOUT = 60.0  # stop() waits this long for the current step (one slice, one Chroma request)
SWEEP_SECONDS = 300.0
MERGE_CHECK_SECONDS = 60.0  # how often the word tables' segments are counted (one small read each)
MERGE_ABOVE = 4  # more segments than this are merged into one; FTS5's automerge keeps up to ~4 a level itself
MERGE_PAGES = 200  # pages written per slice of a merge: ~30 ms on nat-brain, so a save waits that long at most
HOLD_MAX_SECONDS = 3.0  # a client that never lists the tools does not hold the initial sync back longer than this
# The interpreter's GIL switch interval while the worker runs Python for long (the warm-up, file events, the
# sweep, the backlog; CPython's default is 5 ms). A search gives the GIL up hundreds of times (sqlite3 releases it
# for every row it steps) and each time waits up to one interval to get it back from a thread running Python: while
# the worker built the Thai dictionary (0.85 s of pure Python) an English keyword search took 852 ms instead of 8;
# with 0.1 ms, 50 ms (benchmarks/HISTORY.md, "A search beside the warm-up").
BACKGROUND_SWITCH_INTERVAL = 0.0001
# The warm-up (job 4) waits, once due, until no search is running and none has for WARM_QUIET_SECONDS, at most
# WARM_DEFER_MAX_SECONDS: a model load's imports and C calls hold the GIL for up to ~0.2 s each at times,
# which a search running beside it waits out (what a search needs, it loads itself).
WARM_QUIET_SECONDS = 0.5
WARM_DEFER_MAX_SECONDS = 10.0
_searches = 0  # searches running in this process (searching)
_last_search = 0.0  # time.monotonic() when the last of them ended
_searches_lock = threading.Lock()

Reporter = Callable[[SyncReport], None]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def searching() -> Iterator[None]:
    """Around each search (server/services/capabilities/search/pipeline.py): the warm-up waits for a quiet moment."""
    global _searches, _last_search
    with _searches_lock:
        _searches += 1
    try:
        yield
    finally:
        with _searches_lock:
            _searches -= 1
            _last_search = time.monotonic()


def _quiet(now: float) -> bool:
    """No search running, and none for WARM_QUIET_SECONDS."""
    return _searches == 0 and now - _last_search >= WARM_QUIET_SECONDS


@contextmanager
def _searches_first(interval: float = BACKGROUND_SWITCH_INTERVAL) -> Iterator[None]:
    """The background's Python work hands the GIL back to a waiting search within `interval` instead of
    CPython's 5 ms (BACKGROUND_SWITCH_INTERVAL says why). Process-wide while the block runs; the value found is
    restored. Only this worker's thread changes it."""
    found = sys.getswitchinterval()
    if interval >= found:  # already as short (set again, a value read back would drift by a microsecond)
        yield
        return
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(found)


class Maintenance:
    """One thread that runs the jobs above until `stop()`; see the module's docstring for the order."""

    def __init__(
        self,
        indexer: Indexer,
        logs: UsageLogs | None = None,
        *,
        watch: bool = False,
        sync: bool = True,
        on_ready: Callable[[], None] | None = None,
        on_batch: Reporter | None = None,
        sweep_seconds: float = SWEEP_SECONDS,
        warm_delay: float = 0.0,
        health_seconds: float = HEALTH_SECONDS,
        hold: threading.Event | None = None,
        on_config: Callable[[ConfigReload], None] | None = None,
    ) -> None:
        self.indexer = indexer
        self.on_config = on_config
        self.hold = hold
        self.logs = logs
        self.watch = watch
        self.sync = sync
        self.on_ready = on_ready
        self.on_batch = on_batch
        self.sweep_seconds = sweep_seconds
        self.warm_delay = warm_delay
        self.health_seconds = health_seconds
        self.initial: SyncReport | None = None  # the initial sync's report, once it ran
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._events: FileEvents | None = None  # while watching
        self._listener: Listening | None = None  # with the team store: other engines' commits (job 2b)
        self._thread = threading.Thread(target=self._run, name="oracle-maintenance", daemon=True)
        # When each periodic job is next due (time.monotonic()).
        now = time.monotonic()
        self._warm_at: float | None = now + warm_delay  # None once warmed
        self._to_load: list[tuple[Callable[[], object], str]] | None = None  # the warm-up's loads left
        self._sweep_at = now + sweep_seconds
        self._health_at = now + warm_delay  # once at start-up (with the warm-up), then every health_seconds
        self._probe_at = 0.0
        self._repair_at = 0.0
        self._repair_backoff = RETRY_SECONDS
        self._backlog_at = 0.0
        # The index's write state (Store.write_state) when the backlog last found nothing pending: looking again
        # costs a scan of every section against the multilingual vectors (8.5 ms a second on nat-brain, beside
        # whatever search runs then), and nothing can be pending until something is written.
        self._backlog_idle_state: int | None = None
        self._merge_at = now + warm_delay  # job 7, first after the warm-up
        self._more = False  # the last backlog step did work and may have more: tick again without sleeping
        self._loading = False  # in a model load, which touches no store (stop(abandon_loads=True) may leave it)
        self._abandoned = False

    # -- owner's side ---------------------------------------------------------------------------------
    def start(self) -> "Maintenance":
        if self.watch:  # before the initial sync, so that nothing saved during it is missed
            from oracle_indexer.worker.watch import FileEvents  # watchdog: imported only by those who watch

            self._events = FileEvents(self.indexer).start()
            self._wake = self._events.wake  # one event wakes the worker: a file event, wake() or stop()
        copy = getattr(self.indexer, "copy", None)
        if copy is not None:  # the team store: another engine's commit wakes this worker to pull it (job 2b)
            self._listener = open_listener(self.indexer.settings.database_url or "", copy.machine, self.wake)
        self._thread.start()
        return self

    def stop(self, timeout: float = STOP_TIMEOUT, abandon_loads: bool = False) -> None:
        """Ask the worker to stop, write what the logs queue holds, and wait for the worker's current step.
        The owner closes the stores only after this returns.

        `abandon_loads`: a process about to end at once (`oracle serve` over stdio, which then leaves by
        os._exit) does not wait for a model load in progress: loading touches no store, and the Thai
        dictionary or the multilingual model took seconds, past the client's patience (it sends SIGTERM 2 s
        after closing stdin). An abandoned worker never touches a store again."""
        self._stop.set()
        self._wake.set()
        if self.logs is not None:  # first: the worker may be in a long step, and a client's SIGTERM may follow
            self._last_tick()
        if self._events is not None:
            self._events.stop()
        if self._listener is not None:
            self._listener.stop()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            deadline = time.monotonic() + timeout
            while self._thread.is_alive() and time.monotonic() < deadline:
                if abandon_loads and self._loading:
                    self._abandoned = True
                    return
                self._thread.join(0.05 if abandon_loads else max(0.0, deadline - time.monotonic()))
            if self._thread.is_alive():
                _say(f"oracle: the maintenance worker did not stop within {timeout:g} s; closing anyway")

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wake(self) -> None:
        """Run a tick now instead of at the end of the sleep."""
        self._wake.set()

    # -- the loop -------------------------------------------------------------------------------------
    def _stopping(self) -> bool:
        return self._stop.is_set()

    def _busy(self) -> bool:
        """A long job should make way: stopping, file events waiting, or log rows to write."""
        return (self._stop.is_set() or (self._events is not None and self._events.pending())
                or (self.logs is not None and self.logs.queued()))

    def _run(self) -> None:
        try:
            self._wait_for_hold()
            self._verify()
            if self.sync:
                self._initial_sync()
        finally:
            if self.on_ready:
                self.on_ready()
        while not self._stop.is_set():
            try:
                self._tick()
            except Exception as exc:  # noqa: BLE001 - the worker outlives any one job's failure
                if self._stop.is_set():
                    break  # shutting down: the store may already refuse work; nothing to report
                _say(f"oracle: maintenance: {type(exc).__name__}: {exc}; retrying")
                self._stop.wait(BATCH_RETRY_SECONDS)
            if not self._more:
                self._sleep()
        if self.logs is not None and not self._abandoned:
            self._last_tick()

    def _last_tick(self) -> None:
        """The logs' queue written as the worker stops; a store that cannot take it (the team database in an
        outage) costs those rows, said once, never the stop itself."""
        assert self.logs is not None
        try:
            self.logs.tick()
        except Exception as exc:  # noqa: BLE001 - the rows are lost; the stop goes on
            _say(f"oracle: usage logs not written at stop: {type(exc).__name__}: {str(exc)[:200]}")

    def _sleep(self) -> None:
        self._wake.wait(TICK_SECONDS if self._events is not None else FLUSH_INTERVAL)
        self._wake.clear()

    def _wait_for_hold(self) -> None:
        """Work that reads the whole base (the check, the sync) must not compete with the handshake."""
        if self.hold is None:
            return
        deadline = time.monotonic() + HOLD_MAX_SECONDS
        while not self.hold.wait(0.05) and not self._stop.is_set() and time.monotonic() < deadline:
            pass

    def _verify(self) -> None:
        try:
            if self.indexer.store.verify():
                self.indexer.index_replaced()
        except Exception as exc:  # noqa: BLE001 - the server keeps serving; the sync reports a broken index
            if not self._stop.is_set():
                _say(f"oracle: index check failed: {type(exc).__name__}: {exc}")

    def _initial_sync(self) -> None:
        try:
            self.initial = self.indexer.sync(keyword_ready=self.on_ready, vectors=False, cancel=self._stopping)
        except Exception as exc:  # the server keeps serving what is indexed
            if not self._stop.is_set():
                _say(f"oracle: background index failed: {exc}")

    def _tick(self) -> None:
        now = time.monotonic()
        self._more = False
        if self.logs is not None:
            self.logs.tick()
        if self._events is not None:
            with _searches_first():
                self._file_events()
        if self._listener is not None and self._listener.take():
            self._remote_writes()
        self._vector_health(now)
        if self._warm_at is not None and now >= self._warm_at and (
                _quiet(now) or now >= self._warm_at + WARM_DEFER_MAX_SECONDS):
            with _searches_first():
                self._warm()
        if self._events is not None and now >= self._sweep_at and not self._busy():
            self._sweep_at = now + self.sweep_seconds
            with _searches_first():
                self._sweep()
        if self._warm_at is None and now >= self._backlog_at and not self._busy():
            with _searches_first():
                self._backlog(now)
        if self._warm_at is None and now >= self._merge_at and not self._more and not self._busy():
            self._merge_segments(now)

    # -- the jobs -------------------------------------------------------------------------------------
    def _report(self, report: SyncReport) -> None:
        from oracle_indexer.worker.watch import announce

        if self.on_batch:
            self.on_batch(report)
        announce(self.indexer, report)

    def _file_events(self) -> None:
        assert self._events is not None
        batch = self._events.take()
        if batch is None:
            return
        if self._events.config_changed():
            self._reload_config()
        try:
            rels = self._events.paths(batch)
            if rels:
                self._report(self.indexer.sync_paths(rels))
        except Exception as exc:  # the batch is not lost: it is retried after a pause
            if self._stop.is_set():
                return
            _say(f"oracle watch: {type(exc).__name__}: {exc}; retrying")
            self._events.requeue(batch)
            self._stop.wait(BATCH_RETRY_SECONDS)

    def _reload_config(self) -> None:
        """oracle.toml changed: take up what a running server can (Indexer.reload_config), say what waits for a
        restart, and sweep next, so the notes the new rules include or leave out enter or leave the index."""
        outcome = self.indexer.reload_config()
        _say(f"oracle: {outcome.message}")
        if self.on_config is not None:
            self.on_config(outcome)
        if outcome.applied:
            self._sweep_at = 0.0

    def _remote_writes(self) -> None:
        """Job 2b: another engine committed notes (LISTEN/NOTIFY): pull them into this folder and the index
        (Indexer.pull: the heads above the last one this copy saw). A failure (the database away) is retried
        at the next notification, the listener's reconnect or the sweep."""
        try:
            report = self.indexer.pull()
        except Exception as exc:  # noqa: BLE001 - the worker outlives a failed pull
            if not self._stop.is_set():
                _say(f"oracle: pull from the team store failed: {type(exc).__name__}: {exc}")
            return
        if report.pulled or report.deleted_here or report.conflicts or report.added or report.changed:
            self._report(report)

    # Over complexity 10 on purpose: the vector store's three states (down, needs repair, healthy), each with its own
    # timer.
    def _vector_health(self, now: float) -> None:  # noqa: C901
        """Notice an outage or a loss on our own schedule and repair it; reads only report health."""
        vectors = self.indexer.vectors
        if vectors.down is not None:
            if now < self._probe_at:
                return
            self._probe_at = now + RETRY_SECONDS
            try:
                vectors.reopen()
            except VectorStoreUnavailable as exc:
                if vectors.damaged:  # its own files are garbage: waiting will not mend them
                    self._rebuild(str(exc))
                return  # still down; probed again in RETRY_SECONDS
            self._repair()
        elif vectors.needs_repair:
            if now < self._repair_at:
                return
            ok = self._repair()
            self._repair_backoff = RETRY_SECONDS if ok else min(self._repair_backoff * 2, REPAIR_BACKOFF_MAX)
            self._repair_at = now + self._repair_backoff
        elif now >= self._health_at and self._warm_at is None:  # the first check opens the store: after the warm-up
            self._health_at = now + self.health_seconds
            try:
                lost = vectors.count() < self.indexer.store.embedded_count()
                broken = None if lost else self.indexer.check_vectors()
            except VectorStoreUnavailable:
                return  # now marked down: probed from the next tick on
            if broken:
                self._rebuild(broken)
            elif lost:
                self._repair()

    def _rebuild(self, reason: str) -> None:
        """Indexer.rebuild_vectors, with the store's fail-fast bypassed; a failure waits for the next probe."""
        vectors = self.indexer.vectors
        failures = vectors.failures
        try:
            with vectors.repairing():
                report = self.indexer.rebuild_vectors(reason)
        except Exception:  # noqa: BLE001 - recorded by the store; probed again
            return
        if not report.vector_failed:
            vectors.resume()
            vectors.repaired(failures)

    def _repair(self) -> bool:
        """Indexer.repair_vectors with the store's fail-fast bypassed for this thread; True when done."""
        vectors = self.indexer.vectors
        failures = vectors.failures
        try:
            with vectors.repairing():
                done = self.indexer.repair_vectors()
        except Exception:  # noqa: BLE001 - the store recorded the failure; the next probe tries again
            return False
        if done:
            vectors.resume()
            vectors.repaired(failures)
        return done

    def _warm(self) -> None:
        """Load what the first query would otherwise wait for, one model a tick, each in a quiet moment (the
        tick checks `_quiet` before each): a burst of searches arriving mid-way waits out one load, not all.
        Each failure is said once. What to load is read from the store first; the loads themselves touch no
        store, so a stopping owner may leave them (`stop(abandon_loads=True)`), and each is skipped once a stop
        was asked for."""
        if self._to_load is None:
            self._to_load = self._warm_loads()
        if self._to_load:
            load, failure = self._to_load.pop(0)
            self._loading = True
            try:
                if not self._stop.is_set():
                    load()
            except Exception as exc:
                if not self._abandoned:
                    _say(f"oracle: {failure}: {exc}")
            finally:
                self._loading = False
        if not self._to_load:
            self._warm_at = None
            # What the start-up and the loads made lives as long as the process: out of the cyclic collector's
            # reach, a full collection no longer walks it (indexer/notes/segment.py `_tokenizer` says what that cost).
            gc.freeze()

    def _warm_loads(self) -> list[tuple[Callable[[], object], str]]:
        """The loads the warm-up makes, in order, with what to say if one fails."""
        from oracle_indexer.notes import segment

        indexer = self.indexer
        thai = multilingual = False
        try:
            thai = indexer.store.has_thai()  # the first Thai query would otherwise wait ~1 s for the dictionary
        except Exception as exc:
            _say(f"oracle: Thai word segmenter unavailable: {exc}")
        try:
            multilingual = indexer.multilingual.wanted()  # ~1 s to unpack its weights, not in the first query
        except Exception as exc:
            _say(f"oracle: multilingual model unavailable, other scripts use the English one: {exc}")
        loads = (
            (indexer.embedder.warm, True, "embedding model unavailable, keyword search only"),
            (segment.warm, thai, "Thai word segmenter unavailable"),
            (indexer.multilingual.embedder.warm, multilingual,
             "multilingual model unavailable, other scripts use the English one"),
        )
        return [(load, failure) for load, wanted, failure in loads if wanted]

    def _sweep(self) -> None:
        try:
            self._report(self.indexer.sync(stop_vectors=self._busy, cancel=self._stopping))
        except SyncRefused as exc:
            _say(f"oracle watch: sweep skipped: {exc}")

    def _merge_segments(self, now: float) -> None:
        """Job 7: each word table of more than MERGE_ABOVE segments merged into one, slice by slice while nothing
        else waits (an interrupted merge goes on at the next tick: the count stays high until it is done)."""
        store = self.indexer.store
        if not isinstance(store, SegmentedIndex):  # the PostgreSQL store: no FTS5 segments
            self._merge_at = float("inf")
            return
        self._merge_at = now + MERGE_CHECK_SECONDS
        try:
            for table in store.segmented_tables:
                if store.segment_count(table) <= MERGE_ABOVE:
                    continue
                while store.merge_segments(table, MERGE_PAGES):
                    if self._busy():
                        self._merge_at = now  # made way; the next tick goes on
                        self._more = True
                        return
        except StoreError as exc:  # the write lock held past the busy timeout, a read-only file: next time
            if not self._stop.is_set():
                _say(f"oracle: merging the index's word tables failed: {exc}; trying again later")

    def _backlog(self, now: float) -> None:
        """Chunks still missing from the vector store (a first index, a big note) and multilingual
        vectors still to compute: a few slices at a time, and only while nothing above waits."""
        indexer = self.indexer
        if indexer.vectors.down is not None:
            return  # job 3 repairs and then flushes
        state = indexer.store.write_state()
        if state is not None and state == self._backlog_idle_state:
            self._backlog_at = now + BACKLOG_IDLE_SECONDS  # nothing written since nothing was pending
            return
        report = indexer.flush_vectors(stop=self._busy)
        for warning in report.warnings:
            _say(f"oracle: {warning}")
        if report.vector_failed or report.warnings:
            self._backlog_at = now + BACKLOG_RETRY_SECONDS
        elif report.embedded or report.embeddings_cached or report.multilingual_embedded:
            self._more = True  # made way for something, or finished: the next tick looks again at once
        else:
            self._backlog_at = now + BACKLOG_IDLE_SECONDS  # nothing was pending
            self._backlog_idle_state = state
