"""Shared fixtures: real SQLite FTS5, real embedded ChromaDB, the real ONNX embedding model.

Tests come in three tiers (issue 12): `unit/` (in-process, mirrors the modules), `contract/` (the tools
through an in-process MCP client and the HTTP app through Starlette's TestClient) and `system/` (real
subprocesses, the watcher, a Chroma server, Chromium), every one of which is marked `slow` here. Helpers
(`_corpus`, `_procs`, `_mcp`, ...) stay at the top of tests/, importable from every tier. Every test has a
timeout (pytest-timeout: `timeout` in pyproject.toml); system tests get SYSTEM_TIMEOUT unless they set one.

Nothing is mocked. Expensive indexes (anything that embeds the bundled knowledge, ~6 s each on two
cores) are session-scoped and must be treated as read-only by the tests that use them; tests that
mutate an index build their own small one in `tmp_path`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # for `import _corpus` in test modules of every tier
SYSTEM = TESTS / "system"
SYSTEM_TIMEOUT = 900  # seconds; a system test starts processes and may wait on a busy machine

# `make test-fast` runs with `--hypothesis-profile=fast`: property tests draw a tenth of their examples
# (`_hostile.examples`); `make test` runs them all.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("fast", max_examples=10)

from oracle_server.services.runtime.app import Oracle  # noqa: E402

import _corpus  # noqa: E402
import _seed  # noqa: E402
from _corpus import BUNDLED, open_oracle  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _isolated_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No ORACLE_* variable from the developer's shell may leak into a test's Settings, and nothing a test
    starts writes the user's cache folder (the shared MCP handshake cache, server/mcp/stdio_front.py): the
    processes tests start inherit XDG_CACHE_HOME, a temp dir of this session."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("ORACLE_")}
    saved_cache = os.environ.get("XDG_CACHE_HOME")
    saved_runtime = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    # Engines (server/engine/process.py) that a test's `oracle serve` starts live in this session's own runtime folder,
    # never the user's, and are stopped when the session ends.
    runtime = tmp_path_factory.mktemp("xdg-runtime")
    runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    yield
    from _procs import stop_engines

    stop_engines(runtime / "oracle")
    if saved_runtime is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = saved_runtime
    os.environ.update(saved)
    if saved_cache is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = saved_cache


@pytest.fixture(autouse=True, scope="session")
def _model_once() -> Iterator[None]:
    """The real ONNX model (and the multilingual encoder), loaded once per test session and run once per
    distinct text.

    Every Oracle opened in this process (dozens: most modules index a temp root) shares one loaded model,
    and a text the session has embedded before gets the same vector back, as the index's own embedding
    cache gives it across runs. Each data dir still has its own SQLite store, embedding cache and Chroma
    collection; only the model's arithmetic is shared. Processes the tests start load their own model.
    """
    import numpy as np

    from oracle_indexer.models.embed import BATCH_SIZE, Embedder
    from oracle_indexer.models.multilingual import MultilingualEmbedder

    loaded: dict[tuple, tuple] = {}
    memos: dict[tuple, dict[str, np.ndarray]] = {}  # per model and graph (MiniLM's: rewritten or packaged)
    ml_memo: dict[str, np.ndarray] = {}
    real_load, real_embed = Embedder._load, Embedder.embed
    real_ml_embed = MultilingualEmbedder.embed

    def load(self: Embedder) -> None:
        if self._sessions:
            return
        # per model, and the packaged graph stays comparable with the rewritten one (and one question thread with two)
        key = (self.spec, self._workers, self._rewrite, self._query_threads)
        if key not in loaded:
            real_load(self)
            loaded[key] = (self._tokenizer, self._pool, self._sessions, self.graph, self._translate, self._inputs,
                           self._pad_id, self._dimensions)
        (self._tokenizer, self._pool, self._sessions, self.graph, self._translate, self._inputs, self._pad_id,
         self._dimensions) = loaded[key]

    def embed(self: Embedder, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        memo = memos.setdefault((self.spec, self._rewrite), {})
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            memo.update(zip(missing, real_embed(self, missing, batch_size)))
        if not texts:
            return real_embed(self, [], batch_size)
        return np.stack([memo[t] for t in texts])

    def ml_embed(self: MultilingualEmbedder, texts) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in ml_memo]
        if missing:
            ml_memo.update(zip(missing, real_ml_embed(self, missing)))
        if not texts:
            return real_ml_embed(self, [])
        return np.stack([ml_memo[t] for t in texts])

    Embedder._load, Embedder.embed = load, embed
    MultilingualEmbedder.embed = ml_embed
    yield
    Embedder._load, Embedder.embed = real_load, real_embed
    MultilingualEmbedder.embed = real_ml_embed


@pytest.fixture
def make_oracle() -> Iterator[Callable[..., Oracle]]:
    """Open Oracles on (root, data_dir); every one is closed at teardown."""
    opened: list[Oracle] = []

    def factory(root: Path, data_dir: Path, **overrides: object) -> Oracle:
        oracle = open_oracle(root, data_dir, **overrides)
        opened.append(oracle)
        return oracle

    yield factory
    for oracle in opened:
        oracle.close()


# -- the bundled knowledge base --------------------------------------------------------------------
@pytest.fixture(scope="session")
def bundled(tmp_path_factory: pytest.TempPathFactory):
    """(oracle, first SyncReport) for the bundled knowledge/ indexed into a fresh data dir. Read-only."""
    oracle = open_oracle(BUNDLED, tmp_path_factory.mktemp("bundled-data"))
    report = oracle.indexer.sync()
    yield oracle, report
    oracle.close()


@pytest.fixture(scope="session")
def embedding_seed(bundled, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding only the embedding caches of the bundled index (tests/_seed.py): copied into
    a system module's empty data dir, its first real `oracle index` of the bundled knowledge skips the
    model arithmetic this session has already done."""
    oracle, _ = bundled
    return _seed.build_seed(oracle.settings.db_path, tmp_path_factory.mktemp("embedding-seed") / "seed.db")


# -- the search corpus: a copy of the bundled knowledge plus synthetic notes -------------------------
@pytest.fixture(scope="session")
def search_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search-root")
    for folder in ("principles", "learnings", "retrospectives"):
        shutil.copytree(BUNDLED / folder, root / folder)
    _corpus.write_search_corpus(root)
    return root


# The stores a service-level test runs against: the embedded one (SQLite + ChromaDB) and the PostgreSQL store
# (a real PostgreSQL 18 with pgvector that the tests start themselves: tests/_pg.py).
STORES = ("sqlite", "postgresql")


def store_overrides(store: str) -> dict:
    """Settings overrides that put an Oracle on `store` (a new database of the test server for PostgreSQL)."""
    if store == "postgresql":
        import _pg

        return {"database_url": _pg.new_database()}
    return {}


@pytest.fixture(scope="session", params=STORES)
def search_index(request: pytest.FixtureRequest, search_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """The search corpus indexed once (keyword + vector), in each store. Read-only."""
    oracle = open_oracle(search_root, tmp_path_factory.mktemp("search-data"), **store_overrides(request.param))
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


@pytest.fixture(scope="session")
def search_twin(search_index, search_root: Path, tmp_path_factory: pytest.TempPathFactory):
    """The same files indexed a second time into a separate data dir (no shared cache), in the same kind of
    store as `search_index` (a second database for PostgreSQL). Read-only."""
    store = "postgresql" if search_index.settings.database_url else "sqlite"
    oracle = open_oracle(search_root, tmp_path_factory.mktemp("search-twin-data"), **store_overrides(store))
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    yield oracle
    oracle.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under system/ is slow and gets the longer timeout."""
    for item in items:
        if SYSTEM in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(SYSTEM_TIMEOUT))


def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis keeps caches in .hypothesis/; keep them under tests/ (gitignored) rather than the repo root."""
    from hypothesis import configuration

    configuration.set_hypothesis_home_dir(str(Path(__file__).resolve().parent / ".hypothesis"))


@pytest.fixture
def own_pg() -> Iterator[object]:
    """A PostgreSQL server of the test's own (tests/_pg.py OwnServer), for tests that stop and start it (an outage);
    stopped and removed after the test."""
    import _pg

    server = _pg.OwnServer()
    try:
        yield server
    finally:
        server.close()
