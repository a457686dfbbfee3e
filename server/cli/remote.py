"""The CLI's fast path: ask a running `oracle serve --http` for the same knowledge root instead of
starting the whole service (and loading the embedding model, ~3 s) in a new process.

`oracle serve --http` records where it listens in `<data dir>/server.json`; the CLI reads it, checks that
the process is alive and serves the same root, and sends the request to the HTTP API, whose JSON is the
same result the in-process call returns (server/registry/render.py prints both the same way). When there is no
server, or it does not answer, the CLI works alone as before. Only the standard library is imported here:
the point is to answer in milliseconds, so even http.client (which pulls in email and ssl, ~20 ms) is
replaced by one HTTP/1.1 exchange over a socket with `Connection: close`.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from urllib.parse import urlencode

from oracle_indexer.digest import compare_digest, token_bytes, token_hex
from oracle_indexer.safe_write import private_dir
from oracle_server.engine import channel as engine_channel

SERVER_FILE = "server.json"
CLIENT_HEADER = "X-Oracle-Client"
REMOTE_CLIENT = "cli@server"  # how a CLI call answered by a server is logged (a server-process latency)


class RemoteUnavailable(Exception):
    """No server answered: the caller works alone instead."""


class RemoteError(Exception):
    """The server answered with an error (bad input, say); the message is the server's."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Endpoint:
    """Where a running server listens (a plain class: dataclasses costs ~5 ms of imports here)."""

    __slots__ = ("host", "port", "pid", "secret")

    def __init__(self, host: str, port: int, pid: int, secret: bytes | None = None) -> None:
        self.host, self.port, self.pid, self.secret = host, port, pid, secret


def server_file(data_dir: str | os.PathLike) -> str:
    return os.path.join(data_dir, SERVER_FILE)


def record(data_dir: str | os.PathLike, root: str | os.PathLike, host: str, port: int) -> bytes:
    """Say where this server listens, with a fresh secret it proves itself with (`/api/server-proof`), in a file
    only this user can read, atomically (a reader never sees half a file). Returns the secret.

    Why the proof: the record outlives a server that was killed, and whatever listens on that port later
    (another program, another user's process) must not receive the CLI's queries or its ORACLE_TOKEN."""
    private_dir(Path(data_dir))
    secret = token_bytes(32)
    engine_channel.write_private(server_file(data_dir), json.dumps({
        "pid": os.getpid(), "host": host, "port": port, "root": str(root), "started": time.time(),
        "secret": secret.hex()}).encode())
    return secret


def forget(data_dir: str | os.PathLike, port: int | None = None) -> None:
    """Remove the record if it is still this process's (another server may have replaced it), and with `port`
    only if it is that front's (an engine may serve several: server/cli/http_front.py)."""
    path = server_file(data_dir)
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
        mine = info.get("pid") == os.getpid() and (port is None or info.get("port") == port)
        if mine:
            os.unlink(path)
    except (OSError, ValueError):
        pass


def find(data_dir: str | os.PathLike, root: str | os.PathLike) -> Endpoint | None:
    """The running server for this root, if its record is there and its process lives."""
    try:
        info = json.loads(engine_channel.read_private(server_file(data_dir)))
        pid, port, host = int(info["pid"]), int(info["port"]), str(info["host"])
        secret = bytes.fromhex(info["secret"])
    except (OSError, ValueError, KeyError, TypeError, engine_channel.ChannelError):
        return None  # none, unreadable, open to others, or from a version without a secret: work alone
    if info.get("root") != str(root) or pid == os.getpid() or not engine_channel.alive(pid):
        return None
    if host in ("0.0.0.0", "::", "", "localhost"):
        host = "127.0.0.1"  # a wildcard bind answers on loopback
    return Endpoint(host=host, port=port, pid=pid, secret=secret)


def verify(endpoint: Endpoint, timeout: float = 5.0) -> None:
    """RemoteUnavailable unless the listener proves it holds the recorded secret (before any query or token)."""
    if endpoint.secret is None:
        raise RemoteUnavailable("no secret recorded")
    nonce = token_hex(16)
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    head = (f"GET /api/server-proof?nonce={nonce} HTTP/1.1\r\nHost: {host}:{endpoint.port}\r\n"
            "Accept: application/json\r\nConnection: close\r\n\r\n")
    try:
        status, raw = _exchange(endpoint, head.encode("latin-1"), timeout)
        given = json.loads(raw).get("proof") if status == 200 else None
    except (OSError, ValueError, AttributeError) as exc:
        raise RemoteUnavailable(f"no proof: {exc}") from None
    if not isinstance(given, str) or not compare_digest(given, engine_channel.server_proof(endpoint.secret, nonce)):
        raise RemoteUnavailable("the listener did not prove the recorded secret: not our server")


def _exchange(endpoint: Endpoint, request: bytes, timeout: float) -> tuple[int, bytes]:
    """Send one request, read the whole response: (status, body)."""
    with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            block = sock.recv(65536)
            if not block:
                break
            chunks.append(block)
    raw = b"".join(chunks)
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise RemoteUnavailable("not an HTTP answer")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])}
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _unchunk(body)
    return int(parts[1]), body


def _unchunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def call(endpoint: Endpoint, method: str, path: str, params: dict | None = None, body: dict | None = None,
         timeout: float = 120.0) -> dict:
    """One request; RemoteUnavailable if nobody answers, or the listener does not prove it is the recorded
    server (checked first: nothing of the request, nor the token, goes to anyone else); RemoteError for an
    error response."""
    verify(endpoint)
    query = urlencode({k: v for k, v in (params or {}).items() if v is not None}, doseq=True)
    target = path + (f"?{query}" if query else "")
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    headers = {"Host": f"{host}:{endpoint.port}", CLIENT_HEADER: REMOTE_CLIENT, "Accept": "application/json",
               "Connection": "close"}
    token = os.environ.get("ORACLE_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if payload or method != "GET":
        headers["Content-Length"] = str(len(payload))
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    try:
        status, raw = _exchange(endpoint, head.encode("latin-1") + payload, timeout)
    except (OSError, ValueError) as exc:
        raise RemoteUnavailable(str(exc)) from None
    try:
        data = json.loads(raw)
    except ValueError:
        raise RemoteUnavailable(f"not an Oracle answer (HTTP {status})") from None
    message = data.get("error") if isinstance(data, dict) else None
    # A read-only named token refused a write (team mode): that is the answer, not a reason to write locally.
    refused = status == 403 and str(message or "").startswith("forbidden:")
    if status in (401, 403, 404, 405) and not refused:  # a token it wants, a server without this route: answer locally
        raise RemoteUnavailable(f"HTTP {status}")
    if status >= 400:
        raise RemoteError(status, str(message or f"HTTP {status}"))
    return data
