"""Helpers shared by the tests that start real Oracle processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "oracle"  # the console script pip installed beside the interpreter


def oracle_cmd() -> list[str]:
    """The installed `oracle` command, or the module when the console script is absent."""
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "oracle_server.cli"]


def rss_mb(pid: int) -> float:
    """A process's resident memory now, in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(proc: subprocess.Popen, timeout: float = 15) -> None:
    """Terminate a server process, killing it if it does not exit in time."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def serve_http(env: dict[str, str], cwd: Path, log: Path, *extra: str, timeout: float = 120.0,
               preexec_fn: Callable[[], None] | None = None) -> tuple[subprocess.Popen, str]:
    """Start a real `oracle serve --http` on a free port; return (process, base URL) once /health answers.

    `preexec_fn` runs in the child before exec (e.g. to set a resource limit on the server alone).
    """
    import httpx

    port = free_port()
    with open(log, "w", encoding="utf-8") as errlog:
        proc = subprocess.Popen([*oracle_cmd(), "serve", "--http", "--port", str(port), *extra], env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog, preexec_fn=preexec_fn)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"oracle serve exited ({proc.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            stop_process(proc)
            raise AssertionError(f"/health never answered:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)


class McpHttp:
    """One MCP session over streamable HTTP (`URL/mcp`), driven from synchronous tests via a blocking portal."""

    def __init__(self, url: str, timeout: float = 180.0) -> None:
        from contextlib import ExitStack

        import anyio.from_thread
        from mcp import Client
        from mcp_types import Implementation

        self._stack = ExitStack()
        try:
            self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
            client = Client(url + "/mcp", read_timeout_seconds=timeout,
                            client_info=Implementation(name="oracle-tests", version="1.0"))
            self.client = self._stack.enter_context(self.portal.wrap_async_context_manager(client))
        except BaseException:
            self._stack.close()
            raise

    def call(self, name: str, args: dict | None = None):
        """The tool's CallToolResult (errors included: check `.is_error`)."""
        return self.portal.call(self.client.call_tool, name, args or {})

    def close(self) -> None:
        self._stack.close()


def stop_engines(runtime_dir: str | Path, timeout: float = 30.0) -> list[int]:
    """End every Oracle engine (server/engine/process.py) whose record is in `runtime_dir`; their pids. Tests that let
    `oracle serve` start engines call this, so that none outlives the test run."""
    import json
    import os
    import signal

    folder = Path(runtime_dir)
    pids = []
    for record in folder.glob("e-*.json") if folder.is_dir() else []:
        try:
            pids.append(int(json.loads(record.read_text(encoding="utf-8"))["pid"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return pids


def clean_env(**values: str) -> dict[str, str]:
    """This process's environment without any ORACLE_* setting of the caller's shell, plus `values`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(PYTHONIOENCODING="utf-8", **values)
    return env


def indexed_folder(base: Path, notes: dict[str, str], timeout: float = 600) -> Path:
    """`base/root` holding `notes` ({relative path: text}), indexed by a real `oracle index` into `base/data`;
    returns `base` (a module fixture's, copied per test by `private_copy`)."""
    for rel, text in notes.items():
        (base / "root" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "root" / rel).write_text(text, encoding="utf-8")
    env = clean_env(ORACLE_ROOT=str(base / "root"), ORACLE_DATA_DIR=str(base / "data"))
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True, timeout=timeout)
    return base


def private_copy(indexed: Path, tmp_path: Path, **extra: str) -> Iterator[dict[str, str]]:
    """For a fixture to yield from: the environment of a private copy of an `indexed_folder` (its root and data dir),
    with a private handshake cache and a short private runtime folder (a Unix socket's path has at most 107 bytes);
    every engine started there is stopped at the end."""
    for part in ("root", "data"):
        shutil.copytree(indexed / part, tmp_path / part)
    runtime = Path(tempfile.mkdtemp(prefix="oe-"))
    yield clean_env(ORACLE_ROOT=str(tmp_path / "root"), ORACLE_DATA_DIR=str(tmp_path / "data"),
                    ORACLE_CACHE_DIR=str(tmp_path / "cache"), ORACLE_RUNTIME_DIR=str(runtime / "run"), **extra)
    stop_engines(runtime / "run")
    shutil.rmtree(runtime, ignore_errors=True)

