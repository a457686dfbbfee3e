"""Distribution and a client nobody here wrote: the .mcpb bundle and server.json built by `make bundle`'s script,
checked by the MCPB project's own validator and started from the unpacked bundle with a Python that has none of
the project's packages; and the MCP Inspector CLI (npm) against a real `oracle serve`.

Both need the node tools `make node-tools` installs (tests/npm); `make test` installs them first.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from _mcp import KB, index_kb
from _procs import oracle_cmd

PROJECT = Path(__file__).resolve().parents[2]
NODE_BIN = Path(__file__).resolve().parents[1] / "npm" / "node_modules" / ".bin"
TOOLS = {
    "oracle_search", "oracle_consult", "oracle_reflect", "oracle_learn", "oracle_list", "oracle_stats",
    "oracle_concepts", "oracle_feedback", "oracle_supersede", "oracle_relations", "oracle_read", "oracle_verify",
    "oracle_edit", "oracle_archive", "oracle_history", "oracle_restore",
}
PROMPTS = {"consult", "reflect", "retrospective", "learn-from-session"}


def node_tool(name: str) -> str:
    path = NODE_BIN / name
    assert path.exists(), f"{path} is missing: run `make node-tools` (make test does)"
    return str(path)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # zlib level 1 instead of the release's 6: the same members and manifest, a quarter of the build time.
    done = subprocess.run([sys.executable, str(PROJECT / "dist" / "build_bundle.py"), "--out", str(out),
                           "--release-url", "https://example.org/releases/v1", "--compresslevel", "1"],
                          capture_output=True, text=True, timeout=900, cwd=PROJECT)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_bundle_manifest_is_valid_and_describes_the_server(built: Path) -> None:
    bundle = next(built.glob("oracle-*.mcpb"))
    checked = subprocess.run([node_tool("mcpb"), "validate", str(built / "manifest.json")],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and "passes" in checked.stdout, checked.stdout + checked.stderr
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest == json.loads((built / "manifest.json").read_text())
    assert manifest["server"]["entry_point"] in names
    assert "server/lib/oracle_server/mcp/server.py" in names and "server/lib/oracle_indexer/models/embed.py" in names
    assert not any(n.startswith(("server/lib/server/", "server/lib/indexer/")) for n in names)  # the install names
    assert not any(n.startswith(("server/lib/mypy/", "server/lib/importlinter/")) or "__mypyc" in n for n in names)
    assert any(n.startswith("server/lib/oracle_knowledge/principles/") for n in names)
    assert not any(n.startswith("server/lib/knowledge/") for n in names)  # no checkout: no root in the install folder
    assert not any(n.startswith(("server/lib/playwright/", "server/lib/pytest/", "server/lib/_pytest/")) for n in names)
    assert {t["name"] for t in manifest["tools"]} == TOOLS
    assert {p["name"] for p in manifest["prompts"]} == PROMPTS
    assert manifest["compatibility"]["platforms"] == [sys.platform]
    server = json.loads((built / "server.json").read_text())
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"])
    assert len(server["description"]) <= 100 and server["version"] == manifest["version"]
    package = server["packages"][0]
    assert package["registryType"] == "mcpb" and package["transport"] == {"type": "stdio"}
    assert package["identifier"] == f"https://example.org/releases/v1/{bundle.name}"
    assert package["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()


@pytest.mark.slow
def test_unpacked_bundle_starts_and_answers_tools_list(built: Path, tmp_path: Path) -> None:
    """As Claude Desktop runs it: the manifest's command and args, from the unpacked bundle, with a Python that
    has none of this project's packages (the venv's base interpreter) and no network needed."""
    bundle = next(built.glob("oracle-*.mcpb"))
    target = tmp_path / "installed"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(target)
    manifest = json.loads((target / "manifest.json").read_text())
    config = manifest["server"]["mcp_config"]
    args = [a.replace("${__dirname}", str(target)) for a in config["args"]]
    env = {k: v.replace("${user_config.knowledge_root}", "").replace("${user_config.data_dir}", str(tmp_path / "data"))
           for k, v in config["env"].items()}
    env.update(PATH="/usr/bin:/bin", HOME=str(tmp_path), HF_HUB_OFFLINE="1")
    python = getattr(sys, "_base_executable", sys.executable)
    probe = subprocess.run([python, "-c", "import mcp"], capture_output=True, env=env)
    assert probe.returncode != 0, "the base interpreter has the project's packages: the test would prove nothing"

    async def session() -> tuple[set[str], list[str]]:
        params = StdioServerParameters(command=python, args=args, env=env, cwd=str(tmp_path))
        with open(tmp_path / "bundle.stderr", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=180) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                found = await client.call_tool("oracle_search", {"query": "mock the database", "limit": 3})
                learned = await client.call_tool("oracle_learn", {
                    "pattern": "Keep learnings outside the install folder; an update replaces it.",
                    "title": "Learnings outlive the bundle"})
                assert not learned.is_error, learned.content
                return tools, [h["source_file"] for h in found.structured_content["hits"]], learned.structured_content

    tools, hits, learned = anyio.run(session)
    assert tools == TOOLS, (tmp_path / "bundle.stderr").read_text()[-2000:]
    assert hits and all(h.endswith(".md") for h in hits)  # the starter knowledge
    # Issue 27 item 7: the knowledge folder left empty (the default), the starter knowledge is copied to the user's
    # data folder, as a pipx install does, and learnings go there; the install folder holds no note at all.
    user_root = tmp_path / ".local" / "share" / "oracle" / "knowledge"
    assert (user_root / learned["file"]).is_file() and (user_root / "principles").is_dir()
    assert not list(target.rglob("learnings/*learnings-outlive-the-bundle*.md"))


# -- the MCP Inspector CLI ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedding_seed: Path) -> KB:
    base = tmp_path_factory.mktemp("inspector")
    shutil.copytree(PROJECT / "knowledge", base / "root")
    kb, _ = index_kb(base, embedding_seed)
    return kb


def inspect(kb: KB, *method: str) -> dict:
    """One Inspector CLI call against a fresh `oracle serve` over stdio; its JSON answer."""
    env = {**kb.env, "HOME": str(kb.logs_dir)}  # the Inspector keeps its catalog under HOME
    command = [node_tool("mcp-inspector"), "--cli"]
    command += [f"-e{k}={v}" for k, v in kb.env.items() if k.startswith("ORACLE_")]
    command += [*oracle_cmd(), "serve", "--standalone", "--method", *method]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=kb.logs_dir)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_inspector_cli_sees_the_whole_surface(kb: KB) -> None:
    tools = inspect(kb, "tools/list")["tools"]
    assert {t["name"] for t in tools} == TOOLS
    assert {t["name"] for t in tools if (t.get("_meta") or {}).get("anthropic/alwaysLoad") is True} == {
        "oracle_search", "oracle_consult"}
    resources = inspect(kb, "resources/list")["resources"]
    notes = {r["name"] for r in resources if r["uri"].startswith("oracle://note/")}
    assert notes == {p.relative_to(kb.root).as_posix() for p in kb.root.rglob("*.md") if p.name != "README.md"}
    templates = inspect(kb, "resources/templates/list")["resourceTemplates"]
    assert {t["uriTemplate"] for t in templates} == {"oracle://note/{+path}", "oracle://chunk/{id}",
                                                    "oracle://field/{name}/{value}"}
    uri = "oracle://note/principles/prefer-real-components-over-mocks.md"
    read = inspect(kb, "resources/read", "--uri", uri)["contents"][0]
    assert read["text"] == (kb.root / "principles/prefer-real-components-over-mocks.md").read_text(encoding="utf-8")
    assert read["_meta"]["oracle/frontmatter"]["title"]
    assert {p["name"] for p in inspect(kb, "prompts/list")["prompts"]} == PROMPTS
    got = inspect(kb, "prompts/get", "--prompt-name", "retrospective", "--prompt-args", "what_happened=We shipped it.")
    assert "## What happened\n\nWe shipped it." in got["messages"][0]["content"]["text"]
    called = inspect(kb, "tools/call", "--tool-name", "oracle_search", "--tool-arg", "query=mock the database",
                     "--tool-arg", "detail=full")
    assert any(c["type"] == "resource_link" and c["uri"].startswith("oracle://note/") for c in called["content"])
