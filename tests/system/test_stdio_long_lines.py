"""Issue 26, should-fix: `oracle serve` over stdio caps a message's line. A line longer than MAX_LINE_BYTES gets a
JSON-RPC error under its request's id, the rest of it is skipped to the next newline without being kept, and the
session goes on; a 40 MB line is read in linear time and bounded memory (before: a 150 MB line stalled the server
107 s and took 1.25 GB). A real `oracle serve` process (in-process, and as a relay to a warm engine: both read the
wire through the same front, server/mcp/stdio_front.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from _corpus import write
from _procs import oracle_cmd, stop_engines

pytestmark = pytest.mark.slow
LINE_MB = 40


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def _answer(proc: subprocess.Popen, request_id: object, timeout: float = 120) -> dict:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        assert line, "the server closed its output"
        answer = json.loads(line)
        if answer.get("id") == request_id:
            return answer
    raise AssertionError(f"no answer to {request_id!r}")


def _send(proc: subprocess.Popen, message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


@pytest.mark.parametrize("mode", ["--standalone", "engine"])
def test_an_overlong_line_is_refused_skipped_and_the_session_goes_on(tmp_path: Path, mode: str) -> None:
    from oracle_server.mcp.stdio_front import MAX_LINE_BYTES

    write(tmp_path / "root/learnings/retry.md", "# Retry\n\n## Pattern\n\nRetry with exponential backoff.\n")
    runtime = Path(tempfile.mkdtemp(prefix="oe-"))  # short: a unix socket's path is at most 107 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"),
               ORACLE_CACHE_DIR=str(tmp_path / "cache"), ORACLE_RUNTIME_DIR=str(runtime / "run"),
               PYTHONIOENCODING="utf-8")
    # Indexed (vectors too) before the server starts, so that no model loads during the measurement below: a
    # standalone server embedding a pending note raised its peak memory by ~85 MB, with or without the long line.
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True, timeout=600)
    args = ["serve", "--no-watch"] + (["--standalone"] if mode == "--standalone" else [])
    proc = subprocess.Popen([*oracle_cmd(), *args], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert "result" in _answer(proc, 1)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert _answer(proc, 2)["result"]["tools"]
        _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {  # the search path, loaded
            "name": "oracle_search", "arguments": {"query": "retry backoff", "mode": "fts"}}})
        assert not _answer(proc, 3)["result"].get("isError")
        before = _peak_mb(proc.pid)
        assert proc.stdin is not None
        started = time.monotonic()
        proc.stdin.write(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"oracle_search",'
                         b'"arguments":{"query":"')
        block = b"a" * (1 << 20)
        for _ in range(LINE_MB):
            proc.stdin.write(block)
        proc.stdin.write(b'"}}}\n')
        proc.stdin.flush()
        refused = _answer(proc, 5)
        took = time.monotonic() - started
        assert refused["error"]["code"] == -32600 and "too long" in refused["error"]["message"], refused
        assert f"{MAX_LINE_BYTES:,}" in refused["error"]["message"]
        # The id written last is found too, and a line with no id gets the error with id null.
        proc.stdin.write(b'{"method":"ping","params":{"x":"' + block * 5 + b'"},"jsonrpc":"2.0","id":"tail"}\n')
        proc.stdin.flush()
        assert "too long" in _answer(proc, "tail")["error"]["message"]
        _send(proc, {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
            "name": "oracle_search", "arguments": {"query": "retry backoff", "mode": "fts"}}})
        answer = _answer(proc, 6)
        assert not answer["result"].get("isError"), answer
        assert took < 20, f"{LINE_MB} MB took {took:.1f} s"
        grew = _peak_mb(proc.pid) - before
        assert grew < 64, f"peak memory grew by {grew:.0f} MB for a {LINE_MB} MB line"
        proc.stdin.close()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stop_engines(runtime / "run")
        shutil.rmtree(runtime, ignore_errors=True)


def test_the_reader_is_linear_and_bounded() -> None:
    """The reader alone: 150 MB on one line, fed as a pipe delivers it, in well under a second per 100 MB."""
    import tracemalloc

    from oracle_server.mcp.stdio_front import LineReader, Overlong

    reader = LineReader()
    chunk = b"x" * 65536
    tracemalloc.start()
    started = time.monotonic()
    for _ in range(150 * 16):
        assert reader.feed(chunk) == []
    out = reader.feed(b'\n{"id":1}\n')
    took = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert isinstance(out[0], Overlong) and out[0].size == 150 * 2**20 and out[1] == b'{"id":1}'
    assert took < 5 and peak < 16 * 2**20, (took, peak)
