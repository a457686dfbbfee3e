"""The vector side of the index: one ChromaDB collection with cosine distance.

Embedded (PersistentClient under the data directory) by default; a Chroma server when
ORACLE_CHROMA_URL is set. chromadb is imported on first use because the import alone takes about a
second, which start-up and unchanged re-index runs should not pay. Every failure surfaces as
VectorStoreUnavailable so that callers can fall back to keyword search with a warning.

A store that fails is not given up on, and no one has to restart anything: a failed read (or a server
that cannot be reached) marks the store `down`, so that later searches fail at once instead of each
waiting on a dead server, and any failure marks it `needs_repair` (writes may be missing). The store only
reports this health; it runs no thread and calls no one. The owner's maintenance worker
(indexer/worker/maintenance.py) probes a store that is down every RETRY_SECONDS (`reopen`), repairs it once it
answers (inside `repairing()`, which lets the repair's own calls through while searches still fail fast),
then calls `resume()` and `repaired()`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:  # numpy is imported by whoever makes the vectors
    import numpy as np
    from chromadb.api import ClientAPI, Collection

from oracle_indexer.config import EMBEDDED_COLLECTION as COLLECTION  # the default; see Settings.collection
from oracle_indexer.safe_write import PRIVATE, private_dir, write_atomic
from oracle_indexer.store.errors import VectorStoreUnavailable
from oracle_indexer.store.timing import RETRY_SECONDS
from oracle_indexer.store.types import VectorHit

UPSERT_BATCH = 2000
SERVER_UPSERT_BATCH = 500  # ~0.3 s per request to a local server: well inside REQUEST_TIMEOUT
# HNSW search breadth, well above the largest candidate pool asked for: at the default (100) the pool of
# 100 is approximate and differs between two builds of the same files, which breaks determinism.
EF_SEARCH = 1000
# A Chroma server that stops answering (frozen, overloaded, a network partition) costs one request this
# long at most; the store is then marked down and later searches do not wait at all. A server that is
# simply gone refuses the connection in about a millisecond.
CONNECT_TIMEOUT = 2.0
REQUEST_TIMEOUT = 5.0
PROBE_TIMEOUT = 1.0  # the heartbeat before a client is built


# chromadb caches one client System per path per process and hands it back to every later PersistentClient on
# that path. This records, per path, the generation stamp that cached System has seen (read when it was opened,
# or written by this process), so a new VectorStore opened after another process wrote drops it and reads the
# files again instead of querying a stale in-memory index.
_SYSTEM_SEEN: dict[str, str] = {}


def _unreachable(exc: BaseException) -> bool:
    """Errors that say the server (or its copy of our collection) is gone, not that one request was bad."""
    import httpx
    from chromadb.errors import NotFoundError

    return isinstance(exc, (httpx.TransportError, NotFoundError))


class StoreHealth:
    """A vector store's failure and repair state, shared by the Chroma store and the PostgreSQL one
    (indexer/store/pg/vectors.py): a failed call marks the store in need of repair, and, when it cannot answer
    reads, down, so that later calls fail fast until the owner's maintenance worker sees it answer again.
    Subclasses say what to check (`_hint`) and what to forget after a failure (`_after_failure`)."""

    def __init__(self) -> None:
        self._state = threading.Lock()
        self._down: str | None = None  # why calls fail fast; None while the store is usable
        self._down_since = 0.0
        self._failures = 0  # counts every failure: a repair clears _needs_repair only if none came meanwhile
        self._needs_repair = False
        self._local = threading.local()  # .repairing: this thread's calls bypass _down (see repairing())

    def _hint(self) -> str:
        raise NotImplementedError

    def _after_failure(self, down: bool) -> None:
        """What the store forgets after a failed call (under the state lock)."""

    def _refuse_if_down(self) -> None:
        """As a call starts: VectorStoreUnavailable when the store is down and this thread is not repairing it."""
        down = self._down
        if down is not None and not getattr(self._local, "repairing", False):
            raise VectorStoreUnavailable(down)

    def _failed(self, message: str, down: bool) -> str:
        """Remember a failure: writes may be missing, so a repair is due; if the store cannot answer
        reads, later calls fail fast until the maintenance worker sees it answer again. Returns the message
        to raise: the cause, and for a store that is down since when, what to check, and that it is retried."""
        with self._state:
            self._failures += 1
            self._needs_repair = True
            if down:
                if self._down is None:
                    self._down_since = time.time()
                since = time.strftime("%H:%M:%S", time.localtime(self._down_since))
                self._down = f"{message} (down since {since}; {self._hint()}; retrying every {RETRY_SECONDS:g} s)"
            self._after_failure(down)
            return self._down or message

    @contextmanager
    def repairing(self) -> Iterator[None]:
        """This thread's calls go through while the store is marked down: the repair must read and write
        a store that searches are still told is unavailable (they would see vectors missing otherwise)."""
        previous = getattr(self._local, "repairing", False)
        self._local.repairing = True
        try:
            yield
        finally:
            self._local.repairing = previous

    def resume(self) -> None:
        """Serve calls again (the store answered and the owner has reconciled it)."""
        with self._state:
            self._down = None

    @property
    def failures(self) -> int:
        """How many calls have failed so far; hand it to `repaired()` to clear `needs_repair` safely."""
        return self._failures

    def repaired(self, failures: int) -> None:
        """A repair that started when `failures` was the count succeeded: clear `needs_repair`, unless a
        call failed meanwhile (then what that call missed is still to put back)."""
        with self._state:
            if self._failures == failures:
                self._needs_repair = False

    @property
    def needs_repair(self) -> bool:
        """A call failed since the last successful repair: vectors may be missing from the store."""
        return self._needs_repair

    @property
    def down(self) -> str | None:
        """Why the store is unavailable right now, or None."""
        return self._down

    def lost_while_closed(self) -> str | None:
        """What a sync must assume this store lost while no Oracle had it open: "all" (every chunk is re-added
        from the embedding cache), "some" (count, and queue again what is missing) or None. None here: the
        PostgreSQL store keeps its vectors in the database with the rest of the index, so nothing is lost on
        its own; the Chroma store says otherwise (`VectorStore.lost_while_closed`)."""
        return None


class VectorStore(StoreHealth):
    def __init__(self, path: Path, url: str | None = None, collection: str = COLLECTION) -> None:
        super().__init__()
        self.path = path
        self.url = url
        self.collection_name = collection
        self._lock = threading.Lock()
        self._client: ClientAPI | None = None
        self._collection: Collection | None = None
        # Embedded Chroma keeps its HNSW index in memory per process: a write by another process is not
        # seen until the collection is reopened. Every write stamps this file; readers compare stamps.
        self._generation_file = path.parent / f"{path.name}.generation"
        self._seen_generation: str | None = None
        self._damaged = False  # the embedded files themselves failed to open (see `damaged`)

    def lost_while_closed(self) -> str | None:
        """The embedded folder deleted: all (re-added from the embedding cache). A Chroma server: some, perhaps
        (it may have been restarted without its data while no Oracle ran). The index sync asks; before, it
        looked at the settings' URLs and folder itself."""
        if self.url is not None:
            return "some"
        return None if self.path.exists() else "all"

    # -- embedded: cross-process freshness ----------------------------------------------------------
    def _read_generation(self) -> str:
        """The last writer's stamp; "" when there is none or it is garbage (a garbage stamp used to raise on
        every call and keep the store down for good: it only means "reopen", and the next write replaces it)."""
        try:
            return self._generation_file.read_text(encoding="ascii")
        except (OSError, ValueError):
            return ""

    def _stamp_generation(self) -> None:
        if self.url:
            return
        token = f"{os.getpid()}-{time.time_ns()}"
        write_atomic(self._generation_file, token, PRIVATE)  # a random temporary name, never a planted link
        self._seen_generation = token
        _SYSTEM_SEEN[str(self.path)] = token  # the process-wide System holds this write

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

    def _forget_embedded_system(self) -> None:
        """chromadb caches one client system per path, and a failed open leaves a broken one behind
        (every later open then fails with an unrelated AttributeError); drop ours so a reopen is real."""
        from chromadb.api.client import SharedSystemClient

        systems = getattr(SharedSystemClient, "_identifier_to_system", None)
        refcounts = getattr(SharedSystemClient, "_identifier_to_refcount", None)
        if isinstance(systems, dict) and isinstance(refcounts, dict):
            systems.pop(str(self.path), None)
            refcounts.pop(str(self.path), None)
        else:
            SharedSystemClient.clear_system_cache()

    # -- opening ------------------------------------------------------------------------------------
    def _server_address(self) -> tuple[str, int, bool]:
        parsed = urlparse(self.url if self.url and "://" in self.url else f"http://{self.url}")
        ssl = parsed.scheme == "https"
        return parsed.hostname or "127.0.0.1", parsed.port or (443 if ssl else 8000), ssl

    def _connect_server(self, settings):
        """An HttpClient whose requests time out. Its constructor already makes requests on a session
        without a timeout, so a heartbeat with one goes first: a frozen server fails here, quickly."""
        import chromadb
        import httpx

        host, port, ssl = self._server_address()
        base = f"{'https' if ssl else 'http'}://{host}:{port}"
        httpx.get(f"{base}/api/v2/heartbeat", timeout=PROBE_TIMEOUT).raise_for_status()
        client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
        # chromadb 1.x offers no timeout setting; its HTTP session is the documented httpx.Client.
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            session.timeout = httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT)
        return client

    @property
    def opened(self) -> bool:
        """The collection is open (chromadb imported, its client made): the first write or query after start
        pays for both, 10+ s on a busy 2-core machine (benchmarks/first_calls.py)."""
        return self._collection is not None

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

                if self._client is None:
                    settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
                    if self.url:
                        self._client = self._connect_server(settings)
                    else:
                        private_dir(self.path)  # Chroma's files are 0644: the folders around them are not
                        if _SYSTEM_SEEN.get(str(self.path)) != generation:
                            self._forget_embedded_system()  # a cached System from before another process wrote
                        self._client = chromadb.PersistentClient(path=str(self.path), settings=settings)
                        _SYSTEM_SEEN[str(self.path)] = generation
                collection = self._client.get_or_create_collection(
                    self.collection_name, configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}},
                    embedding_function=None,
                )
            except Exception as exc:
                why = _describe(exc)
                if not self.url:
                    self._client = None
                    self._forget_embedded_system()
                    plain = self._diagnose_path()
                    self._damaged = not plain and any(w in why.lower() for w in _DAMAGE_WORDS)
                    why = f"{plain}{why}"
                raise VectorStoreUnavailable(f"vector store unavailable ({self._where()}): {why}") from exc
            self._collection = collection
            self._seen_generation = generation
            self._damaged = False
            return collection

    def _diagnose_path(self) -> str:
        """What is wrong with the embedded folder in plain words, when the cause is visible from here
        (Chroma's own messages, such as SQLite's "unable to open database file", do not say)."""
        try:
            if self.path.exists() and not self.path.is_dir():
                return "a file is where the folder should be; "
            if self.path.is_dir() and not os.access(self.path, os.R_OK | os.W_OK | os.X_OK):
                return "permission denied: this user cannot read and write the folder; "
        except OSError as exc:
            return f"{exc.strerror}; "
        return ""

    def _where(self) -> str:
        return self.url or str(self.path)

    def _hint(self) -> str:
        if self.url:
            return f"is the Chroma server at {self.url} running? (ORACLE_CHROMA_URL)"
        return (f"check that {self.path} is a folder this user can read and write, or move it aside to have"
                " it rebuilt from the embedding cache")

    # -- calls, failures and recovery -----------------------------------------------------------------
    def _call(self, what: str, fn, read: bool = False):
        self._refuse_if_down()
        try:
            return fn(self._open())
        except VectorStoreUnavailable as exc:  # the open failed
            raise VectorStoreUnavailable(self._failed(str(exc), down=True)) from exc
        except Exception as exc:
            message = f"vector store {what} failed ({self._where()}): {_describe(exc)}"
            raise VectorStoreUnavailable(self._failed(message, down=read or _unreachable(exc))) from exc

    def _after_failure(self, down: bool) -> None:
        if down:
            self._collection = None  # reopen: a restarted server may hold a new collection, or none

    def reopen(self) -> None:
        """A real round trip on a freshly opened collection, made even while the store is down: the
        maintenance worker's probe. Raises VectorStoreUnavailable; does not clear `down` (resume does)."""
        with self._lock:
            self._collection = None
            if not self.url:
                self._client = None
                self._forget_embedded_system()
        with self.repairing():
            self.count()

    def close(self) -> None:
        """Nothing runs here: the store has no thread of its own. Kept so owners close what they open."""

    # -- the operations ---------------------------------------------------------------------------------
    def upsert(self, ids: Sequence[str], vectors: np.ndarray, metadatas: Sequence[dict]) -> None:
        batch = SERVER_UPSERT_BATCH if self.url else UPSERT_BATCH
        for start in range(0, len(ids), batch):
            end = start + batch
            self._call(
                "upsert",
                lambda c: c.upsert(
                    ids=list(ids[start:end]), embeddings=vectors[start:end], metadatas=list(metadatas[start:end])
                ),
            )
        self._stamp_generation()

    def delete(self, ids: Sequence[str]) -> None:
        batch = SERVER_UPSERT_BATCH if self.url else UPSERT_BATCH
        for start in range(0, len(ids), batch):
            part = list(ids[start : start + batch])
            self._call("delete", lambda c: c.delete(ids=part))
        self._stamp_generation()

    def count(self) -> int:
        return int(self._call("count", lambda c: c.count(), read=True))

    def all_ids(self) -> set[str]:
        return set(self._call("listing", lambda c: c.get(include=[])["ids"], read=True))

    def query(self, vector: np.ndarray, n: int, where: dict | None = None) -> list[VectorHit]:
        # Chroma returns fewer results when the collection holds fewer than n (none when empty).
        result = self._call(
            "query",
            lambda c: c.query(query_embeddings=[vector], n_results=n, where=where or None, include=["distances"]),
            read=True,
        )
        ids = result["ids"][0]
        distances = result["distances"][0]
        return [VectorHit(id=i, similarity=1.0 - float(d)) for i, d in zip(ids, distances)]

    def reset(self) -> None:
        """Drop and recreate the collection (for --full)."""
        def drop(collection):
            assert self._client is not None
            self._client.delete_collection(self.collection_name)

        self._call("reset", drop)
        self._collection = None
        self._call("reset", lambda c: None)
        self._stamp_generation()

    def self_check(self, samples: Sequence[tuple[str, np.ndarray]]) -> str | None:
        """Why the store is not healthy although it answers, or None: each sampled stored vector must find
        itself (a vector this close, similarity >= SELF_MATCH). A store whose segment files went missing
        or were damaged still counts its vectors from its metadata, and then answered queries with
        irrelevant hits while stats said ok."""
        for chunk_id, vector in samples:
            hits = self.query(vector, SELF_CHECK_NEIGHBOURS)  # several: an approximate index may rank it second
            if not hits or hits[0].similarity < SELF_MATCH:
                found = f"its nearest is at similarity {hits[0].similarity:.2f}" if hits else "it finds nothing"
                return (f"the vector store does not find its own vectors (chunk {chunk_id}: {found}): its index files"
                        " are missing or damaged")
        return None

    def move_aside(self) -> Path | None:
        """Move the embedded store's folder aside (kept for inspection) so that a fresh one is rebuilt from the
        embedding cache; None for a Chroma server, whose files are not ours to move."""
        if self.url:
            return None
        with self._lock:
            self._client = None
            self._collection = None
            self._forget_embedded_system()
            target = self.path.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
            if self.path.exists():
                self.path.rename(target)
            self._generation_file.unlink(missing_ok=True)
            self._seen_generation = None
        return target

    @property
    def damaged(self) -> bool:
        """The embedded store failed to open with its own files at fault (not permissions, not a file in the
        folder's place): moving it aside and rebuilding it is the repair."""
        return self._damaged

    def probe(self) -> tuple[bool, str]:
        """A real round trip, for health reports: (ok, detail)."""
        try:
            return True, f"{self.count()} vectors"
        except VectorStoreUnavailable as exc:
            return False, str(exc)


SELF_MATCH = 0.99  # a stored vector queried against its store finds itself (cosine similarity ~1)
SELF_CHECK_NEIGHBOURS = 10
# Chroma's words for its own files being unreadable as what they should be (SQLite metadata, HNSW segments).
_DAMAGE_WORDS = ("database error", "not a database", "malformed", "corrupt", "disk image", "no such table",
                 "hnsw", "segment", "unpickl", "invalid load key")


def _describe(exc: BaseException) -> str:
    """The cause in a few words: chromadb's own connection error is a ValueError that hides its cause."""
    text = str(exc).strip() or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and "Could not connect" in text:
        text = f"{text} ({cause})"
    return text
