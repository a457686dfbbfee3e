"""Build `dist/oracle-<version>.mcpb` (a Claude Desktop bundle) and `dist/server.json` (MCP registry entry).

The bundle is an MCPB 0.3 zip with `server.type = "python"`: the manifest, a small entry script, and under
`server/lib/` Oracle's own packages, the bundled starter knowledge and every runtime dependency as installed
in this virtual environment, the embedding model files included. So it installs and runs with no network
at all, but it carries compiled wheels (onnxruntime, chromadb, numpy): it runs on the same OS, CPU
architecture and Python minor version it was built with, which the manifest states in `compatibility`.
Build it on each platform you ship to.

Usage: python dist/build_bundle.py [--out DIR] [--release-url URL] [--compresslevel 0-9]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import sys
import sysconfig
import tempfile
import tomllib
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
# Test and build tooling in the venv that the server never imports.
EXCLUDE = {
    "pip", "setuptools", "wheel", "_distutils_hack", "distutils-precedence", "pytest", "_pytest", "py", "pluggy",
    "iniconfig", "hypothesis", "_hypothesis_pytestplugin", "_hypothesis_globals", "playwright", "__pycache__",
    "mypy", "mypyc", "mypy_extensions", "librt", "ast_serialize", "pathspec", "importlinter", "import_linter", "grimp",
}
REGISTRY_NAME = "io.github.oracle-memory/oracle"
DEFAULT_RELEASE_URL = "https://github.com/oracle-memory/oracle/releases/download/v{version}"
ENTRY = '''"""Start Oracle's MCP server (stdio) from this bundle: its own packages and dependencies come first."""
import os
import sys
from pathlib import Path

LIB = Path(__file__).resolve().parent / "lib"
sys.path.insert(0, str(LIB))
for key in ("ORACLE_ROOT", "ORACLE_DATA_DIR"):  # an option left empty in Claude Desktop arrives as ""
    if not os.environ.get(key, "").strip() or "${" in os.environ.get(key, ""):
        os.environ.pop(key, None)

from oracle_server.cli.commands import main  # noqa: E402

sys.exit(main(["serve", *sys.argv[1:]]))
'''


def project_meta() -> dict:
    return tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def tool_and_prompt_list() -> tuple[list[dict], list[dict]]:
    """The tools as the server lists them (built in-process on an empty temp index) and the prompts."""
    import asyncio

    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.mcp.server import build_server
    from oracle_server.mcp.surface import PROMPTS

    with tempfile.TemporaryDirectory() as tmp:
        oracle = Oracle.open(Settings.from_env(root=str(PROJECT / "knowledge"), data_dir=tmp))
        try:
            tools = asyncio.run(build_server(oracle).list_tools())
        finally:
            oracle.close()
    return (
        [{"name": t.name, "description": (t.description or "").split(". ")[0].rstrip(".") + "."} for t in tools],
        [{"name": p.name, "description": p.description or "", "arguments": [a.name for a in p.arguments or []],
          "text": f"Use Oracle's {p.name} prompt."} for p in PROMPTS.values()],
    )


def _license(meta: dict) -> str:
    """pyproject's `license`: an SPDX string (setuptools >= 77), or the older `{text = ...}` table."""
    value = meta.get("license", "MIT")
    return value.get("text", "MIT") if isinstance(value, dict) else str(value)


def manifest(meta: dict) -> dict:
    tools, prompts = tool_and_prompt_list()
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return {
        "manifest_version": "0.3",
        "name": "oracle",
        "display_name": "Oracle — team memory in markdown",
        "version": meta["version"],
        "description": meta["description"][:200],
        "long_description": (
            "Principles, learnings and retrospectives kept as plain markdown, searched with hybrid keyword and"
            " semantic ranking (SQLite FTS5 + ChromaDB), consulted before decisions and extended as you learn."
            " Notes are resources, workflows are prompts. Runs offline: the embedding model is inside the bundle."
        ),
        "author": {"name": "Oracle contributors"},
        "license": _license(meta),
        "keywords": ["memory", "knowledge base", "markdown", "search", "rag"],
        "server": {
            "type": "python",
            "entry_point": "server/oracle_mcpb.py",
            "mcp_config": {
                "command": "python3",
                "args": ["${__dirname}/server/oracle_mcpb.py"],
                "env": {
                    "ORACLE_ROOT": "${user_config.knowledge_root}",
                    "ORACLE_DATA_DIR": "${user_config.data_dir}",
                    "PYTHONNOUSERSITE": "1",
                },
            },
        },
        "tools": tools,
        "prompts": prompts,
        "compatibility": {
            "platforms": [sys.platform],
            "runtimes": {"python": f">={py}.0 <{sys.version_info.major}.{sys.version_info.minor + 1}.0"},
        },
        "user_config": {
            "knowledge_root": {
                "type": "directory", "title": "Knowledge folder",
                "description": "Folder of principles/, learnings/ and retrospectives/ (markdown). Empty: a copy of the"
                " starter knowledge in ~/.local/share/oracle/knowledge, made once, where your learnings are kept"
                " across updates.",
                "required": False, "default": "",
            },
            "data_dir": {
                "type": "directory", "title": "Index folder",
                "description": "Where the index lives. Empty: ~/.local/share/oracle/<knowledge folder>.",
                "required": False, "default": "",
            },
        },
        "_meta": {"io.github.oracle-memory": {"built_on": f"{sys.platform}-{platform.machine()}-py{py}"}},
    }


def stage(root: Path) -> None:
    """The bundle's files: entry script, Oracle's packages, knowledge, and the venv's runtime packages."""
    lib = root / "server" / "lib"
    lib.mkdir(parents=True)
    (root / "server" / "oracle_mcpb.py").write_text(ENTRY, encoding="utf-8")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder, name in (("indexer", "oracle_indexer"), ("server", "oracle_server")):
        shutil.copytree(PROJECT / folder, lib / name, ignore=ignore)
    # As the wheel ships it (the `oracle_knowledge` package), not as a checkout's knowledge/ folder: Oracle then
    # copies it to ~/.local/share/oracle/knowledge on first run and writes learnings there, never inside the
    # install folder, which an update or an uninstall deletes (indexer/config.py: bundled_root).
    shutil.copytree(PROJECT / "knowledge", lib / "oracle_knowledge", ignore=ignore)
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in sorted(site.iterdir()):
        name = entry.name
        base = name.split("-")[0].split(".")[0].lower()
        if (base in EXCLUDE or name.startswith(("__editable__", "oracle_memory")) or name.endswith(".pth") or "__mypyc" in name
                or name in ("oracle_indexer", "oracle_server")):
            continue
        if entry.is_dir():
            shutil.copytree(entry, lib / name, ignore=ignore, symlinks=False)
        else:
            shutil.copy2(entry, lib / name)


COMPRESSLEVEL = 6  # zlib's: ~275 MB in ~40 s on one core; 1 gives ~8% more bytes in a quarter of the time


def write_zip(source: Path, target: Path, compresslevel: int = COMPRESSLEVEL) -> None:
    """Deterministic member order; fixed timestamps would break nothing either, but mtimes are kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as zf:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(source).as_posix())
    tmp.replace(target)


def server_json(meta: dict, bundle: Path, release_url: str) -> dict:
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    return {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": REGISTRY_NAME,
        "title": "Oracle",
        "description": "Team memory in markdown: hybrid search, consult, learn; notes as resources.",
        "version": meta["version"],
        "packages": [{
            "registryType": "mcpb",
            "identifier": f"{release_url.rstrip('/')}/{bundle.name}",
            "version": meta["version"],
            "fileSha256": digest,
            "transport": {"type": "stdio"},
        }],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(PROJECT / "dist" / "out"))
    parser.add_argument("--release-url", default=None, help="where the .mcpb will be downloaded from (server.json)")
    parser.add_argument("--compresslevel", type=int, choices=range(0, 10), default=COMPRESSLEVEL, metavar="0-9",
                        help=f"zlib level of the zip (default {COMPRESSLEVEL}; the tests use 1: same files, faster)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(PROJECT))
    meta = project_meta()
    out = Path(args.out)
    bundle = out / f"oracle-{meta['version']}.mcpb"
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / "bundle"
        stage(staging)
        (staging / "manifest.json").write_text(json.dumps(manifest(meta), indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(staging / "manifest.json", out / "manifest.json")
        write_zip(staging, bundle, args.compresslevel)
    release = args.release_url or DEFAULT_RELEASE_URL.format(version=meta["version"])
    (out / "server.json").write_text(json.dumps(server_json(meta, bundle, release), indent=2) + "\n", encoding="utf-8")
    print(f"{bundle} ({bundle.stat().st_size / 1e6:.0f} MB)\n{out / 'server.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
