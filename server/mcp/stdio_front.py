"""`oracle serve` over stdio: answer the handshake before the MCP SDK has loaded.

Importing the MCP SDK and building the server takes most of a second, and the plain reference server pays the
same (benchmarks/client.py). A client, though, only needs `initialize` (or, in the 2026 protocol,
`server/discover`) and `tools/list` before it can show the tools. So this module owns the wire from the start:

- a reader thread answers those requests from the answers the SDK itself gave to the same request in an earlier
  session, with the instructions computed fresh; every other message waits in a queue;
- meanwhile the main thread imports the SDK and builds the server, which then reads that queue and writes
  through the same wire (fd 1 is pointed at stderr, as the SDK does, so that a stray print cannot corrupt it);
- every request answered here is replayed to the SDK under a private id and its answer dropped, so the SDK's
  session is in the state it would have been in (the handshake);
- answers the SDK gives to cacheable requests, replayed ones included, are recorded for the next session. A request not
  seen before, a changed source file or changed settings simply go to the SDK: the cache is never a second
  implementation.

Where the answers are kept: one file per version of the code in the user's cache folder (`shared_path`,
`handshake-<key>.json`), shared by every knowledge root and data dir, so the first start on a brand-new root is
answered early too (`make install` records it once: server/mcp/warm.py). The answers depend on the code alone: the
settings (root, data dir, Chroma, limits, folder types, ...) change only the instructions, which are computed live
per base, and the client's name and version are not part of any answer. When the cache folder cannot be written,
the data dir's `mcp-handshake.json` is used instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import sys
import threading
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from oracle_indexer.digest import sha256
from oracle_indexer.safe_write import PRIVATE, write_atomic

if TYPE_CHECKING:  # anyio loads with the SDK, after the handshake
    from anyio import AsyncFile

    from oracle_server.mcp.replies import Replies

CACHE_NAME = "mcp-handshake.json"  # in the data dir, when the shared cache folder cannot be written
SHARED_PREFIX = "handshake-"  # handshake-<key>.json in the user's cache folder
SHARED_KEEP = 8  # cache files of other code versions kept (other checkouts, venvs); older ones are removed
REPLAY_PREFIX = "oracle-front:"
CACHEABLE = ("initialize", "server/discover", "tools/list")
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
_EOF = object()


def shared_path(key: str) -> Path | None:
    """This code version's file in the user's cache folder (indexer/locate.py: ORACLE_CACHE_DIR, else
    $XDG_CACHE_HOME/oracle, else ~/.cache/oracle)."""
    from oracle_indexer.locate import cache_home

    folder = cache_home()
    return Path(folder) / f"{SHARED_PREFIX}{key[:32]}.json" if folder is not None else None


def code_key() -> str:
    """What the handshake answers depend on: Oracle's, the SDK's and pydantic's code and the Python version.

    Not the settings: every setting was checked against the SDK's answers (another root with its own
    oracle.toml, a Chroma URL and collection, ORACLE_MULTILINGUAL, folder types, the default type, port, file and
    chunk limits, log retention) and none changes them beyond the instructions, which are made live anyway. A
    setting that did would only cost one wrong early answer: the replay to the SDK rewrites the entry."""
    h = sha256(sys.version.encode("utf-8"))
    here = Path(__file__).resolve().parent.parent  # server/
    files = [*sorted(here.rglob("*.py")), *sorted((here.parent / "indexer").rglob("*.py"))]
    for name in ("mcp", "mcp_types", "pydantic"):  # an upgrade rewrites a package's top-level modules
        spec = find_spec(name)  # finds the package without importing it
        if spec is not None and spec.origin:
            files += sorted(Path(spec.origin).parent.glob("*.py"))
    for path in files:
        with contextlib.suppress(OSError):
            st = path.stat()
            h.update(f"{path}\x00{st.st_size}\x00{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


class Front:
    """The stdio wire, shared by the early answers (reader thread) and the SDK (once built)."""

    def __init__(self, cache_paths: list[Path], key: str, direct: bool = False) -> None:
        """`direct`: a live server is already there (a warm engine: server/engine/relay.py), so nothing is answered
        from the cache; every message goes to it as it comes."""
        self.cache_paths = cache_paths  # where answers are looked for and written, the first that works
        self.key = key
        self.instructions: Callable[[str], str] | None = None  # base -> live instructions, once the index is open
        self._attached = threading.Event()
        # Set once the client has had its tools (or asked for something else, or hung up): the start-up sync
        # waits for it, so that indexing a big new root never competes with the handshake.
        self.handshake_done = threading.Event()
        self.cache = self._load()
        self.inbox: queue.Queue = queue.Queue()
        self._inbox_lock = threading.Lock()  # a put never lands in a queue being replaced (`requeue`)
        self.sdk_ready = threading.Event()
        if direct:
            self.sdk_ready.set()
        # Said to a call that arrives before the server can take it (a progress notification, where the client sent
        # a progressToken, and a log line): the relay sets its own while a shared engine starts (server/engine/relay.py)
        self.starting = "the server is starting (the MCP SDK, the index and the models load once)"
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._session_init: str | None = None  # cache key of the initialize answered here (handshake era)
        self._pending: dict[Any, str | None] = {}  # request id -> cache key (None: a replay), for the SDK's answers
        self.replies: Replies | None = None  # the client's answers to the SDK's requests, once it reads (sdk_stdin)
        self._replays = 0
        # Claim the wire as the SDK's stdio transport does: the protocol on private descriptors, fd 0 at the null
        # device and fd 1 at stderr, so that handlers and children cannot read from or write into it.
        self._in = os.dup(0)
        self._out = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        threading.Thread(target=self._read, name="oracle-stdio-front", daemon=True).start()

    # -- cache ----------------------------------------------------------------------------------------
    def _load(self) -> dict[str, Any]:
        """The first cache file that holds this code version's answers; an unreadable, corrupt or stale one
        is as good as none (the SDK answers, and its answers replace the file)."""
        for path in self.cache_paths:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            if isinstance(data, dict) and data.get("key") == self.key and isinstance(data.get("answers"), dict):
                return data
        return {}

    def _remember(self, cache_key: str, result: Any) -> None:
        with self._state_lock:
            answers = self.cache.get("answers") if self.cache.get("key") == self.key else None
            if answers is None:
                answers = {}
                self.cache = {"key": self.key, "answers": answers}
            base = answers.get("base_instructions")
            if isinstance(result, dict) and "instructions" in result and isinstance(base, str):
                result = {**result, "instructions": base}  # the live part is made fresh each time it is answered
            if answers.get(cache_key) == result:
                return
            answers[cache_key] = result
            self._write()  # rare (an answer changed): under the lock, atomically

    def _write(self) -> None:
        """Write the cache to the first of its paths that takes it; a failure only costs the next start time."""
        text = json.dumps(self.cache, ensure_ascii=False)
        for path in self.cache_paths:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fresh = not path.exists()
                write_atomic(path, text, PRIVATE)  # a random temporary name: a planted link is never followed
            except OSError:
                continue
            if fresh and path.name.startswith(SHARED_PREFIX):
                _prune(path)
            return

    def attach(self, instructions: Callable[[str], str]) -> None:
        """The index is open: answers that carry instructions can be given now."""
        self.instructions = instructions
        self._attached.set()

    def set_base_instructions(self, base: str) -> None:
        """The static instructions, recorded so that a later session can write live ones without the SDK."""
        self._remember("base_instructions", base)

    # -- the wire -------------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        data = text.encode("utf-8")
        if not data.endswith(b"\n"):
            data += b"\n"
        with self._write_lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self._out, view):]

    def _read(self) -> None:
        lines = LineReader()
        try:
            while True:
                chunk = os.read(self._in, 1 << 16)
                if not chunk:
                    break
                for line in lines.feed(chunk):
                    self._take(line)
            for line in lines.finish():
                self._take(line)
        except OSError:
            pass
        finally:
            self._put(_EOF)

    def _take(self, line: bytes | Overlong) -> None:
        if isinstance(line, Overlong):
            self.send(json.dumps({"jsonrpc": "2.0", "id": line.request_id(), "error": {
                "code": INVALID_REQUEST, "message": f"message too long: {line.size:,} bytes on one line, at most"
                f" {MAX_LINE_BYTES:,}; it was skipped (send large text in parts, e.g. one learning per call)"}}))
        elif line.strip():
            self._on_line(line.decode("utf-8", errors="replace"))

    def _on_line(self, line: str) -> None:
        message = _parse(line)
        method = message.get("method") if message is not None else None
        if method not in (*CACHEABLE, "notifications/initialized"):
            self.handshake_done.set()  # a call, a reply, anything else: the client is past its handshake
        error = malformed(line) if message is None else not_a_message(message)
        if error is not None:
            self.send(json.dumps(error))  # answered here: the SDK would only log it, and the client wait on
            return
        if message is not None and method in CACHEABLE and "id" in message:
            cache_key = self._cache_key(message)
            if cache_key is not None:
                if not self.sdk_ready.is_set() and self._answer(message, cache_key, line):
                    return
                with self._state_lock:
                    self._pending[message["id"]] = cache_key
        if method == "tools/call" and message is not None and not self.sdk_ready.is_set():
            self._tell_starting(message)
        self._put(line)

    def _tell_starting(self, message: dict) -> None:
        """A call before the server is up waits for it: say so (issue 40: 7 s of silence before a cold session's first
        answer). Progress 0 here; the server's own notifications for the call go on from 1."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        name = params.get("name") if isinstance(params, dict) else None
        print(f"oracle: {name} waits: {self.starting}", file=sys.stderr, flush=True)
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, (str, int)) and not isinstance(token, bool):
            self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": token, "progress": 0, "message": f"{name} waits: {self.starting}"}},
                ensure_ascii=False, separators=(",", ":")))

    def _cache_key(self, message: dict) -> str | None:
        method, params = message["method"], message.get("params")
        if method == "tools/list" and isinstance(params, dict) and params.get("cursor"):
            return None
        key = f"{method} {json.dumps(_anonymous(params), sort_keys=True, ensure_ascii=False)}"
        if method == "tools/list" and not _modern(params):  # handshake era: the answer belongs to the session
            if self._session_init is None:
                return None
            key += f" after {self._session_init}"
        return key

    def _answer(self, message: dict, cache_key: str, line: str) -> bool:
        """Answer from the cache when an earlier session recorded this request's answer; False otherwise."""
        answers = self.cache.get("answers", {})
        result = answers.get(cache_key)
        base = answers.get("base_instructions")
        if not isinstance(result, dict) or (("instructions" in result) and not isinstance(base, str)):
            return False
        if message["method"] == "initialize" and self._session_init is not None:
            return False  # one initialize per connection; a second one is the SDK's to refuse
        if "instructions" in result:
            self._attached.wait()
            try:
                assert self.instructions is not None
                result = {**result, "instructions": self.instructions(base)}
            except Exception:  # noqa: BLE001 - the SDK answers instead
                return False
        if message["method"] == "initialize":
            self._session_init = cache_key
        # The SDK gets the same request under a private id: its session state is what it would have been (the
        # handshake), and its answer, dropped, refreshes the cache.
        with self._state_lock:
            self._replays += 1
            replay_id = f"{REPLAY_PREFIX}{self._replays}"
            self._pending[replay_id] = cache_key
        self._put(json.dumps(dict(message, id=replay_id), ensure_ascii=False))
        self.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}, ensure_ascii=False,
                             separators=(",", ":")))
        if message["method"] == "tools/list":
            self.handshake_done.set()
        return True

    # -- what the SDK's stdio transport reads and writes (stdio_server(stdin=..., stdout=...)) ----------
    # The SDK's stdio_server takes anyio's file objects; these two offer the part of them it uses.
    def sdk_stdin(self) -> AsyncFile[str]:
        from oracle_server.mcp.replies import Replies  # with the SDK, which is loaded by now

        self.replies = Replies()
        return cast("AsyncFile[str]", _Lines(self))

    def sdk_stdout(self) -> AsyncFile[str]:
        return cast("AsyncFile[str]", _Writer(self))

    def from_sdk(self, text: str) -> None:
        """One message the SDK sends: record cacheable answers; drop the answers to replayed requests."""
        if self.replies is not None:
            self.replies.sent(text)  # a request of its own (sampling): its answer is checked as it comes
        if self._pending:
            message = _parse(text)
            if message is not None and "id" in message and ("result" in message or "error" in message):
                with self._state_lock:
                    cache_key = self._pending.pop(message["id"], None)
                if cache_key is not None and isinstance(message.get("result"), dict):
                    if cache_key.startswith("initialize "):
                        self._session_init = cache_key
                    self._remember(cache_key, message["result"])
                if isinstance(message["id"], str) and message["id"].startswith(REPLAY_PREFIX):
                    return
                if cache_key is not None and cache_key.startswith("tools/list "):
                    self.send(text)
                    self.handshake_done.set()
                    return
        self.send(text)

    def _put(self, item: Any) -> None:
        with self._inbox_lock:
            self.inbox.put(item)

    def requeue(self, first: list[str]) -> None:
        """Put `first` ahead of every message still waiting, in order (a relay that lost its engine replays the
        session's state to the in-process server it falls back to: server/engine/relay.py). Anything that is not a
        message (a relay's own marker) is dropped; the end of input is kept."""
        with self._inbox_lock:
            old, fresh = self.inbox, queue.Queue[Any]()
            for line in first:
                fresh.put(line)
            while True:
                try:
                    item = old.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, str) or item is _EOF:
                    fresh.put(item)
            self.inbox = fresh

    def replay_id(self) -> str:
        """A private request id whose answer `from_sdk` drops (a request the client never sent)."""
        with self._state_lock:
            self._replays += 1
            replay_id = f"{REPLAY_PREFIX}{self._replays}"
            self._pending[replay_id] = None
        return replay_id

    def close(self) -> None:
        self._put(_EOF)  # (handshake_done stays as it is: a worker still held is stopping, not starting)


class _Lines:
    """The SDK's stdin: lines from the front's queue (blocking gets run in a worker thread, as anyio.wrap_file's)."""

    def __init__(self, front: Front) -> None:
        self.front = front

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        import anyio.to_thread

        line = await anyio.to_thread.run_sync(self.front.inbox.get, abandon_on_cancel=True)
        if line is _EOF:
            self.front._put(_EOF)  # later readers see the end too
            raise StopAsyncIteration
        replies = self.front.replies
        return line if replies is None else replies.received(line)


class _Writer:
    def __init__(self, front: Front) -> None:
        self.front = front

    async def write(self, text: str) -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(self.front.from_sdk, text)

    async def flush(self) -> None:
        return None


MAX_LINE_BYTES = 4 * 1024 * 1024  # one JSON-RPC message; a learning (50,000 characters) escaped is far less
INVALID_REQUEST = -32600
_HEAD_ID = re.compile(rb'^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,100}"\s*,)*'
                      rb'\s*"id"\s*:\s*(-?\d{1,20}|"[^"\\]{0,200}")')
_TAIL_ID = re.compile(rb',\s*"id"\s*:\s*(-?\d{1,20}|"[^"\\]{0,200}")\s*\}\s*$')


class Overlong:
    """A line longer than MAX_LINE_BYTES, skipped: its size, and its first and last bytes, where a request's id
    sits when the client writes it first or last (so the client gets its error under the right id)."""

    def __init__(self, head: bytes, tail: bytes, size: int) -> None:
        self.head, self.tail, self.size = head, tail, size

    def request_id(self) -> int | str | None:
        found = _HEAD_ID.match(self.head) or _TAIL_ID.search(self.tail)
        if found is None:
            return None
        try:
            value = json.loads(found.group(1))
        except ValueError:
            return None
        return value if isinstance(value, (int, str)) else None


class LineReader:
    """Newline-delimited messages from a byte stream in linear time and bounded memory. Before, each read was
    appended to one bytes object and searched from its start (a 150 MB line: 107 s, 1.25 GB); now the buffer is
    searched only where new bytes arrived, and a line past `limit` is not kept: its first and last KB are, and
    everything up to the next newline is dropped as it comes."""

    KEEP = 1024

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self.buffer = bytearray()
        self.skipping: Overlong | None = None

    def feed(self, chunk: bytes) -> list[bytes | Overlong]:
        out: list[bytes | Overlong] = []
        start = 0
        while start < len(chunk):
            cut = chunk.find(b"\n", start)
            piece = chunk[start:] if cut < 0 else chunk[start:cut]
            if self.skipping is not None:
                self._skip(piece)
            elif len(self.buffer) + len(piece) > self.limit:
                self.skipping = Overlong(bytes(self.buffer[: self.KEEP]), b"", len(self.buffer))
                self.buffer.clear()
                self._skip(piece)
            else:
                self.buffer += piece
            if cut < 0:
                break
            out.append(self._end())
            start = cut + 1
        return out

    def finish(self) -> list[bytes | Overlong]:
        """What is left when the stream ends without a final newline."""
        return [self._end()] if self.buffer or self.skipping is not None else []

    def _skip(self, piece: bytes) -> None:
        assert self.skipping is not None
        if len(self.skipping.head) < self.KEEP:
            self.skipping.head += piece[: self.KEEP - len(self.skipping.head)]
        self.skipping.tail = (self.skipping.tail + piece)[-self.KEEP:]
        self.skipping.size += len(piece)

    def _end(self) -> bytes | Overlong:
        if self.skipping is not None:
            done, self.skipping = self.skipping, None
            return done
        line = bytes(self.buffer)
        self.buffer.clear()
        return line


PARSE_ERROR = -32700


def malformed(line: str) -> dict:
    """The JSON-RPC error for a line that is not a JSON object (id null: it has none that can be read)."""
    try:
        json.loads(line)
    except RecursionError:
        code, what = PARSE_ERROR, "nested too deeply to read"
    except ValueError as exc:
        code, what = PARSE_ERROR, f"not valid JSON ({exc})"
    else:
        code, what = INVALID_REQUEST, "not a JSON object (one JSON-RPC message per line; batches are not accepted)"
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": f"a line was skipped: {what}; send"
            " one JSON-RPC message as one JSON object per line. The session goes on."}}


def not_a_message(message: dict) -> dict | None:
    """The JSON-RPC error for an object that is no JSON-RPC 2.0 message (a request, a notification or an answer),
    None for one that may be. Looser than the SDK's own check, never stricter: what it lets by goes to the SDK."""
    request_id = message.get("id")
    valid_id = isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
    if message.get("jsonrpc") != "2.0":
        what = 'no "jsonrpc": "2.0"'
    elif "method" in message and not isinstance(message["method"], str):
        what = '"method" is not a string'
    elif "method" in message and "id" in message and not valid_id:
        what = '"id" is neither a string nor an integer'
    elif "method" not in message and not ("id" in message and ("result" in message or "error" in message)):
        what = 'neither a "method" nor an answer ("id" with "result" or "error")'
    else:
        return None
    return {"jsonrpc": "2.0", "id": request_id if valid_id else None, "error": {"code": INVALID_REQUEST, "message":
            f"not a JSON-RPC 2.0 message: {what}; it was skipped and the session goes on."}}


def _parse(line: str) -> dict | None:
    """The line's JSON object, or None (not JSON, not an object, or nested too deep for Python's parser: a 2 KB
    line of 1,000 brackets raised RecursionError and ended the session; the SDK answers it with a parse error)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def _anonymous(params: Any) -> Any:
    """The request without the client's name and version, which no answer depends on (the SDK validates them
    as strings and never echoes them), and empty params as none: any client of the same shape finds the answers
    another one recorded."""
    if not isinstance(params, dict):
        return params
    if not params:
        return None

    def blank(info: Any) -> Any:
        if not isinstance(info, dict):
            return info
        return {k: "*" if k in ("name", "version") and isinstance(v, str) else v for k, v in info.items()}

    out = dict(params)
    if "clientInfo" in out:
        out["clientInfo"] = blank(out["clientInfo"])
    meta = out.get("_meta")
    if isinstance(meta, dict) and CLIENT_INFO_META in meta:
        out["_meta"] = {**meta, CLIENT_INFO_META: blank(meta[CLIENT_INFO_META])}
    return out


def _prune(kept: Path) -> None:
    """Remove the shared cache files of old code versions, keeping the SHARED_KEEP most recent."""
    try:
        files = sorted(kept.parent.glob(f"{SHARED_PREFIX}*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in files[SHARED_KEEP:]:
        if old != kept:
            with contextlib.suppress(OSError):
                old.unlink()


def _modern(params: Any) -> bool:
    """A 2026-era request carries its protocol version in `_meta`; a handshake-era one relies on `initialize`."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta


def enabled() -> bool:
    """ORACLE_HANDSHAKE_CACHE=0 serves stdio through the SDK alone, as before (for comparison and diagnosis)."""
    return os.environ.get("ORACLE_HANDSHAKE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def start(settings: Any) -> Front:
    """Claim the wire and start answering the handshake: call first, before the index opens and the SDK loads."""
    key = code_key()
    shared = shared_path(key)
    return Front([*([shared] if shared is not None else []), Path(settings.data_dir) / CACHE_NAME], key)


def attach(front: Front, oracle: Any) -> None:
    from oracle_server.mcp.instructions import live_instructions

    front.attach(lambda base: live_instructions(oracle, base))


def serve(server: Any, front: Front, base_instructions: str) -> None:
    """Run the SDK server on the front's wire, as MCPServer.run("stdio") does on the process's stdio."""
    import anyio
    from mcp.server.stdio import stdio_server

    front.set_base_instructions(base_instructions)

    async def run() -> None:
        async with stdio_server(stdin=front.sdk_stdin(), stdout=front.sdk_stdout()) as (read_stream, write_stream):
            front.sdk_ready.set()
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        front.close()
        sys.stdout.flush()
