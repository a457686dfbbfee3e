"""The lifecycle: `Oracle.start()` runs one maintenance worker, `Oracle.close()` joins it, reads never repair.

Real SQLite, real embedded ChromaDB, the real model. The worker is observed from outside: the index it
builds, the vectors it upserts, the threads that exist, and what it prints on stderr.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from _corpus import damage_table, write
from oracle_indexer.worker.sync import VECTOR_SLICE
from oracle_server.services.capabilities.learn import learn
from oracle_server.services.vocabulary.models import LearnRequest, SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.stats import stats

DEADLINE = 120.0  # generous for a loaded 2-core machine; a hang check, not a speed limit


def wait_for(check, what: str, timeout: float = DEADLINE):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def maintenance_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("oracle-")]


def big_principle(sections: int) -> str:
    return "---\ntitle: Big principle\n---\n# Big principle\n\n" + "".join(
        f"### Rule {n}\n\nKeep the lifecycle rule {n} short and specific, rule {n}.\n\n" for n in range(sections))


def small_notes(root: Path, n: int) -> None:
    for i in range(n):
        write(root / f"learnings/2026-01-{i + 1:02d}_note-{i}.md",
              f"---\ntitle: Note {i}\n---\n# Note {i}\n\nA gannet dives for fish number {i} off the cliff.\n")


def test_start_syncs_and_drains_the_backlog_and_a_learn_does_not_wait_for_it(tmp_path: Path, make_oracle, capfd) -> None:
    """An Oracle started without watch: the worker's initial sync makes it ready, then the worker embeds the
    first index's backlog; a learn meanwhile embeds its own note at once (sync_paths flushes its own chunks
    first) instead of waiting behind that backlog; close() joins the worker before the stores close."""
    root = tmp_path / "root"
    small_notes(root, 5)
    bullets = 4 * VECTOR_SLICE  # a backlog of several slices
    write(root / "principles/big.md", big_principle(bullets))
    oracle = make_oracle(root, tmp_path / "data")
    oracle.start(watch=False)
    assert [t.name for t in maintenance_threads()].count("oracle-maintenance") == 1
    oracle.wait_ready()
    assert oracle.ready.is_set() and len(oracle.store.file_states()) == 6  # the keyword index is whole
    backlog = wait_for(oracle.store.pending_count, "the initial sync left the vectors to the worker", 10) or 0

    wait_for(lambda: 0 < oracle.store.pending_count() < backlog, "the worker's first slice")
    learnt = learn(oracle, LearnRequest(pattern="Cormorants dry their wings on the jetty at noon.", title="Cormorant"))
    left = oracle.store.pending_count()
    assert learnt.embedded is True, learnt.warnings
    assert left > 0, "the learn waited for the whole backlog"
    hit = run_search(oracle, SearchRequest(query="cormorants drying wings", mode="vector", limit=1)).hits[0]
    assert hit.source_file == learnt.file

    wait_for(lambda: oracle.store.pending_count() == 0, "the worker drained the backlog")
    assert oracle.vectors.count() == oracle.store.counts()["chunks"]
    assert stats(oracle).vector_store.ok

    worker = oracle.maintenance
    assert worker is not None and worker.running
    oracle.close()
    assert not worker.running and oracle.maintenance is None
    assert not [t for t in maintenance_threads() if t.name == "oracle-maintenance"]
    err = capfd.readouterr().err
    assert "closed database" not in err and "Traceback" not in err, err


def test_close_mid_sync_and_mid_backlog_is_clean_and_the_next_start_goes_on(tmp_path: Path, make_oracle,
                                                                             capfd) -> None:
    """close() right after start() (the keyword phase stops between batches of files), and close() while
    the worker embeds the backlog: both join the worker before the stores close, nothing is said about a
    closed database, and the next start goes on from where the last one stopped."""
    from chromadb.api.client import SharedSystemClient

    root, data = tmp_path / "root", tmp_path / "data"
    small_notes(root, 9)
    for n in range(200):
        write(root / f"retrospectives/2026-02-01_retro-{n:03d}.md",
              f"# Retro {n}\n\n## What happened\n\nWe shipped release {n} of the lifecycle work.\n\n"
              f"## Next\n\nKeep release {n} small.\n")
    oracle = make_oracle(root, data).start()
    time.sleep(0.05)
    worker = oracle.maintenance
    oracle.close()
    assert worker is not None and not worker.running

    SharedSystemClient.clear_system_cache()  # as a new process would open the data dir
    again = make_oracle(root, data).start()
    again.wait_ready()
    assert len(again.store.file_states()) == 209
    chunks = again.store.counts()["chunks"]
    wait_for(lambda: again.store.pending_count() < chunks, "the worker's first slice of the backlog")
    worker = again.maintenance
    again.close()
    assert worker is not None and not worker.running
    err = capfd.readouterr().err
    assert "closed database" not in err and "Traceback" not in err and "maintenance:" not in err, err


def test_stats_only_read_and_the_worker_repairs_a_store_that_lost_vectors(tmp_path: Path, make_oracle) -> None:
    """Vectors vanish from the store behind the index's back. stats says so and changes nothing (before,
    it started a repair thread); a started Oracle's worker notices on its own and re-adds them from the
    embedding cache, without the model."""
    root = tmp_path / "root"
    small_notes(root, 6)
    oracle = make_oracle(root, tmp_path / "data")
    assert not oracle.indexer.sync().vector_failed
    chunks = oracle.store.counts()["chunks"]
    lost = sorted(oracle.vectors.all_ids())[:3]
    oracle.vectors.delete(lost)

    threads_before = {t.name for t in threading.enumerate()}
    for _ in range(3):
        health = stats(oracle).vector_store
        assert health.ok is False and "lost 3" in health.detail, health
    time.sleep(0.5)
    assert oracle.vectors.count() == chunks - 3, "a read repaired the store"
    assert not oracle.vectors.needs_repair and oracle.vectors.down is None
    assert {t.name for t in threading.enumerate()} - threads_before == set(), "a read started a thread"
    assert oracle.indexer.last_repair is None

    oracle.start(sync=False)  # warm_delay=0: the worker's first health check is at once
    wait_for(lambda: oracle.vectors.count() == chunks and oracle.store.pending_count() == 0, "the worker's repair")
    repair = oracle.indexer.last_repair
    assert repair is not None and repair.embedded == 0 and repair.embeddings_cached == 3, repair
    assert stats(oracle).vector_store.ok


def test_start_twice_is_refused_and_stop_is_idempotent(tmp_path: Path, make_oracle) -> None:
    (tmp_path / "root").mkdir()
    oracle = make_oracle(tmp_path / "root", tmp_path / "data").start(sync=False)
    try:
        oracle.start()
    except RuntimeError as exc:
        assert "already started" in str(exc)
    else:
        raise AssertionError("a second start() was accepted")
    oracle.stop()
    oracle.stop()
    assert oracle.maintenance is None and oracle.ready.is_set()
    oracle.start(sync=False)  # stopped, it may be started again
    assert oracle.maintenance is not None and oracle.maintenance.running


def test_the_index_check_and_the_initial_sync_wait_for_the_hold(tmp_path: Path) -> None:
    """`oracle serve` opens its index unchecked and holds the worker back until the client has its tools
    (cli.cmd_serve passes the stdio front's `handshake_done`): reading a whole damaged or big new base never
    competes with the handshake. Once released, the worker finds the damage, sets the file aside and rebuilds
    the index from the markdown before the server is ready."""
    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle

    root, data = tmp_path / "root", tmp_path / "data"
    small_notes(root, 3)
    settings = Settings.from_env(root=root, data_dir=data)
    first = Oracle.open(settings)
    first.indexer.sync(vectors=False)
    first.close()
    damage_table(data / "oracle.db")
    oracle = Oracle.open(settings, check=False)
    hold = threading.Event()
    try:
        oracle.start(watch=False, hold=hold)
        time.sleep(0.5)
        assert not oracle.ready.is_set(), "the initial sync ran before the hold was released"
        assert not list(data.glob("oracle.db.corrupt-*")), "the index was checked before the hold was released"
        hold.set()
        assert oracle.ready.wait(DEADLINE)
        assert list(data.glob("oracle.db.corrupt-*")), "the damaged index was not set aside"
        assert len(oracle.store.file_states()) == 3  # rebuilt from the markdown
    finally:
        oracle.close()


def test_a_stopped_session_keeps_the_vectors_it_computed(tmp_path: Path, make_oracle) -> None:
    """Issue 27 §11: short `oracle serve` sessions on an unindexed root each embedded a slice, were stopped
    before storing any of it, and the next `oracle index` computed every chunk again. Now each step of
    EMBED_STEP texts is cached as it is computed and a stop ends the slice after the current step with what it
    has: the next process (here a second Oracle on the same data dir) computes only the rest."""
    from oracle_indexer.worker.sync import EMBED_STEP

    root, data = tmp_path / "root", tmp_path / "data"
    small_notes(root, 3)
    write(root / "principles/big.md", big_principle(2 * VECTOR_SLICE))
    first = make_oracle(root, data)
    first.indexer.sync(vectors=False)
    total = first.store.pending_count()
    assert total > VECTOR_SLICE
    cached = lambda: first.store.fetch("SELECT count(*) FROM embeddings")[0][0]  # noqa: E731
    report = first.indexer.flush_vectors(stop=lambda: cached() > 0)  # the session ends during the first slice
    assert report.embedded == EMBED_STEP and cached() == EMBED_STEP
    assert total - first.store.pending_count() == EMBED_STEP  # stored in the vector store too, not only cached
    first.close()

    second = make_oracle(root, data)
    done = second.indexer.sync()
    assert done.embedded == total - EMBED_STEP and not done.vector_failed
    assert second.store.pending_count() == 0


def two_section_notes(root: Path, n: int) -> None:
    for i in range(n):
        write(root / f"learnings/2026-02-{i + 1:02d}_gannet-{i}.md",
              f"---\ntitle: Gannet {i}\n---\n# Gannet {i}\n\nA gannet dives for fish number {i} off the cliff.\n\n"
              f"## Colony\n\nThe colony of {i} gannets nests on the cliff{' ledge' * i}.\n")


def keyword_answers(store) -> list:
    """What the keyword reads of a search answer, floats and order exactly."""
    from oracle_indexer.store.types import Filters

    files = [p for p in store.file_states()]
    out = []
    for match in ('"gannet"', '"cliff" OR "colony"', '"fish" OR "ledge" OR "nests"'):
        out.append(store.keyword_search(match, None, (), Filters(), 10))
        out.append(sorted(store.note_keyword_scores(match, files).items()))
    out.append(store.section_counts(['"gannet"', '"ledge"', '"colony"'], 100))
    return out


def test_merging_the_word_tables_segments_changes_no_answer(tmp_path: Path, make_oracle) -> None:
    """Each note is written in its own transaction, and each transaction adds a segment to the FTS5 tables;
    merged into one (Store.merge_segments, slice by slice), they give every keyword read the same answer."""
    root = tmp_path / "root"
    two_section_notes(root, 12)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    store = oracle.store
    assert [store.segment_count(t) for t in ("documents_fts", "notes_fts")] == [12, 12]
    before = keyword_answers(store)
    while store.merge_segments("documents_fts", 1):
        pass
    assert store.segment_count("documents_fts") == 1 and store.segment_count("notes_fts") == 12
    while store.merge_segments("notes_fts", 200):
        pass
    assert store.segment_count("notes_fts") == 1
    assert not store.merge_segments("notes_fts", 200)  # nothing left to do
    assert keyword_answers(store) == before


def test_the_worker_merges_the_word_tables_segments(tmp_path: Path, make_oracle) -> None:
    """Job 7: a started Oracle whose word tables hold more than MERGE_ABOVE segments merges each into one once
    its other jobs are done; a table at or under the bar is left as it is."""
    from oracle_indexer.worker.maintenance import MERGE_ABOVE

    root = tmp_path / "root"
    two_section_notes(root, MERGE_ABOVE + 2)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    store = oracle.store
    assert store.segment_count("documents_fts") > MERGE_ABOVE
    while store.merge_segments("notes_fts", 200):  # merged already: the worker has nothing to do there
        pass
    two_section_notes(root, 2)  # rewritten: the same two notes' sections again, one more segment each
    write(root / "learnings/2026-03-01_other.md", "---\ntitle: Other\n---\n# Other\n\nA puffin.\n")
    oracle.indexer.sync(vectors=False)
    notes_segments = store.segment_count("notes_fts")
    assert 1 < notes_segments <= MERGE_ABOVE
    oracle.start(watch=False)
    wait_for(lambda: store.segment_count("documents_fts") == 1, "the word table merged")
    assert store.segment_count("notes_fts") == notes_segments
    result = run_search(oracle, SearchRequest(query="gannet colony", mode="fts"))
    assert result.hits and result.meta.fts_matches == 2 * (MERGE_ABOVE + 2)


def test_the_workers_jobs_hand_the_gil_to_searches_within_a_tenth_of_a_millisecond(tmp_path: Path, make_oracle) -> None:
    """A search gives the GIL up at every row SQLite steps and waits up to one switch interval to get it back
    from a thread running Python (the warm-up's Thai dictionary, a sync): the worker's long jobs run under
    BACKGROUND_SWITCH_INTERVAL, and the interpreter's own value is back once the worker stops. The warm-up here is the
    real one, observed as it starts (benchmarks/HISTORY.md, "A search beside the warm-up", has the latencies)."""
    import sys

    from oracle_indexer.worker.maintenance import BACKGROUND_SWITCH_INTERVAL

    root = tmp_path / "root"
    small_notes(root, 2)
    oracle = make_oracle(root, tmp_path / "data")
    found = sys.getswitchinterval()
    seen: list[float] = []
    warm = oracle.indexer.embedder.warm

    def observed_warm() -> None:
        seen.append(sys.getswitchinterval())
        warm()

    oracle.indexer.embedder.warm = observed_warm  # the worker's warm-up job calls it (maintenance._warm)
    oracle.start(watch=False)
    wait_for(lambda: seen, "the worker's warm-up")
    assert seen[0] == pytest.approx(BACKGROUND_SWITCH_INTERVAL) and BACKGROUND_SWITCH_INTERVAL < found
    oracle.close()
    assert sys.getswitchinterval() == pytest.approx(found)


def test_searches_first_restores_the_interval_it_found() -> None:
    import sys

    from oracle_indexer.worker.maintenance import _searches_first

    found = sys.getswitchinterval()
    with _searches_first(0.0002):
        assert sys.getswitchinterval() == pytest.approx(0.0002)
        with _searches_first(0.001):  # never raises an interval set lower
            assert sys.getswitchinterval() == pytest.approx(0.0002)
        assert sys.getswitchinterval() == pytest.approx(0.0002)
    assert sys.getswitchinterval() == pytest.approx(found)


def test_the_warm_up_waits_for_a_quiet_moment_and_loads_one_model_a_tick(tmp_path: Path, make_oracle) -> None:
    """A model load holds the GIL in places (imports, C calls) that a search beside it waits out: the warm-up waits
    until no search runs and none has for WARM_QUIET_SECONDS, then loads one model a tick, a quiet moment each."""
    from oracle_indexer.worker import maintenance

    root = tmp_path / "root"
    small_notes(root, 2)
    write(root / "learnings/2026-02-01_thai.md", "---\ntitle: ภาษาไทย\n---\n# ภาษาไทย\n\nบันทึกภาษาไทยสั้นๆ\n")
    oracle = make_oracle(root, tmp_path / "data")
    loaded: list[tuple[str, float]] = []
    warm = oracle.indexer.embedder.warm

    def observed_warm() -> None:
        loaded.append(("embedder", time.monotonic()))
        warm()

    oracle.indexer.embedder.warm = observed_warm
    with maintenance.searching():  # a search running, as far as the worker can tell
        oracle.start(watch=False)
        oracle.wait_ready()
        time.sleep(1.0)  # several ticks past the warm-up's due time
        assert loaded == []
    ended = time.monotonic()
    wait_for(lambda: loaded, "the warm-up once the search ended")
    assert loaded[0][1] - ended >= maintenance.WARM_QUIET_SECONDS
    worker = oracle.maintenance
    wait_for(lambda: worker._warm_at is None, "the warm-up's other loads")
    assert worker._to_load == []  # the Thai dictionary too, in a tick of its own


def test_an_idle_worker_looks_for_pending_vectors_again_only_after_a_write(tmp_path: Path, make_oracle) -> None:
    """Looking for sections without vectors scans every section against the multilingual vectors (8.5 ms on
    nat-brain), which an idle worker did every second beside whatever search ran then. Nothing can be pending
    until something is written, by this process or another: the look is skipped until the index's write state
    (PRAGMA data_version) moves."""
    import sqlite3

    from oracle_indexer.worker import maintenance

    root = tmp_path / "root"
    small_notes(root, 3)
    oracle = make_oracle(root, tmp_path / "data")
    looks: list[float] = []
    flush = oracle.indexer.flush_vectors

    def observed_flush(*args, **kwargs):
        looks.append(time.monotonic())
        return flush(*args, **kwargs)

    oracle.indexer.flush_vectors = observed_flush
    oracle.start(watch=False)
    worker = oracle.maintenance
    wait_for(lambda: worker._backlog_idle_state is not None, "an idle look that found nothing pending")
    seen = len(looks)
    time.sleep(4 * maintenance.BACKLOG_IDLE_SECONDS)
    assert len(looks) == seen, "the worker looked again with nothing written"
    with sqlite3.connect(oracle.store.path) as other:  # another process's commit, as far as this one can tell
        other.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('test_write', '1')")
    wait_for(lambda: len(looks) > seen, "a look after the write")
