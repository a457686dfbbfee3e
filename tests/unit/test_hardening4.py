"""Hardening, round four (issue 39), on real parts: real SQLite (and a real PostgreSQL where the store matters,
tests/_pg.py), real files, real processes where a crash is the point. Each test here failed before its fix."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from _corpus import write
from conftest import STORES, store_overrides
from oracle_server.services.capabilities import freshness
from oracle_server.services.capabilities.consult import consult
from oracle_server.services.vocabulary.models import ConsultRequest, SearchRequest
from oracle_server.services.capabilities.search.pipeline import search
from oracle_server.services.capabilities.stats import stats


# -- 2. far-future dates must not crash freshness ----------------------------------------------------------
FAR = {
    "learnings/2026-01-01_far-date.md": "---\ntitle: Far date\ndate: 9999-12-31\n---\n# Far date\n\n"
                                        "The okapi ledger closes at night.\n",
    "learnings/2026-01-02_far-verified.md": "---\ntitle: Far verified\ndate: 2026-01-02\nlast_verified: 9999-12-31\n"
                                            "---\n# Far verified\n\nThe okapi ledger reopens at dawn.\n",
    "learnings/2026-01-03_plain.md": "---\ntitle: Plain\ndate: 2026-01-03\n---\n# Plain\n\nThe okapi ledger balances.\n",
}


@pytest.mark.parametrize("store", STORES)
def test_far_future_dates_are_treated_as_absent_for_freshness_with_a_warning(
        tmp_path: Path, make_oracle, store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`[freshness] days = 90` and a note dated (or verified) 9999-12-31: stats, search and consult failed with
    OverflowError (date + 90 days). The date that cannot be used counts as absent; the sync says which note."""
    monkeypatch.setattr(freshness, "today", lambda: dt.date(2027, 1, 15))
    root = tmp_path / "root"
    for rel, text in FAR.items():
        write(root / rel, text)
    (root / "oracle.toml").write_text("[freshness]\ndays = 90\n")
    oracle = make_oracle(root, tmp_path / "data", **store_overrides(store))
    report = oracle.indexer.sync(vectors=False)
    rel = "learnings/2026-01-02_far-verified.md"
    assert any(w.startswith(f"{rel}: last_verified: 9999-12-31") and "freshness" in w for w in report.warnings), \
        report.warnings
    # a note's date starts no window (issue 40): only a usable last_verified could make one stale, and none has one
    assert not any("2026-01-01_far-date.md: date" in w for w in report.warnings)
    assert stats(oracle).freshness.stale_by_type["learning"] == 0
    hits = {h.source_file: h for h in search(oracle, SearchRequest(query="okapi ledger", mode="fts", limit=10)).hits}
    assert set(hits) == set(FAR)
    assert not any(h.stale for h in hits.values())
    assert consult(oracle, ConsultRequest(decision="Does the okapi ledger balance?")).guidance


# -- 1. a lone surrogate: refused at the edge, and never wedges the usage log ----------------------------------
LONE = "\ud800"  # a lone UTF-16 surrogate: what `\ud800` in JSON text decodes to; no UTF-8 encoding exists


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("oracle_search", {"query": "okapi", "where": {"status": LONE}}, "where.status"),
    ("oracle_search", {"query": "okapi", "where": '{"status": "\\ud800"}'}, "where.status"),
    ("oracle_search", {"query": "okapi", "where": {LONE: "x"}}, "where"),
    ("oracle_search", {"query": f"okapi {LONE}"}, "query"),
    ("oracle_search", {"query": "okapi", "project": LONE}, "project"),
    ("oracle_consult", {"decision": "Use okapis?", "context": LONE}, "context"),
    ("oracle_learn", {"pattern": f"okapis {LONE}", "title": "Okapi"}, "pattern"),
    ("oracle_learn", {"pattern": "okapis", "relations": [["okapi", "eats", LONE]]}, "relations.0"),
    ("oracle_feedback", {"id": "c_" + "0" * 20, "verdict": "helpful", "note": LONE}, "note"),
    ("oracle_edit", {"file": "learnings/x.md", "op": "append", "text": LONE, "expected_hash": "a" * 64}, "text"),
    ("oracle_list", {"where": {"status": [LONE]}}, "where.status"),
])
def test_every_tool_refuses_a_lone_surrogate_naming_the_field(tool: str, arguments: dict, field: str) -> None:
    """Issue 39: `where={"status": "\\ud800"}` reached the usage log, which could not write it. One validator in the
    request models refuses such text, with the field it is in, before any service runs."""
    from oracle_server.registry.tools import BY_NAME, InvalidArguments

    with pytest.raises(InvalidArguments) as refused:
        BY_NAME[tool].parse(arguments)
    message = str(refused.value)
    assert "lone surrogate" in message and field in message and "UTF-8" in message, message


def test_every_request_model_has_the_one_text_check() -> None:
    from oracle_server.registry.tools import TOOLS
    from oracle_server.services.vocabulary.models import Request

    assert all(issubclass(tool.request, Request) for tool in TOOLS)


@pytest.mark.parametrize("store", STORES)
def test_a_log_row_that_cannot_be_written_is_dropped_and_counted_not_retried_for_ever(
        tmp_path: Path, make_oracle, store: str) -> None:
    """A row the log cannot store (here a lone surrogate, as an older client or a future bug could send) used to go
    back on the queue each time: stats and /api/logs answered 500 until a restart, nothing else was logged. Now
    the rows around it are written, it is dropped, and stats count it."""
    root = tmp_path / "root"
    for rel, text in FAR.items():
        write(root / rel, text)
    oracle = make_oracle(root, tmp_path / "data", **store_overrides(store))
    oracle.indexer.sync(vectors=False)
    logs = oracle.logs
    logs.log_search("mcp", "oracle_search", "okapi before", {}, "fts", 1, [("a", 1.0)], 1.0, [])
    logs.log_search("mcp", "oracle_search", "okapi", {"where": {"status": LONE}}, "fts", 0, [], 1.0, [])
    logs.log_consult("mcp", f"decide {LONE}", None, [], "guidance", 1, 1.0)
    logs.log_search("mcp", "oracle_search", "okapi after", {}, "fts", 1, [("b", 2.0)], 1.0, [])
    logs.tick()  # the maintenance worker's turn: must not raise, must not keep the bad rows
    assert not logs.queued()
    counts = logs.counts()
    assert counts["search_log"] == 2 and counts["consult_log"] == 0 and counts["document_access"] == 2
    assert [r["query"] for r in logs.recent("search_log")] == ["okapi after", "okapi before"]
    assert logs.dropped == 2
    assert stats(oracle).usage.log_drops == 2
    search(oracle, SearchRequest(query="okapi ledger", mode="fts"))
    logs.tick()
    assert logs.counts()["search_log"] == 3  # still logging


# -- 5. an edit never loses a save that lands between its check and its write --------------------------------
SAVER = """
import os, sys, time
from pathlib import Path
note, stop = Path(sys.argv[1]), Path(sys.argv[2])
n = 0
while not stop.exists():
    n += 1
    text = note.read_text(encoding="utf-8")
    tmp = note.with_name(f".saver-{n}.tmp")
    tmp.write_text(text.rstrip("\\n") + f"\\n\\nperson save {n}.\\n", encoding="utf-8")
    os.replace(tmp, note)  # how editors save: a new file renamed over the note
    print(n, flush=True)
    time.sleep(0.002)  # a save every few milliseconds: hundreds during the edits
"""


@pytest.mark.slow  # a real second process
def test_an_edit_racing_a_person_saving_in_a_loop_never_loses_a_save(tmp_path: Path, make_oracle) -> None:
    """Issue 39: 1 of 75 edits that returned 200 overwrote a save that landed between the edit's hash check
    and its write. A real second process saves the note as fast as it can (each save keeps what the file held
    and adds a line) while edits, each made against the hash just read, append to it: every save the person
    made is in the final file, whatever the edits answered."""
    import subprocess
    import sys
    import time

    from oracle_server.services.capabilities.edit import edit, file_digest
    from oracle_server.services.vocabulary.errors import OracleError
    from oracle_server.services.vocabulary.models import EditRequest

    root = tmp_path / "root"
    note = write(root / "learnings/2026-01-01_race.md", "---\ntitle: Race\n---\n# Race\n\nThe okapi ledger.\n")
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    stop = tmp_path / "stop"
    saver = subprocess.Popen([sys.executable, "-c", SAVER, str(note), str(stop)], stdout=subprocess.PIPE, text=True)
    done, refused = 0, 0
    try:
        assert saver.stdout is not None and saver.stdout.readline().strip() == "1"  # the person is saving
        started = time.monotonic()
        while done < 30 and time.monotonic() - started < 300:
            digest = file_digest(note.read_bytes())
            try:
                edit(oracle, EditRequest(file="learnings/2026-01-01_race.md", op="append",
                                         text=f"agent edit {done + refused}.", expected_hash=digest))
                done += 1
            except OracleError as exc:
                assert exc.kind == "conflict", exc.message
                refused += 1
    finally:
        stop.touch()
        out, _ = saver.communicate(timeout=60)
    saves = int(out.split()[-1]) if out.split() else 1
    final = note.read_text(encoding="utf-8")
    lost = [n for n in range(1, saves + 1) if f"person save {n}." not in final]
    kept = list(note.parent.glob(".*kept*"))
    assert not lost, f"{len(lost)} of {saves} saves lost ({done} edits written, {refused} refused, {len(kept)} kept): {lost[:10]}"
    assert done > 0


# -- 3. an idempotency key survives a crash between the write and the settle -------------------------------
KILLED_MID_LEARN = """
import os, signal, sys, threading, time
sys.path.insert(0, {tests!r})
from pathlib import Path
from _corpus import open_oracle
from oracle_server.services.capabilities.learn import learn
from oracle_server.services.vocabulary.models import LearnRequest

oracle = open_oracle(Path({root!r}), Path({data!r}), **{overrides!r})
folder = Path({root!r}) / "learnings"

def kill_once_written():
    while not any(p.name.endswith("okapi-ledger-rule.md") for p in folder.glob("*.md")):
        time.sleep(0.0005)
    os.kill(os.getpid(), signal.SIGKILL)  # the file is saved; the learn is indexing it: die now, like kill -9

threading.Thread(target=kill_once_written, daemon=True).start()
learn(oracle, LearnRequest(**{request!r}))
print("the learn finished before the kill", flush=True)
"""


@pytest.mark.slow  # a real second process
@pytest.mark.parametrize("store", STORES)
def test_a_retry_after_a_crash_mid_learn_finds_the_note_written_never_a_second_copy(
        tmp_path: Path, make_oracle, store: str) -> None:
    """Issue 39: a learn with an idempotency key, the process killed (SIGKILL) after the file was written and
    before the key was settled: retries heard "busy" for 120 s, then wrote `_2.md`. The retry now finds the
    note the first learn wrote, at once."""
    import subprocess
    import sys

    from oracle_server.services.capabilities.learn import learn
    from oracle_server.services.vocabulary.models import LearnRequest

    root = tmp_path / "root"
    write(root / "learnings/2026-01-01_plain.md", FAR["learnings/2026-01-03_plain.md"])
    overrides = store_overrides(store)
    request = {"pattern": "Balance the okapi ledger before the night run.", "title": "Okapi ledger rule",
               "idempotency_key": "crash-key-0001"}
    script = KILLED_MID_LEARN.format(tests=str(Path(__file__).resolve().parents[1]), root=str(root),
                                     data=str(tmp_path / "data"), overrides=overrides, request=request)
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert child.returncode == -9, (child.returncode, child.stdout, child.stderr[-2000:])
    written = sorted(p.name for p in (root / "learnings").glob("*okapi-ledger-rule*.md"))
    assert len(written) == 1, written
    oracle = make_oracle(root, tmp_path / "data", **overrides)
    assert oracle.logs.claim_learn_key("crash-key-0001", "x")[0] == "other"  # claimed, never settled: the crash
    first = learn(oracle, LearnRequest(**request))
    again = learn(oracle, LearnRequest(**request))
    assert first.replayed and again.replayed and first.file == again.file == f"learnings/{written[0]}"
    assert first.chunk_ids and first.title == "Okapi ledger rule"
    assert sorted(p.name for p in (root / "learnings").glob("*okapi-ledger-rule*.md")) == written  # no _2.md


# -- 4. the PostgreSQL writer lock: a bounded wait, a clear refusal, a stuck holder's lock reclaimed ----------
def test_a_learn_waits_a_bounded_time_for_a_held_writer_lock_then_says_who_holds_it_and_writes_nothing(
        tmp_path: Path, make_oracle) -> None:
    """Issue 39: while any session held pg_advisory_lock('oracle:writer') (a frozen engine), every learn on every
    engine blocked without limit. Here a plain session holds it (one that will never let go) and the learn,
    given a 2 s wait, is refused with who holds it since when; nothing is written."""
    import threading

    import psycopg

    import _pg
    from oracle_indexer.store.pg.schema import WRITER_LOCK
    from oracle_server.services.vocabulary.errors import classify
    from oracle_server.services.capabilities.learn import learn
    from oracle_server.services.vocabulary.models import LearnRequest

    root = tmp_path / "root"
    write(root / "learnings/2026-01-01_plain.md", FAR["learnings/2026-01-03_plain.md"])
    url = _pg.new_database()
    oracle = make_oracle(root, tmp_path / "data", database_url=url)
    oracle.indexer.sync(vectors=False)
    oracle.indexer.lock.wait = 2.0
    holder = psycopg.connect(url, autocommit=True, application_name="frozen-engine")
    holder.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [WRITER_LOCK])
    outcome: dict = {}

    def attempt() -> None:
        try:
            outcome["result"] = learn(oracle, LearnRequest(pattern="Okapis keep the ledger.", title="Okapi keeper"))
        except Exception as exc:  # noqa: BLE001 - the outcome is asserted below
            outcome["error"] = exc

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(120)  # a ceiling that only catches the hang; the wait asked for is 2 s
    hung = worker.is_alive()
    holder.close()  # lets a hung learn go on, so the test ends either way
    worker.join(120)
    assert not hung, "the learn waited for the writer lock without limit"
    error = outcome.get("error")
    assert error is not None, outcome
    message = str(error)
    assert "holds the writer lock since" in message and "frozen-engine" in message and "retry" in message, message
    mapped = classify(error)
    assert mapped is not None and mapped.kind == "unavailable"
    assert not list((root / "learnings").glob("*okapi-keeper*"))  # nothing written


STOPPED_HOLDER = """
import os, signal, sys
from oracle_indexer.store.pg.store import PgWriterLock
lock = PgWriterLock({url!r}, stuck_after={stuck!r})
with lock:
    print("holding", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)  # frozen with the lock held, as a suspended engine
print("lost" if lock.lost else "kept", flush=True)
"""


@pytest.mark.slow  # a real second process
def test_a_stopped_engines_writer_lock_is_reclaimed_and_a_killed_ones_at_once(tmp_path: Path) -> None:
    """A frozen holder (SIGSTOP: its connection stays open) stops its heartbeat, and PostgreSQL ends its session
    after `stuck_after` idle seconds (idle_session_timeout), which frees the lock; a killed holder's session ends
    with its socket. Measured here with stuck_after = 3 s (the default is STUCK_SECONDS)."""
    import signal
    import subprocess
    import sys
    import time

    import _pg
    from oracle_indexer.store.pg.store import PgWriterLock

    url = _pg.new_database()
    figures = {}
    for how in ("stopped", "killed"):
        child = subprocess.Popen([sys.executable, "-c", STOPPED_HOLDER.format(url=url, stuck=3.0)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "holding"
            deadline = time.monotonic() + 60
            while child.poll() is None and not _stopped(child.pid):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            frozen = time.monotonic()
            if how == "killed":
                child.kill()
            with PgWriterLock(url, wait=120) as lock:  # a ceiling that only catches a lock never reclaimed
                figures[how] = time.monotonic() - frozen
                assert not lock.lost
            if how == "stopped":
                child.send_signal(signal.SIGCONT)
                out, err = child.communicate(timeout=60)
                assert out.split()[-1] == "lost", (out, err)  # it knows it lost the lock while frozen
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    print(f"writer lock reclaimed after: stopped holder {figures['stopped']:.1f} s (stuck_after 3 s),"
          f" killed holder {figures['killed']:.2f} s")
    assert figures["stopped"] >= 2.0  # not taken from a live holder before its heartbeat could have lapsed


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "T"
