"""`oracle serve` over stdio answers the handshake from the SDK's own earlier answers (server/stdio_front.py):
the answers are the SDK's, byte for byte, in both protocol eras; the SDK takes over the same wire for every other
request; a stale cache entry is replaced by what the SDK answers in that session; nothing but the client's answers
reaches the wire."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _procs import oracle_cmd

pytestmark = pytest.mark.slow

META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "front-test", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}
SEARCH = {"name": "oracle_search", "arguments": {"query": "retry backoff", "mode": "fts", "limit": 2}}

Step = tuple[dict, bool]  # a message, and whether to wait for its answer


def modern() -> Iterator[Step]:
    yield {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": META}, True
    yield {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": META}, True
    yield {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {**META, **SEARCH}}, True


def legacy() -> Iterator[Step]:
    yield {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "front-test", "version": "1"}}}, True
    yield {"jsonrpc": "2.0", "method": "notifications/initialized"}, False
    yield {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, True
    yield {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": SEARCH}, True


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small notes indexed once by the real `oracle index`; every test gets its own copy (`kb`)."""
    base = tmp_path_factory.mktemp("stdio-front")
    root = base / "root"
    (root / "learnings").mkdir(parents=True)
    (root / "learnings" / "retry.md").write_text(
        "# Retry with backoff\n\n## Pattern\n\nRetry failed network calls with exponential backoff and jitter.\n",
        encoding="utf-8")
    (root / "principles").mkdir()
    (root / "principles" / "small.md").write_text("# Small steps\n\n### Commit often\n\nSmall commits.\n",
                                                  encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(base / "data"), PYTHONIOENCODING="utf-8")
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True, timeout=300)
    return base


@pytest.fixture
def kb(indexed: Path, tmp_path: Path) -> dict[str, str]:
    """A private copy of the indexed root and data dir (mtimes kept, so the copy's index is current): the
    tests write handshake caches and notes into theirs."""
    for part in ("root", "data"):
        shutil.copytree(indexed / part, tmp_path / part)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"), PYTHONIOENCODING="utf-8")
    return env


def session(env: dict[str, str], steps: Callable[[], Iterator[Step]], **extra: str) -> list[dict]:
    proc = subprocess.Popen([*oracle_cmd(), "serve", "--no-watch"], env={**env, **extra}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    answers: list[dict] = []
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message, wait in steps():
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            while wait:
                line = proc.stdout.readline()
                assert line, "the server closed its output"
                answer = json.loads(line)  # every line on the wire is JSON-RPC: nothing stray
                if answer.get("id") == message["id"]:
                    answers.append(answer)
                    break
        proc.stdin.close()
        assert proc.stdout.read() == b""  # no answer to a replayed request ever reaches the client
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return answers


LIVE_STATE = re.compile(r"; start-up indexing in progress \(calls wait for it\)|, last indexed [0-9 :-]+ UTC")


def comparable(answer: dict) -> dict:
    """Without what legitimately differs between two sessions: the time a search took, and in the live
    instructions the minute of the last index (each server's start-up sync stamps it; on a busy machine the
    three sessions can straddle a minute) and whether that sync was still running at the handshake."""
    answer = json.loads(json.dumps(answer))
    result = answer.get("result", {})
    if isinstance(result.get("instructions"), str):
        result["instructions"] = LIVE_STATE.sub("", result["instructions"])
    if isinstance(result.get("structuredContent"), dict):
        result["structuredContent"].get("meta", {}).pop("took_ms", None)
    for block in result.get("content") or []:
        if block.get("type") == "text":
            block["text"] = block["text"].split("\n", 1)[-1]
    return answer


@pytest.mark.parametrize("steps", [modern, legacy], ids=["2026-discover", "handshake-initialize"])
def test_cached_handshake_is_the_sdks_answer(kb: dict[str, str], steps: Callable[[], Iterator[Step]]) -> None:
    cache = Path(kb["ORACLE_DATA_DIR"]) / "mcp-handshake.json"
    reference = session(kb, steps, ORACLE_HANDSHAKE_CACHE="0")
    assert not cache.exists()
    first = session(kb, steps)  # through the SDK, recorded
    assert cache.exists()
    recorded = json.loads(cache.read_text(encoding="utf-8"))
    assert len(recorded["answers"]) == 3  # base instructions + the two handshake answers
    second = session(kb, steps)  # from the cache, then the SDK
    assert [comparable(a) for a in reference] == [comparable(a) for a in first] == [comparable(a) for a in second]
    assert second[2]["result"]["structuredContent"]["hits"], "the SDK did not take over the wire"


def test_stale_cache_entry_is_answered_once_then_replaced(kb: dict[str, str]) -> None:
    cache = Path(kb["ORACLE_DATA_DIR"]) / "mcp-handshake.json"
    session(kb, modern)
    data = json.loads(cache.read_text(encoding="utf-8"))
    key = next(k for k in data["answers"] if k.startswith("tools/list "))
    data["answers"][key]["tools"][0]["description"] = "MARKER"
    cache.write_text(json.dumps(data), encoding="utf-8")
    answers = session(kb, modern)
    assert answers[1]["result"]["tools"][0]["description"] == "MARKER"  # answered here, from the cache
    assert answers[2]["result"]["structuredContent"]["hits"]
    deadline = time.monotonic() + 10
    while "MARKER" in cache.read_text(encoding="utf-8") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "MARKER" not in cache.read_text(encoding="utf-8")  # the SDK's answer to the replay replaced it


def test_instructions_are_live_not_cached(kb: dict[str, str]) -> None:
    session(kb, modern)
    root = Path(kb["ORACLE_ROOT"])
    (root / "learnings" / "third.md").write_text("# Third\n\n## Body\n\nA third note.\n", encoding="utf-8")
    subprocess.run([*oracle_cmd(), "index"], env=kb, check=True, capture_output=True, timeout=300)
    answers = session(kb, modern)
    assert "3 notes" in answers[0]["result"]["instructions"]


def test_changed_settings_are_a_cache_miss(kb: dict[str, str]) -> None:
    session(kb, modern)
    cache = Path(kb["ORACLE_DATA_DIR"]) / "mcp-handshake.json"
    before = json.loads(cache.read_text(encoding="utf-8"))["key"]
    session(kb, modern, ORACLE_LOG_RETENTION_DAYS="7")
    assert json.loads(cache.read_text(encoding="utf-8"))["key"] != before


@pytest.mark.parametrize("cache", ["1", "0"], ids=["front", "sdk-only"])
@pytest.mark.parametrize("wait", [0.0, 0.3, 2.0], ids=["at-once", "mid-start", "after-start"])
def test_a_client_that_hangs_up_early_ends_the_server_cleanly(kb: dict[str, str], cache: str, wait: float) -> None:
    """Closing stdin at any point of start-up ends `oracle serve` with exit 0 and nothing alarming on stderr
    (the issue saw SIGABRT, "terminate called without an active exception", about half the time)."""
    proc = subprocess.Popen([*oracle_cmd(), "serve", "--no-watch"], env={**kb, "ORACLE_HANDSHAKE_CACHE": cache},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        first = next(legacy())[0]
        proc.stdin.write((json.dumps(first) + "\n").encode())
        proc.stdin.flush()
        time.sleep(wait)
        proc.stdin.close()
        assert proc.stderr is not None and proc.stdout is not None
        proc.stdout.read()
        err = proc.stderr.read()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "terminate called" not in text and "Traceback" not in text and "closed database" not in text, text
