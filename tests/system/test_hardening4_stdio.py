"""Issue 39, items 6, 7 and 9: the stdio wire and the relay to the shared engine at their edges, through a real
`oracle serve` process and raw JSON-RPC lines (the SDK's client would refuse to send most of them).

6. A malformed line (not JSON, nested 1,000 deep, not an object, not a JSON-RPC message) gets a JSON-RPC error
   and the session goes on (before: a 2 KB line of brackets raised RecursionError in the front's reader thread,
   which ended the session with exit status 0).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _corpus import write
from _procs import oracle_cmd, stop_engines

pytestmark = pytest.mark.slow
HANG = 120.0  # a ceiling that only catches a hang


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("h4-stdio")
    write(base / "root/learnings/retry.md", "# Retry\n\n## Pattern\n\nRetry with exponential backoff.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(base / "root"), ORACLE_DATA_DIR=str(base / "data"), PYTHONIOENCODING="utf-8")
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True, timeout=600)
    return base


@pytest.fixture
def env(indexed: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    for part in ("root", "data"):
        shutil.copytree(indexed / part, tmp_path / part)
    runtime = Path(tempfile.mkdtemp(prefix="oe-"))  # short: a unix socket's path is at most 107 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"),
               ORACLE_CACHE_DIR=str(tmp_path / "cache"), ORACLE_RUNTIME_DIR=str(runtime / "run"),
               PYTHONIOENCODING="utf-8")
    yield env
    stop_engines(runtime / "run")
    shutil.rmtree(runtime, ignore_errors=True)


class Wire:
    """One `oracle serve` over stdio, spoken to in raw lines."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen([*oracle_cmd(), "serve", "--no-watch", *args], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.seen: list[dict] = []

    def send(self, message: dict | str) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def next(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the server closed its output (exit status {self.proc.poll()})"
        message = json.loads(line)
        self.seen.append(message)
        return message

    def answer(self, request_id: object) -> dict:
        while True:
            message = self.next()
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message

    def handshake(self) -> None:
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert "result" in self.answer("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(HANG)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


MALFORMED = [
    ('{"jsonrpc":"2.0","id":2,"method":"ping","params":' + "[" * 1000 + "]" * 1000 + "}", None, -32700, "nested"),
    ("[" * 1000 + "]" * 1000, None, -32700, "nested"),
    ("{not json", None, -32700, "not valid JSON"),
    ("[1, 2]", None, -32600, "not a JSON object"),
    ('"a string"', None, -32600, "not a JSON object"),
    ('{"id": 4, "method": "ping"}', 4, -32600, '"jsonrpc"'),
    ('{"jsonrpc": "2.0", "id": "five"}', "five", -32600, "neither"),
    ('{"jsonrpc": "2.0", "id": 6, "method": 7}', 6, -32600, "not a string"),
    ('{"jsonrpc": "2.0", "id": [7], "method": "ping"}', None, -32600, '"id"'),
]


@pytest.mark.parametrize("mode", ["--standalone", "engine"])
def test_a_malformed_line_gets_an_error_and_the_session_goes_on(env: dict[str, str], mode: str) -> None:
    wire = Wire(env, *([mode] if mode == "--standalone" else []))
    try:
        wire.handshake()
        for line, request_id, code, words in MALFORMED:
            wire.send(line)
            error = wire.next()
            assert error.get("id") == request_id and error["error"]["code"] == code, (line[:60], error)
            assert words in error["error"]["message"] and "session goes on" in error["error"]["message"], error
            wire.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
            assert wire.answer("after") == {"jsonrpc": "2.0", "id": "after", "result": {}}, line[:60]
        wire.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "oracle_search", "arguments": {"query": "retry backoff", "mode": "fts"}}})
        assert not wire.answer(9)["result"].get("isError")
    finally:
        assert wire.close() == 0
