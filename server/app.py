"""The Oracle context: settings plus the store, vector store, embedder and indexer they open.

Every adapter (CLI, MCP, HTTP) builds one of these and passes it to the service functions; nothing
else holds connections. Heavy parts (the ONNX model, chromadb) load on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexer.config import Settings
from indexer.embed import Embedder
from indexer.store import Store
from indexer.sync import Indexer
from indexer.vectors import VectorStore


@dataclass
class Oracle:
    settings: Settings
    store: Store
    vectors: VectorStore
    embedder: Embedder
    indexer: Indexer

    @classmethod
    def open(cls, settings: Settings | None = None) -> "Oracle":
        settings = settings or Settings.from_env()
        store = Store(settings.db_path)
        vectors = VectorStore(settings.chroma_path, settings.chroma_url)
        embedder = Embedder()
        indexer = Indexer(settings, store=store, vectors=vectors, embedder=embedder)
        return cls(settings, store, vectors, embedder, indexer)

    def close(self) -> None:
        self.store.close()
