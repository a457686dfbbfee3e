"""Issue 39, items 6, 7 and 9: the stdio wire and the relay to the shared engine at their edges, through a real
`oracle serve` process and raw JSON-RPC lines (the SDK's client would refuse to send most of them).

6. A malformed line (not JSON, nested 1,000 deep, not an object, not a JSON-RPC message) gets a JSON-RPC error
   and the session goes on (before: a 2 KB line of brackets raised RecursionError in the front's reader thread,
   which ended the session with exit status 0).
7. A frozen engine (SIGSTOP): a call in flight gets "engine not answering" once the engine has said nothing for
   its deadline (server/engine/relay.py: a ping after 5 s of silence, then 30 s for any answer, 2 s when the engine's
   process is stopped), and the session goes on in its own process; a new session notices the stuck engine at its
   greeting (5 s) instead of waiting out the 60 s start timeout (before: the call hung for ever, and the new
   session's calls waited 60 s).
9. The relay records a request as in flight before sending it: an engine that answers and then dies at once gets
   the client one answer per id, and an answered `initialize` is not replayed as the client's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _procs import indexed_folder, private_copy, stop_engines
from _wire import Wire

pytestmark = pytest.mark.slow
HANG = 120.0  # a ceiling that only catches a hang


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    notes = {"learnings/retry.md": "# Retry\n\n## Pattern\n\nRetry with exponential backoff.\n"}
    return indexed_folder(tmp_path_factory.mktemp("h4-stdio"), notes)


@pytest.fixture
def env(indexed: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    yield from private_copy(indexed, tmp_path)


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


def _call(wire: Wire, request_id: object, name: str, arguments: dict) -> dict:
    wire.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    return wire.answer(request_id)


def _serving(wire: Wire, request_id: object) -> dict:
    answer = _call(wire, request_id, "oracle_stats", {})
    return answer["result"]["structuredContent"]["serving"]


def test_a_frozen_engine_gets_calls_an_error_and_new_sessions_go_on_without_it(env: dict[str, str]) -> None:
    first = Wire(env)
    late = None
    pid = 0
    try:
        first.handshake()
        pid = _serving(first, 1)["pid"]
        assert _serving(first, 2)["mode"] == "engine"
        os.kill(pid, signal.SIGSTOP)
        began = time.monotonic()
        answer = _call(first, 3, "oracle_search", {"query": "retry backoff", "mode": "fts"})
        noticed = time.monotonic() - began
        assert "error" in answer and "engine is not answering" in answer["error"]["message"], answer
        assert f"engine pid {pid}" in answer["error"]["message"] and "call again" in answer["error"]["message"]
        hits = _call(first, 4, "oracle_search", {"query": "retry backoff", "mode": "fts"})
        assert hits["result"]["structuredContent"]["hits"], hits
        serving = _serving(first, 5)
        assert serving["mode"] == "fallback" and "not answering" in serving["detail"], serving
        # A new session: the engine's socket accepts (the kernel does), but it never greets.
        began = time.monotonic()
        late = Wire(env)
        late.handshake()
        serving = _serving(late, 1)
        started = time.monotonic() - began
        assert serving["mode"] == "fallback" and "not answering" in serving["detail"], serving
        assert f"pid {pid}" in serving["detail"] and "oracle engine stop" in serving["detail"]
        assert _call(late, 2, "oracle_search", {"query": "retry backoff", "mode": "fts"})["result"][
            "structuredContent"]["hits"]
        print(f"a call in flight heard 'not answering' after {noticed:.1f} s; a new session served in {started:.1f} s")
    finally:
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for wire in (first, late):
            if wire is not None:
                assert wire.close() == 0, wire.stderr()


# The relay with an engine that answers the first request it reads and closes the connection at once. Which
# happens first, the relay's bookkeeping after sendall or its reader taking the answer, is a race between two
# threads that no real process can be made to lose every time: here the relay's end of the connection is a real
# socket whose sendall returns only after the reader has read the answer and the end of the connection (a test
# double for thread scheduling, the one fault that cannot be caused for real). The fallback prints what an
# in-process server would be handed (the session's state) instead of serving it.
RACE = r"""
import json, socket, sys, threading
from oracle_server.engine import relay
from oracle_server.engine.channel import LineSocket
from oracle_server.mcp import stdio_front

relay_end, engine_end = socket.socketpair()
ended = threading.Event()

class Raced:
    def __init__(self, sock): self.sock = sock
    def recv(self, n):
        data = self.sock.recv(n)
        if not data:
            ended.set()
        return data
    def sendall(self, data):
        self.sock.sendall(data)
        assert ended.wait(60), "the reader never saw the end of the connection"
    def shutdown(self, how): self.sock.shutdown(how)
    def close(self): self.sock.close()

def engine():
    message = json.loads(engine_end.makefile("rb").readline())
    engine_end.sendall(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"from": "engine"}}).encode() + b"\n")
    engine_end.shutdown(socket.SHUT_RDWR)
    engine_end.close()

def fallback(front, reason):
    while True:
        try:
            item = front.inbox.get_nowait()
        except Exception:
            break
        if isinstance(item, str):
            print("IN-PROCESS " + item, file=sys.stderr, flush=True)
    return 0

threading.Thread(target=engine, daemon=True).start()
front = stdio_front.Front([], "race", direct=True)
sys.exit(relay.Relay(front, LineSocket(Raced(relay_end)), 4242, fallback).run())
"""


@pytest.mark.parametrize("method", ["initialize", "tools/call"])
def test_an_engine_that_answers_then_dies_gets_one_answer_per_id(method: str) -> None:
    params = ({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
              if method == "initialize" else {"name": "oracle_stats", "arguments": {}})
    proc = subprocess.Popen([sys.executable, "-c", RACE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode() + b"\n")
        proc.stdin.flush()  # and kept open: the session's end must not come before the engine's
        assert proc.wait(HANG) == 0
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    answers = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert answers == [{"jsonrpc": "2.0", "id": 7, "result": {"from": "engine"}}], (answers, err.decode()[-2000:])
    handed = [json.loads(line.split(" ", 1)[1]) for line in err.decode().splitlines() if line.startswith("IN-PROCESS ")]
    assert all(m.get("id") != 7 for m in handed), handed  # nothing of the client's is answered a second time
    if method == "initialize":  # the session's state goes on under a private id
        assert [m["method"] for m in handed] == ["initialize"] and str(handed[0]["id"]).startswith("oracle-front:")


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a folder owned by another user needs root")
def test_a_runtime_folder_another_user_planted_is_not_used(env: dict[str, str], tmp_path: Path) -> None:
    """Item 13: `oracle-<uid>` in the temporary folder is a predictable name in a folder everyone may write; another
    user who creates it first (here: a folder owned by `nobody`) used to make every session run alone ("belongs to
    another user"). Now the engine's folder is `run` in Oracle's cache folder instead, and the planted folder is
    never written. The temporary folder is the test's own (TMPDIR), not the machine's /tmp."""
    temp = Path(tempfile.mkdtemp(prefix="ot-"))
    try:
        planted = temp / f"oracle-{os.getuid()}"
        planted.mkdir(mode=0o777)
        os.chown(planted, 65534, 65534)
        os.chmod(planted, 0o777)  # open to everyone: a session would have written its socket there
        cache = temp / "c"
        mine = {k: v for k, v in env.items() if k not in ("ORACLE_RUNTIME_DIR", "XDG_RUNTIME_DIR")}
        mine.update(TMPDIR=str(temp), ORACLE_CACHE_DIR=str(cache))
        wire = Wire(mine)
        try:
            wire.handshake()
            serving = _serving(wire, 1)
            assert serving["mode"] == "engine", serving
            assert list(planted.iterdir()) == []
            assert list((cache / "run").glob("e-*.sock")), sorted((cache / "run").iterdir())
            assert stat.S_IMODE((cache / "run").stat().st_mode) == 0o700
        finally:
            assert wire.close() == 0, wire.stderr()
            stop_engines(cache / "run")
    finally:
        shutil.rmtree(temp, ignore_errors=True)
