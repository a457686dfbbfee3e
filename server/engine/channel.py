"""Where an Oracle engine listens, and how a client and the engine prove themselves to each other.

Standard library only: a stdio session (server/engine/relay.py) and a CLI call must reach a warm engine in a few
milliseconds and without the MCP SDK, so nothing here imports Oracle's heavy modules.

Where: one folder per user, `ORACLE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/oracle`, else `/tmp/oracle-<uid>`,
created 0700 and refused when it is not a real folder owned by this user and closed to others. An engine is
named by a key over what must match for a session to share it (the root, the data dir, the ORACLE_* settings,
the serve flags and the code version): `e-<key>.sock` (the Unix socket, 0600), `e-<key>.secret` (a random
per-engine secret, 0600), `e-<key>.json` (pid, root, data dir: for `oracle engine status`), `e-<key>.lock`
(held by the live engine: only one per key starts) and `e-<key>.log` (the engine's stderr).

The proof: the engine speaks first with a random nonce; the client answers with its own nonce and
HMAC(secret, "client" nonces) and the operation it wants; the engine checks it (and that the peer runs as the
same user) and answers HMAC(secret, "engine" nonces); the client checks that before sending any query or token.
Neither side ever sends the secret, so a process that took over a stale socket path (or a stale record) learns
nothing and gets nothing; a connection that cannot prove the secret is closed without a byte of Oracle data.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from oracle_indexer.digest import compare_digest, hmac_sha256, sha256, token_bytes, token_hex
from oracle_indexer.safe_write import PRIVATE, write_atomic
from oracle_server import child_pythonpath

PROTOCOL = 1
MAX_HELLO = 4096  # bytes of one handshake line
HANDSHAKE_TIMEOUT = 5.0  # seconds a side waits for the other's handshake line
# ORACLE_* variables that do not change what an engine serves (they only say how to reach or run one; the root
# and data dir are part of the key as resolved paths).
NOT_SETTINGS = ("ORACLE_ROOT", "ORACLE_DATA_DIR", "ORACLE_ENGINE", "ORACLE_ENGINE_IDLE", "ORACLE_ENGINE_START_TIMEOUT",
                "ORACLE_ENGINE_ANSWER_TIMEOUT", "ORACLE_RUNTIME_DIR", "ORACLE_HANDSHAKE_CACHE", "ORACLE_CACHE_DIR",
                "ORACLE_TOKEN")


class ChannelError(Exception):
    """No usable engine channel (unsafe folder, no engine, a failed proof); the message says which."""


class EngineStuck(ChannelError):
    """An engine accepted the connection but said nothing in HANDSHAKE_TIMEOUT seconds (stopped, frozen,
    deadlocked, or starved of CPU): it holds its key's lock, so no other engine can start for it either."""

    def __init__(self, message: str, pid: int = 0) -> None:
        super().__init__(message)
        self.pid = pid


def _stuck(paths: Paths, what: str, timeout: float) -> EngineStuck:
    pid = 0
    with contextlib.suppress(ChannelError, ValueError, TypeError, KeyError):
        pid = int(json.loads(read_private(paths.record))["pid"])
    return EngineStuck(f"the engine{f' (pid {pid})' if pid else ''} is not answering: it accepted the connection but"
                       f" {what} in {timeout:.0f} s (stopped or frozen?); `oracle engine stop` or ending that process"
                       " lets a new one start", pid)


def stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP, a debugger): Linux's /proc says so; False where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[1][:1] in (b"T", b"t")
    except (OSError, IndexError):
        return False


# -- where ------------------------------------------------------------------------------------------
def runtime_dir() -> str:
    """ORACLE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/oracle, else `oracle-<uid>` in the temporary folder, unless
    another user got there first (a predictable name in a folder everyone may write: a folder of theirs, a link,
    a file): then `run` in Oracle's cache folder (~/.cache/oracle/run), so that the engine is still shared
    (before, every session ran alone from then on)."""
    given = os.environ.get("ORACLE_RUNTIME_DIR", "").strip()
    if given:
        return os.path.abspath(os.path.expanduser(given))
    xdg = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return os.path.join(xdg, "oracle")
    shared = os.path.join(tempfile.gettempdir(), f"oracle-{os.getuid()}")
    try:
        st = os.lstat(shared)
    except FileNotFoundError:
        return shared
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
        return shared
    from oracle_indexer.locate import cache_home

    home = cache_home()
    return os.path.join(home, "run") if home else shared  # no home: refused by secure_dir, as before


def secure_dir(path: str | None = None) -> str:
    """The runtime folder, created 0700; ChannelError when it is not ours alone (a symlink, another owner)."""
    path = path or runtime_dir()
    with contextlib.suppress(FileExistsError):
        os.makedirs(path, mode=0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise ChannelError(f"{path} is not a folder")
    if st.st_uid != os.getuid():
        raise ChannelError(f"{path} belongs to another user")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)  # ours: close it (a umask or an older version may have left it open)
    return path


def settings_fingerprint(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    items = sorted((k, v) for k, v in env.items() if k.startswith("ORACLE_") and k not in NOT_SETTINGS)
    return json.dumps(items)


def settings_digest(environ: dict[str, str] | None = None) -> str:
    """What an engine's record says of its settings: a digest, never the settings themselves (ORACLE_DATABASE_URL
    may carry a password, and the record is a file; a CLI call compares digests: server/cli/commands.py)."""
    return sha256(settings_fingerprint(environ).encode("utf-8", "surrogatepass")).hexdigest()


def engine_key(root: str, data_dir: str, flags: list[str], code: str) -> str:
    """Sessions share an engine when all of these match; anything else gets its own."""
    text = "\x00".join([root, data_dir, " ".join(sorted(flags)), settings_fingerprint(), code, sys.executable])
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


class Paths:
    """The files of one engine (see the module's docstring)."""

    __slots__ = ("folder", "key", "socket", "secret", "record", "lock", "log")

    def __init__(self, folder: str, key: str) -> None:
        self.folder, self.key = folder, key
        base = os.path.join(folder, f"e-{key}")
        self.socket, self.secret, self.record = base + ".sock", base + ".secret", base + ".json"
        self.lock, self.log = base + ".lock", base + ".log"


def write_private(path: str, data: bytes) -> None:
    """Write a file only its owner can read, atomically (a reader never sees half of it), through a new
    temporary file that no planted link can redirect (indexer/safe_write.py)."""
    write_atomic(Path(path), data, PRIVATE)


def read_private(path: str, limit: int = 1 << 16) -> bytes:
    """A file this user alone can read; ChannelError otherwise (another owner, open to others, a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ChannelError(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise ChannelError(f"{path} is not private to this user")
        return os.read(fd, limit)
    finally:
        os.close(fd)


def records(folder: str | None = None) -> list[dict]:
    """Every engine record in the runtime folder (live or stale: callers check)."""
    folder = folder or runtime_dir()
    out = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(folder)):
            if name.startswith("e-") and name.endswith(".json"):
                with contextlib.suppress(ChannelError, ValueError):
                    info = json.loads(read_private(os.path.join(folder, name)))
                    if isinstance(info, dict):
                        info["key"] = name[2:-5]
                        out.append(info)
    return out


def alive(pid: int) -> bool:
    """Whether the process runs. An exited process its parent has not reaped yet (a zombie: an engine that was a
    `serve --http` started by a script or a test) still answers signal 0, so its state is read too (Linux)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


# -- the proof --------------------------------------------------------------------------------------
def proof(secret: bytes, side: str, engine_nonce: str, client_nonce: str) -> str:
    return hmac_sha256(secret, f"oracle-engine {side} {engine_nonce} {client_nonce}".encode())


def server_proof(secret: bytes, nonce: str) -> str:
    """What `oracle serve --http` answers at /api/server-proof: the CLI's nonce signed with the secret recorded in
    `server.json` (server/cli/remote.py), so a stale record never sends a query to whatever took the port."""
    return hmac_sha256(secret, f"oracle-http-server {nonce}".encode())


def new_nonce() -> str:
    return token_hex(16)


def new_secret() -> bytes:
    return token_bytes(32)


class LineSocket:
    """A connected socket read as lines (the handshake, then JSON-RPC, one message per line)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def readline(self, limit: int | None = None) -> bytes:
        """The next line without its newline; b"" at the end of the stream (a partial last line included)."""
        while True:
            cut = self.buffer.find(b"\n")
            if cut >= 0:
                line, self.buffer = self.buffer[:cut], self.buffer[cut + 1:]
                return line
            if limit is not None and len(self.buffer) > limit:
                raise ChannelError("handshake line too long")
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                rest, self.buffer = self.buffer, b""
                return rest
            self.buffer += chunk

    def send_json(self, data: dict) -> None:
        self.sock.sendall(json.dumps(data).encode() + b"\n")


def connect(paths: Paths, op: str = "mcp", timeout: float = HANDSHAKE_TIMEOUT, extra: dict | None = None,
            ) -> tuple[LineSocket, dict]:
    """Connect to the engine, prove the secret, check the engine's proof; (channel, engine's hello).

    ChannelError when nothing listens, the secret cannot be read, or either proof fails: the caller then
    starts an engine, or works alone. The socket is left blocking with no timeout for the session."""
    secret = read_private(paths.secret)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(paths.socket)
        except OSError as exc:
            raise ChannelError(f"no engine at {paths.socket}: {exc.strerror or exc}") from None
        line = LineSocket(sock)
        try:
            hello = json.loads(line.readline(MAX_HELLO) or b"null")
            engine_nonce = str(hello["nonce"])
        except TimeoutError:
            raise _stuck(paths, "sent no greeting", timeout) from None
        except (ValueError, TypeError, KeyError, OSError):
            raise ChannelError("the engine did not greet") from None
        mine = new_nonce()
        line.send_json({"op": op, "nonce": mine, "proof": proof(secret, "client", engine_nonce, mine),
                        "pid": os.getpid(), **(extra or {})})
        try:
            answer = json.loads(line.readline(MAX_HELLO) or b"null")
            theirs = str(answer["proof"])
        except TimeoutError:
            raise _stuck(paths, "did not answer the proof", timeout) from None
        except (ValueError, TypeError, KeyError, OSError):
            raise ChannelError("the engine refused the proof or closed the connection") from None
        if not compare_digest(theirs, proof(secret, "engine", engine_nonce, mine)):
            raise ChannelError("the engine's proof is wrong: not our engine")
        sock.settimeout(None)
        return line, answer
    except BaseException:
        sock.close()
        raise


ENGINE_MALLOC_ARENAS = "2"


def spawn(paths: Paths, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start an engine in the background, detached from this process's terminal, signals and pipes (a test
    harness or an MCP client waiting for the session's pipes to close must never wait for the engine). Its
    stderr goes to `paths.log`. A second engine for the same key exits at once (it cannot take the lock)."""
    child_env = dict(os.environ if env is None else env)
    if path := child_pythonpath(child_env.get("PYTHONPATH")):
        child_env["PYTHONPATH"] = path
    # glibc gives each thread that allocates its own arena; the engine's search threads grew it by ~120 MB from
    # one session to eight. Two arenas: 8 sessions 833 -> 795 MB in all, the engine 668 -> 632 MB, first search
    # in a new session unchanged (benchmarks/engine.py, benchmarks/HISTORY.md "One engine"). A user's own setting wins.
    child_env.setdefault("MALLOC_ARENA_MAX", ENGINE_MALLOC_ARENAS)
    with contextlib.suppress(OSError):
        if os.path.getsize(paths.log) > 1 << 20:
            os.unlink(paths.log)
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        return subprocess.Popen([sys.executable, "-m", "oracle_server.cli", *argv], env=child_env, cwd="/",
                                stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, close_fds=True,
                                start_new_session=True)
    finally:
        os.close(log_fd)


def wait_for(paths: Paths, deadline: float, proc: subprocess.Popen | None = None, op: str = "mcp",
             ) -> tuple[LineSocket, dict]:
    """Connect once the engine listens (polling), until `deadline` (time.monotonic())."""
    last: Exception | None = None
    delay = 0.02
    while time.monotonic() < deadline:
        try:
            return connect(paths, op)
        except ChannelError as exc:
            last = exc
        if proc is not None and proc.poll() not in (None, 0):
            raise ChannelError(f"the engine exited with status {proc.returncode} (see {paths.log})")
        if isinstance(last, EngineStuck) and proc is not None and proc.poll() == 0:
            raise last  # the new engine left it to the one holding the lock, which does not answer
        time.sleep(delay)
        delay = min(delay * 1.5, 0.2)
    raise ChannelError(f"no engine answered in time ({last})")
