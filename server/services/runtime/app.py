"""The Oracle context: settings, the embedder, and the one backend it serves from (indexer/serving/).

Every adapter (CLI, MCP, HTTP) builds one of these and passes it to the service functions; nothing
else holds connections. Heavy parts (the ONNX model, chromadb) load on first use. `oracle.store`, `.vectors`,
`.logs` and `.indexer` are the backend's view: a request pinned to one (`pinned`, taken by the registry's call path)
sees the same view from its first store call to its last, whatever the backend switches meanwhile.

Lifecycle, the same for every adapter and test: `Oracle.open()` opens the stores (nothing runs in the
background); `start(watch=...)` starts the one maintenance worker (indexer/worker/maintenance.py: initial sync,
usage-log writes, file events, vector-store health and repair, model warm-up, sweep, vector backlog);
`close()` stops and joins that worker, then closes the stores, so no background work ever meets a closed
database. A one-shot CLI command opens and closes without starting.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from oracle_indexer.config import ConfigReload, Settings
from oracle_indexer.models.embed import Embedder
from oracle_indexer.models.rerank import CrossEncoder
from oracle_indexer.safe_write import private_dir
from oracle_indexer.serving.backend import Backend
from oracle_indexer.serving.choice import open_backend
from oracle_indexer.serving.parts import Parts
from oracle_indexer.store.protocols import IndexStore, UsageLogs, VectorIndex
from oracle_indexer.worker.maintenance import SWEEP_SECONDS, Maintenance, Reporter
from oracle_indexer.worker.sync import Indexer
from oracle_server.services.vocabulary.errors import ServiceError

READY_TIMEOUT = 120.0


class ServerConfigError(ServiceError, RuntimeError):
    """The server would start in an unsafe or impossible configuration; the message says how to fix it."""


# The view a request is pinned to: (the Oracle, its parts). Keyed by the Oracle, since tests and benchmarks hold
# several in one process.
_PINNED: contextvars.ContextVar[tuple[Oracle, Parts] | None] = contextvars.ContextVar("oracle_pinned", default=None)


@dataclass
class Oracle:
    settings: Settings
    backend: Backend
    embedder: Embedder
    # Cleared while the worker's initial sync builds the keyword index; requests wait for it so that
    # the first search on a fresh index is not silently empty.
    ready: threading.Event = field(default_factory=threading.Event)
    maintenance: Maintenance | None = None  # the worker, between start() and close()
    # How this Oracle is being served, for oracle_stats (server/services/capabilities/stats.py `Serving`): a shared
    # engine (server/engine/process.py) updates its session count; a stdio session that lost its engine says why it runs
    # alone.
    serving: dict = field(default_factory=lambda: {"mode": "in-process", "detail": "this process"})
    reranker: CrossEncoder | None = None  # [rerank] in oracle.toml (indexer/models/rerank.py); None: fused order only
    # Values the services derive from the index and keep while it is unchanged (server/services/support/guide.py's
    # profile)
    memo: dict = field(default_factory=dict)
    # The last re-read of oracle.toml while this Oracle ran (the watcher saw the file change), and when (unix time):
    # what was taken up, what waits for a restart (oracle_stats `config`); None: unchanged since start.
    config_reload: ConfigReload | None = None
    config_reload_at: float | None = None
    started: dict = field(default_factory=dict)  # start()'s arguments: the worker is started again after a switch

    def __post_init__(self) -> None:
        self.ready.set()
        self.backend.bind(self)

    # -- the view a request sees ------------------------------------------------------------------------
    def view(self) -> Parts:
        """The parts this request is pinned to, else what the backend serves now."""
        pinned = _PINNED.get()
        if pinned is not None and pinned[0] is self:
            return pinned[1]
        return self.backend.view()

    @contextlib.contextmanager
    def pinned(self) -> Iterator[Parts]:
        """Pin the calls made in this block (this thread and what it awaits) to one view of the backend. Nested
        blocks keep the outer view."""
        held = _PINNED.get()
        if held is not None and held[0] is self:
            yield held[1]
            return
        token = _PINNED.set((self, self.backend.view()))
        try:
            yield _PINNED.get()[1]  # type: ignore[index]
        finally:
            _PINNED.reset(token)

    @property
    def store(self) -> IndexStore:
        return self.view().store

    @property
    def vectors(self) -> VectorIndex:
        return self.view().vectors

    @property
    def logs(self) -> UsageLogs:
        return self.view().logs

    @property
    def indexer(self) -> Indexer:
        return self.view().indexer

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        self.ready.wait(timeout)

    @classmethod
    def open(cls, settings: Settings | None = None, *, check: bool = True, offline_ok: bool = False) -> "Oracle":
        """`check=False` (a server) leaves the index's integrity check (it reads the whole file: Store.verify)
        and the usage logs' retention to the maintenance worker, after the handshake. `offline_ok` (a server or
        an engine with the team store): a database that cannot be reached does not stop it; it serves its working
        copy instead (indexer/serving/team.py) and goes back to the database once it answers."""
        settings = settings or Settings.from_env()
        # 0700; an existing data dir of Oracle's (an index, or only the tokens `oracle token add` wrote) narrowed
        private_dir(settings.data_dir, narrow=any(p.exists() for p in (
            settings.db_path, settings.data_dir / "tokens.json", settings.data_dir / "writer.lock")))
        embedder = Embedder(settings.embedding)
        backend = open_backend(settings, embedder, check=check, offline_ok=offline_ok)
        spec = settings.rerank
        return cls(settings, backend, embedder, reranker=CrossEncoder(spec) if spec else None)

    def start(
        self,
        watch: bool = False,
        *,
        sync: bool = True,
        warm_delay: float = 0.0,
        on_batch: Reporter | None = None,
        sweep_seconds: float = SWEEP_SECONDS,
        hold: threading.Event | None = None,
    ) -> "Oracle":
        """Start the maintenance worker: with `sync`, an initial sync first (requests wait for its keyword
        phase through `wait_ready`); with `watch`, file events and the sweep. `warm_delay` holds the model
        warm-up back (a server lets its own start-up finish first); `hold` holds back the integrity check and
        the initial sync until it is set (a stdio server: until the client has its tools). Returns self."""
        if self.maintenance is not None:
            raise RuntimeError("this Oracle is already started")
        self.started = dict(watch=watch, sync=sync, warm_delay=warm_delay, on_batch=on_batch,
                            sweep_seconds=sweep_seconds, hold=hold)
        self.start_worker(**self.started)
        self.backend.start()
        return self

    def restart_worker(self) -> None:
        """The backend switched sides (indexer/serving/team.py): what the services derived from the old side is
        dropped, and the worker starts over the side that serves now, as it was started (its own initial sync)."""
        self.memo.clear()
        started = dict(self.started)
        if started:
            started["hold"] = None  # the handshake it waited for is long over
            self.maintenance = None
            self.start_worker(**started)

    def start_worker(self, *, watch: bool, sync: bool, warm_delay: float, on_batch: Reporter | None,
                     sweep_seconds: float, hold: threading.Event | None) -> None:
        """The maintenance worker over the store this Oracle serves from now (start(); the team link again after
        it switched stores)."""
        if sync:
            self.ready.clear()
        self.maintenance = Maintenance(
            self.indexer, self.logs, watch=watch, sync=sync, on_ready=self.ready.set, on_batch=on_batch,
            sweep_seconds=sweep_seconds, warm_delay=warm_delay, hold=hold, on_config=self._config_reloaded,
        ).start()

    def _config_reloaded(self, outcome: ConfigReload) -> None:
        """From the worker, after it re-read oracle.toml: the services read the indexer's new settings from now on,
        and what they derived from the old ones (the instructions' folders) is derived again."""
        import time

        # the layout and sampling only: in a team store outage the indexer is the working copy's (offline_settings:
        # another data dir, no database), whose other settings are not this Oracle's
        fresh = self.indexer.settings
        self.settings = dataclasses.replace(self.settings, layout=fresh.layout, sampling=fresh.sampling)
        self.memo.clear()
        self.config_reload, self.config_reload_at = outcome, time.time()

    def stop(self, abandon_loads: bool = False) -> None:
        """Stop and join the worker, leaving the stores open (close() does this first). Idempotent.
        `abandon_loads`: see Maintenance.stop (a process that ends right after the close)."""
        worker, self.maintenance = self.maintenance, None
        if worker is not None:
            worker.stop(abandon_loads=abandon_loads)
        self.ready.set()

    def close(self, abandon_loads: bool = False) -> None:
        self.backend.stop()  # first: it may be switching sides
        self.stop(abandon_loads)  # then the worker: it writes into every store below
        self.backend.close()
