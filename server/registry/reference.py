"""The tools reference (docs/tools.md), written from the registry so that it cannot drift from it: each tool's
description, its HTTP route and CLI command, every parameter with its type, default and bounds, and the top-level
fields of its result, all read from the declarations and their pydantic models.

    python -m oracle_server.registry.reference            # rewrite docs/tools.md
    python -m oracle_server.registry.reference --check    # exit 1 if docs/tools.md is not what the registry says

tests/contract/test_docs.py runs the check, so a changed tool fails the suite until the page is regenerated.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from oracle_server.registry.tools import TOOLS, Tool

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tools.md"
HEADER = """# Tools reference

Generated from the registry (`server/registry/tools.py`) by `python -m oracle_server.registry.reference`; do not edit by
hand (tests/contract/test_docs.py checks it). Every tool is the same over MCP, HTTP and the CLI: the same
parameters, defaults and bounds. [README](../README.md) has one example per tool; [knowledge.md](knowledge.md)
explains feedback, supersession, consults and edits.
"""


def _cell(text: str) -> str:
    """Markdown table cells hold one line and no bare pipe."""
    return " ".join(text.split()).replace("|", "\\|")


def _type(prop: dict[str, Any]) -> str:
    """A JSON schema property as a short type: `string`, `integer 1–100`, `hybrid / fts / vector`, `list of
    string`, alternatives joined by `or` (null left out: every optional parameter may be omitted)."""
    if "anyOf" in prop:
        kinds = [_type(p) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(kinds)
    if "enum" in prop:
        return " / ".join(str(v) for v in prop["enum"])
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    kind = prop.get("type", "any")
    if kind == "array":
        kind = f"list of {_type(prop.get('items', {}))}"
        if "maxItems" in prop:
            kind += f" (≤ {prop['maxItems']})"
        return kind
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None or high is not None:
        kind += f" {'' if low is None else low}–{'' if high is None else high}"
    lengths = prop.get("minLength"), prop.get("maxLength")
    if lengths != (None, None):
        kind += f" ({lengths[0] or 0}–{lengths[1] if lengths[1] is not None else '…'} chars)"
    return kind


def parameter_rows(model: type[BaseModel]) -> list[str]:
    schema = model.model_json_schema()
    required = set(schema.get("required", []))
    rows = []
    for name, prop in schema.get("properties", {}).items():
        default = "required" if name in required else (
            f"`{prop['default']}`" if prop.get("default") not in (None, "", [], {}) else "–")
        rows.append(f"| `{name}` | {_cell(_type(prop))} | {default} | {_cell(prop.get('description', ''))} |")
    return rows


def result_rows(model: type[BaseModel]) -> list[str]:
    schema = model.model_json_schema()
    return [f"| `{name}` | {_cell(_type(prop))} | {_cell(prop.get('description', ''))} |"
            for name, prop in schema.get("properties", {}).items()]


def tool_section(tool: Tool) -> str:
    cli = f"`oracle {tool.cli.command}`" if tool.cli else "MCP and HTTP only"
    about = _cell(tool.description + (" " + tool.details if tool.details else ""))
    lines = [f"## {tool.name}", "", about, "",
             f"HTTP `{tool.http.method} {tool.http.path}` · CLI {cli} · "
             f"{'read-only' if tool.annotations.read_only_hint else 'writes'}", ""]
    params = parameter_rows(tool.request)
    if params:
        lines += ["| parameter | type | default | meaning |", "| --- | --- | --- | --- |", *params, ""]
    else:
        lines += ["No parameters.", ""]
    lines += [f"Returns {_cell(tool.returns)}." if tool.returns else "Returns:", "",
              f"| `{tool.result.__name__}` field | type | meaning |", "| --- | --- | --- |",
              *result_rows(tool.result), ""]
    return "\n".join(lines)


def tools_reference(tools: tuple[Tool, ...] = TOOLS) -> str:
    index = " · ".join(f"[{t.name}](#{t.name})" for t in tools)
    return "\n".join([HEADER, index, "", *(tool_section(t) for t in tools)]).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = tools_reference()
    if "--check" in args:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is out of date: run `python -m oracle_server.registry.reference`", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
