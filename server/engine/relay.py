"""`oracle serve` over stdio as a thin relay to the shared engine (server/engine/process.py).

Why: one warm engine per root serves every agent session, so a session costs a small process instead of a full
Oracle (both models, a watcher, a worker). The relay imports neither the MCP SDK nor the service layer: it claims
the stdio wire with the same front as a standalone server (server/mcp/stdio_front.py), proves the engine's secret
(server/engine/channel.py) and forwards JSON-RPC lines both ways, byte for byte. Tools, resources, prompts,
completions and notifications therefore pass through unchanged, and each session is its own MCP session in the
engine.

- Warm engine: connected before the first message is read; every message goes straight to the engine.
- No engine: one is started in the background, and meanwhile the front answers `initialize`/`tools/list` from the
  handshake cache as a standalone server does (the live part of the instructions says the engine is starting);
  those requests are replayed to the engine under private ids once it answers, as they are to the SDK.
- The engine cannot start, or dies: the session falls back to an in-process Oracle (the standalone server, on
  the same front), after replaying the session's state to it (its `initialize`, `notifications/initialized`,
  subscriptions, log level) under private ids. A call that was in flight gets a JSON-RPC error saying so (it may
  or may not have run: it is not retried); messages not yet sent go to the in-process server. `oracle_stats`
  says `fallback` and why.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oracle_server.engine import channel
from oracle_server.mcp import stdio_front

START_TIMEOUT = 60.0  # seconds to wait for a new engine to answer before serving in-process
# The deadline of a call through the relay: the engine must show a sign of life (any line: an answer, a
# notification, progress) while a call is in flight. After PING_AFTER seconds of silence the relay pings it; with
# nothing from it for ANSWER_TIMEOUT seconds more (ORACLE_ENGINE_ANSWER_TIMEOUT), the engine is not answering:
# at most about 35 s from its last word to the error (7 s when the engine's process is stopped: SIGSTOP). A long
# call on a live engine is never cut short.
PING_AFTER = 5.0
ANSWER_TIMEOUT = 30.0
STOPPED_AFTER = 2.0  # an engine process that is stopped (SIGSTOP) is not answering once its ping waited this long
STUCK_GRACE = 15.0  # a new session retries an engine that accepts but does not greet (5 s a try) this long
WATCH_TICK = 0.25
ENGINE_STARTING = ("Right now: the shared Oracle engine for this knowledge base is starting (calls wait for it);"
                   " oracle_stats says what the knowledge base holds.")
ENGINE_LOST = -32603  # JSON-RPC internal error: the engine stopped while the call was in flight
_GONE = object()  # in the front's inbox: the engine's connection ended

Fallback = Callable[[stdio_front.Front, str], int]  # (front, reason) -> exit status: the in-process server


def start_timeout() -> float:
    try:
        return float(os.environ.get("ORACLE_ENGINE_START_TIMEOUT", START_TIMEOUT))
    except ValueError:
        return START_TIMEOUT


def answer_timeout() -> float:
    try:
        return max(1.0, float(os.environ.get("ORACLE_ENGINE_ANSWER_TIMEOUT", ANSWER_TIMEOUT)))
    except ValueError:
        return ANSWER_TIMEOUT


def engine_argv(root: str, data_dir: str, key: str, flags: list[str]) -> list[str]:
    return ["--root", root, "--data-dir", data_dir, "engine", "run", "--key", key, *flags]


def serve(root: str, data_dir: str, flags: list[str], fallback: Fallback) -> int:
    """Serve one stdio session through the engine for (root, data dir, flags); `fallback` serves it in-process."""
    code = stdio_front.code_key()
    shared = stdio_front.shared_path(code)
    caches = [*([shared] if shared is not None else []), Path(data_dir) / stdio_front.CACHE_NAME]
    key = channel.engine_key(root, data_dir, flags, code)
    try:
        paths = channel.Paths(channel.secure_dir(), key)
    except (channel.ChannelError, OSError) as exc:
        front = stdio_front.Front(caches, code)
        return fallback(front, f"no private folder for the engine's socket ({exc})")
    conn: channel.LineSocket | None
    hello: dict = {}
    stuck_until = time.monotonic() + STUCK_GRACE
    while True:
        try:
            conn, hello = channel.connect(paths)
        except channel.EngineStuck as exc:
            # A new engine could not take the lock either: serve here, at once for a stopped engine, after
            # STUCK_GRACE for one that may only be starved of CPU (a busy machine) and greet on the next try.
            if channel.stopped(exc.pid) or time.monotonic() >= stuck_until:
                return fallback(stdio_front.Front(caches, code), str(exc))
            continue
        except (channel.ChannelError, OSError):
            conn, hello = None, {}
        break
    # ORACLE_HANDSHAKE_CACHE=0: nothing answered early; the handshake waits for the engine.
    front = stdio_front.Front(caches, code, direct=conn is not None or not stdio_front.enabled())
    if conn is None:
        front.attach(lambda base: f"{base}\n\n{ENGINE_STARTING}")
        front.starting = ("the shared Oracle engine for this knowledge base is starting (it loads the index and"
                          " models once)")
        try:
            proc = channel.spawn(paths, engine_argv(root, data_dir, key, flags))
            threading.Thread(target=proc.wait, name="oracle-engine-reaper", daemon=True).start()
            conn, hello = channel.wait_for(paths, time.monotonic() + start_timeout(), proc)
        except (channel.ChannelError, OSError) as exc:
            return fallback(front, f"the engine could not start: {exc}")
        front.sdk_ready.set()  # from now on every request goes to the engine
    if isinstance(hello.get("instructions"), str):  # so that a session starting the next engine answers at once
        front.set_base_instructions(hello["instructions"])
    return Relay(front, conn, int(hello.get("pid", 0)), fallback).run()


def _key(request_id: Any) -> str:
    return json.dumps(request_id)  # 1 and "1" are two ids


_RESPONSE_HEAD = '{"jsonrpc":"2.0","id":'
_ID = json.JSONDecoder()


def answered(line: str) -> tuple[bool, Any]:
    """(True, its id) when the engine's line answers a request (a result or an error), else (False, None).

    The engine's SDK writes an answer as `{"jsonrpc":"2.0","id":ID,"result":...}`: only the id is read then, not
    the whole answer (a page of search results is ~24 KB; parsing it cost ~0.2 ms a call). Any other shape is
    parsed in full."""
    if line.startswith(_RESPONSE_HEAD):
        try:
            request_id, end = _ID.raw_decode(line, len(_RESPONSE_HEAD))
        except ValueError:
            request_id, end = None, -1
        if end > 0 and (line.startswith(',"result":', end) or line.startswith(',"error":', end)):
            return True, request_id
    message = stdio_front._parse(line)
    if message is not None and "method" not in message and "id" in message:
        return True, message["id"]
    return False, None


class Relay:
    """The session's two pumps: front -> engine (this thread), engine -> front (a reader thread)."""

    def __init__(self, front: stdio_front.Front, conn: channel.LineSocket, pid: int, fallback: Fallback) -> None:
        self.front, self.conn, self.pid, self.fallback = front, conn, pid, fallback
        self.lock = threading.Lock()
        self.in_flight: dict[str, dict] = {}  # id -> the client's request, sent and not answered
        self.initialize: dict | None = None  # the session's state, replayed to an in-process server
        self.initialized = False
        self.subscriptions: list[dict] = []
        self.log_level: dict | None = None
        self.closing = False
        self.lost: str | None = None
        self.send_lock = threading.Lock()  # the session's lines and the relay's pings, never interleaved
        self.quiet_since: float | None = None  # a call in flight and nothing from the engine since then
        self.pinged: float | None = None  # when the relay pinged the engine in that silence
        self.stuck = False
        self.ping_params: dict | None = None  # the session's era: a 2026-era engine session wants its _meta
        threading.Thread(target=self._from_engine, name="oracle-relay", daemon=True).start()

    def run(self) -> int:
        threading.Thread(target=self._watch, name="oracle-relay-watch", daemon=True).start()
        while True:
            item = self.front.inbox.get()
            if item is stdio_front._EOF:
                self.closing = True
                self.conn.sock.close()
                return 0
            if item is _GONE:
                return self._fall_back(None)
            message = stdio_front._parse(item)
            # Recorded as in flight before it is sent: the engine may answer (and then die) before sendall returns,
            # and an answer must find its request here, or the fallback answers it a second time (issue 39).
            key = self._track(message)
            try:
                with self.send_lock:
                    self.conn.sock.sendall(item.encode("utf-8") + b"\n")
            except OSError as exc:
                with self.lock:
                    if key is not None:
                        self.in_flight.pop(key, None)  # not sent: it goes to the in-process server instead
                    self.lost = self.lost or f"the engine's connection failed ({exc.strerror or exc})"
                return self._fall_back(item)
            if message is not None:
                self._sent(message)

    def _track(self, message: dict | None) -> str | None:
        """Record a client's request as in flight; its key, or None for anything else."""
        if message is None or not isinstance(message.get("method"), str):
            return None
        if message["method"] == "notifications/cancelled":  # a cancelled request may never be answered
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                with self.lock:
                    self.in_flight.pop(_key(params["requestId"]), None)
                    if not self.in_flight:
                        self.quiet_since = self.pinged = None
            return None
        if "id" not in message:
            return None
        if isinstance(message["id"], str) and message["id"].startswith(stdio_front.REPLAY_PREFIX):
            return None
        params = message.get("params")
        if isinstance(params, dict) and stdio_front._modern(params):  # a 2026-era session: its pings carry the same
            self.ping_params = {"_meta": params["_meta"]}
        key = _key(message["id"])
        with self.lock:
            self.in_flight[key] = message
            self.quiet_since = self.quiet_since or time.monotonic()
        return key

    def _sent(self, message: dict) -> None:
        """The session's state, once sent (replayed to an in-process server if the engine goes)."""
        method = message.get("method")
        if method is None:
            return  # an answer to a request of the engine's
        if "id" in message:
            if method == "initialize":
                self.initialize = message
            elif method in ("resources/subscribe", "resources/unsubscribe"):
                self.subscriptions.append(message)
            elif method == "logging/setLevel":
                self.log_level = message
        elif method == "notifications/initialized":
            self.initialized = True

    def _watch(self) -> None:
        """Notice a stuck engine (stopped, frozen, deadlocked): while a call is in flight and the engine has sent
        nothing for PING_AFTER seconds, ping it (under a private id: the answer is dropped); an engine that then
        sends nothing at all for answer_timeout() seconds more is not answering. Its calls get that error and the
        session goes on in its own process, as when the engine dies. A slow call on a live engine is not cut
        short: the engine's loop answers the ping while the call runs."""
        wait = answer_timeout()
        while not self.closing:
            time.sleep(WATCH_TICK)
            with self.lock:
                since, pinged = self.quiet_since, self.pinged
            now = time.monotonic()
            if since is None or self.closing:
                continue
            if pinged is None:
                if now - since < PING_AFTER:
                    continue
                ping = json.dumps({"jsonrpc": "2.0", "id": self.front.replay_id(), "method": "ping",
                                   **({"params": self.ping_params} if self.ping_params else {})})
                with self.lock:
                    self.pinged = now
                if self.send_lock.acquire(timeout=wait):  # held for longer: the engine does not even read
                    try:
                        self.conn.sock.sendall(ping.encode("utf-8") + b"\n")
                    except OSError:
                        pass  # the connection is gone: the reader says so
                    finally:
                        self.send_lock.release()
                continue
            if now - pinged < wait and not (now - pinged >= STOPPED_AFTER and channel.stopped(self.pid)):
                continue
            with self.lock:
                if self.quiet_since is None or self.pinged is None or self.closing:
                    continue  # it answered meanwhile
                self.lost = self.lost or (f"the engine is not answering (nothing from it for"
                                          f" {now - self.quiet_since:.0f} s, not even an answer to a ping)")
                self.stuck = True
            with contextlib.suppress(OSError):
                self.conn.sock.shutdown(socket.SHUT_RDWR)  # wakes the reader and a send blocked on the engine
            self.front._put(_GONE)
            return

    def _from_engine(self) -> None:
        reason = "the engine closed the connection"
        try:
            while True:
                line = self.conn.readline()
                if not line:
                    break
                text = line.decode("utf-8", errors="replace")
                is_answer, request_id = answered(text)
                with self.lock:
                    if is_answer:
                        self.in_flight.pop(_key(request_id), None)
                    # any line is a sign of life; the silence that counts starts again (with a call in flight)
                    self.quiet_since = time.monotonic() if self.in_flight else None
                    self.pinged = None
                self.front.from_sdk(text)
        except OSError as exc:
            reason = f"the engine's connection failed ({exc.strerror or exc})"
        if not self.closing:
            with self.lock:
                self.lost = self.lost or reason
            self.front._put(_GONE)

    def _fall_back(self, unsent: str | None) -> int:
        """The engine is gone: fail the calls it held, replay the session's state, serve in this process."""
        self.closing = True
        with contextlib.suppress(OSError):
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.conn.sock.close()
        reason = f"{self.lost} (engine pid {self.pid})"
        replays = []
        with self.lock:
            held, self.in_flight = list(self.in_flight.values()), {}
        for message in held:
            if message.get("method") == "initialize":  # never answered: the in-process server answers it
                replays.append(json.dumps(message))
                self.initialize = None
                continue
            what = "is not answering" if self.stuck else "stopped while this call was running"
            self.front.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": ENGINE_LOST, "message": f"The Oracle engine {what} ({reason});"
                " the call may or may not have completed and was not retried. This session now runs Oracle in its"
                " own process: call again."}}))
        state = []
        if self.initialize is not None:
            state.append(json.dumps({**self.initialize, "id": self.front.replay_id()}))
        if self.initialized:
            state.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for message in [*self.subscriptions, *([self.log_level] if self.log_level else [])]:
            state.append(json.dumps({**message, "id": self.front.replay_id()}))
        self.front.requeue([*state, *replays, *([unsent] if unsent is not None else [])])
        print(f"oracle: {reason}; this session now serves from its own process", file=sys.stderr, flush=True)
        return self.fallback(self.front, reason)
