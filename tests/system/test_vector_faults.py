"""The embedded vector store unusable, for real: keyword search carries on, stats say why, nothing crashes,
and vectors come back on their own once the store is usable again.

Three real faults, no test doubles:
1. The Chroma folder unreadable by the user running Oracle. Tests run as root in CI, and root ignores file
   modes, so a real `oracle serve` is started as `nobody` with `setpriv` (util-linux, on every Debian)
   on a data dir that `nobody` owns, except for the Chroma folder (root's, mode 0700). Driven through a
   real MCP stdio session. Run as an ordinary user, the folder is simply chmod 000 instead.
2. A file where the Chroma folder should be (a botched restore, a sync tool): every open fails.
3. Chroma's own SQLite file corrupted.
For 2 and 3 the user's remedy is the one the warning names: move the bad path aside. The running Oracle
(service layer, this process) then rebuilds the vectors from its embedding cache without being restarted.

    .venv/bin/python -m pytest -q tests/system/test_vector_faults.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import Implementation

import _corpus
from _procs import oracle_cmd
from oracle_server.services.capabilities.learn import learn
from oracle_server.services.vocabulary.models import LearnRequest, SearchRequest
from oracle_server.services.capabilities.search.pipeline import run_search
from oracle_server.services.capabilities.stats import stats
from test_live import fresh_oracle, oracle_env, wait_for

NOBODY = 65534
SETPRIV = shutil.which("setpriv")
RECOVERY_DEADLINE = 300.0  # a ceiling that only catches a hang (a machine at load 10-15 is slow, issue 39)
PATTERN = "A numbat eats termites with its long sticky tongue and never digs its own burrow."
TITLE = "Numbats live on termites"


@pytest.fixture(autouse=True)
def chroma_answers_every_query(monkeypatch):
    """Every vector query goes to Chroma, as above ORACLE_EXACT_LIMIT: these tests are about Chroma's faults, and
    below the limit the vector leg reads SQLite instead (indexer/store/sqlite/exact.py; tests/unit/test_search.py
    test_a_small_base_keeps_its_vector_leg_while_chroma_is_down)."""
    monkeypatch.setenv("ORACLE_EXACT_LIMIT", "0")


def own_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, gid)


@pytest.fixture
def shared_base() -> Iterator[Path]:
    """A work folder another user can reach (pytest's tmp_path is private to root: mode 0700)."""
    base = Path(tempfile.mkdtemp(prefix="oracle-vector-faults-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


# =====================================================================================================
# 1. Unreadable Chroma folder, a real `oracle serve` over MCP stdio
# =====================================================================================================


def test_unreadable_chroma_folder_keyword_search_then_vectors_return(shared_base: Path) -> None:
    as_root = os.geteuid() == 0
    if as_root and SETPRIV is None:
        pytest.skip("running as root without setpriv: no real way to make a folder unreadable")
    root, data = shared_base / "root", shared_base / "data"
    _corpus.write_search_corpus(root)
    indexer = fresh_oracle(root, data)
    try:
        assert not indexer.indexer.sync().vector_failed
    finally:
        indexer.close()
    chroma = data / "chroma"
    prefix: list[str] = []
    if as_root:
        own_tree(root, NOBODY, NOBODY)
        own_tree(data, NOBODY, NOBODY)
        os.chown(chroma, 0, 0)
        chroma.chmod(0o700)  # root's own and private: `nobody` may not even list it
        prefix = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    else:
        chroma.chmod(0o000)

    def unblock() -> None:
        chroma.chmod(0o755)
        if as_root:
            own_tree(chroma, NOBODY, NOBODY)

    env = oracle_env(root, data) | {"ORACLE_EXACT_LIMIT": "0"}  # see chroma_answers_every_query
    command = [*prefix, *oracle_cmd(), "serve", "--standalone"]
    params = StdioServerParameters(command=command[0], args=[*command[1:]], env=env, cwd=str(shared_base))

    async def scenario() -> None:
        with open(shared_base / "serve.stderr", "w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), client_info=Implementation(name="faults", version="1"),
                              read_timeout_seconds=120) as client:

                async def ok(tool: str, args: dict | None = None) -> dict:
                    result = await client.call_tool(tool, args or {})
                    assert not result.is_error, f"{tool}: {result.content[0].text}\n{(shared_base / 'serve.stderr').read_text()}"
                    return result.structured_content

                # Keyword results, with a warning that says what is wrong and where.
                found = await ok("oracle_search", {"query": "quokka bread", "limit": 3})
                assert found["meta"]["mode"] == "fts" and found["hits"], found["meta"]
                (warning,) = found["meta"]["warnings"]
                assert "vector search unavailable" in warning and str(chroma) in warning, warning
                assert "permission denied" in warning.lower(), warning
                health = (await ok("oracle_stats"))["vector_store"]
                assert health["ok"] is False and "permission denied" in health["detail"].lower(), health
                text = (await client.call_tool("oracle_stats", {})).content[0].text
                assert "vector store DOWN" in text, text
                # Every other tool still serves.
                advice = await ok("oracle_consult", {"decision": "should we feed the quokka bread?"})
                assert advice["principles"] and any("vector" in w for w in advice["warnings"]), advice
                assert (await ok("oracle_list", {"limit": 3}))["items"]
                assert (await ok("oracle_concepts", {"limit": 5}))["concepts"]
                assert (await ok("oracle_reflect"))["id"]
                learnt = await ok("oracle_learn", {"pattern": PATTERN, "title": TITLE})
                assert learnt["embedded"] is False and (root / learnt["file"]).is_file(), learnt
                assert any("pending" in w for w in learnt["warnings"]), learnt["warnings"]
                keyword = await ok("oracle_search", {"query": "numbat termites", "limit": 3})
                assert keyword["hits"][0]["source_file"] == learnt["file"], keyword

                # The folder becomes usable again: the same server process catches up on its own.
                unblock()
                back = time.perf_counter()
                while True:
                    s = await ok("oracle_stats")
                    if s["vector_store"]["ok"] and s["embeddings"]["coverage"] == 1.0:
                        break
                    assert time.perf_counter() - back < RECOVERY_DEADLINE, s["vector_store"]
                    await anyio.sleep(0.2)
                print(f"\nunreadable Chroma folder fixed: vectors back {time.perf_counter() - back:.2f} s later")
                semantic = await ok("oracle_search", {"query": PATTERN, "mode": "vector", "limit": 3})
                assert semantic["meta"]["mode"] == "vector" and not semantic["meta"]["warnings"], semantic["meta"]
                assert semantic["hits"][0]["source_file"] == learnt["file"]
                hybrid = await ok("oracle_search", {"query": "quokka bread", "limit": 3})
                assert hybrid["meta"]["mode"] == "hybrid" and not hybrid["meta"]["warnings"], hybrid["meta"]

    try:
        anyio.run(scenario)
    finally:
        unblock()


# =====================================================================================================
# 2-3. A file in the folder's place, a corrupt Chroma database: the service layer, one Oracle throughout
# =====================================================================================================


def put_file_in_place(chroma: Path) -> None:
    shutil.rmtree(chroma)
    chroma.write_text("not a folder\n", encoding="utf-8")


def corrupt_database(chroma: Path) -> None:
    db = chroma / "chroma.sqlite3"
    db.write_bytes(b"this is not an SQLite database " * 4096)


@pytest.mark.parametrize(("fault", "expected"), [
    (put_file_in_place, ("exists", "not a directory")),
    (corrupt_database, ("not a database",)),
], ids=["file-in-place", "corrupt-database"])
def test_broken_chroma_folder_keyword_search_then_rebuilt_from_cache(tmp_path: Path, fault, expected) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    _corpus.write_search_corpus(root)
    first = fresh_oracle(root, data)
    try:
        assert not first.indexer.sync().vector_failed
        request = SearchRequest(query="quokka kept in the shade", limit=10)
        semantic = SearchRequest(query="quokka kept in the shade", mode="vector", limit=11)
        reference = [(h.id, h.score) for h in run_search(first, semantic).hits][:10]
    finally:
        first.close()
    chroma = data / "chroma"
    fault(chroma)

    oracle = fresh_oracle(root, data)  # a new process would open the broken folder like this
    oracle.start(sync=False)  # as a server would: its worker repairs the store once it answers
    try:
        result = run_search(oracle, request)
        assert result.meta.mode == "fts" and result.hits, result.meta
        (warning,) = result.meta.warnings
        assert str(chroma) in warning and any(e in warning.lower() for e in expected), warning
        assert "move it aside" in warning, warning  # says what to do
        health = stats(oracle).vector_store
        assert health.ok is False and any(e in health.detail.lower() for e in expected), health
        learnt = learn(oracle, LearnRequest(pattern=PATTERN, title=TITLE))
        assert learnt.embedded is False and (root / learnt.file).is_file()
        assert any("pending" in w for w in learnt.warnings), learnt.warnings
        assert run_search(oracle, SearchRequest(query="numbat termites", limit=3)).hits[0].source_file == learnt.file

        # The remedy the warning names; this Oracle is not restarted.
        chroma.rename(data / "chroma.broken")
        back = time.perf_counter()
        wait_for(lambda: oracle.vectors.down is None and oracle.store.pending_count() == 0
                 and stats(oracle).vector_store.ok, "vectors rebuilt in the running Oracle", RECOVERY_DEADLINE)
        print(f"\n{fault.__name__}: vectors rebuilt from the cache {time.perf_counter() - back:.2f} s after the fix")
        repair = oracle.indexer.last_repair
        assert repair is not None and repair.embedded == 0, repair  # all from the embedding cache
        assert oracle.vectors.all_ids() == {r[0] for r in oracle.store.conn.execute("SELECT id FROM documents")}
        found = run_search(oracle, SearchRequest(query=PATTERN, mode="vector", limit=3))
        assert found.meta.mode == "vector" and found.hits[0].source_file == learnt.file
        again = run_search(oracle, request)
        assert again.meta.mode == "hybrid" and not again.meta.warnings
        # The same vectors as before the fault: same ranking and scores, the new note aside.
        rebuilt = [(h.id, h.score) for h in run_search(oracle, semantic).hits if h.source_file != learnt.file]
        assert rebuilt[:10] == reference
    finally:
        oracle.close()
