"""A first call that waits for a load (server/services/support/loading.py: MCP progress while it waits) still fails as the
service says: a stale `expected_hash` is a tool error naming the conflict, not "Error executing tool" (the progress
task group once wrapped the service's error in an ExceptionGroup, which no error class matched)."""

from __future__ import annotations

from pathlib import Path

import anyio

from oracle_indexer.config import Settings
from oracle_server.services.runtime.app import Oracle
from oracle_server.services.support.loading import waiting_for

NOTE = "---\ntitle: Wombat burrows\n---\n\n# Wombat burrows\n\n## Body\n\nA burrow has two exits.\n"


def test_a_first_call_that_waits_fails_with_the_services_own_error(tmp_path: Path) -> None:
    from mcp import Client

    from oracle_server.mcp.server import build_server

    (tmp_path / "root" / "learnings").mkdir(parents=True)
    (tmp_path / "root" / "learnings" / "wombat.md").write_text(NOTE, encoding="utf-8")
    oracle = Oracle.open(Settings(root=tmp_path / "root", data_dir=tmp_path / "data"))
    try:
        oracle.indexer.sync(vectors=False)  # the keyword phase only, as a server's start-up: no model loaded yet
        assert waiting_for(oracle, "oracle_edit"), "a fresh Oracle has its models to load"

        async def first_call() -> tuple[bool, str]:
            async with Client(build_server(oracle)) as client:
                stale = await client.call_tool("oracle_edit", {
                    "file": "learnings/wombat.md", "expected_hash": "0" * 64, "op": "append", "text": "late"},
                    progress_callback=lambda *_: anyio.sleep(0))
                return bool(stale.is_error), stale.content[0].text

        is_error, text = anyio.run(first_call)
        assert is_error and "conflict" in text and "changed since you read it" in text, text
    finally:
        oracle.close()
