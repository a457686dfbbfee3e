"""`oracle serve --http` as a front of the shared engine (issue 40): one engine per root, data dir and settings.

Before, a stdio session's engine and an HTTP server on the same root each loaded both models, watched the folder
and took turns at the writer lock (640 + 513 MB). Now `serve --http`:

- attaches to the running engine of that key (the key a stdio session computes: server/engine/channel.py): the
  engine serves the REST API, the dashboard and /mcp on the asked port from a thread of its own process, for as
  long as this process keeps the connection open (`wait_attached`); this process holds no Oracle;
- or, with none running, takes the key's lock and is the engine itself (`oracle_server.engine.process.hosted`): its
  Oracle serves HTTP here and every stdio session and CLI call that starts later, over the engine's socket;
- or, when neither works (an engine that holds the lock and does not answer, no private runtime folder), serves
  alone as before. `--standalone` and ORACLE_ENGINE=0 serve alone on purpose.

`front_factory` is what the engine calls to start a front (the engine's layer may not import `oracle_server.http`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from oracle_server.cli import remote
from oracle_server.engine import channel
from oracle_server.engine.process import FrontError

FRONT_START_TIMEOUT = 120.0  # seconds an engine's new front may take to listen (it imports FastAPI the first time)


class ThreadFront:
    """An HTTP server (uvicorn) over the engine's Oracle, run in a thread of the engine's process."""

    def __init__(self, server: Any, sock: Any, url: str, data_dir: str, port: int) -> None:
        self.server, self.sock, self.url, self.data_dir, self.port = server, sock, url, data_dir, port
        self.thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="oracle-http-front",
                                       daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + FRONT_START_TIMEOUT
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            self.stop()
            raise FrontError(f"the HTTP server on {self.url} did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        with contextlib.suppress(OSError):
            self.sock.close()
        remote.forget(self.data_dir, port=self.port)


def front_factory(oracle: Any, request: dict) -> ThreadFront:
    """Start a front for the asking `oracle serve --http` (server/engine/process.py, op `http`): its host, port and
    ORACLE_TOKEN (not the engine's: the engine may have been started by a stdio session without one)."""
    from oracle_server.http.app import PortInUse, bind, make_server
    from oracle_server.services.vocabulary.errors import classify

    host, port, token = str(request.get("host") or "127.0.0.1"), int(request["port"]), str(request.get("token") or "")
    try:
        sock = bind(host, port)
    except PortInUse as exc:
        raise FrontError(str(exc), 1) from None
    secret = remote.record(oracle.settings.data_dir, oracle.settings.root, host, port)  # the CLI's fast path
    try:
        server = make_server(oracle, host, port, proof_secret=secret, token=token)
    except Exception as exc:
        sock.close()
        remote.forget(oracle.settings.data_dir, port=port)
        error = classify(exc)
        raise FrontError(str(error or exc), error.exit_code if error else 1) from None
    front = ThreadFront(server, sock, f"http://{host}:{port}", str(oracle.settings.data_dir), port)
    front.start()
    return front


def engine_paths(args: Any) -> channel.Paths | None:
    """The engine's files for this root, data dir, settings and serve flags: the same key a stdio session uses."""
    from oracle_indexer import locate
    from oracle_server.mcp import stdio_front

    root = locate.resolve_root(args.root)
    data_dir = locate.resolve_data_dir(args.data_dir, root)
    flags = [flag for flag, on in (("--no-index", args.no_index), ("--no-watch", args.no_watch)) if on]
    try:
        return channel.Paths(channel.secure_dir(), channel.engine_key(root, data_dir, flags, stdio_front.code_key()))
    except (channel.ChannelError, OSError):
        return None


def attach(paths: channel.Paths, host: str, port: int) -> int | None:
    """Serve HTTP through the running engine, until a signal or the engine's end; None when no engine answers."""
    try:
        line, hello = channel.connect(paths, "http")
    except (channel.ChannelError, OSError):
        return None
    with line.sock:
        try:
            line.sock.settimeout(FRONT_START_TIMEOUT + 10)
            line.send_json({"host": host, "port": port, "token": os.environ.get("ORACLE_TOKEN") or ""})
            answer = json.loads(line.readline() or b"null")
        except (OSError, ValueError):
            return None
        if not isinstance(answer, dict):
            return None
        if "error" in answer:
            print(f"oracle: {answer['error']}", file=sys.stderr)
            return int(answer.get("exit_code") or 1)
        url, pid = str(answer["url"]), answer.get("pid") or hello.get("pid")
        print(f"oracle: dashboard {url}/  MCP {url}/mcp  (served by the shared engine of this root, pid {pid})",
              file=sys.stderr, flush=True)
        return wait_attached(line)


def wait_attached(line: channel.LineSocket) -> int:
    """Hold the connection (the engine serves the front while it is open) until SIGINT/SIGTERM (exit 0) or the
    engine's end (exit 1: `oracle engine stop`, a crash)."""
    done = threading.Event()
    by_signal: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        by_signal.append(signum)
        done.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)

    def engine_gone() -> None:
        line.sock.settimeout(None)
        with contextlib.suppress(OSError):
            while line.sock.recv(4096):
                pass
        done.set()

    threading.Thread(target=engine_gone, name="oracle-front-watch", daemon=True).start()
    while not done.wait(3600):
        pass
    if by_signal:
        return 0
    print("oracle: the shared engine stopped; so did its HTTP server", file=sys.stderr)
    return 1


def take_or_attach(paths: channel.Paths, host: str, port: int) -> tuple[str, Any]:
    """("attached", exit status) after serving through a running engine, ("lock", fd) when this process may be
    the engine, ("alone", None) when neither (an engine holds the lock and does not answer)."""
    from oracle_server.engine.process import take_lock

    for _ in range(2):
        code = attach(paths, host, port)
        if code is not None:
            return "attached", code
        fd = take_lock(paths)  # waits for a dying engine; gives up when another one answers after all
        if fd is not None:
            return "lock", fd
    return "alone", None
