"""What Oracle costs an agent's context: the bytes (and tokens, bytes/4) of `tools/list` and of a typical call of
each tool, as the MCP client receives them (the JSON-RPC result of an in-process client on the real server), and
then at a real MCP client over stdio (`oracle serve --standalone`, the bundled knowledge indexed by the real `oracle
index` with its embeddings): `tools/list`, a 10-hit search at the default (brief) and full detail, a consult.

    .venv/bin/python benchmarks/context.py [--json out.json] [--no-stdio]

The knowledge base is the bundled `knowledge/` (copied, indexed keyword-only into a temporary data dir, so the
figures do not depend on a model). Each call's result is split into what a client may put in the agent's
context: `content` (the text blocks) and `structuredContent` (the JSON a client may show instead of, or beside,
the text); `total` is the whole result. `tools/list` is split into descriptions, input schemas and output schemas.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

CALLS: dict[str, dict[str, Any]] = {  # a typical call of each tool, as an agent makes it
    "oracle_search": {"query": "why quote search terms"},
    "oracle_consult": {"decision": "should the tests mock the database?"},
    "oracle_reflect": {},
    "oracle_list": {},
    "oracle_stats": {},
    "oracle_concepts": {},
    "oracle_relations": {},
    "oracle_read": {"file": "learnings/2026-01-14_quote-fts5-search-terms.md"},
    "oracle_read (32 KB note)": {"file": "learnings/big-note.md"},
    "oracle_verify": {"citations": [{"id": "HIT", "content_hash": "HASH"}]},
    "oracle_feedback": {"id": "HIT", "verdict": "helpful"},
    "oracle_learn": {"pattern": "Measure an agent's context cost in bytes before cutting descriptions.",
                     "concepts": ["context"]},
}


def big_note(chars: int) -> str:
    """A long learning (sections of prose) of about `chars` characters: what an agent reads whole."""
    parts = ["---\ntitle: A long incident review\ntags: [incident]\n---\n# A long incident review\n"]
    n = 0
    while sum(map(len, parts)) < chars:
        n += 1
        parts.append(f"\n## Finding {n}\n\n" + " ".join(
            f"The queue consumer {n} retried message {i} after the broker restarted, and the retry budget"
            f" ran out before the lease expired." for i in range(6)) + "\n")
    return "".join(parts)


def size(value: Any) -> int:
    """Bytes of `value` as compact JSON (what travels; a client's own rendering is close to it)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def tokens(n_bytes: int) -> int:
    return round(n_bytes / 4)


async def measure(root: Path, data: Path) -> dict[str, Any]:
    from mcp import Client

    from oracle_indexer.config import Settings
    from oracle_server.services.runtime.app import Oracle
    from oracle_server.mcp.server import build_server

    oracle = Oracle.open(Settings.from_env(root=root, data_dir=data))
    oracle.indexer.sync(vectors=False)
    try:
        async with Client(build_server(oracle)) as client:
            listed = (await client.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)
            tools = listed["tools"]
            out: dict[str, Any] = {
                "tools_list": {
                    "total": size(listed),
                    "descriptions": sum(len(t.get("description", "").encode()) for t in tools),
                    "input_schemas": sum(size(t.get("inputSchema", {})) for t in tools),
                    "output_schemas": sum(size(t.get("outputSchema", {})) for t in tools),
                    "nullable_type_arrays": json.dumps(tools).count('"null"]'),
                },
                "calls": {},
            }
            first = (await client.call_tool("oracle_search", CALLS["oracle_search"])).structured_content["hits"][0]
            for label, args in CALLS.items():
                name = label.split(" ")[0]
                args = json.loads(json.dumps(args).replace("HIT", first["id"]).replace("HASH", first["content_hash"]))
                result = (await client.call_tool(name, args)).model_dump(mode="json", by_alias=True, exclude_none=True)
                out["calls"][label] = {
                    "total": size(result),
                    "content": sum(len(b.get("text", "").encode()) for b in result.get("content", [])),
                    "structured": size(result["structuredContent"]) if "structuredContent" in result else 0,
                    "error": bool(result.get("isError")),
                }
    finally:
        oracle.close()
    return out


STDIO_SEARCHES = ("why quote search terms", "should the tests mock the database", "a")


def _oracle_env(root: Path, data: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_")}
    env.update(ORACLE_ROOT=str(root), ORACLE_DATA_DIR=str(data), PYTHONIOENCODING="utf-8")
    return env


async def measure_stdio(root: Path, data: Path) -> dict[str, Any]:
    """The same figures at a real client: the SDK's Client over stdio to `oracle serve --standalone`."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = _oracle_env(root, data)
    params = StdioServerParameters(command=sys.executable, args=["-m", "oracle_server.cli", "serve", "--standalone"],
                                   env=env)
    out: dict[str, Any] = {"calls": {}}
    with open(data / "serve.stderr", "w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as client:
            listed = (await client.list_tools()).model_dump(mode="json", by_alias=True, exclude_none=True)
            out["tools_list"] = size(listed)
            calls = [(f"search {q!r} limit 10 {d}", "oracle_search", {"query": q, "limit": 10, "detail": d})
                     for q in STDIO_SEARCHES for d in ("brief", "full")]
            calls.append(("consult (default)", "oracle_consult", CALLS["oracle_consult"]))
            for label, name, args in calls:
                result = (await client.call_tool(name, args)).model_dump(mode="json", by_alias=True, exclude_none=True)
                blocks = result.get("content", [])
                out["calls"][label] = {
                    "total": size(result),
                    "text": sum(len(b.get("text", "").encode()) for b in blocks if b.get("type") == "text"),
                    "links": sum(size(b) for b in blocks if b.get("type") == "resource_link"),
                    "structured": size(result["structuredContent"]) if "structuredContent" in result else 0,
                    "error": bool(result.get("isError")),
                }
    return out


def stdio_figures(tmp: Path) -> dict[str, Any]:
    import subprocess

    root, data = tmp / "stdio-knowledge", tmp / "stdio-data"
    shutil.copytree(REPO / "knowledge", root)
    data.mkdir()
    done = subprocess.run([sys.executable, "-m", "oracle_server.cli", "index"], env=_oracle_env(root, data),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"oracle index failed: {done.stderr[-2000:]}")
    return anyio.run(measure_stdio, root, data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--no-stdio", action="store_true", help="only the in-process figures (no model needed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "knowledge"
        shutil.copytree(REPO / "knowledge", root)
        (root / "learnings" / "big-note.md").write_text(big_note(32_000), encoding="utf-8")
        figures = anyio.run(measure, root, Path(tmp) / "data")
        if not args.no_stdio:
            figures["stdio"] = stdio_figures(Path(tmp))
    listing = figures["tools_list"]
    print(f"tools/list: {listing['total']:,} bytes (~{tokens(listing['total']):,} tokens): descriptions"
          f" {listing['descriptions']:,}, input schemas {listing['input_schemas']:,}, output schemas"
          f" {listing['output_schemas']:,}; nullable type arrays: {listing['nullable_type_arrays']}")
    print(f"{'call':<26}{'total':>8}{'tokens':>8}{'content':>9}{'structured':>12}")
    for name, row in figures["calls"].items():
        flag = "  (error)" if row["error"] else ""
        print(f"{name:<26}{row['total']:>8,}{tokens(row['total']):>8,}{row['content']:>9,}{row['structured']:>12,}{flag}")
    if "stdio" in figures:
        stdio = figures["stdio"]
        print(f"\nat a real MCP client over stdio (oracle serve --standalone, bundled knowledge, embedded):")
        print(f"tools/list: {stdio['tools_list']:,} bytes (~{tokens(stdio['tools_list']):,} tokens)")
        print(f"{'call':<48}{'total':>8}{'tokens':>8}{'text':>7}{'links':>7}{'structured':>12}")
        for name, row in stdio["calls"].items():
            flag = "  (error)" if row["error"] else ""
            print(f"{name:<48}{row['total']:>8,}{tokens(row['total']):>8,}{row['text']:>7,}{row['links']:>7,}"
                  f"{row['structured']:>12,}{flag}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
