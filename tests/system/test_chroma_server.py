"""The vector leg on a REAL Chroma server (ORACLE_CHROMA_URL), and what happens when that server dies.

A real `chroma run` (the CLI the chromadb package installs beside the interpreter; it starts offline in
about 1.5 s) on a loopback port with its own data path. It is killed with SIGKILL, frozen with SIGSTOP,
and restarted on the same port, with its old path or an empty one. Oracle is used three ways: the
service layer in this process, real `oracle` CLI processes, and a real MCP stdio session with `oracle
serve`. What the server holds is read through its own REST API, not through Oracle's client.

What a demanding user expects, and what is checked:
- vectors live on the server only (no embedded Chroma folder appears in the data dir), in a collection
  created with cosine distance and Oracle's ef_search (the determinism guarantee);
- a dead server costs searches nothing but the vector leg: keyword results, a warning naming the server
  and the cause, stats saying the vector store is down; learn still writes and indexes the file, and says
  its chunks wait for the vector store;
- when the server comes back (same data or none at all), nobody restarts or runs anything: a started
  Oracle's maintenance worker notices within a second or two (stats only read, they never repair), re-adds what is missing from its embedding cache (no model call), and
  embeds what was learnt meanwhile; search results are byte-identical to those before the outage.

    .venv/bin/python -m pytest -q tests/system/test_chroma_server.py
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import _corpus
from _mcp import KB, Session, run_oracle
from _procs import free_port
from oracle_indexer.store.sqlite import vectors as vectors_module
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.capabilities.learn import learn
from oracle_server.services.vocabulary.models import LearnRequest, SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search, search
from oracle_server.services.capabilities.stats import stats
from test_live import oracle_env, wait_for

CHROMA = Path(sys.executable).parent / "chroma"  # installed with the chromadb package
REST = "/api/v2/tenants/default_tenant/databases/default_database/collections"
# Ceilings that only catch a hang (a machine at load 10-15 took over a minute, issue 39); the figures printed are
# what matters.
RECOVERY_DEADLINE = 300.0
START_CEILING = 300.0

pytestmark = pytest.mark.skipif(not CHROMA.exists(), reason="the chroma CLI is not installed beside the interpreter")

WOMBAT_TITLE = "Wombats dig burrows with their claws"
WOMBAT_PATTERN = (
    "A wombat digs long burrows with its strong claws and flat teeth; the burrow keeps it cool at noon."
)
SEMANTIC_WOMBAT = WOMBAT_PATTERN  # its own text: the vector leg must rank it first


@pytest.fixture(autouse=True)
def chroma_answers_every_query(monkeypatch):
    """Every vector query goes to Chroma, as above ORACLE_EXACT_LIMIT: these tests are about Chroma's faults, and
    below the limit the vector leg reads SQLite instead (indexer/store/sqlite/exact.py; tests/unit/test_search.py
    test_a_small_base_keeps_its_vector_leg_while_chroma_is_down)."""
    monkeypatch.setenv("ORACLE_EXACT_LIMIT", "0")


class ChromaServer:
    """One `chroma run` process; start/kill/freeze it like an operator (or a crash) would."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.path: Path | None = None
        self.starts: list[float] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, path: Path) -> float:
        """Start on `path` and wait for the heartbeat; the seconds it took."""
        self.path = path
        started = time.perf_counter()
        log = open(self.base / "chroma.log", "ab")
        self.proc = subprocess.Popen(
            [str(CHROMA), "run", "--host", "127.0.0.1", "--port", str(self.port), "--path", str(path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + START_CEILING
        while True:
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, f"chroma exited: {(self.base / 'chroma.log').read_text(errors='replace')[-2000:]}"
            assert time.monotonic() < deadline, f"chroma did not answer its heartbeat within {START_CEILING:.0f} s"
            time.sleep(0.05)
        self.starts.append(time.perf_counter() - started)
        return self.starts[-1]

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)  # a frozen server must die too
        self.proc.kill()
        self.proc.wait(timeout=15)

    def collections(self) -> list[dict]:
        return httpx.get(f"{self.url}{REST}", timeout=5).json()

    def count(self, name: str | None = None) -> int:
        """Vectors in Oracle's collection (the only one, unless named), asked of the server itself."""
        (found,) = [c for c in self.collections() if c["name"] == name or (name is None and c["name"].startswith("oracle_"))]
        return int(httpx.get(f"{self.url}{REST}/{found['id']}/count", timeout=5).json())


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path)
    server.start(tmp_path / "chroma-server")
    yield server
    if server.proc and server.proc.poll() is None:
        server.kill()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    _corpus.write_search_corpus(root)
    return root


def chunk_count(oracle: Oracle) -> int:
    return oracle.store.conn.execute("SELECT count(*) FROM documents").fetchone()[0]


def canonical(oracle: Oracle, request: SearchRequest) -> str:
    """A search result as bytes, without the one field that is a clock reading."""
    data = run_search(oracle, request).model_dump(mode="json")
    data["meta"].pop("took_ms")
    return json.dumps(data, sort_keys=True)


def timed_search(oracle: Oracle, query: str) -> tuple[float, object]:
    started = time.perf_counter()
    result = search(oracle, SearchRequest(query=query, limit=5), client="test")
    return time.perf_counter() - started, result


def recovered(oracle: Oracle, chroma: ChromaServer) -> bool:
    return (oracle.vectors.down is None and oracle.store.pending_count() == 0
            and chroma.count() == chunk_count(oracle))


# =====================================================================================================
# 1. The service layer: a long-lived Oracle through kill, restart, and restart without data
# =====================================================================================================


def test_outage_and_recovery_without_restarting_oracle(tmp_path: Path, corpus: Path, chroma: ChromaServer, make_oracle) -> None:
    print(f"\nchroma start: {chroma.starts[0]:.2f} s")
    oracle = make_oracle(corpus, tmp_path / "data", chroma_url=chroma.url)
    report = oracle.indexer.sync()
    assert not report.vector_failed, report.warnings
    oracle.start(sync=False)  # the maintenance worker: it notices outages and repairs on its own
    chunks = chunk_count(oracle)

    # The vectors are on the server, in a collection with Oracle's HNSW settings; nothing embedded.
    assert not (tmp_path / "data" / "chroma").exists()
    assert chroma.count() == chunks > 20
    (collection,) = chroma.collections()
    assert collection["configuration_json"]["hnsw"]["space"] == "cosine"
    assert collection["configuration_json"]["hnsw"]["ef_search"] == vectors_module.EF_SEARCH

    # Hybrid search uses the server's vectors, and gives the same ranking as an embedded index would.
    semantic = SearchRequest(query="a small marsupial seen near the jetty", limit=10)
    vector_only = SearchRequest(query="a small marsupial seen near the jetty", mode="vector", limit=10)
    result = run_search(oracle, semantic)
    assert result.meta.mode == "hybrid" and result.meta.vector_matches > 0 and not result.meta.warnings
    assert any("vector" in h.found_by for h in result.hits)
    twin = make_oracle(corpus, tmp_path / "twin-data")  # embedded Chroma, same files
    assert not twin.indexer.sync().vector_failed
    served, embedded = run_search(oracle, vector_only), run_search(twin, vector_only)
    assert [h.id for h in served.hits] == [h.id for h in embedded.hits]
    assert [h.score for h in served.hits] == pytest.approx([h.score for h in embedded.hits], abs=1e-6)
    before = canonical(oracle, semantic), canonical(oracle, vector_only)
    assert canonical(oracle, semantic) == before[0]  # and the same query twice gives the same bytes

    # --- SIGKILL: keyword results with a warning, fast; stats say the store is down.
    chroma.kill()
    first, down = timed_search(oracle, "quokka count")
    later = [timed_search(oracle, "quokka count")[0] for _ in range(5)]
    print(f"search while the server is dead: first {first * 1000:.1f} ms, then median "
          f"{sorted(later)[2] * 1000:.1f} ms")
    assert down.meta.mode == "fts" and down.hits and down.total > 0
    assert len(down.meta.warnings) == 1
    warning = down.meta.warnings[0]
    assert "vector search unavailable" in warning and chroma.url in warning
    assert "refused" in warning.lower() or "connect" in warning.lower(), warning
    health = stats(oracle).vector_store
    assert health.ok is False and chroma.url in health.detail, health

    # Learn still writes the file and indexes its keywords; its chunks wait for the vector store.
    learnt = learn(oracle, LearnRequest(pattern=WOMBAT_PATTERN, title=WOMBAT_TITLE, concepts=["wombat"]))
    assert (corpus / learnt.file).is_file()
    assert learnt.embedded is False
    assert any("pending" in w and chroma.url in w for w in learnt.warnings), learnt.warnings
    assert oracle.store.pending_count() == len(learnt.chunk_ids) > 0
    keyword = run_search(oracle, SearchRequest(query="wombat burrows", limit=3))
    assert keyword.hits[0].source_file == learnt.file

    # --- Restart on the same path and port: nobody touches Oracle; it notices and catches up.
    chroma.start(chroma.path)
    back = time.perf_counter()
    wait_for(lambda: recovered(oracle, chroma), "vectors back on the restarted server", RECOVERY_DEADLINE)
    print(f"restart (same data): vectors usable and the learning embedded {time.perf_counter() - back:.2f} s"
          " after the heartbeat")
    assert chroma.count() == chunk_count(oracle) == chunks + len(learnt.chunk_ids)
    found = run_search(oracle, SearchRequest(query=SEMANTIC_WOMBAT, mode="vector", limit=3))
    assert found.meta.mode == "vector" and not found.meta.warnings
    assert found.hits[0].source_file == learnt.file
    assert stats(oracle).vector_store.ok is True
    # The learning changed the corpus, so take the reference results again.
    before = canonical(oracle, semantic), canonical(oracle, vector_only)

    # --- Restart WITHOUT its data, while Oracle is idle: the next call finds the collection gone, and
    # everything is re-added from the embedding cache (no model call).
    earlier_repair = oracle.indexer.last_repair
    chroma.kill()
    chroma.start(tmp_path / "chroma-server-empty")
    lost = run_search(oracle, semantic)
    if lost.meta.mode == "fts":
        assert lost.meta.warnings, "a lost collection must not look like a healthy one"
    else:
        # The worker's own comparison (every HEALTH_SECONDS) saw the loss first and re-added the vectors while the
        # server was starting (a slow start on a busy machine, issue 39): that is the same recovery, seen earlier.
        # Caught mid-repair, the answer says its semantic part is incomplete (a clean clone beside two busy loops
        # met this). What must never happen is an empty collection answering as a healthy one.
        healthy = lost.meta.vector_matches > 0 and not lost.meta.warnings
        repairing = any("semantic results are incomplete" in w for w in lost.meta.warnings)
        assert healthy or repairing, lost.meta
        if healthy:
            assert oracle.indexer.last_repair is not earlier_repair, "vectors answered from a collection nobody re-added"
    back = time.perf_counter()
    wait_for(lambda: recovered(oracle, chroma), "vectors re-added to the empty server", RECOVERY_DEADLINE)
    print(f"restart (empty data): {chroma.count()} vectors re-added {time.perf_counter() - back:.2f} s after "
          "the loss was seen")
    repair = oracle.indexer.last_repair
    assert repair is not None and repair.embedded == 0 and repair.embeddings_cached == chunk_count(oracle)
    (collection,) = chroma.collections()
    assert collection["configuration_json"]["hnsw"]["ef_search"] == vectors_module.EF_SEARCH
    # Deterministic: the rebuilt collection ranks exactly as the old one did, byte for byte.
    assert (canonical(oracle, semantic), canonical(oracle, vector_only)) == before


# =====================================================================================================
# 2. A frozen server (SIGSTOP): one search waits for the request timeout, no more, and none after it
# =====================================================================================================


def test_frozen_server_costs_one_timeout_then_nothing(tmp_path: Path, corpus: Path, chroma: ChromaServer, make_oracle) -> None:
    oracle = make_oracle(corpus, tmp_path / "data", chroma_url=chroma.url)
    assert not oracle.indexer.sync().vector_failed
    oracle.start(sync=False)
    before = canonical(oracle, SearchRequest(query="quokka in the shade", limit=10))
    assert chroma.proc is not None
    chroma.proc.send_signal(signal.SIGSTOP)
    try:
        outcome: list = []
        worker = threading.Thread(target=lambda: outcome.append(timed_search(oracle, "quokka in the shade")))
        worker.start()
        worker.join(timeout=vectors_module.REQUEST_TIMEOUT * 6)  # a hang check, not a speed limit
        assert outcome, "a search against a frozen Chroma server hung"
        first, result = outcome[0]
        later = [timed_search(oracle, "quokka in the shade")[0] for _ in range(5)]
        print(f"\nsearch while the server is frozen: first {first:.2f} s (REQUEST_TIMEOUT "
              f"{vectors_module.REQUEST_TIMEOUT:g} s), then median {sorted(later)[2] * 1000:.1f} ms")
        assert result.meta.mode == "fts" and result.hits
        assert any(chroma.url in w for w in result.meta.warnings), result.meta.warnings
        assert stats(oracle).vector_store.ok is False
    finally:
        chroma.proc.send_signal(signal.SIGCONT)
    wait_for(lambda: oracle.vectors.down is None, "vectors back after the server thawed", RECOVERY_DEADLINE)
    assert canonical(oracle, SearchRequest(query="quokka in the shade", limit=10)) == before


# =====================================================================================================
# 3. Real processes: `oracle index`, `oracle stats`, and `oracle serve` in an MCP stdio session
# =====================================================================================================


def test_processes_and_mcp_session_across_outages(tmp_path: Path, corpus: Path, chroma: ChromaServer) -> None:
    data = tmp_path / "data"
    env = oracle_env(corpus, data) | {"ORACLE_CHROMA_URL": chroma.url, "ORACLE_EXACT_LIMIT": "0"}  # chroma_answers_every_query
    done = run_oracle(env, "index", "--json")
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    assert not first["vector_failed"] and first["embedded"] > 0, first
    assert chroma.count() == first["chunks_written"] and not (data / "chroma").exists()

    # The server loses its data while no Oracle runs: `oracle stats` says so, and the sync that
    # `oracle serve` runs at start-up re-adds every vector from the embedding cache.
    chroma.kill()
    chroma.start(tmp_path / "chroma-server-empty")
    status = json.loads(run_oracle(env, "stats", "--json").stdout)["vector_store"]
    assert status["ok"] is False and "lost" in status["detail"], status
    session = Session(KB(corpus, data, env, tmp_path))

    def caught_up() -> bool:
        s = session.ok("oracle_stats")
        return s["vector_store"]["ok"] and s["embeddings"]["coverage"] == 1.0

    try:
        wait_for(caught_up, "serve re-added the lost vectors", RECOVERY_DEADLINE, 0.2)
        assert chroma.count() == first["chunks_written"]
        hit = session.ok("oracle_search", {"query": "which animal should never be fed bread", "limit": 3})
        assert hit["meta"]["mode"] == "hybrid" and hit["meta"]["vector_matches"] > 0, hit["meta"]
        saved = session.ok("oracle_learn", {"pattern": "Quolls hunt at night along the creek banks.",
                                            "title": "Quolls are nocturnal hunters"})
        assert saved["embedded"] is True, saved

        chroma.kill()
        down = session.ok("oracle_search", {"query": "quokka bread", "limit": 3})
        assert down["meta"]["mode"] == "fts" and down["hits"], down["meta"]
        assert any(chroma.url in w for w in down["meta"]["warnings"]), down["meta"]
        text = session.call("oracle_stats").content[0].text
        assert "vector store DOWN" in text, text
        health = session.ok("oracle_stats")["vector_store"]
        assert health["ok"] is False and chroma.url in health["detail"], health
        learnt = session.ok("oracle_learn", {"pattern": WOMBAT_PATTERN, "title": WOMBAT_TITLE})
        assert learnt["embedded"] is False and (corpus / learnt["file"]).is_file(), learnt
        assert any("pending" in w for w in learnt["warnings"]), learnt["warnings"]
        keyword = session.ok("oracle_search", {"query": "wombat burrows", "limit": 3})
        assert keyword["hits"][0]["source_file"] == learnt["file"]

        chroma.start(chroma.path)
        back = time.perf_counter()
        wait_for(caught_up, lambda: f"the served Oracle caught up:\n{session.stderr()}", RECOVERY_DEADLINE, 0.2)
        print(f"\nMCP server: vectors back and the learning embedded {time.perf_counter() - back:.2f} s after restart")
        semantic = session.ok("oracle_search", {"query": SEMANTIC_WOMBAT, "mode": "vector", "limit": 3})
        assert semantic["meta"]["mode"] == "vector" and not semantic["meta"]["warnings"], semantic["meta"]
        assert semantic["hits"][0]["source_file"] == learnt["file"]
        assert session.starts == 1  # the same server process throughout
    finally:
        session.close()
    assert not (data / "chroma").exists()
    with sqlite3.connect(data / "oracle.db") as db:
        assert chroma.count() == db.execute("SELECT count(*) FROM documents").fetchone()[0]


def test_two_knowledge_bases_share_one_server_without_touching_each_other(
    tmp_path: Path, corpus: Path, chroma: ChromaServer, make_oracle
) -> None:
    """Each root gets its own collection on a shared server: one base's reconcile or --full never
    deletes the other's vectors as orphans."""
    other = tmp_path / "other-root"
    _corpus.write(other / "learnings/2026-01-01_wombat.md", "# Wombat\n\nWombats dig burrows with their claws.\n")
    first = make_oracle(corpus, tmp_path / "data-1", chroma_url=chroma.url)
    second = make_oracle(other, tmp_path / "data-2", chroma_url=chroma.url)
    assert first.settings.collection != second.settings.collection
    assert not first.indexer.sync().vector_failed and not second.indexer.sync().vector_failed
    assert chroma.count(first.settings.collection) == chunk_count(first)
    assert chroma.count(second.settings.collection) == chunk_count(second) == 1
    first.indexer.reconcile_vectors()
    first.indexer.sync(full=True)
    assert chroma.count(second.settings.collection) == 1
    hit = run_search(second, SearchRequest(query="animal that digs", mode="vector", limit=1)).hits[0]
    assert hit.source_file == "learnings/2026-01-01_wombat.md"


def test_collection_name_is_validated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle_indexer.config import ConfigError, Settings

    monkeypatch.setenv("ORACLE_CHROMA_COLLECTION", "no spaces allowed")
    with pytest.raises(ConfigError, match="ORACLE_CHROMA_COLLECTION"):
        Settings.from_env(root=tmp_path, data_dir=tmp_path / "d")
    monkeypatch.setenv("ORACLE_CHROMA_COLLECTION", "team_notes")
    assert Settings.from_env(root=tmp_path, data_dir=tmp_path / "d", chroma_url="http://127.0.0.1:9").collection == "team_notes"
