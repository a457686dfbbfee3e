"""Progress of an index run (issue 27 §10): every phase (files, keyword, vectors) reports counts and an ETA, as
a bar on a terminal and as a plain line every few seconds in a log; `last_indexed` is when everything, vectors
included, was done. Real files and a real index; the clock of the reporter is a counter, so timing is exact."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from _corpus import write
from oracle_indexer.progress import Progress, duration
from oracle_indexer.worker.sync import FILE_BATCH, VECTOR_SLICE
from oracle_server.services.capabilities.stats import stats


class Clock:
    """Advances `step` seconds each time it is read: a run of N reports lasts N * step seconds."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def notes(root: Path, n: int) -> None:
    for i in range(n):
        write(root / f"learnings/note-{i:04d}.md", f"# Note {i}\n\n## Body\n\nA puffin counts fish number {i}.\n\n"
              f"## More\n\nThe second section of note {i} about tides.\n")


def test_a_log_gets_a_plain_line_every_few_seconds_for_every_phase_with_an_eta(tmp_path, make_oracle):
    root = tmp_path / "root"
    notes(root, 3 * FILE_BATCH)
    oracle = make_oracle(root, tmp_path / "data")
    out = io.StringIO()
    oracle.indexer.sync(progress=Progress(out, interactive=False, every=5.0, clock=Clock(6.0)))
    lines = out.getvalue().splitlines()
    for phase, unit, total in (("checking files", "files", 3 * FILE_BATCH), ("keyword index", "files", 3 * FILE_BATCH),
                               ("vectors", "chunks", 3 * FILE_BATCH * 2)):
        mine = [line for line in lines if line.startswith(f"oracle index: {phase} ")]
        assert mine, (phase, lines)
        assert any(re.search(rf"\d[\d,]*/{total:,} {unit}, \d+%, [\d,]+/s, ETA \d+ (s|min)", line) for line in mine), mine
        assert mine[-1].startswith(f"oracle index: {phase} {total:,}/{total:,} {unit}, 100%, done in"), mine
    assert "\r" not in out.getvalue()  # no bar in a log


def test_a_quick_run_prints_nothing_in_a_log_and_a_terminal_gets_one_bar_per_phase(tmp_path, make_oracle):
    root = tmp_path / "root"
    notes(root, 2 * FILE_BATCH)
    oracle = make_oracle(root, tmp_path / "data")
    quiet = io.StringIO()
    oracle.indexer.sync(vectors=False, progress=Progress(quiet, interactive=False, every=5.0, clock=Clock(0.001)))
    assert quiet.getvalue() == ""
    write(root / "learnings/note-0000.md", "# Changed\n\nA changed note.\n")
    tty = io.StringIO()
    oracle.indexer.sync(full=True, progress=Progress(tty, interactive=True, clock=Clock(1.0)))
    text = tty.getvalue()
    assert text.count("\n") == 3 and "\r" in text  # one finished bar per phase, redrawn in place before
    assert re.search(r"vectors \[#+\] [\d,]+/[\d,]+ chunks, 100%, done in", text), text


def test_duration_reads_at_a_glance():
    assert [duration(s) for s in (0.4, 42, 185, 3725)] == ["0 s", "42 s", "3 min 05 s", "1 h 02 min"]


def test_last_indexed_is_when_the_vectors_were_done_too(tmp_path, make_oracle):
    """A keyword-only run with vectors pending leaves `last_indexed` unset (stats says never); the vector
    backlog's end sets it; a later run with nothing to do moves it."""
    root = tmp_path / "root"
    notes(root, VECTOR_SLICE)
    oracle = make_oracle(root, tmp_path / "data")
    oracle.indexer.sync(vectors=False)
    assert oracle.store.pending_count() > 0 and stats(oracle).last_indexed is None
    before = time.time()
    oracle.indexer.flush_vectors()
    assert oracle.store.pending_count() == 0
    assert float(oracle.store.get_meta("last_indexed")) >= before and stats(oracle).last_indexed
    first = oracle.store.get_meta("last_indexed")
    time.sleep(0.01)
    oracle.indexer.flush_vectors()  # nothing pending: an idle worker's call does not move it
    assert oracle.store.get_meta("last_indexed") == first
    oracle.indexer.sync()
    assert oracle.store.get_meta("last_indexed") > first
