"""A live `oracle serve` over stdio for synchronous tests: the real SDK client, the real server process."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio.from_thread
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, Implementation

from _procs import oracle_cmd
from _seed import seed_data_dir

PROJECT = Path(__file__).resolve().parent.parent
CLIENT_NAME = "oracle-tests"
CALL_TIMEOUT = 180.0


def run_oracle(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*oracle_cmd(), *args], env=env, cwd=PROJECT, capture_output=True, text=True, encoding="utf-8",
        timeout=timeout,
    )


# -- the knowledge base and the server session -------------------------------------------------------
class KB:
    def __init__(self, root: Path, data: Path, env: dict[str, str], logs_dir: Path) -> None:
        self.root, self.data, self.env, self.logs_dir = root, data, env, logs_dir

    @property
    def learnings(self) -> Path:
        return self.root / "learnings"

    def listing(self) -> list[str]:
        """Every name in the learnings folder, hidden temporary files included."""
        return sorted(os.listdir(self.learnings))


def index_kb(base: Path, seed: Path | None = None) -> tuple[KB, dict]:
    """`base/root` (already written) indexed into `base/data` by the real `oracle index`, with an environment
    free of the developer's ORACLE_* settings; returns the KB and the index report. `seed`: an embedding
    cache to start from (tests/_seed.py, the `embedding_seed` fixture)."""
    root, data = base / "root", seed_data_dir(seed, base / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), PYTHONIOENCODING="utf-8")
    done = run_oracle(env, "index", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert not report["vector_failed"], done.stdout
    assert seed is None or report["embeddings_cached"] > 0, f"the embedding seed was not used: {done.stdout}"
    return KB(root, data, env, base), report


class Session:
    """A live `oracle serve` over stdio, driven from synchronous tests through a blocking portal.

    One server process serves the module. `close()` ends it (so that its logs are complete); a later call
    starts a fresh one on the same root and data dir, so no test depends on running after another.
    """

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.stderr_path = kb.logs_dir / "serve-stdio.stderr"
        self.starts = 0
        self._stack: ExitStack | None = None
        self._open()

    def _open(self) -> None:
        stack = ExitStack()
        try:
            errlog = stack.enter_context(open(self.stderr_path, "a", encoding="utf-8"))
            self.portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
            params = StdioServerParameters(command=oracle_cmd()[0], args=[*oracle_cmd()[1:], "serve", "--standalone"],
                                           env=self.kb.env, cwd=str(self.kb.logs_dir))
            client = Client(stdio_client(params, errlog=errlog),
                            client_info=Implementation(name=CLIENT_NAME, version="1.0"),
                            read_timeout_seconds=CALL_TIMEOUT)
            self.client: Client = stack.enter_context(self.portal.wrap_async_context_manager(client))
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        self.starts += 1

    @property
    def closed(self) -> bool:
        return self._stack is None

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def list_tools(self):
        if self.closed:
            self._open()
        return self.portal.call(self.client.list_tools)

    def call(self, name: str, args: dict[str, Any] | None = None) -> CallToolResult:
        if self.closed:
            self._open()
        return self.portal.call(self.client.call_tool, name, args or {})

    def ok(self, name: str, args: dict[str, Any] | None = None) -> dict:
        """Call a tool that must succeed; return its structured content."""
        result = self.call(name, args)
        text = result.content[0].text if result.content else ""
        assert not result.is_error, f"{name}({args}) failed: {text}\nserver stderr:\n{self.stderr()}"
        assert result.structured_content is not None
        assert text.strip(), f"{name} returned no text content"
        return result.structured_content

    def error(self, name: str, args: dict[str, Any]) -> str:
        """Call a tool that must fail as a tool error (not a protocol error); return the message."""
        result = self.call(name, args)
        assert result.is_error, f"{name}({args}) unexpectedly succeeded"
        assert result.content and result.content[0].text
        return result.content[0].text

    def close(self) -> None:
        """End the client session; the SDK's stdio client waits for the server process to exit."""
        if self._stack is not None:
            stack, self._stack = self._stack, None
            stack.close()


# -- a handshake-era (2025) client's resource subscriptions ------------------------------------------
# The 2026-07-28 protocol removed `resources/subscribe`: current clients open a `subscriptions/listen` stream
# (`Client.listen()`), and the SDK's `subscribe_resource` warns (MCPDeprecationWarning) when called. The server still
# serves clients of the older protocol, so these send the old request as such a client puts it on the wire.
async def legacy_subscribe(client: Client, uri: str) -> None:
    """`resources/subscribe`, sent as a handshake-era client sends it."""
    from mcp_types import EmptyResult, SubscribeRequest, SubscribeRequestParams

    await client.session.send_request(SubscribeRequest(params=SubscribeRequestParams(uri=uri)), EmptyResult)


async def legacy_unsubscribe(client: Client, uri: str) -> None:
    """`resources/unsubscribe`, sent as a handshake-era client sends it."""
    from mcp_types import EmptyResult, UnsubscribeRequest, UnsubscribeRequestParams

    await client.session.send_request(UnsubscribeRequest(params=UnsubscribeRequestParams(uri=uri)), EmptyResult)
