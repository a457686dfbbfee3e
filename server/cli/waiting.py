"""What a one-shot command working in this process is waiting for, said on stderr (issue 40).

With no server running, `oracle search` or `oracle list` opens the index and may load the embedding model (seconds
on a cold machine), and `oracle index` may embed hundreds of sections: silent, that looked like a hang. `Waiting`
keeps the current stage ("opening the index", "loading the embedding model", "indexing 57 files") and prints it
once the command has waited DELAY seconds, then each new stage as it begins; a command that is done sooner prints
nothing. Only the standard library and the embedder's hook (oracle_indexer.models.embed.LOADING) are used.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

DELAY = 0.5  # seconds of waiting before the first line


class Waiting:
    def __init__(self, first: str, stream: TextIO | None = None, delay: float = DELAY) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.stage = first
        self.shown = False
        self.over = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(delay, self._show)
        self.timer.daemon = True

    def __enter__(self) -> Waiting:
        from oracle_indexer.models import embed

        embed.LOADING.append(self.loading)
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        from oracle_indexer.models import embed

        with self.lock:
            self.over = True
        self.timer.cancel()
        if self.loading in embed.LOADING:
            embed.LOADING.remove(self.loading)

    def _show(self) -> None:
        with self.lock:
            if not self.over and not self.shown:
                self.shown = True
                self._write(self.stage)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(f"oracle: {text}…\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def set(self, stage: str) -> None:
        """The command now waits for `stage`: said at once when the first line is out, else kept for it."""
        with self.lock:
            if stage == self.stage or self.over:
                return
            self.stage = stage
            if self.shown:
                self._write(stage)

    def loading(self, model: str) -> None:
        self.set(f"loading the embedding model ({model})")

    def progress(self, phase: str, done: int, total: int) -> None:
        """`Indexer.sync`'s progress hook: the indexing stage with its size."""
        if phase in ("keyword", "vectors") and total and (done < total or phase == "keyword"):
            self.set(f"indexing {total:,} {'files' if phase == 'keyword' else 'sections (embedding them)'}")
