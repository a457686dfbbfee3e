"""Progress of an index run, phase by phase (files checked, keyword index, vectors), with counts and an ETA.

A first index of a big vault takes minutes (the Obsidian help vault: 23), and it was silent whenever the output
was not a terminal (a log, `make run` under a supervisor, CI), and in a terminal only the vector phase had a
bar. `Progress` is the one reporter `Indexer.sync` calls as `progress(phase, done, total)`:

- on a terminal, one bar redrawn in place (at most every REDRAW seconds), ended by a newline when the phase
  is done;
- anywhere else, one plain line every `every` seconds (PLAIN_EVERY) while a phase runs, and its last line
  once a line of that phase was printed: a run that is over in a few seconds prints nothing, a 20-minute run
  prints a line every few seconds that a log keeps.

The ETA is the phase's own rate so far (done / elapsed) applied to what is left.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

PLAIN_EVERY = 5.0  # seconds between two plain lines of one phase
REDRAW = 0.1  # seconds between two redraws of a terminal bar
BAR_AFTER = 0.5  # a terminal bar appears once a phase has run this long (a quick run draws nothing)
LABELS = {"files": ("checking files", "files"), "keyword": ("keyword index", "files"), "vectors": ("vectors", "chunks")}


def duration(seconds: float) -> str:
    """`42 s`, `3 min 05 s`, `1 h 02 min`: an ETA a person reads at a glance."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """`progress(phase, done, total)` for `Indexer.sync`; see the module docstring for what it prints."""

    def __init__(
        self,
        stream: TextIO | None = None,
        interactive: bool | None = None,
        every: float = PLAIN_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.every = every
        self.clock = clock
        self._phase: str | None = None
        self._started = 0.0
        self._last = 0.0  # when the last line (or redraw) of this phase was written
        self._shown = False  # has this phase written anything yet

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = self.clock()
        if phase != self._phase:
            self._phase, self._started, self._last, self._shown = phase, now, now, False
        finished = done >= total
        if self.interactive:
            if (now - self._started >= BAR_AFTER and now - self._last >= REDRAW) or (finished and self._shown):
                self._write("\r" + self.line(phase, done, total, now, bar=True) + ("\n" if finished else ""))
        elif now - self._last >= self.every or (finished and self._shown):
            self._write(self.line(phase, done, total, now) + "\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        self._last, self._shown = self.clock(), True

    def line(self, phase: str, done: int, total: int, now: float, bar: bool = False) -> str:
        """`keyword index [######......] 1,234/5,000 files, 25%, 310/s, ETA 12 s` (the bar on a terminal)."""
        label, unit = LABELS.get(phase, (phase, "items"))
        share = done / total if total else 1.0
        elapsed = max(now - self._started, 1e-9)
        rate = done / elapsed
        if done >= total:
            tail = f"done in {duration(elapsed)}"
        elif done and rate > 0:
            tail = f"{rate:,.0f}/s, ETA {duration((total - done) / rate)}"
        else:
            tail = "ETA unknown yet"
        width = 24
        drawn = f" [{'#' * int(width * share)}{'.' * (width - int(width * share))}]" if bar else ""
        text = f"{label:>14}{drawn} {done:,}/{total:,} {unit}, {share:.0%}, {tail}"
        return text if bar else f"oracle index: {text.strip()}"
