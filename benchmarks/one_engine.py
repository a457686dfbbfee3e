"""One engine per root (issue 40, items 7 and 8): the CLI's read commands with and without a running server, and the
memory of the Oracle processes when a stdio session and `oracle serve --http` serve one root.

    PYTHONPATH=$(.venv/bin/python benchmarks/trees.py TREE) .venv/bin/python benchmarks/one_engine.py [--runs 5]

Run it once per tree (main, a branch) to compare them: Oracle runs as `python -m oracle_server.cli` with the
environment's PYTHONPATH, so the named tree's code is measured. Figures (medians of --runs, wall time of the whole
command as a shell sees it):
- `list`, `reflect`, `concepts`, `stats`, `search` and a no-op `index`, with no server running, then with
  `oracle serve --http` running on the same root (started first, warmed by one hybrid search);
- the memory of every process holding the index open (an engine, an HTTP server with its own Oracle) and of the
  others (the stdio relay, an attached `serve --http`) after a stdio session and `serve --http` each made one hybrid
  search: RSS from /proc.
The root defaults to the bundled knowledge/; data, runtime and cache folders are private to the run and removed.
Prints figures; never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT / "tests"))

from _procs import free_port, rss_mb, stop_engines, stop_process  # noqa: E402

ORACLE = [sys.executable, "-m", "oracle_server.cli"]
COMMANDS = [["list"], ["reflect"], ["concepts"], ["stats"], ["search", "retry flaky network calls"], ["index"]]


def timed(env: dict[str, str], args: list[str], runs: int) -> float:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([*ORACLE, *args], env=env, capture_output=True, text=True)
        out.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{args}: {done.stderr}")
    return statistics.median(out)


def holders(data: Path) -> tuple[list[int], list[int]]:
    """(pids holding a database under `data` open, other pids whose environment names `data`)."""
    prefix = os.path.realpath(data) + os.sep
    heavy, light = [], []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"ORACLE_DATA_DIR={data}".encode() not in environ:
            continue
        try:
            opened = any(os.readlink(fd).startswith(prefix) and os.readlink(fd).endswith(".db")
                         for fd in (proc / "fd").iterdir())
        except OSError:
            continue
        (heavy if opened else light).append(int(proc.name))
    return heavy, light


def stdio_session(env: dict[str, str]) -> subprocess.Popen:
    """A stdio `oracle serve` that made one hybrid search (a raw JSON-RPC exchange: initialize, one tools/call)."""
    proc = subprocess.Popen([*ORACLE, "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def answer(request_id: int) -> dict:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("the stdio session ended")
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "oracle_search", "arguments": {"query": "retry flaky network calls"}}})
    answer(2)
    return proc


def serve_http(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    import httpx

    port = free_port()
    with open(log, "w") as errlog:
        proc = subprocess.Popen([*ORACLE, "serve", "--http", "--port", str(port)], env=env, stdin=subprocess.DEVNULL,
                                stdout=errlog, stderr=errlog)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                httpx.get(url + "/api/search", params={"q": "retry flaky network calls"}, timeout=300)  # models in
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise SystemExit(f"serve --http did not answer: {log.read_text()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=str(PROJECT / "knowledge"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import oracle_server

    base = Path(tempfile.mkdtemp(prefix="oe1-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=args.root, ORACLE_DATA_DIR=str(base / "data"), ORACLE_RUNTIME_DIR=str(base / "run"),
               ORACLE_CACHE_DIR=str(base / "cache"), PYTHONIOENCODING="utf-8")
    print(f"code: {Path(oracle_server.__file__).resolve().parent.parent}  root: {args.root}  runs: {args.runs}")
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    try:
        subprocess.run([*ORACLE, "index"], env=env, check=True, capture_output=True)
        alone = {" ".join(c): timed(env, c, args.runs) for c in COMMANDS}
        http, url = serve_http(env, base / "http.log")
        try:
            served = {" ".join(c): timed(env, c, args.runs) for c in COMMANDS}
        finally:
            stop_process(http)
        print(f"{'command':<44} {'no server':>10} {'server running':>15}  ratio")
        for name in alone:
            ratio = alone[name] / served[name]
            print(f"{'oracle ' + name:<44} {alone[name]:>9.2f}s {served[name]:>14.2f}s  {ratio:5.1f}x")

        # memory: a stdio session first (it starts the engine), then `serve --http` on the same root
        session = stdio_session(env)
        http, url = serve_http(env, base / "http2.log")
        try:
            time.sleep(2)
            heavy, light = holders(base / "data")
            rss_heavy = {pid: rss_mb(pid) for pid in heavy}
            rss_light = {pid: rss_mb(pid) for pid in light}
            print(f"stdio session + serve --http on one root: {len(heavy)} process(es) holding the index,"
                  f" {sum(rss_heavy.values()):.0f} MB RSS in all ({', '.join(f'{v:.0f}' for v in rss_heavy.values())});"
                  f" other processes (relay, attached front) {sum(rss_light.values()):.0f} MB"
                  f" ({', '.join(f'{v:.0f}' for v in rss_light.values())})")
        finally:
            stop_process(http)
            session.stdin.close()  # type: ignore[union-attr]
            session.wait(30)
            stop_engines(base / "run")
        print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    finally:
        stop_engines(base / "run")
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
