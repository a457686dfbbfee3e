"""The vector side of the index: one ChromaDB collection with cosine distance.

Embedded (PersistentClient under the data directory) by default; a Chroma server when
ORACLE_CHROMA_URL is set. chromadb is imported on first use because the import alone takes about a
second, which start-up and unchanged re-index runs should not pay. Every failure surfaces as
VectorStoreUnavailable so that callers can fall back to keyword search with a warning.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

COLLECTION = "oracle_chunks"
UPSERT_BATCH = 2000
# HNSW search breadth, well above the largest candidate pool asked for: at the default (100) the pool of
# 100 is approximate and differs between two builds of the same files, which breaks determinism.
EF_SEARCH = 1000


class VectorStoreUnavailable(RuntimeError):
    """ChromaDB could not be opened or answered with an error."""


@dataclass(frozen=True)
class VectorHit:
    id: str
    similarity: float  # cosine similarity, 1 - cosine distance: higher is better


class VectorStore:
    def __init__(self, path: Path, url: str | None = None) -> None:
        self.path = path
        self.url = url
        self._lock = threading.Lock()
        self._client = None
        self._collection = None
        # Embedded Chroma keeps its HNSW index in memory per process: a write by another process is not
        # seen until the collection is reopened. Every write stamps this file; readers compare stamps.
        self._generation_file = path.parent / f"{path.name}.generation"
        self._seen_generation: str | None = None

    def _read_generation(self) -> str:
        try:
            return self._generation_file.read_text(encoding="ascii")
        except OSError:
            return ""

    def _stamp_generation(self) -> None:
        if self.url:
            return
        token = f"{os.getpid()}-{time.time_ns()}"
        tmp = self._generation_file.with_name(f".{self._generation_file.name}.{os.getpid()}")
        tmp.write_text(token, encoding="ascii")
        os.replace(tmp, self._generation_file)
        self._seen_generation = token

    def _refresh_if_stale(self) -> None:
        """Reopen the embedded store when another process has written to it since we opened it."""
        if self.url or self._collection is None:
            return
        if self._read_generation() != self._seen_generation:
            with self._lock:
                from chromadb.api.client import SharedSystemClient

                SharedSystemClient.clear_system_cache()
                self._client = None
                self._collection = None

    def _open(self):
        self._refresh_if_stale()
        if self._collection is not None:
            return self._collection
        with self._lock:
            if self._collection is not None:
                return self._collection
            generation = self._read_generation()  # before opening: a write landing meanwhile is seen later
            try:
                import chromadb
                from chromadb.config import Settings as ChromaSettings

                settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
                if self.url:
                    parsed = urlparse(self.url if "://" in self.url else f"http://{self.url}")
                    client = chromadb.HttpClient(
                        host=parsed.hostname or "127.0.0.1",
                        port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                        ssl=parsed.scheme == "https",
                        settings=settings,
                    )
                else:
                    self.path.mkdir(parents=True, exist_ok=True)
                    client = chromadb.PersistentClient(path=str(self.path), settings=settings)
                collection = client.get_or_create_collection(
                    COLLECTION, configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}}, embedding_function=None
                )
            except Exception as exc:
                raise VectorStoreUnavailable(f"vector store unavailable ({self._where()}): {exc}") from exc
            self._client = client
            self._collection = collection
            self._seen_generation = generation
            return collection

    def _where(self) -> str:
        return self.url or str(self.path)

    def _call(self, what: str, fn):
        collection = self._open()
        try:
            return fn(collection)
        except Exception as exc:
            if self.url:
                # A server that went away: reconnect on the next call rather than keep a dead client.
                self._collection = None
            raise VectorStoreUnavailable(f"vector store {what} failed ({self._where()}): {exc}") from exc

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, metadatas: Sequence[dict]) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            self._call(
                "upsert",
                lambda c: c.upsert(
                    ids=list(ids[start:end]), embeddings=vectors[start:end], metadatas=list(metadatas[start:end])
                ),
            )
        self._stamp_generation()

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            part = list(ids[start : start + UPSERT_BATCH])
            self._call("delete", lambda c: c.delete(ids=part))
        self._stamp_generation()

    def count(self) -> int:
        return int(self._call("count", lambda c: c.count()))

    def all_ids(self) -> set[str]:
        return set(self._call("listing", lambda c: c.get(include=[])["ids"]))

    def query(self, vector: np.ndarray, n: int, where: dict | None = None) -> list[VectorHit]:
        # Chroma returns fewer results when the collection holds fewer than n (none when empty).
        result = self._call(
            "query",
            lambda c: c.query(query_embeddings=[vector], n_results=n, where=where or None, include=["distances"]),
        )
        ids = result["ids"][0]
        distances = result["distances"][0]
        return [VectorHit(id=i, similarity=1.0 - float(d)) for i, d in zip(ids, distances)]

    def reset(self) -> None:
        """Drop and recreate the collection (for --full)."""
        def drop(collection):
            assert self._client is not None
            self._client.delete_collection(COLLECTION)

        self._call("reset", drop)
        self._collection = None
        self._open()
        self._stamp_generation()

    def probe(self) -> tuple[bool, str]:
        """A real round trip, for health reports: (ok, detail)."""
        try:
            return True, f"{self.count()} vectors"
        except VectorStoreUnavailable as exc:
            return False, str(exc)
