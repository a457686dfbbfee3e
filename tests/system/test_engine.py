"""The shared engine (server/engine/process.py) and the stdio relay (server/engine/relay.py), through real processes and the
official MCP SDK client over stdio: sessions share one engine, see each other's learnings at once, survive the
engine's death with a clear error, and nothing reaches or leaves the engine without its secret.

    .venv/bin/python -m pytest -q tests/system/test_engine.py
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from _mcp import legacy_subscribe
from _procs import indexed_folder, oracle_cmd, private_copy

PROJECT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(PROJECT))
from oracle_server.engine import channel  # noqa: E402

# Handshake-era clients subscribe with `resources/subscribe` as they put it on the wire (tests/_mcp.py), current ones
# listen: nothing here may call an API the SDK deprecates (2026-07-28 removed resources/subscribe).
pytestmark = pytest.mark.filterwarnings("error::mcp.shared.exceptions.MCPDeprecationWarning")
NOTE = "# Retry with backoff\n\n## Pattern\n\nRetry failed network calls with exponential backoff and jitter.\n"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_folder(tmp_path_factory.mktemp("engine"), {"learnings/retry.md": NOTE}, timeout=300)


@pytest.fixture
def kb(indexed: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A private copy of the indexed root and data dir (`private_copy`); every engine started there is stopped."""
    yield from private_copy(indexed, tmp_path)


class Session:
    """One `oracle serve` over stdio driven by the SDK client (its notifications recorded)."""

    def __init__(self, env: dict[str, str], *args: str, mode: str = "auto") -> None:
        self.notes: list[Any] = []
        self.stack = ExitStack()
        try:
            self.errlog = Path(tempfile.mkstemp(prefix="oracle-session-", suffix=".stderr")[1])
            errlog = self.stack.enter_context(open(self.errlog, "w", encoding="utf-8"))
            self.portal = self.stack.enter_context(anyio.from_thread.start_blocking_portal())
            params = StdioServerParameters(command=oracle_cmd()[0], args=[*oracle_cmd()[1:], "serve", *args], env=env)
            client = Client(stdio_client(params, errlog=errlog), mode=mode, message_handler=self._note,  # type: ignore[arg-type]
                            client_info=Implementation(name="engine-tests", version="1"), read_timeout_seconds=120)
            self.client = self.stack.enter_context(self.portal.wrap_async_context_manager(client))
        except BaseException:
            self.stack.close()
            raise

    async def _note(self, message: Any) -> None:
        self.notes.append(message)

    def call(self, name: str, args: dict | None = None) -> Any:
        return self.portal.call(self.client.call_tool, name, args or {})

    def ok(self, name: str, args: dict | None = None) -> dict:
        result = self.call(name, args)
        assert not result.is_error, result.content[0].text
        return result.structured_content

    def serving(self) -> dict:
        return self.ok("oracle_stats")["serving"]

    def close(self) -> None:
        self.stack.close()
        self.errlog.unlink(missing_ok=True)

    def stderr(self) -> str:
        return self.errlog.read_text(encoding="utf-8", errors="replace")


def records(env: dict[str, str]) -> list[dict]:
    folder = Path(env["ORACLE_RUNTIME_DIR"])
    return [json.loads(p.read_text()) for p in sorted(folder.glob("e-*.json"))] if folder.is_dir() else []


def processes() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, command line) of every process readable in /proc (ps, not the records)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        yield int(proc.name), args


def engine_pids(env: dict[str, str]) -> list[int]:
    """Every live `oracle engine run` process for this test's runtime folder."""
    data = env["ORACLE_DATA_DIR"].encode()
    return [pid for pid, args in processes()
            if b"engine" in args and b"run" in args and data in args and alive(pid)]


def relay_pids(env: dict[str, str]) -> list[int]:
    """Every `oracle serve` (stdio) process started with this test's data dir (its environment says)."""
    wanted = b"ORACLE_DATA_DIR=" + env["ORACLE_DATA_DIR"].encode()
    pids = []
    for pid, args in processes():
        if b"serve" not in args:
            continue
        try:
            if wanted in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                pids.append(pid)
        except OSError:
            continue
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by the session that started it) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_for(check, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*oracle_cmd(), *args], env=env, capture_output=True, text=True, timeout=120)


# -- sharing ----------------------------------------------------------------------------------------
def test_sessions_share_one_engine_and_see_each_others_learnings(kb: dict[str, str]) -> None:
    sessions = [Session(kb), Session(kb, mode="legacy"), Session(kb)]
    try:
        served = [s.serving() for s in sessions]
        assert {s["mode"] for s in served} == {"engine"}
        assert len({s["pid"] for s in served}) == 1  # one engine answers all three
        assert served[-1]["sessions"] == 3
        assert len(records(kb)) == 1 and engine_pids(kb) == [served[0]["pid"]]
        # two malloc arenas unless the user chose (server/engine/channel.py spawn)
        environ = Path(f"/proc/{served[0]['pid']}/environ").read_bytes().split(b"\0")
        assert (b"MALLOC_ARENA_MAX=" + channel.ENGINE_MALLOC_ARENAS.encode() in environ
                or "MALLOC_ARENA_MAX" in kb)
        status = json.loads(cli(kb, "engine", "status", "--json").stdout)
        assert len(status) == 1 and status[0]["sessions"] == 3 and status[0]["watching"] is True
        # A relay stays small: no OpenSSL (indexer/digest.py), no MCP SDK, no pydantic in its memory.
        relays = relay_pids(kb)
        assert len(relays) == 3
        for pid in relays:
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert "libcrypto" not in maps and "pydantic_core" not in maps, pid

        legacy = sessions[1]
        legacy.portal.call(legacy_subscribe, legacy.client, "oracle://stats")
        learned = sessions[0].ok("oracle_learn", {
            "pattern": "Pin the embedding model version: vectors from two model versions never compare.",
            "title": "Pin the embedding model", "concepts": ["embedding"]})
        assert learned
        for other in sessions[1:]:  # at once: the same index, no watcher round trip
            hits = other.ok("oracle_search", {"query": "pin embedding model version", "mode": "fts"})["hits"]
            assert hits and hits[0]["title"] == "Pin the embedding model"
        wait_for(lambda: any(getattr(getattr(n, "params", None), "uri", None) == "oracle://stats"
                             for n in legacy.notes), "resources/updated through the relay", timeout=15)
    finally:
        for s in sessions:
            s.close()


def test_a_saved_file_is_searchable_in_every_session(kb: dict[str, str]) -> None:
    sessions = [Session(kb), Session(kb)]
    try:
        (Path(kb["ORACLE_ROOT"]) / "learnings" / "tides.md").write_text(
            "# Harbour tides\n\n## Rule\n\nBoats leave the harbour at high tide.\n", encoding="utf-8")
        for s in sessions:
            wait_for(lambda: bool(s.ok("oracle_search", {"query": "harbour tide", "mode": "fts"})["hits"]),
                     "the saved note in every session", timeout=30)
    finally:
        for s in sessions:
            s.close()


# -- the engine's death and absence --------------------------------------------------------------------
def test_killing_the_engine_mid_call_gives_an_error_and_the_next_call_works(kb: dict[str, str]) -> None:
    session = Session(kb)
    try:
        pid = session.serving()["pid"]
        os.kill(pid, signal.SIGSTOP)  # the call below is certainly in flight when the engine dies
        try:
            pending = session.portal.start_task_soon(session.client.call_tool, "oracle_search", {"query": "retry"})
            time.sleep(0.5)
        finally:
            os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):  # already reaped: nothing left to continue
                os.kill(pid, signal.SIGCONT)
        with pytest.raises(MCPError) as failed:
            pending.result(timeout=60)
        assert "engine stopped while this call was running" in str(failed.value)
        hits = session.ok("oracle_search", {"query": "retry backoff", "mode": "fts"})["hits"]
        assert hits and hits[0]["title"] == "Retry with backoff"
        serving = session.serving()
        assert serving["mode"] == "fallback" and serving["pid"] != pid
        assert "engine" in serving["detail"] and str(pid) in serving["detail"]
        assert "this session now serves from its own process" in session.stderr()
    finally:
        session.close()


def test_killing_the_engine_gives_every_session_its_error_and_a_new_session_a_new_engine(kb: dict[str, str]) -> None:
    """Issue 24's "done when": with several sessions each waiting on a call, kill -9 of the engine answers every
    one of those calls with the error (none hangs), each session's next call works in its own process, and a
    session started afterwards is not stuck on the dead engine's socket, record and secret: it starts a new one."""
    sessions = [Session(kb), Session(kb, mode="legacy"), Session(kb)]
    late = None
    try:
        pid = sessions[0].serving()["pid"]
        assert {s.serving()["pid"] for s in sessions} == {pid}
        os.kill(pid, signal.SIGSTOP)
        try:
            pending = [s.portal.start_task_soon(s.client.call_tool, "oracle_search", {"query": "retry", "mode": mode})
                       for s, mode in zip(sessions, ("fts", "hybrid", "fts"))]
            time.sleep(0.5)
        finally:
            os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):  # already reaped: nothing left to continue
                os.kill(pid, signal.SIGCONT)
        began = time.monotonic()
        for call in pending:
            with pytest.raises(MCPError) as failed:
                call.result(timeout=60)
            assert "engine stopped while this call was running" in str(failed.value)
            assert f"engine pid {pid}" in str(failed.value)
        assert time.monotonic() - began < 30  # an error, not a wait for some timeout
        for s in sessions:
            hits = s.ok("oracle_search", {"query": "retry backoff", "mode": "fts"})["hits"]
            assert hits and hits[0]["title"] == "Retry with backoff"
            assert s.serving()["mode"] == "fallback"
        wait_for(lambda: not alive(pid), "the killed engine to be gone")
        late = Session(kb)
        served = late.serving()
        assert served["mode"] == "engine" and served["pid"] != pid
        assert late.ok("oracle_search", {"query": "retry backoff", "mode": "fts"})["hits"]
        assert engine_pids(kb) == [served["pid"]]
    finally:
        for s in [*sessions, *([late] if late else [])]:
            s.close()


def test_a_stopped_engine_leaves_its_sessions_working(kb: dict[str, str]) -> None:
    session = Session(kb, mode="legacy")
    try:
        session.portal.call(legacy_subscribe, session.client, "oracle://stats")
        pid = session.serving()["pid"]
        stopped = cli(kb, "engine", "stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stdout + stopped.stderr
        wait_for(lambda: not alive(pid), "the engine to exit")
        assert records(kb) == [] and not list(Path(kb["ORACLE_RUNTIME_DIR"]).glob("e-*.sock"))
        assert session.serving()["mode"] == "fallback"  # the session's state was replayed in-process:
        session.ok("oracle_learn", {"pattern": "Fallback sessions still notify their subscribers of changes.",
                                    "title": "Fallback notifies"})
        wait_for(lambda: any(getattr(getattr(n, "params", None), "uri", None) == "oracle://stats"
                             for n in session.notes), "resources/updated after the fallback", timeout=15)
    finally:
        session.close()


def test_an_engine_that_cannot_start_leaves_the_session_in_process(kb: dict[str, str], tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    session = Session({**kb, "ORACLE_RUNTIME_DIR": str(blocker)})
    try:
        serving = session.serving()
        assert serving["mode"] == "fallback" and "no private folder" in serving["detail"]
        assert session.ok("oracle_search", {"query": "retry", "mode": "fts"})["hits"]
    finally:
        session.close()


def test_standalone_starts_no_engine(kb: dict[str, str]) -> None:
    session = Session(kb, "--standalone")
    try:
        assert session.serving()["mode"] == "in-process"
        assert records(kb) == [] and engine_pids(kb) == []
    finally:
        session.close()
    done = subprocess.run([*oracle_cmd(), "serve"], env={**kb, "ORACLE_ENGINE": "0"}, input="", capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and records(kb) == []


# -- lifetime --------------------------------------------------------------------------------------
def test_the_engine_exits_when_idle_and_never_while_a_session_is_attached(kb: dict[str, str]) -> None:
    env = {**kb, "ORACLE_ENGINE_IDLE": "2"}
    session = Session(env)
    try:
        pid = session.serving()["pid"]
        time.sleep(5)  # more than twice the idle time, with a session attached
        assert alive(pid)
        assert session.ok("oracle_search", {"query": "retry", "mode": "fts"})["hits"]
    finally:
        session.close()
    wait_for(lambda: not alive(pid), "the idle engine to exit", timeout=30)
    folder = Path(kb["ORACLE_RUNTIME_DIR"])
    assert not list(folder.glob("e-*.sock")) and not list(folder.glob("e-*.secret")) and records(kb) == []


def raw_session(env: dict[str, str]) -> tuple[dict, dict]:
    """initialize (as the SDK's own client sends it) and an oracle_stats call, by hand: (both answers)."""
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    proc = subprocess.Popen([*oracle_cmd(), "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                         b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"oracle_stats","arguments":{}}}\n')
        proc.stdin.flush()
        stats = json.loads(proc.stdout.readline())
        proc.stdin.close()
        assert proc.stdout.read() == b""  # a replayed initialize's answer never reaches the client
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return answer, stats


def test_a_cold_start_answers_the_handshake_before_the_engine_is_up(kb: dict[str, str]) -> None:
    """The first session records the handshake answers (and the engine's base instructions); after the engine
    is stopped, the next session's `initialize` is answered from them, saying the engine is starting."""
    raw_session(kb)
    assert cli(kb, "engine", "stop").returncode == 0
    wait_for(lambda: not engine_pids(kb), "the engine to exit")
    answer, stats = raw_session(kb)
    assert "shared Oracle engine for this knowledge base is starting" in answer["result"]["instructions"]
    assert stats["id"] == 2 and stats["result"]["structuredContent"]["serving"]["mode"] == "engine"


# -- the channel's security --------------------------------------------------------------------------
def _engine_paths(kb: dict[str, str]) -> channel.Paths:
    [record] = records(kb)
    return channel.Paths(kb["ORACLE_RUNTIME_DIR"], Path(record["socket"]).name[2:-5])


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(10)
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_socket_secret_and_folder_are_private(kb: dict[str, str]) -> None:
    folder = Path(kb["ORACLE_RUNTIME_DIR"])
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)  # left open by someone: the engine's side closes it
    session = Session(kb)
    try:
        session.serving()
        paths = _engine_paths(kb)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(os.stat(paths.socket).st_mode) and stat.S_IMODE(os.stat(paths.socket).st_mode) == 0o600
        for private in (paths.secret, paths.record, paths.lock, paths.log):
            assert stat.S_IMODE(os.stat(private).st_mode) == 0o600, private
    finally:
        session.close()


def test_a_symlinked_runtime_folder_is_refused(kb: dict[str, str], tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    Path(kb["ORACLE_RUNTIME_DIR"]).symlink_to(real)
    session = Session(kb)
    try:
        serving = session.serving()
        assert serving["mode"] == "fallback" and "not a folder" in serving["detail"]
        assert not list(real.iterdir())
    finally:
        session.close()


def test_a_connection_without_the_secret_gets_nothing(kb: dict[str, str]) -> None:
    session = Session(kb)
    try:
        session.serving()
        paths = _engine_paths(kb)
        initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
        wrong = {"op": "mcp", "nonce": "00" * 16, "proof": "11" * 32}
        for hello in (initialize, json.dumps(wrong), json.dumps({**wrong, "op": "status"}), "garbage"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(paths.socket)
                sock.sendall(hello.encode() + b"\n" + initialize.encode() + b"\n")
                received = _read_all(sock)
            greeting, _, rest = received.partition(b"\n")
            assert set(json.loads(greeting)) == {"oracle-engine", "nonce"}  # only the challenge
            assert rest == b"", rest  # and then the connection closed: no answer, no data
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:  # a silent client is cut off
            sock.connect(paths.socket)
            started = time.monotonic()
            assert b"\n" in _read_all(sock) and time.monotonic() - started < channel.HANDSHAKE_TIMEOUT + 5
        line, hello = channel.connect(paths, "status")  # with the secret: an answer
        with line.sock:
            assert json.loads(line.readline())["sessions"] == 1
    finally:
        session.close()


def test_a_client_never_sends_a_query_to_an_impostor(kb: dict[str, str]) -> None:
    """A process holding the socket path without the secret (a stale path taken over) gets the client's proof
    and no query; the session then starts a real engine and works."""
    first = Session(kb)
    first.close()
    paths = _engine_paths(kb)
    assert cli(kb, "engine", "stop").returncode == 0
    wait_for(lambda: not engine_pids(kb), "the engine to exit")
    channel.write_private(paths.secret, b"a stale secret the impostor does not know")
    received: list[bytes] = []
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(paths.socket)
    impostor.listen()

    def answer() -> None:
        impostor.settimeout(60)
        try:
            conn, _ = impostor.accept()
        except OSError:
            return
        with conn:
            conn.sendall(b'{"oracle-engine": 1, "nonce": "' + b"ab" * 16 + b'"}\n')
            conn.settimeout(5)
            received.append(conn.recv(65536))
            conn.sendall(b'{"ok": true, "proof": "' + b"00" * 32 + b'"}\n')
            conn.settimeout(2)
            try:
                while chunk := conn.recv(65536):
                    received.append(chunk)
            except OSError:
                pass

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    session = Session(kb)
    try:
        assert session.serving()["mode"] == "engine"  # a real engine replaced the impostor
        thread.join(10)
        assert received, "the impostor was never asked"
        sent = b"".join(received)
        assert json.loads(sent.split(b"\n")[0])["op"] == "mcp" and b"jsonrpc" not in sent and b"retry" not in sent
    finally:
        session.close()
        impostor.close()


# -- the CLI ---------------------------------------------------------------------------------------
def test_the_cli_answers_through_a_running_engine(kb: dict[str, str]) -> None:
    local = json.loads(cli(kb, "search", "retry backoff", "--mode", "fts", "--json").stdout)
    assert json.loads(cli(kb, "stats", "--json").stdout)["serving"]["mode"] == "in-process"  # no engine: alone
    session = Session(kb)
    try:
        pid = session.serving()["pid"]
        stats = json.loads(cli(kb, "stats", "--json").stdout)
        assert stats["serving"] == {"mode": "engine", "detail": stats["serving"]["detail"], "pid": pid, "sessions": 1,
                                    "http": [], "cli_calls": 0}  # no HTTP front; this is the first CLI call
        through = json.loads(cli(kb, "search", "retry backoff", "--mode", "fts", "--json").stdout)
        for result in (local, through):
            result["meta"].pop("took_ms")
        assert through == local
        learned = cli(kb, "learn", "Engines serialise every write through one process.", "--title", "One writer")
        assert learned.returncode == 0, learned.stderr
        assert session.ok("oracle_search", {"query": "engines serialise writes", "mode": "fts"})["hits"]
        bad = cli(kb, "search", "x", "--limit", "0")
        assert bad.returncode == 2 and "limit" in bad.stderr
        assert json.loads(cli(kb, "--local", "stats", "--json").stdout)["serving"]["mode"] == "in-process"
    finally:
        session.close()


def test_a_stale_server_json_gets_no_query_and_no_token(kb: dict[str, str]) -> None:
    """`server.json` names a port that something else now holds: the CLI asks it for the recorded server's
    proof, gets none, and answers alone; the query and ORACLE_TOKEN never leave the process."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def serve() -> None:
        listener.settimeout(60)
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    received.append(conn.recv(65536))
                    conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n'
                                 b'{"proof": "00"}')
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    data = Path(kb["ORACLE_DATA_DIR"])
    channel.write_private(str(data / "server.json"), json.dumps({
        "pid": os.getppid(), "host": "127.0.0.1", "port": port, "root": kb["ORACLE_ROOT"], "started": 0,
        "secret": "ab" * 32}).encode())
    token = "a-token-that-must-stay-home-1234"
    try:
        done = cli({**kb, "ORACLE_TOKEN": token}, "search", "retry", "backoff", "--mode", "fts", "--json")
        assert done.returncode == 0 and json.loads(done.stdout)["hits"], done.stderr
        sent = b"".join(received)
        assert sent.startswith(b"GET /api/server-proof?nonce=")  # asked to prove itself, and nothing else
        assert b"retry" not in sent and token.encode() not in sent and b"Authorization" not in sent
        received.clear()
        (data / "server.json").write_text(json.dumps({  # an older record without a secret: not even asked
            "pid": os.getppid(), "host": "127.0.0.1", "port": port, "root": kb["ORACLE_ROOT"], "started": 0}))
        (data / "server.json").chmod(0o600)
        done = cli({**kb, "ORACLE_TOKEN": token}, "search", "retry", "--mode", "fts", "--json")
        assert done.returncode == 0 and received == []
    finally:
        listener.close()
