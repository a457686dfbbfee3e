"""`oracle serve` over stdio spoken to in raw JSON-RPC lines, for tests of what the SDK's own client would never send
(malformed lines, a frozen engine, broken answers to the server's requests)."""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading

from _procs import oracle_cmd

HANG = 120.0  # a ceiling that only catches a hang


class Wire:
    """One `oracle serve` over stdio, spoken to in raw lines."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.errlog = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([*oracle_cmd(), "serve", "--no-watch", *args], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.errlog)
        self.seen: list[dict] = []
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, message: dict | str) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def next(self) -> dict:
        try:
            line = self.lines.get(timeout=HANG)
        except queue.Empty:
            raise AssertionError(f"nothing from the server in {HANG:.0f} s") from None
        assert line, f"the server closed its output (exit status {self.proc.poll()})"
        message = json.loads(line)
        self.seen.append(message)
        return message

    def answer(self, request_id: object) -> dict:
        while True:
            message = self.next()
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message

    def handshake(self) -> None:
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert "result" in self.answer("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def stderr(self) -> str:
        self.errlog.seek(0)
        return self.errlog.read().decode(errors="replace")[-4000:]

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(HANG)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
