"""What changed in the index since it was last looked at: the notes added, changed or removed and the sections
whose text changed, appeared or vanished. The MCP adapter announces them (server/mcp/notify.py); this half reads
the store and knows no protocol.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oracle_server.services.runtime.app import Oracle

log = logging.getLogger("oracle.notify")


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)  # section ids whose text changed, appeared or vanished

    @property
    def notes(self) -> list[str]:
        return sorted({*self.added, *self.changed, *self.removed})

    @property
    def list_changed(self) -> bool:
        return bool(self.added or self.removed)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.chunks)


class ChangeFeed:
    """The index's notes and sections as last seen, and the diff against the index now."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self._lock = threading.Lock()
        self._files: dict[str, str] | None = None  # path -> file sha256
        self._chunks: dict[str, dict[str, str]] = {}  # path -> {chunk id: content hash}
        self._fingerprint: tuple | None = None
        self._listeners: list[Callable[[Changes], None]] = []

    def subscribe(self, listener: Callable[[Changes], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _read_lock(self) -> Any:
        """This process's write lock: never read a note's rows halfway through their replacement."""
        return getattr(self.oracle.store, "_write_lock", contextlib.nullcontext())

    def _fingerprint_now(self) -> tuple:
        return self.oracle.store.change_fingerprint()

    def _chunks_of(self, paths: list[str] | None) -> dict[str, dict[str, str]]:
        return self.oracle.store.section_hashes(paths)

    def prime(self) -> None:
        """Take the first snapshot (everything indexed now counts as already announced)."""
        with self._lock:
            self._prime()

    def _prime(self) -> None:
        with self._read_lock():
            self._fingerprint = self._fingerprint_now()
            self._files = {p: s.file_hash for p, s in self.oracle.store.file_states().items()}
            self._chunks = self._chunks_of(None)

    def check(self) -> Changes:
        """Diff the index against the snapshot, move the snapshot on, and tell the listeners (if anything)."""
        with self._lock:
            if self._files is None:
                self._prime()
                return Changes()
            with self._read_lock():
                fingerprint = self._fingerprint_now()
                files = {p: s.file_hash for p, s in self.oracle.store.file_states().items()}
                old = self._files
                changes = Changes(
                    added=sorted(p for p in files if p not in old),
                    changed=sorted(p for p in files if p in old and files[p] != old[p]),
                    removed=sorted(p for p in old if p not in files),
                )
                fresh = self._chunks_of([*changes.added, *changes.changed])
            for path in changes.notes:
                before, after = self._chunks.get(path, {}), fresh.get(path, {})
                changes.chunks += sorted(c for c in {*before, *after} if before.get(c) != after.get(c))
                if path in fresh:
                    self._chunks[path] = fresh[path]
                else:
                    self._chunks.pop(path, None)
            self._files, self._fingerprint = files, fingerprint
        if changes:
            for listener in list(self._listeners):
                try:
                    listener(changes)
                except Exception:  # one failing listener must not silence the others
                    log.exception("change listener failed")
        return changes

    def changed_since_last(self) -> bool:
        """Cheap: has anything been indexed or removed since the last check? (One aggregate query.)"""
        return self._fingerprint_now() != self._fingerprint
