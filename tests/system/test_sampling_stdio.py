"""Sampling through the real process path (issue 37, item 4): `oracle serve` over stdio — a relay session on the
shared engine — with `ORACLE_SAMPLING=1`, driven by the SDK client with a sampling callback, in both protocol
eras. The client's model is asked once per search without variants, its lines become the search's variants, and
the answer says so; a search that brings its own variants is never sampled."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CreateMessageRequestParams, CreateMessageResult, TextContent

from _procs import oracle_cmd, stop_engines

pytestmark = pytest.mark.slow

NOTES = {
    "learnings/2026-03-01_rollout-502.md": "# Bad gateway during rollouts\n\n## Lesson\nDrain connections before the "
                                           "load balancer swaps the pods, or clients see 502 bad gateway.\n",
    "learnings/2026-03-02_redis.md": "# Redis on a laptop\n\n## Setup\nRun the setup script to start redis locally.\n",
}
QUESTION = "users get errors whenever we ship a new version"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("sampling")
    for rel, text in NOTES.items():
        (base / "root" / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / "root" / rel).write_text(text, encoding="utf-8")
    runtime = Path(tempfile.mkdtemp(prefix="os-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(base / "root"), ORACLE_DATA_DIR=str(base / "data"), ORACLE_SAMPLING="1",
               ORACLE_CACHE_DIR=str(base / "cache"), ORACLE_RUNTIME_DIR=str(runtime / "run"), PYTHONIOENCODING="utf-8")
    subprocess.run([*oracle_cmd(), "index"], env=env, check=True, capture_output=True, timeout=300)
    yield env
    stop_engines(runtime / "run")
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_clients_model_writes_the_variants_through_the_relay(env: dict[str, str], mode: str) -> None:
    asked: list[CreateMessageRequestParams] = []

    async def model(context: Any, params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", model="test-model",
                                   content=TextContent(type="text", text="502 bad gateway rollout\ndrain connections"))

    async def run() -> tuple[Any, Any]:
        params = StdioServerParameters(command=oracle_cmd()[0], args=[*oracle_cmd()[1:], "serve"], env=env)
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), sampling_callback=model, mode=mode,  # type: ignore[arg-type]
                              read_timeout_seconds=120) as client:
                sampled = await client.call_tool("oracle_search", {"query": QUESTION, "mode": "fts"})
                own = await client.call_tool("oracle_search", {"query": QUESTION, "mode": "fts",
                                                               "variants": ["redis setup"]})
                return sampled, own

    sampled, own = anyio.run(run)
    assert not sampled.is_error, sampled.content
    meta = sampled.structured_content["meta"]
    assert len(asked) == 1 and QUESTION in asked[0].messages[0].content.text
    assert meta["sampled_variants"] == ["502 bad gateway rollout", "drain connections"] and meta["phrasings"] == 3
    assert sampled.structured_content["hits"][0]["source_file"] == "learnings/2026-03-01_rollout-502.md"
    assert not own.is_error and own.structured_content["meta"]["sampled_variants"] is None and len(asked) == 1
