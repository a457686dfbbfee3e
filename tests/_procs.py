"""Helpers shared by the tests that start real Oracle processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "oracle"  # the console script pip installed beside the interpreter


def oracle_cmd() -> list[str]:
    """The installed `oracle` command, or the module when the console script is absent."""
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "server.cli"]


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
