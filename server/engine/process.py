"""The shared Oracle engine: one process per knowledge root and data dir that owns the models, the file watcher
and the maintenance worker, and serves every stdio session (server/engine/relay.py) and CLI call over a Unix socket.

Why: an MCP client starts one `oracle serve` per window or subagent; each used to load both embedding models
and run its own watcher and worker (about 600 MB and a full re-index reaction per session). Here each session is
a byte relay of a few MB and the engine serves them all with one Oracle.

How: the engine is built from the same code as a standalone server. `build_server` makes one MCP server (tools,
resources, prompts, completions, notifications) whose lifespan (the change notifier) is entered once; every
connection that proves the engine's secret (server/engine/channel.py) is then an independent MCP session, driven
by the SDK's own `serve_dual_era_loop` over the socket (so `initialize`, `server/discover`, subscriptions and
notifications work exactly as over stdio), all sharing the Oracle. The engine exits by itself after
`ORACLE_ENGINE_IDLE` seconds (default 600) with no session attached, never while one is; `oracle engine stop`
ends it at once (attached sessions then carry on in their own process).

HTTP is a front of the same engine (issue 40): `oracle serve --http` with no engine running becomes the engine
(`Engine` in a thread of that process, `hosted`: it never idles out, and it stops with the HTTP server), and with
one running it asks that engine (op `http`) to serve the REST API, the dashboard and /mcp on its port for as long
as the asking process keeps the connection open. Either way one process per root, data dir and settings holds the
models, the watcher and the writer lock. The front itself (uvicorn, FastAPI) lives in `oracle_server.http`, above
this layer: the CLI hands the engine a `FrontFactory` that builds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast

from oracle_server.engine import channel

if TYPE_CHECKING:
    from anyio import AsyncFile

    from oracle_server.mcp.replies import Replies

IDLE_SECONDS = 600.0
MAX_MESSAGE = 64 << 20  # bytes of one JSON-RPC line from a session
LOCK_WAIT = 15.0  # seconds a second engine for the same key waits for the first to go before giving up
WARM_DELAY = 1.0  # as a standalone server: models load once the start-up is done


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get("ORACLE_ENGINE_IDLE", IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def _rss_mb() -> float | None:
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    return None


def take_lock(paths: channel.Paths) -> int | None:
    """The engine's lock, or None when another live engine holds it (that one serves; this one exits). A
    dying engine releases it after closing its stores; a new one waits LOCK_WAIT for that, and gives up early
    when the other engine answers after all."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        if time.monotonic() > deadline:
            os.close(fd)
            return None
        with contextlib.suppress(channel.ChannelError, OSError):
            line, _ = channel.connect(paths, "ping")
            line.sock.close()
            os.close(fd)
            return None
        time.sleep(0.1)


class Front(Protocol):
    """An HTTP front the engine serves (oracle_server.http via the CLI): where it listens, and how it stops."""

    url: str

    def stop(self) -> None: ...


class FrontError(Exception):
    """A front could not start (the port is taken, a wildcard bind without a token): the message says which."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# (the engine's Oracle, the asking process's request: host, port, token) -> a started front; FrontError otherwise
FrontFactory = Callable[[Any, dict], Front]


class Engine:
    """One Oracle and one MCP server, served to every connection that proves the secret."""

    def __init__(self, oracle: Any, server: Any, paths: channel.Paths, secret: bytes, idle: float,
                 fronts: FrontFactory | None = None, hosted: bool = False) -> None:
        self.oracle, self.server, self.paths, self.secret, self.idle = oracle, server, paths, secret, idle
        self.front_factory = fronts
        self.hosted = hosted  # inside `oracle serve --http`: no idle exit, no signal handling (the HTTP server's)
        self.fronts: dict[int, Front] = {}  # HTTP fronts started through op `http`, while their asker is connected
        self.cli_calls = 0  # CLI commands answered (op `call`): what `oracle_stats` shows as `serving.cli_calls`
        self._stop_early = threading.Event()  # `stop` before the loop made its event
        self.sessions = 0
        self.started = time.time()
        self.last_active = time.monotonic()
        self.stopping: Any = None  # anyio.Event, made in the loop
        self.lifespan_state: Any = None
        from oracle_server.mcp.server import INSTRUCTIONS

        self.base_instructions = INSTRUCTIONS  # a relay records them for its handshake cache (server/engine/relay.py)
        self._set_serving()

    def _set_serving(self) -> None:
        self.oracle.serving.update(mode="engine", detail=f"shared engine {self.paths.key}", sessions=self.sessions,
                                   http=sorted(f.url for f in self.fronts.values()), cli_calls=self.cli_calls)

    def status(self) -> dict:
        return {
            "pid": os.getpid(), "key": self.paths.key, "root": str(self.oracle.settings.root),
            "data_dir": str(self.oracle.settings.data_dir), "socket": self.paths.socket, "sessions": self.sessions,
            "started": self.started, "uptime_seconds": round(time.time() - self.started, 1),
            "idle_seconds": self.idle, "idle_for_seconds": None if self.sessions else
            round(time.monotonic() - self.last_active, 1), "rss_mb": _rss_mb(),
            "watching": bool(self.oracle.maintenance and self.oracle.maintenance.watch),
            "ready": self.oracle.ready.is_set(), "version": _version(),
            "http": sorted(f.url for f in self.fronts.values()), "hosted": self.hosted, "cli_calls": self.cli_calls,
        }

    def stop(self) -> None:
        """End the loop (from the loop's own thread: a portal call, or a signal)."""
        self._stop_early.set()
        if self.stopping is not None:
            self.stopping.set()

    # -- the loop ---------------------------------------------------------------------------------
    async def run(self) -> None:
        import anyio

        low = self.server._lowlevel_server
        self.stopping = anyio.Event()
        if self._stop_early.is_set():
            self.stopping.set()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.paths.socket)  # a crashed engine's (we hold the lock: nobody else's)
        async with low.lifespan(low) as state:
            self.lifespan_state = state
            listener = await anyio.create_unix_listener(self.paths.socket, mode=0o600)
            channel.write_private(self.paths.record, json.dumps({
                "pid": os.getpid(), "root": str(self.oracle.settings.root),
                "data_dir": str(self.oracle.settings.data_dir),
                "socket": self.paths.socket, "started": self.started, "version": _version(),
                "settings": channel.settings_digest()}).encode())  # a CLI call checks it (server/cli/commands.py)
            settings = self.oracle.settings
            print(f"oracle engine {self.paths.key}: pid {os.getpid()} serving {settings.root}"
                  f" ({settings.database_line}) on {self.paths.socket}", file=sys.stderr, flush=True)
            if settings.database_notice:
                print(f"oracle engine {self.paths.key}: {settings.database_notice}", file=sys.stderr, flush=True)
            async with listener, anyio.create_task_group() as tg:
                if not self.hosted:
                    tg.start_soon(self._signals)
                    tg.start_soon(self._idle_watch)
                tg.start_soon(listener.serve, self._connection, tg)
                await self.stopping.wait()
                tg.cancel_scope.cancel()
            self.lifespan_state = None

    async def _signals(self) -> None:
        import anyio

        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for _ in signals:
                self.stopping.set()
                return

    async def _idle_watch(self) -> None:
        import anyio

        while True:
            await anyio.sleep(min(1.0, self.idle / 4))
            if self.sessions == 0 and not self.fronts and time.monotonic() - self.last_active > self.idle:
                print(f"oracle engine {self.paths.key}: idle for {self.idle:.0f} s with no session, exiting",
                      file=sys.stderr, flush=True)
                self.stopping.set()
                return

    async def _connection(self, stream: Any) -> None:
        import anyio
        from anyio.streams.buffered import BufferedByteReceiveStream

        async with stream:
            if not _same_user(stream):
                return
            reader = BufferedByteReceiveStream(stream)
            nonce = channel.new_nonce()
            try:
                await stream.send(json.dumps({"oracle-engine": channel.PROTOCOL, "nonce": nonce}).encode() + b"\n")
                with anyio.fail_after(channel.HANDSHAKE_TIMEOUT):
                    hello = json.loads(await reader.receive_until(b"\n", channel.MAX_HELLO))
                theirs, op = str(hello["nonce"]), str(hello["op"])
                if not hmac.compare_digest(str(hello["proof"]), channel.proof(self.secret, "client", nonce, theirs)):
                    return  # nothing is sent to a client that cannot prove the secret
                self.last_active = time.monotonic()
                await stream.send(json.dumps({"ok": True, "pid": os.getpid(), "instructions": self.base_instructions,
                                              "proof": channel.proof(self.secret, "engine", nonce, theirs)}).encode()
                                  + b"\n")
            except (TimeoutError, ValueError, KeyError, TypeError, anyio.EndOfStream, anyio.IncompleteRead,
                    anyio.DelimiterNotFound, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return
            if op == "mcp":
                await self._mcp(reader, stream)
            elif op == "status":
                await stream.send(json.dumps(self.status()).encode() + b"\n")
            elif op == "stop":
                await stream.send(b'{"stopping": true}\n')
                self.stopping.set()
            elif op == "call":
                await self._call(reader, stream)
            elif op == "http":
                await self._http(reader, stream)
            self.last_active = time.monotonic()

    async def _http(self, reader: Any, stream: Any) -> None:
        """Serve an HTTP front for the asking `oracle serve --http` while it stays connected (its Ctrl-C, SIGTERM
        or death closes the connection, and the front with it); the engine never idles out meanwhile."""
        import anyio

        try:
            request = json.loads(await reader.receive_until(b"\n", channel.MAX_HELLO))
            if self.front_factory is None:
                raise FrontError("this engine cannot serve HTTP")
            front = await anyio.to_thread.run_sync(self.front_factory, self.oracle, request)
        except Exception as exc:  # noqa: BLE001 - the port taken, a bad token, a bad request: the asker says so
            answer = {"error": str(exc), "exit_code": getattr(exc, "exit_code", 1)}
            with contextlib.suppress(Exception):
                await stream.send(json.dumps(answer).encode() + b"\n")
            return
        self.fronts[id(front)] = front
        self._set_serving()
        print(f"oracle engine {self.paths.key}: serving HTTP at {front.url}", file=sys.stderr, flush=True)
        try:
            await stream.send(json.dumps({"ok": True, "url": front.url, "pid": os.getpid()}).encode() + b"\n")
            while True:  # until the asker goes (or the engine stops: this task is cancelled)
                await reader.receive()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError,
                OSError):
            pass
        finally:
            del self.fronts[id(front)]
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(front.stop)
            self.last_active = time.monotonic()
            self._set_serving()
            print(f"oracle engine {self.paths.key}: stopped serving HTTP at {front.url}", file=sys.stderr, flush=True)

    async def _mcp(self, reader: Any, stream: Any) -> None:
        """One MCP session over the connection, as `Server.run` serves stdio, with the engine's lifespan."""
        from mcp.server.runner import serve_dual_era_loop
        from mcp.server.stdio import stdio_server

        from oracle_server.mcp.replies import Replies

        low = self.server._lowlevel_server
        replies = Replies()  # the session's answers to the server's own requests (sampling), checked as they come
        self.sessions += 1
        self._set_serving()
        try:
            # stdio_server takes anyio's file objects: _Lines and _Writer offer the part of them it uses
            async with stdio_server(stdin=cast("AsyncFile[str]", _Lines(reader, replies)),
                                    stdout=cast("AsyncFile[str]", _Writer(stream, replies))) as (read_stream,
                                                                                                 write_stream):
                await serve_dual_era_loop(low, read_stream, write_stream, lifespan_state=self.lifespan_state,
                                          init_options=low.create_initialization_options())
        except Exception as exc:  # noqa: BLE001 - one session's broken pipe must not end the engine
            print(f"oracle engine: a session ended with {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        finally:
            self.sessions -= 1
            self.last_active = time.monotonic()
            self._set_serving()

    async def _call(self, reader: Any, stream: Any) -> None:
        """One CLI tool call (server/cli/commands.py): the registry's validation and service, the result's JSON."""
        import anyio

        from oracle_server.registry.tools import BY_NAME, Caller, InvalidArguments
        from oracle_server.services.vocabulary.errors import classify, problems

        try:
            request = json.loads(await reader.receive_until(b"\n", MAX_MESSAGE))
            if request.get("command") == "index":  # `oracle index`: a sync by the engine that holds the writer lock
                report = await anyio.to_thread.run_sync(self._index, bool(request.get("force")))
                answer: dict[str, Any] = {"result": report}
            else:
                tool = BY_NAME[request["tool"]]
                parsed = tool.parse(request.get("arguments") or {})
                caller = Caller("cli@server", "cli")  # logged as a server-process latency, as a CLI call through HTTP
                result = await self.server.slots.run(tool.run, self.oracle, parsed, caller)
                # the tool's text too: the CLI prints it without importing the registry (~1-3 s of pydantic models)
                answer = {"result": tool.dump(parsed, result, "cli"), "text": tool.text_of(self.oracle, parsed, result)}
            self.cli_calls += 1
            self._set_serving()
        except InvalidArguments as exc:
            answer = {"error": f"invalid input: {exc}", "exit_code": exc.exit_code}
        except Exception as exc:  # noqa: BLE001 - classified as the in-process CLI would
            from pydantic import ValidationError

            if isinstance(exc, ValidationError):
                answer = {"error": f"invalid input: {problems(exc.errors())}", "exit_code": 2}
            else:
                error = classify(exc)
                answer = {"error": str(error) if error else f"{type(exc).__name__}: {exc}",
                          "exit_code": error.exit_code if error else 1}
        with contextlib.suppress(Exception):
            await stream.send(json.dumps(answer, ensure_ascii=False).encode() + b"\n")

    def _index(self, force: bool) -> dict:
        self.oracle.wait_ready()  # after the start-up sync: the same answer a local `oracle index` gives then
        from oracle_server.services.capabilities.indexing import index

        return index(self.oracle, force=force).as_dict()


class _Lines:
    """The SDK's stdin for one connection: its lines, as text, answers to the server's requests checked
    (server/mcp/replies.py)."""

    def __init__(self, reader: Any, replies: Replies) -> None:
        self.reader, self.replies = reader, replies

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        import anyio

        try:
            line = (await self.reader.receive_until(b"\n", MAX_MESSAGE)).decode("utf-8", errors="replace")
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.BrokenResourceError,
                anyio.ClosedResourceError, OSError):
            raise StopAsyncIteration from None
        return self.replies.received(line)


class _Writer:
    def __init__(self, stream: Any, replies: Replies) -> None:
        self.stream, self.replies = stream, replies

    async def write(self, text: str) -> None:
        import anyio

        self.replies.sent(text)
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self.stream.send(text.encode("utf-8"))

    async def flush(self) -> None:
        return None


def _same_user(stream: Any) -> bool:
    """The peer runs as this user (SO_PEERCRED; the socket's 0600 mode says the same, this checks it)."""
    from anyio.abc import SocketAttribute

    try:
        raw = stream.extra(SocketAttribute.raw_socket)
        _pid, uid, _gid = struct.unpack("3i", raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                              struct.calcsize("3i")))
    except (OSError, AttributeError, Exception):  # noqa: BLE001 - not Linux: the folder and mode protect it
        return True
    return uid == os.getuid()


def _version() -> str:
    from oracle_server import __version__

    return __version__


@contextlib.contextmanager
def hosted(oracle: Any, server: Any, paths: channel.Paths, fronts: FrontFactory | None,
           on_stop: Callable[[], None]) -> Iterator[Engine]:
    """This process (`oracle serve --http`, which holds the key's lock) is the engine while the block runs: its
    socket is served from a thread, so stdio sessions and CLI calls started later attach to this Oracle instead
    of loading their own. `on_stop` runs when the engine is told to stop (`oracle engine stop`): the caller ends
    its HTTP server then. The caller closes the Oracle, then the lock."""
    import anyio.from_thread

    secret = channel.new_secret()
    channel.write_private(paths.secret, secret)
    engine = Engine(oracle, server, paths, secret, idle_seconds(), fronts=fronts, hosted=True)

    async def serve() -> None:
        try:
            await engine.run()
        except Exception as exc:  # noqa: BLE001 - no socket for sessions: HTTP still serves, sessions run alone
            print(f"oracle: the shared engine's socket failed ({type(exc).__name__}: {exc}); HTTP serves on, stdio"
                  " sessions run in their own process", file=sys.stderr, flush=True)
            return
        if not leaving.is_set():
            on_stop()

    leaving = threading.Event()
    with anyio.from_thread.start_blocking_portal(name="oracle-engine") as portal:
        future = portal.start_task_soon(serve)
        try:
            yield engine
        finally:
            leaving.set()
            for path in (paths.socket, paths.record, paths.secret):  # first: no session may attach to a closing engine
                with contextlib.suppress(OSError):
                    os.unlink(path)
            with contextlib.suppress(Exception):
                portal.call(engine.stop)
            with contextlib.suppress(Exception):
                future.result(timeout=30)


def run(settings: Any, key: str, watch: bool, index: bool, fronts: FrontFactory | None = None) -> int:
    """`oracle engine run`: serve until stopped or idle. Exit 0 when another engine already serves this key."""
    folder = channel.secure_dir()
    paths = channel.Paths(folder, key)
    lock = take_lock(paths)
    if lock is None:
        return 0
    import anyio

    from oracle_server.mcp.server import build_server
    from oracle_server.services.runtime.app import Oracle

    secret = channel.new_secret()
    channel.write_private(paths.secret, secret)
    oracle = Oracle.open(settings, check=False, offline_ok=True)  # no team database: serves the working copy
    engine: Engine | None = None
    try:
        server = build_server(oracle)
        oracle.start(watch=watch and index, sync=index, warm_delay=WARM_DELAY)
        engine = Engine(oracle, server, paths, secret, idle_seconds(), fronts=fronts)
        anyio.run(engine.run)
    finally:
        for path in (paths.socket, paths.record, paths.secret):  # first: no session may attach to a closing engine
            with contextlib.suppress(OSError):
                os.unlink(path)
        oracle.close()
        os.close(lock)  # releases the lock: a new engine may start
    return 0


# -- the client side of `oracle engine status|stop` -------------------------------------------------
def control(op: str, root: str | None, data_dir: str | None) -> list[dict]:
    """Ask every live engine serving this root and data dir (None: any) for its status (or to stop)."""
    folder = channel.runtime_dir()
    answers = []
    for info in channel.records(folder):
        if ((root is not None and info.get("root") != root)
                or (data_dir is not None and info.get("data_dir") != data_dir)):
            continue
        paths = channel.Paths(folder, info["key"])
        try:
            line, _hello = channel.connect(paths, op)
        except (channel.ChannelError, OSError) as exc:
            if not channel.alive(int(info.get("pid", 0))):
                continue  # a crashed engine's record
            answers.append({**info, "error": str(exc)})
            continue
        with line.sock:
            try:
                answer = json.loads(line.readline() or b"{}")
            except ValueError:
                answer = {}
        if op == "stop":
            pid = int(info.get("pid", 0))
            deadline = time.monotonic() + 30
            while channel.alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            answer = {**info, "stopped": not channel.alive(pid)}
        answers.append(answer)
    return answers
