"""Record the MCP SDK's handshake answers in the shared cache once, so that the very first `oracle serve` on
any root (a brand-new one included) answers `tools/list` before the SDK has loaded (server/mcp/stdio_front.py).

    python -m oracle_server.mcp.warm        # `make install` runs it; a no-op when this code version's answers are there

How: start a real `oracle serve` on an empty temporary root and data dir and list its tools through the official
MCP client, once per protocol era (a 2026-07-28 `server/discover` session and a handshake-era `initialize` one).
The server records what its SDK answered, exactly as any first session would: no answer is built here. Exit
status 1 (with the reason on stderr) when that fails; the install carries on, and the first real start records
the answers instead.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from oracle_server import child_pythonpath
from oracle_server.mcp import stdio_front

TIMEOUT_SECONDS = 120.0
ERAS = ("auto", "legacy")  # the SDK client's default (2026 probe, then fallback) and the initialize handshake


def warm_already() -> Path | None:
    """The shared cache file when it already holds this code version's answers for both eras."""
    key = stdio_front.code_key()
    path = stdio_front.shared_path(key)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    answers = data.get("answers") if isinstance(data, dict) and data.get("key") == key else None
    if not isinstance(answers, dict):
        return None
    methods = {k.split(" ", 1)[0] for k in answers}
    return path if {"base_instructions", "server/discover", "initialize", "tools/list"} <= methods else None


async def _list_tools(env: dict[str, str], mode: str, cwd: str) -> int:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp import Client

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "oracle_server.cli", "serve", "--standalone", "--no-index",
                                         "--no-watch"], env=env, cwd=cwd)
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode,
                          read_timeout_seconds=TIMEOUT_SECONDS) as client:
            return len((await client.list_tools()).tools)


def warm() -> Path:
    """Record the answers (see the module's docstring); return the cache file. Raises on failure."""
    import anyio

    if stdio_front.shared_path(stdio_front.code_key()) is None:
        raise RuntimeError("no cache folder: set ORACLE_CACHE_DIR or XDG_CACHE_HOME")
    work = Path(tempfile.mkdtemp(prefix="oracle-warm-"))
    try:
        (work / "root").mkdir()
        # The user's other ORACLE_* settings change no answer (stdio_front.code_key) and could only fail the start.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_") or k == "ORACLE_CACHE_DIR"}
        env.update(ORACLE_ROOT=str(work / "root"), ORACLE_DATA_DIR=str(work / "data"), PYTHONIOENCODING="utf-8")
        if pythonpath := child_pythonpath(env.get("PYTHONPATH")):
            env["PYTHONPATH"] = pythonpath
        for mode in ERAS:
            anyio.run(_list_tools, env, mode, str(work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = warm_already()
    if path is None:
        raise RuntimeError("the server did not record its answers (is the cache folder writable?)")
    return path


def main() -> int:
    if not stdio_front.enabled():
        return 0
    try:
        path = warm_already()
        if path is None:
            path = warm()
            print(f"oracle: MCP handshake answers recorded in {path}", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - reported; the install does not depend on it
        print(f"oracle: could not record the MCP handshake answers ({type(exc).__name__}: {exc}); the first"
              " `oracle serve` will record them instead", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
