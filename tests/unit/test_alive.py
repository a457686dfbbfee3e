"""An engine's liveness check (server/engine/channel.py `alive`): a process that exited but was not reaped yet (a
zombie) is not running; `oracle engine stop` waited 30 s on one and said "still running"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oracle_server.engine.channel import alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_an_exited_unreaped_process_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert alive(os.getpid())
    deadline = time.monotonic() + 120  # a ceiling that only catches a hang
    while Path(f"/proc/{child.pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[0] != b"Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert not alive(child.pid)  # exited, still in the process table until reaped
    finally:
        child.wait()
    assert not alive(child.pid)
