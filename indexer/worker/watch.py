"""File events for the maintenance worker (indexer/worker/maintenance.py): watchdog, debounced and batched.

Events only say *which paths* to look at; what changed is decided by the same hash comparison as
`oracle index`, through `Indexer.sync_paths`, which the worker calls with each settled batch. So an editor
that saves through a temporary file and a rename, a folder moved in one go, or a `git pull` of 500 files
all end as one batch of re-checked paths, not one re-index per event. The worker's periodic sweep (a
normal incremental sync) catches anything that happened while nobody watched.

This module runs no thread of its own: watchdog's observer thread only records paths here (`_Collector`),
and the worker takes them.
"""

from __future__ import annotations

import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from oracle_indexer.notes.discover import MARKDOWN_SUFFIXES, is_ignored_name, is_within
from oracle_indexer.rootconfig import CONFIG_NAME
from oracle_indexer.worker.sync import Indexer, SyncReport

DEBOUNCE_SECONDS = 0.3  # quiet time before a batch is processed
MAX_DELAY_SECONDS = 2.0  # a steady stream of events still gets processed this often
SWEEP_SECONDS = 300.0
# Called after every batch or sweep any maintenance worker in this process indexed, with its indexer and report (the MCP
# server's change notifications listen here). A listener must be quick and must not raise.
BatchListener = Callable[[Indexer, SyncReport], None]
_batch_listeners: list[BatchListener] = []


def add_batch_listener(listener: BatchListener) -> Callable[[], None]:
    """Be told of every indexed batch; returns the function that stops it."""
    _batch_listeners.append(listener)
    return lambda: _batch_listeners.remove(listener) if listener in _batch_listeners else None


class _Collector(FileSystemEventHandler):
    """Gathers the paths that events mention; directories are expanded when the batch is taken."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.paths: set[str] = set()
        self.dirs: set[str] = set()
        self.first_at: float | None = None
        self.last_at = 0.0
        self.config = False  # the root's oracle.toml was written, moved or deleted since the last batch
        self.config_settled = False  # ... and the batch that saw it was taken

    def _relative(self, raw: str | bytes) -> str | None:
        path = Path(raw.decode() if isinstance(raw, bytes) else raw)
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return None
        if rel in ("", ".") or any(is_ignored_name(part) for part in rel.split("/")):
            return None
        return unicodedata.normalize("NFC", rel)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type in ("modified", "closed"):
            return  # a folder's mtime moves whenever a file in it changes; the file's own event says which
        candidates = [event.src_path] + ([event.dest_path] if getattr(event, "dest_path", None) else [])
        with self.lock:
            for raw in candidates:
                rel = self._relative(raw)
                if rel is None:
                    continue
                if event.is_directory:
                    self.dirs.add(rel)
                elif rel == CONFIG_NAME:
                    self.config = True
                elif rel.lower().endswith(MARKDOWN_SUFFIXES):
                    self.paths.add(rel)
            now = time.monotonic()
            self.first_at = self.first_at or now
            self.last_at = now
        self.wake.set()

    def requeue(self, paths: set[str], dirs: set[str]) -> None:
        """Put a failed batch back; it is retried after the next quiet period."""
        with self.lock:
            self.paths |= paths
            self.dirs |= dirs
            now = time.monotonic()
            self.first_at = self.first_at or now
            self.last_at = now

    def has_pending(self) -> bool:
        """Events are waiting: background vector work should make way for them."""
        with self.lock:
            return self.first_at is not None

    def take_when_settled(self) -> tuple[set[str], set[str]] | None:
        """The batch, once events have paused for DEBOUNCE_SECONDS (or waited MAX_DELAY_SECONDS)."""
        with self.lock:
            if self.first_at is None:
                return None
            now = time.monotonic()
            if now - self.last_at < DEBOUNCE_SECONDS and now - self.first_at < MAX_DELAY_SECONDS:
                return None
            batch = (self.paths, self.dirs)
            self.paths, self.dirs = set(), set()
            self.first_at = None
            self.config_settled, self.config = self.config_settled or self.config, False
            return batch

    def take_config(self) -> bool:
        """True once after a settled batch in which oracle.toml changed."""
        with self.lock:
            changed, self.config_settled = self.config_settled, False
            return changed


class FileEvents:
    """The knowledge root's file events, collected by watchdog's observer thread and taken by the worker."""

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer
        self.root = indexer.settings.root
        self._collector = _Collector(self.root)
        self._observer = Observer()
        self.wake = self._collector.wake  # set by every event: the worker need not sleep a whole tick

    def start(self) -> "FileEvents":
        self._observer.schedule(self._collector, str(self.root), recursive=True)
        self._observer.start()
        return self

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)

    def pending(self) -> bool:
        """Events are waiting: background vector work should make way for them."""
        return self._collector.has_pending()

    def take(self) -> tuple[set[str], set[str]] | None:
        """The (paths, folders) of a batch once events have settled, else None."""
        return self._collector.take_when_settled()

    def requeue(self, batch: tuple[set[str], set[str]]) -> None:
        """Put a failed batch back; it is retried after the next quiet period."""
        self._collector.requeue(*batch)

    def config_changed(self) -> bool:
        """The root's oracle.toml changed (once per settled batch that saw it): the settings are read again."""
        return self._collector.take_config()

    def paths(self, batch: tuple[set[str], set[str]]) -> list[str]:
        """The markdown files a batch stands for."""
        return self._expand(*batch)

    def _expand(self, paths: set[str], dirs: set[str]) -> list[str]:
        """Folders that appeared, vanished or moved stand for every markdown file under them."""
        out = set(paths)
        indexed = self.indexer.store.file_states().keys()
        for rel in dirs:
            prefix = rel.rstrip("/") + "/"
            out.update(p for p in indexed if p.startswith(prefix))
            folder = self.root / rel
            # Not a folder symlink (discover does not follow them either), never one that leads out.
            if folder.is_dir() and not folder.is_symlink() and is_within(folder, self.root):
                for path in folder.rglob("*"):
                    child = path.relative_to(self.root).as_posix()
                    if path.is_file() and child.lower().endswith(MARKDOWN_SUFFIXES) and not any(
                        is_ignored_name(part) for part in child.split("/")
                    ):
                        out.add(unicodedata.normalize("NFC", child))
        return sorted(out)


def announce(indexer: Indexer, report: SyncReport) -> None:
    """Tell the batch listeners (the MCP server's change notifications) that `indexer` indexed a batch."""
    for listener in list(_batch_listeners):
        try:
            listener(indexer, report)
        except Exception as exc:  # a listener's failure must not stop the worker
            print(f"oracle watch: batch listener failed: {type(exc).__name__}: {exc}", file=sys.stderr)
