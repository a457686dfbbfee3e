"""The Oracle context: settings plus the store, vector store, embedder and indexer they open.

Every adapter (CLI, MCP, HTTP) builds one of these and passes it to the service functions; nothing
else holds connections. Heavy parts (the ONNX model, chromadb) load on first use.

Lifecycle, the same for every adapter and test: `Oracle.open()` opens the stores (nothing runs in the
background); `start(watch=...)` starts the one maintenance worker (indexer/worker/maintenance.py: initial sync,
usage-log writes, file events, vector-store health and repair, model warm-up, sweep, vector backlog);
`close()` stops and joins that worker, then closes the stores, so no background work ever meets a closed
database. A one-shot CLI command opens and closes without starting.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

from oracle_indexer.config import ConfigReload, Settings
from oracle_indexer.models.embed import Embedder
from oracle_indexer.worker.maintenance import SWEEP_SECONDS, Maintenance, Reporter
from oracle_indexer.models.rerank import CrossEncoder
from oracle_indexer.safe_write import private_dir
from oracle_indexer.store.protocols import IndexStore, UsageLogs, VectorIndex
from oracle_indexer.worker.sync import Indexer
from oracle_server.services.errors import ServiceError
from oracle_server.services.offline import TeamLink
from oracle_server.services.parts import Parts, offline_settings, open_parts

READY_TIMEOUT = 120.0


class ServerConfigError(ServiceError, RuntimeError):
    """The server would start in an unsafe or impossible configuration; the message says how to fix it."""


@dataclass
class Oracle:
    settings: Settings
    store: IndexStore
    vectors: VectorIndex
    embedder: Embedder
    indexer: Indexer
    logs: UsageLogs
    # Cleared while the worker's initial sync builds the keyword index; requests wait for it so that
    # the first search on a fresh index is not silently empty.
    ready: threading.Event = field(default_factory=threading.Event)
    maintenance: Maintenance | None = None  # the worker, between start() and close()
    # How this Oracle is being served, for oracle_stats (server/services/stats.py `Serving`): a shared engine
    # (server/engine/process.py) updates its session count; a stdio session that lost its engine says why it runs alone.
    serving: dict = field(default_factory=lambda: {"mode": "in-process", "detail": "this process"})
    reranker: CrossEncoder | None = None  # [rerank] in oracle.toml (indexer/models/rerank.py); None: fused order only
    # Values the services derive from the index and keep while it is unchanged (server/services/guide.py's profile)
    memo: dict = field(default_factory=dict)
    # The last re-read of oracle.toml while this Oracle ran (the watcher saw the file change), and when (unix time):
    # what was taken up, what waits for a restart (oracle_stats `config`); None: unchanged since start.
    config_reload: ConfigReload | None = None
    config_reload_at: float | None = None
    # With the team store in a server or an engine: serves the working copy while the database cannot be reached
    # (server/services/offline.py); None otherwise
    link: TeamLink | None = None
    started: dict = field(default_factory=dict)  # start()'s arguments: the worker is started again after a switch

    def __post_init__(self) -> None:
        self.ready.set()

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        self.ready.wait(timeout)

    @classmethod
    def open(cls, settings: Settings | None = None, *, check: bool = True, offline_ok: bool = False) -> "Oracle":
        """`check=False` (a server) leaves the index's integrity check (it reads the whole file: Store.verify)
        and the usage logs' retention to the maintenance worker, after the handshake. `offline_ok` (a server or
        an engine with the team store): a database that cannot be reached does not stop it; it serves its working
        copy instead (server/services/offline.py) and goes back to the database once it answers."""
        settings = settings or Settings.from_env()
        # 0700; an existing data dir of Oracle's (an index, or only the tokens `oracle token add` wrote) narrowed
        private_dir(settings.data_dir, narrow=any(p.exists() for p in (
            settings.db_path, settings.data_dir / "tokens.json", settings.data_dir / "writer.lock")))
        embedder = Embedder(settings.embedding)
        down: str | None = None
        try:
            parts = open_parts(settings, embedder, check=check)
        except Exception as exc:
            if not (offline_ok and settings.database_url and _unreachable(exc)):
                raise
            down = str(exc)
            parts = open_parts(offline_settings(settings), embedder, check=check)
        spec = settings.rerank
        oracle = cls(settings, parts.store, parts.vectors, embedder, parts.indexer, parts.logs,
                     reranker=CrossEncoder(spec) if spec else None)
        if settings.database_url and offline_ok:
            oracle.link = TeamLink(oracle, offline_since=down)
        return oracle

    @property
    def parts(self) -> Parts:
        """The store, vectors, logs and indexer this Oracle serves from now."""
        return Parts(self.store, self.vectors, self.logs, self.indexer)

    def serve_from(self, parts: Parts) -> None:
        """Serve from `parts` from now on (the team store, or the working copy's own index in an outage). The
        caller has stopped the worker; what the services derived from the old index is dropped."""
        self.store, self.vectors, self.logs, self.indexer = parts.store, parts.vectors, parts.logs, parts.indexer
        self.memo.clear()

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
        if self.link is not None:
            self.link.start()
        return self

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
        if self.link is not None:
            self.link.stop()  # first: it may be switching stores
        self.stop(abandon_loads)  # then the worker: it writes into every store below
        if self.link is not None:
            self.link.close_idle()
        self.parts.close()


def _unreachable(exc: BaseException) -> bool:
    """The team database cannot be reached (not a wrong URL or a missing package: those must stop the server)."""
    from oracle_indexer.store.pg.db import DatabaseUnavailable

    return isinstance(exc, DatabaseUnavailable) and ("cannot connect" in str(exc) or "cannot be reached" in str(exc))
