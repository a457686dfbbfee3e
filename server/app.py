"""The Oracle context: settings plus the store, vector store, embedder and indexer they open.

Every adapter (CLI, MCP, HTTP) builds one of these and passes it to the service functions; nothing
else holds connections. Heavy parts (the ONNX model, chromadb) load on first use.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from indexer.config import Settings
from indexer.embed import Embedder
from indexer.store import Store
from indexer.sync import Indexer
from indexer.vectors import VectorStore
from server.logs import Logs

READY_TIMEOUT = 120.0


class ServerConfigError(RuntimeError):
    """The server would start in an unsafe or impossible configuration; the message says how to fix it."""


@dataclass
class Oracle:
    settings: Settings
    store: Store
    vectors: VectorStore
    embedder: Embedder
    indexer: Indexer
    logs: Logs
    # Cleared while a server's start-up sync builds the keyword index; requests wait for it so that
    # the first search on a fresh index is not silently empty.
    ready: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.ready.set()

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        self.ready.wait(timeout)

    @classmethod
    def open(cls, settings: Settings | None = None) -> "Oracle":
        settings = settings or Settings.from_env()
        store = Store(settings.db_path)
        vectors = VectorStore(settings.chroma_path, settings.chroma_url, settings.collection)
        embedder = Embedder()
        indexer = Indexer(settings, store=store, vectors=vectors, embedder=embedder)
        logs = Logs(settings.data_dir / "logs.db", settings.log_retention_days, settings.log_max_rows)
        return cls(settings, store, vectors, embedder, indexer, logs)

    def close(self) -> None:
        self.vectors.close()  # first: its recovery thread writes into the store
        self.indexer.multilingual.close()
        self.store.close()
        self.logs.close()
