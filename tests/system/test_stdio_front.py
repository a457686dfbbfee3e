"""`oracle serve` over stdio answers the handshake from the SDK's own earlier answers (server/mcp/stdio_front.py):
the answers are the SDK's, byte for byte, in both protocol eras; the SDK takes over the same wire for every other
request; a stale cache entry is replaced by what the SDK answers in that session; nothing but the client's answers
reaches the wire. The answers live in a cache folder shared by every root (ORACLE_CACHE_DIR here, a folder per
test), which `make install` fills (server/mcp/warm.py): a brand-new root and data dir is answered from it; a stale,
corrupt or unwritable cache only sends the handshake to the SDK."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcp_types.version import LATEST_HANDSHAKE_VERSION

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
    yield {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {  # as the SDK's own client (server/mcp/warm.py)
        "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
        "clientInfo": {"name": "front-test", "version": "1"}}}, True
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
    """A private copy of the indexed root and data dir (mtimes kept, so the copy's index is current) and a
    private shared-cache folder: the tests write handshake caches and notes into theirs."""
    for part in ("root", "data"):
        shutil.copytree(indexed / part, tmp_path / part)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"),
               ORACLE_CACHE_DIR=str(tmp_path / "cache"), PYTHONIOENCODING="utf-8")
    return env


def shared_cache(env: dict[str, str]) -> Path | None:
    """The one handshake file in the test's shared cache folder, if written."""
    files = sorted(Path(env["ORACLE_CACHE_DIR"]).glob("handshake-*.json"))
    assert len(files) <= 1, files
    return files[0] if files else None


def data_dir_cache(env: dict[str, str]) -> Path:
    return Path(env["ORACLE_DATA_DIR"]) / "mcp-handshake.json"


def new_root(env: dict[str, str], base: Path) -> dict[str, str]:
    """Another knowledge root, never indexed, with its own oracle.toml and settings, and an empty data dir."""
    root = base / "other-root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "tides.md").write_text("# Tides\n\n## Harbour\n\nBoats leave at high tide.\n", encoding="utf-8")
    (root / "oracle.toml").write_text('[index]\ndefault_type = "learning"\n', encoding="utf-8")
    return {**env, "ORACLE_ROOT": str(root), "ORACLE_DATA_DIR": str(base / "other-data"),
            "ORACLE_LOG_RETENTION_DAYS": "7", "ORACLE_MULTILINGUAL": "off"}


def tamper(path: Path, method: str, marker: str = "MARKER") -> None:
    """Put a marker in the recorded tools/list answer of one era: an answer carrying it came from this file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    key = next(k for k in data["answers"] if k.startswith("tools/list ") and (("_meta" in k) == (method == "modern")))
    data["answers"][key]["tools"][0]["description"] = marker
    path.write_text(json.dumps(data), encoding="utf-8")


def session(env: dict[str, str], steps: Callable[[], Iterator[Step]], **extra: str) -> list[dict]:
    proc = subprocess.Popen([*oracle_cmd(), "serve", "--standalone", "--no-watch"], env={**env, **extra}, stdin=subprocess.PIPE,
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


def comparable(answer: dict, live: bool = True) -> dict:
    """Without what legitimately differs between two sessions: the time a search took, and in the live
    instructions the minute of the last index (each server's start-up sync stamps it; on a busy machine the
    three sessions can straddle a minute) and whether that sync was still running at the handshake
    (`live=False`: without the live part at all)."""
    answer = json.loads(json.dumps(answer))
    result = answer.get("result", {})
    if isinstance(result.get("instructions"), str):
        result["instructions"] = LIVE_STATE.sub("", result["instructions"])
        if not live:
            result["instructions"] = result["instructions"].split("\n\nRight now:")[0]
    if isinstance(result.get("structuredContent"), dict):
        result["structuredContent"].get("meta", {}).pop("took_ms", None)
    for block in result.get("content") or []:
        if block.get("type") == "text":
            block["text"] = block["text"].split("\n", 1)[-1]
    return answer


@pytest.mark.parametrize("steps", [modern, legacy], ids=["2026-discover", "handshake-initialize"])
def test_cached_handshake_is_the_sdks_answer(kb: dict[str, str], steps: Callable[[], Iterator[Step]]) -> None:
    reference = session(kb, steps, ORACLE_HANDSHAKE_CACHE="0")
    assert shared_cache(kb) is None and not data_dir_cache(kb).exists()
    first = session(kb, steps)  # through the SDK, recorded
    cache = shared_cache(kb)
    assert cache is not None and not data_dir_cache(kb).exists()  # in the shared folder, not the data dir
    recorded = json.loads(cache.read_text(encoding="utf-8"))
    assert len(recorded["answers"]) == 3  # base instructions + the two handshake answers
    second = session(kb, steps)  # from the cache, then the SDK
    assert [comparable(a) for a in reference] == [comparable(a) for a in first] == [comparable(a) for a in second]
    assert second[2]["result"]["structuredContent"]["hits"], "the SDK did not take over the wire"


def test_a_new_root_is_answered_from_the_cache_make_install_warmed(kb: dict[str, str], tmp_path: Path) -> None:
    """The install's step (server/mcp/warm.py) records the answers once; the first `oracle serve` on a root that
    was never indexed, with a fresh data dir and other settings, then answers its handshake from that cache,
    byte for byte what the SDK answers there, in both eras."""
    other = new_root(kb, tmp_path)
    warm = subprocess.run([sys.executable, "-m", "oracle_server.mcp.warm"], env=kb, capture_output=True, text=True, timeout=300)
    assert warm.returncode == 0, warm.stderr
    cache = shared_cache(kb)
    assert cache is not None and "recorded" in warm.stderr
    again = subprocess.run([sys.executable, "-m", "oracle_server.mcp.warm"], env=kb, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stderr == ""  # already warm: a no-op
    before = cache.read_bytes()
    for steps in (modern, legacy):
        fresh = {**other, "ORACLE_DATA_DIR": str(tmp_path / f"fresh-{steps.__name__}")}
        answers = session(fresh, steps)
        reference = session({**other, "ORACLE_DATA_DIR": str(tmp_path / f"ref-{steps.__name__}")}, steps,
                            ORACLE_HANDSHAKE_CACHE="0")
        # The base's live state ("Right now: ...") differs between two first starts (how far each one's sync
        # got when it answered): compared without it; test_instructions_are_live_not_cached covers it.
        assert [comparable(a, live=False) for a in answers[:2]] == [comparable(a, live=False) for a in reference[:2]]
        assert "Right now:" in answers[0]["result"]["instructions"]
        assert answers[2]["result"]["structuredContent"]["meta"]["mode"] == "fts"  # the SDK took over
        assert not data_dir_cache(fresh).exists()
    assert cache.read_bytes() == before  # the SDK's answers there were the recorded ones: nothing rewritten
    for era in ("modern", "legacy"):
        tamper(cache, era)
        answers = session({**other, "ORACLE_DATA_DIR": str(tmp_path / f"marked-{era}")},
                          modern if era == "modern" else legacy)
        assert answers[1]["result"]["tools"][0]["description"] == "MARKER"  # answered from the shared cache
        assert answers[2]["result"]["structuredContent"]["meta"]["mode"] == "fts"


def test_a_stale_key_goes_to_the_sdk(kb: dict[str, str]) -> None:
    session(kb, modern)
    cache = shared_cache(kb)
    assert cache is not None
    data = json.loads(cache.read_text(encoding="utf-8"))
    current = data["key"]
    data["key"] = "0" * 64  # recorded by other code
    cache.write_text(json.dumps(data), encoding="utf-8")
    tamper(cache, "modern")
    answers = session(kb, modern)
    assert answers[1]["result"]["tools"][0]["description"] != "MARKER"  # the SDK answered
    rewritten = json.loads(cache.read_text(encoding="utf-8"))
    assert rewritten["key"] == current and "MARKER" not in cache.read_text(encoding="utf-8")


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00\xff not json \xfe")


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _not_an_object(path: Path) -> None:
    path.write_text("[1, 2, 3]", encoding="utf-8")


def _a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize("spoil", [_garbage, _truncated, _not_an_object, _a_folder],
                         ids=["garbage", "truncated", "not-an-object", "a-folder-in-its-place"])
def test_a_corrupt_cache_file_never_breaks_start_up(kb: dict[str, str], spoil: Callable[[Path], None]) -> None:
    reference = session(kb, modern, ORACLE_HANDSHAKE_CACHE="0")
    session(kb, modern)
    cache = shared_cache(kb)
    assert cache is not None
    spoil(cache)
    answers = session(kb, modern)  # the SDK answers, and its answers are kept where they can be
    assert [comparable(a) for a in answers] == [comparable(a) for a in reference]
    if cache.is_dir():
        assert data_dir_cache(kb).exists()  # the shared file cannot be replaced: the data dir's is used
    else:
        assert json.loads(cache.read_text(encoding="utf-8"))["answers"]
    again = session(kb, modern)  # and the next start is answered early again
    assert [comparable(a) for a in again] == [comparable(a) for a in reference]


def test_an_unwritable_cache_folder_falls_back_to_the_data_dir(kb: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    env = {**kb, "ORACLE_CACHE_DIR": str(blocker / "cache")}  # cannot be created (root can write anywhere else)
    reference = session(env, modern, ORACLE_HANDSHAKE_CACHE="0")
    first = session(env, modern)
    assert data_dir_cache(env).exists()
    tamper(data_dir_cache(env), "modern")
    second = session(env, modern)
    assert second[1]["result"]["tools"][0]["description"] == "MARKER"  # answered from the data dir's file
    assert [comparable(a) for a in first] == [comparable(a) for a in reference]
    assert second[2]["result"]["structuredContent"]["hits"]


def test_stale_cache_entry_is_answered_once_then_replaced(kb: dict[str, str]) -> None:
    session(kb, modern)
    cache = shared_cache(kb)
    assert cache is not None
    tamper(cache, "modern")
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


@pytest.mark.parametrize("cache", ["1", "0"], ids=["front", "sdk-only"])
@pytest.mark.parametrize("wait", [0.0, 0.3, 2.0], ids=["at-once", "mid-start", "after-start"])
def test_a_client_that_hangs_up_early_ends_the_server_cleanly(kb: dict[str, str], cache: str, wait: float) -> None:
    """Closing stdin at any point of start-up ends `oracle serve` with exit 0 and nothing alarming on stderr
    (the issue saw SIGABRT, "terminate called without an active exception", about half the time)."""
    proc = subprocess.Popen([*oracle_cmd(), "serve", "--standalone", "--no-watch"], env={**kb, "ORACLE_HANDSHAKE_CACHE": cache},
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
